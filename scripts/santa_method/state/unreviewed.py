"""A fix no reviewer saw: kept in the run folder, never left in the user's file.

Why: with `--in-place` the headless loop writes the fixer's text over the
user's file before the next round reviews it. A run that ends there (the
cap, the budget, a failing pre-check, a backend error, a fixer that asks
for input, a person closing an interrupted run) would leave the file
holding text no reviewer saw. So the loop first keeps the fix in the run
folder (`round-N/fix.txt`, N the round it fixes), and when the run is
escalated `restore_reviewed` puts the target back to the text round N
reviewed (`round-N/output.txt`). Only a target that holds exactly the kept
fix is touched: a file someone else changed since is left as it is.

The rule is read from the files alone (no extra state), so a report, `santa
runs` and a resumed process all see the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.state.atomic import replace_text
from santa_method.state.store import load, run_dir

FIX_FILE = "fix.txt"


def keep_fix(run_id: str, round_number: int, text: str) -> Path:
    """Keep the fixer's text for `round_number` in the run folder, before
    it is written anywhere else."""
    path = run_dir(run_id) / f"round-{round_number}" / FIX_FILE
    replace_text(path, text)
    return path


@dataclass(frozen=True)
class UnreviewedFix:
    """The last fix of a run that no round reviewed, and where it stands."""

    round: int
    path: Path
    target: str
    holds: str  # what the target holds now: "fix", "reviewed" (that round's text) or "other"

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "path": str(self.path),
            "target": self.target,
            "target_holds": self.holds,
        }


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def unreviewed_fix(state: dict[str, Any]) -> UnreviewedFix | None:
    """The fix kept after the last reviewed round, when no later round was
    reviewed; None when there is none (or the target is not a file)."""
    if state["target"].get("kind") != "file":
        return None
    gated = [r for r in state["rounds"] if r.get("gates")]
    if not gated:
        return None
    number = gated[-1]["round"]
    path = run_dir(state["id"]) / f"round-{number}" / FIX_FILE
    fix = _read(path)
    if fix is None:
        return None
    now = _read(Path(state["target"]["path"]))
    if now == fix:
        holds = "fix"
    elif now is not None and now == _read(path.with_name("output.txt")):
        holds = "reviewed"
    else:
        holds = "other"
    return UnreviewedFix(number, path, state["target"]["path"], holds)


def restore_reviewed(run_id: str) -> UnreviewedFix | None:
    """Put the run's target back to the last text a round reviewed if it
    holds a fix no round reviewed; returns that fix (kept in the run
    folder), or None when the target holds no such fix.

    Call it wherever a run ends without its fix reviewed; `events.log_event`
    does for every escalation.
    """
    state = load(run_id)
    found = unreviewed_fix(state)
    if found is None or found.holds != "fix":
        return None
    reviewed = run_dir(run_id) / f"round-{found.round}" / "output.txt"
    replace_text(found.target, reviewed.read_text(encoding="utf-8"))
    return UnreviewedFix(found.round, found.path, found.target, "reviewed")


def describe(found: UnreviewedFix) -> str:
    """One sentence for a report or a warning."""
    where = {
        "fix": f"{found.target} holds it now",
        "reviewed": f"{found.target} holds the text round {found.round} reviewed",
        "other": f"{found.target} was changed since by someone else and is left as it is",
    }[found.holds]
    return (
        f"the fixer's text after round {found.round} was never reviewed; it is kept in "
        f"{found.path}, and {where}"
    )
