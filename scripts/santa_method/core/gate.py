"""The verdict gate: NICE only when every expected reviewer passed.

Fail-closed by construction: the verdict starts NAUGHTY and becomes NICE
only if at least `min_reviewers` slots exist and each holds a valid PASS.
A missing reply is a slot with no result, never a skipped one. `next` here
is what the round alone can say (ship, rereview, fix); escalation needs the
run's history and is decided by the state layer on top of this result.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from santa_method.core.errors import InputError
from santa_method.core.merge import flags_of, merge_flags, merge_suggestions
from santa_method.core.review import validate_reply
from santa_method.core.types import (
    MIN_REVIEWERS,
    GateResult,
    Next,
    ReviewOutcome,
    Rubric,
    ValidationResult,
)

__all__ = [
    "EMPTY_OUTPUT",
    "MIN_REVIEWERS",
    "default_labels",
    "gate",
    "gate_replies",
    "require_output",
]

#: What every face says of an output that holds nothing but whitespace.
EMPTY_OUTPUT = "the output under review is empty; there is nothing to verify"


def require_output(output: str) -> None:
    """An empty output cannot be reviewed: a PASS of nothing says nothing
    about anything, so the gate and a run's opening refuse it alike, as bad
    input (exit 2)."""
    if not output.strip():
        raise InputError(EMPTY_OUTPUT)


def default_labels(n: int) -> list[str]:
    """B, C, D, ... (A is the author), then R27, R28, ... past Z."""
    letters = string.ascii_uppercase[1:]
    return [letters[i] if i < len(letters) else f"R{i + 2}" for i in range(n)]


def all_passed(
    replies: Sequence[tuple[bool, str | None]], expected: int, minimum: int = MIN_REVIEWERS
) -> bool:
    """The one rule of a NICE round, for the gate and for every later check
    of it (the state's ship, its own sanity check): exactly `expected`
    replies, at least `minimum`, each (valid, verdict) a valid PASS."""
    return (
        expected >= minimum
        and len(replies) == expected
        and all(valid and verdict == "PASS" for valid, verdict in replies)
    )


def _outcome(label: str, result: ValidationResult | None) -> ReviewOutcome:
    if result is None:
        return ReviewOutcome(label, False, None, (f"no reply from reviewer {label}",))
    return ReviewOutcome(
        label, result.valid, result.verdict, result.errors, result.warnings, result.review
    )


def gate(
    results: Sequence[ValidationResult | None],
    labels: Sequence[str] | None = None,
    *,
    output: str | None = None,
    expected: int | None = None,
    min_reviewers: int = MIN_REVIEWERS,
) -> GateResult:
    """Gate one round. `results[i]` is reviewer i's validated reply, or None
    when that reviewer sent nothing; `expected` pads missing slots. An empty
    `output` is refused (`require_output`); None means quotes go unchecked."""
    if output is not None:
        require_output(output)
    slots = max(len(results), expected or 0, min_reviewers)
    labels = list(labels) if labels is not None else []
    if len(labels) > slots or len(set(labels)) != len(labels):
        raise ValueError("labels must be distinct and no more than the reviewer slots")
    fill = [x for x in default_labels(slots + len(labels)) if x not in labels]
    labels += fill[: slots - len(labels)]
    padded = list(results) + [None] * (slots - len(results))
    outcomes = tuple(_outcome(label, r) for label, r in zip(labels, padded, strict=True))

    valid = [o for o in outcomes if o.valid and o.review is not None]
    flags = [flag for o in valid for flag in flags_of(o.label, o.review)]  # type: ignore[arg-type]
    issues = tuple(merge_flags(flags, output))
    suggestions = tuple(merge_suggestions([o.review.suggestions for o in valid]))  # type: ignore[union-attr]

    # The share of problems that two or more reviewers raised independently.
    agreement = None
    if issues and len(valid) >= 2:
        agreement = sum(1 for i in issues if len(set(i.flagged_by)) >= 2) / len(issues)

    reasons = []
    for o in outcomes:
        if not o.valid:
            reasons.append(f"reviewer {o.label}'s reply is not a valid review")
        elif o.verdict == "FAIL":
            reasons.append(f"reviewer {o.label} failed the output")
    replies = [(o.valid and o.review is not None, o.verdict) for o in outcomes]
    if all_passed(replies, slots, min_reviewers):
        return GateResult("NICE", "ship", outcomes, (), suggestions, agreement, ())
    # Nothing to fix when every valid reviewer passed: the round failed only
    # because a reply was invalid or missing.
    next_step: Next = "fix" if issues else "rereview"
    return GateResult(
        "NAUGHTY", next_step, outcomes, issues, suggestions, agreement, tuple(reasons)
    )


def gate_replies(
    replies: Sequence[str | None],
    labels: Sequence[str] | None = None,
    *,
    rubric: Rubric | None = None,
    output: str | None = None,
    canary: str | None = None,
    expected: int | None = None,
) -> GateResult:
    """Validate raw replies and gate them: the whole of `santa gate` on files."""
    results = [
        None
        if reply is None
        else validate_reply(reply, rubric=rubric, output=output, canary=canary)
        for reply in replies
    ]
    return gate(results, labels, output=output, expected=expected)
