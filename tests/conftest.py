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


import pytest

# Variables by which the helper knows it runs inside Claude Code. A developer
# may run these tests from a Claude Code session; each test sets them itself
# when it means to be "inside".
_CLAUDE_CODE_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT")


@pytest.fixture(autouse=True)
def _outside_claude_code(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _CLAUDE_CODE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
