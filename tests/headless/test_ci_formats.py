"""`santa report ID --format ...` for runs and batches, each read by its real consumer.

SARIF loads in a SARIF object model (sarif-pydantic) and is checked against
GitHub code scanning's upload rules; JUnit loads in junitparser; the
Markdown comment is parsed with markdown-it-py; Code Climate JSON is
validated against a JSON schema of GitLab's Code Quality format. The runs
are real headless runs with an in-process scripted backend: what each format
must say comes from what the script planted, not from the code under test.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import pytest
from junitparser import Failure, JUnitXml, Skipped
from markdown_it import MarkdownIt
from sarif_pydantic import Sarif

from _reviews import output_of, review_of
from santa_method.cli import main
from santa_method.cli.report_cmd import FORMATS as CLI_FORMATS
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.headless.batch import BatchOptions, verify_batch_sync
from santa_method.state import formats

from .conftest import CRITERIA

KEY = "sk-ant-api03-" + "Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz9Xc8Vb7Nm6Qw5Er4Ty3Ui2Op1As0Df9Gh8"
DOC = f'# Tool\n\nInstall it with pip.\n\nReleased in 1999.\n\nexport ANTHROPIC_API_KEY="{KEY}"\n'
SPEC = "A README with the current release year, a License section and no secrets."


class Planted:
    """Reviewers flag the year (quote), the key (quote) and a missing License
    (omission); the fixer fixes nothing unless told to."""

    name = "planted"

    def __init__(self, fixes: bool = False) -> None:
        self.fixes = fixes

    async def review(self, request: ReviewRequest) -> ReviewReply:
        canary = request.round_part.rstrip().rsplit("santa-canary: ", 1)[1]
        text = output_of(request.round_part)
        issues = []
        if "1999" in text:
            issues.append(
                {
                    "criterion": "factual-accuracy",
                    "issue": "the year is wrong",
                    "quote": "Released in 1999.",
                }
            )
        if KEY in text:
            issues.append(
                {
                    "criterion": "compliance",
                    "issue": "publishes a live key",
                    "quote": f'ANTHROPIC_API_KEY="{KEY}"',
                }
            )
        if "License" not in text:
            issues.append(
                {
                    "criterion": "completeness",
                    "issue": "no License section",
                    "missing": "A License section",
                }
            )
        review = review_of(
            CRITERIA,
            issues,
            detail="x",
            suggestions=[f"Say who maintains it ({request.label})."],
            canary=canary,
        )
        return ReviewReply(text=json.dumps(review), tokens=Tokens(10, 5), cost_usd=0.001)

    async def fix(self, request: FixRequest) -> FixReply:
        if not self.fixes:
            return FixReply(
                output="\n\n" + request.output,  # moves every line: fingerprints must not care
                notes="1. not fixed: the year\n2. needs input: which year was it released?",
                cost_usd=0.001,
            )
        fixed = request.output.replace("1999", "2024").replace(KEY, "$KEY") + "\n## License\nMIT\n"
        return FixReply(output=fixed, notes="1. fixed: all", cost_usd=0.001)


@pytest.fixture
def escalated(project: Path) -> tuple[Path, str]:
    readme = project / "README.md"
    readme.write_text(DOC, encoding="utf-8")
    result = verify_sync(SPEC, readme, options=VerifyOptions(backend=Planted(), max_fixes=1))
    # The fixer asks (needs input): the run stops escalated after round 1.
    assert result.verdict == "ESCALATED" and result.rounds == 1
    return readme, result.run_id


@pytest.fixture
def nice(project: Path) -> str:
    docs = project / "docs"
    docs.mkdir()
    page = docs / "page.md"
    page.write_text(DOC, encoding="utf-8")
    result = verify_sync(
        SPEC, page, options=VerifyOptions(backend=Planted(fixes=True), max_fixes=2)
    )
    assert result.verdict == "NICE"
    return result.run_id


def report_text(capsys: pytest.CaptureFixture[str], report_id: str, fmt: str) -> str:
    assert main(["report", report_id, "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert KEY not in out and KEY[:24] not in out
    return out


# --- GitHub code scanning's upload rules ------------------------------------


def github_upload_problems(data: dict[str, Any]) -> list[str]:
    """What GitHub's SARIF upload would refuse or drop, per its documented rules."""
    problems = []
    raw = json.dumps(data).encode()
    if len(gzip.compress(raw)) > 10 * 1024 * 1024:
        problems.append("over 10 MB compressed")
    if data.get("version") != "2.1.0" or "$schema" not in data:
        problems.append("version 2.1.0 and $schema are required")
    if not 1 <= len(data.get("runs") or []) <= 20:
        problems.append("1 to 20 runs")
    for run in data["runs"]:
        driver = run["tool"]["driver"]
        if not driver.get("name"):
            problems.append("tool.driver.name is required")
        rules = driver.get("rules") or []
        if len({r["id"] for r in rules}) != len(rules) or len(rules) > 25_000:
            problems.append("rule ids must be unique (at most 25,000)")
        for rule in rules:
            if len((rule.get("properties") or {}).get("tags") or []) > 20:
                problems.append(f"rule {rule['id']} has over 20 tags")
        ids = {r["id"] for r in rules}
        results = run.get("results") or []
        if len(results) > 25_000:
            problems.append("over 25,000 results")
        for result in results:
            if result.get("ruleId") not in ids:
                problems.append(f"result rule {result.get('ruleId')} is not a rule of the tool")
            if not (result.get("message") or {}).get("text"):
                problems.append("message.text is required")
            locations = result.get("locations") or []
            if not 1 <= len(locations) <= 1000:
                problems.append("a result needs a location (at most 1,000)")
            for location in locations:
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                if "://" in uri or uri.startswith("/") or ".." in PurePosixPath(uri).parts:
                    problems.append(f"uri {uri!r} is not relative to the repository root")
                if (
                    not isinstance(physical["region"].get("startLine"), int)
                    or physical["region"]["startLine"] < 1
                ):
                    problems.append("region.startLine is required")
            if not (result.get("partialFingerprints") or {}).get("primaryLocationLineHash"):
                problems.append("no stable fingerprint")
    return problems


