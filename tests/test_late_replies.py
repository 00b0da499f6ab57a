"""Reviewers in the background: a late valid FAIL always counts, through the real hooks.

The story this guards against: the main agent started its reviewers in the
background, gated before they replied, re-reviewed, and a valid FAIL that
came in later was dropped without a word while the gate said NICE. Every
test here replays such a session through the plugin's own hook commands
(`santa hook pretooluse-agent`, `santa hook subagent-stop`, fed the JSON
Claude Code sends) and the `santa` commands the main agent runs.

The rules: a valid FAIL from a reviewer the guard let start counts against
the round it was started for, whenever it arrives; only an extra PASS may
go uncounted, and then the hook's answer and the next gate say so; while a
started reviewer may still reply the gate answers `wait`, and one that never
replies counts as missing once its deadline has passed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from _hooked import OUTPUT, QUOTE, Project, open_hook_round, review

#: Past the deadline of every reviewer started so far (it is 30 minutes).
OVERDUE = 31


@pytest.fixture
def p(tmp_path: Path) -> Project:
    return open_hook_round(tmp_path)


def fail(p: Project) -> str:
    return review(p.canary, quote=QUOTE)


def passing(p: Project) -> str:
    return review(p.canary)


def _labels(result: dict[str, Any]) -> list[tuple[str, bool, str | None]]:
    return [(r["label"], r["valid"], r["verdict"]) for r in result["reviews"]]


def _extra(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["label"]: e for e in result.get("extra_replies", [])}


def _gated_before_replies(p: Project) -> None:
    """r1 and r2 started in the background; the gate ran only once their
    deadline had passed (before it, it would have said wait); the round is
    re-reviewed and two more reviewers, r3 and r4, are started."""
    p.spawn(background=True, agent="r1")
    p.spawn(background=True, agent="r2")
    p.clock_on(OVERDUE)
    rc, first = p.gate()
    assert rc == 1 and (first["verdict"], first["next"]) == ("NAUGHTY", "rereview")
    assert [(r["label"], r["valid"]) for r in first["reviews"]] == [("B", False), ("C", False)]
    assert all("did not reply within 30 min" in r["errors"][0] for r in first["reviews"])


def _rereview(p: Project) -> None:
    reopened = p.santa("round", "start", "--run", p.run_id, "--json")
    assert reopened.returncode == 0, reopened.stderr
    p.spawn(background=True, agent="r3")
    p.spawn(background=True, agent="r4")


def _ship_refused(p: Project, *needles: str) -> str:
    shipped = p.santa("log", "ship", "--run", p.run_id)
    assert shipped.returncode == 1, shipped.stdout
    for needle in needles:
        assert needle in shipped.stderr, shipped.stderr
    assert p.state().status == "open"
    return shipped.stderr


def _fix_with_the_late_flag(result: dict[str, Any], label: str) -> None:
    assert (result["verdict"], result["next"]) == ("NAUGHTY", "fix")
    (problem,) = result["issues"]
    assert problem["quote"] == QUOTE and problem["flagged_by"] == [label]
    assert result["fixer_instruction"]


# --- the three orders of the story ------------------------------------------------


def test_a_fail_after_the_gate_before_the_rereview_counts(p: Project) -> None:
    _gated_before_replies(p)
    answer = p.stop("r1", fail(p))
    # Re-reviewing now would spend reviewers on a round that already failed.
    reopened = p.santa("round", "start", "--run", p.run_id, "--json")
    assert reopened.returncode == 1, "the round went on as if the FAIL never came"
    assert "reviewer D's FAIL arrived after" in reopened.stderr
    assert f"santa gate --run {p.run_id}" in reopened.stderr
    note = answer.noted()
    assert "counts against round 1" in note and f"santa gate --run {p.run_id}" in note
    _ship_refused(p, "reviewer D's FAIL")

    rc, again = p.gate()
    assert rc == 1
    assert _labels(again) == [("B", False, None), ("C", False, None), ("D", True, "FAIL")]
    _fix_with_the_late_flag(again, "D")
    assert _extra(again)["D"]["counted"] is True and _extra(again)["D"]["agent_id"] == "r1"


def test_a_fail_after_the_fresh_reviewers_replied_counts(p: Project) -> None:
    _gated_before_replies(p)
    _rereview(p)
    p.stop("r3", passing(p)).allowed()
    p.stop("r4", passing(p)).allowed()
    # Both slots are filled; r1 was started for this round all the same.
    late_fail = p.stop("r1", fail(p))
    # r2's PASS cannot be counted: every slot has its reply.
    late_pass = p.stop("r2", passing(p))
    slots = p.slots()
    assert (slots["B"].agent_id, slots["C"].agent_id) == ("r3", "r4")

    rc, result = p.gate()
    assert result["verdict"] == "NAUGHTY" and rc == 1, "the late FAIL was dropped"
    assert "counts against round 1" in late_fail.noted()
    note = late_pass.noted()  # said out loud
    assert "not counted" in note and "every slot" in note
    assert _labels(result) == [("B", True, "PASS"), ("C", True, "PASS"), ("D", True, "FAIL")]
    _fix_with_the_late_flag(result, "D")
    extra = _extra(result)
    assert extra["D"]["counted"] is True
    assert extra["E"]["counted"] is False and extra["E"]["verdict"] == "PASS"
    assert "every slot" in extra["E"]["why"]
    _ship_refused(p, "not NICE")


def test_a_fail_after_the_nice_gate_stops_the_ship(p: Project) -> None:
    _gated_before_replies(p)
    _rereview(p)
    p.stop("r3", passing(p)).allowed()
    p.stop("r4", passing(p)).allowed()
    rc, nice = p.gate()
    assert rc == 0 and (nice["verdict"], nice["next"]) == ("NICE", "ship")
    p.stop("r3", passing(p)).allowed()  # its hook again (plugin and vendored): nothing new

    answer = p.stop("r1", fail(p))
    _ship_refused(p, "reviewer D's FAIL arrived after round 1's NICE gate")
    note = answer.noted()
    assert "counts against round 1" in note and "cannot ship" in note
    assert p.stop("r1", fail(p)).noted() == note  # stored once, said the same way
    assert list(p.state().rounds[0].extras) == ["D"]
    status = p.santa("round", "status", "--run", p.run_id)
    assert f"next: santa gate --run {p.run_id}" in status.stdout

    rc, again = p.gate()
    assert rc == 1
    assert _labels(again) == [("B", True, "PASS"), ("C", True, "PASS"), ("D", True, "FAIL")]
    _fix_with_the_late_flag(again, "D")
    _ship_refused(p, "not NICE")


def test_a_fail_that_fills_a_reopened_slot_counts_and_the_pass_it_displaces_is_named(
    p: Project,
) -> None:
    _gated_before_replies(p)
    _rereview(p)
    p.stop("r1", fail(p)).allowed()  # the round is open: it fills slot B
    p.stop("r3", passing(p)).allowed()
    note = p.stop("r4", passing(p)).noted()
    assert "not counted" in note and "r4" in note

    gated = p.santa("gate", "--run", p.run_id)  # the readable form names it too
    assert gated.returncode == 1, gated.stderr
    assert gated.stdout.startswith("NAUGHTY  next: fix")
    assert "reply D (agent r4): PASS, not counted: every slot" in gated.stdout
    # The log keeps what the gate said: B's FAIL counted, D named, not counted.
    logged = [json.loads(line) for line in Path(p.env["SANTA_LOG"]).read_text().splitlines()]
    reviews = [(r["label"], r["verdict"]) for r in logged if r["event"] == "review"]
    assert reviews[-2:] == [("B", "FAIL"), ("C", "PASS")]
    last_gate = [r for r in logged if r["event"] == "gate"][-1]
    assert (last_gate["verdict"], last_gate["next"]) == ("NAUGHTY", "fix")
    assert [(e["label"], e["agent_id"], e["counted"]) for e in last_gate["extra_replies"]] == [
        ("D", "r4", False)
    ]


# --- waiting for reviewers ---------------------------------------------------------


def test_the_gate_waits_for_started_reviewers_and_names_them(p: Project) -> None:
    p.spawn(background=True, agent="r1")
    p.spawn(background=True, agent="r2")
    p.stop("r1", passing(p)).allowed()
    rc, waiting = p.gate()
    assert rc == 1 and waiting["next"] == "wait" and waiting["verdict"] is None
    (c,) = waiting["waiting"]
    assert c["label"] == "C" and 0 <= c["seconds"] < 60
    text = p.santa("gate", "--run", p.run_id).stdout
    assert "next: wait" in text and "waiting for C, started " in text and " s ago" in text
    assert "task notification" in text
    # Nothing was gated: the round is still open, and nothing can ship.
    state = p.state()
    assert state.rounds[-1].open and state.last_gate is None
    status = p.santa("round", "status", "--run", p.run_id)
    assert "waiting for C, started" in status.stdout
    _ship_refused(p)

    p.stop("r2", fail(p)).allowed()
    rc, result = p.gate()
    assert rc == 1
    _fix_with_the_late_flag(result, "C")


def test_a_reviewer_that_never_replies_counts_as_missing_after_its_deadline(p: Project) -> None:
    p.spawn(background=True, agent="r1")
    p.spawn(background=True, agent="r2")
    p.stop("r1", passing(p)).allowed()
    p.clock_on(29)
    assert p.gate()[1]["next"] == "wait"
    p.clock_on(2)  # 31 minutes since it started: it was killed, or will never reply
    rc, result = p.gate()
    assert rc == 1 and (result["verdict"], result["next"]) == ("NAUGHTY", "rereview")
    (missing,) = [r for r in result["reviews"] if not r["valid"]]
    assert missing["label"] == "C" and "did not reply within 30 min" in missing["errors"][0]

    # The way out: a fresh reviewer for the missing slot, and the run ships.
    reopened = p.santa("round", "start", "--run", p.run_id, "--json")
    assert reopened.returncode == 0, reopened.stderr
    p.spawn(background=True, agent="r3")
    p.stop("r3", passing(p)).allowed()
    rc, nice = p.gate()
    assert rc == 0 and nice["next"] == "ship", nice
    shipped = p.santa("log", "ship", "--run", p.run_id)
    assert shipped.returncode == 0, shipped.stderr


# --- a late reply to a round that is over -----------------------------------------


def test_a_late_fail_of_a_round_a_fix_followed_is_recorded_against_that_round(
    p: Project,
) -> None:
    p.spawn(background=True, agent="r1")
    p.spawn(background=True, agent="r2")
    p.stop("r1", fail(p)).allowed()
    p.clock_on(OVERDUE)
    rc, first = p.gate()
    assert rc == 1 and first["next"] == "fix"
    (p.root / "README.md").write_text(OUTPUT.replace("2.0", "2.1"), encoding="utf-8")
    assert p.santa("log", "fix", "--run", p.run_id).returncode == 0
    second = p.santa("round", "start", "--run", p.run_id, "--json")
    assert second.returncode == 0, second.stderr

    note = p.stop("r2", fail(p)).noted()  # its transcript starts with round 1's instruction
    assert "round 1" in note and "NAUGHTY already" in note
    first_round = p.state().rounds[0]
    (late,) = first_round.extras.values()
    assert late.agent_id == "r2" and late.reply == fail(p)


def test_a_late_fail_after_the_ship_is_recorded_and_named(p: Project) -> None:
    _gated_before_replies(p)
    _rereview(p)
    p.stop("r3", passing(p)).allowed()
    p.stop("r4", passing(p)).allowed()
    assert p.gate()[1]["next"] == "ship"
    assert p.santa("log", "ship", "--run", p.run_id).returncode == 0

    note = p.stop("r1", fail(p)).noted()
    assert "shipped" in note and f"santa log escape --run {p.run_id}" in note
    (late,) = p.state().rounds[0].extras.values()
    assert late.agent_id == "r1"


# --- which start a reply answers ---------------------------------------------------


def _round_with_starts(*minutes_ago: float) -> tuple[Any, datetime]:
    """A round whose reviewers were started that many minutes ago, in that order."""
    from santa_method.state.model.run import Round, Spawn

    now = datetime.now(UTC)
    r = Round(
        round=1,
        canary="c",
        boundary="b",
        assignment="a.md",
        instruction="i",
        output_sha256="h",
        open=True,
        rereviews=1,
        capacity=2,
        slots={"B": None, "C": None},
    )
    r.spawns = [
        Spawn(at=(now - timedelta(minutes=m)).isoformat(), opening=n, id=f"t{n}")
        for n, m in enumerate(minutes_ago)
    ]
    return r, now


def test_a_reply_answers_the_start_just_before_its_transcript_began() -> None:
    from santa_method.state import waiting

    # r1 started 40 minutes ago (overdue), r3 a minute ago; r1 replies first.
    r, now = _round_with_starts(40, 1)
    answered = waiting.answer(r, "r1", now - timedelta(minutes=40))
    assert answered is not None and answered.id == "t0"
    # r3 is still awaited: the old reviewer's reply did not take its place.
    (still,) = waiting.awaited(r, now)
    assert (still.label, 50 <= still.seconds <= 70) == ("B", True)
    assert waiting.answer(r, "r1", None) is answered  # its hook again: the same start
    assert waiting.answer(r, "r3", now - timedelta(seconds=59)).id == "t1"
    assert waiting.awaited(r, now) == [] and waiting.answer(r, "r9", now) is None


def test_without_a_transcript_time_a_reply_answers_the_oldest_start() -> None:
    from santa_method.state import waiting

    # The cautious guess: the reviewer still out is the newest, so the gate waits for it.
    r, now = _round_with_starts(40, 1)
    assert waiting.answer(r, "r3", None).id == "t0"
    (still,) = waiting.awaited(r, now)
    assert still.label == "B"
    # And once it is past its deadline it counts as missing, with the reason.
    assert waiting.awaited(r, now + timedelta(minutes=30)) == []
    reason = waiting.missing(r, now + timedelta(minutes=30))["B"]
    assert "did not reply within 30 min" in reason and "31 min ago" in reason


def test_the_texts_a_model_follows_say_to_wait_and_give_the_deadline_the_gate_uses() -> None:
    from santa_method.state.waiting import DEADLINE_MINUTES

    root = Path(__file__).resolve().parents[1]
    for name in ("SKILL.md", "commands/verify.md"):
        text = " ".join((root / name).read_text(encoding="utf-8").split())
        assert "`wait`" in text and "task notification" in text, name
        assert f"silent for {DEADLINE_MINUTES} minutes" in text, name
        assert "santa gate --run RUN_ID --json" in text, name
