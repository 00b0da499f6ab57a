"""Code Climate JSON, the form of GitLab's Code Quality report.

An array of issues: the same problems as every other format, `check_name`
the primary criterion, `severity` `major` for a blocking problem and `info`
for a suggestion, the location's path relative to the repository root with
`lines.begin` (an omission: line 1 of its file), and the problem's stable
fingerprint, which is how GitLab tells a new problem from one it showed
before.
"""

from __future__ import annotations

import json
from typing import Any

from santa_method.state.formats.model import Problem, Report


def _issue(problem: Problem) -> dict[str, Any]:
    place = problem.places[0] if problem.places else None
    lines: dict[str, int] = {"begin": (place.start_line if place else None) or 1}
    if place and place.end_line and place.start_line and place.end_line > place.start_line:
        lines["end"] = place.end_line
    who = ", ".join(problem.flagged_by) or "a reviewer"
    description = (
        f"{problem.issue} (flagged by {who})"
        if problem.blocking
        else f"Suggestion: {problem.issue}"
    )
    body = []
    if len(problem.criteria) > 1:
        body.append(f"Criteria: {', '.join(problem.criteria)}")
    body += [f"Quote ({problem.evidence}): {q}" for q in problem.quotes]
    if problem.missing:
        body.append(f"Missing: {problem.missing}")
    out: dict[str, Any] = {
        "type": "issue",
        "check_name": problem.rule,
        "description": description,
        "categories": ["Bug Risk"] if problem.blocking else ["Clarity"],
        "severity": "major" if problem.blocking else "info",
        "fingerprint": problem.fingerprint,
        "location": {"path": place.path if place else problem.subject, "lines": lines},
    }
    if body:
        out["content"] = {"body": "\n\n".join(body)}
    return out


def to_codeclimate(report: Report) -> list[dict[str, Any]]:
    return [_issue(p) for p in [*report.problems, *report.suggestions]]


def render(report: Report) -> str:
    return json.dumps(to_codeclimate(report), indent=2, ensure_ascii=False) + "\n"
