"""The typed contracts that pass between the stages of the method.

Every hand-off (a reviewer's reply once validated, a merged flag, a gate's
decision, a rubric) is one of these dataclasses, and each knows its own JSON
form, so the CLI, the log and the backends never invent shapes of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Result = Literal["PASS", "FAIL"]
Verdict = Literal["NICE", "NAUGHTY"]
Evidence = Literal["verified", "unverified", "none"]
Next = Literal["ship", "rereview", "fix", "escalate"]

UNSPECIFIED = "unspecified"

MIN_REVIEWERS = 2
#: The one sentence for too few reviewers, wherever the number comes from.
TOO_FEW_REVIEWERS = (
    f"a run needs at least {MIN_REVIEWERS} reviewers: one is a second opinion, not a verification"
)


@dataclass(frozen=True)
class Criterion:
    """One objective rubric criterion; `pass_` is the condition that must hold."""

    id: str
    name: str
    pass_: str
    fail_signals: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "pass": self.pass_,
            "fail_signals": list(self.fail_signals),
        }


@dataclass(frozen=True)
class Rubric:
    """A resolved rubric: `extend`s already flattened, ids unique, order kept."""

    name: str
    criteria: tuple[Criterion, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.criteria)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "criteria": [c.to_json() for c in self.criteria]}


@dataclass(frozen=True)
class Check:
    criterion: str
    result: Result
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "result": self.result, "detail": self.detail}


@dataclass(frozen=True)
class Issue:
    """A critical issue, normalised from either the object or the seed string form.

    `evidence` is decided by the helper, never taken from the reviewer:
    `verified` when the quote occurs in the output, `unverified` when it does
    not (or no output was given to check it against), `none` when the issue
    carries neither a quote nor a `missing` item. An omission (`missing`) is
    evidence of kind `none` too: there is nothing in the output to check.
    """

    criterion: str
    issue: str
    quote: str | None = None
    missing: str | None = None
    location: str | None = None
    evidence: Evidence = "none"

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


@dataclass(frozen=True)
class Review:
    """A reviewer's reply after parsing and normalisation."""

    verdict: Result
    checks: tuple[Check, ...]
    critical_issues: tuple[Issue, ...]
    suggestions: tuple[str, ...] = ()
    canary: str | None = None

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


@dataclass(frozen=True)
class ValidationResult:
    """What `santa validate` answers: is this reply a review we may count?

    `review` is present whenever the reply parsed into the schema's shape,
    even if a later rule (consistency, coverage, canary) made it invalid, so
    callers can still show what the reviewer said. Only `valid` counts.
    """

    valid: bool
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    review: Review | None = None

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


@dataclass(frozen=True)
class Flag:
    """One reviewer's flag before merging: a critical issue, or a failing
    check that no critical issue of the same review explains."""

    label: str
    issue: Issue
    source: Literal["issue", "check"] = "issue"


@dataclass(frozen=True)
class MergedIssue:
    """One problem, however many reviewers flagged it under however many criteria.

    `criterion`, `issue`, `quote` and `missing` are the problem's face: its
    primary criterion (the one most of its reviewers named) and one flag
    under it. `criteria` lists every criterion it breaks, primary first;
    `quotes` every distinct quote of its flags, the face's first. `key` is a
    stable identity across rounds (primary criterion plus the normalised
    evidence or wording) so the state layer can tell a recurring flag from a
    new one.
    """

    criterion: str
    issue: str
    evidence: Evidence
    flagged_by: tuple[str, ...]
    quote: str | None = None
    missing: str | None = None
    location: str | None = None
    source: Literal["issue", "check"] = "issue"
    key: str = ""
    criteria: tuple[str, ...] = ()
    quotes: tuple[str, ...] = ()
    criteria_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Which criteria each reviewer named for it: ((label, (criterion, ...)), ...)."""

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


@dataclass(frozen=True)
class ReviewOutcome:
    """One reviewer slot as the gate saw it. A missing reply is a slot with
    `valid=False` and an error that says so."""

    label: str
    valid: bool
    verdict: Result | None
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    review: Review | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "valid": self.valid,
            "verdict": self.verdict,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class GateResult:
    """The verdict of one round. NICE only when every expected slot holds a
    valid PASS review; everything else is NAUGHTY, with `next` saying why."""

    verdict: Verdict
    next: Next
    reviews: tuple[ReviewOutcome, ...]
    issues: tuple[MergedIssue, ...]
    suggestions: tuple[str, ...] = ()
    agreement: float | None = None
    reasons: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

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
