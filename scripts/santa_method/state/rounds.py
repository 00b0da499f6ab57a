"""Opening rounds: a run's round 1, the next round after a fix, a re-review.

    round start (round 1) -> replies stored -> gate
        gate says ship      -> log ship                       (run shipped)
        gate says fix       -> log fix -> round start (n+1)   (up to max_fixes)
        gate says rereview  -> round start (same round, open slots only)
        gate says escalate  -> report written                  (run escalated)

A round is *open* from `round start` until its gate: only then can replies be
stored or reviewers reserved, and only an open round can be gated, so a round
is never gated twice without `round start` in between (which is what counts
re-reviews). Each round's assignment is rebuilt from the run's checked files,
byte for byte, so a tampered file is detected and restored.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from santa_method.core import assignments, numbers
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.escalation import FIXES_EXHAUSTED, MAX_REREVIEWS
from santa_method.core.files import read_exact
from santa_method.core.gate import EMPTY_OUTPUT, default_labels, require_output
from santa_method.core.types import Rubric
from santa_method.state import late, sources, waiting
from santa_method.state.atomic import replace_text
from santa_method.state.model.run import Round, RunState, Target
from santa_method.state.paths import default_log_path, ensure_santa_dir
from santa_method.state.slots import slot_stands
from santa_method.state.store import (
    checked_file,
    load_state,
    locked_state,
    log_record,
    new_run_id,
    now,
    run_dir,
    save_state,
    sha256,
)
from santa_method.state.target import (
    read_target,
    run_pre_check,
    target_name,
    working_copy,
)


@dataclass(frozen=True)
class RoundOpened:
    run_id: str
    round: int
    assignment: str
    instruction: str
    canary: str
    open_slots: tuple[str, ...]
    rereview: bool
    models: dict[str, str | None] = field(default_factory=dict)
    """Each open slot's model (inside Claude Code, the Agent call's `model`
    for that slot's reviewer); None where the reviewer inherits the session's."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "round": self.round,
            "assignment": self.assignment,
            "instruction": self.instruction,
            "canary": self.canary,
            "open_slots": list(self.open_slots),
            "reviewers": len(self.open_slots),
            "models": {label: self.models.get(label) for label in self.open_slots},
            "rereview": self.rereview,
        }


def _opened(state: RunState, rereview: bool) -> RoundOpened:
    r = state.rounds[-1]
    slots = tuple(label for label, slot in r.slots.items() if slot is None)
    models = {label: (state.slot_models or {}).get(label) for label in slots}
    return RoundOpened(
        state.id, r.round, r.assignment, r.instruction, r.canary, slots, rereview, models
    )


def _assignment_body(folder: Path, state: RunState, r: Round) -> str:
    """The round's assignment, rebuilt from the run's checked files: the
    same bytes every time, so a tampered file can be detected and restored."""
    return assignments.reviewer_assignment(
        run_id=state.id,
        round_number=r.round,
        reviewers=state.reviewers,
        rubric_markdown=checked_file(folder / "rubric.md", state.rubric_md_sha256, "rubric"),
        spec=checked_file(folder / "spec.md", state.spec_sha256, "spec"),
        output=checked_file(
            folder / f"round-{r.round}" / "output.txt", r.output_sha256, "reviewed output"
        ),
        boundary=r.boundary,
        canary=r.canary,
    )


def assignment_intact(r: Round) -> bool:
    """The round's assignment file is what the helper wrote."""
    try:
        text = read_exact(r.assignment)
    except (OSError, UnicodeDecodeError):
        return False
    return sha256(text) == r.assignment_sha256


def _write_round(folder: Path, state: RunState, number: int, output: str) -> Round:
    if not output.strip():  # a fixer emptied it: the run cannot go on (and escalates)
        raise RefusedError(EMPTY_OUTPUT)
    spec = checked_file(folder / "spec.md", state.spec_sha256, "spec")
    # The boundary stays the same for the whole run so the shared prefix is
    # byte-identical across rounds (prompt caches); a fix that put it into
    # the output only costs a new one, never an open fence.
    if state.boundary in output:
        state.boundary = assignments.boundary_for(spec, output)
    round_dir = folder / f"round-{number}"
    round_dir.mkdir(exist_ok=True)
    replace_text(round_dir / "output.txt", output)
    path = round_dir / "assignment.md"
    labels = default_labels(state.reviewers)
    r = Round(
        round=number,
        opened=now(),
        canary=assignments.new_token(),
        boundary=state.boundary,
        assignment=str(path),
        instruction=assignments.reviewer_instruction(str(path), state.id, number),
        output_sha256=sha256(output),
        open=True,
        rereviews=0,
        capacity=len(labels),
        spawned=0,
        slots=dict.fromkeys(labels),
        spawns=[],
    )
    body = _assignment_body(folder, state, r)
    replace_text(path, body)
    r.assignment_sha256 = sha256(body)
    return r


