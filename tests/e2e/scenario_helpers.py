"""Building blocks for the end-to-end scenarios in the real Claude Code.

Why a module of its own: every scenario scripts the same actors (a main
agent that runs the ``santa`` helper and spawns reviewers, reviewers that
read their assignment and answer JSON) and reads the same evidence (tool
results, the iteration log, recorded requests). The scripts here only say
what a model would say; every assertion in the scenarios is on what the
product did with it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _reviews import review_of

from .stub_server import (
    DEFAULT_MARKERS,
    Reply,
    StubServer,
    Text,
    ToolCall,
    ToolUse,
    first_user_text,
    last_tool_result_text,
    tool_calls,
)

REPO = Path(__file__).resolve().parents[2]
# The interpreter running the tests has the package (and is the one under
# test: .ci/latest runs the suite from a venv of its own).
PYTHON = sys.executable

# Text only each agent's own body holds: tells reviewer and fixer requests
# apart (the stub's defaults; the scenarios check the agent files hold them).
MARKERS = dict(DEFAULT_MARKERS)
PLUGIN_REVIEWER = "santa-method:reviewer"
PLUGIN_FIXER = "santa-method:fixer"
VERIFY = "/santa-method:verify draft.md --spec spec.md"
CLAUDE_TIMEOUT = 120
# Seconds a reviewer's first request is held open, so that reviewers running
# concurrently provably overlap even on a loaded machine.
READ_DELAY = 0.8


# --- the project and the CLI -----------------------------------------------


def make_project(root: Path, draft: str, spec: str = "Write a short greeting document.\n") -> Path:
    """A git repository with the output under review and its spec."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "draft.md").write_text(draft, encoding="utf-8")
    (root / "spec.md").write_text(spec, encoding="utf-8")
    return root


def _python3_shim() -> str:
    """A folder whose `python3` is the test's interpreter (which has the
    package), and nothing else: not the venv's `santa`."""
    folder = Path(tempfile.gettempdir()) / f"santa-e2e-shim-{os.getpid()}"
    shim = folder / "python3"
    if not shim.exists():
        folder.mkdir(parents=True, exist_ok=True)
        shim.write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return str(folder)


def _has_santa(folder: str) -> bool:
    return os.access(os.path.join(folder, "santa"), os.X_OK)


def santa_env(base: Mapping[str, str], *, vendored: bool = False) -> dict[str, str]:
    """The CLI's environment with `python3` able to run the helper.

    With the plugin, nothing else is arranged: the plugin's bootstrap must
    see that `python3` already has the package and skip its install, and the
    Bash tool must reach the plugin's own `libexec/santa` launcher through
    the PATH the SessionStart hook exports (no other `santa` is on PATH). A vendored repository instead has the package
    installed in its environment, so the venv's bin is on PATH there.
    """
    env = dict(base)
    # No `santa` of an activated venv: the plugin's must be found through
    # the PATH its SessionStart hook exports.
    found = [p for p in env.get("PATH", "").split(os.pathsep) if p and not _has_santa(p)]
    path = os.pathsep.join([_python3_shim(), *found])
    if vendored:
        path = str(Path(PYTHON).parent) + os.pathsep + path
    env["PATH"] = path
    for name in ("SANTA_LOG", "SANTA_SKIP_BOOTSTRAP", "SANTA_PYTHON"):
        env.pop(name, None)
    return env


