"""`last` is checked against the session's transcript before a run opens on it.

The records below have the shape Claude Code 2.1.332 writes (seen in the
end-to-end runs): queue and attachment records, `api-request-blob` records
that carry `role: user` messages but are not turns, tool results as user
records, and assistant messages. The hook is run as Claude Code runs it:
`santa hook pretooluse-guard` with the hook JSON on stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from santa_method.claude_code.last_reply import (
    difference,
    last_targets,
    normalise,
    previous_reply,
)

SANTA = str(Path(sys.executable).parent / "santa")
REPLY = (
    "The release adds a --json flag. It was first published in 2019. "
    "Install it with pip and run it on any folder."
)
FALSE_SENTENCE = "It was first published in 2019."


def user(text: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}, **extra}


def assistant(*blocks: dict[str, Any], ident: str = "m1") -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"id": ident, "role": "assistant", "content": list(blocks)},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(ident: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": "Bash", "input": {"command": "ls"}}


def tool_result(ident: str) -> dict[str, Any]:
    return user([{"type": "tool_result", "tool_use_id": ident, "content": "a.md"}])


def session(*current: dict[str, Any]) -> list[dict[str, Any]]:
    """A first turn that replied REPLY (after a tool call), then the verify request."""
    return [
        {"type": "queue-operation", "content": "Write a release note"},
        user("Write a release note"),
        {"type": "attachment"},
        {
            "type": "api-request-blob",
            "message": {"role": "user", "content": [text("<system-reminder>x")]},
        },
        assistant(text("Let me look first."), tool_use("t1"), ident="m1"),
        tool_result("t1"),
        assistant(text(REPLY), ident="m2"),
        {"type": "last-prompt"},
        user("/santa-method:verify last"),
        user([text("Verify with the Santa Method. Arguments: last")], isMeta=True),
        *current,
    ]


def test_previous_reply_is_the_last_turns_text() -> None:
    assert previous_reply(session()) == [REPLY, f"Let me look first.\n\n{REPLY}"]
    # What the agent says in the current turn ("write it, then verify it") counts too.
    records = session(assistant(text("A new note."), tool_use("t2"), ident="m3"))
    assert previous_reply(records) == [REPLY, f"Let me look first.\n\n{REPLY}", "A new note."]


def test_one_message_split_over_records_is_joined() -> None:
    records = [
        user("hi"),
        assistant(text("Part one."), ident="m1"),
        assistant(text("Part two."), ident="m1"),
        user("verify last"),
    ]
    assert previous_reply(records) == ["Part one.\n\nPart two."]


def test_no_earlier_reply() -> None:
    assert previous_reply([user("verify your last reply")]) == []
    assert previous_reply([]) == []
    assert previous_reply([user("a"), assistant(tool_use("t1")), tool_result("t1")]) == []


def test_a_faithful_copy_passes_and_one_missing_sentence_is_named() -> None:
    candidates = [REPLY]
    assert difference(REPLY + "\n", candidates) is None
    assert difference("\r\n" + REPLY + "  \r\n", candidates) is None
    dropped = REPLY.replace(FALSE_SENTENCE + " ", "")
    said = difference(dropped, candidates)
    assert said == f'left out of the copy: "{FALSE_SENTENCE}"'
    changed = REPLY.replace("2019", "2021")
    said = difference(changed, candidates) or ""
    assert f'left out of the copy: "{FALSE_SENTENCE}"' in said
    assert 'not in your reply: "It was first published in 2021."' in said
    assert difference(REPLY.replace(". ", ".\n"), candidates) is not None  # a line break added


def test_normalise_keeps_the_text() -> None:
    assert normalise("a  \r\nb\r\n\n") == "a\nb"
    assert normalise("e\u0301") == "\u00e9"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("santa round start --against .santa/inputs/last-output.md --spec s.md --json", 1),
        ("santa round start --against=.santa/inputs/last-output.md --spec-text x", 1),
        ("cd /p && /opt/bin/santa round start --against /p/.santa/inputs/last-output.md", 1),
        ("bash -c 'santa round start --against .santa/inputs/last-output.md --spec s'", 1),
        ("python -m santa_method round start --against .santa/inputs/last-output.md", 1),
        ("santa round start --against draft.md --spec s.md --json", 0),
        ("santa round start --run RUN --json", 0),  # a later round: the fixer may have edited it
        ("cat .santa/inputs/last-output.md", 0),
    ],
)
def test_which_commands_open_a_run_on_last(command: str, expected: int) -> None:
    assert len(last_targets(command, "/p")) == expected


# --- the hook, as Claude Code runs it ----------------------------------------------


def guard(project: Path, command: str, transcript: Path | None) -> str:
    payload: dict[str, Any] = {
        "session_id": "s",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if transcript is not None:
        payload["transcript_path"] = str(transcript)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "SANTA_"))}
    env.update(CLAUDECODE="1", CLAUDE_PROJECT_DIR=str(project))
    done = subprocess.run(
        [SANTA, "hook", "pretooluse-guard"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return ""
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    return str(answer["permissionDecisionReason"])


@pytest.fixture
def project(project: Path) -> Path:
    """The shared project (conftest.py) as a git repository with `.santa/inputs/`."""
    (project / ".santa" / "inputs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


START = "santa round start --against .santa/inputs/last-output.md --spec-text 'A note.' --json"


def write_transcript(folder: Path, records: list[dict[str, Any]]) -> Path:
    path = folder / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_guard_refuses_a_copy_that_differs_and_allows_the_reply(
    project: Path, tmp_path: Path
) -> None:
    transcript = write_transcript(tmp_path, session())
    copy = project / ".santa" / "inputs" / "last-output.md"
    copy.write_text(REPLY.replace(FALSE_SENTENCE + " ", ""), encoding="utf-8")
    reason = guard(project, START, transcript)
    assert "is not your previous reply" in reason
    assert f'left out of the copy: "{FALSE_SENTENCE}"' in reason
    assert "Write your previous reply to .santa/inputs/last-output.md again" in reason
    copy.write_text(REPLY + "\n", encoding="utf-8")
    assert guard(project, START, transcript) == ""
    # Other targets and other commands are not its business.
    assert guard(project, "santa round start --against draft.md --spec-text x", transcript) == ""


def test_without_a_transcript_a_run_on_last_is_refused(project: Path, tmp_path: Path) -> None:
    (project / ".santa" / "inputs" / "last-output.md").write_text(REPLY, encoding="utf-8")
    assert "gave no transcript" in guard(project, START, None)
    assert "cannot be read" in guard(project, START, tmp_path / "missing.jsonl")
    empty = write_transcript(tmp_path, [user("verify your last reply")])
    assert "no previous reply" in guard(project, START, empty)
