"""Gating a run: every slot's reply checked, the core gate, and what comes next.

The gate re-reads everything it judges from the run's own files (the
rubric, the reviewed output, the assignment) and refuses any the helper
did not write. Each reply must be its own reviewer's: the run's source
vouches for that (`state/sources.py`); one agent or one transcript fills one
slot at most, and one review file cannot count as two reviewers.

Inside Claude Code the gate does not judge while a reviewer started for the
round may still reply (`state/waiting.py`: it answers `next: wait`); a
reviewer past its deadline counts as missing. An extra reply that is a
valid FAIL counts like a slot's; the others are named, not counted, and a
round whose gate a late FAIL overturned is gated again (`state/late.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from santa_method.core import budget
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.escalation import Decision, decide
from santa_method.core.files import MAX_REVIEW_BYTES, read_text
from santa_method.core.gate import all_passed, gate
from santa_method.core.review import validate_reply
from santa_method.core.types import GateResult, Rubric, ValidationResult
from santa_method.state import late, sources, waiting
from santa_method.state import log as runlog
from santa_method.state.fixes import write_fixer
from santa_method.state.model.run import Escalation, Gate, LastGate, Round, RunState, Slot
from santa_method.state.rounds import assignment_intact
from santa_method.state.slots import slot_stands
from santa_method.state.store import (
    check_log_path,
    judged_files,
    locked_state,
    log_record,
    now,
    save_state,
)
from santa_method.state.unreviewed import put_back


def _fill_from_files(state: RunState, files: Sequence[str], labels: Sequence[str] | None) -> None:
    current = state.rounds[-1]
    if state.source != "files":
        raise RefusedError(
            f"run {state.id} takes reviews only from the hook's store "
            "(its source is 'hook'), not from files"
        )
    open_labels = [lab for lab, slot in current.slots.items() if slot is None]
    if labels is not None and len(labels) != len(files):
        raise InputError("--labels must name one label per review file")
    targets = list(labels) if labels is not None else open_labels[: len(files)]
    if len(files) > len(open_labels) or any(t not in open_labels for t in targets):
        raise RefusedError(
            f"round {current.round} has open slot(s) {', '.join(open_labels) or 'none'}; "
            f"{len(files)} review file(s) do not fit"
        )
    for label, path in zip(targets, files, strict=True):
        current.slots[label] = Slot(
            reply=read_text(path, "review", MAX_REVIEW_BYTES), file=path, stored=now()
        )


def _provenance_problem(
    state: RunState, slot: Slot, seen: dict[str, str], checks: sources.Checks
) -> str | None:
    """Why a slot's reply cannot count as its own reviewer's, or None.

    In every source one agent, or one transcript, fills one slot at most;
    the rest is the check of the run's source (state/sources.py).
    """
    for key in _reviewer_keys(slot):
        if key in seen:
            return f"the same reviewer already fills slot {seen[key]}"
    return sources.provenance_problem(state, slot, checks)


def _reviewer_keys(slot: Slot) -> list[str]:
    """The agent and the transcript behind a slot's reply (each names one reviewer)."""
    return [k for k in (slot.agent_id, slot.transcript_source or slot.transcript_path) if k]


def _validate_slots(
    state: RunState,
    rubric: Rubric,
    output: str,
    checks: sources.Checks,
    extras: Sequence[tuple[str, Slot]] = (),
) -> list[ValidationResult | None]:
    """Each slot's validation, then each extra reply's; anything that makes a
    reply untrustworthy makes it invalid."""
    current = state.rounds[-1]
    results: list[ValidationResult | None] = []
    seen_agents: dict[str, str] = {}
    seen_reviews: dict[Any, str] = {}
    overdue = waiting.missing(current)
    for label, slot in [*current.slots.items(), *extras]:
        if slot is None:
            results.append(ValidationResult(False, (overdue[label],)) if label in overdue else None)
            continue
        problem = _provenance_problem(state, slot, seen_agents, checks)
        for key in _reviewer_keys(slot):
            seen_agents.setdefault(key, label)
        if slot.failed:
            errors = tuple(slot.errors or ["the reviewer's reply failed validation"])
            results.append(ValidationResult(False, errors))
            continue
        if problem:
            results.append(ValidationResult(False, (problem,)))
            continue
        result = validate_reply(slot.reply, rubric=rubric, output=output, canary=current.canary)
        if result.valid and slot.file is not None:
            # Review files have no transcript behind them: one review handed
            # in twice must not count as two reviewers.
            same = result.review
            if same in seen_reviews:
                result = ValidationResult(
                    False,
                    (f"this review is identical to reviewer {seen_reviews[same]}'s",),
                    result.warnings,
                    result.review,
                )
            else:
                seen_reviews[same] = label
        results.append(result)
    return results


