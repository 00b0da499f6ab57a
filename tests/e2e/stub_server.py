"""A scripted stand-in for the Anthropic Messages API, served on loopback.

Why: the model is the one part of an end-to-end run we cannot make
deterministic, so tests replace it with a script and assert on what the
product (helper, hooks, Claude Code, the SDKs) did with it. The same server
serves the real Claude Code CLI (always streaming), the ``anthropic`` SDK
(streaming or not, structured output, errors, retries, timeouts) and the
Message Batches endpoints. Standard library only, so it stays readable.

Quick start::

    from e2e.stub_server import StubServer, Text, ToolUse, last_tool_result_text

    script = {
        "main": [
            ToolUse("Bash", {"command": "echo hi"}),
            lambda body: Text("the tool said " + last_tool_result_text(body, "Bash")),
        ],
    }
    with StubServer(script) as server:   # or the ``stub_server`` fixture
        ...                              # point a client at server.base_url
    server.requests_for("main")[1].body  # what the model was shown

Roles
-----
Every ``POST /v1/messages`` gets a role from ``classify(body, headers)``
(default :class:`Classifier`), in this order:

1. a marker string found in the system prompt -> that role (the earliest
   one if several roles' markers occur). Markers are a constructor argument, ``markers={role: str | [str, ...]}``; the default is
   ``{"reviewer": "santa-method reviewer", "fixer": "santa-method fixer"}``
   and any role name may be added;
2. a side call of the CLI -> ``side``: a request carrying the CLI's headers,
   with no tools, and a ``max_tokens`` of 512 or less or a system prompt
   asking for a title or summary. It gets ``side_text`` and never consumes
   the script. (``claude -p`` made no side calls in 2.1.332; SDK requests
   are never side calls);
3. the offered tools are all read-only (``Read``, ``Grep``, ``Glob``, ``LS``;
   ``StructuredOutput``, ``DeferredToolPlaceholder``, ``ToolSearch`` are
   ignored) -> ``reviewer``;
4. the ``x-claude-code-agent-id`` header is present -> ``other`` (any other
   subagent, e.g. ``general-purpose``);
5. everything else -> ``main``.

Scripts
-------
``script`` maps a role to one of:

* a list of steps, consumed in arrival order by every request of the role
  (one shared cursor: right for the main agent, and for SDK reviewers that
  each make one request);
* :class:`PerAgent` ``(steps_for_1st, steps_for_2nd, ..., rest=steps)``: one
  cursor per conversation, numbered by order of first appearance. The
  conversation is the ``x-claude-code-agent-id`` header (CLI subagents),
  else ``x-claude-code-session-id`` (one per CLI process, as in the
  claude-agent-sdk backend), else ``""`` (plain SDK calls all share one;
  pass ``conversation_key=fn(body, headers)`` to change that);
* a callable ``fn(body) -> reply``, used for every request of the role.

A step is a reply value or a callable ``fn(body) -> reply value`` (``body``
is the parsed JSON request), or :class:`WaitUntil` ``(ready, step,
meanwhile="Waiting.")``, which answers ``meanwhile`` without advancing until
``ready(body)`` is true. Reply values:

* ``str`` or :class:`Text` (a text block); :class:`ToolUse` ``(name, input,
  id=None)``; :class:`Json` ``(obj)`` (structured output: a
  ``StructuredOutput`` tool call when the request offers that tool, as the
  CLI does for ``--json-schema``/``output_format``; otherwise the JSON as
  text, as for ``output_config``);
* a list of those: one assistant message with several blocks, e.g. two
  ``Agent`` calls in one turn;
* :class:`Reply` ``(*blocks, delay=0, stream_delay=0, usage=None,
  stop_reason=None)``: ``delay`` before anything is sent, ``stream_delay``
  between ``message_start`` and the rest, per-reply :class:`Usage`;
* :class:`Error` ``(status, type=None, message=None, retry_after=None,
  delay=0, should_retry=None)``: the status with ``{"type": "error",
  "error": {...}}``; ``type`` defaults from the status (429
  ``rate_limit_error``, 529 ``overloaded_error``, 401
  ``authentication_error``...);
* :class:`Disconnect` ``(delay=0)``: the connection closes unanswered.

No session can loop: when a role's script runs out (or a role has none) the
reply is ``exhausted_text`` with ``end_turn`` (the record's ``exhausted`` is
set), and a request whose last user message holds a ``<task-notification>``
and no tool result is answered ``notification_text`` without consuming the
script, unless the role's next step is a :class:`WaitUntil` or the server was
built with ``auto_notifications=False``.

Reviewer B and reviewer C with different replies: reviewers of one round run
concurrently, so give each its own script by order of first appearance,
``"reviewer": PerAgent([Json(pass_review)], [Json(fail_review)])``, and assert
per conversation (``server.conversations("reviewer")`` lists them in that
order; which one is first is up to the scheduler). Or reply by content:
``lambda body: Json(a if "reviewer B" in first_user_text(body) else b)``.

Recorded traffic
----------------
``server.requests`` lists a :class:`RecordedRequest` per HTTP request, in
arrival order (method, path, query, lower-cased headers, parsed body, role,
conversation, ``arrived``/``finished`` from ``time.monotonic()``, status,
the :class:`Reply`/:class:`Error` sent, ``exhausted``), plus one per message
answered inside a batch (``batch_id``, ``custom_id``). Also
``server.messages()``, ``server.requests_for(role, conversation=None)``,
``server.conversations(role)``, ``server.remaining()`` (steps never
consumed), ``server.check()`` (raises :class:`ScriptError` if a reply
function raised: the client only saw a 500), and
``RecordedRequest.overlaps(other)`` for concurrency.

Batches: ``POST /v1/messages/batches`` answers every item through the same
script at once (delays ignored; an :class:`Error` becomes an ``errored``
result); ``GET .../{id}`` reports ``in_progress`` for the first
``batch_polls`` retrieves, then ``ended`` with ``results_url`` pointing back
here; ``GET .../{id}/results`` returns JSON Lines; list, cancel and delete
work too.

What the real CLI sends (Claude Code 2.1.332 bundled in claude-agent-sdk
0.2.x; checked by ``test_stub_server.py`` unless marked "seen")
---------------------------------------------------------------------------
* ``POST /v1/messages?beta=true``, ``stream: true``, header ``x-api-key``,
  ``x-app: cli``, ``x-claude-code-session-id`` (the ``session_id`` of the
  JSON result), and for subagents ``x-claude-code-agent-id`` (the same for
  all requests of one agent). Main requests offer ``Agent, Bash, Edit,
  ListAgents, Read, ReportFindings, ScheduleWakeup, Skill, ToolSearch,
  Workflow, DeferredToolPlaceholder, Write``; ``output_config`` holds
  ``{"effort": ...}`` there, not a schema. (seen)
* A plugin subagent spawned with ``Agent`` (``subagent_type:
  "PLUGIN:AGENT"``): the system prompt holds the agent file's body, ``tools``
  are exactly the agent's ``tools``, ``model`` is the agent's (``haiku`` ->
  ``claude-haiku-5-5``), and the conversation starts with one user message
  whose content is the ``prompt`` string, verbatim.
* ``run_in_background: false``: the agent runs to its final text, which is
  the ``Agent`` tool_result, framed by the CLI ("[Subagent hand-back] ...")
  with every line of the report indented by two spaces. Several such calls
  in one turn run concurrently; their results come back together. (seen)
* Background (the default): the tool_result says "Async agent launched";
  each finished agent later reaches the main agent as its own user message
  holding ``<task-notification>`` (``task-id`` = agent id, ``status``,
  ``summary``, ``result`` = the agent's final text); ``-p`` waits for them.
* Bash: a command that only reads runs unasked; one that writes needs
  ``--allowedTools Bash`` (or ``--permission-mode acceptEdits``);
  ``--dangerously-skip-permissions`` is refused when running as root.
  A Read outside the project is denied (an error tool_result). (seen)
* ``--json-schema`` with ``--tools Read,Grep,Glob``: the request offers the
  read-only tools plus ``StructuredOutput``; one ``StructuredOutput`` call
  ends the run with ``structured_output`` set, no further request.
* Errors: ``CLAUDE_CODE_MAX_RETRIES=1`` means two attempts, for 529 and also
  for 401 (the CLI retries a 401 with an API key); the run then ends with
  ``is_error: true``, ``api_error_status``, ``terminal_reason:
  "api_error"``, exit code 1. (seen)
* The ``anthropic`` SDK 2.x sends the key as ``authorization: Bearer``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAIN = "main"
REVIEWER = "reviewer"
FIXER = "fixer"
OTHER = "other"
SIDE = "side"

AGENT_ID_HEADER = "x-claude-code-agent-id"
SESSION_ID_HEADER = "x-claude-code-session-id"

DEFAULT_MARKERS: Mapping[str, str] = {
    REVIEWER: "santa-method reviewer",
    FIXER: "santa-method fixer",
}
READ_ONLY_TOOLS = frozenset({"Read", "Grep", "Glob", "LS"})
IGNORED_TOOLS = frozenset({"StructuredOutput", "DeferredToolPlaceholder", "ToolSearch"})
TASK_NOTIFICATION = "<task-notification>"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------
# Reply values


@dataclass(frozen=True)
class Text:
    """A text block."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A tool_use block; ``id`` is generated when not given."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Json:
    """Structured output, answered the way the client asked for it.

    Why one value for both: the same review script then drives the
    ``anthropic`` backend (``output_config``: the reply text is the JSON) and
    the Claude Code CLI (``--json-schema``/``output_format``: a call of the
    ``StructuredOutput`` tool whose input is the object).
    """

    value: Any


