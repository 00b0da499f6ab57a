"""Validate one reviewer reply: is it a review the gate may count?

A reply is valid only if it parses (extract), has the schema's shape
(schema), is consistent with itself (every failing check named by a
critical issue, unless its issues are the seed's plain strings), covers the
rubric, echoes the round's canary, and names real criteria. Evidence is judged here too, but an
unverified quote does not invalidate a review: the flag keeps blocking and is
marked so the fixer checks it first (ARCHITECTURE.md, "Evidence").

Error messages are written to be handed back to the reviewer verbatim, so
they never reveal the expected canary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from santa_method.core.ambiguity import disagreement
from santa_method.core.extract import extract_verdict_object
from santa_method.core.schema import shape_errors, tolerant_schema
from santa_method.core.text import quote_occurs
from santa_method.core.types import (
    UNSPECIFIED,
    Check,
    Evidence,
    Issue,
    Result,
    Review,
    Rubric,
    ValidationResult,
)

#: Said when no output was given to look quotes up in (validate and gate alike).
UNCHECKED_QUOTES = "quotes were not checked: no output was given (--against)"

_TOP_FIELDS = frozenset(tolerant_schema()["properties"])
_CHECK_FIELDS = frozenset(tolerant_schema()["$defs"]["check"]["properties"])
_ISSUE_FIELDS = frozenset(tolerant_schema()["$defs"]["issue"]["properties"])


def _text(value: Any) -> str | None:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _unknown_fields(obj: Mapping[str, Any], known: frozenset[str], where: str) -> list[str]:
    return [f"{where}.{name}: unknown field ignored" for name in obj if name not in known]


def _evidence(quote: str | None, missing: str | None, output: str | None) -> Evidence:
    if quote is not None:
        return "verified" if output is not None and quote_occurs(quote, output) else "unverified"
    return "none"


def _normalise(obj: Mapping[str, Any], output: str | None) -> tuple[Review, list[str]]:
    warnings: list[str] = []
    warnings += _unknown_fields(obj, _TOP_FIELDS, "$")
    checks = []
    for i, raw in enumerate(obj["checks"]):
        warnings += _unknown_fields(raw, _CHECK_FIELDS, f"$.checks[{i}]")
        checks.append(
            Check(raw["criterion"].strip(), raw["result"], _text(raw.get("detail")) or "")
        )
    failing = [c.criterion for c in checks if c.result == "FAIL"]
    # A string issue, or an issue without a criterion, belongs to the review's
    # only failing check when there is exactly one; otherwise we cannot know.
    default_criterion = failing[0] if len(set(failing)) == 1 else UNSPECIFIED
    issues = []
    for i, raw in enumerate(obj["critical_issues"]):
        if isinstance(raw, str):
            issues.append(Issue(default_criterion, raw.strip()))
            continue
        warnings += _unknown_fields(raw, _ISSUE_FIELDS, f"$.critical_issues[{i}]")
        quote, missing = _text(raw.get("quote")), _text(raw.get("missing"))
        issues.append(
            Issue(
                criterion=_text(raw.get("criterion")) or default_criterion,
                issue=raw["issue"].strip(),
                quote=quote,
                missing=missing,
                location=_text(raw.get("location")),
                evidence=_evidence(quote, missing, output),
            )
        )
    suggestions = tuple(s.strip() for s in obj.get("suggestions", []) if s.strip())
    canary = obj.get("canary")
    review = Review(obj["verdict"], tuple(checks), tuple(issues), suggestions, canary)
    return review, warnings


def _consistency(review: Review) -> list[str]:
    errors = []
    results: dict[str, tuple[int, Result]] = {}
    for i, check in enumerate(review.checks):
        results.setdefault(check.criterion, (i, check.result))
    if review.verdict == "PASS":
        for i, check in enumerate(review.checks):
            if check.result == "FAIL":
                errors.append(
                    f"$.verdict is PASS but $.checks[{i}] ({check.criterion}) is FAIL; "
                    "a PASS needs every check to pass"
                )
        if review.critical_issues:
            errors.append(
                f"$.verdict is PASS but $.critical_issues lists {len(review.critical_issues)} "
                "issue(s); a PASS has no critical issues (use suggestions for non-blocking notes)"
            )
    elif not review.failing_criteria() and not review.critical_issues:
        errors.append(
            "$.verdict is FAIL but no check fails and no critical issue is listed; "
            "cite the failing criterion and the issue"
        )
    for i, issue in enumerate(review.critical_issues):
        seen = results.get(issue.criterion)
        if seen is not None and seen[1] == "PASS":
            errors.append(
                f"$.critical_issues[{i}] cites {issue.criterion} but $.checks[{seen[0]}] "
                f"says {issue.criterion} PASS; make the check FAIL or withdraw the issue"
            )
    return errors


def _unexplained_checks(review: Review) -> list[str]:
    """A failing check must be named by a critical issue: the gate never makes
    up a flag from a check's detail, which carries no evidence to fix by."""
    named = {issue.criterion for issue in review.critical_issues}
    return [
        f"$.checks[{i}]: check {check.criterion} failed, but no issue with evidence names it; "
        f"add a critical issue for {check.criterion} with a quote from the output (or what is "
        "missing), or make the check PASS"
        for i, check in enumerate(review.checks)
        if check.result == "FAIL" and check.criterion not in named
    ]


