"""`/santa-method:verify last` in the real Claude Code: the copy is checked.

A real model, copying its previous reply into `.santa/inputs/last-output.md`,
left out one false sentence, and the run shipped the copy as if it were the
reply. Here the scripted main agent does the same in a second turn of the
same session (`--resume`): the guard must refuse the run, name the sentence,
and let the run open once the copy is the reply, word for word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .scenario_helpers import (
    MARKERS,
    Story,
    bash,
    bash_calls,
    gate,
    json_in,
    log_records,
    main_calls,
    make_project,
    record_gate,
    reviewer_steps,
    run_claude,
    santa_env,
    spawn_reviewers,
)
from .stub_server import PerAgent, Text, ToolUse

pytestmark = pytest.mark.e2e

FALSE_SENTENCE = "It was first published in 2019."
REPLY = (
    "# Release note\n\nThe release adds a --json flag. "
    f"{FALSE_SENTENCE} Install it with pip and run it on any folder.\n"
)
SHORT_COPY = REPLY.replace(FALSE_SENTENCE + " ", "")
LAST = ".santa/inputs/last-output.md"
START = f"santa round start --against {LAST} --spec-text 'Write a release note.' --json"


def test_a_copy_of_last_that_drops_a_sentence_is_refused(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    story = Story()
    project = make_project(tmp_path / "project", "unused\n")
    copy = project / LAST

    def write(content: str) -> Any:
        return ToolUse("Write", {"file_path": str(copy), "content": content})

    main = [
        Text(REPLY),  # session 1: the reply the user saw
        # session 2 (/santa-method:verify last): a sloppy copy first
        write(SHORT_COPY),
        bash(START),
        ToolUse("Read", {"file_path": str(copy)}),
        write(REPLY),
        bash(START),
        spawn_reviewers(story),
        gate(story),
        record_gate(story, bash(lambda: f"santa log ship --run {story.run_id}")),
        Text("Verified: NICE."),
    ]
    server = stub_server(
        {"main": main, "reviewer": PerAgent(reviewer_steps(), reviewer_steps())}, markers=MARKERS
    )
    env = santa_env(claude_env(server))
    first = run_claude(claude_cli, project, env, prompt="Write a release note for the tool.")
    assert first.returncode == 0, first.stderr + first.stdout
    session_id = first.json["session_id"]
    second = run_claude(
        claude_cli, project, env, prompt="/santa-method:verify last", extra=["--resume", session_id]
    )
    assert second.returncode == 0, second.stderr + second.stdout

    refused, opened = bash_calls(server, "santa round start --against")
    assert refused.is_error
    assert "is not your previous reply" in (refused.result or "")
    assert f'left out of the copy: "{FALSE_SENTENCE}"' in (refused.result or "")
    assert not opened.is_error, opened.result
    assert json_in(opened.result or "")["run_id"] == story.run_id
    # The sloppy copy was written, and refused before any run existed.
    writes = [c for c in main_calls(server) if c.name == "Write"]
    assert [c.is_error for c in writes] == [False, False]
    events = [r["event"] for r in log_records(project)]
    assert events == ["run", "review", "review", "gate", "ship"]
    (run,) = [r for r in log_records(project) if r["event"] == "run"]
    assert run["target"] == str(copy.resolve())
    assert copy.read_text(encoding="utf-8") == REPLY
