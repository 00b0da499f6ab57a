"""A scripted stand-in for an OpenAI-compatible Chat Completions API, on loopback.

Why: the `openai` backend talks to OpenAI, Gemini's compatible endpoint,
OpenRouter and local servers through the official SDK; tests replace the
model with a script (as `tests/e2e/stub_server.py` does for the Messages
API) and assert on what santa did with it. Standard library only.

    server = openai_stub({REVIEWER: [Json(review), Json(review)]})
    OpenAIBackend(base_url=server.base_url, api_key="test")

Every ``POST /v1/chat/completions`` gets a role from its system message
(``santa-method reviewer`` -> ``reviewer``, ``santa-method fixer`` ->
``fixer``, else ``other``). ``script`` maps a role to a list of steps (one
per request, in arrival order) or to a callable ``fn(body) -> step`` used
for every request; a step is a reply value or ``fn(body) -> reply value``.
Reply values:

* ``str``/:class:`Text`, :class:`Json` (the object as the message's text),
  or :class:`Reply` (``content``, ``delay`` before anything is sent,
  ``stream_delay`` between the first chunk and the rest, ``usage`` (a
  :class:`Usage`, or None for a reply without one), ``finish_reason``,
  ``refusal``, ``model``);
* :class:`Error` ``(status, message, ...)``: the status with OpenAI's
  ``{"error": {...}}`` body;
* :class:`Cut` ``(chunks=1)``: the reply begins (``chunks`` events of a
  stream, or half of a JSON body), declares a longer body and hangs up;
* :class:`EndEarly`: a stream that ends cleanly before its finish reason;
* :class:`Raw` ``(body, content_type)``: bytes no client can read;
* :class:`Disconnect`: the connection closes unanswered.

Streams are ``chat.completion.chunk`` events ending in ``data: [DONE]``;
the usage comes in a last chunk with no choices when the request asks for
it (``stream_options.include_usage``), as OpenAI sends it. Server options:
``structured=False`` answers 400 to a request with a ``json_schema``
response format, as servers without structured output do;
``legacy_tokens=True`` answers 400 to ``max_completion_tokens``.
When a role's script runs out the reply is ``Text("Done.")``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from e2e.stub_server import hang_up

REVIEWER, FIXER, OTHER = "reviewer", "fixer", "other"
MARKERS = {REVIEWER: "santa-method reviewer", FIXER: "santa-method fixer"}


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Json:
    obj: Any


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | float | str | None = 100
    completion_tokens: int | float | str | None = 20
    cached_tokens: int | float | str | None = None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        if all(isinstance(v, int) for v in found.values()):
            found["total_tokens"] = sum(found.values())
        if self.cached_tokens is not None:
            found["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return found


@dataclass(frozen=True)
class Reply:
    content: str | Text | Json = ""
    delay: float = 0.0
    stream_delay: float = 0.0
    usage: Usage | None = field(default_factory=Usage)
    finish_reason: str = "stop"
    refusal: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Error:
    status: int
    message: str = "stub error"
    type: str | None = None
    code: str | None = None
    param: str | None = None
    retry_after: float | None = None

    def body(self) -> dict[str, Any]:
        kind = self.type or {
            400: "invalid_request_error",
            401: "invalid_request_error",
            404: "invalid_request_error",
            429: "rate_limit_exceeded",
        }.get(self.status, "server_error")
        return {
            "error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}
        }


@dataclass(frozen=True)
class Cut:
    chunks: int = 1


@dataclass(frozen=True)
class EndEarly:
    pass


@dataclass(frozen=True)
class Raw:
    body: bytes
    content_type: str = "text/event-stream"


@dataclass(frozen=True)
class Disconnect:
    delay: float = 0.0


@dataclass
class Recorded:
    """One request: its path, headers (lower-cased), parsed body, role, and what was sent."""

    path: str
    headers: dict[str, str]
    body: Any
    role: str = ""
    status: int = 0
    reply: Any = None


def system_text(body: Mapping[str, Any]) -> str:
    return "\n".join(
        _text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"
    )


def first_user_text(body: Mapping[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _content(value: str | Text | Json) -> str:
    if isinstance(value, Json):
        return json.dumps(value.obj)
    return value.text if isinstance(value, Text) else value


class OpenAIStub:
    """The scripted server; `start()` it (the `openai_stub` fixture does) and `stop()` it."""

    def __init__(
        self,
        script: Mapping[str, Any] | None = None,
        *,
        structured: bool = True,
        legacy_tokens: bool = False,
        model: str = "gpt-5.1-2025-11-13",
    ) -> None:
        self.script = dict(script or {})
        self.structured = structured
        self.legacy_tokens = legacy_tokens
        self.model = model
        self.errors: list[str] = []
        self._requests: list[Recorded] = []
        self._cursors: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> OpenAIStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 60

            def do_POST(self) -> None:
                stub._handle(self)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda *args: None  # type: ignore[method-assign]
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def check(self) -> None:
        """Raise if a reply function raised (the client only saw a 500)."""
        if self.errors:
            raise AssertionError("; ".join(self.errors))

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- what happened --------------------------------------------------------

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, role: str) -> list[Recorded]:
        return [r for r in self.requests if r.role == role]

    # -- answering ------------------------------------------------------------

    def _role(self, body: Mapping[str, Any]) -> str:
        system = system_text(body)
        return next((role for role, marker in MARKERS.items() if marker in system), OTHER)

    def _step(self, role: str, body: Mapping[str, Any]) -> Any:
        steps = self.script.get(role)
        if callable(steps):
            step: Any = steps
        else:
            with self._lock:
                index = self._cursors.get(role, 0)
                self._cursors[role] = index + 1
            step = steps[index] if steps is not None and index < len(steps) else Text("Done.")
        return step(body) if callable(step) else step

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        record = Recorded(
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
        )
        with self._lock:
            self._requests.append(record)
        try:
            self._route(handler, record)
        except (BrokenPipeError, ConnectionResetError):
            record.status = record.status or 499

    def _route(self, handler: BaseHTTPRequestHandler, record: Recorded) -> None:
        body = record.body
        if handler.path.rstrip("/") != "/v1/chat/completions" or not isinstance(body, dict):
            return self._send_json(handler, record, 404, Error(404, "no such route").body())
        record.role = self._role(body)
        form = (body.get("response_format") or {}).get("type")
        if form == "json_schema" and not self.structured:
            error = Error(400, "response_format type 'json_schema' is not supported by this server")
            return self._send_json(handler, record, 400, error.body())
        if "max_completion_tokens" in body and self.legacy_tokens:
            error = Error(400, "Unrecognized request argument supplied: max_completion_tokens")
            return self._send_json(handler, record, 400, error.body())
        try:
            reply = self._step(record.role, body)
        except Exception as exc:  # a broken script: the test fails at teardown
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return self._send_json(handler, record, 500, Error(500, "script error").body())
        if isinstance(reply, str | Text | Json):
            reply = Reply(reply)
        record.reply = reply
        delay = getattr(reply, "delay", 0.0)
        if delay and self._stopping.wait(delay):
            return None
        if isinstance(reply, Disconnect):
            hang_up(handler)
            return None
        if isinstance(reply, Error):
            extra = {"retry-after": f"{reply.retry_after:g}"} if reply.retry_after else {}
            return self._send_json(handler, record, reply.status, reply.body(), extra)
        if isinstance(reply, Raw):
            return self._send(handler, record, 200, reply.body, reply.content_type)
        stream = bool(body.get("stream"))
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if isinstance(reply, Cut | EndEarly):
            whole = Reply("x" * 40)
            if stream:
                events = self._chunks(whole, body, with_usage)
                if isinstance(reply, Cut):
                    data = b"".join(events[: reply.chunks])
                else:  # every chunk that holds no finish reason, then nothing
                    data = b"".join(e for e in events if b'"finish_reason": null' in e)
                declared = len(b"".join(events))
            else:
                full = json.dumps(self._completion(whole, body)).encode()
                data, declared = full[: len(full) // 2], len(full)
            if isinstance(reply, EndEarly):
                return self._send(handler, record, 200, data, "text/event-stream")
            return self._cut(handler, record, data, declared, stream)
        assert isinstance(reply, Reply), reply
        if not stream:
            return self._send_json(handler, record, 200, self._completion(reply, body))
        events = self._chunks(reply, body, with_usage)
        record.status = 200
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(sum(map(len, events))))
        handler.end_headers()
        handler.wfile.write(events[0])
        handler.wfile.flush()
        if reply.stream_delay and self._stopping.wait(reply.stream_delay):
            return None
        handler.wfile.write(b"".join(events[1:]))
        handler.wfile.flush()
        return None

    def _completion(self, reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if reply.refusal else _content(reply.content),
            "refusal": reply.refusal,
        }
        data: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        }
        if reply.usage is not None:
            data["usage"] = reply.usage.as_dict()
        return data

    def _chunks(self, reply: Reply, body: Mapping[str, Any], with_usage: bool) -> list[bytes]:
        """The reply as SSE events: role, the text in three parts, the finish, usage, [DONE]."""
        head = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": reply.model or self.model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        text = _content(reply.content)
        third = max(1, len(text) // 3)
        parts = [text[i : i + third] for i in range(0, len(text), third)] or [""]
        events = [chunk({"role": "assistant", "content": ""})]
        if reply.refusal:
            events.append(chunk({"refusal": reply.refusal}))
        else:
            events += [chunk({"content": part}) for part in parts]
        events.append(chunk({}, reply.finish_reason))
        if with_usage and reply.usage is not None:
            events.append({**head, "choices": [], "usage": reply.usage.as_dict()})
        encoded = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
        return [*encoded, b"data: [DONE]\n\n"]

    # -- sending --------------------------------------------------------------

    def _cut(
        self,
        handler: BaseHTTPRequestHandler,
        record: Recorded,
        data: bytes,
        declared: int,
        stream: bool,
    ) -> None:
        record.status = 200
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream" if stream else "application/json")
        handler.send_header("Content-Length", str(declared))
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
        hang_up(handler)

    def _send_json(
        self,
        handler: BaseHTTPRequestHandler,
        record: Recorded,
        status: int,
        payload: Any,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self._send(handler, record, status, json.dumps(payload).encode(), "application/json", extra)

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        record: Recorded,
        status: int,
        data: bytes,
        content_type: str,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        record.status = status
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        with contextlib.suppress(OSError):
            handler.wfile.write(data)
            handler.wfile.flush()


Step = Any
Script = Mapping[str, list[Step] | Callable[[dict[str, Any]], Any]]
