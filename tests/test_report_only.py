"""A check-only run (`--max-fixes 0`) that finds problems is a report, not an escalation.

Why: a check asks for no fix, so a person has nothing to rescue; calling it
"ESCALATED · a person takes over" and "fixes exhausted (0 of 0 used)", and
counting it in the escalation rate, told users the loop had failed. This
drives one through the Claude Code face (the real hook commands and `santa
gate`), then reads it back through every face that names an outcome: the
gate, `santa runs`, `santa metrics`, every report format and the viewer.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from _hooked import QUOTE, SANTA, SPEC, Project, hook_env, review
from santa_method.view.model import page_data
from santa_method.view.sources import collect

OUTPUT = "# tally\n\ntally counts lines. Current version: 2.0.\n"


@pytest.fixture
def reported(tmp_path: Path) -> Project:
    """A hook-store check of README.md whose two reviewers fail it, gated."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text(OUTPUT, encoding="utf-8")
    (root / "spec.md").write_text(SPEC, encoding="utf-8")
    env = hook_env(root)
    start = ["round", "start", "--against", "README.md", "--spec", "spec.md", "--max-fixes", "0"]
    done = subprocess.run(
        [SANTA, *start, "--json"], capture_output=True, text=True, env=env, cwd=root, timeout=60
    )
    assert done.returncode == 0, done.stderr
    opened = json.loads(done.stdout)
    p = Project(
        root, env, opened["run_id"], opened["instruction"], opened["canary"], opened["assignment"]
    )
    for agent in ("agent-b", "agent-c"):
        p.spawn()
        p.stop(agent, review(p.canary, quote=QUOTE)).allowed()
    return p


def test_the_gate_reports_and_the_run_is_closed_not_escalated(reported: Project) -> None:
    code, answer = reported.gate()
    assert code == 1
    assert (answer["verdict"], answer["next"]) == ("NAUGHTY", "report")
    assert not any("fixes exhausted" in r for r in answer["reasons"])
    assert "fixer_instruction" not in answer
    assert Path(answer["report"]).is_file()
    assert reported.state().status == "reported"
    # Nothing is handed out for it any more; it never asks a person to take over.
    again = reported.santa("round", "start", "--run", reported.run_id, "--json")
    assert again.returncode == 1
    ship = reported.santa("log", "ship", "--run", reported.run_id)
    assert ship.returncode == 1
    log = (reported.root / "log.jsonl").read_text(encoding="utf-8").splitlines()
    assert not [line for line in log if json.loads(line)["event"] == "escalate"]


def test_runs_metrics_and_reports_name_the_outcome(reported: Project) -> None:
    reported.gate()
    listed = reported.santa("runs", "--json")
    (row,) = [r for r in json.loads(listed.stdout) if r["run_id"] == reported.run_id]
    assert row["outcome"] == "reported"

    metrics = json.loads(reported.santa("metrics", "--json").stdout)
    assert metrics["runs"]["reported"] == 1 and metrics["runs"]["escalated"] == 0
    assert metrics["escalation_rate"] is None  # no run a person had to rescue
    assert metrics["first_pass_rate"] == 0.0  # the generator's output still failed

    markdown = reported.santa("report", reported.run_id).stdout
    assert "ESCALATED" not in markdown and "a person takes over" not in markdown
    assert "**NAUGHTY**" in markdown and "a check only" in markdown
    as_json = json.loads(reported.santa("report", reported.run_id, "--json").stdout)
    assert (as_json["verdict"], as_json["next"]) == ("NAUGHTY", "report")


def test_the_viewer_shows_a_naughty_check_not_an_escalation(
    reported: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported.gate()
    monkeypatch.setenv("SANTA_HOME", reported.env["SANTA_HOME"])
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", reported.env["CLAUDE_PROJECT_DIR"])
    src = collect(Path(reported.env["SANTA_LOG"]), Path(reported.env["SANTA_HOME"]))
    data = page_data(src, generated="2026-01-01T00:00:00Z", since=None)
    (run,) = [r for r in data["runs"] if r["id"] == reported.run_id]
    assert run["verdict"] == "NAUGHTY"
    assert run["detail"].get("escalation") is None  # lean() leaves out what is None
