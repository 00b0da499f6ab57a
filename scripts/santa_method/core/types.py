"""The typed contracts that pass between the stages of the method.

Every hand-off (a reviewer's reply once validated, a merged flag, a gate's
decision, a rubric) is one of these classes, and each knows its own JSON
form, so the CLI, the log and the backends never invent shapes of their own.

They behave as frozen dataclasses do (keyword or positional construction,
defaults, equality and hashing by field, a repr, no assignment after
construction; `replace` for a changed copy), written out instead: importing
`dataclasses` (and `inspect`, which it imports) costs `santa validate` about
half a bare interpreter's start, and every command loads this module.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, Literal, TypeVar

Result = Literal["PASS", "FAIL"]
Verdict = Literal["NICE", "NAUGHTY"]
Evidence = Literal["verified", "unverified", "none"]
Next = Literal["ship", "rereview", "fix", "escalate", "report"]

UNSPECIFIED = "unspecified"

MIN_REVIEWERS = 2
#: The one sentence for too few reviewers, wherever the number comes from.
TOO_FEW_REVIEWERS = (
    f"a run needs at least {MIN_REVIEWERS} reviewers: one is a second opinion, not a verification"
)

C = TypeVar("C", bound="Contract")


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a contract (dataclasses' error of that name)."""


class Contract:
    """The frozen-dataclass behaviour the contracts share, keyed by `_fields`
    (the constructor's parameters, in order); each subclass's `__init__`
    stores exactly those in its `__dict__`."""

    _fields: ClassVar[tuple[str, ...]] = ()
    #: The fields' values as a tuple (an attrgetter, made once a class).
    _values: ClassVar[Callable[[Any], tuple[Any, ...]]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._values = attrgetter(*cls._fields)  # every contract has two fields or more

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        values = type(self)._values
        return values(self) == values(other)

    def __hash__(self) -> int:
        return hash(type(self)._values(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __replace__(self: C, **changes: Any) -> C:
        return replace(self, **changes)


def replace(obj: C, /, **changes: Any) -> C:
    """A copy of the contract `obj` with `changes` (as `dataclasses.replace`;
    an unknown name is a TypeError)."""
    values = {name: obj.__dict__[name] for name in obj._fields}
    values.update(changes)
    return type(obj)(**values)


class Criterion(Contract):
    """One objective rubric criterion; `pass_` is the condition that must hold."""

    _fields = ("id", "name", "pass_", "fail_signals")
    id: str
    name: str
    pass_: str
    fail_signals: tuple[str, ...]

    def __init__(self, id: str, name: str, pass_: str, fail_signals: tuple[str, ...]) -> None:
        self.__dict__.update(id=id, name=name, pass_=pass_, fail_signals=fail_signals)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "pass": self.pass_,
            "fail_signals": list(self.fail_signals),
        }


class Rubric(Contract):
    """A resolved rubric: `extend`s already flattened, ids unique, order kept."""

    _fields = ("name", "criteria")
    name: str
    criteria: tuple[Criterion, ...]

    def __init__(self, name: str, criteria: tuple[Criterion, ...]) -> None:
        self.__dict__.update(name=name, criteria=criteria)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.criteria)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "criteria": [c.to_json() for c in self.criteria]}


class Check(Contract):
    _fields = ("criterion", "result", "detail")
    criterion: str
    result: Result
    detail: str

    def __init__(self, criterion: str, result: Result, detail: str = "") -> None:
        self.__dict__.update(criterion=criterion, result=result, detail=detail)

    def to_json(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "result": self.result, "detail": self.detail}


class Issue(Contract):
    """A critical issue, normalised from either the object or the seed string form.

    `evidence` is decided by the helper, never taken from the reviewer:
    `verified` when the quote occurs in the output, `unverified` when it does
    not (or no output was given to check it against), `none` when the issue
    carries neither a quote nor a `missing` item. An omission (`missing`) is
    evidence of kind `none` too: there is nothing in the output to check.
    """

    _fields = ("criterion", "issue", "quote", "missing", "location", "evidence")
    criterion: str
    issue: str
    quote: str | None
    missing: str | None
    location: str | None
    evidence: Evidence

    def __init__(
        self,
        criterion: str,
        issue: str,
        quote: str | None = None,
        missing: str | None = None,
        location: str | None = None,
        evidence: Evidence = "none",
    ) -> None:
        self.__dict__.update(
            criterion=criterion,
            issue=issue,
            quote=quote,
            missing=missing,
            location=location,
            evidence=evidence,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"criterion": self.criterion, "issue": self.issue}
        if self.quote is not None:
            out["quote"] = self.quote
        if self.missing is not None:
            out["missing"] = self.missing
        if self.location is not None:
            out["location"] = self.location
        out["evidence"] = self.evidence
        return out


