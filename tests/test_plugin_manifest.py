"""The plugin as Claude Code sees it: manifests, icon, hooks file, validator, install.

The validator and the install run the real Claude Code CLI bundled in
`claude-agent-sdk`, offline, in a throwaway HOME, so what is checked is what
a user's Claude Code would accept, not our idea of the format.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

import santa_method

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_JSON = ROOT / ".claude-plugin" / "plugin.json"
MARKETPLACE_JSON = ROOT / ".claude-plugin" / "marketplace.json"
ICON = ROOT / ".claude-plugin" / "icon.png"
HOOKS_JSON = ROOT / "hooks" / "hooks.json"

# What a clone holds that a plugin install must not depend on.
NOT_PLUGIN = (
    ".git",
    ".venv",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".santa",
    "results",
    "*.pyc",
)


def claude_cli() -> Path:
    """The CLI inside claude-agent-sdk; its absence is a failure in CI, a skip elsewhere."""
    try:
        import claude_agent_sdk
    except ImportError:
        claude_agent_sdk = None
    if claude_agent_sdk is not None:
        cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
        if cli.is_file() and os.access(cli, os.X_OK):
            return cli
    message = "the Claude Code CLI bundled in claude-agent-sdk is not installed"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def cli_env(home: Path) -> dict[str, str]:
    """A throwaway home and no traffic beyond what a command needs."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "NO_COLOR": "1",
    }