@dataclass(frozen=True)
class Usage:
    """Token counts reported with a reply (fixed, so cost tests can predict them)."""

    input_tokens: int = 100
    output_tokens: int = 20
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


Block = Text | ToolUse | Json


class Reply:
    """One assistant message with options.

    ``delay`` waits before answering at all (timeouts, latency benchmarks);
    ``stream_delay`` waits after ``message_start`` when streaming (a stream
    that has begun but not finished), ending early once ``stream_until``
    (an event) is set; ``stop_reason`` overrides the default
    (``tool_use`` when a tool is called, else ``end_turn``), e.g.
    ``"max_tokens"`` for a truncated reply.
    """

    def __init__(
        self,
        *content: Block | str,
        delay: float = 0.0,
        stream_delay: float = 0.0,
        usage: Usage | None = None,
        stop_reason: str | None = None,
        stream_until: threading.Event | None = None,
    ) -> None:
        flat: list[Block | str] = []
        for item in content:  # Reply([a, b]) means the same as Reply(a, b)
            flat.extend(item if isinstance(item, list | tuple) else [item])
        self.content: tuple[Block, ...] = tuple(Text(c) if isinstance(c, str) else c for c in flat)
        self.delay = delay
        self.stream_delay = stream_delay
        self.stream_until = stream_until
        self.usage = usage
        self.stop_reason = stop_reason

    def __repr__(self) -> str:
        return f"Reply({', '.join(map(repr, self.content))}, delay={self.delay})"


