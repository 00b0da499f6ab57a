"""The claude backend: the real Claude Code CLI (bundled in claude-agent-sdk) against the stub.

Slower than the anthropic tests (one CLI process per reviewer), so only the
cases that differ: structured output through the StructuredOutput tool, one
process per reviewer with read-only tools, a missing structured output, the
fixer editing the working copy with the CLI's own tools, a hand-back that
resumes the reviewer's session, and --cache-warm timed by stream events.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from _reviews import output_of
from e2e.stub_server import (
    FIXER,
    IGNORED_TOOLS,
    REVIEWER,
    Json,
    Reply,
    Text,
    ToolUse,
    conversation,
    first_user_text,
    last_user_text,
)
from santa_method.core.schema import strict_schema
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import ReviewRequest
from santa_method.headless.backends.claude import ClaudeBackend
from santa_method.state import log as runlog

from .conftest import CRITERIA, failing, passing

pytestmark = pytest.mark.slow


def backend(server: Any, claude_env: Any, claude_cli: str) -> ClaudeBackend:
    env = claude_env(server, CLAUDE_CODE_MAX_RETRIES="1")
    return ClaudeBackend(env=env, max_retries=1, cli_path=claude_cli)


def records(project: Path, run_id: str, event: str) -> list[dict[str, Any]]:
    found = runlog.read(project / ".santa" / "log.jsonl").records
    return [r for r in found if r["run_id"] == run_id and r["event"] == event]


def failing_review(body: dict[str, Any]) -> dict[str, Any]:
    """A FAIL in the strict schema's shape: the CLI checks StructuredOutput
    input against it, so every issue field is present (null when unused)."""
    review = failing(body, "Released in 1999.")
    review["critical_issues"][0].update(missing=None, location=None)
    return review


SPEC = "A README with the release year and a License section."


def test_nice_at_round_1_through_structured_output(
    stub_server, claude_env, claude_cli, project, target
):
    server = stub_server({REVIEWER: lambda body: Json(passing(body, str(len(body["messages"]))))})
    result = verify_sync(
        "Has a License section.",
        target,
        options=VerifyOptions(backend=backend(server, claude_env, claude_cli)),
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
        verify_sync(
            "spec",
            Path(target),
            options=VerifyOptions(backend=backend(server, claude_env, claude_cli)),
        )


def test_fixer_edits_the_working_copy_then_nice(
    stub_server, claude_env, claude_cli, project, target
):
    original = target.read_text()

    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing_review(body))
        return Json(passing(body))

    def working_copy(body: dict[str, Any]) -> str:
        found = re.search(r"The file to edit is (.+?) \(a working copy\)", first_user_text(body))
        assert found, "the fixer must be told which file to edit"
        return found.group(1)

    # The fixer reads the file, edits it with the CLI's Edit tool, and reports.
    server = stub_server(
        {
            REVIEWER: reviewer,
            FIXER: [
                lambda body: ToolUse("Read", {"file_path": working_copy(body)}),
                lambda body: ToolUse(
                    "Edit",
                    {"file_path": working_copy(body), "old_string": "1999", "new_string": "2024"},
                ),
                Text("1. fixed: year"),
            ],
        }
    )
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server, claude_env, claude_cli))
    )
    assert result.verdict == "NICE", result.to_json()
    assert [r.next for r in result.history] == ["fix", "ship"]
    assert target.read_text() == original  # the user's file changes only with in_place
    working = Path(result.output_path)
    assert working != target
    assert working.read_text() == result.output == original.replace("1999", "2024")
    fixer_requests = server.requests_for(FIXER)
    assert len(fixer_requests) == 3
    # The fixer edits a copy alone in a scratch folder; the loop takes its text back.
    edited = Path(working_copy(fixer_requests[0].body))
    assert edited.name == working.name and edited != working and not edited.exists()
    assert "Edit" in fixer_requests[0].tools
    (fix,) = records(project, result.run_id, "fix")
    # Three fixer requests at the stub's 100 in / 20 out each.
    assert fix["tokens"] == 360
    assert fix["token_detail"]["input"] == 300 and fix["token_detail"]["output"] == 60
    assert fix["cost_usd"] > 0 and fix["notes"] == "1. fixed: year"


def test_invalid_reply_is_handed_back_in_the_same_session(
    stub_server, claude_env, claude_cli, project, target
):
    lock = threading.Lock()
    fresh = {"asks": 0}

    def reviewer(body: dict[str, Any]) -> Json:
        if len(conversation(body)) == 1:
            with lock:
                fresh["asks"] += 1
                first = fresh["asks"] == 1
            if first:  # the first reviewer to ask echoes a wrong canary
                return Json({**passing(body), "canary": "0000"})
        return Json(passing(body))

    server = stub_server({REVIEWER: reviewer})
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server, claude_env, claude_cli))
    )
    assert result.verdict == "NICE", result.to_json()
    requests = server.requests_for(REVIEWER)
    assert len(requests) == 3
    (again,) = [r for r in requests if len(conversation(r.body)) > 1]
    session = again.headers["x-claude-code-session-id"]
    (first,) = [r for r in requests if r is not again and r.conversation == session]
    # The hand-back continues the first conversation: the assignment, the
    # reviewer's own first reply (the wrong canary), then the feedback.
    assert first_user_text(again.body) == first_user_text(first.body)
    handed_back = conversation(again.body)[1]["content"]
    assert handed_back[0]["name"] == "StructuredOutput"
    assert handed_back[0]["input"]["canary"] == "0000"
    feedback = last_user_text(again.body)
    assert "not valid and was not counted" in feedback and "canary" in feedback
    asks = sorted(r.asks for r in result.history[0].reviewers)
    assert asks == [1, 2]
    (twice,) = [r for r in result.history[0].reviewers if r.asks == 2]
    assert twice.valid and twice.verdict == "PASS"
    # A resumed session reports the whole session's totals; only its own two
    # requests count (100 in / 20 out each), never the first one again.
    assert (twice.tokens.input, twice.tokens.output) == (200, 40)
    assert twice.cost_usd == pytest.approx(2 * 0.0008)


def test_cache_warm_starts_the_others_once_the_first_streams(
    stub_server, claude_env, claude_cli, project, target
):
    lock = threading.Lock()
    seen = {"requests": 0}
    second_came = threading.Event()

    def reviewer(body: dict[str, Any]) -> Any:
        with lock:
            seen["requests"] += 1
            first = seen["requests"] == 1
        if first:
            # Begins streaming after 1 s and ends once the second request came
            # (at the latest after 60 s): a loaded machine may take seconds to
            # start the second CLI, which must not make the test flaky.
            return Reply(Json(passing(body)), delay=1.0, stream_delay=60, stream_until=second_came)
        second_came.set()
        return Json(passing(body))

    server = stub_server({REVIEWER: reviewer})
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(backend=backend(server, claude_env, claude_cli), cache_warm=True),
    )
    assert result.verdict == "NICE", result.to_json()
    first, second = server.requests_for(REVIEWER)
    assert first.conversation != second.conversation
    assert second.arrived - first.arrived >= 1.0  # waited for the first stream to begin
    assert first.finished is not None and second.arrived < first.finished  # not for its end


def test_in_place_the_fixer_cannot_change_any_other_file(
    stub_server, claude_env, claude_cli, project, target
):
    """Only the flagged text can change: an edit beside it is refused, so
    nothing unreviewed ships even when the user's file is edited in place."""
    other = project / "other.py"
    other.write_text("SAFE = True\n", encoding="utf-8")

    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing_review(body))
        return Json(passing(body))

    def copy(body: dict[str, Any]) -> str:
        found = re.search(r"The file to edit is (.+?) \(a working copy\)", first_user_text(body))
        assert found
        return found.group(1)

    server = stub_server(
        {
            REVIEWER: reviewer,
            FIXER: [
                lambda body: ToolUse(
                    "Edit", {"file_path": copy(body), "old_string": "1999", "new_string": "2024"}
                ),
                lambda body: ToolUse(
                    "Write", {"file_path": str(other), "content": "SAFE = False  # side edit\n"}
                ),
                Text("1. fixed: year"),
            ],
        }
    )
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(backend=backend(server, claude_env, claude_cli), in_place=True),
    )
    assert result.verdict == "NICE", result.to_json()
    assert "2024" in target.read_text()
    assert other.read_text() == "SAFE = True\n"


def test_a_reviewer_cannot_read_santas_own_folder(
    stub_server, claude_env, claude_cli, project, target
):
    """Reviewers may read the project, not earlier rounds or other replies."""
    target.write_text("# Tool\n\nReleased in 2024.\n\n## License\nMIT\n", encoding="utf-8")
    secret = project / ".santa" / "runs" / "earlier" / "state.json"
    secret.parent.mkdir(parents=True)
    secret.write_text('{"note": "the year is wrong"}', encoding="utf-8")
    seen: dict[str, str] = {}

    def reviewer(body: dict[str, Any]) -> Any:
        if "tool_result" not in str(conversation(body)):
            return ToolUse("Read", {"file_path": str(secret)})
        seen["result"] = str(conversation(body))
        return Json(passing(body))

    server = stub_server({REVIEWER: reviewer})
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server, claude_env, claude_cli))
    )
    assert result.verdict == "NICE", result.to_json()
    assert "the year is wrong" not in seen["result"]
