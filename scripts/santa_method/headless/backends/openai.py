"""The `openai` backend: any Chat Completions endpoint (extra `[openai]`).

Why it looks like the `anthropic` backend: the same contract, the same
faults. OpenAI, Gemini's OpenAI-compatible endpoint, OpenRouter and local
servers (Ollama, vLLM, llama.cpp, LM Studio) all speak Chat Completions, so
one backend through the official SDK reaches them all: `OPENAI_BASE_URL`
and `OPENAI_API_KEY` name the default endpoint (a server on this machine
needs no key). The prefix every reviewer shares is the system message,
first and byte for byte (endpoints that cache prompts cache it on their
own); the output and the canary are the user message; a re-ask continues
the conversation. Replies are constrained to the strict review schema
(`response_format` json_schema) where the endpoint supports it; one that
answers 400 to it is asked again without, once, and remembered, and the
reply is validated like any other either way. Calls are streamed with
usage (`stream_options`), or not (`stream=False`). 429 and 5xx are
retried by the SDK (`max_retries`); a stream cut after it began (the SDK
says APIConnectionError, as for a host it cannot reach) or one that ends
before its finish reason is sent again as often as the SDK would retry.
Tokens come from `usage`, cached prompt tokens counted as cache reads;
the cost from the price table or the project's prices (none known: None,
which with a budget stops the run before it spends).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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
    detail,
    on_tries,
    read_fix,
    transport_errors,
)

__all__ = ["CUT_RETRY_DELAY", "OpenAIBackend"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The key sent to a server on this machine when none is set: local servers
#: take any, and the SDK refuses to start without one.
LOCAL_KEY = "local"
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
#: What the SDK raises on a reply it cannot parse (a chunk that is no JSON,
#: a body of another shape, fields of the wrong type).
_UNREADABLE = (ValueError, LookupError, TypeError, AttributeError, AssertionError)


@dataclass(frozen=True)
class _Answer:
    """One call's reply: its text, why it stopped, what it cost."""

    text: str
    finish: str | None
    refusal: str | None
    model: str | None
    tokens: Tokens
    usage_known: bool


@contextlib.contextmanager
def _unreadable() -> Iterator[None]:
    try:
        yield
    except _UNREADABLE as exc:
        raise BackendError(
            f"the OpenAI-compatible API sent a reply that cannot be read ({detail(exc)})"
        ) from None


def _count(value: Any, what: str) -> int:
    try:
        return int(numbers.TOKENS.check(value, f"usage {what}"))
    except InputError as exc:
        raise BackendError(f"the OpenAI-compatible API's reply cannot be read: {exc}") from None


def _tokens(usage: Any) -> Tokens:
    """Tokens from a Chat Completions `usage`: the prompt's cached part, where
    the endpoint says it, apart as cache reads. A count that is missing,
    negative, fractional or not a number cannot be counted (exit 3)."""
    prompt = _count(getattr(usage, "prompt_tokens", None), "prompt_tokens")
    completion = _count(getattr(usage, "completion_tokens", None), "completion_tokens")
    details = getattr(usage, "prompt_tokens_details", None)
    cached_value = getattr(details, "cached_tokens", None) if details is not None else None
    cached = 0 if cached_value is None else _count(cached_value, "cached_tokens")
    if cached > prompt:
        raise BackendError(
            "the OpenAI-compatible API's reply cannot be read: usage says more cached tokens "
            f"({cached}) than prompt tokens ({prompt})"
        )
    return Tokens(input=prompt - cached, output=completion, cache_read=cached)


def _is_local(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "") in _LOOPBACK


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