def start_run(
    *,
    target: Target,
    spec: str,
    rubric: Rubric,
    rubric_name: str,
    rubric_markdown: str,
    rubric_hash: str,
    reviewers: int,
    max_fixes: int,
    source: str,
    models: Any = None,
    budget_usd: float | None = None,
    pre_check: str | None = None,
    log_path: str | os.PathLike[str] | None = None,
    cwd: str | None = None,
    run_id: str | None = None,
    in_place: bool = False,
    replayed: str | None = None,
    author_model: str | None = None,
    slot_models: Mapping[str, str] | None = None,
) -> RoundOpened:
    """Open a run and its round 1, after the pre-check passes.

    `replayed` names the recording a replayed run is answered from: the
    state and the log's `run` record say so, and so does every report.
    `author_model` names the model that wrote the output, which the report
    sets beside its reviewers' families.
    `slot_models` (inside Claude Code) is the model each reviewer slot runs
    on, by label: the guard requires it on that slot's Agent call.

    Nothing is written (no folder, no assignment, no log record) unless the
    inputs are usable and the pre-check passed. The log's `run` record comes
    first, so no run folder is ever without one: a process killed while it
    writes the folder leaves a logged run without state, which `santa runs`
    shows and `santa log escalate` closes.
    """
    numbers.REVIEWERS.check(reviewers, "reviewers")
    numbers.MAX_FIXES.check(max_fixes, "max_fixes")
    if budget_usd is not None:
        numbers.BUDGET_USD.check(budget_usd, "budget_usd")
    if source not in sources.SOURCES:
        raise InputError("the source must be 'hook', 'files' or 'api'")
    if not spec.strip():
        raise InputError("the spec is empty; say what the output must do")
    work_dir = cwd or str(Path.cwd())
    require_output(read_target(target))
    run_pre_check(pre_check, work_dir)
    # Read after the pre-check, as every later round is: a pre-check that
    # rewrites files (a formatter) shapes what round 1 reviews.
    output = read_target(target)
    require_output(output)
    ensure_santa_dir()
    run_id = run_id or new_run_id()
    folder = run_dir(run_id)
    if folder.exists():
        raise InputError(f"run {run_id} exists already")
    log_file = Path(log_path) if log_path else default_log_path()
    state = RunState(
        id=run_id,
        created=now(),
        status="open",
        target=target,
        rubric=rubric_name,
        rubric_hash=rubric_hash,
        reviewers=reviewers,
        max_fixes=max_fixes,
        budget_usd=budget_usd,
        source=source,
        models=None if models is None else list(models),
        pre_check=pre_check,
        cwd=work_dir,
        log=str(log_file.absolute()),
        boundary=assignments.boundary_for(spec, output),
        spec_sha256=sha256(spec),
        rubric_md_sha256=sha256(rubric_markdown),
        rounds=[],
        in_place=bool(in_place),  # the fixes go to the user's file itself
        replayed=replayed,
        author_model=author_model,
        slot_models=dict(slot_models) if slot_models else None,
    )
    log_record(
        state,
        "run",
        0,
        target=target_name(target),
        **({"working_copy": copy} if (copy := working_copy(target)) else {}),
        target_sha256=sha256(output),
        spec_sha256=sha256(spec),
        rubric=rubric_name,
        rubric_hash=rubric_hash,
        models=models,
        reviewers=reviewers,
        source=source,
        max_fixes=max_fixes,
        **({"replayed": replayed} if replayed is not None else {}),
        **({"author_model": author_model} if author_model is not None else {}),
        **({"slot_models": dict(slot_models)} if slot_models else {}),
    )
    try:
        folder.mkdir(parents=True)
        replace_text(folder / "spec.md", spec)
        replace_text(folder / "rubric.md", rubric_markdown)
        replace_text(folder / "rubric.json", json.dumps(rubric.to_json(), indent=2))
        state.rounds.append(_write_round(folder, state, 1, output))
        save_state(state)
    except BaseException as exc:  # the logged run must not stay open with no folder
        with contextlib.suppress(Exception):
            log_record(state, "escalate", 1, reason=f"the run folder could not be written: {exc}")
        raise
    return _opened(state, False)


def _cap_refusal(state: RunState, number: int) -> str:
    cap = state.max_fixes + 1
    return (
        f"round {number} would pass the cap of {cap} round{'s' if cap != 1 else ''} "
        f"(max_fixes {state.max_fixes}); run {state.id} goes to a person instead"
    )


