"""A URL's password never leaves santa, whatever its characters (issue 29, item 5).

detect-secrets' Basic Auth pattern stops at `!`, `$`, `#`, `@`, `/` and `:`
in a password, so `postgres://admin:Qw7!H6qEzVFSU7@db...` was shown whole.
Here reviewers quote such URLs from the output under review, in their quote,
their issue and a suggestion, and every face santa shows or keeps is read:
stdout and stderr as text and `--json`, the log, the escalation report, each
`santa report` format through its real consumer (markdown-it-py, the SARIF
object model and GitHub's upload rules, junitparser, GitLab's Code Quality
schema, JSON) and the page `santa view` writes.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from junitparser import JUnitXml
from markdown_it import MarkdownIt

from _reviews import review_of
from e2e.stub_server import REVIEWER, Json
from santa_method.cli import main

from .conftest import CRITERIA, canary_of
from .test_ci_formats import CODE_QUALITY_SCHEMA, sarif_of

PASSWORDS = ("Qw7!H6qEzVFSU7", "p@ss#w/rd:x!$1", "h@ck/er#1")
LINES = (
    f"DATABASE_URL=postgres://admin:{PASSWORDS[0]}@db.internal:5432/app",
    f"REDIS_URL=redis://:{PASSWORDS[1]}@cache.internal:6379/0",
    f"queue at amqp://guest:{PASSWORDS[2]}@mq.internal/jobs",
)
SHOWN = "[REDACTED:Basic Auth Credentials]"
SPEC = "A deployment guide that holds no credentials."
OUTPUT = "# Deploy\n\nSet these:\n\n" + "\n".join(LINES) + "\n\nThen start it.\n"


def _quoting(body: dict[str, Any]) -> Json:
    flags = [
        {"criterion": "compliance", "issue": f"a password is printed in {line}", "quote": line}
        for line in LINES
    ]
    return Json(
        review_of(
            CRITERIA,
            flags,
            detail=f"see {LINES[0]}",
            suggestions=[f"remove {LINES[1]}"],
            canary=canary_of(body),
        )
    )


@pytest.fixture
def api(stub_server, project, monkeypatch):
    server = stub_server({REVIEWER: _quoting})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    return server


def _assert_clean(text: str, where: str) -> None:
    for password in PASSWORDS:
        assert password not in text, f"{where} shows {password!r}"
    assert SHOWN in text, f"{where} shows no redaction"


def _run(project: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[str, str]:
    target = project / "deploy.md"
    target.write_text(OUTPUT, encoding="utf-8")
    args = ["run", "--against", str(target), "--spec-text", SPEC, "--max-fixes", "0", *extra]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 1, err  # escalated: the reviewers failed it
    return out, err


def _report(capsys: pytest.CaptureFixture[str], run_id: str, fmt: str) -> str:
    assert main(["report", run_id, "--format", fmt]) == 0
    return capsys.readouterr().out


def test_santa_run_prints_no_url_password(api, project: Path, capsys) -> None:
    out, err = _run(project, capsys)
    _assert_clean(out + err, "santa run")
    assert "db.internal:5432/app" in out + err  # the host stays readable


def test_santa_run_json_and_every_kept_record_hold_no_url_password(
    api, project: Path, capsys
) -> None:
    out, err = _run(project, capsys, "--json")
    _assert_clean(out + err, "santa run --json")
    result = json.loads(out)
    # Evidence was judged on the real text before the quote was redacted.
    assert {i["evidence"] for i in result["issues"]} == {"verified"}
    quotes = {q for i in result["issues"] for q in i["quotes"]}
    assert f"DATABASE_URL=postgres://{SHOWN}@db.internal:5432/app" in quotes
    santa = project / ".santa"
    _assert_clean((santa / "log.jsonl").read_text(encoding="utf-8"), "the log")
    for name in ("report.md", "report.json"):
        (kept,) = santa.rglob(name)
        _assert_clean(kept.read_text(encoding="utf-8"), name)
    # The private copy reviewers read keeps the real text.
    (copy,) = (santa / "runs").rglob("output.txt")
    assert LINES[0] in copy.read_text(encoding="utf-8")

    run_id = result["run_id"]
    # Markdown, as a PR comment renders it.
    tokens = MarkdownIt("commonmark").enable("table").parse(_report(capsys, run_id, "markdown"))
    _assert_clean(
        "\n".join(t.content for t in tokens if t.type in ("inline", "html_block")), "markdown"
    )
    # SARIF, loaded by its object model and held to GitHub's upload rules.
    sarif = sarif_of(_report(capsys, run_id, "sarif"))
    messages = [r["message"]["text"] for run in sarif["runs"] for r in run["results"]]
    _assert_clean("\n".join(messages), "SARIF results")
    _assert_clean(json.dumps(sarif, ensure_ascii=False), "SARIF")
    # JUnit, as junitparser reads it.
    xml = JUnitXml.fromstring(_report(capsys, run_id, "junit"))
    failures = [f"{r.message}\n{r.text}" for suite in xml for case in suite for r in case.result]
    _assert_clean("\n".join(failures), "JUnit")
    # GitLab's Code Quality, held to its schema.
    issues = json.loads(_report(capsys, run_id, "codeclimate"))
    jsonschema.validate(issues, CODE_QUALITY_SCHEMA)
    _assert_clean("\n".join(i["description"] for i in issues), "Code Climate")
    # The report as JSON.
    _assert_clean(json.dumps(json.loads(_report(capsys, run_id, "json"))), "report JSON")

    # The page santa view writes, and the data embedded in it.
    page = project / "page.html"
    assert main(["view", "--out", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    _assert_clean(html_lib.unescape(html), "the view page")
    data = re.search(r'<script type="application/json" id="santa-data">(.*?)</script>', html, re.S)
    assert data is not None
    _assert_clean(json.dumps(json.loads(data.group(1)), ensure_ascii=False), "the page's data")