class OpenAIBackend:
    """Reviewer and fixer through `AsyncOpenAI` (OPENAI_BASE_URL, OPENAI_API_KEY).

    `structured_output=False` never sends a response format (for a server
    known to refuse one); `stream=False` asks for whole replies.
    """

    name = "openai"
    requires_model = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        max_tokens: int = 16000,
        fix_max_tokens: int = 32000,
        structured_output: bool = True,
        stream: bool = True,
        prices: prices.Overrides | None = None,
        client: Any = None,
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.fix_max_tokens = fix_max_tokens
        self.structured_output = structured_output
        self.stream = stream
        self.prices = dict(prices or {})
        # The name the endpoint takes for the reply's token limit: OpenAI's
        # current one until a server says it does not know it.
        self.token_limit = "max_completion_tokens"
        self._client = client
        self._own_client = client is None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        """The endpoint this backend calls."""
        return (self._base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    def _key(self) -> str | None:
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        return key or (LOCAL_KEY if _is_local(self.base_url) else None)

    async def preflight(self) -> list[str]:
        """What is missing before a run may start: the package and a key, both named."""
        if self._client is not None:
            return []
        import importlib.util

        missing = []
        if importlib.util.find_spec("openai") is None:
            missing.append(
                "the openai package is not installed (pip install openai)"
            )
        if not self._key():
            missing.append(
                f"no credentials for {self.base_url} (set OPENAI_API_KEY; OPENAI_BASE_URL names "
                "another endpoint, and a server on this machine needs no key)"
            )
        return missing

    def _client_for(self, timeout: float | None) -> Any:
        try:
            import openai
        except ImportError:
            raise BackendError(
                "the openai backend needs the openai package: pip install openai"
            ) from None
        # A client is bound to the event loop it first ran on; verify_sync()
        # runs a new loop per call, so a backend reused across calls needs one per loop.
        loop = asyncio.get_running_loop()
        if self._own_client and self._loop is not loop:
            self._client, self._loop = None, loop
        if self._client is None:
            try:
                self._client = openai.AsyncOpenAI(
                    api_key=self._key(), base_url=self.base_url, max_retries=self.max_retries
                )
            except openai.OpenAIError:
                raise BackendError(
                    f"no credentials for the openai backend at {self.base_url}: set OPENAI_API_KEY"
                ) from None
        return self._client.with_options(timeout=timeout) if timeout else self._client

    async def aclose(self) -> None:
        """Close the HTTP client this backend opened (the loop calls it at the end of a run)."""
        if self._own_client and self._client is not None:
            client, self._client, self._loop = self._client, None, None
            await client.close()

    # -- one call -------------------------------------------------------------

    @contextlib.contextmanager
    def _api_errors(self, timeout: float | None, answer: Answer) -> Iterator[None]:
        """The SDK's errors as one BackendError sentence each; a connection
        error once the answer began is a ReplyCut, which `_call` sends again."""
        import openai

        where = f"the OpenAI-compatible API at {self.base_url}"
        cut = transport_errors()
        try:
            yield
        except cut as exc:  # an SDK release that lets the HTTP client's error through
            if answer.began:
                raise ReplyCut(
                    f"the connection to {where} broke before its reply ended ({detail(exc)})"
                ) from None
            raise BackendError(f"cannot reach {where} ({detail(exc)})") from None
        except openai.APIConnectionError as exc:
            if answer.began:
                raise ReplyCut(
                    f"the connection to {where} broke before its reply ended "
                    f"({detail(exc.__cause__ or exc)})"
                ) from None
            if isinstance(exc, openai.APITimeoutError):
                raise BackendError(
                    f"{where} timed out (after {timeout or 'the default'}s per call)"
                ) from None
            cause = f" ({detail(exc.__cause__)})" if exc.__cause__ is not None else ""
            raise BackendError(f"cannot reach {where}{cause}") from None
        except openai.AuthenticationError:
            raise BackendError(
                f"{where} refused the credentials (401): check OPENAI_API_KEY"
            ) from None
        except openai.PermissionDeniedError as exc:
            raise BackendError(f"{where} denied the request (403): {_message(exc)}") from None
        except openai.RateLimitError as exc:
            raise BackendError(
                f"{where} is rate limiting (429) after {self.max_retries} retries: {_message(exc)}"
            ) from None
        except openai.APIResponseValidationError:
            raise BackendError(
                f"{where} sent a reply that cannot be read (it does not match the API's shape)"
            ) from None
        except openai.APIStatusError as exc:
            message = _message(exc)
            # Only a request too big fails the same way every time; a wrong
            # model name or a credit limit is fixed by a person, then resumed.
            lowered = message.lower()
            too_big = (
                exc.status_code == 413
                or "context_length_exceeded" in lowered
                or ("context" in lowered and ("length" in lowered or "too long" in lowered))
            )
            raise BackendError(
                f"{where} failed ({exc.status_code}): {message}", transient=not too_big
            ) from None
        except openai.APIError as exc:  # an error event inside a stream
            raise BackendError(f"{where} reported an error in its reply: {_message(exc)}") from None

    def _downgrade(self, exc: Any, params: dict[str, Any]) -> bool:
        """Adapt `params` (and this backend, for its later calls) to an
        endpoint that refused a parameter it does not support; True when
        the call may be sent again. Each downgrade happens once."""
        import openai

        if not isinstance(exc, openai.BadRequestError):
            return False
        message = _message(exc).lower()
        if "response_format" in params and (
            "response_format" in message or "json_schema" in message
        ):
            self.structured_output = False
            del params["response_format"]
            return True
        if "max_completion_tokens" in params and "max_completion_tokens" in message:
            self.token_limit = "max_tokens"
            params["max_tokens"] = params.pop("max_completion_tokens")
            return True
        return False

    async def _call(
        self, params: dict[str, Any], timeout: float | None, on_started: Callable[[], None] | None
    ) -> tuple[_Answer, int]:
        """The reply, and how many tries before it were cut (a cut stream
        reports no usage: `_reply` counts each as costing what the answered
        one did, which never under-counts a budget)."""
        client = self._client_for(timeout)
        tries = self.max_retries + 1
        attempt = 0
        while True:
            answer = Answer()
            try:
                with self._api_errors(timeout, answer), _unreadable():
                    return await self._send(client, params, answer, on_started), attempt
            except ReplyCut as exc:
                attempt += 1
                if attempt == tries:
                    raise ReplyCut(f"{exc}, {on_tries(tries)}") from None
            except _Refused as refused:
                if not self._downgrade(refused.error, params):
                    with self._api_errors(timeout, answer):
                        raise refused.error from None
                continue  # the same call without what the endpoint refused; not a try
            await asyncio.sleep(CUT_RETRY_DELAY * 2 ** (attempt - 1))

    async def _send(
        self,
        client: Any,
        params: dict[str, Any],
        answer: Answer,
        on_started: Callable[[], None] | None,
    ) -> _Answer:
        import openai

        try:
            if not self.stream:
                completion = await client.chat.completions.create(**params)
                answer.began = True
                return _whole(completion)
            stream = await client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
        except openai.BadRequestError as exc:
            if "response_format" in params or "max_completion_tokens" in params:
                # Let `_call` see it: it may be a parameter the endpoint lacks.
                raise _Refused(exc) from None
            raise
        answer.began = True
        return await _streamed(stream, on_started)

    # -- reviewer and fixer ---------------------------------------------------

    def _params(
        self, model: str, system: str, messages: list[dict[str, str]], limit: int, schema: Any
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": model,
            "messages": [{"role": "system", "content": system}, *messages],
            self.token_limit: limit,
        }
        if self.structured_output:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema[0], "schema": schema[1], "strict": True},
            }
        return params

    def _model(self, model: str | None) -> str:
        if not model:
            raise BackendError(
                "the openai backend needs a model name (--models openai:MODEL)", transient=False
            )
        return model

    def _cost(self, model: str, answered: str | None, tokens: Tokens) -> float | None:
        """USD at the price of the model asked for (the one the budget checked), else the one that answered."""
        for name in dict.fromkeys(n for n in (model, answered) if n):
            found = prices.cost(name, tokens, self.prices, aliases=False)
            if found is not None:
                return found
        return None

    def _spent(self, model: str, reply: _Answer, cut: int) -> tuple[Tokens, float | None]:
        """The tokens and cost of a reply and its cut tries (each counted as it)."""
        tokens = Tokens()
        for _ in range(cut + 1):
            tokens = tokens + reply.tokens
        if not reply.usage_known:
            # No usage (some local servers send none): free only if the model is free.
            every = Tokens(input=1, output=1, cache_read=1, cache_write=1)
            return tokens, (0.0 if self._cost(model, reply.model, every) == 0.0 else None)
        cost = self._cost(model, reply.model, reply.tokens)
        return tokens, None if cost is None else cost * (cut + 1)

    async def review(self, request: ReviewRequest) -> ReviewReply:
        model = self._model(request.model)
        messages = [{"role": "user", "content": request.round_part}]
        for turn in request.followups:
            messages.append({"role": "assistant", "content": turn.reply})
            messages.append({"role": "user", "content": turn.feedback})
        params = self._params(
            model,
            REVIEWER_SYSTEM + "\n\n" + request.prefix,
            messages,
            self.max_tokens,
            ("santa_review", request.schema),
        )
        reply, cut = await self._call(params, request.timeout, request.on_started)
        tokens, cost = self._spent(model, reply, cut)
        failure = None
        if reply.refusal:
            failure = "the model refused to review"
        elif reply.finish == "length":
            failure = f"the reply was cut off at its token limit ({self.max_tokens})"
        elif reply.finish == "content_filter":
            failure = "the endpoint's content filter stopped the reply"
        return ReviewReply(
            text=reply.text,
            tokens=tokens,
            cost_usd=cost,
            model=reply.model or model,
            failure=failure,
        )

    async def fix(self, request: FixRequest) -> FixReply:
        model = self._model(request.model)
        tokens, cost = Tokens(), 0.0
        cost_known: float | None = cost
        # A reply that is no JSON is asked for once more; twice is this fixer's answer.
        for attempt in (1, 2):
            params = self._params(
                model,
                FIXER_SYSTEM,
                [{"role": "user", "content": request.assignment + FIX_TAIL}],
                self.fix_max_tokens,
                ("santa_fix", FIX_SCHEMA),
            )
            reply, cut = await self._call(params, request.timeout, None)
            spent, call_cost = self._spent(model, reply, cut)
            tokens = tokens + spent
            cost_known = None if call_cost is None or cost_known is None else cost_known + call_cost
            if reply.finish == "length":
                raise BackendError(
                    f"the fixer's reply was cut off at its token limit ({self.fix_max_tokens})",
                    transient=False,
                )
            answer = read_fix(reply.text)
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
            cost_usd=cost_known,
            model=reply.model or model,
        )


