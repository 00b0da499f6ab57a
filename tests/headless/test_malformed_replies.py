"""A reply the Messages API backend cannot parse is a backend failure (issue
11, item 8): exit 3 with the reason, never "internal error", never NICE.

The scripted model server speaks the API correctly, so these replies come
from a small local HTTP stub that answers every request with one broken
event stream (or a body that is no event stream at all)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from santa_method.cli import main
from santa_method.state import log as runlog

_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],'
    b'"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
)
BROKEN = {
    # An event whose data is not JSON: the SDK raises JSONDecodeError.
    "not-json": ("text/event-stream", b"event: message_start\ndata: {not json\n\n"),
    # A delta before any message_start: the SDK's accumulator asserts.
    "out-of-order": (
        "text/event-stream",
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"x"}}\n\n',
    ),
    # A stream that ends right after it started.
    "cut-short": ("text/event-stream", _START),
    # A delta for a content block that was never opened.
    "no-block": (
        "text/event-stream",
        _START + b'event: content_block_delta\ndata: {"type":"content_block_delta","index":3,'
        b'"delta":{"type":"text_delta","text":"x"}}\n\n',
    ),
    "empty": ("text/event-stream", b""),
    "html": ("text/html", b"<html><body>502 Bad Gateway</body></html>"),
}


@pytest.fixture
def broken_api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    content_type, body = BROKEN[request.param]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up on the reply first
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda *args: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    try:
        yield request.param
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("broken_api", sorted(BROKEN), indirect=True)
def test_a_reply_that_cannot_be_read_is_a_backend_error(
    project: Path, target: Path, broken_api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--against", str(target), "--spec-text", "Has a License.", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "cannot be read" in err and "internal error" not in err and "Traceback" not in err
    assert "NICE" not in out
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] == "ship"]
