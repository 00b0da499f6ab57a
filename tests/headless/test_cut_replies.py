"""A reply whose connection breaks after it began (issue 11, item 8).

The server sends the start of the reply, declares a longer body than it
sends, and closes the connection. The SDK does not retry that (anthropic
2.17 and later call it a connection error, earlier releases let the HTTP
client's error through; `sdk_cut_errors` runs each test both ways). santa
sends the call again, as often as the SDK retries a connection that fails
before the reply, and when every try is cut: exit 3 with the reason, never
"internal error", never NICE.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER, StubServer, Usage, _sse_events, hang_up
from santa_method.cli import main
from santa_method.core.errors import BackendError
from santa_method.core.schema import strict_schema
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends import anthropic as anthropic_backend
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.headless.backends.base import ReviewRequest, Tokens
from santa_method.state import log as runlog

from .conftest import CRITERIA, pass_reply

pytestmark = pytest.mark.timeout(60)

SPEC = "A README with the release year and a License section."


def cut_streams(monkeypatch: pytest.MonkeyPatch, count: int | None = None) -> None:
    """The next `count` event streams (all of them when None) end after
    `message_start`, on a body that declared itself longer, and no new try
    waits."""
    monkeypatch.setattr(anthropic_backend, "CUT_RETRY_DELAY", 0.0)
    real = StubServer._send_stream
    left = [count]
    lock = threading.Lock()

    def send(
        self: StubServer, handler: Any, record: Any, message: dict[str, Any], *hold: Any
    ) -> None:
        with lock:
            cut = left[0] is None or left[0] > 0
            if left[0] is not None and cut:
                left[0] -= 1
        if not cut:
            return real(self, handler, record, message, *hold)
        head, tail = _sse_events(message)
        record.status = 200
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(len(head) + len(tail)))
        handler.end_headers()
        handler.wfile.write(head)
        handler.wfile.flush()
        hang_up(handler)
        return None

    monkeypatch.setattr(StubServer, "_send_stream", send)


def test_a_reply_cut_on_every_try_is_exit_3_with_the_reason(
    stub_server,
    project: Path,
    target: Path,
    monkeypatch,
    capsys: pytest.CaptureFixture[str],
    sdk_cut_errors: str,
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    cut_streams(monkeypatch)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(["run", "--against", str(target), "--spec-text", SPEC, "--quiet"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "broke before its reply ended" in err and "on each of 3 tries" in err
    assert "internal error" not in err and "Traceback" not in err
    assert "NICE" not in out
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] == "ship"]


def test_a_reply_cut_once_is_sent_again_and_judged(
    stub_server, project: Path, target: Path, monkeypatch, sdk_cut_errors: str
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    # Cuts of their own, undone alone: `monkeypatch` also holds the project's
    # folder and SANTA_HOME, which the uncut run below must keep.
    with pytest.MonkeyPatch.context() as cuts:
        cut_streams(cuts, count=1)
        backend = AnthropicBackend(base_url=server.base_url, api_key="test")
        result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend))
    assert result.verdict == "NICE"
    assert len(server.requests_for(REVIEWER)) == 3  # 2 reviewers, one of them twice
    # The cut try is billed too: its input and the token it wrote before the
    # cut (the stub's message_start), on top of what an uncut run costs.
    again = AnthropicBackend(base_url=server.base_url, api_key="test")
    uncut = verify_sync(SPEC, target, options=VerifyOptions(backend=again))
    assert uncut.verdict == "NICE"
    assert result.tokens == uncut.tokens + Tokens(input=Usage().input_tokens, output=1)
    assert uncut.cost_usd is not None and result.cost_usd is not None
    assert result.cost_usd > uncut.cost_usd


def review_once(backend: AnthropicBackend) -> None:
    request = ReviewRequest(
        prefix="Instructions, the rubric and the spec.\n",
        round_part="The output.\nsanta-canary: abc123",
        schema=strict_schema(CRITERIA),
        model="sonnet",
        label="B",
    )

    async def call() -> None:
        try:
            await backend.review(request)
        finally:
            await backend.aclose()

    asyncio.run(call())


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_a_call_is_tried_once_more_than_it_may_be_retried(
    stub_server, monkeypatch, retries: int, sdk_cut_errors: str
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    cut_streams(monkeypatch)
    backend = AnthropicBackend(base_url=server.base_url, api_key="test", max_retries=retries)
    times = "once" if retries == 0 else f"on each of {retries + 1} tries"
    with pytest.raises(BackendError, match=f"broke before its reply ended.*, {times}$"):
        review_once(backend)
    assert len(server.requests_for(REVIEWER)) == retries + 1


def test_a_host_that_cannot_be_reached_is_not_a_cut_reply(monkeypatch, sdk_cut_errors: str) -> None:
    """Only a connection that breaks once the answer began is sent again by
    santa; one that never connects was retried by the SDK already."""
    monkeypatch.setattr(anthropic_backend, "CUT_RETRY_DELAY", 0.0)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    backend = AnthropicBackend(base_url=f"http://127.0.0.1:{port}", api_key="test", max_retries=0)
    with pytest.raises(BackendError, match=r"^cannot reach the Anthropic API at http://127\.0\.0\.1"):
        review_once(backend)
