"""Reports in the formats CI tools read, for a run or a batch.

`build(ID)` reads a run or a batch into one report object
(`formats.model.Report`); each format is a pure function of it to text:
`markdown` (a PR comment), `json`, `sarif` (GitHub code scanning), `junit`
(test reporters), `codeclimate` (GitLab Code Quality). `santa report ID
--format F [--out FILE]` is the command-line face.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from santa_method.state.formats import codeclimate, junit, markdown, sarif
from santa_method.state.formats.model import Report, build

FORMATS = ("markdown", "json", "sarif", "junit", "codeclimate")


def to_json(report: Report) -> str:
    """The existing report's JSON (run or batch), plus the verdict, next step,
    problems (with places and fingerprints), suggestions and questions."""
    data = dict(report.legacy)
    data.update(
        kind=report.kind,
        id=report.id,
        verdict=report.verdict,
        next=report.next,
        problems=[p.to_json() for p in report.problems],
        suggestions=[p.to_json() for p in report.suggestions],
        questions=report.questions,
    )
    if report.kind == "batch":
        data["subjects"] = [s.to_json() for s in report.subjects]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_WRITERS: dict[str, Callable[[Report], str]] = {
    "markdown": markdown.render,
    "json": to_json,
    "sarif": sarif.render,
    "junit": junit.render,
    "codeclimate": codeclimate.render,
}


def render(report: Report, fmt: str) -> str:
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    return _WRITERS[fmt](report)


__all__ = ["FORMATS", "Report", "build", "render"]
