"""The launchers and the guard's fast path.

The shell fallbacks of `libexec/santa` and the vendored `santa-hook` are held to
the one fail-closed answer in Python (`protocol.fail_closed`), input by
input; the helper's own dependency check answers for an unchecked
`python3`; the guard runs on the standard library alone and reads the state
of no finished run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from santa_method.claude_code import protocol
from santa_method.state import open_runs

ROOT = Path(__file__).resolve().parent.parent
BIN_SANTA = ROOT / "libexec" / "santa"
VENDORED = ROOT / "scripts" / "santa_method" / "claude_code" / "santa-hook.sh"
LAUNCHERS = {"libexec/santa": BIN_SANTA, "santa-hook": VENDORED}


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A PATH with the shell tools the launchers use and no python3."""
    folder = tmp_path / "tools"
    folder.mkdir()
    for tool in ("sh", "cat", "grep", "printf", "readlink"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return folder


def crashing_python(path: Path) -> Path:
    """An interpreter that dies before answering, as a broken install would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\ncat >/dev/null\necho 'Traceback: boom' >&2\nexit 1\n")
    path.chmod(0o755)
    return path


def launch(launcher: Path, hook: str, raw: str, env: dict[str, str]) -> dict[str, Any] | None:
    done = subprocess.run(
        ["/bin/sh", str(launcher), hook] if launcher == VENDORED else [str(launcher), "hook", hook],
        input=raw,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def events() -> list[tuple[str, dict[str, Any]]]:
    """Hook inputs for every hook the helper has, santa's agents and others."""
    found: list[tuple[str, dict[str, Any]]] = []
    for kind in (*sorted(protocol.SANTA_AGENTS), "general-purpose", "Explore", None):
        tool_input = {"description": "d", "prompt": "p"}
        if kind is not None:
            tool_input["subagent_type"] = kind
        found.append(("pretooluse-agent", {"tool_name": "Agent", "tool_input": tool_input}))
    for kind in (*sorted(protocol.SANTA_AGENTS), "Explore"):
        for active in (False, True):
            found.append(
                (
                    "subagent-stop",
                    {"agent_id": "a1", "agent_type": kind, "stop_hook_active": active},
                )
            )
    found.append(("pretooluse-guard", {"tool_name": "Bash", "tool_input": {"command": "ls"}}))
    assert {hook for hook, _ in found} == set(protocol.HOOK_EVENTS), "a hook has no case here"
    return found


def shape(answer: dict[str, Any] | None) -> Any:
    """The decision without its reason, which each launcher words itself."""
    if answer is None:
        return None
    if "hookSpecificOutput" in answer:
        out = dict(answer["hookSpecificOutput"])
        assert out.pop("permissionDecisionReason")
        return out
    assert answer.pop("reason")
    return answer


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("situation", ["helper crashed", "no interpreter"])
@pytest.mark.parametrize("compact", [True, False], ids=["compact", "spaced"])
def test_shell_fallbacks_give_the_one_fail_closed_answer(
    launcher: str, situation: str, compact: bool, tools: Path, tmp_path: Path
) -> None:
    env = {"PATH": str(tools), "HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    if situation == "helper crashed":
        env["SANTA_PYTHON"] = str(crashing_python(tmp_path / "broken" / "python"))
    for hook, event in events():
        raw = json.dumps(event, separators=(",", ":") if compact else None)
        expected = protocol.fail_closed(hook, event, "why")
        if situation == "no interpreter" and hook == "pretooluse-guard":
            # No helper at all: no santa state to guard; the session must work.
            expected = None
        got = launch(LAUNCHERS[launcher], hook, raw, env)
        assert shape(got) == shape(expected), (hook, raw)


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_shell_agent_lists_are_the_python_list(launcher: str) -> None:
    text = LAUNCHERS[launcher].read_text()
    agents = re.search(r"^santa_agents='([^']*)'$", text, re.MULTILINE)
    reviewers = re.search(r"^reviewers='([^']*)'$", text, re.MULTILINE)
    assert agents and reviewers
    assert set(agents.group(1).split("|")) == protocol.SANTA_AGENTS
    assert set(reviewers.group(1).split("|")) == protocol.REVIEWER_AGENTS


def test_the_python_answer_for_each_hook() -> None:
    reviewer = {"agent_type": "santa-method:reviewer", "stop_hook_active": False}
    assert protocol.fail_closed("subagent-stop", reviewer, "r") == protocol.block("r")
    assert (
        protocol.fail_closed("subagent-stop", {**reviewer, "stop_hook_active": True}, "r") is None
    )
    assert protocol.fail_closed("subagent-stop", None, "r") is None
    assert protocol.fail_closed("pretooluse-guard", {}, "r") == protocol.deny("r")
    assert protocol.fail_closed("pretooluse-agent", None, "r") == protocol.deny("r")
    other = {"tool_input": {"subagent_type": "Explore"}}
    assert protocol.fail_closed("pretooluse-agent", other, "r") is None
    # A type that is not a name is not "another agent".
    odd = {"tool_input": {"subagent_type": 7}}
    assert protocol.fail_closed("pretooluse-agent", odd, "r") == protocol.deny("r")
    assert protocol.fail_closed("some-new-hook", {}, "r") == protocol.deny("r")


# --- choosing an interpreter: the helper checks python3 itself ----------------


@pytest.fixture(scope="module")
def python_without_dependencies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("nodeps") / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    return where / "bin"


def test_python3_without_the_dependencies_counts_as_no_interpreter(
    python_without_dependencies: Path, tools: Path, tmp_path: Path
) -> None:
    env = {
        "PATH": f"{python_without_dependencies}:{tools}",
        "HOME": str(tmp_path),
        "CLAUDE_PROJECT_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [str(BIN_SANTA), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "no Python interpreter with its dependencies" in done.stderr
    raw = json.dumps({"tool_input": {"subagent_type": "santa-method:reviewer"}})
    answer = launch(BIN_SANTA, "pretooluse-agent", raw, env)
    assert answer is not None
    assert (
        "start a new Claude Code session"
        in answer["hookSpecificOutput"]["permissionDecisionReason"]
    )
    # The guard needs no dependency: it still refuses a forging command.
    forging = json.dumps({"tool_name": "Bash", "tool_input": {"command": "santa hook x"}})
    assert shape(launch(BIN_SANTA, "pretooluse-guard", forging, env)) == shape(protocol.deny("x"))


def test_python3_with_the_dependencies_runs_the_helper(tools: Path, tmp_path: Path) -> None:
    env = {
        "PATH": f"{Path(sys.executable).parent}:{tools}",
        "HOME": str(tmp_path),
        "CLAUDE_PROJECT_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [str(BIN_SANTA), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("santa-method ")
    # The check's variable is not passed on to what the helper starts.
    code = (
        "import os; from santa_method.launch import main;"
        "main(['hook', 'pretooluse-guard']); print(os.environ.get('SANTA_LAUNCHER_CHECK'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input="{}",
        env={**os.environ, "SANTA_LAUNCHER_CHECK": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines()[-1] == "None"


def test_missing_dependencies_are_found_without_importing_them() -> None:
    code = (
        "import sys; from santa_method.launch import missing_dependencies, DEPENDENCIES;"
        "print(missing_dependencies(), [m for m in DEPENDENCIES if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[] []"


# --- the guard's path -----------------------------------------------------------

HEAVY = (
    "jsonschema",
    "yaml",
    "rapidfuzz",
    "rich",
    "detect_secrets",
    "argparse",
    "pathlib",
    "subprocess",
    "typing",
    "dataclasses",
    "santa_method.state.store",
    "santa_method.state.gating",
    "santa_method.cli",
    # Each of these costs a good part of a bare start (see claude_code/guard.py).
    "json",
    "re",
    "shlex",
    "enum",
    "functools",
    "collections",
    "contextlib",
)
# The probe itself imports nothing the guard would not (io is loaded at start).
PROBE = """
import io, sys
sys.stdin = io.StringIO(sys.argv[1])
from santa_method.launch import main
main(["hook", "pretooluse-guard"])
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
sys.stderr.write("PROBE " + " ".join(heavy) + "\\n")
"""


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_name": "Bash", "tool_input": {"command": "santa hook subagent-stop"}},
        {"tool_name": "Bash", "tool_input": {"command": "ls -la 'a b'"}},
        {"tool_name": "Write", "tool_input": {"file_path": ".claude/settings.json"}},
        {"tool_name": "Write", "tool_input": {"file_path": ".santa/runs/x/state.json"}},
        {"tool_name": "SendMessage", "tool_input": {"to": "x", "message": "y"}},
    ],
    ids=["Bash-forging", "Bash", "Write", "Write-forging", "SendMessage"],
)
def test_the_guard_imports_nothing_heavy(payload: dict[str, Any], tmp_path: Path) -> None:
    finished = tmp_path / ".santa" / "runs" / "20260101-000000-aaaaaa"
    finished.mkdir(parents=True)
    (finished / "state.json").write_text(json.dumps({"status": "shipped"}))
    # Marked, as the helper marks a run it finishes: the guard reads no state.
    open_runs.mark_finished(str(finished.parent), finished.name, "shipped")
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE.format(heavy=HEAVY), json.dumps(payload)],
        env={
            **os.environ,
            "CLAUDE_PROJECT_DIR": str(tmp_path),
            "PYTHONPATH": str(ROOT / "scripts"),
        },
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("PROBE")]
    assert line, done.stderr
    assert line[-1][len("PROBE ") :].split() == []


def state(folder: Path, status: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text(json.dumps({"status": status}))


def test_open_runs_read_only_unmarked_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    state(runs / "a-open", "open")
    state(runs / "b-shipped", "shipped")
    state(runs / "c-escalated", "escalated")
    (runs / "d-half-made").mkdir()  # no state yet: not a run
    state(runs / "e-unreadable", "open")
    (runs / "e-unreadable" / "state.json").write_text("{not json")
    assert open_runs.open_run_ids(str(runs)) == ["a-open"]
    # Finished runs found by the full check are marked; open ones never.
    marks = sorted(os.listdir(runs / open_runs.FINISHED))
    assert marks == ["b-shipped", "c-escalated"]
    # A marked run's state is not read again (so even one made unreadable is skipped).
    (runs / "b-shipped" / "state.json").write_text("{not json")
    assert open_runs.open_run_ids(str(runs)) == ["a-open"]


@pytest.mark.parametrize("damage", ["marks gone", "marks not a folder", "mark missing"])
def test_a_wrong_or_missing_mark_falls_back_to_the_full_check(damage: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    state(runs / "a", "escalated")
    state(runs / "b", "open")
    open_runs.mark_finished(str(runs), "a", "escalated")
    marks = runs / open_runs.FINISHED
    if damage == "marks gone":
        shutil.rmtree(marks)
    elif damage == "marks not a folder":
        shutil.rmtree(marks)
        marks.write_text("")
    else:
        (marks / "a").unlink()
    assert open_runs.open_run_ids(str(runs)) == ["b"]


def test_only_final_statuses_are_marked(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for status in ("open", "interrupted", "anything new"):
        open_runs.mark_finished(str(runs), "x", status)
    assert not (runs / open_runs.FINISHED).exists()
    open_runs.mark_finished(str(runs), "x", "shipped")
    assert (runs / open_runs.FINISHED / "x").exists()


def test_the_helper_marks_a_run_once_its_state_says_it_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from santa_method.core.rubric import load_rubric, render_markdown, rubric_hash
    from santa_method.state.events import log_event
    from santa_method.state.model.run import Target
    from santa_method.state.rounds import start_run
    from santa_method.state.store import list_run_ids, runs_dir

    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / ".santa"))
    monkeypatch.setenv("SANTA_LOG", str(tmp_path / ".santa" / "log.jsonl"))
    (tmp_path / "out.md").write_text("hello\n")
    rubric = load_rubric("base")
    opened = start_run(
        target=Target(kind="file", path=str(tmp_path / "out.md")),
        spec="Say hello.",
        rubric=rubric,
        rubric_name="base",
        rubric_markdown=render_markdown(rubric),
        rubric_hash=rubric_hash(rubric),
        reviewers=2,
        max_fixes=1,
        source="files",
        cwd=str(tmp_path),
    )
    marks = runs_dir() / open_runs.FINISHED
    assert open_runs.open_run_ids(str(runs_dir())) == [opened.run_id]
    assert not marks.exists()
    log_event(opened.run_id, "escalate", data={"reason": "test"})
    assert os.listdir(marks) == [opened.run_id]
    assert open_runs.open_run_ids(str(runs_dir())) == []
    assert list_run_ids() == [opened.run_id]  # the marks are not a run
