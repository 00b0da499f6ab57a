"""End-to-end: each reviewer slot on its own configured Claude model, its cost counted.

Why: inside Claude Code the main agent picks a reviewer's model with the
Agent tool, so only the plugin's guard can hold it to the user's choice,
and only the reviewer's transcript says what it spent. The real CLI, the
plugin's hooks and a scripted model run a verify with `models: [haiku,
sonnet]`: the stub must receive each reviewer's requests on its slot's
model, the log and `santa metrics` must hold their tokens and list-price
cost, and a budget must stop the run before a round it cannot pay for.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from santa_method.headless.backends import prices
from santa_method.headless.backends.base import Tokens

from .scenario_helpers import (
    MARKERS,
    PLUGIN_REVIEWER,
    PYTHON,
    Story,
    answer,
    bash,
    bash_calls,
    gate,
    json_in,
    log_records,
    make_project,
    read_assignment,
    record_gate,
    run_claude,
    santa_env,
)
from .stub_server import PerAgent, StubServer, Text, ToolUse, Usage, last_tool_result_text

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLEAN = "# Greeting\n\nHello, world. This document greets its reader.\n"
SPEC = "Write a one-line release note. The current release is version 2.0.\n"
FLAWED = "# Release\n\nThe current release is version 3.1 and it ships today.\n"
FLAG = {"issue": "The spec says the current release is version 2.0.", "quote": "version 3.1"}
#: What Claude Code sends for each alias (tests/e2e/stub_server.py notes the mapping).
SENT = {"haiku": "claude-haiku-5-5", "sonnet": "claude-sonnet-5-5"}
USAGE = Usage(input_tokens=1000, output_tokens=50, cache_read_input_tokens=200)


def _spawn_on_models(story: Story) -> Callable[[dict[str, Any]], list[ToolUse]]:
    """Record the round start's output, then start one reviewer per open
    slot in ONE turn, each with the model the helper printed for its slot."""

    def step(body: dict[str, Any]) -> list[ToolUse]:
        story.runs.append(json_in(last_tool_result_text(body, "Bash")))
        opened = story.runs[-1]
        calls = []
        for n, label in enumerate(opened["open_slots"]):
            call = {
                "description": f"reviewer {n + 1}",
                "subagent_type": PLUGIN_REVIEWER,
                "prompt": story.instruction,
                "run_in_background": False,
            }
            if opened["models"][label]:
                call["model"] = opened["models"][label]
            calls.append(ToolUse("Agent", call))
        return calls

    return step


def _project(root: Path, draft: str, config: str) -> Path:
    project = make_project(root, draft, SPEC)
    (project / ".santa").mkdir()
    (project / ".santa" / "config.yaml").write_text(config, encoding="utf-8")
    return project


def _server(stub_server: Any, main: list[Any], reviewer: Any) -> StubServer:
    return stub_server({"main": main, "reviewer": reviewer}, markers=MARKERS, usage=USAGE)


def _per_call(model: str) -> float:
    cost = prices.cost(model, Tokens(input=1000, output=50, cache_read=200))
    assert cost is not None
    return cost


def test_two_slots_run_on_their_configured_models_and_their_cost_is_counted(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    story = Story()
    main = [
        bash("santa round start --against draft.md --spec spec.md --json"),
        _spawn_on_models(story),
        gate(story),
        record_gate(story, bash(lambda: f"santa log ship --run {story.run_id}")),
        Text("Verified: NICE."),
    ]
    reviewers = PerAgent([read_assignment, answer()], [read_assignment, answer()])
    server = _server(stub_server, main, reviewers)
    project = _project(tmp_path / "project", CLEAN, "models: [haiku, sonnet]\n")
    done = run_claude(claude_cli, project, santa_env(claude_env(server)))
    assert done.returncode == 0, done.stderr + done.stdout

    assert story.runs[0]["models"] == {"B": "haiku", "C": "sonnet"}
    assert (story.gates[0]["verdict"], story.gates[0]["next"]) == ("NICE", "ship")
    (shipped,) = bash_calls(server, "santa log ship")
    assert not shipped.is_error, shipped.result

    # The stub saw each reviewer (one conversation per agent id) on its slot's model only.
    records = log_records(project)
    reviews = {r["label"]: r for r in records if r["event"] == "review"}
    assert set(reviews) == {"B", "C"}
    calls: dict[str, int] = {}
    for label, alias in (("B", "haiku"), ("C", "sonnet")):
        agent = reviews[label]["agent_id"]
        asked = server.requests_for("reviewer", agent)
        assert asked and all(r.headers["x-claude-code-agent-id"] == agent for r in asked)
        assert {r.body["model"] for r in asked} == {SENT[alias]}, label
        calls[label] = len(asked)
        # The log names the model that answered, and what its calls used and cost.
        assert reviews[label]["model"] == SENT[alias]
        assert reviews[label]["token_detail"] == {
            "input": 1000 * len(asked),
            "output": 50 * len(asked),
            "cache_read": 200 * len(asked),
            "cache_write": 0,
            "total": 1250 * len(asked),
        }
        assert reviews[label]["cost_usd"] == pytest.approx(_per_call(SENT[alias]) * len(asked))

    metrics = subprocess.run(
        [PYTHON, "-m", "santa_method", "metrics", "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert metrics.returncode == 0, metrics.stderr
    cost = json.loads(metrics.stdout)["cost"]
    expected = sum(
        _per_call(SENT[a]) * calls[label] for label, a in (("B", "haiku"), ("C", "sonnet"))
    )
    assert cost["cost_usd_total"] == pytest.approx(expected)
    assert cost["tokens_total"] == 1250 * (calls["B"] + calls["C"])


def test_a_budget_stops_the_run_before_a_round_it_cannot_pay_for(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    # One round costs two calls per reviewer: about $0.0053 on these models
    # and this usage. A budget of $0.008 pays for it, not for a second round.
    round_cost = 2 * (_per_call(SENT["haiku"]) + _per_call(SENT["sonnet"]))
    assert round_cost < 0.008 < 2 * round_cost
    story = Story()
    main = [
        bash("santa round start --against draft.md --spec spec.md --json"),
        _spawn_on_models(story),
        gate(story),
        record_gate(story, bash(lambda: f"santa round start --run {story.run_id} --json")),
        Text("The run was stopped by its budget."),
    ]
    fails = {"factual-accuracy": FLAG}
    reviewers = PerAgent(
        [read_assignment, answer(fails=fails)], [read_assignment, answer(fails=fails)]
    )
    server = _server(stub_server, main, reviewers)
    config = "models: [haiku, sonnet]\nbudget_usd: 0.008\n"
    project = _project(tmp_path / "project", FLAWED, config)
    done = run_claude(claude_cli, project, santa_env(claude_env(server)))
    assert done.returncode == 0, done.stderr + done.stdout

    (verdict,) = story.gates
    assert (verdict["verdict"], verdict["next"]) == ("NAUGHTY", "escalate")
    (reason,) = [r for r in verdict["reasons"] if "budget" in r]
    assert "cannot pay for another fix and round" in reason
    # The next round is refused; the run ended escalated, with the reason logged.
    (next_round,) = bash_calls(server, "santa round start --run")
    assert next_round.is_error and "escalated" in (next_round.result or "")
    records = log_records(project)
    assert [r["event"] for r in records][-1] == "escalate"
    assert reason in records[-1]["reason"]
    assert not any(r["event"] == "ship" for r in records)
    state = json.loads(
        (project / ".santa" / "runs" / story.run_id / "state.json").read_text(encoding="utf-8")
    )
    assert state["status"] == "escalated"
    spent = sum(r["cost_usd"] for r in records if r["event"] == "review")
    assert spent == pytest.approx(round_cost)