def sarif_of(text: str) -> dict[str, Any]:
    data = json.loads(text)
    Sarif.model_validate(data)  # the object model loads it
    assert github_upload_problems(data) == []
    return data


# --- runs ---------------------------------------------------------------------


def test_sarif_for_an_escalated_run(escalated, capsys):
    readme, run_id = escalated
    data = sarif_of(report_text(capsys, run_id, "sarif"))
    (run,) = data["runs"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(CRITERIA) <= set(rules)
    assert "Passes when:" in rules["factual-accuracy"]["help"]["text"]
    errors = [r for r in run["results"] if r["level"] == "error"]
    notes = [r for r in run["results"] if r["level"] == "note"]
    by_rule = {r["ruleId"]: r for r in errors}
    assert set(by_rule) == {"factual-accuracy", "compliance", "completeness"}
    assert notes and all(r["ruleId"] == "suggestion" for r in notes)
    # The fixer asked, so no fix was reviewed: the report places round 1's text, the user's file.
    reviewed = DOC.split("\n")
    year = by_rule["factual-accuracy"]["locations"][0]["physicalLocation"]
    assert year["artifactLocation"]["uri"] == "README.md"  # the user's file, not the working copy
    assert reviewed[year["region"]["startLine"] - 1] == "Released in 1999."
    assert readme.read_text() == DOC
    omission = by_rule["completeness"]["locations"][0]["physicalLocation"]
    assert (
        omission["region"] == {"startLine": 1}
        and "concerns the file" in by_rule["completeness"]["message"]["text"]
    )
    assert "flagged by B, C" in by_rule["factual-accuracy"]["message"]["text"]
    assert "[REDACTED:" in by_rule["compliance"]["message"]["text"]


def test_fingerprints_are_stable_across_rounds_and_runs(project, escalated, capsys):
    readme, run_id = escalated
    first = sarif_of(report_text(capsys, run_id, "sarif"))["runs"][0]["results"]
    # A second run, from a copy where the same problems stand on other lines.
    readme.write_text(
        "# Tool\n\nMore text.\n\nAnd more.\n\n" + DOC.split("\n", 2)[2], encoding="utf-8"
    )
    again = verify_sync(SPEC, readme, options=VerifyOptions(backend=Planted(), max_fixes=0))
    second = sarif_of(report_text(capsys, again.run_id, "sarif"))["runs"][0]["results"]

    def prints(results):
        return {
            r["ruleId"]: (
                r["partialFingerprints"]["primaryLocationLineHash"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in results
            if r["level"] == "error"
        }

    a, b = prints(first), prints(second)
    assert {k: v[0] for k, v in a.items()} == {k: v[0] for k, v in b.items()}
    assert a["factual-accuracy"][1] != b["factual-accuracy"][1]  # other lines, one alert
    cc_a = json.loads(report_text(capsys, run_id, "codeclimate"))
    cc_b = json.loads(report_text(capsys, again.run_id, "codeclimate"))
    assert {i["fingerprint"] for i in cc_a} == {i["fingerprint"] for i in cc_b}


def test_junit_for_an_escalated_run(escalated, capsys):
    _readme, run_id = escalated
    xml = JUnitXml.fromstring(report_text(capsys, run_id, "junit"))
    suites = list(xml)
    assert len(suites) == 1
    cases = {case.name: case for case in suites[0]}
    assert set(cases) == {*CRITERIA, "verdict"}
    failed = {
        name for name, case in cases.items() if any(isinstance(r, Failure) for r in case.result)
    }
    assert failed == {"factual-accuracy", "compliance", "completeness", "verdict"}
    (failure,) = cases["factual-accuracy"].result
    assert "the year is wrong" in failure.message and "README.md:" in failure.text
    assert "ESCALATED" in cases["verdict"].result[0].message
    assert suites[0].failures == 4 and suites[0].tests == len(CRITERIA) + 1


def test_junit_for_a_nice_run_passes_every_case(nice, capsys):
    xml = JUnitXml.fromstring(report_text(capsys, nice, "junit"))
    (suite,) = list(xml)
    assert suite.failures == 0 and all(not case.result for case in suite)


def _tokens(text: str) -> list[Any]:
    return MarkdownIt("commonmark").enable("table").parse(text)


def test_markdown_comment_for_an_escalated_run(escalated, capsys):
    _readme, run_id = escalated
    text = report_text(capsys, run_id, "markdown")
    tokens = _tokens(text)
    # The verdict and next step come first.
    assert tokens[0].type == "heading_open"
    headline = tokens[1].content
    assert "**ESCALATED**" in headline and "next: a person takes over" in headline
    # The fixer's question, as an ordered list before the table.
    lists = [i for i, t in enumerate(tokens) if t.type == "ordered_list_open"]
    table = next(i for i, t in enumerate(tokens) if t.type == "table_open")
    assert lists and lists[0] < table
    assert any(
        "which year was it released?" in t.content
        for t in tokens[lists[0] : table]
        if t.type == "inline"
    )
    # One row per problem, with criteria, evidence and who flagged it.
    head = [t.content for t in tokens[table:] if t.type == "inline"][:6]
    assert head == ["#", "criteria", "problem", "evidence", "where", "flagged by"]
    body_rows = 0
    for t in tokens[table:]:
        if t.type == "tbody_open":
            body_rows = 0
        if t.type == "tr_open":
            body_rows += 1
        if t.type == "table_close":
            break
    assert body_rows == 3
    # The rest is folded away.
    details = [t for t in tokens if t.type == "html_block" and "<details>" in t.content]
    assert len(details) >= 3
    assert "[REDACTED:" in text


def test_markdown_for_a_nice_run_says_shipped(nice, capsys):
    tokens = _tokens(report_text(capsys, nice, "markdown"))
    assert "**NICE**" in tokens[1].content and "shipped" in tokens[1].content
    assert not any(t.type == "table_open" for t in tokens)


CODE_QUALITY_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "type": {"const": "issue"},
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "categories": {"type": "array", "items": {"type": "string"}},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^/"}},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def test_code_climate_for_an_escalated_run(escalated, capsys):
    _readme, run_id = escalated
    issues = json.loads(report_text(capsys, run_id, "codeclimate"))
    jsonschema.validate(issues, CODE_QUALITY_SCHEMA)
    majors = {i["check_name"]: i for i in issues if i["severity"] == "major"}
    assert set(majors) == {"factual-accuracy", "compliance", "completeness"}
    assert majors["factual-accuracy"]["location"]["path"] == "README.md"
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_json_keeps_the_report_and_adds_problems(escalated, capsys):
    _readme, run_id = escalated
    data = json.loads(report_text(capsys, run_id, "json"))
    assert data["status"] == "escalated" and data["spec"] == SPEC  # the existing report's keys
    assert data["verdict"] == "ESCALATED" and data["kind"] == "run"
    assert {p["criterion"] for p in data["problems"]} == {
        "factual-accuracy",
        "compliance",
        "completeness",
    }
    year = next(p for p in data["problems"] if p["criterion"] == "factual-accuracy")
    assert year["places"][0]["path"] == "README.md" and year["places"][0]["start_line"] == 5
    assert data["questions"] == ["which year was it released?"]


def test_out_writes_atomically(escalated, project, capsys, monkeypatch):
    _readme, run_id = escalated
    out = project / "santa.sarif"
    out.write_text("old", encoding="utf-8")
    assert main(["report", run_id, "--format", "sarif", "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    sarif_of(out.read_text(encoding="utf-8"))

    def broken(*_args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    out.write_text("old", encoding="utf-8")
    assert main(["report", run_id, "--format", "junit", "--out", str(out)]) == 2
    assert out.read_text(encoding="utf-8") == "old"
    assert [p.name for p in project.iterdir() if p.name.startswith(".santa.sarif")] == []
    assert "No space left" in capsys.readouterr().err


def test_out_into_a_missing_folder_is_an_input_error(escalated, project, capsys):
    _readme, run_id = escalated
    assert (
        main(["report", run_id, "--format", "sarif", "--out", str(project / "no" / "x.sarif")]) == 2
    )
    assert "does not exist" in capsys.readouterr().err


def test_the_cli_offers_every_format():
    assert CLI_FORMATS == formats.FORMATS


# --- batches --------------------------------------------------------------------


def test_every_format_for_a_batch(project, capsys):
    files = []
    for i in range(3):
        path = project / "docs" / f"item-{i}.md"
        path.parent.mkdir(exist_ok=True)
        body = DOC.replace(f'export ANTHROPIC_API_KEY="{KEY}"\n', "") + (
            "" if i == 1 else "## License\nMIT\n"
        )
        path.write_text(body.replace("1999", "2024") if i != 1 else body, encoding="utf-8")
        files.append(path)
    result = verify_batch_sync(
        files, SPEC, options=BatchOptions(backend=Planted(), seed=3, max_fixes=0)
    )
    batch_id = result.to_json()["batch_id"]
    assert result.verdict == "ESCALATED"

    data = sarif_of(report_text(capsys, batch_id, "sarif"))
    errors = [r for r in data["runs"][0]["results"] if r["level"] == "error"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in errors} == {
        "docs/item-1.md"
    }
    assert {r["ruleId"] for r in errors} == {"factual-accuracy", "completeness"}

    xml = JUnitXml.fromstring(report_text(capsys, batch_id, "junit"))
    suites = {s.name: s for s in xml}
    assert set(suites) == {str(f) for f in files} | {f"batch {batch_id}"}
    assert suites[str(files[1])].failures == 3  # two criteria and the verdict
    assert suites[str(files[0])].failures == 0
    (verdict,) = list(suites[f"batch {batch_id}"])
    assert isinstance(verdict.result[0], Failure)
    assert not any(isinstance(r, Skipped) for s in xml for c in s for r in c.result)

    tokens = _tokens(report_text(capsys, batch_id, "markdown"))
    assert "**ESCALATED**" in tokens[1].content and f"batch `{batch_id}`" in tokens[1].content
    assert any(t.type == "table_open" for t in tokens)

    issues = json.loads(report_text(capsys, batch_id, "codeclimate"))
    jsonschema.validate(issues, CODE_QUALITY_SCHEMA)
    assert {i["location"]["path"] for i in issues if i["severity"] == "major"} == {"docs/item-1.md"}

    as_json = json.loads(report_text(capsys, batch_id, "json"))
    assert as_json["kind"] == "batch" and as_json["batch_id"] == batch_id
    assert {p["subject"] for p in as_json["problems"]} == {str(files[1])}


def test_an_unknown_id_is_an_input_error(project, capsys):
    assert main(["report", "b-20990101-000000-abcdef", "--format", "sarif"]) == 2
    assert main(["report", "20990101-000000-000000", "--format", "junit"]) == 2
