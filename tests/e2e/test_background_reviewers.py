"""End-to-end: reviewers in the background, and a FAIL that comes after a gate.

Why: Claude Code starts agents in the background unless told otherwise, so
a main agent may gate before its reviewers replied. The real CLI, the
plugin's hooks and a scripted model replay that: the gate must wait for the
reviewers it started, and a valid FAIL that arrives after a gate must still
keep the output from shipping. The model is the only scripted part; a
reviewer's reply is held back until the main agent has gated, so the order
of events is the one under test, not a race.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _hooked import clock_on

from .scenario_helpers import (
    PLUGIN_REVIEWER,
    Story,
    bash,
    bash_calls,
    gate,
    json_in,
    log_records,
    make_project,
    read_assignment,
    record_gate,
    review,
    run_claude,
    santa_env,
)
from .stub_server import (
    PerAgent,
    StubServer,
    Text,
    ToolUse,
    WaitUntil,
    last_tool_result_text,
    notified,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SPEC = "Write a one-line release note. The current release is version 2.0.\n"
DRAFT = "# Release\n\nThe current release is version 3.1 and it ships today.\n"
FLAG = {"issue": "The spec says the current release is version 2.0.", "quote": "version 3.1"}
#: How long a held-back reviewer waits for its cue before it gives up (the
#: test then fails on what the run did, not on a hang).
HOLD = 90.0
#: Seconds a held-back reviewer still takes after its cue: the cue is given
#: while the main agent is mid-turn, and its reply must come after that turn
#: (Claude Code holds a notification that arrives mid-turn until another one).
AFTER_CUE = 1.5


def _background(story: Story) -> Callable[[dict[str, Any]], list[ToolUse]]:
    """Record the round start's output, then start its reviewers in ONE turn,
    in the background (Claude Code's default for the Agent tool)."""

    def step(body: dict[str, Any]) -> list[ToolUse]:
        story.runs.append(json_in(last_tool_result_text(body, "Bash")))
        return [
            ToolUse(
                "Agent",
                {
                    "description": f"reviewer {n + 1}",
                    "subagent_type": PLUGIN_REVIEWER,
                    "prompt": story.instruction,
                    "run_in_background": True,
                },
            )
            for n in range(int(story.runs[-1]["reviewers"]))
        ]

    return step


def _held(cue: threading.Event, **options: Any) -> Callable[[dict[str, Any]], Text]:
    """A reviewer's final reply, sent only once `cue` is set."""

    def step(body: dict[str, Any]) -> Text:
        if cue.wait(HOLD):
            time.sleep(AFTER_CUE)
        return Text(json.dumps(review(body, **options)))

    return step


def _answer(**options: Any) -> Callable[[dict[str, Any]], Text]:
    def step(body: dict[str, Any]) -> Text:
        return Text(json.dumps(review(body, **options)))

    return step


def _run(story: Story, command: str) -> Callable[[dict[str, Any]], ToolUse]:
    """A santa command on the story's run, built when the step runs (the id is known by then)."""
    return bash(lambda: command.replace("RUN", story.run_id))


def _state_file(project: Path, story: Story) -> Path:
    return project / ".santa" / "runs" / story.run_id / "state.json"


def _results(server: StubServer, needle: str) -> list[tuple[bool, str]]:
    return [(c.is_error, c.result or "") for c in bash_calls(server, needle)]


def test_a_gate_before_background_reviewers_replied_waits_for_them(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    story = Story()
    project = make_project(tmp_path / "project", DRAFT, SPEC)
    second_may_reply = threading.Event()

    def gated(body: dict[str, Any]) -> bool:
        """Record the gate's answer once; then wait for both reviewers."""
        if not story.gates:
            story.gates.append(json_in(last_tool_result_text(body, "Bash")))
            second_may_reply.set()  # the FAIL comes after the gate
        return notified(2)(body)

    main = [
        bash("santa round start --against draft.md --spec spec.md --json"),
        _background(story),
        gate(story),  # at once, before any reviewer replied
        WaitUntil(gated, _run(story, "santa gate --run RUN --json")),
        record_gate(story, Text("The gate asked for a fix; stopping here.")),
    ]
    server = stub_server(
        {
            "main": main,
            "reviewer": PerAgent(
                [read_assignment, _answer(note="quick-pass")],
                [read_assignment, _held(second_may_reply, fails={"factual-accuracy": FLAG})],
            ),
        },
    )
    run = run_claude(claude_cli, project, santa_env(claude_env(server)), timeout=180)
    assert run.returncode == 0, run.stderr + run.stdout

    assert len(story.gates) == 2, f"the gates said: {story.gates}"
    first, second = story.gates
    assert (first["verdict"], first["next"]) == (None, "wait")
    assert {w["label"] for w in first["waiting"]} <= {"B", "C"} and first["waiting"]
    assert all("waiting for" in r for r in first["reasons"])
    assert (second["verdict"], second["next"]) == ("NAUGHTY", "fix")
    (problem,) = second["issues"]
    assert problem["quote"] == FLAG["quote"]
    events = [(r["event"], r.get("verdict"), r.get("next")) for r in log_records(project)]
    assert events[0][0] == "run" and ("gate", "NAUGHTY", "fix") in events
    assert not any(e[0] == "ship" for e in events)


def test_a_late_fail_after_a_nice_gate_stops_the_ship(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    """The issue's story: background reviewers r1, r2 were past their
    deadline at the first gate (re-review), r3 and r4 passed (NICE), and
    r1's valid FAIL came after that: the ship is refused and the round's
    new gate asks for a fix."""
    story = Story()
    project = make_project(tmp_path / "project", DRAFT, SPEC)
    fail_may_come, pass_may_come = threading.Event(), threading.Event()

    def overdue_then_gate(body: dict[str, Any]) -> ToolUse:
        # Half an hour passes for r1 and r2 (their starts move into the past).
        clock_on(_state_file(project, story), 31)
        return _run(story, "santa gate --run RUN --json")(body)

    def nice_then_fail(body: dict[str, Any]) -> bool:
        """Record the NICE gate once and let r1's FAIL come; then wait for it."""
        if not fail_may_come.is_set():
            story.gates.append(json_in(last_tool_result_text(body, "Bash")))
            fail_may_come.set()
        return notified(3)(body)

    def after_fix_gate(body: dict[str, Any]) -> Text:
        story.gates.append(json_in(last_tool_result_text(body, "Bash")))
        pass_may_come.set()
        return Text("A late FAIL stopped the ship; the gate asks for a fix.")

    main = [
        bash("santa round start --against draft.md --spec spec.md --json"),
        _background(story),
        overdue_then_gate,
        record_gate(story, bash(lambda: f"santa round start --run {story.run_id} --json")),
        _background(story),
        WaitUntil(notified(2), _run(story, "santa gate --run RUN --json")),  # r3, r4: NICE
        WaitUntil(nice_then_fail, _run(story, "santa log ship --run RUN")),
        _run(story, "santa gate --run RUN --json"),
        after_fix_gate,
        WaitUntil(notified(4), Text("Done.")),
    ]
    server = stub_server(
        {
            "main": main,
            "reviewer": PerAgent(
                [read_assignment, _held(fail_may_come, fails={"factual-accuracy": FLAG})],
                [read_assignment, _held(pass_may_come, note="late-pass")],
                [read_assignment, _answer(note="fresh-pass-1")],
                [read_assignment, _answer(note="fresh-pass-2")],
            ),
        },
    )
    run = run_claude(claude_cli, project, santa_env(claude_env(server)), timeout=240)
    assert run.returncode == 0, run.stderr + run.stdout

    assert len(story.gates) == 3, f"the gates said: {story.gates}"
    first, nice, again = story.gates
    assert (first["verdict"], first["next"]) == ("NAUGHTY", "rereview")
    assert all("did not reply within 30 min" in r["errors"][0] for r in first["reviews"])
    assert (nice["verdict"], nice["next"]) == ("NICE", "ship")
    (shipped,) = _results(server, "santa log ship")
    assert shipped[0] and "reviewer D's FAIL arrived after round 1's NICE gate" in shipped[1]
    assert (again["verdict"], again["next"]) == ("NAUGHTY", "fix")
    assert [(r["label"], r["verdict"]) for r in again["reviews"]] == [
        ("B", "PASS"),
        ("C", "PASS"),
        ("D", "FAIL"),
    ]
    (problem,) = again["issues"]
    assert problem["flagged_by"] == ["D"] and problem["quote"] == FLAG["quote"]
    records = log_records(project)
    assert not any(r["event"] == "ship" for r in records)
    assert [(r["verdict"], r["next"]) for r in records if r["event"] == "gate"] == [
        ("NAUGHTY", "rereview"),
        ("NICE", "ship"),
        ("NAUGHTY", "fix"),
    ]
    # r2's PASS came last, after the fix was asked for: kept, never counted.
    state = json.loads(_state_file(project, story).read_text(encoding="utf-8"))
    extras = state["rounds"][0]["extras"]
    assert {e["verdict"] for e in extras.values()} == {"FAIL", "PASS"}