def _seed_form(obj: Mapping[str, Any]) -> bool:
    """A reply in the seed's form: issues as plain strings (or objects) naming
    no criterion, so a failing check is the only clue to what they break."""
    return any(
        isinstance(raw, str) or not str(raw.get("criterion") or "").strip()
        for raw in obj["critical_issues"]
    )


def _coverage(review: Review, rubric: Rubric | None) -> list[str]:
    errors = []
    if not review.checks and review.verdict == "PASS":
        errors.append("$.checks: empty; a PASS must evaluate every criterion, one check each")
    for i, check in enumerate(review.checks):
        if not check.criterion:
            errors.append(f"$.checks[{i}].criterion: blank; name the criterion")
    for i, issue in enumerate(review.critical_issues):
        if not issue.issue:
            errors.append(f"$.critical_issues[{i}]: blank; say what the problem is")
    counts = Counter(c.criterion for c in review.checks)
    for criterion, n in counts.items():
        if n > 1:
            errors.append(
                f"$.checks: criterion {criterion} appears {n} times; give it exactly once"
            )
    if rubric is None:
        return errors
    known = set(rubric.ids)
    for i, check in enumerate(review.checks):
        if check.criterion not in known:
            errors.append(
                f"$.checks[{i}].criterion: unknown criterion {check.criterion!r}; "
                f"the rubric's criteria are {', '.join(rubric.ids)}"
            )
    absent = [cid for cid in rubric.ids if cid not in counts]
    if absent:
        errors.append(
            f"$.checks: no result for {', '.join(absent)}; give one check per rubric criterion"
        )
    for i, issue in enumerate(review.critical_issues):
        if issue.criterion != UNSPECIFIED and issue.criterion not in known:
            errors.append(
                f"$.critical_issues[{i}].criterion: unknown criterion {issue.criterion!r}; "
                f"use one of {', '.join(rubric.ids)}"
            )
    return errors


def _canary(review: Review, canary: str | None) -> list[str]:
    if canary is None:
        return []
    if not review.canary:
        return [
            "$.canary: missing; the assignment's last line is 'santa-canary: TOKEN'. "
            'Read the assignment to its end and copy that token into "canary"'
        ]
    if review.canary.strip() != canary:
        return [
            "$.canary: does not match the token on the assignment's last line; "
            "read the assignment to its end and copy the token exactly"
        ]
    return []


def unverified_quote_messages(review: Review) -> list[str]:
    """What to hand back to a reviewer whose quotes were not found in the output."""
    return [
        f"$.critical_issues[{i}].quote is not in the output under review: {issue.quote!r}. "
        "Quote the output exactly (copy the text), or withdraw the issue"
        for i, issue in enumerate(review.critical_issues)
        if issue.evidence == "unverified"
    ]


def validate_object(
    obj: Any,
    *,
    rubric: Rubric | None = None,
    output: str | None = None,
    canary: str | None = None,
) -> ValidationResult:
    """Validate an already-parsed reply (e.g. from a structured-output API):
    a review that states a second verdict in its own words is ambiguous here
    too, as in a raw reply (`core/ambiguity.py`)."""
    if isinstance(obj, dict):
        conflict = disagreement(obj, "", (0, 0), [])
        if conflict:
            return ValidationResult(False, (conflict,))
    return _validate(obj, rubric=rubric, output=output, canary=canary)


def _validate(
    obj: Any, *, rubric: Rubric | None, output: str | None, canary: str | None
) -> ValidationResult:
    if not isinstance(obj, dict):
        return ValidationResult(False, ("$: the review must be a JSON object",))
    errors = shape_errors(obj)
    if errors:
        return ValidationResult(False, tuple(errors))
    review, warnings = _normalise(obj, output)
    errors = _consistency(review) + _coverage(review, rubric) + _canary(review, canary)
    if not _seed_form(obj) and review.verdict == "FAIL":
        errors += _unexplained_checks(review)
    if output is None and any(i.quote for i in review.critical_issues):
        warnings.append(UNCHECKED_QUOTES)
    warnings += unverified_quote_messages(review) if output is not None else []
    return ValidationResult(not errors, tuple(errors), tuple(warnings), review)


def validate_reply(
    reply: str,
    *,
    rubric: Rubric | None = None,
    output: str | None = None,
    canary: str | None = None,
) -> ValidationResult:
    """Validate a reviewer's raw reply text (prose, fences and all)."""
    found = extract_verdict_object(reply)  # ambiguity inside and around the review checked
    if found.obj is None:
        return ValidationResult(False, (found.error or "no review found",))
    return _validate(found.obj, rubric=rubric, output=output, canary=canary)