def _next_round_check(state: RunState) -> str:
    """What `round start --run` would do now ('rereview' or 'fresh'), or a refusal."""
    current = state.rounds[-1]
    last = state.last_gate
    gated_now = last is not None and last.round == current.round
    if state.status != "open":
        reasons = state.escalation.reasons if state.escalation is not None else []
        if (
            gated_now
            and any(r.startswith(FIXES_EXHAUSTED) for r in reasons)
            and current.round + 1 > state.max_fixes + 1
        ):
            raise RefusedError(_cap_refusal(state, current.round + 1) + f" (it is {state.status})")
        raise RefusedError(f"run {state.id} is {state.status}; no more rounds, start a new run")
    if current.open or last is None or not gated_now:
        raise RefusedError(
            f"round {current.round} of run {state.id} has not been gated yet; "
            f"run 'santa gate --run {state.id}' first"
        )
    if stale := late.stale_gate(state):
        raise RefusedError(stale)
    if last.next == "rereview":
        if current.rereviews >= MAX_REREVIEWS:
            raise RefusedError(f"round {current.round} has had {MAX_REREVIEWS} re-reviews already")
        return "rereview"
    if last.next != "fix":
        raise RefusedError(
            f"the last gate of run {state.id} said '{last.next}', not 'fix' or 'rereview'; "
            + ("log the ship instead" if last.next == "ship" else "no new round")
        )
    number = current.round + 1
    if number > state.max_fixes + 1:
        raise RefusedError(_cap_refusal(state, number))
    if not any(f.after_round == current.round for f in state.fixes):
        raise RefusedError(
            f"no fix is logged after round {current.round}; run "
            f"'santa log fix --run {state.id}' once the fixer is done"
        )
    return "fresh"


def next_round(run_id: str) -> RoundOpened:
    """Open the round the last gate asked for: a fresh one after a logged
    fix, or the same one again for its failed or missing slots."""
    kind = _next_round_check(load_state(run_id))
    if kind == "fresh":
        # The pre-check may take minutes: run it outside the lock, then check
        # the state again under the lock before changing anything.
        snapshot = load_state(run_id)
        run_pre_check(snapshot.pre_check, snapshot.cwd)
    with locked_state(run_id) as state:
        if _next_round_check(state) != kind:
            raise RefusedError(f"run {run_id} changed while the round was being opened; try again")
        current = state.rounds[-1]
        if kind == "rereview":
            for label, slot in current.slots.items():
                if not slot_stands(slot):
                    current.slots[label] = None
            if not assignment_intact(current):
                body = _assignment_body(run_dir(run_id), state, current)
                replace_text(Path(current.assignment), body)
            current.rereviews += 1
            current.open = True
            current.spawned = 0
            current.capacity = sum(1 for s in current.slots.values() if s is None)
            return _opened(state, True)
        output = read_target(state.target)
        state.rounds.append(_write_round(run_dir(run_id), state, current.round + 1, output))
        state.fixer = None
        return _opened(state, False)


def reopen(run_id: str) -> RoundOpened | None:
    """The round a resumed process continues: the open round of an open run
    (its empty slots to fill, or none left and only the gate to run), or
    None when the run is past that point."""
    state = load_state(run_id)
    if state.status != "open":
        return None
    current = state.rounds[-1]
    if not current.open:
        return None
    return _opened(state, current.rereviews > 0)


def describe(run_id: str) -> dict[str, Any]:
    """Where a run stands and the one command that moves it on (for a session
    that lost track of its run, e.g. after context compaction)."""
    state = load_state(run_id)
    current = state.rounds[-1]
    last = state.last_gate
    filled = [label for label, slot in current.slots.items() if slot is not None]
    empty = [label for label, slot in current.slots.items() if slot is None]
    stale = late.stale_gate(state)
    still = waiting.awaited(current) if current.open and state.status == "open" else []
    if state.status != "open":
        step = None
    elif current.open or stale:
        step = f"santa gate --run {run_id}"
    elif last and last.next == "fix":
        fixed = any(f.after_round == current.round for f in state.fixes)
        step = f"santa round start --run {run_id}" if fixed else f"santa log fix --run {run_id}"
    elif last and last.next == "rereview":
        step = f"santa round start --run {run_id}"
    elif last and last.next == "ship":
        step = f"santa log ship --run {run_id}"
    else:
        step = None
    return {
        "run_id": run_id,
        "status": state.status,
        "target": target_name(state.target),
        "source": state.source,
        "round": current.round,
        # A closed run's last round may never have been gated (the API
        # failed, the budget ran out): it waits for no reviewer.
        "round_open": current.open and state.status == "open",
        "rereviews": current.rereviews,
        "filled_slots": filled,
        "open_slots": empty if current.open and state.status == "open" else [],
        "models": {
            label: (state.slot_models or {}).get(label)
            for label in (empty if current.open and state.status == "open" else [])
        },
        "last_gate": None if last is None else last.to_json(),
        "instruction": current.instruction if current.open and state.status == "open" else None,
        "fixer_instruction": state.fixer.instruction if state.fixer is not None else None,
        "waiting": [a.to_json() for a in still],
        "waiting_for": [f"waiting for {a.phrase()}" for a in still],
        "stale_gate": stale,
        "next_step": step,
    }