@dataclass
class Finished:
    """One finished ``claude -p`` run."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)


def run_claude(
    cli: str,
    project: Path,
    env: Mapping[str, str],
    *,
    prompt: str = VERIFY,
    plugin: bool = True,
    timeout: float = CLAUDE_TIMEOUT,
    extra: Sequence[str] = (),
    allowed: Sequence[str] = ("Bash", "Agent", "Read", "Write", "Edit", "Grep", "Glob"),
) -> Finished:
    """``claude -p PROMPT`` in the project, tools allowed without prompts.

    ``--dangerously-skip-permissions`` is refused as root, so the tools the
    scripted main agent uses are allowed by name instead (`allowed`).
    """
    args = [cli, "-p", prompt, "--output-format", "json"]
    args += ["--allowedTools", *allowed]
    if plugin:
        args += ["--plugin-dir", str(REPO)]
    args += list(extra)  # e.g. --resume SESSION to continue a conversation
    started = time.monotonic()
    done = subprocess.run(
        args,
        cwd=project,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Finished(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


# --- reading tool results ---------------------------------------------------


def json_in(text: str) -> dict[str, Any]:
    """The first JSON object in a tool result (stdout may follow other text)."""
    start = text.find("{")
    if start < 0:
        raise ValueError(f"no JSON object in tool result: {text[:300]!r}")
    value, _ = json.JSONDecoder().raw_decode(text[start:])
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object: {text[:300]!r}")
    return value


def main_calls(server: StubServer) -> list[ToolCall]:
    """Every tool call of the main agent with its result, from its last request."""
    requests = server.requests_for("main")
    assert requests, "the main agent never called the model"
    return tool_calls(requests[-1].body)


def bash_calls(server: StubServer, needle: str) -> list[ToolCall]:
    return [
        c for c in main_calls(server) if c.name == "Bash" and needle in str(c.input.get("command"))
    ]


def agent_calls(server: StubServer) -> list[ToolCall]:
    return [c for c in main_calls(server) if c.name == "Agent"]


def log_records(project: Path) -> list[dict[str, Any]]:
    path = project / ".santa" / "log.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


# --- the scripted main agent -------------------------------------------------


@dataclass
class Story:
    """What the scripted main agent learned from the helper's tool results."""

    runs: list[dict[str, Any]] = field(default_factory=list)  # round start outputs
    gates: list[dict[str, Any]] = field(default_factory=list)  # gate outputs

    @property
    def run_id(self) -> str:
        return str(self.runs[0]["run_id"])

    @property
    def instruction(self) -> str:
        return str(self.runs[-1]["instruction"])


def bash(command: str | Callable[[], str]) -> Callable[[dict[str, Any]], ToolUse]:
    def step(body: dict[str, Any]) -> ToolUse:
        text = command() if callable(command) else command
        return ToolUse("Bash", {"command": text, "description": "santa"})

    return step


def reviewer_call(prompt: str, n: int, kind: str = PLUGIN_REVIEWER) -> ToolUse:
    return ToolUse(
        "Agent",
        {
            "description": f"reviewer {n}",
            "subagent_type": kind,
            "prompt": prompt,
            "run_in_background": False,
        },
    )


def spawn_reviewers(
    story: Story, count: int | None = None, kind: str = PLUGIN_REVIEWER
) -> Callable[[dict[str, Any]], list[ToolUse]]:
    """Record the round start's output, then spawn its reviewers in ONE turn."""

    def step(body: dict[str, Any]) -> list[ToolUse]:
        story.runs.append(json_in(last_tool_result_text(body, "Bash")))
        n = count if count is not None else int(story.runs[-1]["reviewers"])
        return [reviewer_call(story.instruction, i + 1, kind) for i in range(n)]

    return step


def gate(story: Story, extra: str = "") -> Callable[[dict[str, Any]], ToolUse]:
    return bash(lambda: f"santa gate --run {story.run_id} {extra}--json".replace("  ", " "))


def record_gate(story: Story, step: Any) -> Callable[[dict[str, Any]], Any]:
    """Record the gate's JSON from the last Bash result, then take ``step``."""

    def run(body: dict[str, Any]) -> Any:
        story.gates.append(json_in(last_tool_result_text(body, "Bash")))
        return step(body) if callable(step) else step

    return run


def clean_main(story: Story, kind: str = PLUGIN_REVIEWER) -> list[Any]:
    """What a well-behaved main agent does for a passing output."""
    return [
        bash("santa round start --against draft.md --spec spec.md --json"),
        spawn_reviewers(story, kind=kind),
        gate(story),
        record_gate(story, bash(lambda: f"santa log ship --run {story.run_id}")),
        Text("Verified: NICE."),
    ]


# --- scripted reviewers -------------------------------------------------------

_ASSIGNMENT = re.compile(r"Read the whole file (\S+?\.md)")
_CANARY = re.compile(r"santa-canary: ([A-Za-z0-9_-]+)")
_CRITERION = re.compile(r"### `([a-z0-9][a-z0-9-]*)`")