def run_claude(args: list[str], home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the CLI with a throwaway home and no traffic beyond what the command needs."""
    return subprocess.run(
        [str(claude_cli()), *args],
        cwd=cwd or home,
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# --- manifests -------------------------------------------------------------


def test_plugin_manifest_fields() -> None:
    manifest = load(PLUGIN_JSON)
    assert manifest["name"] == "santa-method"
    assert manifest["version"] == santa_method.__version__
    assert manifest["skills"] == ["./"]
    assert manifest["license"] == "MIT"
    assert isinstance(manifest["author"], dict) and manifest["author"]["name"]
    assert manifest["description"] and manifest["keywords"]
    # No invented URLs: any URL present must at least be https.
    for key in ("homepage", "repository"):
        if key in manifest:
            assert manifest[key].startswith("https://"), key


def test_marketplace_lists_this_plugin_from_the_repository_root() -> None:
    market = load(MARKETPLACE_JSON)
    plugin = load(PLUGIN_JSON)
    assert market["name"] and market["owner"]["name"] and market["description"]
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"]
    assert entry["source"] == "./"
    assert entry.get("version", plugin["version"]) == plugin["version"]


def test_license_is_mit_2026() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 santa-method contributors" in text


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        pos += 12 + length
    return chunks


def test_icon_is_a_real_512_png() -> None:
    chunks = png_chunks(ICON.read_bytes())
    kinds = [kind for kind, _ in chunks]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND"
    width, height, depth, colour, *_ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (width, height, depth, colour) == (512, 512, 8, 6)  # 8-bit RGBA
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(raw) == height * (1 + width * 4)
    # A picture, not a blank: more than one colour, and opaque pixels.
    row = raw[256 * (1 + width * 4) + 1 : 257 * (1 + width * 4)]
    pixels = {row[i : i + 4] for i in range(0, len(row), 4)}
    assert len(pixels) > 2
    assert any(p[3] == 255 for p in pixels)


# --- hooks file --------------------------------------------------------------


def hook_entries(event: str) -> list[dict]:
    groups = load(HOOKS_JSON)["hooks"][event]
    return [(group, hook) for group in groups for hook in group["hooks"]]


def test_hooks_file_has_the_three_events() -> None:
    assert set(load(HOOKS_JSON)["hooks"]) == {"SessionStart", "PreToolUse", "SubagentStop"}


def test_session_start_runs_the_bootstrap_in_exec_form() -> None:
    ((_, hook),) = hook_entries("SessionStart")
    assert hook["type"] == "command"
    assert hook["command"] == "python3"
    assert hook["args"] == ["${CLAUDE_PLUGIN_ROOT}/scripts/bootstrap.py"]
    assert hook["timeout"] == 300
    assert (ROOT / "scripts" / "bootstrap.py").is_file()


@pytest.mark.parametrize(
    ("event", "sub_command", "matcher"),
    [
        ("PreToolUse", "pretooluse-agent", "Agent"),
        ("PreToolUse", "pretooluse-guard", "Bash|Write|Edit|MultiEdit|NotebookEdit|SendMessage"),
        ("SubagentStop", "subagent-stop", None),
    ],
)
def test_guard_hooks_call_the_launcher_quoted(
    event: str, sub_command: str, matcher: str | None
) -> None:
    ((group, hook),) = [
        (g, h) for g, h in hook_entries(event) if h["command"].endswith(f" {sub_command}")
    ]
    assert hook["type"] == "command"
    assert hook["command"] == f'"${{CLAUDE_PLUGIN_ROOT}}/libexec/santa" hook {sub_command}'
    assert 0 < hook["timeout"] <= 120
    # A PreToolUse hook that fails or times out blocks its call (tests/e2e/test_launcher.py);
    # Claude Code ignores the key on SubagentStop, where the launcher refuses itself.
    assert hook.get("onFailure") == ("block" if event == "PreToolUse" else None)
    if matcher is not None:
        assert group["matcher"] == matcher
    else:
        # The handler checks agent_type itself; a matcher must not be what filters.
        assert "matcher" not in group


def test_launcher_is_executable_and_there_is_no_bin_folder() -> None:
    """claude.ai refuses a published plugin with files in bin/: the launcher
    lives in libexec/ and is run by path (and put on PATH at session start)."""
    launcher = ROOT / "libexec" / "santa"
    assert os.access(launcher, os.X_OK)
    assert launcher.read_text(encoding="utf-8").startswith("#!/bin/sh\n")
    assert not (ROOT / "bin").exists()


#: The first Claude Code release that honours "onFailure" on a command hook
#: (2.1.294 lets the call through; tests/e2e/test_launcher.py, run with
#: SANTA_TEST_CLAUDE_CLI set to each release installed from npm).
ON_FAILURE_SINCE = (2, 1, 295)


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_engines_name_a_tested_claude_code_that_blocks_failed_hooks() -> None:
    """The floor is the CLI the tests run (the one claude-agent-sdk bundles,
    at the locked version) or older, and never below the first release that
    blocks a call whose PreToolUse hook failed."""
    engines = load(PLUGIN_JSON)["engines"]["claude-code"]
    floor = re.fullmatch(r">=(\d+\.\d+\.\d+)", engines)
    assert floor, engines
    done = subprocess.run(
        [str(claude_cli()), "--version"], capture_output=True, text=True, check=True, timeout=60
    )
    tested = version(done.stdout.split()[0])
    assert ON_FAILURE_SINCE <= version(floor.group(1)) <= tested


def test_network_hosts_name_what_the_plugin_reaches() -> None:
    """The package index (the first session's bootstrap) and each model API a
    headless backend calls by default; validate shows them, nothing is
    limited by them."""
    from urllib.parse import urlsplit

    from santa_method.headless.backends.openai import DEFAULT_BASE_URL

    hosts = load(PLUGIN_JSON)["network"]["hosts"]
    apis = {"api.anthropic.com", urlsplit(DEFAULT_BASE_URL).hostname}
    assert set(hosts) == {"pypi.org", "files.pythonhosted.org"} | apis


# --- the real CLI ------------------------------------------------------------


def test_validator_is_clean_under_strict_directory_profile(tmp_path: Path) -> None:
    """`claude plugin validate --strict --profile directory --json .` at the repo root."""
    done = run_claude(
        ["plugin", "validate", "--strict", "--profile", "directory", "--json", "."],
        home=tmp_path,
        cwd=ROOT,
    )
    report = json.loads(done.stdout)
    # Every complaint the validator can make, wherever it puts it: the
    # manifest's, each content's (a bin/ folder's warning lands there) and
    # the directory profile's findings, so the next drift names itself.
    problems = {
        "errors": [*report["manifest"]["errors"]],
        "warnings": [*report["manifest"]["warnings"]],
        "findings": [f"{f['code']}: {f['message']}" for f in report["directory"]["findings"]],
    }
    for content in report["contents"]:
        problems["errors"] += [f"{content['file']}: {e}" for e in content["errors"]]
        problems["warnings"] += [f"{content['file']}: {w}" for w in content["warnings"]]
    assert report["success"] is True, problems
    assert problems == {"errors": [], "warnings": [], "findings": []}
    assert done.returncode == 0
    provides = report["provides"]
    assert provides["skills"] == ["santa-method:santa-method"]
    assert sorted(provides["agents"]) == ["santa-method:fixer", "santa-method:reviewer"]
    assert sorted(provides["commands"]) == [
        "santa-method:batch",
        "santa-method:escape",
        "santa-method:metrics",
        "santa-method:verify",
    ]
    assert sorted(h["event"] for h in provides["hooks"]) == [
        "PreToolUse",
        "PreToolUse",
        "SessionStart",
        "SubagentStop",
    ]


def inventory(details: str) -> dict[str, list[str]]:
    """`Skills (5)  batch, ...` lines of `claude plugin details`, as name lists."""
    found = {}
    for match in re.finditer(r"^\s*(Skills|Agents|Hooks) \((\d+)\)\s+(.*)$", details, re.M):
        kind, count, rest = match.groups()
        names = [n.strip() for n in rest.split("(")[0].split(",") if n.strip()]
        assert len(names) == int(count), match.group(0)
        found[kind] = names
    return found


def test_marketplace_install_from_a_clone_lists_every_component(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(*NOT_PLUGIN), symlinks=True)
    home = tmp_path / "home"
    home.mkdir()

    added = run_claude(["plugin", "marketplace", "add", str(clone)], home=home)
    assert added.returncode == 0, added.stdout + added.stderr
    marketplace = load(MARKETPLACE_JSON)["name"]
    installed = run_claude(["plugin", "install", f"santa-method@{marketplace}"], home=home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    details = run_claude(["plugin", "details", "santa-method"], home=home)
    assert details.returncode == 0, details.stdout + details.stderr

    parts = inventory(details.stdout)
    # Commands are listed among the skills, without the plugin prefix.
    assert sorted(parts["Skills"]) == ["batch", "escape", "metrics", "santa-method", "verify"]
    assert sorted(parts["Agents"]) == ["fixer", "reviewer"]
    assert sorted(parts["Hooks"]) == ["PreToolUse", "SessionStart", "SubagentStop"]

    # The installed copy keeps what the hooks run, executable.
    (copy,) = (home / ".claude" / "plugins" / "cache").glob(f"{marketplace}/santa-method/*")
    assert os.access(copy / "libexec" / "santa", os.X_OK)
    assert (copy / "scripts" / "bootstrap.py").is_file()
    assert (copy / "scripts" / "santa_method" / "__init__.py").is_file()
