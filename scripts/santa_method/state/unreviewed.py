"""A fix no reviewer saw: kept in the run folder, never left in the user's files.

Why: with `--in-place` the headless loop writes the fixer's text over the
user's file (or, for `--against-diff`, over each changed file it fixes)
before the next round reviews it. A run that ends there (the cap, the
budget, a failing pre-check, a backend error, a fixer that asks for input,
a person closing an interrupted run) would leave files holding text no
reviewer saw. So the loop first keeps the fix in the run folder, and when
the run is escalated `restore_reviewed` puts each file back to the text
round N reviewed (N the round the fix answers):

- a file target: the fix in `round-N/fix.txt`, the reviewed text in
  `round-N/output.txt`;
- a change: one pair per file the fixer wrote, `round-N/fixes/K.fix` and
  `round-N/fixes/K.reviewed`, listed in `round-N/fixes.json`.

A round counts as reviewed once a reviewer's reply to it was valid: a
round whose replies were all invalid (and so never judged) saw nothing,
and the fix before it is still unreviewed. The restore happens before the
escalation is saved or logged, under the file's lock, so a run killed at
any moment leaves either an open run holding its fix (which `santa runs`
names) or the reviewed text back in place.

Only a file that holds exactly its kept fix is touched: a file someone
else changed since is left as it is, and so is a file whose text a later
run reviewed (a new run on the file started from the fix: putting the
older text back would undo what that run verified). Everything is compared and written as
bytes, so line endings and text that is not UTF-8 come back as they were.

The rule is read from the files alone (no extra state), so a report, `santa
runs` and a resumed process all see the same thing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core.errors import RefusedError
from santa_method.core.files import path_kind
from santa_method.state.atomic import replace_bytes, replace_text
from santa_method.state.model.run import Round, RunState
from santa_method.state.store import load_state, run_dir

FIX_FILE = "fix.txt"
CHANGE_FIXES = "fixes.json"


def _bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


def keep_fix(run_id: str, round_number: int, text: str | bytes) -> Path:
    """Keep the fixer's text for `round_number` in the run folder, before
    it is written anywhere else."""
    path = run_dir(run_id) / f"round-{round_number}" / FIX_FILE
    replace_bytes(path, _bytes(text))
    return path


class ChangedMeanwhile(RefusedError):
    """A file the run fixes in place was changed by someone else while the
    round was reviewed or fixed: writing the fix would undo their edit.
    `spent` is what the fixer calls made so far cost (the loop counts it)."""

    def __init__(self, message: str, spent: object = None) -> None:
        super().__init__(message)
        self.spent = spent


def fixer_copy(run_id: str, round_number: int, name: str, text: str, k: int = 1) -> Path:
    """A copy of the reviewed text in the run folder for a fixer to edit.

    Why a copy even when the backend edits in place: the fix must be kept
    here before any user's file changes, so a kill at any moment leaves the
    file as reviewed or a fix this folder holds."""
    path = run_dir(run_id) / f"round-{round_number}" / "fixer" / str(k) / (name or "output.txt")
    replace_text(path, text)
    return path


def kept_fix(run_id: str, round_number: int) -> bytes | None:
    """The fix this run kept for `round_number`, if any (a resumed run's own)."""
    return _read(run_dir(run_id) / f"round-{round_number}" / FIX_FILE)


def fixer_answer(answer: str | None, copy: Path, file: Path, reviewed: bytes) -> tuple[bytes, bool]:
    """The fix a fixer made, and whether it is still to be written to `file`.

    It answered the text, or edited `copy`; a backend that edited the file
    its assignment names (the user's) made the fix there itself, and it is
    taken as the fix (a round reviews it next), not as someone else's edit."""
    if answer is not None:
        return answer.encode("utf-8"), True
    edited = _read(copy)
    if edited is not None and edited != reviewed:
        return edited, True
    now = _read(file)
    if now is not None and now != reviewed:
        return now, False
    return reviewed, False


def no_longer_a_file(file: Path, round_number: int) -> str | None:
    """Why a fix cannot go to `file` when someone deleted it or put a
    folder in its place meanwhile; None while it is a regular file."""
    kind = path_kind(file)
    if kind == "file":
        return None
    became = {"missing": "was deleted", "dir": "was replaced by a folder"}.get(
        kind, "was replaced by something that is not a regular file"
    )
    return (
        f"{file} {became} while round {round_number} was reviewed or fixed; its fix was not "
        "written, and is kept in the run folder"
    )


def still_reviewed(file: Path, reviewed: bytes, round_number: int, own: bytes | None = None) -> None:
    """Refuse to write a fix over `file` unless it still holds what round
    `round_number` reviewed (or `own`, the fix this run wrote there before
    it was interrupted)."""
    gone = no_longer_a_file(file, round_number)
    if gone is not None:
        raise ChangedMeanwhile(gone)
    now = _read(file)
    if now != reviewed and (own is None or now != own):
        raise ChangedMeanwhile(
            f"{file} was changed while round {round_number} was reviewed or fixed (not by "
            "this run); its fix was not written over the change, which is left as it is"
        )


def keep_change_fix(
    run_id: str, round_number: int, file: Path, reviewed: bytes, fix: str | bytes
) -> Path:
    """Keep one changed file's fix and the text it replaces, before the fix
    is written to `file`. A file fixed twice in one round keeps the text
    the round reviewed (the first)."""
    folder = run_dir(run_id) / f"round-{round_number}"
    entries = _entries(folder)
    found = next((e for e in entries if e["target"] == str(file)), None)
    if found is None:
        k = len(entries) + 1
        found = {"target": str(file), "fix": f"fixes/{k}.fix", "reviewed": f"fixes/{k}.reviewed"}
        replace_bytes(folder / found["reviewed"], reviewed)
        entries.append(found)
    replace_bytes(folder / found["fix"], _bytes(fix))
    replace_text(folder / CHANGE_FIXES, json.dumps(entries, indent=2) + "\n")
    return folder / found["fix"]


def _entries(folder: Path) -> list[dict[str, str]]:
    try:
        loaded = json.loads((folder / CHANGE_FIXES).read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(loaded, list):
        return []
    keys = ("target", "fix", "reviewed")
    return [
        e for e in loaded if isinstance(e, dict) and all(isinstance(e.get(k), str) for k in keys)
    ]


@dataclass(frozen=True)
class KeptFile:
    """One file's kept fix, the text it replaced, and what the file holds now:
    "fix", "reviewed" (the text the round reviewed), "reviewed-since" (the
    fix, which a later run reviewed) or "other"."""

    target: str
    fix: Path
    reviewed: Path
    holds: str

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.fix), "target": self.target, "target_holds": self.holds}


