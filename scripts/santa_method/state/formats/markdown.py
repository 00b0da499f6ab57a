"""Markdown for a pull-request comment or a job summary.

The verdict and the next step come first, as santa says them (NICE,
NAUGHTY, ESCALATED; a batch ACCEPTED or ESCALATED), then the fixer's
questions (a person must answer them), then the problems as one table
(criteria, the problem, its evidence, where, who flagged it). Rounds, the
reasons, suggestions and a batch's items go in `<details>`, so the comment
stays short. Reviewer text is untrusted: outside code spans it is escaped
(no HTML, no @-mentions that would ping people), and the whole comment stays
under GitHub's 65,536 characters by dropping detail before anything else.
"""

from __future__ import annotations

import html

from santa_method.state.formats.model import Problem, Report, Subject
from santa_method.state.report import _inline

LIMIT = 65_000
EVIDENCE_CHARS = 240


def _text(value: object) -> str:
    """Untrusted prose for a table cell or a list: one line, no HTML, no mentions."""
    flat = " ".join(str(value).split())
    return html.escape(flat, quote=False).replace("@", "&#64;").replace("|", "\\|")


def _code(value: str) -> str:
    flat = " ".join(value.split())
    if len(flat) > EVIDENCE_CHARS:
        flat = flat[: EVIDENCE_CHARS - 1] + "…"
    return _inline(flat).replace("|", "\\|")


def _money(report: Report) -> str:
    parts = []
    if report.cost_usd is not None:
        parts.append(f"${report.cost_usd:.4f}")
    if report.tokens is not None:
        parts.append(f"{report.tokens} tokens")
    return ", ".join(parts) or "cost unknown"


def _headline(report: Report) -> str:
    if report.verdict == "NICE":
        step = "shipped" if report.next is None else f"next: {report.next}"
    elif report.verdict == "ACCEPTED":
        step = "accepted"
    elif report.verdict == "ESCALATED":
        step = f"next: a person takes over (`santa report {report.id}`)"
    elif report.next == "report":
        step = "reported: a check only, no fix was asked (give fixes to run the fix loop)"
    else:
        step = f"next: {report.next or '-'}"
    return f"### santa-method {report.kind} `{report.id}`: **{report.verdict}** · {step}"


def _where(problem: Problem) -> str:
    if not problem.places:
        return ""
    place = problem.places[0]
    spot = place.path
    if place.start_line:
        spot += f":{place.start_line}"
        if place.end_line and place.end_line > place.start_line:
            spot += f"-{place.end_line}"
    return _code(spot)


def _evidence(problem: Problem) -> str:
    if problem.quotes:
        mark = " (not found in the output)" if problem.evidence == "unverified" else ""
        return _code(problem.quotes[0]) + mark
    if problem.missing:
        return "missing: " + _text(problem.missing)
    return ""


def _table(report: Report, rows: int) -> list[str]:
    problems = report.problems
    if not problems:
        return []
    batch = report.kind == "batch"
    head = [
        "#",
        *(["item"] if batch else []),
        "criteria",
        "problem",
        "evidence",
        "where",
        "flagged by",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, p in enumerate(problems[:rows], 1):
        cells = [
            str(n),
            *([_text(p.subject)] if batch else []),
            ", ".join(_code(c) for c in p.criteria),
            _text(p.issue),
            _evidence(p),
            _where(p),
            _text(", ".join(p.flagged_by)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(problems) > rows:
        lines += [
            "",
            f"{len(problems) - rows} more problem(s): `santa report {report.id} --format json`.",
        ]
    return lines


def _details(summary: str, body: list[str]) -> list[str]:
    return [
        "",
        "<details>",
        f"<summary>{html.escape(summary)}</summary>",
        "",
        *body,
        "",
        "</details>",
    ]


def _rounds(subject: Subject) -> list[str]:
    lines = []
    for r in subject.rounds:
        line = (
            f"- round {r.round}: {r.verdict or 'not gated'}, next {r.next or '-'}, "
            f"{r.problems} problem(s)"
        )
        if r.fix_notes:
            line += f"; fixer: {_text(r.fix_notes)[:400]}"
        lines.append(line)
    return lines


def _body(report: Report, rows: int, details: bool) -> str:
    lines = [_headline(report), ""]
    count = len(report.problems)
    summary = f"{count} problem(s), {report.rounds} round(s), {_money(report)}"
    if report.kind == "run" and report.subjects:
        subject = report.subjects[0]
        summary = f"Verified {_code(subject.name)} against rubric `{report.rubric}`: " + summary
    else:
        verified = sum(1 for s in report.subjects if s.run_id)
        summary = f"{verified} item(s) verified against rubric `{report.rubric}`: " + summary
    lines.append(summary + ".")
    for label, fact in report.facts:
        lines.append(f"- {label}: {_text(fact)}")
    if report.questions:
        lines += ["", "**The fixer needs input** (answer in the spec, then run again):", ""]
        lines += [f"{n}. {_text(q)}" for n, q in enumerate(report.questions, 1)]
    table = _table(report, rows)
    if table:
        lines += ["", *table]
    if not details:
        return "\n".join(lines) + "\n"
    if report.reasons:
        lines += _details("Why", [f"- {_text(r)}" for r in report.reasons])
    if report.kind == "run" and report.subjects and report.subjects[0].rounds:
        lines += _details(f"Rounds ({report.rounds})", _rounds(report.subjects[0]))
    if report.kind == "batch" and report.subjects:
        items = ["| item | verdict | problems | rounds | run |", "|---|---|---|---|---|"]
        for s in report.subjects:
            items.append(
                f"| {_text(s.name)} | {s.verdict} | {len(s.problems)} | "
                f"{len({r.round for r in s.rounds})} | {_code(s.run_id) if s.run_id else ''} |"
            )
        lines += _details(f"Items ({len(report.subjects)})", items)
    if report.suggestions:
        lines += _details(
            f"Suggestions ({len(report.suggestions)}, not blocking)",
            [f"- {_text(s.issue)}" for s in report.suggestions],
        )
    full = _full(report)
    if full:
        lines += _details("Full report", [full.rstrip("\n")])
    return "\n".join(lines) + "\n"


def _full(report: Report) -> str:
    """The report a person taking over reads (spec, output, every round)."""
    if not report.legacy:
        return ""
    if report.kind == "batch":
        from santa_method.state.batch_report import to_markdown as batch_markdown

        return batch_markdown(report.legacy)
    from santa_method.state.report import to_markdown

    return to_markdown(report.legacy)


def render(report: Report) -> str:
    for rows, details in ((50, True), (50, False), (10, False)):
        text = _body(report, rows, details)
        if len(text) <= LIMIT:
            return text
    return text[: LIMIT - 80] + "\n\n(cut to fit a comment: see `santa report --format json`)\n"