class _Refused(Exception):
    """A 400 from the endpoint, held up so `_call` may adapt the request."""

    def __init__(self, error: Any) -> None:
        super().__init__(str(error))
        self.error = error


def _whole(completion: Any) -> _Answer:
    """The answer of a call that was not streamed."""
    choice = completion.choices[0]
    message = choice.message
    usage = getattr(completion, "usage", None)
    text = message.content
    if text is not None and not isinstance(text, str):
        raise TypeError(f"message content is {type(text).__name__}, not text")
    return _Answer(
        text=text or "",
        finish=choice.finish_reason,
        refusal=getattr(message, "refusal", None),
        model=getattr(completion, "model", None),
        tokens=_tokens(usage) if usage is not None else Tokens(),
        usage_known=usage is not None,
    )


async def _streamed(stream: Any, on_started: Callable[[], None] | None) -> _Answer:
    """Read a stream of chunks to its end: the text, the finish reason, the
    usage (in the last chunk, or any chunk that carries it)."""
    parts: list[str] = []
    refusal: list[str] = []
    finish: str | None = None
    model: str | None = None
    usage: Any = None
    chunks = 0
    async with stream:
        async for chunk in stream:
            chunks += 1
            if on_started is not None:
                on_started()
                on_started = None
            model = getattr(chunk, "model", None) or model
            if getattr(chunk, "usage", None) is not None:
                usage = chunk.usage
            for choice in chunk.choices or []:
                if getattr(choice, "index", 0) != 0:
                    continue
                delta = choice.delta
                content = getattr(delta, "content", None) if delta is not None else None
                if content is not None:
                    if not isinstance(content, str):
                        raise TypeError(f"a chunk's content is {type(content).__name__}, not text")
                    parts.append(content)
                said = getattr(delta, "refusal", None) if delta is not None else None
                if said:
                    refusal.append(str(said))
                finish = choice.finish_reason or finish
    if finish is None:
        kind = str(stream.response.headers.get("content-type", "")).split(";")[0].strip()
        if not chunks and kind != "text/event-stream":
            raise BackendError(
                "the OpenAI-compatible API sent a reply that cannot be read (a body of type "
                f"{kind or 'unknown'}, not an event stream)"
            )
        raise ReplyCut("the OpenAI-compatible API's stream ended before its reply did")
    return _Answer(
        text="".join(parts),
        finish=finish,
        refusal="".join(refusal) or None,
        model=model,
        tokens=_tokens(usage) if usage is not None else Tokens(),
        usage_known=usage is not None,
    )
