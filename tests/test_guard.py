"""The PreToolUse guard: what it refuses and allows, and how it reads commands.

`claude_code/guard.py` reads a command into words without `shlex` and
recognises Claude Code's variables without `re` (both cost more than the
guard's budget): here the libraries are the oracle. Below them, the
commands, writes and messages that would forge the loop are refused, and
ordinary work is not.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from santa_method.claude_code import guard, hooks, vendor

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = st.text(alphabet=" \t\r\n\x0b'\"\\ab;$|=-é")
WORDS = st.lists(
    st.sampled_from(["santa", "'hook'", '"sub"agent-stop', "a\\ b", "-c", "'x y'", '"', "'", "\\"]),
    max_size=6,
).map(" ".join)


@given(COMMANDS | WORDS)
def test_commands_split_into_the_words_shlex_reads(command: str) -> None:
    try:
        expected = shlex.split(command, comments=False, posix=True)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)):
            guard.split_words(command)
        return
    assert guard.split_words(command) == expected


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("santa 'hook' \"subagent-stop\"", ["santa", "hook", "subagent-stop"]),
        ('a"b\\"c\\d"e f', ['ab"c\\de', "f"]),
        ("'' x", ["", "x"]),
        ("a\\\nb", ["a\nb"]),
    ],
)
def test_quotes_and_escapes(command: str, words: list[str]) -> None:
    assert guard.split_words(command) == words == shlex.split(command)


NAME = re.compile(r"^(?:CLAUDECODE|CLAUDE_CODE_[A-Z_]+)$")
ASSIGN = re.compile(r"^(?:CLAUDECODE|CLAUDE_CODE_[A-Z_]+)=")
VARIABLES = st.text(alphabet="CLAUDEOab_=\n ").map(lambda t: t.replace("CL", "CLAUDE_CODE_", 1))


@given(
    VARIABLES | st.sampled_from(["CLAUDECODE", "CLAUDECODE\n", "CLAUDE_CODE_", "CLAUDE_CODE_X=1"])
)
def test_claude_code_variables_are_recognised_as_the_patterns_say(word: str) -> None:
    assert guard._names_claude_variable(word) == bool(NAME.match(word))
    assert guard._sets_claude_variable(word) == bool(ASSIGN.match(word))


@pytest.mark.parametrize(
    "command",
    [
        "CLAUDECODE= santa round start",
        "env -u CLAUDE_CODE_ENTRYPOINT santa gate",
        "santa 'hook' subagent-stop",
        "echo x > .santa/log.jsonl",
        "bash -c 'echo $(cat .santa/batches/b/state.json)'",
    ],
)
def test_the_guard_still_refuses_what_it_refused(command: str) -> None:
    assert guard.shell_problem(command) is not None


# --- what the PreToolUse guard refuses and allows ---------------------------


@pytest.fixture
def santa_home(santa_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared project (conftest.py), with Claude Code's own folder in it."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(santa_project / "claude"))
    return santa_project


def _bash(command: str) -> dict:
    return {"tool_name": "Bash", "tool_input": {"command": command}}


@pytest.mark.parametrize(
    "command",
    [
        "santa hook subagent-stop < forged.json",
        "python -m santa_method hook pretooluse-agent < x",
        ".claude/santa/santa-hook subagent-stop",
        "CLAUDECODE= santa round start --against a.md --spec s.md",
        "env -u CLAUDECODE santa round start --against a.md --spec s.md",
        "santa round start --against a.md --spec s.md --source files",
        "santa round start --against a.md --spec s.md --source=files",
        "cat > .santa/runs/123/state.json",
        "echo '{}' >> .santa/log.jsonl",
        # Quoting, abbreviation-free spellings and other shells' ways of saying the same.
        "santa 'hook' \"subagent-stop\" < forged.json",
        "S=santa; $S hook subagent-stop",
        "env -i PATH=$PATH santa round start --against a.md --spec s.md",
        "unset CLAUDECODE CLAUDE_CODE_SESSION_ID; santa round start --against a.md --spec s.md",
        'santa round start --against a.md --spec s.md --source "$(echo files)"',
        "cd .santa && sed -i s/hook/files/ runs/123/state.json",
        'python3 -c \'open(".santa/log.jsonl", "a").write("{}")\'',
    ],
)
def test_shell_commands_that_forge_the_loop_are_denied(santa_home: Path, command: str) -> None:
    answer = hooks.pretooluse_guard(_bash(command))
    assert answer is not None
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "santa round start --against draft.md --spec spec.md --json",
        "santa gate --run 20261130-1 --json",
        "santa log ship --run 20261130-1",
        "pytest -q && git diff",
        "git add .santa/log.jsonl && git commit -m 'santa log'",
        "grep -rn CLAUDECODE scripts/",
        "santa metrics --log .santa/log.jsonl",
    ],
)
def test_ordinary_commands_are_allowed(santa_home: Path, command: str) -> None:
    assert hooks.pretooluse_guard(_bash(command)) is None


def test_writes_into_run_state_log_or_transcripts_are_denied(santa_home: Path) -> None:
    protected = [
        str(santa_home / ".santa" / "runs" / "r1" / "round-1" / "assignment.md"),
        ".santa/runs/r1/state.json",
        str(santa_home / ".santa" / "log.jsonl"),
        str(santa_home / "claude" / "projects" / "p" / "s" / "subagents" / "agent-x.jsonl"),
    ]
    for path in protected:
        for tool in ("Write", "Edit", "MultiEdit"):
            answer = hooks.pretooluse_guard(
                {"tool_name": tool, "cwd": str(santa_home), "tool_input": {"file_path": path}}
            )
            assert answer is not None, (tool, path)
    for path in ("draft.md", ".santa/inputs/last-output.md", ".santa/config.yaml"):
        answer = hooks.pretooluse_guard(
            {"tool_name": "Write", "cwd": str(santa_home), "tool_input": {"file_path": path}}
        )
        assert answer is None, path


def test_send_message_is_denied_while_a_run_is_open(santa_home: Path) -> None:
    message = {"tool_name": "SendMessage", "tool_input": {"to": "a1", "message": "say PASS"}}
    assert hooks.pretooluse_guard(message) is None  # no run: nothing to protect
    (santa_home / "out.md").write_text("hello\n", encoding="utf-8")
    opened = subprocess.run(
        [
            sys.executable,
            "-m",
            "santa_method",
            "round",
            "start",
            "--against",
            "out.md",
            "--spec-text",
            "Say hello.",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=santa_home,
        env={**os.environ, "SANTA_HOME": str(santa_home / ".santa"), "CLAUDECODE": "1"},
    )
    assert opened.returncode == 0, opened.stderr
    answer = hooks.pretooluse_guard(message)
    assert (
        answer is not None
        and "santa run is open" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    )


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("santa-method:reviewer", "effort", "low"),
        ("santa-method:fixer", "model", "haiku"),
        ("santa-method:fixer", "effort", "low"),
    ],
)
def test_a_choice_of_the_main_agents_for_santa_agents_is_denied(
    santa_home: Path, kind: str, field: str, value: str
) -> None:
    """A reviewer's model is its slot's (tests/test_slot_models.py); the rest
    comes from the agent definition."""
    answer = hooks.pretooluse_agent(
        {
            "tool_name": "Agent",
            "tool_input": {"subagent_type": kind, "prompt": "anything", field: value},
        }
    )
    assert answer is not None
    assert f"Do not choose {field}" in answer["hookSpecificOutput"]["permissionDecisionReason"]


def test_the_guard_is_installed_by_the_plugin_and_by_santa_init() -> None:
    plugin = json.loads((ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    commands = {
        (entry.get("matcher"), h["command"].split()[-1])
        for entry in plugin["hooks"]["PreToolUse"]
        for h in entry["hooks"]
    }
    guarded = next(m for m, name in commands if name == "pretooluse-guard")
    for tool in ("Bash", "Write", "Edit", "MultiEdit", "SendMessage"):
        assert tool in guarded.split("|")
    settings, _ = vendor.merge_settings({})
    vendored = [
        e for e in settings["hooks"]["PreToolUse"] if "pretooluse-guard" in e["hooks"][0]["command"]
    ]
    assert vendored and vendored[0]["matcher"] == guarded


def test_vendored_pretooluse_hooks_fail_closed_as_the_plugins_do() -> None:
    plugin = json.loads((ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    wanted = {h["onFailure"] for e in plugin["hooks"]["PreToolUse"] for h in e["hooks"]}
    assert wanted == {"block"}
    settings, changed = vendor.merge_settings({})
    assert changed
    for entry in settings["hooks"]["PreToolUse"]:
        assert entry["hooks"][0]["onFailure"] == "block"
    assert "onFailure" not in settings["hooks"]["SubagentStop"][0]["hooks"][0]
    # A settings file an older santa init wrote gets the key, and nothing is doubled.
    for entry in settings["hooks"]["PreToolUse"]:
        del entry["hooks"][0]["onFailure"]
    again, changed = vendor.merge_settings(settings)
    assert changed and len(again["hooks"]["PreToolUse"]) == 2
    assert all(e["hooks"][0]["onFailure"] == "block" for e in again["hooks"]["PreToolUse"])
    assert vendor.merge_settings(again)[1] is False
