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
    # No test reaches a real OpenAI-compatible API: tests name their stub's endpoint.
    for name in [k for k in os.environ if k.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    # Target locks live in the user's cache: the tests' own, not the developer's.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "user-cache"))


@pytest.fixture
def santa_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`tmp_path` as the current project of commands run outside Claude Code:
    no `CLAUDE*` variable at all (so neither the project root nor the source
    comes from the developer's session), its own `.santa/` and its own log.

    Tests add the files they need; `project` below is the folder of
    commands run from inside a project (CLAUDE_PROJECT_DIR, the default log).
    """
    for name in [k for k in os.environ if k.startswith("CLAUDE")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / ".santa"))
    monkeypatch.setenv("SANTA_LOG", str(tmp_path / ".santa" / "log.jsonl"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current project of commands run from inside it (as Claude Code or
    a CI job runs them): `tmp_path / "project"`, named by CLAUDE_PROJECT_DIR,
    with its own `.santa/`, the default log, no credentials and no backend
    chosen by the developer's environment.

    Test files that need more (an open round, a git repository, a house
    rubric) build on this one under the same name."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    monkeypatch.setenv("SANTA_HOME", str(root / ".santa"))
    for name in (
        "SANTA_LOG",
        "SANTA_BACKEND",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def target(project: Path) -> Path:
    """A README whose year (1999) the scripted reviewers flag and fixers change."""
    path = project / "README.md"
    path.write_text("# Tool\n\nReleased in 1999.\n\n## License\nMIT\n", encoding="utf-8")
    return path


@pytest.fixture
def user_files(project: Path) -> Path:
    """`project` with a good file of each kind `_readers.READERS` names."""
    (project / ".santa").mkdir()
    (project / "out.md").write_text("# Title\n\nText.\n", encoding="utf-8")
    (project / "spec.md").write_text("A title and some text.\n", encoding="utf-8")
    (project / "b.json").write_text(json.dumps(pass_review()), encoding="utf-8")
    (project / "c.json").write_text(json.dumps(pass_review(suggestions=["c"])), encoding="utf-8")
    (project / "items.jsonl").write_text('{"id": "1", "output": "x"}\n', encoding="utf-8")
    return project