def gate_run(
    run_id: str,
    *,
    checks: sources.Checks,
    iteration: int | None = None,
    review_files: Sequence[str] = (),
    labels: Sequence[str] | None = None,
    log_path: str | None = None,
) -> GateResult:
    """Gate the current round of a run and decide what comes next; `checks`
    are the gating face's provenance checks (state/sources.py)."""

    with locked_state(run_id) as state:
        check_log_path(state, log_path)
        if state.status != "open":
            raise RefusedError(f"run {run_id} is {state.status}; there is nothing to gate")
        current = state.rounds[-1]
        if iteration is not None and iteration != current.round:
            raise RefusedError(f"only the current round ({current.round}) can be gated")
        if not current.open and late.stale_gate(state) is None:
            said = state.last_gate.next if state.last_gate is not None else "none"
            raise RefusedError(
                f"round {current.round} of run {run_id} was gated already "
                f"(next: {said}); a round is gated once per opening"
            )
        if current.open and (still := waiting.awaited(current)):
            raise waiting.StillReviewing(run_id, current.round, still)
        if review_files:
            _fill_from_files(state, review_files, labels)
        elif labels is not None:
            raise InputError("--labels goes with review files")
        rubric, output = judged_files(state, current)
        slot_labels = list(current.slots)
        standing = {label for label in slot_labels if slot_stands(current.slots[label])}
        unseen = late.unseen(state)
        extras = [(label, extra) for r, label, extra in unseen if r is current]

        checked = _validate_slots(state, rubric, output, checks, extras)
        if not assignment_intact(current):
            # What the reviewers read is not what the helper wrote: no reply
            # of this round can count, standing ones included.
            checked = [
                ValidationResult(False, ("the assignment file was changed after the round opened",))
                for _ in checked
            ]
        results = checked[: len(slot_labels)]
        # An extra reply counts only as a valid FAIL: it can stop a NICE, never make one.
        counted = [
            (label, result)
            for (label, _), result in zip(extras, checked[len(slot_labels) :], strict=True)
            if result is not None and result.valid and result.verdict == "FAIL"
        ]
        core = gate(
            [*results, *(result for _, result in counted)],
            [*slot_labels, *(label for label, _ in counted)],
            output=output,
            expected=state.reviewers,
        )
        extra_replies = _extra_replies(current, unseen, checked[len(slot_labels) :], counted)

        new_costs = [
            runlog.as_number(slot.cost_usd if slot is not None else None)
            for label, slot in current.slots.items()
            if label not in standing
        ]
        so_far = runlog.logged_cost(runlog.read(state.log).records, run_id)
        fresh = [c for c in new_costs if c is not None]
        cost = None if so_far is None and not fresh else (so_far or 0.0) + sum(fresh)
        earlier = [list(r.gates[-1].issues) for r in state.rounds[:-1] if r.gates]
        decision = decide(
            core.next,
            round_number=current.round,
            max_fixes=state.max_fixes,
            earlier_flags=earlier,
            current_flags=core.issues,
            rereviews=current.rereviews,
            cost_usd=cost,
            budget_usd=state.budget_usd,
        )
        if state.source == "hook" and decision.next in ("fix", "rereview"):
            decision = _within_budget(state, decision, so_far, new_costs)
        if decision.next == "ship" and (
            core.verdict != "NICE"
            or not all_passed([(o.valid, o.verdict) for o in core.reviews], state.reviewers)
        ):
            raise RuntimeError("the gate said ship without a valid PASS from every reviewer")

        current.open = False
        for outcome in core.reviews:
            slot = current.slots.get(outcome.label) or current.extras.get(outcome.label)
            if slot is not None:
                slot.gated_valid = outcome.valid
                slot.gated_verdict = outcome.verdict
        for (_, _, named), seen in zip(unseen, extra_replies, strict=True):
            if named.gated_valid is None:  # named by this gate, never again
                named.gated_valid, named.gated_verdict = seen["valid"], seen["verdict"]
        reasons = list(core.reasons) + list(decision.reasons)
        record = Gate(
            round=current.round,
            verdict=core.verdict,
            next=decision.next,
            issues=list(core.issues),
            suggestions=list(core.suggestions),
            agreement=core.agreement,
            reasons=reasons,
            ts=now(),
        )
        current.gates.append(record)
        state.last_gate = LastGate(current.round, core.verdict, decision.next)

        result_extra: dict[str, Any] = {"run_id": run_id, "round": current.round}
        if extra_replies:
            result_extra["extra_replies"] = extra_replies
        if decision.next == "fix":
            result_extra.update(write_fixer(state, output, core.issues))
        elif decision.next == "rereview":
            result_extra["next_step"] = f"santa round start --run {run_id}"
        elif decision.next == "ship":
            result_extra["next_step"] = f"santa log ship --run {run_id}"
        elif decision.next == "report":
            # A check that found problems: done, and nothing for a person to rescue.
            state.status = "reported"
        elif decision.next == "escalate":
            state.status = "escalated"
            state.escalation = Escalation(current.round, list(decision.reasons))
            # Before the escalation is saved: a round whose replies were all
            # invalid reviewed nothing, so a fix before it goes back too.
            put_back(state)

        # The state is saved before the log is written: if logging fails, the
        # log lacks a gate the state has, and `log ship` (which needs both)
        # refuses. The other order could leave a NICE in the log that never was.
        save_state(state)
        for outcome in core.reviews:
            review = outcome.review
            held = current.slots.get(outcome.label) or current.extras.get(outcome.label)
            extra: dict[str, Any] = {}
            if outcome.label in current.extras:
                extra["extra"] = True
            if outcome.label in standing:
                extra["standing"] = True
            elif held is not None:
                spent = (
                    ("tokens", held.tokens),
                    ("cost_usd", held.cost_usd),
                    ("token_detail", held.token_detail),
                    ("duration_s", held.duration_s),
                )
                extra.update((key, value) for key, value in spent if value is not None)
            if held is not None and held.model is not None:
                extra["model"] = held.model  # what wrote it, standing or new
            log_record(
                state,
                "review",
                current.round,
                label=outcome.label,
                valid=outcome.valid,
                verdict=outcome.verdict,
                errors=list(outcome.errors),
                checks=[{"criterion": c.criterion, "result": c.result} for c in review.checks]
                if review
                else [],
                issues=[i.to_json() for i in review.critical_issues] if review else [],
                agent_id=held.agent_id if held is not None else None,
                rereview=current.rereviews,
                **extra,
            )
        log_record(
            state,
            "gate",
            current.round,
            verdict=core.verdict,
            next=decision.next,
            issues=[i.to_json() for i in record.issues],
            agreement=core.agreement,
            reviewers=[o.label for o in core.reviews],
            valid_reviewers=[o.label for o in core.reviews if o.valid],
            reasons=reasons,
            rereview=current.rereviews,
            **({"extra_replies": extra_replies} if extra_replies else {}),
        )

        if decision.next == "escalate":
            log_record(state, "escalate", current.round, reason="; ".join(decision.reasons))

    if decision.next in ("escalate", "report"):
        from santa_method.state.report import write_report

        result_extra["report"] = str(write_report(run_id))
    return GateResult(
        core.verdict,
        decision.next,
        core.reviews,
        core.issues,
        core.suggestions,
        core.agreement,
        tuple(reasons),
        result_extra,
    )


