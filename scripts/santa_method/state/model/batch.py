"""A batch's state as typed records: its options, items, waves, plans, screens.

`BatchState` is a batch's `state.json` (`state/batch_files.py` loads and
saves it); why typed and why converted key by key: `state/model/__init__.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, cast

from santa_method.core.batch_rules import Decision, ItemOutcome
from santa_method.core.sampling import Plan, Stratum
from santa_method.state.model.reading import (
    StateError,
    bool_,
    get,
    int_,
    is_int,
    is_num,
    obj,
    objects,
    opt_int,
    opt_num,
    opt_str,
    str_,
    strs,
    top,
)

BATCH_STATE_VERSION = 1

ScreenResult = Literal["clean", "flagged", "unusable"]


# ---------------------------------------------------------------- a batch


@dataclass
class HeadlessBatchOptions:
    """The options only `santa batch` (headless) records: it runs the loops itself."""

    max_fixes: int
    reviewers: int
    models: list[str] | None
    backend: str
    max_cost_usd: float | None


@dataclass
class BatchOptionsRecord:
    """What a batch was started with (its fingerprint is made from this JSON)."""

    rate: float | None
    minimum: int | None
    prevalence: float | None
    confidence: float | None
    stratified: bool
    exclude: list[str]
    max_resamples: int
    rubric: dict[str, Any]
    """The rubric's own JSON document (`Rubric.to_json`), kept as written."""
    field: str
    systemic_min: int
    systemic_share: float | None
    in_place: bool
    headless: HeadlessBatchOptions | None = None
    seed: int | None = None
    """The seed the caller gave (headless only; the state's `seed` is the one used)."""

    @property
    def criterion_ids(self) -> set[str]:
        return {str(c["id"]) for c in self.rubric.get("criteria") or []}

    def to_json(self) -> dict[str, Any]:
        h = self.headless
        data: dict[str, Any] = {
            "rate": self.rate,
            "minimum": self.minimum,
            "prevalence": self.prevalence,
            "confidence": self.confidence,
            "stratified": self.stratified,
            "exclude": list(self.exclude),
        }
        if h is not None:
            data["max_fixes"] = h.max_fixes
        data["max_resamples"] = self.max_resamples
        if h is not None:
            data.update(reviewers=h.reviewers, models=h.models)
        data.update(
            rubric=self.rubric,
            field=self.field,
            systemic_min=self.systemic_min,
            systemic_share=self.systemic_share,
        )
        if h is not None:
            data["backend"] = h.backend
        data["in_place"] = self.in_place
        if h is not None:
            data["max_cost_usd"] = h.max_cost_usd
        if self.seed is not None:
            data["seed"] = self.seed
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str = "options") -> BatchOptionsRecord:
        headless = None
        if "backend" in d:
            models = get(
                d,
                "models",
                w,
                lambda v: v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
                "a list of strings or null",
            )
            headless = HeadlessBatchOptions(
                max_fixes=int_(d, "max_fixes", w),
                reviewers=int_(d, "reviewers", w),
                models=list(models) if models is not None else None,
                backend=str_(d, "backend", w),
                max_cost_usd=opt_num(d, "max_cost_usd", w),
            )
        return cls(
            rate=opt_num(d, "rate", w),
            minimum=opt_int(d, "minimum", w),
            prevalence=opt_num(d, "prevalence", w),
            confidence=opt_num(d, "confidence", w),
            stratified=bool_(d, "stratified", w),
            exclude=strs(d, "exclude", w),
            max_resamples=int_(d, "max_resamples", w),
            rubric=obj(d, "rubric", w),
            field=str_(d, "field", w),
            systemic_min=int_(d, "systemic_min", w),
            systemic_share=opt_num(d, "systemic_share", w),
            in_place=bool_(d, "in_place", w),
            headless=headless,
            seed=opt_int(d, "seed", w),
        )


