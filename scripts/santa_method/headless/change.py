"""Headless review of a change: the working tree against a git revision.

Reviewers see what `santa round start --against-diff REV` shows them inside
Claude Code: `git diff REV` plus the files git does not track yet,
recomputed every round. Their quotes are placed on the changed file and its
line in the new version (`core.locate`), in the result and in every report.

Fixing a change means editing the checkout, so it is allowed only with
`in_place` (`--in-place`); `max_fixes=0` reports only. The fixer works one
changed file at a time: each call gets that file's whole text and only the
problems placed in it (a problem quoting two files goes to both), through
the same `Backend.fix` contract as a single file, and its answer replaces
the file atomically. An omission that names no changed file goes to the
first one. A deleted file cannot be fixed by editing it: its problems wait
for a person.

As for a single file, nothing unreviewed is left behind: before a fix is
written, it and the text it replaces are kept in the run folder
(`state/unreviewed.py`), so an escalation puts every fixed file back; and
each file is locked before it is written, so no other santa run fixes it
at the same time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from santa_method.core import assignments
from santa_method.core.errors import InputError
from santa_method.core.files import read_exact, read_text
from santa_method.core.locate import changed_paths, parse_diff, places_of
from santa_method.core.types import MergedIssue
from santa_method.headless.backends.base import Backend, FixReply, FixRequest, Tokens
from santa_method.headless.backends.checked import ask_fix
from santa_method.state.atomic import replace_bytes
from santa_method.state.model.run import Target
from santa_method.state.store import last_flags, run_dir
from santa_method.state.target import check_rev, read_target
from santa_method.state.unreviewed import (
    ChangedMeanwhile,
    fixer_answer,
    fixer_copy,
    keep_change_fix,
    still_reviewed,
)


@dataclass(frozen=True)
class Change:
    """The working tree's change against `rev`, in the git repository at `root`.

    It stands where the loop keeps a file's working copy: `read_text` gives
    what the reviewers are shown now (the diff), `str()` where it lives.
    """

    rev: str
    root: Path

    @property
    def target(self) -> Target:
        return Target(kind="diff", rev=self.rev, cwd=str(self.root))

    def read_text(self, encoding: str = "utf-8") -> str:
        return read_target(self.target)

    def __str__(self) -> str:
        return str(self.root)


def open_change(rev: str, root: Path, *, in_place: bool, max_fixes: int) -> Change:
    """The change to review, refused before anything is spent when the
    revision is not a commit or fixes would edit the checkout unasked."""
    check_rev(rev, str(root))
    if max_fixes > 0 and not in_place:
        raise InputError(
            "fixing a change edits the checkout: add --in-place (in_place=True) to allow it, "
            "or --max-fixes 0 to review and report only"
        )
    return Change(rev, root)


def _sections(diff: str) -> dict[str, str]:
    """Each file's part of a diff, by path."""
    lines = diff.split("\n")
    return {f.path: "\n".join(lines[f.first_row : f.last_row + 1]) for f in parse_diff(diff)}


def flags_by_file(flags: list[MergedIssue], diff: str) -> dict[str, list[MergedIssue]]:
    """Each changed file with the problems placed in it, in the diff's order."""
    paths = changed_paths(diff)
    out: dict[str, list[MergedIssue]] = {}
    for flag in flags:
        for spot in places_of(flag.to_json(), diff, paths, diff=True):
            out.setdefault(spot.path, [])
            if flag not in out[spot.path]:
                out[spot.path].append(flag)
    return {p: out[p] for p in paths if p in out}


async def fix_change(
    call: Callable[[str, Awaitable[FixReply]], Awaitable[FixReply]],
    backend: Backend,
    *,
    run_id: str,
    round_number: int,
    diff: str,
    change: Change,
    model: str | None,
    timeout: float | None,
    fix_alone: Callable[[Path], None],
) -> FixReply:
    """Fix each changed file that has problems; one reply summing them up.

    `fix_alone(file)` takes the file's lock for the rest of the run (it
    raises when another run holds it)."""
    spec = read_exact(run_dir(run_id) / "spec.md")
    deleted = {f.path for f in parse_diff(diff) if f.deleted}
    notes: list[str] = []
    tokens = Tokens()
    cost: float | None = 0.0
    used_model: str | None = None
    todo = {
        path: flags
        for path, flags in flags_by_file(last_flags(run_id), diff).items()
        if path not in deleted
    }
    for path in flags_by_file(last_flags(run_id), diff):
        if path in deleted:
            notes.append(f"{path}: not sent to the fixer (the change deletes the file)")
    for path in todo:
        fix_alone(change.root / path)
    # What the round reviewed, file by file, before any fixer runs: a file
    # someone edits meanwhile (now or while another file is fixed) is never
    # sent to a fixer nor written over.
    shown, now = _sections(diff), _sections(change.read_text())
    for path in todo:
        if shown.get(path) != now.get(path):
            raise ChangedMeanwhile(
                f"{change.root / path} was edited while round {round_number} was reviewed "
                "(not by this run); no fix was written over it"
            )
    reviewed = {path: read_text(change.root / path, "changed file") for path in todo}
    for k, (path, flags) in enumerate(todo.items(), 1):
        file = change.root / path
        content = reviewed[path]
        before = content.encode("utf-8")
        assignment = assignments.fixer_assignment(
            run_id=run_id,
            round_number=round_number,
            target=path,
            output=content,
            flags=flags,
            spec=spec,
            boundary=assignments.boundary_for(
                content, spec, *(f.issue + (f.quote or "") + (f.missing or "") for f in flags)
            ),
        )
        copy = fixer_copy(run_id, round_number, file.name, content, k)
        try:
            still_reviewed(file, before, round_number)
        except ChangedMeanwhile as exc:
            spent = FixReply(None, "\n".join(notes), tokens, cost, used_model)
            raise ChangedMeanwhile(str(exc), spent) from None
        reply = await call(
            f"the fixer ({path})",
            ask_fix(
                backend,
                FixRequest(
                    assignment=assignment,
                    target_path=str(copy),
                    output=content,
                    model=model,
                    timeout=timeout,
                    project_dir=str(change.root),
                ),
            ),
        )
        tokens = tokens + reply.tokens
        cost = None if cost is None or reply.cost_usd is None else cost + reply.cost_usd
        used_model = used_model or reply.model
        # Kept before the file changes, and never written over an edit
        # someone made meanwhile.
        fixed, write = fixer_answer(reply.output, copy, file, before)
        if fixed != before:
            keep_change_fix(run_id, round_number, file, before, fixed)
        if write and fixed != before:
            try:
                still_reviewed(file, before, round_number)
            except ChangedMeanwhile as exc:
                spent = FixReply(None, "\n".join(notes), tokens, cost, used_model)
                raise ChangedMeanwhile(str(exc), spent) from None
            replace_bytes(file, fixed)
        notes.append(f"{path}:\n{reply.notes}".rstrip())
    return FixReply(
        output=None, notes="\n".join(notes), tokens=tokens, cost_usd=cost, model=used_model
    )