def _within_budget(
    state: RunState, decision: Decision, so_far: float | None, new_costs: Sequence[float | None]
) -> Decision:
    """Inside Claude Code nothing between rounds keeps the budget, so the
    gate applies the headless loop's rule before a fix or re-review
    (core/budget.py): stop when the next round cannot be paid for, or when a
    reply's cost is unknown."""
    current = state.rounds[-1]
    filled = [
        slot.cost_usd
        for label, slot in current.slots.items()
        if slot is not None and not slot_stands(slot)
    ]
    this_round = sum(c for c in new_costs if c is not None)
    known = None if any(c is None for c in filled) else (so_far or 0.0) + this_round
    step: Literal["fix", "rereview"] = "fix" if decision.next == "fix" else "rereview"
    reason = budget.next_round(
        step,
        spent_usd=known,
        last_round_usd=this_round,
        last_fix_usd=0.0,  # the fixer's tokens are not read inside Claude Code
        budget_usd=state.budget_usd,
    )
    return decision if reason is None else Decision("escalate", (reason,))


def _extra_replies(
    current: Round,
    unseen: Sequence[tuple[Round, str, Slot]],
    checked: Sequence[ValidationResult | None],
    counted: Sequence[tuple[str, ValidationResult]],
) -> list[dict[str, Any]]:
    """What the gate says about every extra reply no gate has seen: the
    current round's as it judged them, an earlier round's as the hook did."""
    counted_labels = {label for label, _ in counted}
    results = iter(checked)
    told = []
    for r, label, extra in unseen:
        verdict: str | None
        if r is current:
            result = next(results)
            valid = result is not None and result.valid
            verdict = result.verdict if result is not None else None
        else:
            valid, verdict = not extra.failed, extra.verdict
        told.append(
            late.entry(
                r,
                label,
                extra,
                valid=valid,
                verdict=verdict,
                counted=r is current and label in counted_labels,
            )
        )
    return told