@dataclass(frozen=True)
class Error:
    """An API error: HTTP ``status`` and the API's error JSON.

    ``type`` defaults from the status (529 -> ``overloaded_error``...).
    ``retry_after`` (seconds) sets the ``retry-after`` header the SDKs honour;
    ``should_retry`` sets ``x-should-retry``.
    """

    status: int
    type: str | None = None
    message: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    should_retry: bool | None = None

    @property
    def error_type(self) -> str:
        return self.type or _ERROR_TYPES.get(self.status, "api_error")

    def body(self) -> dict[str, Any]:
        message = self.message or f"scripted {self.error_type}"
        return {"type": "error", "error": {"type": self.error_type, "message": message}}


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without answering (a connection error for the client)."""

    delay: float = 0.0


ReplyValue = str | Block | Sequence[Block | str] | Reply | Error | Disconnect
Step = ReplyValue | Callable[[dict[str, Any]], ReplyValue]


class PerAgent:
    """A separate script per conversation, by order of first appearance.

    ``PerAgent(a, b)`` gives the first conversation of the role script ``a``
    and the second ``b``; later conversations each get their own cursor over
    ``rest`` (none: they get the exhausted reply). ``PerAgent(rest=s)`` gives
    every conversation the same script ``s``.
    """

    def __init__(self, *scripts: Sequence[Step], rest: Sequence[Step] | None = None) -> None:
        self.scripts = [list(s) for s in scripts]
        self.rest = list(rest) if rest is not None else None


class WaitUntil:
    """A step taken only once ``ready(body)`` is true.

    Until then each request of the role gets ``meanwhile`` (text, end of
    turn) and the step stays next. While a role's next step is a
    ``WaitUntil``, task notifications are not auto-answered: they reach the
    script, so a main agent can wait for its background reviewers, e.g.
    ``WaitUntil(notified(2), ToolUse("Bash", {"command": "santa gate ..."}))``.
    """

    def __init__(
        self, ready: Callable[[dict[str, Any]], bool], step: Step, meanwhile: str = "Waiting."
    ) -> None:
        self.ready = ready
        self.step = step
        self.meanwhile = meanwhile


RoleScript = Sequence[Step] | PerAgent | Callable[[dict[str, Any]], ReplyValue]


# --------------------------------------------------------------------------
# Reading requests


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _text_of(content: Any) -> str:
    """Text of a content value (string or blocks), tool results included."""
    parts: list[str] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_text_of(block.get("content", "")))
    return "\n".join(parts)


def conversation(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The messages without the ``role: "system"`` entries the CLI interleaves."""
    return [m for m in body.get("messages", []) if m.get("role") != "system"]


def system_text(body: Mapping[str, Any]) -> str:
    """The top-level system prompt as one string."""
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(str(b.get("text", "")) for b in _blocks(system) if b.get("type") == "text")


