"""A batch's state as typed records: its options, items, waves, plans, screens.

`BatchState` is a batch's `state.json` (`state/batch_files.py` loads and
saves it). The fields are declared in the order the files hold their keys,
and `reading.py` converts them (how a field's declaration says when its key
is written: see there).
Their annotations are evaluated at import (no `from __future__ import
annotations`): kept as strings, they would be compiled again by every hook
process on its first load.
"""

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Self, TypedDict

from santa_method.core.batch_rules import Decision, ItemOutcome, Status
from santa_method.core.sampling import Plan, Stratum
from santa_method.state.model.reading import Record, Refusal, along, inline, kept

BATCH_STATE_VERSION = 1

ScreenResult = Literal["clean", "flagged", "unusable"]
Strata = Annotated[list[Stratum], Refusal("holds a stratum without its counts")]


@dataclass(kw_only=True)
class BatchOptionsRecord(Record):
    """What a batch was started with (its fingerprint is made from this JSON).
    `santa batch` (headless) runs the loops itself, and records how
    (`backend` and the keys written along with it)."""

    rate: float | None = kept(None)
    minimum: int | None = kept(None)
    prevalence: float | None = kept(None)
    confidence: float | None = kept(None)
    stratified: bool
    exclude: list[str]
    max_fixes: int | None = along("backend")
    max_resamples: int
    reviewers: int | None = along("backend")
    models: list[str] | None = along("backend")
    rubric: dict[str, Any]
    """The rubric's own JSON document (`Rubric.to_json`), kept as written."""
    field: str
    systemic_min: int
    systemic_share: float | None = kept(None)
    backend: str | None = None
    in_place: bool
    max_cost_usd: float | None = along("backend")
    seed: int | None = None
    """The seed the caller gave (headless only; the state's `seed` is the one used)."""

    @property
    def criterion_ids(self) -> set[str]:
        return {str(c["id"]) for c in self.rubric.get("criteria") or []}


@dataclass
class ItemRecord(Record):
    """An item as the batch knows it: where it is and what it holds now
    (`sha256`; None for an excluded item): a run counts only for this content."""

    id: str
    stratum: str | None = kept(None)
    path: str | None = kept(None)
    sha256: str | None = kept(None)
    record: dict[str, Any] | None = None
    """A JSONL item's whole record, kept by a batch inside Claude Code."""


@dataclass(kw_only=True)
class PlanRecord(Record):
    """A wave's sampling plan as drawn (`core/sampling.py`'s `Plan.to_json`),
    its statement kept as it was said when drawn."""

    n: int
    population: int
    detection_probability: float | None = kept(None)
    items: list[str]
    method: str
    seed: int
    strata: Strata | None = kept(None)
    statement: str
    prevalence: float
    defective: int
    confidence: float | None = kept(None)
    rate: float | None = kept(None)
    minimum: int | None = kept(None)
    excluded: int = kept(0)
    notes: list[str] = kept(list)

    @classmethod
    def of(cls, plan: Plan) -> Self:
        return cls.from_json(plan.to_json(), "plan")


@dataclass(kw_only=True)
class ScreenFix(Record):
    """What the fixer did with an item a headless screen flagged."""

    cost_usd: float | None = kept(None, key="fix_cost_usd")
    flags: int
    notes: str = kept("")
    path: str | None = None
    """Where the changed text is, when the fixer changed it."""


@dataclass(kw_only=True)
class ScreenRecord(Record):
    """One screen of one item for one criterion.

    Headless, the batch made the call (`errors` when its answer was unusable,
    `fix` when it flagged the item); inside Claude Code a screen is a run
    (`run_id`), recorded by `santa batch record`, which writes it in its own order.
    """

    _layouts: ClassVar[dict[str, tuple[str, ...]]] = {
        "run_id": ("run_id", "result", "fixed", "cost_usd")
    }

    cost_usd: float | None = kept(None)
    fixed: bool = kept(False)
    result: ScreenResult
    errors: list[str] | None = None
    fix: ScreenFix | None = inline()
    run_id: str | None = None


class _OutcomeKeys(TypedDict):
    item: str
    status: Status


class OutcomeJSON(_OutcomeKeys, total=False):
    """An item's outcome as a wave holds it (`ItemOutcome.to_json`)."""

    run_id: str | None
    failed: bool
    criteria: list[str]
    rounds: int | None
    cost_usd: float | None
    report: str | None
    reason: str | None


@dataclass(kw_only=True)
class Wave(Record):
    """One sample of the batch: what it drew, what each item's run decided,
    the screens that followed, and the decision it ended with."""

    number: int
    drawn: str | None = None
    """When it was drawn (the first release did not say)."""
    plan: PlanRecord
    items: list[str]
    outcomes: dict[str, Annotated[ItemOutcome, OutcomeJSON]] = kept(dict)
    running: dict[str, str] = kept(dict)
    """Item -> its run while it is being verified (resumed, never paid twice)."""
    skipped: list[str] = kept(list)
    screened: bool = kept(False)
    screens: dict[str, dict[str, ScreenRecord]] = kept(dict)
    """Criterion -> item -> its screen."""
    decision: Decision | None = kept(None)
    screening: list[str] | None = None
    """Inside Claude Code: the criteria being screened, and since when."""
    screening_since: str | None = None


@dataclass
class ScreenRubric(Record):
    """The narrow rubric a batch inside Claude Code wrote for one criterion."""

    path: str
    hash: str


@dataclass(kw_only=True)
class BatchState(Record):
    """A batch's `state.json`: everything it decided, saved before it acts on it."""

    id: str
    status: str
    """open, accepted or escalated."""
    mode: str = kept("headless")
    """headless (`santa batch`) or claude-code (`santa batch plan/record`)."""
    fingerprint: str = kept("")
    seed: int
    options: BatchOptionsRecord
    items: list[ItemRecord]
    spec_sha256: str = kept("")
    waves: list[Wave] = kept(list)
    cost_usd: float | None = kept(0.0)
    """What the batch spent; None once any part of it is unknown."""
    tokens: dict[str, int] = kept(dict)
    changed: dict[str, str] = kept(dict)
    """Item -> the file holding its changed text."""
    version: int = kept(BATCH_STATE_VERSION)
    created: str = kept("")
    rubric_ref: str | None = None
    """Inside Claude Code: the rubric the runs name, its hash, the screens' rubrics."""
    rubric_hash: str | None = None
    screen_rubrics: dict[str, ScreenRubric] | None = None
    verdict: str | None = None
    reasons: list[str] | None = None

    def item(self, item_id: str) -> ItemRecord:
        return next(i for i in self.items if i.id == item_id)
