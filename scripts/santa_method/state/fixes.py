"""The fix between two rounds: the fixer's assignment, its report, and a fixer who asks.

The gate that says `fix` writes the fixer's assignment (the flags, the
output, the spec); the fixer's reply (kept by the SubagentStop hook, or
given with `santa log fix`) is its per-flag report. A question escalates
the run and puts the reviewed text back; a fix that changed nothing is no
fix unless every flag is answered "not an issue".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from santa_method.core import assignments
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.files import read_exact
from santa_method.core.fixreport import (
    NEEDS_INPUT,
    FixReport,
    extra_answers_problem,
    parse_report,
)
from santa_method.core.types import MergedIssue
from santa_method.state.atomic import replace_text
from santa_method.state.model.run import Escalation, Fixer, RunState
from santa_method.state.slots import FIX_MARKER, run_of
from santa_method.state.store import load_state, run_dir, sha256
from santa_method.state.target import read_target, target_name


def write_fixer(state: RunState, output: str, flags: Sequence[MergedIssue]) -> dict[str, Any]:
    """Write the fixer's assignment for the gate that said `fix` and record
    it in `state.fixer`; returns what the gate's result adds (the fixer's
    instruction, its assignment file, the next step)."""
    current = state.rounds[-1]
    run_id = state.id
    target = state.target
    name = (
        str(target.path)
        if target.kind == "file"
        else f"the working tree (diff against {target.rev})"
    )
    spec = read_exact(run_dir(run_id) / "spec.md")
    body = assignments.fixer_assignment(
        run_id=run_id,
        round_number=current.round,
        target=name,
        output=output,
        flags=flags,
        spec=spec,
        boundary=assignments.boundary_for(
            output, spec, *(i.issue + (i.quote or "") + (i.missing or "") for i in flags)
        ),
    )
    path = run_dir(run_id) / f"round-{current.round}" / "fixer-assignment.md"
    replace_text(path, body)
    instruction = assignments.fixer_instruction(str(path), run_id, current.round, name)
    state.fixer = Fixer(
        round=current.round,
        instruction=instruction,
        assignment=str(path),
        assignment_sha256=sha256(body),
    )
    return {
        "fixer_instruction": instruction,
        "fixer_assignment": str(path),
        "next_step": f"santa log fix --run {run_id}, then santa round start --run {run_id}",
    }


def fixer_open(instruction: str) -> bool:
    """Whether `instruction` is exactly the fixer instruction of an open fix."""
    run_id = run_of(instruction, FIX_MARKER)
    if run_id is None:
        return False
    try:
        state = load_state(run_id)
    except InputError:
        return False
    fixer, last = state.fixer, state.last_gate
    if fixer is None or last is None:
        return False
    if fixer.assignment_sha256:
        # The fixer reads its flags from the file: an edited file would hand
        # it flags no reviewer raised.
        try:
            body = read_exact(fixer.assignment)
        except (OSError, UnicodeDecodeError):
            return False
        if sha256(body) != fixer.assignment_sha256:
            return False
    return (
        state.status == "open"
        and fixer.instruction == instruction.strip()
        and last.next == "fix"
        and fixer.round == state.rounds[-1].round
    )


FIXER_REPLY = "fixer-reply.txt"


def record_fixer_reply(instruction: str, reply: str) -> bool:
    """Keep the fixer's final reply for `santa log fix` (the SubagentStop hook
    calls this); False when the instruction is no open fix's."""
    if not fixer_open(instruction):
        return False
    run_id = run_of(instruction, FIX_MARKER)
    assert run_id is not None
    fixer = load_state(run_id).fixer
    assert fixer is not None  # fixer_open said so
    path = run_dir(run_id) / f"round-{fixer.round}" / FIXER_REPLY
    replace_text(path, reply)
    return True


def fix_report(state: RunState, data: dict[str, Any]) -> FixReport:
    """The fixer's report: the notes given with the fix, else the reply the
    SubagentStop hook kept. The notes go into the log record either way.
    (`data` is the fix's log record, not the state.)"""
    current = state.rounds[-1]
    notes = data.get("notes")
    if not isinstance(notes, str) or not notes.strip():
        kept = run_dir(state.id) / f"round-{current.round}" / FIXER_REPLY
        notes = kept.read_text(encoding="utf-8") if kept.is_file() else ""
        if notes:
            data["notes"] = notes[:4000]
    flags = list(current.gates[-1].issues)
    report = parse_report(notes, flags)
    data["report"] = report.to_json()
    return report


def _keep_unreviewed(state: RunState) -> bool:
    """Keep what the fixer left in a file target as the round's unreviewed
    fix, so the one restore of escalated runs (`unreviewed.put_back`,
    called before the escalation is saved) puts the reviewed text back.
    True when the target differs from what was reviewed (it will be
    restored)."""
    target = state.target
    if target.kind != "file":
        return False
    current = state.rounds[-1]
    try:
        # Bytes, as the round's output was read: line endings and text that
        # is not UTF-8 are kept and put back exactly.
        now = Path(str(target.path)).read_bytes()
    except OSError:
        return False
    if hashlib.sha256(now).hexdigest() == current.output_sha256:
        return False
    from santa_method.state.unreviewed import keep_fix

    keep_fix(state.id, current.round, now)
    return True


def needs_input(state: RunState, report: FixReport, data: dict[str, Any]) -> dict[str, Any]:
    """A fixer asked: no fix is logged, the run escalates with the questions
    and the target goes back to the text the reviewers saw (nothing guessed
    stands; what the fixer left is kept in the run folder)."""
    current = state.rounds[-1]
    questions: list[dict[str, Any]] = [
        {
            "n": a.number,
            "key": a.key,
            "criterion": a.criterion,
            "question": a.text or "(no question given)",
        }
        for a in report.questions
    ]
    restored = _keep_unreviewed(state)
    state.status = "escalated"
    state.fixer = None
    state.escalation = Escalation(round=current.round, reasons=[NEEDS_INPUT], questions=questions)
    return {
        "reason": NEEDS_INPUT,
        "questions": questions,
        "notes": data.get("notes", ""),
        "report": data.get("report", []),
        "restored": restored,
    }


def check_changed(state: RunState, report: FixReport) -> None:
    """A fix that leaves the output as reviewed is no fix, unless the fixer
    answered every problem "not an issue" (the next round tests that claim);
    nor is one whose report answers problems it was never given."""
    current = state.rounds[-1]
    extra = extra_answers_problem(report, len(current.gates[-1].issues))
    if extra is not None:
        raise RefusedError(extra)
    if report.all_not_an_issue:
        return
    try:
        now = read_target(state.target)
    except InputError as exc:
        raise RefusedError(f"run {state.id} cannot log the fix: {exc}") from None
    if sha256(now) == current.output_sha256:
        raise RefusedError(
            f"the fix left {target_name(state.target)} unchanged, so it is not a fix: another "
            "round would review the same text. Run the fixer again (it must change the output, or "
            "answer every flag 'not an issue' with its reason, or 'needs input' with a question)"
        )
