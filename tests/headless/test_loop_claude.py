"""The claude backend: the real Claude Code CLI (bundled in claude-agent-sdk) against the stub.

Slower than the anthropic tests (one CLI process per reviewer), so only the
cases that differ: structured output through the StructuredOutput tool, one
process per reviewer with read-only tools, and a missing structured output.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import IGNORED_TOOLS, REVIEWER, Json, Text
from santa_method.core.schema import strict_schema
from santa_method.headless import verify_sync
from santa_method.headless.backends.base import ReviewRequest
from santa_method.headless.backends.claude import ClaudeBackend

from .conftest import CRITERIA, passing

pytestmark = pytest.mark.slow


def backend(server: Any, claude_env: Any, claude_cli: str) -> ClaudeBackend:
    env = claude_env(server, CLAUDE_CODE_MAX_RETRIES="1")
    return ClaudeBackend(env=env, max_retries=1, cli_path=claude_cli)


def test_nice_at_round_1_through_structured_output(
    stub_server, claude_env, claude_cli, project, target
):
    server = stub_server({REVIEWER: lambda body: Json(passing(body, str(len(body["messages"]))))})
    result = verify_sync(
        "Has a License section.", target, backend=backend(server, claude_env, claude_cli)
    )
    assert result.verdict == "NICE", result.to_json()
    requests = server.requests_for(REVIEWER)
    assert len(requests) == 2
    # One CLI process (session) per reviewer, each offered only read-only tools
    # plus the structured output tool.
    assert len({r.headers.get("x-claude-code-session-id") for r in requests}) == 2
    for request in requests:
        assert set(request.tools) - IGNORED_TOOLS <= {"Read", "Grep", "Glob"}
        assert "StructuredOutput" in request.tools
    assert result.cost_usd is not None and result.cost_usd > 0
    assert result.tokens.input > 0


def test_missing_structured_output_is_a_failed_review(stub_server, claude_env, claude_cli, project):
    server = stub_server({REVIEWER: [Text("I looked; it is fine.")]})
    request = ReviewRequest(
        prefix="# santa-method review assignment\n",
        round_part="output\nsanta-canary: abc\n",
        schema=strict_schema(CRITERIA),
        project_dir=str(project),
    )
    reply = asyncio.run(backend(server, claude_env, claude_cli).review(request))
    assert reply.obj is None
    assert reply.failure and "structured" in reply.failure
    # The CLI may remind the model once to call StructuredOutput; then it gives up.
    assert 1 <= len(server.requests_for(REVIEWER)) <= 2


def test_backend_error_is_one_sentence(stub_server, claude_env, claude_cli, project, target):
    from e2e.stub_server import Error
    from santa_method.core.errors import BackendError

    server = stub_server({REVIEWER: lambda body: Error(401)})
    with pytest.raises(BackendError, match="401"):
        verify_sync("spec", Path(target), backend=backend(server, claude_env, claude_cli))
