"""Every backend's answer, checked where the loop receives it.

Why one place: a backend is any object with `review` and `fix` (custom
backends are a public API), so what it returns is untrusted. A negative
cost would hand a run back money its budget never had; a NaN token count
makes the run's state unreadable; a reply that is no ReviewReply, or an
output that is bytes, would end in a raw Python error. Every review and
fix (of a run, a change, a batch's screen; from the shipped backends and
custom ones alike) is asked through `ask_review` and `ask_fix`, which
refuse such an answer with a BackendError (exit 3) naming the backend and
what was wrong. The run it belongs to is never shipped; a resumable one (a
batch's) stays open, so a batch stops at the first such answer instead of
paying for every item with a backend whose costs cannot be trusted, and
goes on once the backend is mended.
"""

from __future__ import annotations

import json
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import BackendError, InputError
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

__all__ = ["ask_fix", "ask_review", "backend_name", "check_fix", "check_review"]


def backend_name(backend: Any) -> str:
    """The name a backend gives itself, or its class's when it gives none."""
    name = getattr(backend, "name", None)
    return name if isinstance(name, str) and name else type(backend).__name__


async def ask_review(backend: Any, request: ReviewRequest) -> ReviewReply:
    """A reviewer call: the backend's answer, or a BackendError saying what is wrong with it."""
    return check_review(backend, await backend.review(request))


async def ask_fix(backend: Any, request: FixRequest) -> FixReply:
    """A fixer call: the backend's answer, or a BackendError saying what is wrong with it."""
    return check_fix(backend, await backend.fix(request))


def check_review(backend: Any, reply: Any) -> ReviewReply:
    """`reply` itself when it is a ReviewReply a run can store and count."""
    if not isinstance(reply, ReviewReply):
        raise _malformed(backend, "review", f"it returned {_kind(reply)}, not a ReviewReply")
    _fields(
        backend,
        "review",
        reply,
        texts=("text",),
        optional_texts=("model", "session", "failure"),
    )
    if reply.obj is not None:
        if not isinstance(reply.obj, dict):
            raise _malformed(
                backend, "review", f"obj must be a dict or None, not {_kind(reply.obj)}"
            )
        try:
            json.dumps(reply.obj, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            # UnicodeEncodeError is a ValueError: a lone surrogate in a string.
            raise _malformed(backend, "review", f"obj is not a JSON object: {exc}") from None
    return reply


def check_fix(backend: Any, reply: Any) -> FixReply:
    """`reply` itself when it is a FixReply a run can write and count."""
    if not isinstance(reply, FixReply):
        raise _malformed(backend, "fix", f"it returned {_kind(reply)}, not a FixReply")
    _fields(backend, "fix", reply, texts=("notes",), optional_texts=("output", "model"))
    return reply


def _fields(
    backend: Any,
    call: str,
    reply: Any,
    *,
    texts: tuple[str, ...],
    optional_texts: tuple[str, ...],
) -> None:
    """The fields both replies share: texts, token counts and the cost."""
    for field in (*texts, *optional_texts):
        value = getattr(reply, field)
        if value is None and field in optional_texts:
            continue
        if not isinstance(value, str):
            wanted = "a string or None" if field in optional_texts else "a string"
            raise _malformed(backend, call, f"{field} must be {wanted}, not {_kind(value)}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _malformed(
                backend,
                call,
                f"{field} holds {value[exc.start]!r} at position {exc.start}, a lone "
                "surrogate that is not text (it cannot be written as UTF-8)",
            ) from None
    tokens = reply.tokens
    if not isinstance(tokens, Tokens):
        raise _malformed(backend, call, f"tokens must be a Tokens, not {_kind(tokens)}")
    try:
        for part in ("input", "output", "cache_read", "cache_write"):
            numbers.TOKENS.check(getattr(tokens, part), f"tokens.{part}")
        if reply.cost_usd is not None:
            numbers.COST_USD.check(reply.cost_usd, "cost_usd")
    except InputError as exc:
        raise _malformed(backend, call, str(exc)) from None


def _kind(value: Any) -> str:
    """The type of what came back, never its text (a reply is untrusted data)."""
    return "None" if value is None else f"a value of type {type(value).__name__}"


def _malformed(backend: Any, call: str, what: str) -> BackendError:
    return BackendError(
        f"the {backend_name(backend)} backend's {call} answer cannot be used: {what}"
    )