class Review(Contract):
    """A reviewer's reply after parsing and normalisation."""

    _fields = ("verdict", "checks", "critical_issues", "suggestions", "canary")
    verdict: Result
    checks: tuple[Check, ...]
    critical_issues: tuple[Issue, ...]
    suggestions: tuple[str, ...]
    canary: str | None

    def __init__(
        self,
        verdict: Result,
        checks: tuple[Check, ...],
        critical_issues: tuple[Issue, ...],
        suggestions: tuple[str, ...] = (),
        canary: str | None = None,
    ) -> None:
        self.__dict__.update(
            verdict=verdict,
            checks=checks,
            critical_issues=critical_issues,
            suggestions=suggestions,
            canary=canary,
        )

    def failing_criteria(self) -> tuple[str, ...]:
        return tuple(c.criterion for c in self.checks if c.result == "FAIL")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict,
            "checks": [c.to_json() for c in self.checks],
            "critical_issues": [i.to_json() for i in self.critical_issues],
            "suggestions": list(self.suggestions),
        }
        if self.canary is not None:
            out["canary"] = self.canary
        return out


class ValidationResult(Contract):
    """What `santa validate` answers: is this reply a review we may count?

    `review` is present whenever the reply parsed into the schema's shape,
    even if a later rule (consistency, coverage, canary) made it invalid, so
    callers can still show what the reviewer said. Only `valid` counts.
    """

    _fields = ("valid", "errors", "warnings", "review")
    valid: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    review: Review | None

    def __init__(
        self,
        valid: bool,
        errors: tuple[str, ...] = (),
        warnings: tuple[str, ...] = (),
        review: Review | None = None,
    ) -> None:
        self.__dict__.update(valid=valid, errors=errors, warnings=warnings, review=review)

    @property
    def verdict(self) -> Result | None:
        return self.review.verdict if self.review is not None else None

    @property
    def unverified_quotes(self) -> tuple[Issue, ...]:
        if self.review is None:
            return ()
        return tuple(i for i in self.review.critical_issues if i.evidence == "unverified")

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "verdict": self.verdict,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "review": self.review.to_json() if self.review is not None else None,
        }


class Flag(Contract):
    """One reviewer's flag before merging: a critical issue, or a failing
    check that no critical issue of the same review explains."""

    _fields = ("label", "issue", "source")
    label: str
    issue: Issue
    source: Literal["issue", "check"]

    def __init__(
        self, label: str, issue: Issue, source: Literal["issue", "check"] = "issue"
    ) -> None:
        self.__dict__.update(label=label, issue=issue, source=source)


