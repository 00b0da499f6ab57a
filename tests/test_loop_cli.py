"""The loop driven through the `santa` CLI alone: full simulated loops (hook
store, review files, a git diff), every out-of-order step refused, runs
listing, the log's other events, and defaults from `.santa/config.yaml`.

Full loops run the real command in subprocesses; the many refusals call the
same entry point in-process (`santa_method.cli.main`), which keeps the file
fast while still checking exit codes and the one-sentence error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _reviews import review_reply
from _transcripts import reviewer_transcript
from santa_method.cli import main
from santa_method.state import log as runlog
from santa_method.state.fixes import fixer_open
from santa_method.state.slots import reserve_reviewer, store_reply
from santa_method.state.store import load_state, sha256

BASE = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)
SPEC = "# Task\nWrite the README for tally 2.1. Include a License section (MIT).\n"
OUTPUT = "# tally\n\nCurrent version: 2.0.\n\nInstall: pip install tally-cli\n"
FIXED = "# tally\n\nCurrent version: 2.1.\n\nInstall: pip install tally-cli\n\n## License\n\nMIT\n"

WRONG_VERSION = {
    "criterion": "factual-accuracy",
    "issue": "Wrong version",
    "quote": "Current version: 2.0.",
}
NO_LICENSE = {
    "criterion": "completeness",
    "issue": "No License section",
    "missing": "License section (MIT)",
}
PHANTOM = {
    "criterion": "no-hallucination",
    "issue": "Invented flag",
    "quote": "tally --chars notes.txt",
}


def review(canary: str, issues: tuple[dict[str, Any], ...] = (), note: str = "checked") -> str:
    body = review_reply(
        BASE,
        issues,
        detail=note,
        suggestions=["Add an example that reads standard input."],
        canary=canary,
    )
    return f"My review ({note}):\n```json\n{body}\n```"


@pytest.fixture
def project(santa_project: Path) -> Path:
    """The shared project (conftest.py) with a spec and an output."""
    (santa_project / "spec.md").write_text(SPEC, encoding="utf-8")
    (santa_project / "out.md").write_text(OUTPUT, encoding="utf-8")
    return santa_project


def santa(project: Path, *args: str, claude_code: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    if claude_code:
        env["CLAUDECODE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "santa_method", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(err: str) -> str:
    lines = err.strip().splitlines()
    if lines and lines[0].startswith("usage:"):  # argparse's own errors follow the usage
        lines = lines[-1:]
    assert len(lines) == 1 and lines[0].startswith("santa: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def records(project: Path) -> list[dict[str, Any]]:
    return list(runlog.read(project / ".santa" / "log.jsonl").records)


def hook_store(project: Path, opened: dict[str, Any], agent: str, reply: str) -> None:
    """What the hooks do for one reviewer: the PreToolUse guard counts its
    spawn, then its stop hook stores the reply with its transcript."""
    run_id, number = opened["run_id"], opened["round"]
    assert reserve_reviewer(run_id, number) is None
    # Claude Code's transcript of the reviewer: stamped with its id, the
    # instruction first, the whole assignment read, the reply last.
    path = reviewer_transcript(
        project / f"{agent}.jsonl",
        opened["instruction"],
        reply,
        agent_id=agent,
        assignment=opened["assignment"],
    )
    store_reply(run_id, number, reply=reply, agent_id=agent, transcript_path=path)


# --- full loops --------------------------------------------------------------


def _check_story(project: Path, run_id: str) -> None:
    events = [r for r in records(project) if r["run_id"] == run_id]
    assert [(e["event"], e["iteration"]) for e in events] == [
        ("run", 0),
        ("review", 1),
        ("review", 1),
        ("gate", 1),
        ("fix", 1),
        ("review", 2),
        ("review", 2),
        ("gate", 2),
        ("ship", 2),
    ]
    run = events[0]
    assert run["target_sha256"] == sha256(OUTPUT) and run["reviewers"] == 2
    for rv in (events[1], events[2], events[5], events[6]):
        assert rv["valid"] is True and [c["criterion"] for c in rv["checks"]] == list(BASE)
    assert [c["result"] for c in events[1]["checks"]][:3] == ["FAIL", "FAIL", "FAIL"]
    assert {c["result"] for c in events[5]["checks"]} == {"PASS"}
    gate1, gate2 = events[3], events[7]
    assert (gate1["verdict"], gate1["next"]) == ("NAUGHTY", "fix")
    assert {i["criterion"] for i in gate1["issues"]} == {
        "factual-accuracy",
        "completeness",
        "no-hallucination",
    }
    assert (gate2["verdict"], gate2["next"]) == ("NICE", "ship")
    assert events[4]["changed"] == "version 2.1, License section"


def _check_fixer_file(path: str) -> None:
    text = Path(path).read_text(encoding="utf-8")
    assert OUTPUT.strip() in text
    assert "Wrong version" in text and "License section (MIT)" in text
    assert "standard input" not in text  # suggestions are not the fixer's job
    head, suspected = text.split("## Suspected false positives (check these first)")
    assert "Invented flag" in suspected.split("## Flags")[0] and "Invented flag" not in head
    assert "Wrong version" in suspected.split("## Flags")[1]


def fixer_edits(project: Path) -> None:
    """What a fixer does before its fix is logged: change the output (a fix
    that changes nothing is refused)."""
    out = project / "out.md"
    out.write_text(out.read_text(encoding="utf-8") + "\nEdited by the fixer.\n", encoding="utf-8")


@pytest.mark.slow
def test_full_loop_with_the_hook_store(project: Path) -> None:
    start = santa(
        project,
        "round",
        "start",
        "--against",
        "out.md",
        "--spec",
        "spec.md",
        "--json",
        claude_code=True,
    )
    assert start.returncode == 0, start.stderr
    r1 = json.loads(start.stdout)
    run_id = r1["run_id"]
    assert set(r1) >= {"run_id", "round", "assignment", "instruction", "canary"}
    assert load_state(run_id).source == "hook"

    replies = {
        "b": review(r1["canary"], (WRONG_VERSION, NO_LICENSE, PHANTOM), "reviewer b"),
        "c": review(r1["canary"], (WRONG_VERSION, NO_LICENSE), "reviewer c"),
    }
    for name, reply in replies.items():
        hook_store(project, r1, f"r1-{name}", reply)
    # Files are not reviews for a hook run.
    (project / "b.json").write_text(replies["b"])
    refused = santa(project, "gate", "--run", run_id, "b.json")
    assert refused.returncode == 1 and "hook" in one_sentence(refused.stderr)

    gate1 = santa(project, "gate", "--run", run_id, "--json")
    assert gate1.returncode == 1, gate1.stderr
    g1 = json.loads(gate1.stdout)
    assert (g1["verdict"], g1["next"]) == ("NAUGHTY", "fix")
    assert g1["fixer_instruction"].startswith(f"santa-method fix, run {run_id}")
    assert fixer_open(g1["fixer_instruction"])
    _check_fixer_file(g1["fixer_assignment"])
    assert [i["flagged_by"] for i in g1["issues"] if i["criterion"] != "no-hallucination"] == [
        ["B", "C"],
        ["B", "C"],
    ]

    (project / "out.md").write_text(FIXED, encoding="utf-8")
    fix = santa(
        project,
        "log",
        "fix",
        "--run",
        run_id,
        "--data",
        '{"changed": "version 2.1, License section"}',
    )
    assert fix.returncode == 0, fix.stderr
    assert not fixer_open(g1["fixer_instruction"])

    start2 = santa(project, "round", "start", "--run", run_id, "--json", claude_code=True)
    assert start2.returncode == 0, start2.stderr
    r2 = json.loads(start2.stdout)
    assert (
        r2["round"] == 2 and r2["canary"] != r1["canary"] and r2["instruction"] != r1["instruction"]
    )
    assert "## License" in Path(r2["assignment"]).read_text(encoding="utf-8")
    for name in ("b", "c"):
        hook_store(project, r2, f"r2-{name}", review(r2["canary"], note=f"round 2 {name}"))
    gate2 = santa(project, "gate", "--run", run_id)
    assert gate2.returncode == 0, gate2.stdout + gate2.stderr
    assert gate2.stdout.startswith("NICE")
    ship = santa(project, "log", "ship", "--run", run_id)
    assert ship.returncode == 0, ship.stderr
    _check_story(project, run_id)
    assert load_state(run_id).status == "shipped"


def test_full_loop_with_review_files(project: Path) -> None:
    start = santa(
        project,
        "round",
        "start",
        "--against",
        "out.md",
        "--spec",
        "spec.md",
        "--source",
        "files",
        "--json",
    )
    assert start.returncode == 0, start.stderr
    r1 = json.loads(start.stdout)
    run_id = r1["run_id"]
    (project / "b.json").write_text(review(r1["canary"], (WRONG_VERSION, NO_LICENSE, PHANTOM), "b"))
    (project / "c.json").write_text(review(r1["canary"], (WRONG_VERSION, NO_LICENSE), "c"))
    gate1 = santa(project, "gate", "--run", run_id, "b.json", "c.json", "--json")
    assert gate1.returncode == 1
    g1 = json.loads(gate1.stdout)
    assert g1["next"] == "fix"
    _check_fixer_file(g1["fixer_assignment"])
    (project / "out.md").write_text(FIXED, encoding="utf-8")
    assert (
        santa(
            project,
            "log",
            "fix",
            "--run",
            run_id,
            "--data",
            '{"changed": "version 2.1, License section"}',
        ).returncode
        == 0
    )
    r2 = json.loads(santa(project, "round", "start", "--run", run_id, "--json").stdout)
    (project / "b.json").write_text(review(r2["canary"], note="b2"))
    (project / "c.json").write_text(review(r2["canary"], note="c2"))
    gate2 = santa(project, "gate", "--run", run_id, "b.json", "c.json")
    assert gate2.returncode == 0, gate2.stdout + gate2.stderr
    assert santa(project, "log", "ship", "--run", run_id).returncode == 0
    _check_story(project, run_id)


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True, timeout=30)


def _git_project(project: Path) -> None:
    """A repository whose HEAD holds out.md and spec.md. Untracked files are
    part of the change under review, so review files go to a folder git
    ignores (as a user would keep them out of the diff)."""
    _git(project, "init", "-q")
    (project / ".git" / "info").mkdir(exist_ok=True)
    (project / ".git" / "info" / "exclude").write_text("reviews/\n", encoding="utf-8")
    (project / "reviews").mkdir()
    _git(
        project,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "start",
    )
    _git(project, "add", "out.md", "spec.md")
    _git(
        project, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"
    )


def test_loop_over_a_git_diff_recomputed_each_round(project: Path) -> None:
    _git_project(project)
    (project / "out.md").write_text(OUTPUT + "New line: version 2.0 here.\n", encoding="utf-8")
    bad = santa(project, "round", "start", "--against-diff", "--output=x", "--spec", "spec.md")
    assert bad.returncode == 2 and not (project / "x").exists()
    start = santa(
        project, "round", "start", "--against-diff", "HEAD", "--spec", "spec.md", "--json"
    )
    assert start.returncode == 0, start.stderr
    r1 = json.loads(start.stdout)
    run_id = r1["run_id"]
    first = Path(r1["assignment"]).read_text(encoding="utf-8")
    assert "+New line: version 2.0 here." in first and "diff --git" in first
    quote = {"criterion": "factual-accuracy", "issue": "Wrong version", "quote": "version 2.0 here"}
    (project / "reviews" / "b.json").write_text(review(r1["canary"], (quote,), "b"))
    (project / "reviews" / "c.json").write_text(review(r1["canary"], (quote,), "c"))
    g1 = json.loads(
        santa(project, "gate", "--run", run_id, "reviews/b.json", "reviews/c.json", "--json").stdout
    )
    assert g1["next"] == "fix" and g1["issues"][0]["evidence"] == "verified"
    assert "diff against HEAD" in g1["fixer_instruction"]
    (project / "out.md").write_text(OUTPUT + "New line: version 2.1 here.\n", encoding="utf-8")
    assert santa(project, "log", "fix", "--run", run_id).returncode == 0
    r2 = json.loads(santa(project, "round", "start", "--run", run_id, "--json").stdout)
    second = Path(r2["assignment"]).read_text(encoding="utf-8")
    assert "+New line: version 2.1 here." in second and "2.0 here" not in second
    (project / "reviews" / "b.json").write_text(review(r2["canary"], note="b2"))
    (project / "reviews" / "c.json").write_text(review(r2["canary"], note="c2"))
    assert (
        santa(project, "gate", "--run", run_id, "reviews/b.json", "reviews/c.json").returncode == 0
    )
    assert santa(project, "log", "ship", "--run", run_id).returncode == 0
    (run,) = [r for r in records(project) if r["event"] == "run"]
    assert run["target"] == "diff:HEAD"


def test_against_diff_shows_untracked_new_files(project: Path) -> None:
    _git_project(project)
    (project / "NOTES.md").write_text("A brand-new file nobody has added yet.\n", encoding="utf-8")
    (project / "docs").mkdir()
    (project / "docs" / "new.md").write_text("Nested and new.\n", encoding="utf-8")
    (project / "reviews" / "ignored.md").write_text("ignored-by-git text\n", encoding="utf-8")
    (project / ".santa").mkdir()
    (project / ".santa" / "config.yaml").write_text("# santa-config-marker\n", encoding="utf-8")
    start = santa(
        project, "round", "start", "--against-diff", "HEAD", "--spec", "spec.md", "--json"
    )
    assert start.returncode == 0, start.stderr
    opened = json.loads(start.stdout)
    text = Path(opened["assignment"]).read_text(encoding="utf-8")
    assert "+++ b/NOTES.md" in text and "+A brand-new file nobody has added yet." in text
    assert "+++ b/docs/new.md" in text and "+Nested and new." in text
    # Ignored files and santa's own folder are not part of the change.
    assert "ignored-by-git text" not in text and "santa-config-marker" not in text
    # The untracked file is reviewed like the rest: changing it changes the target.
    (project / "reviews" / "b.json").write_text(review(opened["canary"], note="b"))
    (project / "reviews" / "c.json").write_text(review(opened["canary"], note="c"))
    gate = santa(project, "gate", "--run", opened["run_id"], "reviews/b.json", "reviews/c.json")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    (project / "NOTES.md").write_text("Edited after the review.\n", encoding="utf-8")
    ship = santa(project, "log", "ship", "--run", opened["run_id"])
    assert ship.returncode == 1 and "changed after round 1" in one_sentence(ship.stderr)


# --- refusals, in-process ------------------------------------------------------


def start_files(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code, out, err = cli(
        capsys,
        "round",
        "start",
        "--against",
        "out.md",
        "--spec",
        "spec.md",
        "--source",
        "files",
        "--json",
        *extra,
    )
    assert code == 0, err
    return json.loads(out)


def gate_files(
    capsys: pytest.CaptureFixture[str],
    project: Path,
    opened: dict[str, Any],
    b: tuple = (),
    c: tuple = (),
) -> dict[str, Any]:
    (project / "b.json").write_text(review(opened["canary"], b, "b"))
    (project / "c.json").write_text(review(opened["canary"], c, "c"))
    code, out, err = cli(capsys, "gate", "--run", opened["run_id"], "b.json", "c.json", "--json")
    result = json.loads(out)
    assert code == (0 if result["verdict"] == "NICE" else 1), err
    return result


def refused(capsys: pytest.CaptureFixture[str], *args: str, code: int = 1) -> str:
    got, _out, err = cli(capsys, *args)
    assert got == code, err
    return one_sentence(err)


def test_refusals_of_rounds(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r1 = start_files(capsys)
    run_id = r1["run_id"]
    assert "has not been gated" in refused(capsys, "round", "start", "--run", run_id)
    assert "not NICE" in refused(capsys, "log", "ship", "--run", run_id)
    assert "no fix pending" in refused(capsys, "log", "fix", "--run", run_id)
    gate_files(capsys, project, r1, b=(WRONG_VERSION,))
    assert "no fix is logged" in refused(capsys, "round", "start", "--run", run_id)
    assert "not NICE" in refused(capsys, "log", "ship", "--run", run_id)
    assert "gated already" in refused(capsys, "gate", "--run", run_id, "b.json", "c.json")
    fixer_edits(project)
    assert cli(capsys, "log", "fix", "--run", run_id)[0] == 0
    assert "already logged" in refused(capsys, "log", "fix", "--run", run_id)
    r2 = json.loads(cli(capsys, "round", "start", "--run", run_id, "--json")[1])
    assert r2["round"] == 2
    gate_files(capsys, project, r2)
    assert "said 'ship'" in refused(capsys, "round", "start", "--run", run_id)
    assert "no fix pending" in refused(capsys, "log", "fix", "--run", run_id)
    assert cli(capsys, "log", "ship", "--run", run_id)[0] == 0
    assert "shipped" in refused(capsys, "round", "start", "--run", run_id)
    assert "shipped" in refused(capsys, "log", "ship", "--run", run_id)
    assert "shipped" in refused(capsys, "gate", "--run", run_id)


def test_ship_is_refused_when_the_state_says_nice_but_the_log_does_not(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = start_files(capsys)
    run_id = opened["run_id"]
    gate_files(capsys, project, opened, b=(WRONG_VERSION,))  # NAUGHTY: fix
    # A forger rewrites state.json to what a NICE gate would have left.
    state_file = project / ".santa" / "runs" / run_id / "state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["last_gate"].update(verdict="NICE", next="ship")
    for slot in state["rounds"][-1]["slots"].values():
        slot.update(gated_valid=True, gated_verdict="PASS")
    state["fixer"] = None
    state_file.write_text(json.dumps(state), encoding="utf-8")
    message = refused(capsys, "log", "ship", "--run", run_id)
    assert "no NICE gate of round 1" in message and "the run state and the log disagree" in message
    assert load_state(run_id).status == "open"
    assert [r["event"] for r in records(project) if r["run_id"] == run_id] == [
        "run",
        "review",
        "review",
        "gate",
    ]


@pytest.mark.parametrize(("max_fixes", "next_step"), [(3, "fix"), (0, "report")])
def test_a_lone_surrogate_in_a_review_is_gated_through_the_cli(
    project: Path, capsys: pytest.CaptureFixture[str], max_fixes: int, next_step: str
) -> None:
    opened = start_files(capsys, "--max-fixes", str(max_fixes))
    flag = {**WRONG_VERSION, "issue": "Wrong version SURROGATE"}
    # In the JSON text it is an escape; parsed, a lone surrogate UTF-8 cannot encode.
    (project / "b.json").write_text(
        review(opened["canary"], (flag,), "b").replace("SURROGATE", "\\ud800")
    )
    (project / "c.json").write_text(review(opened["canary"], note="c"))
    code, out, err = cli(capsys, "gate", "--run", opened["run_id"], "b.json", "c.json", "--json")
    assert code == 1 and "internal error" not in err, err
    result = json.loads(out)
    assert (result["verdict"], result["next"]) == ("NAUGHTY", next_step)
    assert [i["issue"] for i in result["issues"]] == ["Wrong version \ufffd"]
    assert [r["event"] for r in records(project)][-1] in ("gate", "escalate")


@pytest.mark.parametrize("max_fixes", [0, 1])
def test_no_round_past_the_cap(
    project: Path, capsys: pytest.CaptureFixture[str], max_fixes: int
) -> None:
    opened = start_files(capsys, "--max-fixes", str(max_fixes))
    for n in range(1, max_fixes + 2):
        result = gate_files(capsys, project, opened, b=(WRONG_VERSION,))
        if n <= max_fixes:
            assert result["next"] == "fix"
            fixer_edits(project)
            cli(capsys, "log", "fix", "--run", opened["run_id"])
            opened = json.loads(
                cli(capsys, "round", "start", "--run", opened["run_id"], "--json")[1]
            )
    # A check only (0) reports its problems; a fix loop past its cap escalates.
    ended = "report" if max_fixes == 0 else "escalate"
    assert result["next"] == ended and result["report"].endswith("report.md")
    message = refused(capsys, "round", "start", "--run", opened["run_id"])
    if max_fixes == 0:
        assert "is reported" in message
    else:
        assert f"round {max_fixes + 2} would pass the cap of {max_fixes + 1} round" in message


def test_an_escalated_run_takes_no_more_steps(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = start_files(capsys)["run_id"]
    assert (
        cli(capsys, "log", "escalate", "--run", run_id, "--data", '{"reason": "needs a lawyer"}')[0]
        == 0
    )
    assert (project / ".santa" / "runs" / run_id / "report.md").exists()
    for args in (
        ("round", "start", "--run", run_id),
        ("gate", "--run", run_id),
        ("log", "ship", "--run", run_id),
    ):
        assert "escalated" in refused(capsys, *args)


def test_a_failing_pre_check_opens_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = refused(
        capsys,
        "round",
        "start",
        "--against",
        "out.md",
        "--spec",
        "spec.md",
        "--pre-check",
        "echo broken build; exit 3",
    )
    assert "pre-check" in message and "exit 3" in message and "broken build" in message
    assert not (project / ".santa" / "runs").exists()
    assert not (project / ".santa" / "log.jsonl").exists()


def test_the_pre_check_runs_before_every_fresh_round(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = start_files(capsys, "--pre-check", "test -f ok || test ! -f fixed")
    gate_files(capsys, project, opened, b=(WRONG_VERSION,))
    fixer_edits(project)
    cli(capsys, "log", "fix", "--run", opened["run_id"])
    (project / "fixed").write_text("")
    assert "pre-check" in refused(capsys, "round", "start", "--run", opened["run_id"])
    assert not (project / ".santa" / "runs" / opened["run_id"] / "round-2").exists()
    (project / "ok").write_text("")
    assert cli(capsys, "round", "start", "--run", opened["run_id"])[0] == 0


@pytest.mark.parametrize(
    "args",
    [
        ("round", "start", "--run", "X", "--against", "out.md"),
        ("round", "start", "--spec", "spec.md"),
        ("round", "start", "--against", "out.md"),
        ("round", "start", "--against", "missing.md", "--spec", "spec.md"),
        ("round", "start", "--against", "out.md", "--spec", "spec.md", "--rubric", "nope"),
        ("round", "start", "--against-diff", "HEAD", "--spec", "spec.md"),
        ("log", "fix", "--run", "X", "--data", "{bad"),
        ("log", "fix", "--run", "X", "--iteration", "two"),
        ("log", "waive", "--run", "X", "--data", '{"key": "k"}'),
        ("gate", "--run", "no-such-run"),
    ],
)
def test_usage_errors_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    refused(capsys, *args, code=2)


def test_files_source_is_refused_inside_claude_code(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    assert "hook" in refused(
        capsys, "round", "start", "--against", "out.md", "--spec", "spec.md", "--source", "files"
    )
    assert not (project / ".santa" / "runs").exists()


# --- runs listing, escape, waive, generate ---------------------------------------


def test_runs_listing_and_history(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = start_files(capsys)
    gate_files(capsys, project, shipped)
    cli(capsys, "log", "ship", "--run", shipped["run_id"])
    (project / "other.md").write_text("Another output.\n")
    code, out, _ = cli(
        capsys,
        "round",
        "start",
        "--against",
        "other.md",
        "--spec-text",
        "Say hi.",
        "--source",
        "files",
        "--json",
    )
    other = json.loads(out)["run_id"]

    code, out, _ = cli(capsys, "runs", "--json")
    rows = {r["run_id"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {shipped["run_id"], other}
    assert (rows[shipped["run_id"]]["outcome"], rows[shipped["run_id"]]["rounds"]) == ("shipped", 1)
    assert (rows[other]["outcome"], rows[other]["rounds"]) == ("open", 0)
    code, out, _ = cli(capsys, "runs", "--target", "other.md", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [other]
    code, out, _ = cli(capsys, "runs")
    assert shipped["run_id"] in out and "shipped" in out

    code, out, _ = cli(capsys, "runs", "show", shipped["run_id"], "--json")
    assert [e["event"] for e in json.loads(out)] == ["run", "review", "review", "gate", "ship"]
    code, out, _ = cli(capsys, "runs", "show", shipped["run_id"])
    assert code == 0 and "verdict=NICE" in out
    refused(capsys, "runs", "show", "no-such-run", code=2)


def test_escape_waive_and_generate(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opened = start_files(capsys)
    run_id = opened["run_id"]
    assert "never shipped" in refused(
        capsys, "log", "escape", "--run", run_id, "--data", '{"description": "bug"}'
    )
    code, out, _ = cli(
        capsys,
        "log",
        "generate",
        "--run",
        run_id,
        "--iteration",
        "draft-1",
        "--data",
        '{"tokens": 1200, "cost_usd": 0.02}',
        "--json",
    )
    assert code == 0 and json.loads(out)["iteration"] == "draft-1"
    refused(capsys, "log", "waive", "--run", run_id, "--data", '{"reason": "no key"}', code=2)
    refused(
        capsys, "log", "waive", "--run", run_id, "--data", '{"key": "k", "reason": " "}', code=2
    )
    assert (
        cli(
            capsys,
            "log",
            "waive",
            "--run",
            run_id,
            "--data",
            '{"key": "completeness|missing:license", "reason": "not required here"}',
        )[0]
        == 0
    )
    gate_files(capsys, project, opened)
    cli(capsys, "log", "ship", "--run", run_id)
    refused(capsys, "log", "escape", "--run", run_id, code=2)  # no description
    code, out, _ = cli(
        capsys,
        "log",
        "escape",
        "--run",
        run_id,
        "--iteration",
        "2025-W14 release",
        "--data",
        '{"description": "typo in the License"}',
        "--json",
    )
    assert code == 0 and json.loads(out)["iteration"] == "2025-W14 release"
    # The run folder is git-ignored and may be gone; the log still takes the escape.
    import shutil

    shutil.rmtree(project / ".santa" / "runs" / run_id)
    assert (
        cli(capsys, "log", "escape", "--run", run_id, "--data", '{"description": "a second one"}')[
            0
        ]
        == 0
    )
    events = [r["event"] for r in records(project) if r["run_id"] == run_id]
    assert events.count("escape") == 2 and "waive" in events and "generate" in events
    code, out, _ = cli(capsys, "runs", "--json")
    assert json.loads(out)[0]["escapes"] == 2


# --- defaults from .santa/config.yaml ----------------------------------------------


def test_config_defaults_and_flag_overrides(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".santa").mkdir(exist_ok=True)
    (project / ".santa" / "config.yaml").write_text(
        "rubric: code\nreviewers: 3\nmodels: [opus, sonnet, haiku]\nmax_fixes: 1\n"
        "budget_usd: 2.5\npre_check: 'true'\n"
    )
    state = load_state(start_files(capsys)["run_id"])
    assert (state.rubric, state.reviewers, state.max_fixes) == ("code", 3, 1)
    assert (state.budget_usd, state.pre_check, state.models) == (
        2.5,
        "true",
        ["opus", "sonnet", "haiku"],
    )
    assert list(state.rounds[0].slots) == ["B", "C", "D"]
    assert "### `" in Path(state.rounds[0].assignment).read_text()
    overridden = start_files(
        capsys,
        "--rubric",
        "base",
        "--reviewers",
        "2",
        "--models",
        "opus,haiku",
        "--max-fixes",
        "0",
        "--budget-usd",
        "1",
        "--pre-check",
        "exit 0",
    )
    state = load_state(overridden["run_id"])
    assert (state.rubric, state.reviewers, state.max_fixes) == ("base", 2, 0)
    assert state.models == ["opus", "haiku"]
    assert (state.budget_usd, state.pre_check) == (1.0, "exit 0")
    (project / ".santa" / "config.yaml").write_text("pre_check: 'exit 4'\n")
    assert "exit 4" in refused(capsys, "round", "start", "--against", "out.md", "--spec", "spec.md")
    (project / ".santa" / "config.yaml").write_text("max_fix: 1\n")
    assert "unknown key" in refused(
        capsys, "round", "start", "--against", "out.md", "--spec", "spec.md", code=2
    )


def test_round_status_names_the_next_command(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = start_files(capsys)
    run_id = opened["run_id"]

    def status() -> dict[str, Any]:
        code, out, err = cli(capsys, "round", "status", "--run", run_id, "--json")
        assert code == 0, err
        return json.loads(out)

    now = status()
    assert now["round_open"] and now["open_slots"] == ["B", "C"]
    assert (
        now["instruction"] == opened["instruction"]
        and now["next_step"] == f"santa gate --run {run_id}"
    )
    gate_files(capsys, project, opened, b=(WRONG_VERSION,))
    assert status()["next_step"] == f"santa log fix --run {run_id}"
    assert status()["fixer_instruction"].startswith("santa-method fix")
    fixer_edits(project)
    cli(capsys, "log", "fix", "--run", run_id)
    assert status()["next_step"] == f"santa round start --run {run_id}"
    code, out, _ = cli(capsys, "round", "status", "--run", run_id)
    assert code == 0 and f"next: santa round start --run {run_id}" in out