@dataclass
class ItemRecord:
    """An item as the batch knows it: where it is and what it holds now
    (`sha256`; None for an excluded item): a run counts only for this content."""

    id: str
    stratum: str | None
    path: str | None
    sha256: str | None
    record: dict[str, Any] | None = None
    """A JSONL item's whole record, kept by a batch inside Claude Code."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "stratum": self.stratum,
            "path": self.path,
            "sha256": self.sha256,
        }
        if self.record is not None:
            data["record"] = self.record
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> ItemRecord:
        record = get(
            d, "record", w, lambda v: v is None or isinstance(v, dict), "an object or null", None
        )
        return cls(
            id=str_(d, "id", w),
            stratum=opt_str(d, "stratum", w),
            path=opt_str(d, "path", w),
            sha256=opt_str(d, "sha256", w),
            record=record,
        )


@dataclass
class PlanRecord:
    """A wave's sampling plan as drawn (`core/sampling.py`'s `Plan.to_json`),
    its statement kept as it was said when drawn."""

    n: int
    population: int
    detection_probability: float | None
    items: list[str]
    method: str
    seed: int
    strata: list[Stratum] | None
    statement: str
    prevalence: float
    defective: int
    confidence: float | None
    rate: float | None
    minimum: int | None
    excluded: int
    notes: list[str]

    @classmethod
    def of(cls, plan: Plan) -> PlanRecord:
        return cls.from_json(plan.to_json(), "plan")

    def to_json(self) -> dict[str, Any]:
        # The fields are declared in the order `Plan.to_json` writes them.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(
            items=list(self.items),
            strata=None if self.strata is None else [s.to_json() for s in self.strata],
            notes=list(self.notes),
        )
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> PlanRecord:
        strata = get(
            d, "strata", w, lambda v: v is None or isinstance(v, list), "a list or null", None
        )
        try:
            read = (
                None
                if strata is None
                else [
                    Stratum(str(s["name"]), int(s["size"]), float(s["quota"]), int(s["allocated"]))
                    for s in strata
                ]
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            raise StateError(f"{w}.strata holds a stratum without its counts") from None
        return cls(
            n=int_(d, "n", w),
            population=int_(d, "population", w),
            detection_probability=opt_num(d, "detection_probability", w),
            items=[str(i) for i in get(d, "items", w, lambda v: isinstance(v, list), "a list")],
            method=str_(d, "method", w),
            seed=int_(d, "seed", w),
            strata=read,
            statement=str_(d, "statement", w),
            prevalence=cast(float, get(d, "prevalence", w, is_num, "a number")),
            defective=int_(d, "defective", w),
            confidence=opt_num(d, "confidence", w),
            rate=opt_num(d, "rate", w),
            minimum=opt_int(d, "minimum", w),
            excluded=int_(d, "excluded", w, 0),
            notes=strs(d, "notes", w, []),
        )


@dataclass
class ScreenFix:
    """What the fixer did with an item a headless screen flagged."""

    cost_usd: float | None
    flags: int
    notes: str
    path: str | None = None
    """Where the changed text is, when the fixer changed it."""


@dataclass
class ScreenRecord:
    """One screen of one item for one criterion.

    Headless, the batch made the call (`errors` when its answer was unusable,
    `fix` when it flagged the item); inside Claude Code a screen is a run
    (`run_id`), recorded by `santa batch record`.
    """

    result: ScreenResult
    fixed: bool
    cost_usd: float | None
    run_id: str | None = None
    errors: list[str] | None = None
    fix: ScreenFix | None = None

    def to_json(self) -> dict[str, Any]:
        if self.run_id is not None:
            return {
                "run_id": self.run_id,
                "result": self.result,
                "fixed": self.fixed,
                "cost_usd": self.cost_usd,
            }
        data: dict[str, Any] = {
            "cost_usd": self.cost_usd,
            "fixed": self.fixed,
            "result": self.result,
        }
        if self.errors is not None:
            data["errors"] = list(self.errors)
        if self.fix is not None:
            data.update(fix_cost_usd=self.fix.cost_usd, flags=self.fix.flags, notes=self.fix.notes)
            if self.fix.path is not None:
                data["path"] = self.fix.path
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> ScreenRecord:
        result = str_(d, "result", w)
        if result not in ("clean", "flagged", "unusable"):
            raise StateError(f"{w}.result is not clean, flagged or unusable")
        fix = None
        if "flags" in d:
            fix = ScreenFix(
                cost_usd=opt_num(d, "fix_cost_usd", w),
                flags=int_(d, "flags", w),
                notes=str_(d, "notes", w, ""),
                path=opt_str(d, "path", w),
            )
        errors = strs(d, "errors", w, None) if "errors" in d else None
        return cls(
            result=cast(ScreenResult, result),
            fixed=bool_(d, "fixed", w, False),
            cost_usd=opt_num(d, "cost_usd", w),
            run_id=opt_str(d, "run_id", w),
            errors=errors,
            fix=fix,
        )


def _outcome(d: Mapping[str, Any], w: str) -> ItemOutcome:
    status = str_(d, "status", w)
    if status not in ("passed", "fixed", "escalated"):
        raise StateError(f"{w}.status is not passed, fixed or escalated")
    # Every field is checked here, as the other records' are: the rule's own
    # `from_json` trusts its input, and a wrong type must be a StateError.
    str_(d, "item", w)
    strs(d, "criteria", w, [])
    get(d, "rounds", w, lambda v: v is None or is_int(v), "a whole number or null", None)
    opt_num(d, "cost_usd", w)
    for key in ("run_id", "report", "reason"):
        opt_str(d, key, w)
    return ItemOutcome.from_json(d)


def _decision(d: Mapping[str, Any], w: str) -> Decision:
    step = str_(d, "step", w)
    if step not in ("accept", "screen", "resample", "escalate"):
        raise StateError(f"{w}.step is not accept, screen, resample or escalate")
    return Decision(
        cast(Any, step), tuple(strs(d, "criteria", w, [])), tuple(strs(d, "reasons", w, []))
    )


@dataclass
class Wave:
    """One sample of the batch: what it drew, what each item's run decided,
    the screens that followed, and the decision it ended with."""

    number: int
    drawn: str | None
    """When it was drawn (the first release did not say)."""
    plan: PlanRecord
    items: list[str]
    outcomes: dict[str, ItemOutcome] = field(default_factory=dict)
    running: dict[str, str] = field(default_factory=dict)
    """Item -> its run while it is being verified (resumed, never paid twice)."""
    skipped: list[str] = field(default_factory=list)
    screened: bool = False
    screens: dict[str, dict[str, ScreenRecord]] = field(default_factory=dict)
    """Criterion -> item -> its screen."""
    decision: Decision | None = None
    screening: list[str] | None = None
    """Inside Claude Code: the criteria being screened, and since when."""
    screening_since: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "number": self.number,
            **({"drawn": self.drawn} if self.drawn is not None else {}),
            "plan": self.plan.to_json(),
            "items": list(self.items),
            "outcomes": {k: o.to_json() for k, o in self.outcomes.items()},
            "running": dict(self.running),
            "skipped": list(self.skipped),
            "screened": self.screened,
            "screens": {
                c: {i: s.to_json() for i, s in by_item.items()}
                for c, by_item in self.screens.items()
            },
            "decision": None if self.decision is None else self.decision.to_json(),
        }
        if self.screening is not None:
            data["screening"] = list(self.screening)
        if self.screening_since is not None:
            data["screening_since"] = self.screening_since
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> Wave:
        running = obj(d, "running", w, {})
        if not all(isinstance(v, str) for v in running.values()):
            raise StateError(f"{w}.running holds a run id that is not a string")
        decision = get(
            d, "decision", w, lambda v: v is None or isinstance(v, dict), "an object or null", None
        )
        screens = obj(d, "screens", w, {})
        return cls(
            number=int_(d, "number", w),
            drawn=opt_str(d, "drawn", w),
            plan=PlanRecord.from_json(obj(d, "plan", w), f"{w}.plan"),
            items=strs(d, "items", w),
            outcomes=objects(obj(d, "outcomes", w, {}), f"{w}.outcomes", _outcome),
            running=dict(running),
            skipped=strs(d, "skipped", w, []),
            screened=bool_(d, "screened", w, False),
            screens={
                c: objects(by_item, f"{w}.screens[{c!r}]", ScreenRecord.from_json)
                for c, by_item in objects(screens, f"{w}.screens", lambda v, _w: v).items()
            },
            decision=None if decision is None else _decision(decision, f"{w}.decision"),
            screening=strs(d, "screening", w, None) if d.get("screening") is not None else None,
            screening_since=opt_str(d, "screening_since", w),
        )


@dataclass
class ScreenRubric:
    """The narrow rubric a batch inside Claude Code wrote for one criterion."""

    path: str
    hash: str


@dataclass
class BatchState:
    """A batch's `state.json`: everything it decided, saved before it acts on it."""

    id: str
    status: str
    """open, accepted or escalated."""
    mode: str
    """headless (`santa batch`) or claude-code (`santa batch plan/record`)."""
    fingerprint: str
    seed: int
    options: BatchOptionsRecord
    items: list[ItemRecord]
    spec_sha256: str
    waves: list[Wave] = field(default_factory=list)
    cost_usd: float | None = 0.0
    """What the batch spent; None once any part of it is unknown."""
    tokens: dict[str, int] = field(default_factory=dict)
    changed: dict[str, str] = field(default_factory=dict)
    """Item -> the file holding its changed text."""
    version: int = BATCH_STATE_VERSION
    created: str = ""
    rubric_ref: str | None = None
    """Inside Claude Code: the rubric the runs name, its hash, the screens' rubrics."""
    rubric_hash: str | None = None
    screen_rubrics: dict[str, ScreenRubric] | None = None
    verdict: str | None = None
    reasons: list[str] | None = None

    def item(self, item_id: str) -> ItemRecord:
        return next(i for i in self.items if i.id == item_id)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "mode": self.mode,
            "fingerprint": self.fingerprint,
            "seed": self.seed,
            "options": self.options.to_json(),
            "items": [i.to_json() for i in self.items],
            "spec_sha256": self.spec_sha256,
            "waves": [w.to_json() for w in self.waves],
            "cost_usd": self.cost_usd,
            "tokens": dict(self.tokens),
            "changed": dict(self.changed),
            "version": self.version,
            "created": self.created,
        }
        if self.rubric_ref is not None:
            data["rubric_ref"] = self.rubric_ref
        if self.rubric_hash is not None:
            data["rubric_hash"] = self.rubric_hash
        if self.screen_rubrics is not None:
            data["screen_rubrics"] = {
                c: {"path": r.path, "hash": r.hash} for c, r in self.screen_rubrics.items()
            }
        if self.verdict is not None:
            data["verdict"] = self.verdict
        if self.reasons is not None:
            data["reasons"] = self.reasons
        return data

    @classmethod
    def from_json(cls, d: Any) -> BatchState:
        """The state as a file holds it; StateError names what is wrong."""
        w = "state"
        d, version = top(d, BATCH_STATE_VERSION)
        items = get(d, "items", w, lambda v: isinstance(v, list), "a list")
        waves = get(d, "waves", w, lambda v: isinstance(v, list), "a list", [])
        for where, entries in (("items", items), ("waves", waves)):
            for n, entry in enumerate(entries):
                if not isinstance(entry, dict):
                    raise StateError(f"{w}.{where}[{n}] is not an object")
        tokens = obj(d, "tokens", w, {})
        changed = obj(d, "changed", w, {})
        rubrics = get(
            d,
            "screen_rubrics",
            w,
            lambda v: v is None or isinstance(v, dict),
            "an object or null",
            None,
        )
        reasons = get(
            d, "reasons", w, lambda v: v is None or isinstance(v, list), "a list or null", None
        )
        return cls(
            id=str_(d, "id", w),
            status=str_(d, "status", w),
            mode=str_(d, "mode", w, "headless"),
            fingerprint=str_(d, "fingerprint", w, ""),
            seed=int_(d, "seed", w),
            options=BatchOptionsRecord.from_json(obj(d, "options", w), f"{w}.options"),
            items=[ItemRecord.from_json(e, f"{w}.items[{n}]") for n, e in enumerate(items)],
            spec_sha256=str_(d, "spec_sha256", w, ""),
            waves=[Wave.from_json(e, f"{w}.waves[{n}]") for n, e in enumerate(waves)],
            cost_usd=opt_num(d, "cost_usd", w) if "cost_usd" in d else 0.0,
            tokens={str(k): int(v) for k, v in tokens.items() if is_int(v)},
            changed={str(k): str(v) for k, v in changed.items()},
            version=version,
            created=str_(d, "created", w, ""),
            rubric_ref=opt_str(d, "rubric_ref", w),
            rubric_hash=opt_str(d, "rubric_hash", w),
            screen_rubrics=None
            if rubrics is None
            else {
                c: ScreenRubric(
                    str_(r, "path", f"{w}.screen_rubrics[{c!r}]"),
                    str_(r, "hash", f"{w}.screen_rubrics[{c!r}]"),
                )
                for c, r in objects(rubrics, f"{w}.screen_rubrics", lambda r, _w: r).items()
            },
            verdict=opt_str(d, "verdict", w),
            reasons=None if reasons is None else [str(r) for r in reasons],
        )