@dataclass(frozen=True)
class UnreviewedFix:
    """The last fix of a run that no round reviewed, and where it stands.

    For a file target `path` is the kept fix and `target` the file; for a
    change `path` is the round's `fixes/` folder, `target` the checkout and
    `files` says where each file stands. `holds` sums them up: "fix" while
    any file holds its fix, "reviewed" once all hold reviewed text (the
    round's, or a later run's), else "other"."""

    round: int
    path: Path
    target: str
    holds: str
    files: tuple[KeptFile, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "path": str(self.path),
            "target": self.target,
            "target_holds": self.holds,
            "files": [f.to_json() for f in self.files],
        }


def _read(path: Path | str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _stands(run_id: str, target: str, fix: Path, reviewed: Path) -> KeptFile | None:
    kept = _read(fix)
    if kept is None:
        return None
    now = _read(target)
    if now == kept:
        holds = "reviewed-since" if _reviewed_by_another(run_id, target, fix, now) else "fix"
    elif now is not None and now == _read(reviewed):
        holds = "reviewed"
    else:
        holds = "other"
    return KeptFile(target, fix, reviewed, holds)


def reviewed(round_: Round) -> bool:
    """Whether a round was reviewed: gated with at least one valid reply."""
    return bool(round_.gates) and any(
        s is not None and s.gated_valid is True for s in round_.slots.values()
    )


def _names(round_folder: Path, cwd: str, real: str) -> bool:
    """Whether the diff a change's round showed names the file at `real`."""
    from santa_method.core.locate import changed_paths

    try:
        diff = (round_folder / "output.txt").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    named = {os.path.realpath(os.path.join(cwd, p)) for p in changed_paths(diff)}
    return real in named


def _reviewed_by_another(run_id: str, target: str, fix: Path, now: bytes) -> bool:
    """Whether another run reviewed the file since it took the fix: a
    reviewed round, opened after the fix was kept, of a run on that file
    whose output is exactly `now`, or of a change whose diff names the file."""
    from santa_method.state.store import list_run_ids
    from santa_method.state.target import target_name

    digest = hashlib.sha256(now).hexdigest()
    real = os.path.realpath(target)
    try:
        kept_at = fix.stat().st_mtime
    except OSError:
        return False
    for other in list_run_ids():
        if other == run_id:
            continue
        try:
            state = load_state(other)
        except Exception:  # an unreadable run reviewed nothing we can count
            continue
        kind = state.target.kind
        for r in state.rounds:
            folder = run_dir(other) / f"round-{r.round}"
            if not reviewed(r):
                continue
            if kind == "file":
                if os.path.realpath(target_name(state.target)) != real:
                    break
                if r.output_sha256 != digest:
                    continue
            elif kind == "diff":
                if not _names(folder, str(state.target.cwd), real):
                    continue
            else:
                break
            with contextlib.suppress(OSError):
                if (folder / "output.txt").stat().st_mtime >= kept_at:
                    return True
    return False


def _summed(files: list[KeptFile]) -> str:
    if any(f.holds == "fix" for f in files):
        return "fix"
    reviewed = all(f.holds in ("reviewed", "reviewed-since") for f in files)
    return "reviewed" if reviewed else "other"


def unreviewed_fix(state: RunState) -> UnreviewedFix | None:
    """The fix kept after the last reviewed round, when no later round was
    reviewed; None when there is none."""
    target = state.target
    gated = [r for r in state.rounds if reviewed(r)]
    if not gated or target.kind not in ("file", "diff"):
        return None
    number = gated[-1].round
    folder = run_dir(state.id) / f"round-{number}"
    if target.kind == "file":
        one = _stands(state.id, str(target.path), folder / FIX_FILE, folder / "output.txt")
        if one is None:
            return None
        return UnreviewedFix(number, one.fix, one.target, one.holds, (one,))
    files = [
        f
        for e in _entries(folder)
        if (f := _stands(state.id, e["target"], folder / e["fix"], folder / e["reviewed"]))
        is not None
    ]
    if not files:
        return None
    return UnreviewedFix(number, folder / "fixes", str(target.cwd), _summed(files), tuple(files))


def put_back(state: RunState) -> UnreviewedFix | None:
    """Put each file of the run (as `state` has it) that holds a fix no
    round reviewed back to the text the round reviewed; returns where the
    fix stands afterwards (kept in the run folder), or None when no file
    held such a fix.

    Call it wherever a run ends without its fix reviewed, before the end is
    saved or logged: `events.log_event` does for every escalation, and the
    gate for its own. Each file is written under its lock; a file another
    living run fixes now is left to that run (it took the fix as its
    input), and a file that cannot be written stays as it is and is named
    as holding the fix: the escalation is recorded either way.
    """
    found = unreviewed_fix(state)
    if found is None or found.holds != "fix":
        return None
    files = []
    for f in found.files:
        if f.holds == "fix" and _write_back(f):
            f = KeptFile(f.target, f.fix, f.reviewed, "reviewed")
        files.append(f)
    return UnreviewedFix(found.round, found.path, found.target, _summed(files), tuple(files))


def _write_back(f: KeptFile) -> bool:
    from santa_method.core.errors import InputError
    from santa_method.state import locks

    try:
        if locks.fixing_here(f.target):  # the run this process drives holds it
            return _swap(f)
        with locks.fixing(f.target):
            return _swap(f)
    except (InputError, OSError):
        return False


def _swap(f: KeptFile) -> bool:
    if _read(f.target) != _read(f.fix):  # changed since it was judged
        return False
    replace_bytes(f.target, f.reviewed.read_bytes())
    return True


def restore_reviewed(run_id: str) -> UnreviewedFix | None:
    """`put_back` for a run as its state file has it."""
    return put_back(load_state(run_id))


def describe(found: UnreviewedFix) -> str:
    """One sentence for a report or a warning."""
    if len(found.files) == 1 and found.files[0].fix == found.path:
        where = _where(found.files[0], found.round)
    else:
        where = "; ".join(_where(f, found.round) for f in found.files)
    return (
        f"the fixer's text after round {found.round} was never reviewed; it is kept in "
        f"{found.path}, and {where}"
    )


def _where(f: KeptFile, round_number: int) -> str:
    return {
        "fix": f"{f.target} holds it now",
        "reviewed": f"{f.target} holds the text round {round_number} reviewed",
        "other": f"{f.target} was changed since by someone else and is left as it is",
        "reviewed-since": f"{f.target} holds it, reviewed since by another run, and is left as it is",
    }[f.holds]
