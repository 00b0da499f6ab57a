"""The `anthropic` backend: the Messages API with an API key (extra `[anthropic]`).

Why it looks like this: the prefix shared by every reviewer and round
(instructions, rubric, spec) goes first, in the system prompt, byte for
byte and marked for prompt caching; the output and the canary come last in
the user turn, so a cache hit covers everything but what changed. Replies
are constrained to the strict review schema (`output_config`) and are still
validated with the tolerant one by the loop. Calls are streamed so a large
`max_tokens` is accepted and so `on_started` can fire when the answer
begins (--cache-warm). 429/529/5xx are retried by the SDK (`max_retries`,
honouring `retry-after`); 401 is not, and surfaces at once as BackendError.
A connection that breaks after the reply began (a proxy or the server
closing it mid-stream) is past the SDK's retries, so `_call` sends the
call again itself, as often as the SDK would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import BackendError, InputError
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.headless.backends.calls import (
    CUT_RETRY_DELAY,
    FIX_SCHEMA,
    FIX_TAIL,
    FIXER_SYSTEM,
    REVIEWER_SYSTEM,
    Answer,
    ReplyCut,
    on_tries,
    read_fix,
    transport_errors,
)
from santa_method.headless.backends.calls import detail as _detail

__all__ = [
    "CUT_RETRY_DELAY",
    "FIXER_SYSTEM",
    "FIX_SCHEMA",
    "FIX_TAIL",
    "REVIEWER_SYSTEM",
    "Answer",
    "AnthropicBackend",
    "ReplyCut",
    "on_tries",
    "unreadable_reply",
]

CACHE = {"type": "ephemeral"}


#: Counts every reply has; the cache counts are absent when nothing was cached.
_REQUIRED = ("input_tokens", "output_tokens")


def _tokens(usage: Any) -> Tokens:
    """The reply's usage, each count a whole number in range: a negative or
    fractional count would make a negative cost, which turns a budget off,
    and a missing one (or NaN or infinity, which the SDK's JSON view of a
    batch result turns into null) would count as 0 and under-count the cost,
    so a reply that says one cannot be read (exit 3), before it is counted."""
    if usage is None:
        raise BackendError("the API's reply cannot be read: it has no usage")
    return Tokens(
        *(
            _count(getattr(usage, key, None), key)
            for key in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            )
        )
    )


def _count(value: Any, what: str) -> int:
    if value is None:
        if what in _REQUIRED:
            raise BackendError(f"the API's reply cannot be read: usage {what} is missing")
        return 0
    try:
        return int(numbers.TOKENS.check(value, f"usage {what}"))
    except InputError as exc:
        raise BackendError(f"the API's reply cannot be read: {exc}") from None


#: What the SDK raises on a reply it cannot parse: an event stream out of
#: order or cut short (AssertionError in its accumulator), an event that is
#: not JSON (JSONDecodeError), a message missing its fields.
_UNREADABLE = (AssertionError, ValueError, LookupError, TypeError, AttributeError)


@contextlib.contextmanager
def unreadable_reply() -> Iterator[None]:
    """A reply the backend cannot read is a backend failure (exit 3, with the
    reason), never an internal error and never a verdict."""
    try:
        yield
    except _UNREADABLE as exc:
        raise BackendError(
            f"the Anthropic API sent a reply that cannot be read ({_detail(exc)})"
        ) from None


def _cut(exc: BaseException) -> ReplyCut:
    return ReplyCut(
        f"the connection to the Anthropic API broke before its reply ended ({_detail(exc)})"
    )


def _check_finished(message: Any) -> None:
    """Every finished message says why it stopped; one without a stop reason
    is an event stream that ended early, not a reply to judge."""
    if message.stop_reason is None:
        raise BackendError(
            "the Anthropic API sent a reply that cannot be read (the stream ended before the "
            "message did: no stop reason)"
        )


def _text(message: Any) -> str:
    return "".join(
        getattr(b, "text", "") for b in message.content if getattr(b, "type", "") == "text"
    )


class AnthropicBackend:
    """Reviewer and fixer through `AsyncAnthropic` (key from ANTHROPIC_API_KEY)."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        max_tokens: int = 16000,
        fix_max_tokens: int = 32000,
        client: Any = None,
        prices: prices.Overrides | None = None,
    ) -> None:
        self._api_key = api_key
        self.prices = dict(prices or {})
        self._base_url = base_url
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.fix_max_tokens = fix_max_tokens
        self._client = client
        self._own_client = client is None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def preflight(self) -> list[str]:
        """What is missing before a run may start: the package and the key, both named."""
        if self._client is not None:
            return []
        import importlib.util

        missing = []
        if importlib.util.find_spec("anthropic") is None:
            missing.append("the anthropic package is not installed (pip install anthropic)")
        if not (
            self._api_key
            or os.environ.get("ANTHROPIC_API_KEY")
            or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        ):
            missing.append(
                "no credentials (set ANTHROPIC_API_KEY, or use the claude backend, "
                "--backend claude, which signs in with your Claude Code login)"
            )
        return missing

    def _client_for(self, timeout: float | None) -> Any:
        try:
            import anthropic
        except ImportError:
            raise BackendError(
                "the anthropic backend needs the anthropic package: pip install anthropic"
            ) from None
        # An AsyncAnthropic client is bound to the event loop it first ran on;
        # verify_sync() runs a new loop per call, so a backend reused across
        # calls needs a client per loop (a stale one fails and is retried).
        loop = asyncio.get_running_loop()
        if self._own_client and self._loop is not loop:
            self._client, self._loop = None, loop
        if self._client is None:
            try:
                self._client = anthropic.AsyncAnthropic(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    max_retries=self.max_retries,
                )
            except anthropic.AnthropicError:
                raise BackendError(
                    "no credentials for the anthropic backend: set ANTHROPIC_API_KEY"
                ) from None
        return self._client.with_options(timeout=timeout) if timeout else self._client

    async def aclose(self) -> None:
        """Close the HTTP client this backend opened (the loop calls it at the end of a run)."""
        if self._own_client and self._client is not None:
            client, self._client, self._loop = self._client, None, None
            await client.close()

    @contextlib.contextmanager
    def _api_errors(
        self, client: Any, timeout: float | None, answer: Answer | None = None
    ) -> Iterator[None]:
        """Map the SDK's errors to one BackendError sentence each (shared with
        the batch backend); with `answer`, a connection error once the answer
        began is a ReplyCut, which the caller sends again."""
        import anthropic

        cut = transport_errors()
        try:
            yield
        except cut as exc:
            raise _cut(exc) from None
        except anthropic.APIConnectionError as exc:
            if answer is not None and answer.began:
                raise _cut(exc.__cause__ or exc) from None
            if isinstance(exc, anthropic.APITimeoutError):
                raise BackendError(
                    f"the Anthropic API timed out (after {timeout or 'the default'}s per call)"
                ) from None
            raise BackendError(f"cannot reach the Anthropic API at {client.base_url}") from None
        except anthropic.AuthenticationError:
            raise BackendError(
                "the Anthropic API refused the credentials (401): check ANTHROPIC_API_KEY"
            ) from None
        except anthropic.PermissionDeniedError as exc:
            raise BackendError(f"the Anthropic API denied the request (403): {_msg(exc)}") from None
        except anthropic.RateLimitError:
            raise BackendError(
                f"the Anthropic API is rate limiting (429) after {self.max_retries} retries"
            ) from None
        except anthropic.OverloadedError:
            raise BackendError(
                f"the Anthropic API is overloaded (529) after {self.max_retries} retries"
            ) from None
        except anthropic.APIResponseValidationError:
            raise BackendError(
                "the Anthropic API sent a reply that cannot be read (it does not match the API's shape)"
            ) from None
        except anthropic.APIStatusError as exc:
            message = _msg(exc)
            # Only a request that is too big fails the same way every time;
            # a 400 for low credit or a 404 for a model name is fixed by a
            # person, and then the same call succeeds on --resume.
            too_big = exc.status_code == 413 or "too long" in message.lower()
            raise BackendError(
                f"the Anthropic API failed ({exc.status_code}): {message}", transient=not too_big
            ) from None

    async def _call(
        self, params: dict[str, Any], timeout: float | None, request: Any
    ) -> tuple[Any, Tokens]:
        """The final message, and the tokens of the tries cut before it: the
        API bills a reply that began (its input, what it wrote so far), so a
        call sent again costs those too."""
        client = self._client_for(timeout)
        started = False
        tries = self.max_retries + 1
        attempt = 0
        cut = Tokens()
        while True:
            began: Any = None  # this try's stream, once its reply began
            answer = Answer()
            try:
                with self._api_errors(client, timeout, answer), unreadable_reply():
                    async with client.messages.stream(**params) as stream:
                        answer.began = True
                        async for _event in stream:
                            began = stream
                            if not started:
                                started = True
                                if request is not None and request.on_started is not None:
                                    request.on_started()
                        return await stream.get_final_message(), cut
            except ReplyCut as exc:
                if began is not None:
                    with unreadable_reply():
                        cut = cut + _tokens(began.current_message_snapshot.usage)
                attempt += 1
                if attempt == tries:
                    raise ReplyCut(f"{exc}, {on_tries(tries)}") from None
            await asyncio.sleep(CUT_RETRY_DELAY * 2 ** (attempt - 1))

    def _review_params(self, request: ReviewRequest) -> dict[str, Any]:
        """The Messages API parameters of one reviewer call (no `stream`: the
        batch backend sends exactly these inside a Message Batch)."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": request.round_part}]}
        ]
        for turn in request.followups:
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": turn.reply}]}
            )
            messages.append({"role": "user", "content": [{"type": "text", "text": turn.feedback}]})
        return {
            "model": prices.model_id(request.model),
            "max_tokens": self.max_tokens,
            "system": [
                {"type": "text", "text": REVIEWER_SYSTEM},
                {"type": "text", "text": request.prefix, "cache_control": CACHE},
            ],
            "messages": messages,
            "output_config": {"format": {"type": "json_schema", "schema": request.schema}},
        }

    def _cost(self, model: str, tokens: Tokens) -> float | None:
        """USD of one call at list price, or the project's (the batch backend halves it)."""
        return prices.cost(model, tokens, self.prices)

    def _review_reply(self, message: Any, model: str, cut: Tokens | None = None) -> ReviewReply:
        """A ReviewReply from a Messages API message (an SDK object or
        attribute view); `cut`: the tokens of the tries cut before it."""
        with unreadable_reply():
            _check_finished(message)
            tokens = _tokens(message.usage) + (cut or Tokens())
            failure = None
            if message.stop_reason == "max_tokens":
                failure = f"the reply was cut off at max_tokens ({self.max_tokens})"
            elif message.stop_reason == "refusal":
                failure = "the model refused to review"
            answered = message.model or model
            return ReviewReply(
                text=_text(message),
                tokens=tokens,
                cost_usd=self._cost(answered, tokens),
                model=answered,
                failure=failure,
            )

    async def review(self, request: ReviewRequest) -> ReviewReply:
        params = self._review_params(request)
        message, cut = await self._call(params, request.timeout, request)
        return self._review_reply(message, params["model"], cut)

    async def fix(self, request: FixRequest) -> FixReply:
        model = prices.model_id(request.model)
        params = {
            "model": model,
            "max_tokens": self.fix_max_tokens,
            "system": [{"type": "text", "text": FIXER_SYSTEM}],
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": request.assignment + FIX_TAIL}],
                }
            ],
            "output_config": {"format": {"type": "json_schema", "schema": FIX_SCHEMA}},
        }
        tokens = Tokens()
        # A reply that is no JSON is asked for once more; twice is this
        # fixer's answer, and resuming would only pay for it again.
        for attempt in (1, 2):
            message, cut = await self._call(params, request.timeout, None)
            with unreadable_reply():
                _check_finished(message)
                tokens = tokens + cut + _tokens(message.usage)
                text = _text(message)
            if message.stop_reason == "max_tokens":
                raise BackendError(
                    f"the fixer's reply was cut off at max_tokens ({self.fix_max_tokens})",
                    transient=False,
                )
            answer = read_fix(text)
            if answer is not None:
                break
            if attempt == 2:
                raise BackendError(
                    "the fixer did not return the corrected output as JSON (asked twice)",
                    transient=False,
                )
        assert answer is not None  # the loop breaks on an answer or raises
        output, report = answer
        return FixReply(
            output=output,
            notes="\n".join(report),
            tokens=tokens,
            cost_usd=self._fix_cost(message.model or model, tokens),
            model=message.model or model,
        )

    def _fix_cost(self, model: str, tokens: Tokens) -> float | None:
        """A fix is a Messages API call at full price, in a batch too."""
        return prices.cost(model, tokens, self.prices)


def _msg(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))
