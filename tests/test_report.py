"""The escalation report: what a person taking over needs, and no secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _faces import EVERY_FACE
from _reviews import review_reply
from santa_method.cli import main
from santa_method.state import report as reports
from santa_method.state.events import log_event
from santa_method.state.gating import gate_run
from santa_method.state.rounds import next_round

BASE = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)
KEY = "sk-ant-api03-" + "Xy7Qp2Lk9Rt4Vb6Nm1Zc8Wd3Fg5Hj0Ks2Lq7Pw4Er9Ty6Ui1Op3As5Df8Gh2Jk4"
AWS = "AKIAIOSFODNN7EXAMPLE"
OUTPUT_1 = f'# tally\n\nCurrent version: 2.0.\n\nexport ANTHROPIC_API_KEY="{KEY}"\n'
OUTPUT_2 = (
    f'# tally\n\nCurrent version: 2.1.\n\nexport ANTHROPIC_API_KEY="{KEY}"\n````\nfence breaker\n'
)

V20 = {"criterion": "factual-accuracy", "issue": "Wrong version", "quote": "Current version: 2.0."}
LEAK = {
    "criterion": "compliance",
    "issue": "Publishes a live API key",
    "quote": f'ANTHROPIC_API_KEY="{KEY}"',
}
GHOST = {"criterion": "no-hallucination", "issue": "Invents a flag", "quote": "tally --chars"}
LICENSE = {"criterion": "completeness", "issue": "No license", "missing": "License section (MIT)"}


def review(canary: str, issues: tuple[dict[str, Any], ...], note: str) -> str:
    return review_reply(BASE, issues, detail=note, suggestions=None, canary=canary)


@pytest.fixture
def escalated(santa_project: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A run that escalated at the cap after one fix, with a key in its output and quotes."""
    tmp_path = santa_project
    (tmp_path / "spec.md").write_text(
        f"Document tally 2.1 with a License section. Never print {AWS}.\n"
    )
    (tmp_path / "out.md").write_text(OUTPUT_1)
    assert (
        main(
            [
                "round",
                "start",
                "--against",
                "out.md",
                "--spec",
                "spec.md",
                "--source",
                "files",
                "--max-fixes",
                "1",
                "--json",
            ]
        )
        == 0
    )
    opened = json.loads(capsys.readouterr().out)
    run_id = opened["run_id"]
    (tmp_path / "b.json").write_text(review(opened["canary"], (V20, LEAK, GHOST), "b"))
    (tmp_path / "c.json").write_text(review(opened["canary"], (V20, LEAK), "c"))
    assert (
        gate_run(checks=EVERY_FACE, run_id=run_id, review_files=["b.json", "c.json"]).next == "fix"
    )
    (tmp_path / "out.md").write_text(OUTPUT_2)
    log_event(
        run_id, "fix", data={"changed": "version set to 2.1", "cost_usd": 0.05, "tokens": 300}
    )
    second = next_round(run_id)
    (tmp_path / "b.json").write_text(review(second.canary, (LEAK, LICENSE, GHOST), "b2"))
    (tmp_path / "c.json").write_text(review(second.canary, (LEAK, LICENSE), "c2"))
    assert (
        gate_run(checks=EVERY_FACE, run_id=run_id, review_files=["b.json", "c.json"]).next
        == "escalate"
    )
    return tmp_path, run_id


def test_report_json_has_what_a_person_needs(
    escalated: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    project, run_id = escalated
    assert main(["report", run_id, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "escalated" and report["target"] == str(project / "out.md")
    assert report["spec"].startswith("Document tally 2.1")
    assert report["escalation_reasons"] == ["fixes exhausted (1 of 1 used)"]
    unresolved = {f["criterion"]: f for f in report["unresolved"]}
    assert set(unresolved) == {"compliance", "completeness"}
    assert unresolved["compliance"]["evidence"] == "verified"
    assert unresolved["compliance"]["flagged_by"] == ["B", "C"]
    assert unresolved["completeness"]["missing"] == "License section (MIT)"
    (ghost,) = report["suspected_false_positives"]
    assert (ghost["quote"], ghost["evidence"], ghost["flagged_by"]) == (
        "tally --chars",
        "unverified",
        ["B"],
    )
    assert [(r["round"], r["verdict"], r["next"]) for r in report["rounds"]] == [
        (1, "NAUGHTY", "fix"),
        (2, "NAUGHTY", "escalate"),
    ]
    assert (
        len(report["rounds"][0]["flags"]) == 3
        and report["rounds"][0]["fix"]["changed"] == "version set to 2.1"
    )
    assert [f["changed"] for f in report["fixes"]] == ["version set to 2.1"]
    assert report["cost"] == {
        "tokens": 300,
        "usd": 0.05,
        "verification_usd": 0.05,
        "generation_usd": None,
    }


def test_secrets_are_redacted_everywhere_people_read(escalated: tuple[Path, str]) -> None:
    project, run_id = escalated
    folder = project / ".santa" / "runs" / run_id
    done = subprocess.run(
        [sys.executable, "-m", "santa_method", "report", run_id],
        cwd=project,
        env={k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for text in (
        done.stdout,
        (folder / "report.md").read_text(),
        (folder / "report.json").read_text(),
        (project / ".santa" / "log.jsonl").read_text(),
    ):
        assert KEY not in text and KEY[:24] not in text
        assert "[REDACTED:" in text
    assert AWS not in done.stdout and "Current version: 2.1." in done.stdout
    # The flag stays readable even with its secret gone.
    assert "Publishes a live API key (flagged by B, C)" in done.stdout


def test_markdown_report_layout(escalated: tuple[Path, str]) -> None:
    _project, run_id = escalated
    text = reports.to_markdown(reports.build(run_id))
    assert text.startswith(f"# santa-method escalation report: run {run_id}")
    order = [
        "## Why it escalated",
        "## Unresolved flags",
        "## Suspected false positives",
        "## Rounds",
        "## Spec",
        "## Output (last round)",
    ]
    assert [text.index(h) for h in order] == sorted(text.index(h) for h in order)
    assert (
        "- round 1: NAUGHTY, next fix, 3 flag(s)" in text
        and "  - fixer: version set to 2.1" in text
    )
    # The output holds a four-backtick fence; the report's own fence is longer.
    output_part = text.split("## Output (last round)")[1]
    assert output_part.split("\n")[2] == "`````" and "fence breaker" in output_part


def test_report_of_an_unknown_run_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / ".santa"))
    assert main(["report", "20990101-000000-000000"]) == 2
    assert "no run" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (300, 300),
        ({"input": 100, "output": 20, "cache_read": 5, "cache_write": 0, "total": 125}, 125),
        ({"input": 100, "output": 20}, 120),
        (True, None),
        ("300", None),
    ],
)
def test_token_counts_never_add_a_total_to_its_parts(value: Any, expected: int | None) -> None:
    assert reports._tokens(value) == expected
