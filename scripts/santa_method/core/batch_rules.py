"""The rules of a batch (Pattern C), as pure functions over item outcomes.

Why a module of its own: `santa batch` (headless) and `santa batch
plan/record` (inside Claude Code, reviewers as subagents) must classify
failures, find systemic patterns and decide the next step identically; only
who reviews differs. Nothing here does I/O.

The rules, in order:
- An item *failed* when the gate of its first round flagged it: the item as
  generated had a defect, whatever its loop fixed later. Its criteria are
  the primary criteria of those problems: one defect that reviewers filed
  under four criteria fails one criterion, the one most of them named, so
  it cannot make four patterns out of one mistake.
- A criterion that failed in at least `min_items` sampled items of a wave
  (2 by default), or in at least `share` of them when set, is a *systemic
  pattern*: the generator makes that mistake, so unsampled items likely
  carry it too. Every item not yet verified is then screened for that
  criterion, and the fixer changes the items the screen flags.
- A wave *passes* when none of its items failed. The batch is ACCEPTED when
  its last wave passed (or no unverified item is left), every verified item
  shipped, every screen came back usable and every item it flagged was
  changed by the fixer. Accepting after a clean wave is what the plan's
  guarantee speaks about: a defect that common would have shown in that
  sample.
- A wave that failed is followed by a fresh one (excluding verified items,
  up to the re-sample cap) only after its systemic patterns were screened
  and fixed: the batch changed, so a new sample tests the new batch.
  Failures in no pattern change nothing, and drawing again until a sample
  comes back clean would make the guarantee a lie; the batch is ESCALATED.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["passed", "fixed", "escalated"]
Step = Literal["accept", "screen", "resample", "escalate"]
DEFAULT_MIN_ITEMS = 2


@dataclass(frozen=True)
class ItemOutcome:
    """One verified item: how its first round went and how its loop ended."""

    item: str
    run_id: str | None
    status: Status
    criteria: tuple[str, ...] = ()
    """Criteria flagged at the item's first round (empty: it passed as generated)."""
    rounds: int = 0
    cost_usd: float | None = None
    report: str | None = None
    reason: str | None = None
    """Why an item could not be verified at all (e.g. it is empty)."""

    @property
    def failed(self) -> bool:
        return bool(self.criteria) or (self.status == "escalated" and self.rounds <= 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "run_id": self.run_id,
            "status": self.status,
            "failed": self.failed,
            "criteria": list(self.criteria),
            "rounds": self.rounds,
            "cost_usd": self.cost_usd,
            "report": self.report,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ItemOutcome:
        return cls(
            item=str(data["item"]),
            run_id=data.get("run_id"),
            status=data["status"],
            criteria=tuple(data.get("criteria") or ()),
            rounds=int(data.get("rounds") or 0),
            cost_usd=data.get("cost_usd"),
            report=data.get("report"),
            reason=data.get("reason"),
        )


def failures_by_criterion(outcomes: Iterable[ItemOutcome]) -> dict[str, list[str]]:
    """Criterion -> the items whose first round it failed, in first-seen order."""
    found: dict[str, list[str]] = {}
    for outcome in outcomes:
        for criterion in dict.fromkeys(outcome.criteria):
            found.setdefault(criterion, []).append(outcome.item)
    return found


def systemic_criteria(
    outcomes: Sequence[ItemOutcome],
    *,
    min_items: int = DEFAULT_MIN_ITEMS,
    share: float | None = None,
) -> list[str]:
    """Criteria failing in at least `min_items` items, or in `share` of the wave.

    The share threshold is rounded up and never below 2 items: one failing
    item is an isolated defect whatever the wave's size.
    """
    threshold = min_items
    if share is not None and outcomes:
        threshold = min(threshold, max(2, math.ceil(share * len(outcomes))))
    return [c for c, items in failures_by_criterion(outcomes).items() if len(items) >= threshold]


@dataclass(frozen=True)
class Decision:
    """What the batch does next, and why (the reasons end up in the report)."""

    step: Step
    criteria: tuple[str, ...] = ()
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "criteria": list(self.criteria), "reasons": list(self.reasons)}


