"""Fixtures shared by every test folder.

Re-exports the scripted model server fixtures from ``tests/e2e/conftest.py``
(``stub_server``, ``claude_cli``, ``claude_env``, ``run_claude``) so that
tests outside ``tests/e2e`` (headless backends, batches, benchmarks' smoke
tests) use the same isolation. Import the server's classes with
``from e2e.stub_server import StubServer, Text, ...``: pytest puts ``tests/``
on ``sys.path`` for this file.
"""

from e2e.conftest import claude_cli, claude_env, run_claude, stub_server

__all__ = ["claude_cli", "claude_env", "run_claude", "stub_server"]

import json
import os
from pathlib import Path

import pytest

# As `santa gate` does: the gate's checks of replies from Claude Code (state/sources.py).
import santa_method.claude_code.provenance  # noqa: F401
from _reviews import pass_review

# Variables by which the helper knows it runs inside Claude Code. A developer
# may run these tests from a Claude Code session; each test sets them itself
# when it means to be "inside".
_CLAUDE_CODE_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT")


@pytest.fixture(autouse=True)
def _outside_claude_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name in _CLAUDE_CODE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # Target locks live in the user's cache: the tests' own, not the developer's.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "user-cache"))


@pytest.fixture
def santa_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`tmp_path` as the current project of commands run outside Claude Code:
    no `CLAUDE*` variable at all (so neither the project root nor the source
    comes from the developer's session), its own `.santa/` and its own log.

    Tests add the files they need; `user_files` below is the folder of
    commands run from inside a project (CLAUDE_PROJECT_DIR, the default log).
    """
    for name in [k for k in os.environ if k.startswith("CLAUDE")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / ".santa"))
    monkeypatch.setenv("SANTA_LOG", str(tmp_path / ".santa" / "log.jsonl"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def user_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a good file of each kind `_readers.READERS` names."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / ".santa"))
    for name in ("SANTA_LOG", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "SANTA_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".santa").mkdir()
    (tmp_path / "out.md").write_text("# Title\n\nText.\n", encoding="utf-8")
    (tmp_path / "spec.md").write_text("A title and some text.\n", encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(pass_review()), encoding="utf-8")
    (tmp_path / "c.json").write_text(json.dumps(pass_review(suggestions=["c"])), encoding="utf-8")
    (tmp_path / "items.jsonl").write_text('{"id": "1", "output": "x"}\n', encoding="utf-8")
    return tmp_path
