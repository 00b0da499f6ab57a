"""Readable forms of validation and gate results (plain text, no colour:
these run in hooks and CI logs where escape codes are noise)."""

from __future__ import annotations

from typing import Any

from santa_method.core.review import UNCHECKED_QUOTES
from santa_method.core.types import GateResult, MergedIssue, ValidationResult

_EVIDENCE = {
    "verified": "quote found in the output",
    "unverified": "quote NOT found in the output: suspected false positive, check it first",
    "none": "no quote",
}


def validation_text(result: ValidationResult) -> str:
    head = "valid" if result.valid else "INVALID"
    lines = [f"{head} review" + (f", verdict {result.verdict}" if result.verdict else "")]
    lines += [f"  error: {e}" for e in result.errors]
    lines += [f"  warning: {w}" for w in result.warnings]
    if result.review is not None:
        for issue in result.review.critical_issues:
            lines.append(f"  issue [{issue.criterion}] {issue.issue} ({issue.evidence})")
    return "\n".join(lines)


def _issue_lines(n: int, issue: MergedIssue, checked: bool) -> list[str]:
    lines = [f"{n}. [{issue.criterion}] {issue.issue}"]
    others = issue.all_criteria[1:]
    if others:
        lines.append(f"   also breaks: {', '.join(others)}")
    lines.append(f"   flagged by {', '.join(issue.flagged_by)}")
    if issue.quote is not None:
        evidence = _EVIDENCE[issue.evidence] if checked else "not checked"
        lines.append(f"   quote: {issue.quote!r} ({evidence})")
        lines += [f"   also quoted: {q!r}" for q in issue.all_quotes[1:]]
    elif issue.missing is not None:
        lines.append(f"   missing: {issue.missing}")
    else:
        lines.append("   evidence: none given")
    if issue.location:
        lines.append(f"   location: {issue.location}")
    return lines


def gate_text(result: GateResult, *, quotes_checked: bool = True) -> str:
    """`quotes_checked=False` when no output was given: a quote that was never
    looked up must not read as one that was looked up and not found."""
    lines = [f"{result.verdict}  next: {result.next}"]
    lines += [f"  - {reason}" for reason in result.reasons]
    for review in result.reviews:
        state = f"{review.verdict}" if review.valid else "invalid"
        lines.append(f"reviewer {review.label}: {state}")
        lines += [f"    {e}" for e in review.errors]
    if result.issues:
        agreement = "" if result.agreement is None else f", agreement {result.agreement:.0%}"
        lines.append(f"problems ({len(result.issues)} merged{agreement}):")
        if not quotes_checked and any(i.quote is not None for i in result.issues):
            lines.append(f"  warning: {UNCHECKED_QUOTES}")
        for n, issue in enumerate(result.issues, 1):
            lines += _issue_lines(n, issue, quotes_checked)
    if result.suggestions:
        lines.append("suggestions (non-blocking):")
        lines += [f"  - {s}" for s in result.suggestions]
    for told in result.extra.get("extra_replies") or []:
        said = told["verdict"] if told["valid"] else "invalid"
        counted = "counted" if told["counted"] else "not counted"
        lines.append(
            f"reply {told['label']} (agent {told['agent_id']}): {said}, {counted}: {told['why']}"
            + (f" (round {told['round']})" if told["round"] != result.extra.get("round") else "")
        )
    for key in ("fixer_instruction", "report"):
        if result.extra.get(key):
            lines.append(f"{key.replace('_', ' ')}: {result.extra[key]}")
    return "\n".join(lines)


def wait_text(answer: dict[str, Any]) -> str:
    """The gate's answer while started reviewers may still reply (not a verdict)."""
    lines = ["WAIT  next: wait"]
    lines += [f"  - {reason}" for reason in answer["reasons"]]
    lines.append(answer["next_step"][0].upper() + answer["next_step"][1:] + ".")
    return "\n".join(lines)
