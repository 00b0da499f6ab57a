"""The installed copy's check for local files (scripts/install_check.py).

It runs inside the SessionStart bootstrap on every session, so it must be
right about what git ignores, look at names only (a copied `.env` is never
opened), skip a checkout, and speak once per finding.
"""

from __future__ import annotations

import builtins
import importlib.util
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "install_check", ROOT / "scripts" / "install_check.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load()
PATTERNS = ["*.pyc", ".venv/", "evals/results/", "/top.txt", "*.log", "!keep.log"]


@pytest.mark.parametrize(
    ("rel", "is_dir", "expected"),
    [
        ("a/b.pyc", False, True),
        (".venv", True, True),
        (".venv", False, False),  # a file named like a folder pattern
        ("sub/.venv", True, True),  # no slash inside: any depth
        ("evals/results", True, True),
        ("x/evals/results", True, False),  # an inner slash anchors at the root
        ("top.txt", False, True),
        ("sub/top.txt", False, False),
        ("a.log", False, True),
        ("keep.log", False, False),  # the last match wins
        ("README.md", False, False),
    ],
)
def test_ignored_follows_gitignore_rules(rel: str, is_dir: bool, expected: bool) -> None:
    assert check.ignored(rel, is_dir, PATTERNS) is expected


def copy_with_dirt(root: Path) -> Path:
    (root / "scripts" / "santa_method" / "__pycache__").mkdir(parents=True)
    (root / "scripts" / "santa_method" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    (root / ".gitignore").write_text(".venv/\n*.egg-info/\n.santa/runs/\n", encoding="utf-8")
    (root / "SKILL.md").write_text("skill\n", encoding="utf-8")
    (root / ".env").write_text("SECRET=1\n", encoding="utf-8")
    (root / ".env.local").write_text("SECRET=2\n", encoding="utf-8")
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".santa" / "runs").mkdir(parents=True)
    (root / "scripts" / "santa_method.egg-info").mkdir()
    return root


def cache_copy(tmp_path: Path) -> Path:
    return copy_with_dirt(tmp_path / "plugins" / "cache" / "m" / "santa-method" / "0.1.0")


def test_local_files_names_the_dirt_and_not_the_plugin(tmp_path: Path) -> None:
    root = copy_with_dirt(tmp_path / "copy")
    assert check.local_files(root) == [
        ".env",
        ".env.local",
        ".santa/",  # never part of a plugin, though .gitignore names only runs/
        ".venv/",
        "scripts/santa_method.egg-info/",
    ]
    # The plugin's own Python writes bytecode into its copy: not copied dirt.
    (root / ".env").unlink()
    (root / ".env.local").unlink()
    for folder in (".venv", ".santa", "scripts/santa_method.egg-info"):
        subprocess.run(["rm", "-rf", str(root / folder)], check=True)
    assert check.local_files(root) == []


def test_no_copied_file_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    root = cache_copy(tmp_path)
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    text = check.notice(root, str(tmp_path / "data"))
    assert text is not None and ".env" in text
    # Of the copy, only the shipped (tracked) .gitignore is read.
    inside = [p for p in opened if Path(p).is_relative_to(root)]
    assert inside == [str(root / ".gitignore")]


def test_told_once_per_finding(tmp_path: Path) -> None:
    root = cache_copy(tmp_path)
    data = str(tmp_path / "data")
    first = check.notice(root, data)
    assert first and str(root) in first
    assert check.notice(root, data) is None
    (root / ".santa" / "runs" / "r2").mkdir()  # inside a reported folder: same finding
    assert check.notice(root, data) is None
    (root / "build.log").write_text("x", encoding="utf-8")
    (root / ".gitignore").write_text(".venv/\n*.log\n", encoding="utf-8")
    assert check.notice(root, data) is not None  # a new finding is told
    # Without a data folder nothing can be remembered: told every time.
    assert check.notice(root, None) is not None
    assert check.notice(root, None) is not None


def test_a_folder_used_in_place_is_never_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`claude --plugin-dir` runs the user's own folder: nothing was copied."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    root = copy_with_dirt(tmp_path / "clone")
    (root / ".git").mkdir()
    assert check.notice(root, str(tmp_path / "data")) is None


def directory_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A working folder added as a directory marketplace, and its cache copy,
    recorded the way Claude Code records them."""
    config = tmp_path / "home" / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    plugins = config / "plugins"
    copy = copy_with_dirt(plugins / "cache" / "my-market" / "santa-method" / "0.1.0")
    source = copy_with_dirt(tmp_path / "work")
    (source / ".git").mkdir()
    (plugins / "known_marketplaces.json").write_text(
        json.dumps({"my-market": {"source": {"source": "directory", "path": str(source)}}}),
        encoding="utf-8",
    )
    installs = {"santa-method@my-market": [{"scope": "user", "installPath": str(copy)}]}
    (plugins / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": installs}), encoding="utf-8"
    )
    return source, copy


def test_a_directory_marketplace_is_checked_in_its_cache_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code runs such a plugin from the folder itself, so the check
    finds the copy through Claude Code's records; a cache copy run directly
    is checked as it is."""
    source, copy = directory_install(tmp_path, monkeypatch)
    assert check.copies(source) == [(copy, "my-market", str(source))]
    assert check.copies(copy) == [(copy, "my-market", str(source))]
    assert check.copies(tmp_path / "elsewhere") == []


def test_the_message_says_what_where_and_how_to_reinstall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, copy = directory_install(tmp_path, monkeypatch)
    text = check.notice(source, str(tmp_path / "data"))
    assert text is not None
    assert ".env, .env.local, .santa/, .venv/" in text
    assert f"from {source} into {copy}" in text
    assert "does not read or use them" in text
    assert text.endswith(
        "To reinstall cleanly, run: claude plugin uninstall santa-method@my-market && "
        "claude plugin marketplace remove my-market && "
        f"git clone {source} ~/santa-method-plugin && "
        "claude plugin marketplace add ~/santa-method-plugin && "
        "claude plugin install santa-method@santa-method"
    )


def test_the_bootstrap_tells_it_in_one_hook_answer(tmp_path: Path) -> None:
    """As the SessionStart hook runs: one JSON answer on stdout, exit 0."""
    root = cache_copy(tmp_path)
    # A working launcher and helper: the bootstrap's launcher check stays quiet.
    shutil.copytree(
        ROOT / "scripts" / "santa_method",
        root / "scripts" / "santa_method",
        ignore=shutil.ignore_patterns("__pycache__"),
        dirs_exist_ok=True,
    )
    (root / "libexec").mkdir()
    shutil.copy2(ROOT / "libexec" / "santa", root / "libexec" / "santa")
    for name in ("bootstrap.py", "install_check.py"):
        (root / "scripts" / name).write_bytes((ROOT / "scripts" / name).read_bytes())
    env = {
        "PATH": "/usr/bin:/bin",
        "CLAUDE_PLUGIN_ROOT": str(root),
        "CLAUDE_PLUGIN_DATA": str(tmp_path / "data"),
        "SANTA_SKIP_BOOTSTRAP": "1",
    }
    runs = [
        subprocess.run(
            [sys.executable, str(root / "scripts" / "bootstrap.py")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0]
    answer = json.loads(runs[0].stdout)
    assert ".env" in answer["systemMessage"] and str(root) in answer["systemMessage"]
    assert answer["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": answer["systemMessage"],
    }
    assert runs[1].stdout == ""  # once
