"""README's permissions for a non-interactive session, run as README gives them.

Why end to end: `claude -p` asks nobody, so a tool the session needs and
was not allowed is refused and the loop stops half-way. The scripted main
agent answers a plain-English request as a model does (through the Skill
tool), then runs the whole loop; only the tools README names are allowed.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from .scenario_helpers import (
    MARKERS,
    Story,
    bash_calls,
    clean_main,
    log_records,
    make_project,
    reviewer_steps,
    run_claude,
    santa_env,
)
from .stub_server import PerAgent, ToolUse, tool_calls

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CLEAN = "# Greeting\n\nHello, world. This document greets its reader.\n"


def readme_session() -> tuple[str, list[str]]:
    """The prompt and the allowed tools of README's `claude -p` line."""
    line = next(
        ln
        for ln in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
        if ln.startswith("claude -p ") and "--allowedTools" in ln
    )
    words = shlex.split(line)
    allowed = words[words.index("--allowedTools") + 1]
    return words[2], allowed.split(",")


def test_readme_names_the_tools_the_loop_uses() -> None:
    _, allowed = readme_session()
    assert {"Skill", "Bash(santa:*)", "Agent", "Read", "Write"} <= set(allowed)
    assert "Bash" not in allowed  # the helper, not any shell command


def _skill_result(server: Any) -> tuple[bool, str]:
    for request in server.requests_for("main"):
        for call in tool_calls(request.body):
            if call.name == "Skill" and call.result is not None:
                return call.is_error, call.result
    raise AssertionError("the main agent's Skill call got no answer")


def _run(stub_server, claude_cli, claude_env, tmp_path: Path, allowed: list[str]):
    prompt, _ = readme_session()
    story = Story()
    main = [
        ToolUse("Skill", {"skill": "santa-method:santa-method"}),
        *clean_main(story),
    ]
    server = stub_server(
        {"main": main, "reviewer": PerAgent(reviewer_steps(), reviewer_steps())},
        markers=MARKERS,
    )
    project = make_project(tmp_path / "project", CLEAN)
    finished = run_claude(
        claude_cli, project, santa_env(claude_env(server)), prompt=prompt, allowed=allowed
    )
    return server, project, finished


def test_a_plain_english_request_runs_the_loop_with_readme_s_tools(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    _, allowed = readme_session()
    server, project, finished = _run(stub_server, claude_cli, claude_env, tmp_path, allowed)
    assert finished.returncode == 0, finished.stderr + finished.stdout
    is_error, said = _skill_result(server)
    assert not is_error, said
    assert [e["event"] for e in log_records(project)] == ["run", "review", "review", "gate", "ship"]
    assert all(not c.is_error for c in bash_calls(server, "santa "))
