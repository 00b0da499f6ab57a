"""Gating a run: every slot's reply checked, the core gate, and what comes next.

The gate re-reads everything it judges from the run's own files (the
rubric, the reviewed output, the assignment) and refuses any the helper
did not write. Each reply must be its own reviewer's: the run's source
vouches for that (`state/sources.py`); one agent or one transcript fills one
slot at most, and one review file cannot count as two reviewers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from santa_method.core.errors import InputError, RefusedError
from santa_method.core.escalation import decide
from santa_method.core.files import MAX_REVIEW_BYTES, read_text
from santa_method.core.gate import gate
from santa_method.core.review import validate_reply
from santa_method.core.types import GateResult, Rubric, ValidationResult
from santa_method.state import log as runlog
from santa_method.state import sources
from santa_method.state.fixes import write_fixer
from santa_method.state.model.run import RunState
from santa_method.state.rounds import assignment_intact
from santa_method.state.slots import slot_stands
from santa_method.state.store import (
    check_log_path,
    checked_file,
    locked,
    log_record,
    merged_from_json,
    now,
    run_dir,
    save,
)
from santa_method.state.unreviewed import put_back


def _fill_from_files(
    state: dict[str, Any], files: Sequence[str], labels: Sequence[str] | None
) -> None:
    current = state["rounds"][-1]
    if state["source"] != "files":
        raise RefusedError(
            f"run {state['id']} takes reviews only from the hook's store "
            "(its source is 'hook'), not from files"
        )
    open_labels = [lab for lab, slot in current["slots"].items() if slot is None]
    if labels is not None and len(labels) != len(files):
        raise InputError("--labels must name one label per review file")
    targets = list(labels) if labels is not None else open_labels[: len(files)]
    if len(files) > len(open_labels) or any(t not in open_labels for t in targets):
        raise RefusedError(
            f"round {current['round']} has open slot(s) {', '.join(open_labels) or 'none'}; "
            f"{len(files)} review file(s) do not fit"
        )
    for label, path in zip(targets, files, strict=True):
        current["slots"][label] = {
            "reply": read_text(path, "review", MAX_REVIEW_BYTES),
            "file": path,
            "stored": now(),
        }


def _provenance_problem(
    state: dict[str, Any], slot: dict[str, Any], seen: dict[str, str]
) -> str | None:
    """Why a slot's reply cannot count as its own reviewer's, or None.

    In every source one agent, or one transcript, fills one slot at most;
    the rest is the check of the run's source (state/sources.py).
    """
    for key in (slot.get("agent_id"), slot.get("transcript_source") or slot.get("transcript_path")):
        if key and key in seen:
            return f"the same reviewer already fills slot {seen[key]}"
    return sources.provenance_problem(state, slot)


def _validate_slots(
    state: dict[str, Any], rubric: Rubric, output: str
) -> list[ValidationResult | None]:
    """Each slot's validation; anything that makes a reply untrustworthy makes it invalid."""
    current = state["rounds"][-1]
    results: list[ValidationResult | None] = []
    seen_agents: dict[str, str] = {}
    seen_reviews: dict[Any, str] = {}
    for label, slot in current["slots"].items():
        if slot is None:
            results.append(None)
            continue
        problem = _provenance_problem(state, slot, seen_agents)
        for key in (
            slot.get("agent_id"),
            slot.get("transcript_source") or slot.get("transcript_path"),
        ):
            if key:
                seen_agents.setdefault(key, label)
        if slot.get("failed"):
            errors = tuple(slot.get("errors") or ["the reviewer's reply failed validation"])
            results.append(ValidationResult(False, errors))
            continue
        if problem:
            results.append(ValidationResult(False, (problem,)))
            continue
        result = validate_reply(
            slot.get("reply", ""), rubric=rubric, output=output, canary=current["canary"]
        )
        if result.valid and "file" in slot:
            # Review files have no transcript behind them: one review handed
            # in twice must not count as two reviewers.
            key = result.review
            if key in seen_reviews:
                result = ValidationResult(
                    False,
                    (f"this review is identical to reviewer {seen_reviews[key]}'s",),
                    result.warnings,
                    result.review,
                )
            else:
                seen_reviews[key] = label
        results.append(result)
    return results


