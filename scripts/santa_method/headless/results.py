"""What `verify` and `verify_batch` answer: a run's result, its gates and
its reviewers; a batch's result.

Why a module of its own: these are the public answer of the Python API
(`santa_method.headless.api` re-exports them), written once the run is
over; the loop fills them, callers and `santa run --json` read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from santa_method.core import batch_rules
from santa_method.headless.backends.base import Tokens


@dataclass(frozen=True)
class ReviewerRecord:
    """One reviewer slot's part of a gate: who answered it (`backend`,
    `model`), what it said and what it cost."""

    label: str
    model: str | None
    valid: bool
    verdict: str | None
    asks: int
    errors: tuple[str, ...]
    tokens: Tokens
    cost_usd: float | None
    duration_s: float | None = None
    """Seconds the backend took to answer, over every ask."""
    backend: str | None = None

    @property
    def family(self) -> str:
        """The family of the model that answered (`core/reviewers.py`)."""
        from santa_method.core.reviewers import model_family

        return model_family(self.backend, self.model)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "backend": self.backend,
            "model": self.model,
            "family": self.family,
            "valid": self.valid,
            "verdict": self.verdict,
            "asks": self.asks,
            "errors": list(self.errors),
            "tokens": self.tokens.to_json(),
            "cost_usd": self.cost_usd,
            "duration_s": self.duration_s,
        }


@dataclass(frozen=True)
class RoundRecord:
    """One gate of the run (a re-review of the same round is a new record)."""

    round: int
    verdict: str
    next: str
    issues: tuple[dict[str, Any], ...]
    reviewers: tuple[ReviewerRecord, ...]
    reasons: tuple[str, ...] = ()
    fix: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "verdict": self.verdict,
            "next": self.next,
            "issues": list(self.issues),
            "reviewers": [r.to_json() for r in self.reviewers],
            "reasons": list(self.reasons),
            "fix": self.fix,
        }


@dataclass
class VerifyResult:
    """What `verify` answers. `verdict` is NICE only after a NICE gate was
    logged as shipped; NAUGHTY is a check-only run (`max_fixes` 0) that found
    problems (`outcome` reported); ESCALATED is a run a person takes over."""

    verdict: Literal["NICE", "NAUGHTY", "ESCALATED"]
    run_id: str
    rounds: int
    history: list[RoundRecord]
    output: str
    output_path: str
    report: str | None
    tokens: Tokens
    cost_usd: float | None
    backend: str
    warnings: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    target: str = ""
    """What was verified: the file the caller named, or `diff:REV` for a change."""
    questions: list[dict[str, Any]] = field(default_factory=list)
    """What the fixer asked a person (reason `needs-input`): n, key, criterion, question."""
    replayed: str | None = None
    """The recording a replayed run was answered from (no model was called)."""

    @property
    def outcome(self) -> Literal["shipped", "reported", "escalated"]:
        """How the run ended, as the log, metrics and reports name it."""
        outcomes = {"NICE": "shipped", "NAUGHTY": "reported", "ESCALATED": "escalated"}
        return outcomes[self.verdict]  # type: ignore[return-value]

    @property
    def issues(self) -> list[dict[str, Any]]:
        """The problems (merged flags) of the last gate (empty when NICE)."""
        return list(self.history[-1].issues) if self.history else []

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "outcome": self.outcome,
            "run_id": self.run_id,
            "rounds": self.rounds,
            "issues": self.issues,
            "history": [r.to_json() for r in self.history],
            "output_path": self.output_path,
            "report": self.report,
            "tokens": self.tokens.to_json(),
            "cost_usd": self.cost_usd,
            "backend": self.backend,
            "warnings": self.warnings,
            "reasons": self.reasons,
            "target": self.target,
            "questions": self.questions,
            "replayed": self.replayed,
        }


@dataclass(frozen=True)
class BatchResult:
    """What `verify_batch` answers; `data` is the report's JSON (`to_json()`).

    ACCEPTED only when the rules of core/batch_rules.py say so: the last sample
    passed (or every item was verified), every verified item shipped, and
    every screen gave a usable answer.
    """

    data: dict[str, Any]

    @property
    def verdict(self) -> Literal["ACCEPTED", "ESCALATED"]:
        return self.data["verdict"]

    @property
    def batch_id(self) -> str:
        return str(self.data["batch_id"])

    @property
    def report(self) -> str:
        return str(self.data["report"])

    @property
    def outcomes(self) -> list[batch_rules.ItemOutcome]:
        return [batch_rules.ItemOutcome.from_json(o) for o in self.data["items"]]

    @property
    def cost_usd(self) -> float | None:
        return self.data["cost_usd"]

    def to_json(self) -> dict[str, Any]:
        return self.data
