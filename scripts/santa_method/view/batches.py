"""A batch's line in the table and its page, from its typed state and report.

Pure, as `view/model.py` is (which holds the runs' part and the page's
whole data): it reads what `view.sources` read and redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from santa_method.state.model.batch import BatchState, Wave
from santa_method.view.fields import number as _number
from santa_method.view.fields import plain as _plain
from santa_method.view.fields import text as _str
from santa_method.view.fields import texts as _strs
from santa_method.view.sources import BatchFiles


def batch_entry(batch: BatchFiles) -> dict[str, Any]:
    """A batch's line in the table and its page: its typed state, with the
    report's figures where it has one (a batch still open has none)."""
    state = batch.state
    report = batch.report or {}
    waves = state.waves if state is not None else []
    verdict = _str(report.get("verdict")) or (state.verdict if state else None) or "open"
    row: dict[str, Any] = {
        "id": batch.batch_id,
        "created": state.created if state is not None else "",
        "verdict": verdict,
        "status": (state.status if state else None) or "unknown",
        "population": _number(report.get("population")) or _population(state),
        "reviewed": sum(len(w.outcomes) for w in waves),
        "cost": _number(report.get("cost_usd", state.cost_usd if state else None)),
        "samples": len(waves),
    }
    if state is None:
        row["detail"] = None
        row["problem"] = batch.problem
        return row
    options = state.options.to_json()
    row["detail"] = {
        "mode": state.mode or None,
        "seed": state.seed,
        "options": {
            k: v for k, v in options.items() if _plain(v) and k not in ("exclude", "rubric")
        },
        "guarantee": _str(report.get("guarantee")),
        "estimate": report.get("estimate") if isinstance(report.get("estimate"), dict) else None,
        "estimate_after_fixes": report.get("estimate_after_fixes")
        if isinstance(report.get("estimate_after_fixes"), dict)
        else None,
        "estimate_statement": _str(report.get("estimate_statement")),
        "cost_share": _number(report.get("cost_relative_to_all")),
        "reasons": _strs(report.get("reasons")) or list(state.reasons or []),
        "warnings": _strs(report.get("warnings")),
        "failures": _failures(waves),
        "systemic": _strs(report.get("systemic")),
        "strata": _strata(state),
        "samples": [_sample(w) for w in waves],
        "changed": len(state.changed),
    }
    return row


def _population(state: BatchState | None) -> int:
    if state is None:
        return 0
    excluded = set(state.options.exclude)
    return sum(1 for i in state.items if i.id not in excluded)


def _failures(waves: Sequence[Wave]) -> dict[str, list[str]]:
    """Criterion -> items whose first round failed it, over every sample."""
    found: dict[str, list[str]] = {}
    for wave in waves:
        for outcome in wave.outcomes.values():
            for criterion in outcome.criteria:
                found.setdefault(criterion, []).append(outcome.item)
    return dict(sorted(found.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def _strata(state: BatchState) -> list[dict[str, Any]]:
    if not any(i.stratum is not None for i in state.items):
        return []
    of = {i.id: i.stratum or "(none)" for i in state.items}
    table: dict[str, dict[str, Any]] = {}
    for name in of.values():
        table.setdefault(name, {"name": name, "items": 0, "sampled": 0, "failed": 0})["items"] += 1
    for wave in state.waves:
        for item in wave.items:
            if item in of:
                table[of[item]]["sampled"] += 1
        for outcome in wave.outcomes.values():
            if outcome.failed and outcome.item in of:
                table[of[outcome.item]]["failed"] += 1
    return sorted(table.values(), key=lambda s: s["name"])


def _sample(wave: Wave) -> dict[str, Any]:
    outcomes = {o.item: o for o in wave.outcomes.values()}
    items = []
    for item in wave.items:
        o = outcomes.get(item)
        items.append(
            {
                "item": item,
                "status": o.status if o else "waiting",
                "criteria": list(o.criteria) if o else [],
                "failed": o.failed if o else False,
                "rounds": o.rounds if o else None,
                "cost": _number(o.cost_usd) if o else None,
                "run": _str(o.run_id) if o else None,
                "reason": _str(o.reason) if o else None,
            }
        )
    screens = [
        {
            "criterion": criterion,
            **{
                k: sum(1 for f in by_item.values() if f.result == k)
                for k in ("clean", "flagged", "unusable")
            },
            "fixed": sum(1 for f in by_item.values() if f.fixed),
            "flagged_items": [
                {"item": i, "fixed": f.fixed} for i, f in by_item.items() if f.result == "flagged"
            ],
        }
        for criterion, by_item in wave.screens.items()
    ]
    plan, decision = wave.plan, wave.decision
    return {
        "number": wave.number,
        "statement": plan.statement or None,
        "population": plan.population,
        "detection": _number(plan.detection_probability),
        "method": plan.method or None,
        "items": items,
        "skipped": list(wave.skipped),
        "screens": screens,
        "decision": None
        if decision is None
        else {"step": decision.step, "reasons": list(decision.reasons)},
    }
