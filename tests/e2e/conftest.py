"""Fixtures for driving the scripted model server and the real Claude Code CLI.

Why fixtures and not helpers in each test: every end-to-end test needs the
same isolation (throwaway HOME and config, no inherited credentials, low
retries, no side traffic) and the same clean shutdown, and a test that
forgets one of them touches a real home directory or hangs for minutes.

Fixtures (re-exported by ``tests/conftest.py`` for tests outside this folder):

* ``stub_server(script=None, **options) -> StubServer``: a started server,
  stopped after the test, whose ``check()`` runs at teardown so a failing
  reply function fails the test.
* ``claude_cli -> str``: the CLI bundled in claude-agent-sdk (skips the test
  when the SDK is not installed), or the one ``SANTA_TEST_CLAUDE_CLI`` names.
* ``claude_env(server, **overrides) -> dict[str, str]``: an environment for
  the CLI (or for ``ClaudeAgentOptions(env=...)``) pointing at ``server``.
* ``run_claude(server, *args, cwd=None, timeout=60, env=None) -> ClaudeRun``:
  runs ``claude *args`` with that environment; ``.json`` parses
  ``--output-format json`` output.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .stub_server import StubServer

# Variables a developer's shell (or an enclosing Claude Code session) may carry
# that would change what the CLI does or where it sends requests.
_INHERITED_PREFIXES = ("ANTHROPIC_", "CLAUDE", "AWS_BEARER_TOKEN_BEDROCK", "VERTEX_")


@pytest.fixture
def stub_server() -> Iterator[Callable[..., StubServer]]:
    started: list[StubServer] = []

    def start(script: Mapping[str, Any] | None = None, **options: Any) -> StubServer:
        server = StubServer(script, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
    for server in started:
        server.check()


@pytest.fixture(scope="session")
def claude_cli() -> str:
    """The bundled CLI, or the one SANTA_TEST_CLAUDE_CLI names (to try the
    plugin with another release, e.g. one installed from npm)."""
    chosen = os.environ.get("SANTA_TEST_CLAUDE_CLI")
    if chosen:
        if not os.access(chosen, os.X_OK):
            pytest.fail(f"SANTA_TEST_CLAUDE_CLI={chosen} is not an executable")
        return chosen
    try:
        import claude_agent_sdk
    except ImportError:
        pytest.skip("claude-agent-sdk (which bundles the Claude Code CLI) is not installed")
    path = os.path.join(os.path.dirname(claude_agent_sdk.__file__), "_bundled", "claude")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no bundled Claude Code CLI at {path}")
    return path


def make_claude_env(home: Path, server: StubServer, **overrides: str) -> dict[str, str]:
    """The CLI's environment: isolated home, the stub as the API, fast failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        TMPDIR=str(tmp),  # the CLI keeps task output under $TMPDIR/claude-<uid>/
        ANTHROPIC_BASE_URL=server.base_url,
        ANTHROPIC_API_KEY="test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="1",
    )
    env.update(overrides)
    return env


@pytest.fixture
def claude_env(tmp_path: Path) -> Callable[..., dict[str, str]]:
    def build(server: StubServer, **overrides: str) -> dict[str, str]:
        return make_claude_env(tmp_path / "home", server, **overrides)

    return build


@dataclass
class ClaudeRun:
    """One finished CLI process."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict[str, Any]:
        """The ``--output-format json`` result (``result``, ``is_error``, ``usage``...)."""
        return json.loads(self.stdout)


@pytest.fixture
def run_claude(
    claude_cli: str, claude_env: Callable[..., dict[str, str]], tmp_path: Path
) -> Callable[..., ClaudeRun]:
    def run(
        server: StubServer,
        *args: str,
        cwd: Path | str | None = None,
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
    ) -> ClaudeRun:
        workdir = Path(cwd) if cwd is not None else tmp_path / "project"
        workdir.mkdir(parents=True, exist_ok=True)
        full_env = claude_env(server, **(env or {}))
        command = [claude_cli, *args]
        done = subprocess.run(
            command,
            cwd=workdir,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return ClaudeRun(command, done.returncode, done.stdout, done.stderr)

    return run
