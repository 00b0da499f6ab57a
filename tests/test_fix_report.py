"""The fixer's report: `fixed`, `not an issue`, `needs input`, read by the state layer.

A fixer that needs a fact nobody gave must ask, and the run stops for a
person (reason `needs-input`) without another review round; a fix that
changed nothing is no fix unless every flag was answered "not an issue".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _faces import EVERY_FACE
from santa_method.core.errors import RefusedError
from santa_method.core.fixreport import fixer_order, parse_report
from santa_method.core.types import MergedIssue
from santa_method.state.events import log_event
from santa_method.state.fixes import record_fixer_reply
from santa_method.state.gating import gate_run
from santa_method.state.metrics import compute
from santa_method.state.report import build
from santa_method.state.rounds import RoundOpened, next_round
from santa_method.state.store import load_state, run_dir
from test_runs import OUTPUT, WRONG_VERSION, home, log_records, open_run, review

__all__ = ["home"]

MISSING_ROW = {
    "criterion": "completeness",
    "issue": "The row for TLY-1377 is missing",
    "missing": "A row for TLY-1377",
}


def _flag(key: str, evidence: str = "verified") -> MergedIssue:
    return MergedIssue("completeness", f"issue {key}", evidence, ("B",), key=key)  # type: ignore[arg-type]


def test_report_lines_in_every_form_and_markup() -> None:
    flags = [_flag("a"), _flag("b"), _flag("c"), _flag("d")]
    notes = (
        "I changed the version.\n"
        "1. fixed: set the version to 2.1\n"
        "- **2. not an issue:** the spec allows it\n"
        "`3. needs input: what is the price of TLY-1377?`\n"
    )
    report = parse_report(notes, flags)
    assert [a.answer for a in report.answers] == [
        "fixed",
        "not an issue",
        "needs input",
        "unanswered",
    ]
    assert report.answers[1].text == "the spec allows it"
    assert [q.text for q in report.questions] == ["what is the price of TLY-1377?"]
    assert [a.key for a in report.answers] == ["a", "b", "c", "d"]
    assert not report.all_not_an_issue
    assert parse_report("1. Not an issue - fine\n2. NOT AN ISSUE: fine", flags[:2]).all_not_an_issue
    assert not parse_report("", flags[:2]).all_not_an_issue


def test_numbers_follow_the_assignment_order_suspected_first() -> None:
    flags = [_flag("real"), _flag("suspect", "unverified")]
    assert [f.key for f in fixer_order(flags)] == ["suspect", "real"]
    report = parse_report("1. not an issue: not in the output\n2. fixed: done", flags)
    assert {a.key: a.answer for a in report.answers} == {"suspect": "not an issue", "real": "fixed"}


def test_a_question_beyond_the_list_still_counts() -> None:
    report = parse_report("1. fixed: x\n7. needs input: which licence?", [_flag("a")])
    assert [q.text for q in report.questions] == ["which licence?"]


# --- through the run state ---------------------------------------------------


def _gated(home: Path, *issues: dict) -> RoundOpened:
    opened = open_run(home, source="files")
    (home / "b.json").write_text(review(opened.canary, issues))
    (home / "c.json").write_text(review(opened.canary, issues))
    result = gate_run(
        checks=EVERY_FACE,
        run_id=opened.run_id,
        review_files=[str(home / "b.json"), str(home / "c.json")],
    )
    assert result.next == "fix"
    return opened


def test_needs_input_escalates_restores_and_asks(home: Path) -> None:
    opened = _gated(home, WRONG_VERSION, MISSING_ROW)
    # The fixer fixed one flag and guessed nothing for the other, but also
    # left a placeholder in the file: none of it may stand.
    (home / "out.md").write_text(OUTPUT.replace("2.0", "2.1") + "TLY-1377,Item 1377,0.00\n")
    notes = "1. fixed: version 2.1\n2. needs input: What is the price of TLY-1377?"
    record = log_event(opened.run_id, "fix", data={"notes": notes})
    assert record["event"] == "escalate" and record["reason"] == "needs-input"
    (question,) = record["questions"]
    assert question["question"] == "What is the price of TLY-1377?"
    assert question["criterion"] == "completeness" and question["key"].startswith("completeness|")
    assert record["restored"] is True
    assert (home / "out.md").read_text(encoding="utf-8") == OUTPUT  # back to what was reviewed
    state = load_state(opened.run_id)
    assert state.status == "escalated" and state.fixes == []
    assert state.escalation is not None and state.escalation.reasons == ["needs-input"]
    assert log_records(home, "fix") == []
    # No further round, no ship.
    with pytest.raises(RefusedError):
        next_round(opened.run_id)
    report = build(opened.run_id)
    assert report["questions"][0]["question"] == "What is the price of TLY-1377?"
    text = (run_dir(opened.run_id) / "report.md").read_text(encoding="utf-8")
    assert "The fixer needs input" in text and "What is the price of TLY-1377?" in text
    metrics = compute(runs_log(home))
    assert metrics["needs_input"]["runs"] == 1
    assert metrics["needs_input"]["questions"][0]["question"] == "What is the price of TLY-1377?"


def runs_log(home: Path) -> list[dict]:
    return log_records(home)


def test_a_fix_that_changed_nothing_is_refused(home: Path) -> None:
    opened = _gated(home, WRONG_VERSION)
    with pytest.raises(RefusedError, match="unchanged, so it is not a fix"):
        log_event(opened.run_id, "fix", data={"notes": "1. fixed: version"})
    assert load_state(opened.run_id).fixes == [] and log_records(home, "fix") == []
    # Answering every flag "not an issue" may change nothing: the next round tests it.
    record = log_event(opened.run_id, "fix", data={"notes": "1. not an issue: 2.0 is right"})
    assert record["event"] == "fix"
    assert record["report"][0]["answer"] == "not an issue"
    assert next_round(opened.run_id).round == 2


def test_a_report_with_more_answers_than_problems_is_refused(home: Path) -> None:
    """The fixer answered problems its assignment never listed: it read some
    other list (a stale assignment, its own idea of the flags), so its fix
    is no answer to this round's problems and is not accepted."""
    flags = [_flag("a")]
    assert parse_report("1. fixed: x\n2. fixed: y\n3. not an issue: z", flags).extra == (2, 3)
    assert parse_report("1. fixed: x\n1. fixed: said again", flags).extra == ()
    opened = _gated(home, WRONG_VERSION)
    (home / "out.md").write_text(OUTPUT.replace("2.0", "2.1"))
    with pytest.raises(RefusedError, match="answers problems 2 and 3, but its assignment lists 1"):
        log_event(
            opened.run_id,
            "fix",
            data={"notes": "1. fixed: version\n2. fixed: license\n3. fixed: flags"},
        )
    assert load_state(opened.run_id).fixes == [] and log_records(home, "fix") == []
    record = log_event(opened.run_id, "fix", data={"notes": "1. fixed: version 2.1"})
    assert record["event"] == "fix"