def assignment_path(body: Mapping[str, Any]) -> str:
    match = _ASSIGNMENT.search(first_user_text(body))
    if not match:
        raise ValueError("the reviewer's first message names no assignment file")
    return match.group(1)


def read_assignment(body: dict[str, Any]) -> Reply:
    """Read the assignment, slowly enough that concurrent reviewers overlap."""
    return Reply(ToolUse("Read", {"file_path": assignment_path(body)}), delay=READ_DELAY)


def read_part(lines: int) -> Callable[[dict[str, Any]], ToolUse]:
    """Read only the assignment's first ``lines`` lines (a hasty reviewer)."""

    def step(body: dict[str, Any]) -> ToolUse:
        return ToolUse("Read", {"file_path": assignment_path(body), "limit": lines})

    return step


def read_on(body: dict[str, Any]) -> ToolUse:
    """Read the assignment's next part, after the last line read so far."""
    numbers = re.findall(r"^(\d+)\t", read_text(body), flags=re.MULTILINE)
    last = max(int(n) for n in numbers)
    return ToolUse("Read", {"file_path": assignment_path(body), "offset": last + 1})


def read_text(body: Mapping[str, Any]) -> str:
    """Everything the reviewer's Read calls returned so far."""
    return "\n".join(c.result or "" for c in tool_calls(body) if c.name == "Read")


def canary_of(body: Mapping[str, Any]) -> str | None:
    found = _CANARY.findall(read_text(body))
    return found[-1] if found else None


def criteria_of(body: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(_CRITERION.findall(read_text(body))))


def review(
    body: Mapping[str, Any],
    *,
    fails: Mapping[str, Mapping[str, str]] | None = None,
    canary: bool = True,
    note: str = "",
) -> dict[str, Any]:
    """A review of what the reviewer read: every criterion, its canary.

    ``fails`` maps a criterion id to its critical issue (``issue`` plus
    ``quote`` or ``missing``); ``note`` goes into a suggestion so tests can
    look for this reply's text elsewhere.
    """
    fails = fails or {}
    criteria = criteria_of(body)
    if not criteria:
        raise ValueError("the reviewer read no rubric criteria")
    issues = [{"criterion": c, **issue} for c, issue in fails.items()]
    return review_of(
        criteria,
        issues,
        detail=lambda c, result: f"{c} {'fails' if result == 'FAIL' else 'holds'}.",
        suggestions=[note] if note else [],
        canary=(canary_of(body) or "") if canary else None,
    )


def answer(**options: Any) -> Callable[[dict[str, Any]], Text]:
    """A reviewer's final reply: the review JSON as its only text."""

    def step(body: dict[str, Any]) -> Text:
        return Text(json.dumps(review(body, **options)))

    return step


def reviewer_steps(**options: Any) -> list[Any]:
    return [read_assignment, answer(**options)]


def unnumbered(read_result: str) -> str:
    """A Read tool result without its line numbers: the file's text as read."""
    return "".join(
        re.sub(r"^\d+\t", "", line, count=1) for line in read_result.splitlines(keepends=True)
    )


def text_of(requests: Sequence[Any]) -> str:
    """Everything a set of recorded requests showed the model."""
    return "\n".join(r.text for r in requests)


# --- the scripted fixer -------------------------------------------------------

_FIXER_ASSIGNMENT = re.compile(r"Read (\S+) and fix only the flags")


def fixer_steps(target: Path, old: str, new: str) -> list[Any]:
    """Read the fixer assignment, read the target, replace ``old`` with ``new``."""

    def read_assignment(body: dict[str, Any]) -> ToolUse:
        match = _FIXER_ASSIGNMENT.search(first_user_text(body))
        if not match:
            raise ValueError("the fixer's first message names no assignment file")
        return ToolUse("Read", {"file_path": match.group(1)})

    return [
        read_assignment,
        ToolUse("Read", {"file_path": str(target)}),
        ToolUse("Edit", {"file_path": str(target), "old_string": old, "new_string": new}),
        Text("factual-accuracy: fixed - corrected the version number."),
    ]


def fixer_call(prompt: str, kind: str = PLUGIN_FIXER) -> ToolUse:
    return ToolUse(
        "Agent",
        {
            "description": "fixer",
            "subagent_type": kind,
            "prompt": prompt,
            "run_in_background": False,
        },
    )