def last_user_message(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The last user message, or None when the conversation ends otherwise."""
    messages = conversation(body)
    if messages and messages[-1].get("role") == "user":
        return messages[-1]
    return None


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text blocks of the last user message (tool results excluded)."""
    message = last_user_message(body)
    if message is None:
        return ""
    blocks = _blocks(message.get("content"))
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def first_user_text(body: Mapping[str, Any]) -> str:
    """The text of the first user message: the prompt a session or subagent began with."""
    for message in conversation(body):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made earlier in the conversation, with its result."""

    id: str
    name: str
    input: Mapping[str, Any]
    result: str | None
    is_error: bool


def tool_calls(body: Mapping[str, Any]) -> list[ToolCall]:
    """Every tool call in the conversation, oldest first, paired with its result."""
    results: dict[str, tuple[str, bool]] = {}
    for message in conversation(body):
        for block in _blocks(message.get("content")):
            if block.get("type") == "tool_result":
                text = _text_of(block.get("content", ""))
                results[str(block.get("tool_use_id"))] = (text, bool(block.get("is_error")))
    calls: list[ToolCall] = []
    for message in conversation(body):
        if message.get("role") != "assistant":
            continue
        for block in _blocks(message.get("content")):
            if block.get("type") == "tool_use":
                use_id = str(block.get("id"))
                text, is_error = results.get(use_id, (None, False))
                calls.append(
                    ToolCall(
                        use_id, str(block.get("name")), block.get("input") or {}, text, is_error
                    )
                )
    return calls


def last_tool_result_text(body: Mapping[str, Any], name: str | None = None) -> str:
    """The result text of the latest tool call (of tool ``name`` if given); "" if none."""
    for call in reversed(tool_calls(body)):
        if call.result is not None and (name is None or call.name == name):
            return call.result
    return ""


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools the request offers the model."""
    return [str(t["name"]) for t in body.get("tools") or [] if isinstance(t, dict) and "name" in t]


def all_text(body: Mapping[str, Any]) -> str:
    """System prompt and every text and tool result: for "contains nothing of X" checks."""
    parts = [system_text(body)]
    for message in body.get("messages", []):
        parts.append(_text_of(message.get("content")))
        for block in _blocks(message.get("content")):
            if block.get("type") == "tool_use":
                parts.append(json.dumps(block.get("input"), ensure_ascii=False))
    return "\n".join(parts)


def is_task_notification(body: Mapping[str, Any]) -> bool:
    """True when the last user message carries a task notification and no tool result."""
    message = last_user_message(body)
    if message is None:
        return False
    blocks = _blocks(message.get("content"))
    if any(b.get("type") == "tool_result" for b in blocks):
        return False
    return TASK_NOTIFICATION in last_user_text(body)


_NOTIFICATION = re.compile(r"<task-notification>(.*?)</task-notification>", re.DOTALL)
_TAG = re.compile(r"<([a-z-]+)>(.*?)</\1>", re.DOTALL)


def task_notifications(body: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every task notification in the conversation, oldest first.

    Each is a dict of its tags with dashes made underscores: ``task_id``,
    ``tool_use_id``, ``status``, ``summary``, ``result``, ``output_file``.
    The same task may notify more than once.
    """
    found: list[dict[str, str]] = []
    for message in conversation(body):
        if message.get("role") != "user":
            continue
        for match in _NOTIFICATION.finditer(_text_of(message.get("content"))):
            tags = {
                name.replace("-", "_"): value.strip()
                for name, value in _TAG.findall(match.group(1))
            }
            found.append(tags)
    return found


def notified(count: int) -> Callable[[Mapping[str, Any]], bool]:
    """A :class:`WaitUntil` test: at least ``count`` distinct tasks have notified."""

    def ready(body: Mapping[str, Any]) -> bool:
        return len({n.get("task_id") for n in task_notifications(body)}) >= count

    return ready


# --------------------------------------------------------------------------
# Classification


_SIDE_PROMPT = re.compile(r"\b(title|summari[sz]e|summary)\b", re.IGNORECASE)


class Classifier:
    """The default role classifier (see the module docstring for the rules)."""

    def __init__(
        self,
        markers: Mapping[str, str | Sequence[str]] | None = None,
        *,
        read_only_tools: frozenset[str] = READ_ONLY_TOOLS,
        side_max_tokens: int = 512,
    ) -> None:
        raw = DEFAULT_MARKERS if markers is None else markers
        self.markers = {role: [m] if isinstance(m, str) else list(m) for role, m in raw.items()}
        self.read_only_tools = read_only_tools
        self.side_max_tokens = side_max_tokens

    def __call__(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
        system = system_text(body)
        # The earliest marker wins: an agent's body names itself first and may
        # mention the other roles later ("fix what the reviewer flagged").
        found = [
            (system.find(m), role) for role, ms in self.markers.items() for m in ms if m in system
        ]
        if found:
            return min(found)[1]
        tools = [t for t in tool_names(body) if t not in IGNORED_TOOLS]
        from_cli = bool(headers.get(SESSION_ID_HEADER)) or headers.get("x-app") == "cli"
        if from_cli and not body.get("tools"):
            max_tokens = body.get("max_tokens")
            tiny = isinstance(max_tokens, int) and max_tokens <= self.side_max_tokens
            if tiny or _SIDE_PROMPT.search(system):
                return SIDE
        if tools and set(tools) <= self.read_only_tools:
            return REVIEWER
        if headers.get(AGENT_ID_HEADER):
            return OTHER
        return MAIN


def default_conversation_key(body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """Which conversation a request belongs to, for :class:`PerAgent` scripts."""
    return headers.get(AGENT_ID_HEADER) or headers.get(SESSION_ID_HEADER) or ""


# --------------------------------------------------------------------------
# Recorded requests


@dataclass
class RecordedRequest:
    """One request the server received (or one message answered in a batch)."""

    index: int
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    arrived: float
    role: str | None = None
    conversation: str | None = None
    finished: float | None = None
    status: int | None = None
    reply: Any = None
    exhausted: bool = False
    batch_id: str | None = None
    custom_id: str | None = None

    @property
    def agent_id(self) -> str | None:
        return self.headers.get(AGENT_ID_HEADER)

    @property
    def is_message(self) -> bool:
        return self.role is not None

    @property
    def system(self) -> str:
        return system_text(self.body or {})

    @property
    def tools(self) -> list[str]:
        return tool_names(self.body or {})

    @property
    def text(self) -> str:
        return all_text(self.body or {})

    def overlaps(self, other: RecordedRequest) -> bool:
        """True when both requests were being answered at the same moment."""
        end_a = self.finished if self.finished is not None else float("inf")
        end_b = other.finished if other.finished is not None else float("inf")
        return self.arrived < end_b and other.arrived < end_a


# --------------------------------------------------------------------------
# The server


class ScriptError(AssertionError):
    """A reply function raised, or the script held a value the server cannot send."""


@dataclass
class _Batch:
    id: str
    created_at: datetime
    results: list[dict[str, Any]]
    polls_left: int
    canceled: bool = False
    cancel_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.canceled or self.polls_left <= 0


def hang_up(handler: Any) -> None:
    """Close a request's connection at once. The client may already have
    gone (a test that cuts a reply races the client's own close), so an
    OSError here is the expected end, not a server fault to print."""
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)


class StubServer:
    """A scripted Messages API on ``127.0.0.1`` and a free port.

    Use as a context manager: ``with StubServer(script) as server``. Options:
    ``markers`` (role -> marker string(s) looked for in the system prompt),
    ``classify`` (replaces the whole classifier: ``fn(body, headers) -> role``),
    ``conversation_key`` (``fn(body, headers) -> str`` for :class:`PerAgent`),
    ``usage`` (the :class:`Usage` of every reply without its own, or
    ``fn(body) -> Usage``, e.g. cache reads once a prefix was seen),
    ``delay`` (added before every message reply: a fixed model latency),
    ``side_text``, ``exhausted_text``, ``notification_text``,
    ``auto_notifications``, ``batch_polls`` (how many retrieves report
    ``in_progress`` before a batch ends).
    """

    def __init__(
        self,
        script: Mapping[str, RoleScript] | None = None,
        *,
        markers: Mapping[str, str | Sequence[str]] | None = None,
        classify: Callable[[Mapping[str, Any], Mapping[str, str]], str] | None = None,
        conversation_key: Callable[
            [Mapping[str, Any], Mapping[str, str]], str
        ] = default_conversation_key,
        usage: Usage | Callable[[dict[str, Any]], Usage] | None = None,
        delay: float = 0.0,
        side_text: str = "Stub session",
        exhausted_text: str = "Done.",
        notification_text: str = "Noted.",
        auto_notifications: bool = True,
        batch_polls: int = 0,
    ) -> None:
        self.script: dict[str, RoleScript] = dict(script or {})
        self.classify = classify or Classifier(markers)
        self.conversation_key = conversation_key
        self.usage = usage or Usage()
        self.delay = delay
        self.side_text = side_text
        self.exhausted_text = exhausted_text
        self.notification_text = notification_text
        self.auto_notifications = auto_notifications
        self.batch_polls = batch_polls
        self.errors: list[str] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._cursors: dict[tuple[str, str], int] = {}
        self._conversations: dict[str, list[str]] = {}
        self._batches: dict[str, _Batch] = {}
        self._connections: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> StubServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.stub = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            with self._lock:
                open_connections = list(self._connections)
            for connection in open_connections:  # ends idle keep-alive threads
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- reading what happened ----------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every recorded request, in arrival order."""
        with self._lock:
            return list(self._requests)

    def messages(self) -> list[RecordedRequest]:
        """The model requests only (``/v1/messages`` and batch items)."""
        return [r for r in self.requests if r.is_message]

    def requests_for(self, role: str, conversation: str | None = None) -> list[RecordedRequest]:
        """Model requests of one role (and one conversation, if given)."""
        return [
            r
            for r in self.messages()
            if r.role == role and (conversation is None or r.conversation == conversation)
        ]

    def conversations(self, role: str) -> list[str]:
        """Conversation keys of a role in order of first appearance (PerAgent numbering)."""
        with self._lock:
            return list(self._conversations.get(role, []))

    def remaining(self) -> dict[str, int]:
        """Steps not yet consumed: a script longer than the session it drove.

        Keys are roles for shared lists, ``"role#N"`` (1-based order of first
        appearance) for :class:`PerAgent` scripts, including numbers that
        never appeared.
        """
        with self._lock:
            left: dict[str, int] = {}
            for role, role_script in self.script.items():
                if isinstance(role_script, PerAgent):
                    seen = self._conversations.get(role, [])
                    for number, steps in enumerate(role_script.scripts):
                        key = seen[number] if number < len(seen) else None
                        used = self._cursors.get((role, key), 0) if key is not None else 0
                        if used < len(steps):
                            left[f"{role}#{number + 1}"] = len(steps) - used
                elif isinstance(role_script, Sequence):
                    used = self._cursors.get((role, ""), 0)
                    if used < len(role_script):
                        left[role] = len(role_script) - used
            return left

    def check(self) -> None:
        """Raise if a reply function failed: such failures would otherwise look like API errors."""
        if self.errors:
            raise ScriptError("stub script failed:\n" + "\n".join(self.errors))

    # -- answering ----------------------------------------------------------

    def _record(self, record: RecordedRequest) -> RecordedRequest:
        with self._lock:
            record.index = len(self._requests)
            self._requests.append(record)
        return record

    def _steps(self, role: str, key: str) -> tuple[Any, tuple[str, str] | None]:
        """The role's script for this conversation and its cursor key (lock held)."""
        seen = self._conversations.setdefault(role, [])
        if key not in seen:
            seen.append(key)
        role_script = self.script.get(role)
        if isinstance(role_script, PerAgent):
            number = seen.index(key)
            if number < len(role_script.scripts):
                return role_script.scripts[number], (role, key)
            return role_script.rest, (role, key)
        if callable(role_script):
            return role_script, None
        return role_script, (role, "")

    def _next_step(
        self, role: str, key: str, body: Mapping[str, Any], *, notification: bool
    ) -> tuple[Any, bool]:
        """The step to answer with (None: auto-answer) and whether the script ran out."""
        with self._lock:
            steps, cursor = self._steps(role, key)
            if steps is None:
                return None, not notification
            if cursor is None:  # a callable answers every request
                return (None if notification else steps), False
            position = self._cursors.get(cursor, 0)
            if position >= len(steps):
                return None, not notification
            step = steps[position]
            if isinstance(step, WaitUntil):
                if not step.ready(dict(body)):
                    return Reply(step.meanwhile), False
                step = step.step
            elif notification:
                return None, False
            self._cursors[cursor] = position + 1
            return step, False

    def _resolve(self, step: Any, body: Mapping[str, Any]) -> Reply | Error | Disconnect:
        value = step
        for _ in range(10):
            if isinstance(value, Reply | Error | Disconnect):
                return value
            if callable(value) and not isinstance(value, type):
                value = value(dict(body))
                continue
            break
        return _as_reply(value)

    def answer(
        self, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> tuple[str, str, Reply | Error | Disconnect, bool]:
        """Role, conversation, reply and the exhausted flag for one model request."""
        role = self.classify(body, headers)
        key = self.conversation_key(body, headers)
        if role == SIDE:
            with self._lock:
                self._steps(role, key)
            return role, key, Reply(self.side_text), False
        notification = self.auto_notifications and is_task_notification(body)
        try:
            step, exhausted = self._next_step(role, key, body, notification=notification)
            if exhausted:
                return role, key, Reply(self.exhausted_text), True
            if step is None:
                return role, key, Reply(self.notification_text), False
            return role, key, self._resolve(step, body), False
        except Exception as exc:  # surfaced by check(); the client sees a 500
            message = f"{role} script raised {type(exc).__name__}: {exc}"
            with self._lock:
                self.errors.append(message)
            return role, key, Error(500, "api_error", message), False

    def message_json(self, reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
        """The non-streaming Messages API response for a reply."""
        usage = reply.usage or self.usage
        if callable(usage):
            usage = usage(dict(body))
        return {
            "id": f"msg_stub_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-stub"),
            "content": [self._block_json(b, body) for b in reply.content],
            "stop_reason": _stop_reason(reply),
            "stop_sequence": None,
            "usage": usage.as_dict(),
        }

    def _block_json(self, block: Block, body: Mapping[str, Any]) -> dict[str, Any]:
        if isinstance(block, Text):
            return {"type": "text", "text": block.text}
        if isinstance(block, ToolUse):
            use_id = block.id or f"toolu_stub_{next(self._ids):06d}"
            return {
                "type": "tool_use",
                "id": use_id,
                "name": block.name,
                "input": dict(block.input),
            }
        raise ScriptError(f"cannot send {block!r}")

    # -- batches ------------------------------------------------------------

    def create_batch(
        self, payload: Mapping[str, Any], headers: Mapping[str, str]
    ) -> dict[str, Any]:
        batch_id = f"msgbatch_stub_{next(self._ids):06d}"
        results: list[dict[str, Any]] = []
        for item in payload.get("requests", []):
            custom_id = str(item.get("custom_id"))
            params = item.get("params") or {}
            now = time.monotonic()
            record = self._record(
                RecordedRequest(
                    index=0,
                    method="POST",
                    path="/v1/messages",
                    query={},
                    headers=dict(headers),
                    body=params,
                    arrived=now,
                    batch_id=batch_id,
                    custom_id=custom_id,
                )
            )
            role, key, reply, exhausted = self.answer(params, headers)
            record.role, record.conversation, record.reply, record.exhausted = (
                role,
                key,
                reply,
                exhausted,
            )
            if isinstance(reply, Reply):
                result: dict[str, Any] = {
                    "type": "succeeded",
                    "message": self.message_json(_finish(reply, params), params),
                }
                record.status = 200
            else:
                error = reply if isinstance(reply, Error) else Error(500, message="disconnected")
                result = {"type": "errored", "error": error.body()}
                record.status = error.status
            record.finished = time.monotonic()
            results.append({"custom_id": custom_id, "result": result})
        batch = _Batch(batch_id, datetime.now(UTC), results, self.batch_polls)
        with self._lock:
            self._batches[batch_id] = batch
        return self._batch_json(batch)

    def _batch_json(self, batch: _Batch) -> dict[str, Any]:
        ended = batch.ended
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            for result in batch.results:
                kind = "canceled" if batch.canceled else result["result"]["type"]
                counts[kind] += 1
        else:
            counts["processing"] = len(batch.results)
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": _iso(batch.created_at),
            "expires_at": _iso(batch.created_at + timedelta(hours=24)),
            "ended_at": _iso(datetime.now(UTC)) if ended else None,
            "archived_at": None,
            "cancel_initiated_at": _iso(batch.cancel_at) if batch.cancel_at else None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch.id}/results"
            if ended
            else None,
        }

    def _batch_results(self, batch: _Batch) -> bytes:
        lines = []
        for result in batch.results:
            if batch.canceled:
                result = {"custom_id": result["custom_id"], "result": {"type": "canceled"}}
            lines.append(json.dumps(result))
        return ("\n".join(lines) + "\n").encode()

    # -- HTTP ---------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        raw = _read_body(handler)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in handler.headers.items()}
        record = self._record(
            RecordedRequest(
                index=0,
                method=handler.command,
                path=url.path,
                query=parse_qs(url.query),
                headers=headers,
                body=body,
                arrived=time.monotonic(),
            )
        )
        try:
            self._route(handler, record)
        except (BrokenPipeError, ConnectionResetError):
            record.status = record.status or 499
        finally:
            record.finished = time.monotonic()

    def _route(self, handler: _Handler, record: RecordedRequest) -> None:
        method, path, body = record.method, record.path.rstrip("/"), record.body
        if method == "POST" and path == "/v1/messages":
            if not isinstance(body, dict):
                return self._send_error(handler, record, Error(400, message="body is not JSON"))
            return self._messages(handler, record, body)
        if method == "POST" and path == "/v1/messages/count_tokens":
            tokens = max(1, len(json.dumps(body)) // 4)
            return self._send_json(handler, record, 200, {"input_tokens": tokens})
        if path == "/v1/messages/batches":
            if method == "POST" and isinstance(body, dict):
                return self._send_json(
                    handler, record, 200, self.create_batch(body, record.headers)
                )
            if method == "GET":
                with self._lock:
                    batches = list(self._batches.values())
                data = [self._batch_json(b) for b in batches]
                page = {"data": data, "has_more": False, "first_id": None, "last_id": None}
                return self._send_json(handler, record, 200, page)
        match = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results|/cancel)?", path)
        if match:
            with self._lock:
                batch = self._batches.get(match.group(1))
            if batch is None:
                return self._send_error(handler, record, Error(404, message="no such batch"))
            action = match.group(2)
            if method == "GET" and action is None:
                with self._lock:
                    snapshot = self._batch_json(batch)
                    batch.polls_left -= 1
                return self._send_json(handler, record, 200, snapshot)
            if method == "GET" and action == "/results":
                if not batch.ended:
                    return self._send_error(
                        handler, record, Error(400, message="batch still in progress")
                    )
                return self._send_bytes(
                    handler, record, 200, self._batch_results(batch), "application/x-jsonl"
                )
            if method == "POST" and action == "/cancel":
                with self._lock:
                    if not batch.ended:
                        batch.canceled = True
                        batch.cancel_at = datetime.now(UTC)
                return self._send_json(handler, record, 200, self._batch_json(batch))
            if method == "DELETE" and action is None:
                with self._lock:
                    self._batches.pop(batch.id, None)
                return self._send_json(
                    handler, record, 200, {"id": batch.id, "type": "message_batch_deleted"}
                )
        return self._send_error(handler, record, Error(404, message=f"no route {method} {path}"))

    def _messages(self, handler: _Handler, record: RecordedRequest, body: dict[str, Any]) -> None:
        role, key, reply, exhausted = self.answer(body, record.headers)
        record.role, record.conversation, record.exhausted = role, key, exhausted
        delay = self.delay + getattr(reply, "delay", 0.0)
        if delay and self._stopping.wait(delay):
            return
        if isinstance(reply, Disconnect):
            record.reply = reply
            record.status = 0
            hang_up(handler)
            return
        if isinstance(reply, Error):
            record.reply = reply
            return self._send_error(handler, record, reply)
        reply = _finish(reply, body)
        record.reply = reply
        message = self.message_json(reply, body)
        if body.get("stream"):
            self._send_stream(handler, record, message, reply.stream_delay, reply.stream_until)
        else:
            self._send_json(handler, record, 200, message)

    def _send_stream(
        self,
        handler: _Handler,
        record: RecordedRequest,
        message: dict[str, Any],
        stream_delay: float,
        stream_until: threading.Event | None = None,
    ) -> None:
        head, tail = _sse_events(message)
        record.status = 200
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("request-id", f"req_stub_{record.index:06d}")
        handler.send_header("Content-Length", str(len(head) + len(tail)))
        handler.end_headers()
        handler.wfile.write(head)
        handler.wfile.flush()
        if stream_delay and self._hold(stream_delay, stream_until):
            return
        handler.wfile.write(tail)
        handler.wfile.flush()

    def _hold(self, seconds: float, until: threading.Event | None) -> bool:
        """Wait `seconds`, or until `until` is set; True when the server stops meanwhile."""
        if until is None:
            return self._stopping.wait(seconds)
        deadline = time.monotonic() + seconds
        while not until.wait(0.05):
            if self._stopping.is_set():
                return True
            if time.monotonic() >= deadline:
                break
        return self._stopping.is_set()

    def _send_error(self, handler: _Handler, record: RecordedRequest, error: Error) -> None:
        extra: dict[str, str] = {}
        if error.retry_after is not None:
            extra["retry-after"] = f"{error.retry_after:g}"
        if error.should_retry is not None:
            extra["x-should-retry"] = "true" if error.should_retry else "false"
        self._send_json(handler, record, error.status, error.body(), extra)

    def _send_json(
        self,
        handler: _Handler,
        record: RecordedRequest,
        status: int,
        payload: Any,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        self._send_bytes(handler, record, status, data, "application/json", extra)

    def _send_bytes(
        self,
        handler: _Handler,
        record: RecordedRequest,
        status: int,
        data: bytes,
        content_type: str,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        record.status = status
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("request-id", f"req_stub_{record.index:06d}")
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()


# --------------------------------------------------------------------------
# Internals


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    stub: StubServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-reply (a cancelled concurrent reviewer, a
        # timeout) is normal here; printing a traceback into the tests'
        # captured stderr is not.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    timeout = 60  # an idle keep-alive connection must not hold a thread forever

    def setup(self) -> None:
        super().setup()
        with self.server.stub._lock:
            self.server.stub._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.stub._lock:
            self.server.stub._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self.server.stub._handle(self)

    do_POST = do_GET
    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                break
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
        return b"".join(chunks)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _as_reply(value: Any) -> Reply:
    if isinstance(value, str | Text | ToolUse | Json):
        return Reply(value)
    if isinstance(value, Sequence) and all(
        isinstance(v, str | Text | ToolUse | Json) for v in value
    ):
        return Reply(*value)
    raise ScriptError(f"not a reply value: {value!r}")


def _finish(reply: Reply, body: Mapping[str, Any]) -> Reply:
    """Turn :class:`Json` blocks into what this request asked for."""
    if not any(isinstance(b, Json) for b in reply.content):
        return reply
    structured_tool = "StructuredOutput" in tool_names(body)
    blocks: list[Block] = []
    for block in reply.content:
        if isinstance(block, Json):
            if structured_tool:
                blocks.append(ToolUse("StructuredOutput", block.value))
            else:
                blocks.append(Text(json.dumps(block.value, ensure_ascii=False)))
        else:
            blocks.append(block)
    return Reply(
        *blocks,
        delay=reply.delay,
        stream_delay=reply.stream_delay,
        usage=reply.usage,
        stop_reason=reply.stop_reason,
        stream_until=reply.stream_until,
    )


def _stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if any(isinstance(b, ToolUse) for b in reply.content) else "end_turn"


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _sse_events(message: dict[str, Any]) -> tuple[bytes, bytes]:
    """The stream for a message, split after ``message_start`` (for ``stream_delay``)."""
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    head = _sse("message_start", {"type": "message_start", "message": start})
    parts: list[bytes] = []
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        parts.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        parts.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
        parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    final = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    parts.append(_sse("message_delta", final))
    parts.append(_sse("message_stop", {"type": "message_stop"}))
    return head, b"".join(parts)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def iter_sse(raw: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
    """Parse a server-sent event stream (for tests of the stream itself)."""
    for chunk in raw.decode().split("\n\n"):
        event, data = "", ""
        for line in chunk.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
        if event:
            yield event, json.loads(data)


ScriptedModel = StubServer  # the name the design discussion used