class MergedIssue(Contract):
    """One problem, however many reviewers flagged it under however many criteria.

    `criterion`, `issue`, `quote` and `missing` are the problem's face: its
    primary criterion (the one most of its reviewers named) and one flag
    under it. `criteria` lists every criterion it breaks, primary first;
    `quotes` every distinct quote of its flags, the face's first. `key` is a
    stable identity across rounds (primary criterion plus the normalised
    evidence or wording) so the state layer can tell a recurring flag from a
    new one. `criteria_by` says which criteria each reviewer named for it:
    ((label, (criterion, ...)), ...).
    """

    _fields = (
        "criterion",
        "issue",
        "evidence",
        "flagged_by",
        "quote",
        "missing",
        "location",
        "source",
        "key",
        "criteria",
        "quotes",
        "criteria_by",
    )
    criterion: str
    issue: str
    evidence: Evidence
    flagged_by: tuple[str, ...]
    quote: str | None
    missing: str | None
    location: str | None
    source: Literal["issue", "check"]
    key: str
    criteria: tuple[str, ...]
    quotes: tuple[str, ...]
    criteria_by: tuple[tuple[str, tuple[str, ...]], ...]

    def __init__(
        self,
        criterion: str,
        issue: str,
        evidence: Evidence,
        flagged_by: tuple[str, ...],
        quote: str | None = None,
        missing: str | None = None,
        location: str | None = None,
        source: Literal["issue", "check"] = "issue",
        key: str = "",
        criteria: tuple[str, ...] = (),
        quotes: tuple[str, ...] = (),
        criteria_by: tuple[tuple[str, tuple[str, ...]], ...] = (),
    ) -> None:
        self.__dict__.update(
            criterion=criterion,
            issue=issue,
            evidence=evidence,
            flagged_by=flagged_by,
            quote=quote,
            missing=missing,
            location=location,
            source=source,
            key=key,
            criteria=criteria,
            quotes=quotes,
            criteria_by=criteria_by,
        )

    @property
    def all_criteria(self) -> tuple[str, ...]:
        """Every criterion, primary first (also for a flag built without `criteria`)."""
        return tuple(dict.fromkeys([self.criterion, *self.criteria]))

    @property
    def all_quotes(self) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys([*([self.quote] if self.quote is not None else []), *self.quotes])
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"criterion": self.criterion, "issue": self.issue}
        if self.quote is not None:
            out["quote"] = self.quote
        if self.missing is not None:
            out["missing"] = self.missing
        if self.location is not None:
            out["location"] = self.location
        out["evidence"] = self.evidence
        out["flagged_by"] = list(self.flagged_by)
        out["source"] = self.source
        out["key"] = self.key
        out["criteria"] = list(self.all_criteria)
        out["quotes"] = list(self.all_quotes)
        out["criteria_by"] = {label: list(named) for label, named in self.criteria_by}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MergedIssue:
        """Read a problem back from a gate's JSON (older records lack `criteria`, `quotes`)."""
        return cls(
            criterion=data["criterion"],
            issue=data["issue"],
            evidence=data.get("evidence", "none"),
            flagged_by=tuple(data.get("flagged_by", ())),
            quote=data.get("quote"),
            missing=data.get("missing"),
            location=data.get("location"),
            source=data.get("source", "issue"),
            key=data.get("key", ""),
            criteria=tuple(data.get("criteria") or ()),
            quotes=tuple(data.get("quotes") or ()),
            criteria_by=tuple(
                (str(label), tuple(named))
                for label, named in (data.get("criteria_by") or {}).items()
                if isinstance(named, list)
            ),
        )


class ReviewOutcome(Contract):
    """One reviewer slot as the gate saw it. A missing reply is a slot with
    `valid=False` and an error that says so."""

    _fields = ("label", "valid", "verdict", "errors", "warnings", "review")
    label: str
    valid: bool
    verdict: Result | None
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    review: Review | None

    def __init__(
        self,
        label: str,
        valid: bool,
        verdict: Result | None,
        errors: tuple[str, ...] = (),
        warnings: tuple[str, ...] = (),
        review: Review | None = None,
    ) -> None:
        self.__dict__.update(
            label=label,
            valid=valid,
            verdict=verdict,
            errors=errors,
            warnings=warnings,
            review=review,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "valid": self.valid,
            "verdict": self.verdict,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
        }


class GateResult(Contract):
    """The verdict of one round. NICE only when every expected slot holds a
    valid PASS review; everything else is NAUGHTY, with `next` saying why.
    `extra` is a new empty dict when not given (as a dataclass field's
    `default_factory=dict`); holding a dict, a GateResult is not hashable."""

    _fields = (
        "verdict",
        "next",
        "reviews",
        "issues",
        "suggestions",
        "agreement",
        "reasons",
        "extra",
    )
    verdict: Verdict
    next: Next
    reviews: tuple[ReviewOutcome, ...]
    issues: tuple[MergedIssue, ...]
    suggestions: tuple[str, ...]
    agreement: float | None
    reasons: tuple[str, ...]
    extra: dict[str, Any]

    def __init__(
        self,
        verdict: Verdict,
        next: Next,
        reviews: tuple[ReviewOutcome, ...],
        issues: tuple[MergedIssue, ...],
        suggestions: tuple[str, ...] = (),
        agreement: float | None = None,
        reasons: tuple[str, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.__dict__.update(
            verdict=verdict,
            next=next,
            reviews=reviews,
            issues=issues,
            suggestions=suggestions,
            agreement=agreement,
            reasons=reasons,
            extra={} if extra is None else extra,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict,
            "next": self.next,
            "reviews": [r.to_json() for r in self.reviews],
            "issues": [i.to_json() for i in self.issues],
            "suggestions": list(self.suggestions),
            "agreement": self.agreement,
            "reasons": list(self.reasons),
        }
        out.update(self.extra)
        return out
