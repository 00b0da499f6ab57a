"""A run that cannot start says why, all of it, and leaves nothing behind.

No key, no backend package, no Claude Code login: each is a setup problem,
not a verdict. It is checked before a run (or batch) exists, every missing
prerequisite is named in one message (exit 3), and `santa metrics` after
such failed starts shows no run at all. A failure after reviewing began is
still a run escalated on an error, as before.

The Claude Code cases use the CLI bundled in claude-agent-sdk, run in a
throwaway HOME with no credentials: its real answer is "Not logged in".
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER, Error
from santa_method.core.errors import BackendError
from santa_method.core.schema import strict_schema
from santa_method.headless.backends.base import ReviewRequest
from santa_method.headless.backends.claude import ClaudeBackend

from .conftest import CRITERIA

REPO = Path(__file__).resolve().parents[2]
# Variables that would give the CLI credentials or point it elsewhere.
_INHERITED = ("ANTHROPIC_", "CLAUDE", "AWS_BEARER_TOKEN_BEDROCK", "VERTEX_", "SANTA_")


def _env(project: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no credentials, a throwaway HOME, the project's own .santa/."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED)}
    home = project.parent / "home"
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        TMPDIR=str(home / "tmp"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_PROJECT_DIR=str(project),
        SANTA_HOME=str(project / ".santa"),
        **extra,
    )
    return env


# Runs the CLI's main() with some packages made unimportable (as if not installed).
_HIDING = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None
from santa_method.cli import main
sys.exit(main(sys.argv[1:]))
"""


def santa(project: Path, *args: str, hidden: tuple[str, ...] = (), **env: str) -> Any:
    return subprocess.run(
        [sys.executable, "-c", _HIDING.format(hidden=hidden), *args],
        capture_output=True,
        text=True,
        cwd=project,
        env=_env(project, **env),
        timeout=180,
    )


