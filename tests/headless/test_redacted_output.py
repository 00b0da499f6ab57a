"""What `santa run`, `santa gate` and `santa batch` show and keep is redacted
(issue 11, item 7): a reviewer quoting a bare secret from the output (no
`KEY=` around it) must not put it on stdout, stderr, the log or a report.
Evidence is still judged against the real text, and the run folder's private
copy of the output, which reviewers read, keeps it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _reviews import review_of, review_reply
from e2e.stub_server import REVIEWER, Json
from santa_method.cli import main

from .batch_helpers import jsonl
from .conftest import CRITERIA, canary_of

# A bare AWS secret access key and one line of a PEM body (fake, planted).
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM_LINE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
SECRETS = (AWS_SECRET, PEM_LINE)
SPEC = "A config guide that holds no credentials."
OUTPUT = f"# Setup\n\nCopy this value:\n{AWS_SECRET}\n\nand this line:\n{PEM_LINE}\n"


def _quoting(body: dict[str, Any]) -> Json:
    """A reviewer that quotes each secret alone, as real reviewers do."""
    flags = [
        {"criterion": "compliance", "issue": f"a credential is printed: {s}", "quote": s}
        for s in SECRETS
    ]
    return Json(
        review_of(
            CRITERIA,
            flags,
            detail="x",
            suggestions=[f"remove {AWS_SECRET}"],
            canary=canary_of(body),
        )
    )


@pytest.fixture
def api(stub_server, project, monkeypatch):
    server = stub_server({REVIEWER: _quoting})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    return server


def _kept(project: Path) -> str:
    """Everything santa keeps for people: the log and every report."""
    santa = project / ".santa"
    parts = [(santa / "log.jsonl").read_text(encoding="utf-8")]
    for name in ("report.md", "report.json", "events.jsonl"):
        parts += [p.read_text(encoding="utf-8") for p in santa.rglob(name)]
    return "\n".join(parts)


def _assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text
    assert any("[REDACTED:" in text for text in texts)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_santa_run_shows_and_keeps_no_quoted_secret(
    api, project: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    target = project / "guide.md"
    target.write_text(OUTPUT, encoding="utf-8")
    args = ["run", "--against", str(target), "--spec-text", SPEC, "--max-fixes", "0"]
    code = main(args + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    assert code == 1, err  # escalated: the reviewers failed it
    _assert_clean(out, err, _kept(project))
    if as_json:
        issues = json.loads(out)["issues"]
        # Evidence was judged on the real text before the quote was redacted.
        assert [i["evidence"] for i in issues] == ["verified", "verified"]
        assert all(i["quote"] == "[REDACTED:High Entropy Token]" for i in issues)
    # The private copy reviewers read keeps the real text.
    copies = list((project / ".santa" / "runs").rglob("output.txt"))
    assert copies and all(AWS_SECRET in c.read_text(encoding="utf-8") for c in copies)
    assert target.read_text(encoding="utf-8") == OUTPUT


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_santa_gate_shows_no_quoted_secret(
    project: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    output = project / "guide.md"
    output.write_text(OUTPUT, encoding="utf-8")
    reviews = []
    for label in ("b", "c"):
        flags = [{"criterion": "compliance", "issue": f"prints {s}", "quote": s} for s in SECRETS]
        path = project / f"{label}.json"
        review = review_reply(CRITERIA, flags, detail=None, suggestions=[label])
        path.write_text(review, encoding="utf-8")
        reviews.append(str(path))
    code = main(["gate", *reviews, "--against", str(output)] + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    assert code == 1
    _assert_clean(out + err)
    if as_json:
        assert {i["evidence"] for i in json.loads(out)["issues"]} == {"verified"}
    else:
        assert "quote found in the output" in out


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_santa_batch_shows_and_keeps_no_quoted_secret(
    api, project: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    items = jsonl(project / "items.jsonl", [OUTPUT, OUTPUT.replace("Setup", "Install")])
    args = ["batch", str(items), "--spec-text", SPEC, "--max-fixes", "0", "--seed", "3"]
    code = main(args + ["--quiet"] + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    assert code == 1, err  # every sampled item escalates
    _assert_clean(out, err, _kept(project))
