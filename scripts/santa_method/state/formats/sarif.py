"""SARIF 2.1.0, as GitHub code scanning reads it.

One result per merged problem, `ruleId` its primary criterion; the rubric's
criteria are the tool's rules, each with its pass condition as help. Level
`error` for a blocking problem, `note` for a suggestion. GitHub's upload
rules shape the rest: paths relative to the repository root (`%SRCROOT%`),
every result with one physical location whose region has a `startLine` (an
omission points at its file's first line), one run per upload category
(`automationDetails.id`), at most 5,000 results a run (the rest are counted
in a notification, never silently dropped), and a stable
`primaryLocationLineHash`: santa's own fingerprint of the problem, not of
the line, so a problem that recurs after an edit stays one alert.
"""

from __future__ import annotations

import json
from typing import Any

from santa_method.state.formats.model import Problem, Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS = 5000
SUGGESTION_RULE = "suggestion"


def _rules(report: Report) -> list[dict[str, Any]]:
    rules = [
        {
            "id": c.id,
            "name": "".join(part.capitalize() for part in c.id.split("-")),
            "shortDescription": {"text": c.name},
            "fullDescription": {"text": c.pass_},
            "help": {
                "text": f"Passes when: {c.pass_}"
                + "".join(f"\nFails on: {s}" for s in c.fail_signals),
                "markdown": f"**Passes when:** {c.pass_}"
                + (
                    "\n\n**Fails on:**\n" + "\n".join(f"- {s}" for s in c.fail_signals)
                    if c.fail_signals
                    else ""
                ),
            },
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["santa-method", report.rubric][:10]},
        }
        for c in report.criteria
    ]
    known = {c.id for c in report.criteria}
    # A problem under a criterion the rubric lacks (an older run's rubric) still gets a rule.
    for problem in [*report.problems, *report.suggestions]:
        if problem.rule not in known:
            known.add(problem.rule)
            suggestion = problem.rule == SUGGESTION_RULE
            rules.append(
                {
                    "id": problem.rule,
                    "name": "Suggestion" if suggestion else problem.rule,
                    "shortDescription": {
                        "text": "A reviewer's non-blocking suggestion"
                        if suggestion
                        else problem.rule
                    },
                    "help": {
                        "text": "Not blocking: shown for a person to weigh."
                        if suggestion
                        else problem.rule
                    },
                    "defaultConfiguration": {"level": "note" if suggestion else "error"},
                }
            )
    return rules


def _message(problem: Problem) -> str:
    if not problem.blocking:
        return f"Suggestion: {problem.issue}"
    who = ", ".join(problem.flagged_by) or "a reviewer"
    text = f"{problem.issue} (flagged by {who}"
    if len(problem.criteria) > 1:
        text += f"; also breaks {', '.join(problem.criteria[1:])}"
    text += ")"
    if problem.quotes:
        text += f" Quote: {problem.quotes[0]}"
        if problem.evidence == "unverified":
            text += " (not found in the output: check it first)"
    if problem.missing:
        text += f" Missing: {problem.missing}"
    if problem.places and problem.places[0].start_line is None and problem.blocking:
        text += " (no line: it concerns the file)"
    return text


def _location(problem: Problem) -> list[dict[str, Any]]:
    if not problem.places:
        return []
    place = problem.places[0]
    region: dict[str, Any] = {"startLine": place.start_line or 1}
    if place.end_line and place.start_line and place.end_line > place.start_line:
        region["endLine"] = place.end_line
    return [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": place.path, "uriBaseId": "%SRCROOT%"},
                "region": region,
            }
        }
    ]


def _result(problem: Problem, rule_index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": problem.rule,
        "ruleIndex": rule_index[problem.rule],
        "level": "error" if problem.blocking else "note",
        "message": {"text": _message(problem)},
        "locations": _location(problem),
        "partialFingerprints": {
            "primaryLocationLineHash": f"{problem.fingerprint[:16]}:1",
            "santaProblem/v1": problem.fingerprint,
        },
        "properties": {
            "criteria": list(problem.criteria),
            "flaggedBy": list(problem.flagged_by),
            "evidence": problem.evidence,
            "subject": problem.subject,
        },
    }
    related = [
        {
            "id": n,
            "physicalLocation": {
                "artifactLocation": {"uri": p.path, "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": p.start_line or 1},
            },
            "message": {"text": "also quoted here"},
        }
        for n, p in enumerate(problem.places[1:], 1)
    ]
    if related:
        result["relatedLocations"] = related[:100]
    return result


def to_sarif(report: Report) -> dict[str, Any]:
    rules = _rules(report)
    index = {r["id"]: n for n, r in enumerate(rules)}
    findings = [*report.problems, *report.suggestions]
    results = [_result(p, index) for p in findings[:MAX_RESULTS]]
    # The review ran to a verdict (escalated included); the verdict is in the run's properties.
    invocation: dict[str, Any] = {"executionSuccessful": True}
    notes = [
        {
            "level": "note",
            "message": {"text": f"santa-method {report.kind} {report.id}: {report.verdict}"},
        }
    ]
    notes += [{"level": "warning", "message": {"text": r}} for r in report.reasons[:20]]
    if len(findings) > MAX_RESULTS:
        notes.append(
            {
                "level": "warning",
                "message": {
                    "text": f"{len(findings) - MAX_RESULTS} more problems are in "
                    f"'santa report {report.id} --format json' (code scanning keeps {MAX_RESULTS})"
                },
            }
        )
    invocation["toolExecutionNotifications"] = notes
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "santa-method",
                "semanticVersion": report.version or "0",
                "rules": rules,
            }
        },
        "automationDetails": {"id": f"santa-method/{report.rubric}/"},
        "invocations": [invocation],
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {"verdict": report.verdict, "next": report.next, "id": report.id},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def render(report: Report) -> str:
    return json.dumps(to_sarif(report), indent=2, ensure_ascii=False) + "\n"
