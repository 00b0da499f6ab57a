"""The plugin notices local files copied into its installed copy, in the real Claude Code.

Why end to end: where Claude Code runs a plugin from (the cache copy, or a
directory marketplace's own folder) and what it shows of a SessionStart
hook's answer are Claude Code's behaviour, not ours. A working clone with a
`.venv`, a `.env` and `.santa/` is added as a directory marketplace (what
README forbids), sessions run against the scripted model, and the notice
must reach the user and the model once, name what was copied and where, and
its reinstall commands must leave a clean copy.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .stub_server import StubServer, Text

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
LOCAL_ONLY = (".env", ".santa", ".venv")


def cli(
    claude: str, args: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [claude, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def session(claude: str, env: dict[str, str], project: Path, *extra: str) -> list[dict[str, Any]]:
    """One `claude -p` session; its stream-json records."""
    done = cli(
        claude, ["-p", "hi", "--output-format", "stream-json", "--verbose", *extra], env, project
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def hook_answers(records: list[dict[str, Any]]) -> list[str]:
    """What the plugin's SessionStart hook printed, each answer as text."""
    return [
        r.get("stdout") or r.get("output") or ""
        for r in records
        if r.get("type") == "system"
        and r.get("subtype") == "hook_response"
        and r.get("hook_event") == "SessionStart"
    ]


def notices(records: list[dict[str, Any]]) -> list[str]:
    found = []
    for out in hook_answers(records):
        if out.strip():
            found.append(json.loads(out)["systemMessage"])
    return [n for n in found if "local files that never belong" in n]


@pytest.fixture
def working_clone(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(REPO), str(work)], check=True, timeout=120)
    (work / ".env").write_text("ANTHROPIC_API_KEY=sk-not-a-real-key\n", encoding="utf-8")
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / ".santa" / "runs").mkdir(parents=True)
    return work


def test_a_dirty_directory_marketplace_is_reported_once_with_a_way_out(
    stub_server, claude_cli, claude_env, working_clone: Path, tmp_path: Path
) -> None:
    server: StubServer = stub_server({"main": [Text("Hello.")] * 4})
    env = claude_env(server, SANTA_SKIP_BOOTSTRAP="1")
    home = Path(env["HOME"])
    project = tmp_path / "project"
    project.mkdir()
    cli(claude_cli, ["plugin", "marketplace", "add", str(working_clone)], env, home)
    cli(claude_cli, ["plugin", "install", "santa-method@santa-method"], env, home)
    (copy,) = (home / ".claude" / "plugins" / "cache").glob("santa-method/santa-method/*")
    assert set(LOCAL_ONLY) <= {p.name for p in copy.iterdir()}  # the CLI copied them

    first = session(claude_cli, env, project)
    (told,) = notices(first)
    assert ".env, .santa/, .venv/" in told
    assert f"from {working_clone} into {copy}" in told
    assert "does not read or use them" in told
    # The model was told too (additionalContext), so it can answer questions about it.
    assert any(told in request.text for request in server.requests_for("main"))

    second = session(claude_cli, env, project)
    assert notices(second) == []  # once

    # The commands the notice gives reinstall cleanly (the bundled CLI as `claude`).
    commands = told.split("To reinstall cleanly, run: ", 1)[1]
    assert re.fullmatch(r"[^;]+", commands), commands
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(claude_cli)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        env={**env, "PATH": f"{bin_dir}:{env['PATH']}"},
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (copy,) = (home / ".claude" / "plugins" / "cache").glob("santa-method/santa-method/*")
    assert not set(LOCAL_ONLY) & {p.name for p in copy.iterdir()}
    assert notices(session(claude_cli, env, project)) == []


def test_plugin_dir_copies_nothing_and_reports_nothing(
    stub_server, claude_cli, claude_env, working_clone: Path, tmp_path: Path
) -> None:
    """`claude --plugin-dir PATH` runs the folder in place: no cache copy, no notice."""
    server: StubServer = stub_server({"main": [Text("Hello.")]})
    env = claude_env(server, SANTA_SKIP_BOOTSTRAP="1")
    project = tmp_path / "project"
    project.mkdir()
    records = session(claude_cli, env, project, "--plugin-dir", str(working_clone))
    (init,) = [r for r in records if r.get("subtype") == "init"]
    assert "santa-method:verify" in init["slash_commands"]
    assert hook_answers(records), "the plugin's SessionStart hook did not run"
    assert notices(records) == []
    cache = Path(env["HOME"]) / ".claude" / "plugins" / "cache"
    assert not cache.exists() or not any(cache.glob("*/santa-method"))
