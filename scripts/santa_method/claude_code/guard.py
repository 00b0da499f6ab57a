"""The PreToolUse guard: refuse tool calls that would bypass the santa loop.

Claude Code runs it on every Bash, Write, Edit, MultiEdit, NotebookEdit and
SendMessage call of a session, run or no run, so with no run open it must
cost little more than starting the interpreter (ARCHITECTURE.md states the
budget, `bench/guard.py` measures it). It imports `os` and the hook
protocol and nothing else up front: not `json` (see hook_json.py), not `re`
or `shlex`, which bring `enum`, `functools` and `collections` and would cost
as much as the interpreter's own start. Commands are read into words by
`split_words`, which reads them exactly as `shlex.split` does (tests hold
the two to the same answers). What a check needs only when it applies
(reading the transcript for `last`, the state of unfinished runs) is
imported there.

Refusals (deny) stop the shortcuts a model takes; every internal error ends
in a refusal too (`fail_closed`), never in silent acceptance.
"""

from __future__ import annotations

import os

# What collections.abc re-exports; `os` has imported it already, `collections` costs.
from _collections_abc import Mapping

from santa_method.claude_code.protocol import (
    HOOK_NAMES,
    ROLES,
    deny,
    fail_closed,
    vendored_agent,
    with_dependencies,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Reply: TypeAlias = dict[str, Any] | None  # the JSON to print; None means "allow"

_CLAUDE_CODE = "CLAUDE_CODE_"
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_BLANKS = " \t\r\n"  # where shlex splits words
_SHELL_SYNTAX = ";&|<>`$\n"  # chaining, redirection, substitution
_WRITERS = frozenset(
    {"tee", "sed", "cp", "mv", "rm", "truncate", "dd", "awk", "perl", "ruby", "node"}
)


def _claude_variable(name: str) -> bool:
    """Whether `name` is one of Claude Code's variables: CLAUDECODE or CLAUDE_CODE_*."""
    if name == "CLAUDECODE":
        return True
    rest = name[len(_CLAUDE_CODE) :]
    return name.startswith(_CLAUDE_CODE) and bool(rest) and all(c in _NAME_CHARS for c in rest)


def _names_claude_variable(word: str) -> bool:
    """`word` is such a name (a newline after it read as the end of the word, as `$` does)."""
    return _claude_variable(word[:-1] if word.endswith("\n") else word)


def _sets_claude_variable(word: str) -> bool:
    """`word` assigns such a variable (`NAME=...`)."""
    name, equals, _ = word.partition("=")
    return bool(equals) and _claude_variable(name)


def split_words(command: str) -> list[str]:
    """`shlex.split(command)`: the words the way shlex reads a POSIX command
    (blanks split words; single quotes keep everything; in double quotes a
    backslash escapes only a double quote or a backslash; outside quotes it
    escapes any character), and the same ValueError when a quote is not
    closed or nothing follows a last backslash."""
    words: list[str] = []
    word: list[str] | None = None  # None: between words
    i, end = 0, len(command)
    while i < end:
        char = command[i]
        if char in _BLANKS:
            if word is not None:
                words.append("".join(word))
                word = None
            i += 1
            continue
        if word is None:
            word = []
        if char == "\\":
            if i + 1 == end:
                raise ValueError("No escaped character")
            word.append(command[i + 1])
            i += 2
        elif char == "'":
            close = command.find("'", i + 1)
            if close < 0:
                raise ValueError("No closing quotation")
            word.append(command[i + 1 : close])
            i = close + 1
        elif char == '"':
            i += 1
            while True:
                if i == end:
                    raise ValueError("No closing quotation")
                char = command[i]
                if char == '"':
                    i += 1
                    break
                if char == "\\":
                    if i + 1 == end:
                        raise ValueError("No escaped character")
                    if command[i + 1] not in '"\\':
                        word.append(char)
                    word.append(command[i + 1])
                    i += 2
                else:
                    word.append(char)
                    i += 1
        else:
            word.append(char)
            i += 1
    if word is not None:
        words.append("".join(word))
    return words


def _tokens(command: str) -> list[str]:
    """The command's words as the shell would see them (quotes removed), so
    `santa 'hook' "subagent-stop"` reads like `santa hook subagent-stop`."""
    try:
        return split_words(command)
    except ValueError:
        return command.split()


def shell_problem(command: str, _depth: int = 0) -> str | None:
    """What a shell command would do to bypass the loop, or None.

    This stops the shortcuts a model takes (calling our hooks, hiding
    Claude Code from the helper, switching to review files, rewriting the
    run state); it cannot stop arbitrary code written to evade it, which the
    gate's transcript checks and docs/limits.md address.
    """
    words = _tokens(command)
    flat = " ".join(words)
    if _depth < 4:
        # A command handed to another shell (`bash -ec "..."`, `echo "..." |
        # sh`, a here-string, `eval ...`) is read the same way: any quoted
        # word that holds a command, and whatever follows `eval`.
        inner = [w for w in words if any(c.isspace() for c in w)]
        inner += [" ".join(words[i + 1 :]) for i, w in enumerate(words) if w == "eval"]
        for text in inner:
            problem = shell_problem(text, _depth + 1)
            if problem:
                return problem
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if word in HOOK_NAMES or base == "santa-hook":
            return "runs a santa hook by hand"
        if word == "hook" and i and words[i - 1].rsplit("/", 1)[-1] in ("santa", "santa_method"):
            return "runs a santa hook by hand"
        if _sets_claude_variable(word) or (
            word in ("-u", "--unset", "unset")
            and i + 1 < len(words)
            and _names_claude_variable(words[i + 1])
        ):
            return "changes how the helper sees Claude Code"
        if (
            base == "env"
            and i + 1 < len(words)
            and words[i + 1] in ("-i", "--ignore-environment", "-")
        ):
            return "changes how the helper sees Claude Code"
        if word == "--source" and i + 1 < len(words) and words[i + 1] != "hook":
            return "switches a run away from the reviewer hook"
        if word.startswith("--source=") and word != "--source=hook":
            return "switches a run away from the reviewer hook"
    if ".santa/runs" in flat or (".santa" in flat and ("runs/" in flat or "state.json" in flat)):
        return "touches santa's run state directly"
    if ".santa/batches" in flat or (".santa" in flat and "batches" in flat):
        # Only the helper itself may name a batch's files (its printed
        # `santa round start --spec .santa/batches/...` commands): one plain
        # `santa` call, nothing chained, redirected or substituted.
        plain = words and words[0].rsplit("/", 1)[-1] == "santa"
        if not plain or any(c in command for c in _SHELL_SYNTAX):
            return "touches santa's batch state directly"
    if "log.jsonl" in flat and (
        _redirects_to_log(command)
        or any(w.rsplit("/", 1)[-1] in _WRITERS or w.startswith("python") for w in words)
    ):
        return "writes santa's iteration log directly"
    return None


def _redirects_to_log(command: str) -> bool:
    import re  # only commands that name the log get here

    return bool(re.search(r">\s*\S*log\.jsonl", command))


def _real(path: str) -> str:
    return os.path.realpath(path)


def _inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies under it (both already resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _santa_dir() -> str:
    from santa_method.state.paths import santa_home

    return _real(santa_home())


def _transcripts_dir() -> str:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return _real(os.path.join(base, "projects"))


def _protected(path_text: str, cwd: str | None) -> str | None:
    path = _real(os.path.join(cwd or os.getcwd(), path_text))
    santa = _santa_dir()
    for folder, what in (
        (os.path.join(santa, "runs"), "santa's run state"),
        (os.path.join(santa, "batches"), "santa's batch state"),
        (_transcripts_dir(), "agent transcripts"),
    ):
        if _inside(path, folder):
            return what
    if os.path.basename(path) == "log.jsonl" and os.path.dirname(path) == santa:
        return "santa's iteration log"
    settings = [
        (os.path.join(santa, "config.yaml"), "santa's configuration"),
        (os.path.join(santa, "rubrics"), "santa's project rubrics"),
    ]
    project = _real(os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd())
    settings += [
        (
            os.path.join(project, ".claude", "agents", f"{vendored_agent(role)}.md"),
            "the santa agents",
        )
        for role in ROLES
    ]
    settings += [
        (os.path.join(project, ".claude", name), "Claude Code's settings (its hooks)")
        for name in ("settings.json", "settings.local.json")
    ]
    plugin = os.environ.get("CLAUDE_PLUGIN_ROOT")
    if plugin:
        settings.append((_real(plugin), "the santa-method plugin"))
    for folder, what in settings:
        if _inside(path, folder) and open_run_ids():
            return what + " (while a santa run is open)"
    return None


def open_run_ids() -> list[str]:
    """The project's open runs (see state/open_runs.py)."""
    from santa_method.state import open_runs
    from santa_method.state.paths import santa_home

    return open_runs.open_run_ids(os.path.join(santa_home(), "runs"))


_UNQUOTE = str.maketrans("", "", "'\"\\")


def _last_copy_problem(command: str, payload: Mapping[str, Any]) -> Reply:
    """A new run on `last` only if the copy is the previous reply (last_reply.py)."""
    # Only `santa round start` can open a run, however the shell (or a shell
    # inside it) reads the command; reading it removes quotes and backslashes
    # and nothing else. So a command without both words, once those are gone,
    # opens no run, and every other Bash call skips the costly check.
    plain = command.translate(_UNQUOTE)
    if "round" not in plain or "start" not in plain:
        return None
    with_dependencies()  # reading the transcript redacts with detect-secrets
    from santa_method.claude_code.last_reply import check_command

    cwd = payload.get("cwd")
    problem = check_command(
        command, cwd if isinstance(cwd, str) else None, payload.get("transcript_path")
    )
    return deny(problem) if problem else None


def pretooluse_guard(payload: Mapping[str, Any]) -> Reply:
    """PreToolUse on Bash, file writes and SendMessage: refuses calls that would forge santa's run state, and messages to reviewers."""
    try:
        return _pretooluse_guard(payload)
    except Exception as exc:
        return fail_closed(
            "pretooluse-guard",
            payload,
            f"santa-method could not check this tool call ({type(exc).__name__}: {exc})",
        )


def _pretooluse_guard(payload: Mapping[str, Any]) -> Reply:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(tool_input, Mapping):
        # Claude Code always names the tool and its input; an event without
        # them (empty stdin, `{}`) cannot be checked, so it is refused.
        return fail_closed(
            "pretooluse-guard",
            payload,
            "santa-method could not check this tool call: the hook input names no tool and input",
        )
    if tool == "Bash":
        command = str(tool_input.get("command") or "")
        what = shell_problem(command)
        if what:
            return deny(
                f"This command {what}, which would bypass the santa loop. Use the santa "
                "commands the skill lists (santa round start, santa gate --run, santa log, "
                "santa report) and let the hooks do their part."
            )
        return _last_copy_problem(command, payload)
    if tool in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        target = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(target, str) and target:
            what = _protected(
                target, payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
            )
            if what:
                return deny(
                    f"{target} is part of {what}; only the santa helper and Claude Code write it."
                )
        return None
    if tool == "SendMessage":
        open_ids = open_run_ids()
        if open_ids:
            return deny(
                "No messages to other agents while a santa run is open "
                f"({', '.join(open_ids)}): reviewers and the fixer see only their assignment. "
                "Finish the run, or stop it with `santa log escalate --run ID`."
            )
    return None