def test_the_kept_fixer_reply_reaches_the_log_and_the_report(home: Path) -> None:
    opened = _gated(home, WRONG_VERSION)
    instruction = load_state(opened.run_id).fixer.instruction
    assert not record_fixer_reply(instruction + " and more", "1. fixed: x")
    assert record_fixer_reply(instruction, "Done.\n1. fixed: set the version to 2.1")
    (home / "out.md").write_text(OUTPUT.replace("2.0", "2.1"))
    record = log_event(opened.run_id, "fix")
    assert record["notes"].endswith("1. fixed: set the version to 2.1")
    assert [a["answer"] for a in record["report"]] == ["fixed"]
    log_event(opened.run_id, "escalate", data={"reason": "stopped by hand"})
    text = (run_dir(opened.run_id) / "report.md").read_text(encoding="utf-8")
    assert "fixer: Done." in text and "1. fixed: set the version to 2.1" in text
    assert "(no notes)" not in text


def test_a_kept_question_escalates_a_fix_logged_without_notes(home: Path) -> None:
    opened = _gated(home, MISSING_ROW)
    instruction = load_state(opened.run_id).fixer.instruction
    record_fixer_reply(instruction, "1. needs input: What is the price of TLY-1377?")
    record = log_event(opened.run_id, "fix")
    assert record["event"] == "escalate" and record["reason"] == "needs-input"
    assert record["restored"] is False  # the fixer changed nothing
    gates = log_records(home, "gate")
    assert json.dumps(gates[-1]["issues"][0]["criteria"]) == '["completeness"]'


def test_needs_input_puts_back_the_exact_bytes_reviewed(home: Path) -> None:
    # CRLF line endings, and a fixer that left bytes that are not UTF-8:
    # the file gets back exactly what the reviewers saw, and the fixer's
    # bytes are kept as they were.
    reviewed = OUTPUT.replace("\n", "\r\n").encode("utf-8")
    (home / "out.md").write_bytes(reviewed)
    opened = _gated(home, WRONG_VERSION, MISSING_ROW)
    left = reviewed.replace(b"2.0", b"2.1") + b"price: \xa3 0.00\r\n"
    (home / "out.md").write_bytes(left)
    notes = "1. fixed: version 2.1\n2. needs input: What is the price of TLY-1377?"
    record = log_event(opened.run_id, "fix", data={"notes": notes})
    assert record["restored"] is True
    assert (home / "out.md").read_bytes() == reviewed
    kept = run_dir(opened.run_id) / "round-1" / "fix.txt"
    assert kept.read_bytes() == left
    assert build(opened.run_id)["unreviewed_fix"]["target_holds"] == "reviewed"


def test_an_unchanged_crlf_file_is_no_fix_to_keep(home: Path) -> None:
    reviewed = OUTPUT.replace("\n", "\r\n").encode("utf-8")
    (home / "out.md").write_bytes(reviewed)
    opened = _gated(home, MISSING_ROW)
    record = log_event(opened.run_id, "fix", data={"notes": "1. needs input: the price?"})
    assert record["restored"] is False
    assert not (run_dir(opened.run_id) / "round-1" / "fix.txt").exists()
    assert (home / "out.md").read_bytes() == reviewed
