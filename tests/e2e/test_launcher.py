"""The plugin's launcher inside the real Claude Code: found as a bare `santa`,
and failing closed when it cannot run.

Why: the plugin has no bin/ folder (claude.ai refuses a published plugin
with one), so the skill's and commands' bare `santa` works only through the
PATH its SessionStart hook exports, bootstrap or not. And a PreToolUse hook
whose command fails lets the call through unless the hook says
`"onFailure": "block"`: with the launcher broken, a reviewer spawn and a
command that forges santa's state must be blocked, not let through. The
same scenario with `onFailure` taken out shows the calls going through, so
the test can tell the two apart.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import santa_method

from .scenario_helpers import (
    REPO,
    agent_calls,
    bash,
    bash_calls,
    make_project,
    reviewer_call,
    run_claude,
    santa_env,
)
from .stub_server import PerAgent, Text

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DRAFT = "# Greeting\n\nHello, world.\n"
# What the launcher's own folder holds in a clone that a plugin does not.
NOT_PLUGIN = (".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".santa", "tests")
FORGED = ".santa/runs/forged/state.json"
FORGE = f"mkdir -p .santa/runs/forged && echo '{{\"status\": \"shipped\"}}' > {FORGED}"


def plugin_copy(tmp_path: Path, *, launcher: str, on_failure: bool) -> Path:
    """The plugin as a user has it, with its launcher replaced by `launcher`
    (a shell script's body) and, unless `on_failure`, no onFailure key."""
    copy = tmp_path / "plugin"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(*NOT_PLUGIN), symlinks=True)
    (copy / "libexec" / "santa").write_text(launcher, encoding="utf-8")
    hooks_file = copy / "hooks" / "hooks.json"
    hooks = json.loads(hooks_file.read_text(encoding="utf-8"))
    if not on_failure:
        for group in hooks["hooks"]["PreToolUse"]:
            for hook in group["hooks"]:
                del hook["onFailure"]
    hooks_file.write_text(json.dumps(hooks), encoding="utf-8")
    return copy


def test_bare_santa_runs_with_the_bootstrap_skipped(
    stub_server, claude_cli, claude_env, tmp_path: Path
) -> None:
    server = stub_server({"main": [bash("santa --version"), Text("Done.")]})
    project = make_project(tmp_path / "project", DRAFT)
    env = santa_env(claude_env(server))
    env["SANTA_SKIP_BOOTSTRAP"] = "1"
    done = run_claude(claude_cli, project, env)
    assert done.returncode == 0, done.stderr + done.stdout
    (call,) = bash_calls(server, "santa --version")
    assert not call.is_error, call.result
    assert santa_method.__version__ in (call.result or "")


@pytest.mark.parametrize("on_failure", [True, False], ids=["onFailure-block", "without-it"])
@pytest.mark.parametrize(
    "launcher",
    ["#!/bin/sh\necho 'santa: half removed' >&2\nexit 1\n", "#!/bin/sh\nexec /nonexistent/python\n"],
    ids=["crashes", "no-interpreter"],
)
def test_a_launcher_that_fails_blocks_a_reviewer_spawn_and_a_forging_command(
    stub_server, claude_cli, claude_env, tmp_path: Path, launcher: str, on_failure: bool
) -> None:
    main: list[Any] = [
        lambda body: [reviewer_call("Review draft.md against spec.md.", 1)],
        bash(FORGE),
        Text("Done."),
    ]
    server = stub_server({"main": main, "reviewer": PerAgent(rest=[Text("PASS")])})
    project = make_project(tmp_path / "project", DRAFT)
    plugin = plugin_copy(tmp_path, launcher=launcher, on_failure=on_failure)
    done = run_claude(
        claude_cli,
        project,
        santa_env(claude_env(server)),
        plugin=False,
        extra=["--plugin-dir", str(plugin)],
    )
    assert done.returncode == 0, done.stderr + done.stdout

    # The session start said why, and how to repair or disable the plugin.
    told = server.requests_for("main")[0].text
    assert "its hook launcher" in told and "claude plugin disable santa-method" in told
    (spawn,) = agent_calls(server)
    (forge,) = bash_calls(server, "forged")
    if on_failure:
        assert spawn.is_error and "agentId:" not in (spawn.result or ""), spawn.result
        assert not server.conversations("reviewer")
        assert forge.is_error, forge.result
        assert not (project / FORGED).exists()
    else:
        # What a hook without onFailure does: the failure is noted, the call runs.
        assert server.conversations("reviewer")
        assert (project / FORGED).exists()