def metrics(project: Path) -> dict[str, Any]:
    proc = santa(project, "metrics", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["runs"]


def nothing_left(project: Path) -> None:
    santa_dir = project / ".santa"
    assert not (santa_dir / "runs").exists() or not any((santa_dir / "runs").iterdir())
    assert not (santa_dir / "batches").exists() or not any((santa_dir / "batches").iterdir())
    log = santa_dir / "log.jsonl"
    assert not log.exists() or log.read_text(encoding="utf-8") == ""


RUN = ("run", "--against", "README.md", "--spec-text", "Has a License section.", "--quiet")


def test_no_key_and_no_package_are_both_named(project: Path, target: Path) -> None:
    for _ in range(2):  # two attempts, as a new user makes them
        proc = santa(project, *RUN, hidden=("anthropic",))
        assert proc.returncode == 3, proc.stderr
        err = proc.stderr.strip()
        assert err.count("\n") == 0, err
        assert err.startswith("santa: the anthropic backend cannot start: ")
        assert "the anthropic package is not installed" in err
        assert "pip install anthropic" in err
        assert "no credentials (set ANTHROPIC_API_KEY, or use the claude backend" in err
        assert "--backend claude, which signs in with your Claude Code login" in err
        assert proc.stdout == ""
    nothing_left(project)
    assert metrics(project) == {"total": 0, "shipped": 0, "escalated": 0, "reported": 0, "open": 0}


def test_a_missing_package_alone_is_named(project: Path, target: Path) -> None:
    proc = santa(project, *RUN, hidden=("anthropic",), ANTHROPIC_API_KEY="test")
    assert proc.returncode == 3
    assert "the anthropic package is not installed" in proc.stderr
    assert "credentials" not in proc.stderr
    nothing_left(project)


def test_claude_without_its_package_is_named(project: Path, target: Path) -> None:
    proc = santa(project, *RUN, "--backend", "claude", hidden=("claude_agent_sdk",))
    assert proc.returncode == 3
    assert "the claude backend cannot start: claude-agent-sdk is not installed" in proc.stderr
    assert "pip install claude-agent-sdk" in proc.stderr
    nothing_left(project)


def test_a_batch_that_cannot_start_leaves_no_batch(project: Path) -> None:
    items = project / "items"
    items.mkdir()
    for n in range(4):
        (items / f"{n}.md").write_text(f"# item {n}\n", encoding="utf-8")
    proc = santa(project, "batch", "items", "--spec-text", "Has a title.", "--quiet")
    assert proc.returncode == 3, proc.stderr
    assert "the anthropic backend cannot start: no credentials" in proc.stderr
    assert "--resume" not in proc.stderr  # there is no batch to resume
    proc = santa(
        project, "batch", "items", "--spec-text", "x", "--backend", "anthropic-batch", "--quiet"
    )
    assert proc.returncode == 3, proc.stderr
    assert "the anthropic-batch backend cannot start: no credentials" in proc.stderr
    assert "--resume" not in proc.stderr
    nothing_left(project)
    assert metrics(project)["total"] == 0


@pytest.mark.slow
def test_claude_without_a_login_says_so_and_opens_no_run(
    project: Path, target: Path, claude_cli: str
) -> None:
    for _ in range(2):
        proc = santa(project, *RUN, "--backend", "claude")
        assert proc.returncode == 3, proc.stderr
        err = proc.stderr.strip()
        assert err.count("\n") == 0, err
        assert "Claude Code is not logged in" in err and "/login" in err
        assert "success" not in err
    nothing_left(project)
    assert metrics(project) == {"total": 0, "shipped": 0, "escalated": 0, "reported": 0, "open": 0}


@pytest.mark.slow
def test_the_cli_s_own_reason_is_passed_on(
    project: Path, claude_cli: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the pre-flight (a login that lapsed mid-run, say), the session's
    # failure reads in the CLI's words, not as its result subtype "success".
    for name in list(os.environ):
        if name.startswith(_INHERITED):
            monkeypatch.delenv(name)
    env = _env(project)
    backend = ClaudeBackend(env=env, max_retries=0, cli_path=claude_cli)
    request = ReviewRequest(
        prefix="# santa-method review assignment\n",
        round_part="output\nsanta-canary: abc\n",
        schema=strict_schema(CRITERIA),
        project_dir=str(project),
    )
    with pytest.raises(BackendError) as failed:
        asyncio.run(backend.review(request))
    message = str(failed.value)
    assert message.startswith("Claude Code failed: Not logged in"), message
    assert "/login" in message and "success" not in message
    assert failed.value.exit_code == 3
    # And the pre-flight finds the same thing before any run would exist.
    missing = asyncio.run(backend.preflight())
    assert len(missing) == 1 and "not logged in" in missing[0]


@pytest.mark.slow
def test_a_login_via_key_passes_the_preflight(project: Path, claude_cli: str) -> None:
    env = _env(project, ANTHROPIC_API_KEY="test")
    assert asyncio.run(ClaudeBackend(env=env, cli_path=claude_cli).preflight()) == []


def test_a_failure_after_reviewing_began_is_still_an_escalated_run(
    stub_server: Any, project: Path, target: Path
) -> None:
    server = stub_server({REVIEWER: lambda body: Error(401)})
    proc = santa(project, *RUN, ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.base_url)
    assert proc.returncode == 3
    assert "401" in proc.stderr
    assert metrics(project) == {"total": 1, "shipped": 0, "escalated": 1, "reported": 0, "open": 0}


def test_a_backend_that_stops_starting_mid_batch_leaves_the_batch_resumable(project: Path) -> None:
    """A prerequisite lost after the batch began (a login that expired) is
    a backend error of a saved batch, not "nothing was opened"."""
    from santa_method.core.errors import StartError
    from santa_method.headless.batch import verify_batch_sync
    from santa_method.headless.options import BatchOptions

    from .scripted import Scripted

    class Expiring(Scripted):
        checks = 0

        async def preflight(self) -> list[str]:
            Expiring.checks += 1
            return [] if Expiring.checks == 1 else ["Claude Code is not logged in"]

    items = []
    for n in range(3):
        item = project / f"item-{n}.md"
        item.write_text("Released in 1999.\n", encoding="utf-8")
        items.append(item)
    options = BatchOptions(backend=Expiring(), rate=1.0, minimum=3)
    with pytest.raises(BackendError) as caught:
        verify_batch_sync(items, "The README names the current year.", options=options)
    assert not isinstance(caught.value, StartError)
    assert "not logged in" in str(caught.value)
    assert list((project / ".santa" / "batches").iterdir())  # the batch was saved