def gate_run(
    run_id: str,
    *,
    iteration: int | None = None,
    review_files: Sequence[str] = (),
    labels: Sequence[str] | None = None,
    log_path: str | None = None,
) -> GateResult:
    """Gate the current round of a run and decide what comes next."""
    from santa_method.core.rubric import rubric_from_json, rubric_hash

    with locked(run_id) as state:
        check_log_path(state, log_path)
        if state["status"] != "open":
            raise RefusedError(f"run {run_id} is {state['status']}; there is nothing to gate")
        current = state["rounds"][-1]
        if iteration is not None and iteration != current["round"]:
            raise RefusedError(f"only the current round ({current['round']}) can be gated")
        if not current["open"]:
            raise RefusedError(
                f"round {current['round']} of run {run_id} was gated already "
                f"(next: {state['last_gate']['next']}); a round is gated once per opening"
            )
        if review_files:
            _fill_from_files(state, review_files, labels)
        elif labels is not None:
            raise InputError("--labels goes with review files")
        folder = run_dir(run_id)
        rubric = rubric_from_json(json.loads(checked_file(folder / "rubric.json", None, "rubric")))
        if rubric_hash(rubric) != state["rubric_hash"]:
            raise RefusedError(
                "the run's rubric (rubric.json) was changed after the run opened; start a new run"
            )
        output = checked_file(
            folder / f"round-{current['round']}" / "output.txt",
            current["output_sha256"],
            "reviewed output",
        )
        slot_labels = list(current["slots"])
        standing = {label for label in slot_labels if slot_stands(current["slots"][label])}

        results = _validate_slots(state, rubric, output)
        if not assignment_intact(current):
            # What the reviewers read is not what the helper wrote: no reply
            # of this round can count, standing ones included.
            results = [
                ValidationResult(False, ("the assignment file was changed after the round opened",))
                for _ in slot_labels
            ]
        core = gate(results, slot_labels, output=output, expected=state["reviewers"])

        new_costs = [
            runlog.as_number((current["slots"][label] or {}).get("cost_usd"))
            for label in slot_labels
            if label not in standing
        ]
        so_far = runlog.logged_cost(runlog.read(state["log"]).records, run_id)
        fresh = [c for c in new_costs if c is not None]
        cost = None if so_far is None and not fresh else (so_far or 0.0) + sum(fresh)
        earlier = [
            merged_from_json(r["gates"][-1]["issues"]) for r in state["rounds"][:-1] if r["gates"]
        ]
        decision = decide(
            core.next,
            round_number=current["round"],
            max_fixes=state["max_fixes"],
            earlier_flags=earlier,
            current_flags=core.issues,
            rereviews=current["rereviews"],
            cost_usd=cost,
            budget_usd=state.get("budget_usd"),
        )
        if decision.next == "ship" and (
            core.verdict != "NICE"
            or len(core.reviews) != state["reviewers"]
            or not all(o.valid and o.verdict == "PASS" for o in core.reviews)
        ):
            raise RuntimeError("the gate said ship without a valid PASS from every reviewer")

        current["open"] = False
        for outcome in core.reviews:
            slot = current["slots"][outcome.label]
            if slot is not None:
                slot["gated_valid"] = outcome.valid
                slot["gated_verdict"] = outcome.verdict
        reasons = list(core.reasons) + list(decision.reasons)
        record = {
            "round": current["round"],
            "verdict": core.verdict,
            "next": decision.next,
            "issues": [i.to_json() for i in core.issues],
            "suggestions": list(core.suggestions),
            "agreement": core.agreement,
            "reasons": reasons,
            "ts": now(),
        }
        current["gates"].append(record)
        state["last_gate"] = {
            "round": current["round"],
            "verdict": core.verdict,
            "next": decision.next,
        }

        result_extra: dict[str, Any] = {"run_id": run_id, "round": current["round"]}
        if decision.next == "fix":
            result_extra.update(write_fixer(state, output, core.issues))
        elif decision.next == "rereview":
            result_extra["next_step"] = f"santa round start --run {run_id}"
        elif decision.next == "ship":
            result_extra["next_step"] = f"santa log ship --run {run_id}"
        elif decision.next == "escalate":
            state["status"] = "escalated"
            state["escalation"] = {"round": current["round"], "reasons": list(decision.reasons)}
            # Before the escalation is saved: a round whose replies were all
            # invalid reviewed nothing, so a fix before it goes back too.
            put_back(RunState.from_json(state))

        # The state is saved before the log is written: if logging fails, the
        # log lacks a gate the state has, and `log ship` (which needs both)
        # refuses. The other order could leave a NICE in the log that never was.
        save(folder, state)
        for outcome in core.reviews:
            review = outcome.review
            slot = current["slots"][outcome.label] or {}
            extra: dict[str, Any] = {}
            if outcome.label in standing:
                extra["standing"] = True
            else:
                for key in ("tokens", "cost_usd", "token_detail"):
                    if slot.get(key) is not None:
                        extra[key] = slot[key]
            log_record(
                state,
                "review",
                current["round"],
                label=outcome.label,
                valid=outcome.valid,
                verdict=outcome.verdict,
                errors=list(outcome.errors),
                checks=[{"criterion": c.criterion, "result": c.result} for c in review.checks]
                if review
                else [],
                issues=[i.to_json() for i in review.critical_issues] if review else [],
                agent_id=slot.get("agent_id"),
                rereview=current["rereviews"],
                **extra,
            )
        log_record(
            state,
            "gate",
            current["round"],
            verdict=core.verdict,
            next=decision.next,
            issues=record["issues"],
            agreement=core.agreement,
            reviewers=slot_labels,
            valid_reviewers=[o.label for o in core.reviews if o.valid],
            reasons=reasons,
            rereview=current["rereviews"],
        )

        if decision.next == "escalate":
            log_record(state, "escalate", current["round"], reason="; ".join(decision.reasons))

    if decision.next == "escalate":
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
