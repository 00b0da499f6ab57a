"""A batch's decisions, and its files (`batch_files.py`), as one import.

The book reads a batch's state: which items were drawn in which wave, what
each item's run decided (`outcome_of_run`, read from the run itself, never
from anyone's word), what the sample says about the rest (the batch rules
in `core/batch_rules.py`), and the report and estimate when the batch finishes.
The batch's files (ids, state, lock, event log, item texts) are in
`batch_files.py`; their names are gathered here too, so the faces that
drive a batch import one module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core import batch_rules
from santa_method.core.batch_rules import ItemOutcome
from santa_method.core.errors import InputError
from santa_method.state import log as runlog
from santa_method.state import store as run_store

# The id pattern, which the viewer uses to find batch folders.
from santa_method.state.batch_files import _BATCH_ID as _BATCH_ID
from santa_method.state.batch_files import (
    STATE_VERSION,
    BatchItem,
    ItemStore,
    batch_dir,
    batches_dir,
    check_readable,
    create,
    event,
    events,
    find_resumable,
    fingerprint,
    held,
    item_text,
    jsonl_text,
    list_ids,
    load,
    locked,
    new_batch_id,
    open_batch,
    save,
)
from santa_method.state.model.batch import BatchState, PlanRecord, Wave


def first_draw(state: BatchState, store: ItemStore) -> Wave:
    """Draw a new batch's first sample; a plan that cannot be drawn removes
    the batch again rather than leave an open batch behind."""
    import shutil

    try:
        return Book(state, store).draw()
    except BaseException:
        shutil.rmtree(batch_dir(state.id), ignore_errors=True)
        raise


# ---------------------------------------------------------------- outcomes of runs


def outcome_of_run(item_id: str, run_id: str) -> ItemOutcome:
    """An item's outcome read from its finished run (how `santa batch record`
    and a resumed batch learn what a run decided, without trusting anyone)."""
    state = run_store.load_state(run_id)
    if state.status == "open":
        raise InputError(f"run {run_id} is still open; finish it (ship or escalate) first")
    criteria: list[str] = []
    for gate in state.rounds[0].gates:
        # A problem counts once, under its primary criterion (core/batch_rules.py).
        criteria.extend(issue.criterion for issue in gate.issues)
    status: batch_rules.Status = "escalated"
    if state.status == "shipped":
        status = "fixed" if criteria or len(state.rounds) > 1 else "passed"
    records = (
        [r for r in runlog.read(state.log).records if r.get("run_id") == run_id]
        if Path(state.log).exists()
        else []
    )
    report = None
    if state.status == "escalated":
        candidate = run_store.run_dir(run_id) / "report.md"
        report = str(candidate) if candidate.exists() else None
    return ItemOutcome(
        item=item_id,
        run_id=run_id,
        status=status,
        criteria=tuple(dict.fromkeys(criteria)),
        rounds=len(state.rounds),
        cost_usd=runlog.logged_cost(records, run_id),
        report=report,
    )


# ---------------------------------------------------------------- the book


ESTIMATE_CONFIDENCE = 0.95


class Book:
    """A batch's bookkeeping, the same for `santa batch` and `santa batch
    plan/record`: which items a wave holds, what the rules decide after it,
    and the verdict with its numbers. Who reviews is not its business."""

    def __init__(self, state: BatchState, store: ItemStore) -> None:
        self.state = state
        self.store = store
        self.options = state.options

    @property
    def batch_id(self) -> str:
        return self.state.id

    @property
    def waves(self) -> list[Wave]:
        return self.state.waves

    def save(self) -> None:
        save(self.state)

    def outcomes(self) -> list[ItemOutcome]:
        return [o for w in self.waves for o in w.outcomes.values()]

    def verified_ids(self) -> set[str]:
        return {o.item for o in self.outcomes()}

    def population(self) -> int:
        excluded = set(self.options.exclude)
        return sum(1 for i in self.store.order if i not in excluded)

    def unverified(self) -> list[str]:
        """Items of the batch no wave has verified (the ones a screen covers)."""
        done = self.verified_ids()
        excluded = set(self.options.exclude)
        return [i for i in self.store.order if i not in done and i not in excluded]

    def draw(self) -> Wave:
        """The next wave: a fresh sample that excludes every verified item."""
        from santa_method.core.sampling import make_plan

        o = self.options
        number = len(self.waves) + 1
        strata = None
        if o.stratified:
            strata = {i.id: i.stratum or "(none)" for i in self.state.items}
        try:
            plan = make_plan(
                self.store.order,
                seed=(self.state.seed + number - 1) % 2**31,
                rate=o.rate,
                minimum=o.minimum,
                prevalence=o.prevalence,
                confidence=o.confidence,
                strata=strata,
                exclude=[*o.exclude, *sorted(self.verified_ids())],
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if number == 1 and plan.population == 0:
            raise InputError("every item is excluded; there is nothing to verify")
        wave = Wave(
            number=number,
            drawn=runlog.now_iso(),
            plan=PlanRecord.of(plan),
            items=[str(i) for i in plan.items],
        )
        self.waves.append(wave)
        self.save()
        event(self.batch_id, "wave", number=number, statement=plan.statement())
        return wave

    def current(self) -> Wave | None:
        """The wave still being worked on, if any."""
        if self.waves and self.waves[-1].decision is None:
            return self.waves[-1]
        return None

    def concluded(self) -> batch_rules.Decision | None:
        """The last wave's decision when it ended the batch but the verdict
        was never written (an interruption between the two)."""
        if self.state.status != "open" or not self.waves:
            return None
        decision = self.waves[-1].decision
        if decision is None or decision.step == "resample":
            return None
        return decision

    def decide(self, wave: Wave) -> batch_rules.Decision:
        # A screen's verdict stands until the item is verified by a run of its own.
        verified = self.verified_ids()
        screens = [
            found
            for w in self.waves
            for by_item in w.screens.values()
            for item, found in by_item.items()
            if item not in verified
        ]
        return batch_rules.decide(
            list(wave.outcomes.values()),
            all_outcomes=self.outcomes(),
            screened=wave.screened,
            unscreened=sum(1 for f in screens if f.result == "unusable"),
            unfixed=sum(1 for f in screens if f.result == "flagged" and not f.fixed),
            unverified_left=wave.plan.population - len(wave.items),
            resamples_left=self.options.max_resamples - (len(self.waves) - 1),
            min_items=self.options.systemic_min,
            share=self.options.systemic_share,
            screenable=self.options.criterion_ids,
            screen_fixes=sum(
                1 for by_item in wave.screens.values() for f in by_item.values() if f.fixed
            ),
        )

    def conclude(self, wave: Wave, decision: batch_rules.Decision) -> None:
        wave.decision = decision
        self.save()
        event(self.batch_id, "decision", wave=wave.number, **decision.to_json())

    def audit(self) -> list[str]:
        """Why the batch's recorded verdict does not hold up against its runs
        (a state file edited by hand, say); empty when it does. The runs
        have protections of their own, so a verdict is only as good as them."""
        problems: list[str] = []
        if self.state.status not in ("accepted", "escalated"):
            return problems
        if self.state.verdict != self.state.status.upper():
            problems.append("the verdict and the status disagree")
        for wave in self.waves:
            missing = [i for i in wave.items if i not in wave.outcomes]
            if missing and self.state.status == "accepted":
                problems.append(f"sample {wave.number} has items never verified")
            for item, recorded in wave.outcomes.items():
                if not recorded.run_id:
                    continue
                try:
                    actual = outcome_of_run(item, recorded.run_id)
                except InputError as exc:
                    problems.append(f"item {item}: {exc}")
                    continue
                if actual.status != recorded.status or actual.criteria != recorded.criteria:
                    problems.append(f"item {item}: its run {recorded.run_id} says otherwise")
        if self.state.status == "accepted":
            last = self.waves[-1] if self.waves else None
            if last is None or self.decide(last).step != "accept":
                problems.append("the batch's own rules do not accept its last sample")
        return problems

    def finish(
        self,
        decision: batch_rules.Decision,
        *,
        tokens: dict[str, int] | None,
        warnings: Sequence[str],
    ) -> dict[str, Any]:
        """Close the batch: verdict, estimate, guarantee, cost; write the report."""
        from santa_method.core.estimate import estimate_defect_rate
        from santa_method.state.batch_report import write_batch_report

        if decision.step == "accept":
            excluded = set(self.options.exclude)
            drifted = self.store.drifted([i for i in self.store.order if i not in excluded])
            if drifted:
                decision = batch_rules.Decision(
                    "escalate",
                    reasons=(
                        f"{len(drifted)} item(s) changed since the batch last saw them: "
                        f"{', '.join(drifted[:10])}",
                    ),
                )
        outcomes = self.outcomes()
        verdict = "ACCEPTED" if decision.step == "accept" else "ESCALATED"
        verified = [w for w in self.waves if w.outcomes]
        last = verified[-1] if verified else None

        def estimate(wave: Wave) -> Any:
            found = list(wave.outcomes.values())
            if wave.plan.strata is not None:
                return _Unweighted(sum(1 for o in found if o.failed), len(found))
            return estimate_defect_rate(
                sum(1 for o in found if o.failed),
                len(found),
                wave.plan.population,
                ESTIMATE_CONFIDENCE,
            )

        # The first sample is a random draw from the batch as generated: it
        # estimates the generator's defect rate. The last one, drawn after
        # screens and fixes from the items never verified, estimates what
        # is left.
        first_rate = estimate(verified[0]) if verified else None
        last_rate = estimate(last) if last is not None and len(verified) > 1 else None
        statement = "no item was verified"
        if first_rate is not None:
            statement = "as generated: " + first_rate.statement()
        if last_rate is not None:
            statement += "; after fixes, last sample: " + last_rate.statement()
        if verdict != "ACCEPTED" or last is None:
            guarantee = "none: the batch was not accepted"
        elif not self.unverified():
            guarantee = f"every one of the {self.population()} items was verified"
        else:
            guarantee = _guarantee(verified)
        systemic = sorted({c for w in self.waves for c in w.screens} | set(decision.criteria))
        self.state.status = "accepted" if verdict == "ACCEPTED" else "escalated"
        self.state.verdict = verdict
        self.state.reasons = list(decision.reasons)
        folder = batch_dir(self.batch_id)
        data = {
            "verdict": verdict,
            "batch_id": self.batch_id,
            "population": self.population(),
            "reviewed": len(outcomes),
            "items": [o.to_json() for o in outcomes],
            "waves": [wave_summary(w) for w in self.waves],
            "failures_by_criterion": batch_rules.failures_by_criterion(outcomes),
            "systemic": systemic,
            "estimate": first_rate.to_json() if first_rate is not None else None,
            "estimate_after_fixes": last_rate.to_json() if last_rate is not None else None,
            "estimate_statement": statement,
            "guarantee": guarantee,
            "seed": self.state.seed,
            "cost_usd": self.state.cost_usd,
            "cost_relative_to_all": batch_rules.cost_relative_to_all(
                self.state.cost_usd, outcomes, self.population()
            ),
            "tokens": tokens,
            "changed": dict(self.state.changed),
            "fixed_jsonl": self.store.export(),
            "report": str(folder / "report.md"),
            "reasons": list(decision.reasons),
            "warnings": list(dict.fromkeys(warnings)),
        }
        write_batch_report(folder, data)
        self.save()
        event(self.batch_id, "verdict", verdict=verdict, reasons=list(decision.reasons))
        return data


@dataclass(frozen=True)
class _Unweighted:
    """A stratified sample's failures, without an interval: its items were
    not drawn with equal chances (one per stratum at least), so the interval
    of a simple random sample would not hold."""

    defects: int
    sampled: int

    def statement(self) -> str:
        return (
            f"{self.defects} of {self.sampled} sampled items failed; no interval is given, "
            "as a stratified sample does not draw items with equal chances"
        )

    def to_json(self) -> dict[str, Any]:
        return {"defects": self.defects, "sampled": self.sampled, "interval": None}


def _guarantee(waves: Sequence[Wave]) -> str:
    """The last sample's guarantee, and, when several were drawn, what the
    whole procedure can still promise: the batch accepts when one sample
    comes back clean, so each draw was a chance to miss (a union bound)."""
    import math

    last = waves[-1].plan
    if len(waves) == 1:
        return last.statement
    miss = math.fsum(1 - (w.plan.detection_probability or 0.0) for w in waves)
    overall = math.floor(max(0.0, 1 - miss) * 1000 + 1e-9) / 10
    return (
        f"{last.statement}; over the {len(waves)} samples drawn, a defect in "
        f"{last.prevalence * 100:g} % of the items left is seen with probability at least "
        f"{overall:g} %"
    )


def wave_summary(wave: Wave) -> dict[str, Any]:
    """A wave as the report and `santa batch status` show it."""
    outcomes = list(wave.outcomes.values())
    screens = {
        criterion: {
            kind: sum(1 for s in found.values() if s.result == kind)
            for kind in ("clean", "flagged", "unusable")
        }
        | {"fixed": sum(1 for s in found.values() if s.fixed)}
        for criterion, found in wave.screens.items()
    }
    return {
        "number": wave.number,
        "statement": wave.plan.statement,
        "n": len(wave.items),
        "population": wave.plan.population,
        "verified": len(outcomes),
        "failed": sum(1 for o in outcomes if o.failed),
        "skipped": list(wave.skipped),
        "failures_by_criterion": batch_rules.failures_by_criterion(outcomes),
        "screens": screens,
        "decision": None if wave.decision is None else wave.decision.to_json(),
    }


__all__ = [
    "ESTIMATE_CONFIDENCE",
    "STATE_VERSION",
    "BatchItem",
    "Book",
    "ItemStore",
    "batch_dir",
    "batches_dir",
    "check_readable",
    "create",
    "event",
    "events",
    "find_resumable",
    "fingerprint",
    "first_draw",
    "held",
    "item_text",
    "jsonl_text",
    "list_ids",
    "load",
    "locked",
    "new_batch_id",
    "open_batch",
    "outcome_of_run",
    "save",
    "wave_summary",
]