def decide(
    wave: Sequence[ItemOutcome],
    *,
    all_outcomes: Sequence[ItemOutcome],
    screened: bool,
    unscreened: int,
    unverified_left: int,
    unfixed: int = 0,
    screen_fixes: int = 0,
    resamples_left: int,
    min_items: int = DEFAULT_MIN_ITEMS,
    share: float | None = None,
    screenable: Collection[str] | None = None,
) -> Decision:
    """The next step after a wave was verified (and screened, if `screened`).

    `all_outcomes` holds every verified item of every wave; `unscreened`
    counts items whose screen gave no usable answer, `unfixed` items a
    screen flagged that the fixer did not change; `unverified_left` the
    items no wave has drawn yet; `screenable` the rubric's criteria (a flag
    under `unspecified` names none a screen could check); `screen_fixes`
    the items this wave's screens had fixed.
    """
    failed = [o for o in wave if o.failed]
    unshipped = [o.item for o in all_outcomes if o.status == "escalated"]
    if unshipped:
        # A person must look at those items whatever else happens: stop
        # before paying for screens and samples that cannot change that.
        return Decision(
            "escalate",
            reasons=(
                f"{len(unshipped)} verified item(s) did not ship: {', '.join(unshipped[:10])}",
            ),
        )
    if not failed or unverified_left == 0:
        reasons = []
        if unscreened:
            reasons.append(f"{unscreened} item(s) could not be screened")
        if unfixed:
            reasons.append(f"{unfixed} item(s) flagged by a screen were not fixed")
        if reasons:
            return Decision("escalate", reasons=tuple(reasons))
        why = (
            "the last sample passed" if not failed else "every item of the batch has been verified"
        )
        return Decision("accept", reasons=(why,))
    patterns = [
        c
        for c in systemic_criteria(wave, min_items=min_items, share=share)
        if screenable is None or c in screenable
    ]
    if patterns and not screened:
        return Decision(
            "screen",
            criteria=tuple(patterns),
            reasons=(f"systemic pattern(s): {', '.join(patterns)}",),
        )
    if not screened:
        # Nothing was changed in the batch, so a fresh sample would only retry
        # the draw until one comes back clean, and its guarantee would overstate.
        return Decision(
            "escalate",
            reasons=(
                f"{len(failed)} of {len(wave)} sampled items failed, in no systemic pattern "
                "the batch could screen and fix; a fresh sample would only retry the draw",
            ),
        )
    if screen_fixes == 0:
        return Decision(
            "escalate",
            criteria=tuple(patterns),
            reasons=(
                f"{len(failed)} of {len(wave)} sampled items failed and the screens changed "
                "no item; a fresh sample would only retry the draw",
            ),
        )
    if resamples_left <= 0:
        return Decision(
            "escalate",
            criteria=tuple(patterns),
            reasons=(
                f"{len(failed)} of {len(wave)} items of the last sample failed and no "
                "re-sample is left (--max-resamples)",
            ),
        )
    return Decision(
        "resample",
        criteria=tuple(patterns),
        reasons=(f"{len(failed)} of {len(wave)} sampled items failed; drawing a fresh sample",),
    )


def cost_relative_to_all(
    spent: float | None, verified: Sequence[ItemOutcome], population: int
) -> float | None:
    """Money spent as a share of verifying every item the way the sample was.

    The cost of verifying all is estimated as the mean cost of a verified
    item times the batch size; None when any cost is unknown.
    """
    costs = [o.cost_usd for o in verified]
    if spent is None or not costs or any(c is None for c in costs) or population == 0:
        return None
    mean = sum(c for c in costs if c is not None) / len(costs)
    if mean <= 0:
        return None
    return spent / (mean * population)
