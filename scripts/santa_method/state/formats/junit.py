"""JUnit XML, as test reporters read it.

A test suite per run (per verified item for a batch), one test case per
rubric criterion named by its id, failing with the problems that break it
(a problem breaks each criterion it lists). One more case, `verdict`, fails
unless the run shipped NICE (or the batch was ACCEPTED): a run escalated on
the budget or on invalid reviews has no failing criterion, and a green
report must never stand for a verdict that is not.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from santa_method.state.formats.model import Problem, Report, Subject

# XML 1.0 forbids most control characters; reviewer text may hold them.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
PASSING = ("NICE", "ACCEPTED")


def _clean(text: object) -> str:
    return _INVALID_XML.sub("\ufffd", str(text))


def _describe(problem: Problem) -> str:
    lines = [f"[{', '.join(problem.criteria)}] {problem.issue}"]
    lines.append(f"  flagged by {', '.join(problem.flagged_by) or '?'}")
    for quote in problem.quotes:
        lines.append(f"  quote ({problem.evidence}): {quote}")
    if problem.missing:
        lines.append(f"  missing: {problem.missing}")
    for place in problem.places:
        where = f"{place.path}:{place.start_line}" if place.start_line else place.path
        lines.append(f"  at {where}")
    return "\n".join(lines)


def _suite(report: Report, subject: Subject) -> ET.Element:
    suite = ET.Element("testsuite", name=_clean(subject.name))
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("run_id", subject.run_id),
        ("verdict", subject.verdict),
        ("next", subject.next),
        ("rubric", report.rubric),
    ):
        if value is not None:
            ET.SubElement(props, "property", name=key, value=_clean(value))
    failures = skipped = 0
    classname = _clean(f"santa-method.{subject.name}")
    for criterion in report.criteria:
        case = ET.SubElement(suite, "testcase", classname=classname, name=criterion.id)
        broken = [p for p in subject.problems if criterion.id in p.criteria]
        if broken:
            failures += 1
            failure = ET.SubElement(
                case,
                "failure",
                message=_clean(f"{len(broken)} problem(s): {broken[0].issue}"[:500]),
                type=criterion.id,
            )
            failure.text = _clean("\n\n".join(_describe(p) for p in broken))
        elif subject.run_id is None:
            skipped += 1
            ET.SubElement(case, "skipped", message="not verified")
    # Problems under a criterion the rubric lacks still fail a case of their own.
    known = {c.id for c in report.criteria}
    for rule in dict.fromkeys(p.rule for p in subject.problems if p.rule not in known):
        case = ET.SubElement(suite, "testcase", classname=classname, name=rule)
        broken = [p for p in subject.problems if p.rule == rule]
        failures += 1
        failure = ET.SubElement(case, "failure", message=_clean(broken[0].issue[:500]), type=rule)
        failure.text = _clean("\n\n".join(_describe(p) for p in broken))
    case = ET.SubElement(suite, "testcase", classname=classname, name="verdict")
    if subject.verdict not in PASSING:
        failures += 1
        failure = ET.SubElement(
            case,
            "failure",
            message=_clean(f"{subject.verdict} (next: {subject.next or '-'})"),
            type="verdict",
        )
        failure.text = _clean("\n".join([*subject.reasons, *subject.questions]))
    if subject.suggestions:
        out = ET.SubElement(suite, "system-out")
        out.text = _clean("\n".join(f"suggestion: {s.issue}" for s in subject.suggestions))
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return suite


def render(report: Report) -> str:
    root = ET.Element("testsuites", name=_clean(f"santa-method {report.kind} {report.id}"))
    suites = [_suite(report, s) for s in report.subjects]
    if report.kind == "batch":
        batch = ET.Element("testsuite", name=_clean(f"batch {report.id}"))
        case = ET.SubElement(batch, "testcase", classname="santa-method.batch", name="verdict")
        failed = report.verdict not in PASSING
        if failed:
            failure = ET.SubElement(case, "failure", message=report.verdict, type="verdict")
            failure.text = _clean("\n".join(report.reasons))
        batch.set("tests", "1")
        batch.set("failures", str(int(failed)))
        batch.set("errors", "0")
        batch.set("skipped", "0")
        suites.append(batch)
    for suite in suites:
        root.append(suite)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(s.get(key) or 0) for s in suites)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
