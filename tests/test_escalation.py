"""Escalation, trigger by trigger: the cap, the budget, a flag recurring in 3
consecutive rounds, a flag that was fixed and came back, re-reviews
exhausted. Each must end the run (escalated, report written, logged) and
nothing else may: the pure decision is checked on its own too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _faces import EVERY_FACE
from _reviews import review_reply
from _transcripts import reviewer_transcript
from santa_method.cli import main
from santa_method.core.errors import RefusedError
from santa_method.core.escalation import CHECK_ONLY, MAX_REREVIEWS, decide, recurring_flags
from santa_method.core.types import MergedIssue
from santa_method.state import log as runlog
from santa_method.state.events import log_event
from santa_method.state.gating import gate_run
from santa_method.state.rounds import next_round
from santa_method.state.slots import reserve_reviewer, store_reply
from santa_method.state.store import load_state

BASE = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)


def review(canary: str, issues: tuple[dict[str, Any], ...] = (), note: str = "") -> str:
    return review_reply(BASE, issues, detail=note, suggestions=None, canary=canary)


@pytest.fixture
def project(santa_project: Path) -> Path:
    (santa_project / "spec.md").write_text(
        "The README states version 2.1 and has a License section.\n"
    )
    return santa_project


def start(capsys: pytest.CaptureFixture[str], output: str, *extra: str) -> dict[str, Any]:
    Path("out.md").write_text(output, encoding="utf-8")
    code = main(["round", "start", "--against", "out.md", "--spec", "spec.md", "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def gate(project: Path, opened: dict[str, Any], *flags: dict[str, Any]) -> Any:
    """Both reviewers raise `flags` (worded differently, so they are two reviews)."""
    (project / "b.json").write_text(review(opened["canary"], flags, "b"))
    (project / "c.json").write_text(review(opened["canary"], flags, "c"))
    return gate_run(
        checks=EVERY_FACE,
        run_id=opened["run_id"],
        review_files=[str(project / "b.json"), str(project / "c.json")],
    )


def fix_and_reopen(opened: dict[str, Any], output: str) -> dict[str, Any]:
    Path("out.md").write_text(output, encoding="utf-8")
    log_event(opened["run_id"], "fix", data={"changed": "edited"})
    return next_round(opened["run_id"]).to_json()


def assert_escalated(project: Path, run_id: str, result: Any, why: str) -> None:
    assert (result.verdict, result.next) == ("NAUGHTY", "escalate")
    assert why in " ".join(result.reasons)
    assert load_state(run_id).status == "escalated"
    report = project / ".santa" / "runs" / run_id / "report.md"
    assert result.extra["report"] == str(report) and why in report.read_text()
    events = [
        r for r in runlog.read(project / ".santa" / "log.jsonl").records if r["run_id"] == run_id
    ]
    assert events[-2]["event"] == "gate" and events[-2]["next"] == "escalate"
    assert events[-1]["event"] == "escalate" and why in events[-1]["reason"]
    with pytest.raises(RefusedError):
        next_round(run_id)


V20 = {"criterion": "factual-accuracy", "issue": "Wrong version", "quote": "version 2.0"}
LICENSE = {"criterion": "completeness", "issue": "No license", "missing": "License section"}
SPEED = {"criterion": "no-hallucination", "issue": "Unsupported claim", "quote": "fastest counter"}


def test_a_check_only_run_reports_its_problems_and_escalates_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """max_fixes 0 is a check: problems end it NAUGHTY, outcome reported."""
    opened = start(capsys, "tally, version 2.0\n", "--source", "files", "--max-fixes", "0")
    run_id = opened["run_id"]
    result = gate(project, opened, V20)
    assert (result.verdict, result.next) == ("NAUGHTY", "report")
    assert "fixer_instruction" not in result.extra
    assert "fixes exhausted" not in " ".join(result.reasons)
    assert load_state(run_id).status == "reported"
    report = project / ".santa" / "runs" / run_id / "report.md"
    assert result.extra["report"] == str(report)
    text = report.read_text()
    assert "A check only" in text and "escalation report" not in text and "Wrong version" in text
    events = [
        r for r in runlog.read(project / ".santa" / "log.jsonl").records if r["run_id"] == run_id
    ]
    assert events[-1]["event"] == "gate" and events[-1]["next"] == "report"
    assert not [r for r in events if r["event"] == "escalate"]
    with pytest.raises(RefusedError):
        next_round(run_id)


def test_a_check_only_run_without_valid_reviews_still_escalates() -> None:
    """Nothing was checked, so nothing can be reported: a person looks."""
    decision = decide(
        "rereview",
        round_number=1,
        max_fixes=0,
        earlier_flags=[],
        current_flags=[],
        rereviews=MAX_REREVIEWS,
    )
    assert decision.next == "escalate"
    found = decide("fix", round_number=1, max_fixes=0, earlier_flags=[], current_flags=[])
    assert (found.next, found.reasons) == ("report", (CHECK_ONLY,))


def test_cap_with_max_fixes_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opened = start(capsys, "tally, version 2.0\n", "--source", "files", "--max-fixes", "1")
    assert gate(project, opened, V20).next == "fix"
    opened = fix_and_reopen(opened, "tally, version 2.1, the fastest counter\n")
    result = gate(project, opened, SPEED)
    assert_escalated(project, opened["run_id"], result, "fixes exhausted (1 of 1 used)")


def test_budget_from_the_config(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".santa").mkdir()
    (project / ".santa" / "config.yaml").write_text("budget_usd: 1.0\n")
    monkeypatch.setenv("CLAUDECODE", "1")
    opened = start(capsys, "tally, version 2.0\n")

    def store_both(opened: dict[str, Any], flags: tuple[dict[str, Any], ...]) -> Any:
        for name in ("b", "c"):
            reply = review(opened["canary"], flags, name)
            agent = f"{opened['round']}{name}"
            # As the hooks do: the guard counts the spawn, the transcript carries the agent id.
            assert reserve_reviewer(opened["run_id"], opened["round"]) is None
            path = reviewer_transcript(
                project / f"{opened['round']}-{name}.jsonl",
                opened["instruction"],
                reply,
                agent_id=agent,
                assignment=opened["assignment"],
            )
            store_reply(
                opened["run_id"],
                opened["round"],
                reply=reply,
                agent_id=agent,
                transcript_path=path,
                cost_usd=0.2,
                tokens=1000,
            )
        return gate_run(checks=EVERY_FACE, run_id=opened["run_id"])

    first = store_both(opened, (V20,))
    assert first.next == "fix"  # $0.40 of $1.00, and another round's $0.40 fits
    reviews = [
        r for r in runlog.read(project / ".santa" / "log.jsonl").records if r["event"] == "review"
    ]
    assert [r["cost_usd"] for r in reviews] == [0.2, 0.2]
    opened = fix_and_reopen(opened, "tally, version 2.1, the fastest counter\n")
    result = store_both(opened, (SPEED,))
    # Inside Claude Code the gate keeps the headless loop's rule: it stops
    # before a round the budget cannot pay for ($0.80 spent, $0.40 more needed).
    assert_escalated(
        project,
        opened["run_id"],
        result,
        "the budget cannot pay for another fix and round "
        "(spent $0.8000, about $0.4000 more needed, budget $1.00)",
    )


def test_a_flag_in_three_consecutive_rounds(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = start(capsys, "tally, version 2.0\n", "--source", "files")
    assert gate(project, opened, V20).next == "fix"
    opened = fix_and_reopen(opened, "tally: a counter, version 2.0 still\n")
    assert gate(project, opened, V20).next == "fix"  # twice is not yet a pattern
    opened = fix_and_reopen(opened, "tally counts; version 2.0 again\n")
    result = gate(project, opened, V20)
    assert_escalated(project, opened["run_id"], result, "flagged in 3 consecutive rounds")


def test_a_fixed_flag_that_came_back(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opened = start(capsys, "tally, version 2.0\n", "--source", "files")
    assert gate(project, opened, V20).next == "fix"
    opened = fix_and_reopen(opened, "tally, version 2.1, no license\n")
    assert gate(project, opened, LICENSE).next == "fix"
    opened = fix_and_reopen(opened, "tally, version 2.0, MIT license\n")
    result = gate(project, opened, V20)
    assert_escalated(project, opened["run_id"], result, "(a fix regression)")


def test_rereviews_exhausted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opened = start(capsys, "tally, version 2.1\n", "--source", "files")
    run_id = opened["run_id"]
    (project / "b.json").write_text(review(opened["canary"]))
    (project / "bad.json").write_text('{"verdict": "PASS"}')
    first = gate_run(
        checks=EVERY_FACE,
        run_id=run_id,
        review_files=[str(project / "b.json"), str(project / "bad.json")],
    )
    assert first.next == "rereview"
    for n in (1, 2):
        assert next_round(run_id).open_slots == ("C",)
        result = gate_run(
            checks=EVERY_FACE, run_id=run_id, review_files=[str(project / "bad.json")]
        )
        assert result.next == ("rereview" if n == 1 else "escalate")
    assert_escalated(project, run_id, result, "re-reviewed 2 times")


def test_escalation_never_overrides_a_nice_round(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = start(
        capsys,
        "tally, version 2.1\n",
        "--source",
        "files",
        "--max-fixes",
        "0",
        "--budget-usd",
        "0.01",
    )
    runlog.append(
        project / ".santa" / "log.jsonl",
        {"run_id": opened["run_id"], "event": "fix", "iteration": 1, "cost_usd": 5},
    )
    assert gate(project, opened).next == "ship"


# --- the pure decision --------------------------------------------------------


def flag(criterion: str, quote: str) -> MergedIssue:
    return MergedIssue(criterion, "problem", "verified", ("B",), quote=quote)


def test_decide_keeps_the_rounds_own_answer_when_nothing_triggers() -> None:
    x = flag("factual-accuracy", "version 2.0")
    assert (
        decide("fix", round_number=2, max_fixes=3, earlier_flags=[[x]], current_flags=[x]).next
        == "fix"
    )
    assert (
        decide(
            "rereview", round_number=4, max_fixes=3, earlier_flags=[], current_flags=[], rereviews=1
        ).next
        == "rereview"
    )
    assert (
        decide(
            "fix",
            round_number=1,
            max_fixes=3,
            earlier_flags=[],
            current_flags=[x],
            cost_usd=0.99,
            budget_usd=1.0,
        ).next
        == "fix"
    )
    assert (
        decide(
            "fix",
            round_number=1,
            max_fixes=3,
            earlier_flags=[],
            current_flags=[x],
            cost_usd=None,
            budget_usd=1.0,
        ).next
        == "fix"
    )
    assert (
        decide(
            "fix",
            round_number=1,
            max_fixes=3,
            earlier_flags=[],
            current_flags=[x],
            cost_usd=1.0,
            budget_usd=1.0,
        ).next
        == "escalate"
    )
    assert (
        decide(
            "rereview",
            round_number=1,
            max_fixes=3,
            earlier_flags=[],
            current_flags=[],
            cost_usd=2,
            budget_usd=1,
        ).next
        == "escalate"
    )


def test_recurring_flags_follow_the_problem_across_changed_outputs() -> None:
    x, y = flag("factual-accuracy", "version 2.0"), flag("completeness", "License")
    wider = flag("factual-accuracy", "Current version 2.0.")
    other_criterion = flag("compliance", "version 2.0")
    ((_, why),) = recurring_flags([[x], [wider]], [x])
    assert "3 consecutive rounds" in why
    assert recurring_flags([[x], [y]], [other_criterion]) == []
    ((_, why),) = recurring_flags([[x], [y]], [x])
    assert "fix regression" in why
    assert recurring_flags([[y], [x]], [x]) == []
