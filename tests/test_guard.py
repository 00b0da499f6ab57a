"""The guard reads commands as the libraries it stands in for would.

`claude_code/guard.py` reads a command into words without `shlex` and
recognises Claude Code's variables without `re` (both cost more than the
guard's budget): here the libraries are the oracle.
"""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from santa_method.claude_code import guard

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
