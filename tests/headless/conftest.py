"""Review builders for the headless loop, and a Messages API that answers
with broken replies. The project and its `target` come from tests/conftest.py.

Why builders take the request body: the canary is drawn per round, so a
scripted reviewer must read it from the assignment it was sent, exactly
as a real reviewer does.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from _reviews import review_of
from e2e.stub_server import Json, first_user_text

from .broken_streams import BROKEN
from .openai_stub import OpenAIStub
from .scripted import CRITERIA

_CANARY = re.compile(r"santa-canary: ([0-9a-f]+)\s*$")


def canary_of(body: dict[str, Any]) -> str:
    match = _CANARY.search(first_user_text(body))
    assert match, "the reviewer's first message must end with the canary line"
    return match.group(1)


def passing(body: dict[str, Any], note: str = "") -> dict[str, Any]:
    return review_of(CRITERIA, suggestions=[note] if note else [], canary=canary_of(body))


def failing(body: dict[str, Any], quote: str, note: str = "") -> dict[str, Any]:
    flag = {"criterion": "factual-accuracy", "issue": "the year is wrong", "quote": quote}
    return review_of(
        CRITERIA,
        [flag],
        detail="x",
        suggestions=[note] if note else [],
        canary=canary_of(body),
    )


def pass_reply(note: str = "") -> Callable[[dict[str, Any]], Json]:
    return lambda body: Json(passing(body, note))


@pytest.fixture(params=["anthropic 2.17 and later", "anthropic before 2.17"])
def sdk_cut_errors(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A body that stops arriving, as each generation of the SDK reports it:
    2.17 and later wrap the HTTP client's error in APIConnectionError (as for a
    host that cannot be reached); earlier releases let it through. The second
    takes the SDK's wrapping of body reads out again."""
    if request.param == "anthropic before 2.17":
        import anthropic._response
        import anthropic._streaming

        async def unwrapped(response: Any, client: Any) -> AsyncIterator[bytes]:
            async for chunk in response.aiter_bytes():
                yield chunk

        for module in (anthropic._streaming, anthropic._response):
            monkeypatch.setattr(module, "async_iter_response_bytes", unwrapped, raising=False)
    return str(request.param)


@pytest.fixture
def broken_api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A Messages API on loopback answering every request with `BROKEN[request.param]`."""
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


@pytest.fixture
def openai_stub() -> Iterator[Callable[..., OpenAIStub]]:
    """`openai_stub(script, **options)`: a started OpenAI-compatible stub
    (`openai_stub.py`), stopped after the test, whose script errors fail it."""
    started: list[OpenAIStub] = []

    def start(script: Any = None, **options: Any) -> OpenAIStub:
        server = OpenAIStub(script, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
    for server in started:
        server.check()
