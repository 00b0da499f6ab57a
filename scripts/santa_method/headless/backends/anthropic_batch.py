"""The `anthropic-batch` backend: the reviewer calls of a round as one Message Batch.

Why: a batch of items sends hundreds of reviewer calls per round. Message
Batches bill them at half price (`prices.BATCH_FACTOR`) and keep them out
of the rate limits, at the price of latency (minutes, up to 24 hours). A
wait that long outlives processes, so everything needed to continue is on
disk before it is waited for: an interrupted run resumed with a new
backend on the same state file polls the same batch and never pays twice.

How a review travels:

* `review()` builds exactly the parameters the `anthropic` backend sends
  (the shared prefix cached in the system prompt, the strict review schema
  in `output_config`; no streaming) and keys them with a `custom_id`: a
  hash of the canonical parameters, the reviewer's label and the
  occurrence (the n-th identical request of this backend instance). The
  label is in the key because two reviewers with the same model send
  byte-identical parameters and must stay two independent reviews; the
  occurrence because a re-review of the same round sends the same
  parameters again and must be a fresh sample, while a resumed process
  replays the same sequence of requests and so meets the same keys.
* A key with a stored result is answered from the state file (no network);
  a key already in a submitted batch waits for that batch; any other is
  queued, and the queue goes out as ONE batch once no new request arrived
  for `gather_window` seconds (the concurrent reviewers of all items of a
  round end up together).
* One poller per batch: `retrieve` every `poll_interval` seconds until it
  has ended, then the results, saved as they stream in. An errored,
  expired or canceled result is sent again once, in a later batch; a
  second failure (or an error that cannot pass on a retry, like an invalid
  request) is a BackendError.

The state file (JSON, replaced atomically)::

    {"version": 1,
     "batches": {"msgbatch_...": {"custom_ids": ["rv-..."], "status": "in_progress",
                                  "submitted_at": "2026-01-02T03:04:05Z",
                                  "counts": {"processing": 2, "succeeded": 0, ...}}},
     "requests": {"rv-...": {"label": "B", "model": "claude-sonnet-5-5",
                             "batches": ["msgbatch_..."], "failures": [],
                             "result": {...the Message as the API returned it...},
                             "result_batch": "msgbatch_..."}}}

`status` is the API's `processing_status` until the results are saved,
then `collected`. A failure is `{"batch_id", "type", "error_type",
"message"}`. A request is pending while it has more batches than outcomes.

One process per state file at a time: two processes sharing one file
would overwrite each other's records (the caller's batch folder, with its
own lock, is the place for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import BackendError, InputError
from santa_method.headless.backends import anthropic as messages_api
from santa_method.headless.backends import prices
from santa_method.headless.backends.anthropic import (
    Answer,
    AnthropicBackend,
    ReplyCut,
    on_tries,
)
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.state.jsonfile import write_atomic

STATE_VERSION = 1
ATTEMPTS = 2  # a failed result is sent once more, then it is a BackendError
MAX_BATCH_REQUESTS = 100_000  # the API's limit per batch
MAX_BATCH_BYTES = 200 * 1024 * 1024  # the API takes 256 MB; a margin for the framing
SAVE_EVERY = 1.0  # seconds between saves while results stream in (a rewrite per line is O(n^2))
MAX_POLL_FAILURES = 5  # consecutive transient errors while polling before giving up
# Errors a second attempt cannot fix: the same request would fail the same way.
FINAL_ERRORS = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "request_too_large"}
)
ProgressHook = Callable[[dict[str, Any]], None]


@dataclass
class _Queued:
    key: str
    params: dict[str, Any]
    size: int
    label: str
    future: asyncio.Future[str]
    on_started: Callable[[], None] | None


class AnthropicBatchBackend(AnthropicBackend):
    """Reviewers through Message Batches; the fixer through the ordinary Messages API."""

    name = "anthropic-batch"
    queued = True
    """A review waits in a Message Batch (minutes to hours): the loop does not
    put its per-call timeout around the wait; HTTP calls keep theirs."""

    def __init__(
        self,
        *,
        state_path: str | os.PathLike[str],
        poll_interval: float = 30.0,
        gather_window: float = 2.0,
        on_progress: ProgressHook | None = None,
        **anthropic_options: Any,
    ) -> None:
        numbers.POLL_INTERVAL_S.check(poll_interval, "poll_interval")
        if gather_window < 0:
            raise InputError("gather_window cannot be negative")
        super().__init__(**anthropic_options)
        self.state_path = Path(state_path)
        self.poll_interval = poll_interval
        self.gather_window = gather_window
        self.on_progress = on_progress
        self._state = _load(self.state_path)
        self._seen: dict[str, int] = {}
        self._active = 0
        self._close_requested = False
        self._bound: asyncio.AbstractEventLoop | None = None
        self._queue: list[_Queued] = []
        self._last_arrival = 0.0
        self._flusher: asyncio.Task[None] | None = None
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._waiting: dict[str, int] = {}

    # -- the public face ------------------------------------------------------

    async def review(self, request: ReviewRequest) -> ReviewReply:
        params = self._review_params(request)
        key = self._next_key(params, request.label)
        async with self._busy():
            message = await self._answer(key, params, request)
        return self._review_reply(_view(message), params["model"])

    async def fix(self, request: FixRequest) -> FixReply:
        async with self._busy():
            return await super().fix(request)

    async def aclose(self) -> None:
        """Stop pollers and close the client.

        While another review or fix of this instance is still running (runs
        of several items sharing one backend), closing waits for the last of
        them, so the end of one run cannot break another's batch. Batches
        in flight stay recorded in the state file.
        """
        if self._active:
            self._close_requested = True
            return
        await self._close_now()

    def _cost(self, model: str, tokens: Tokens) -> float | None:
        cost = prices.cost(model, tokens, self.prices)
        return None if cost is None else cost * prices.BATCH_FACTOR

    # -- keys and the state file ----------------------------------------------

    def _next_key(self, params: dict[str, Any], label: str) -> str:
        canonical = json.dumps(
            {"label": label, "params": params},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        base = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        occurrence = self._seen.get(base, 0) + 1
        self._seen[base] = occurrence
        # 'rv-' + 48 hex digits: within the API's ^[a-zA-Z0-9_-]{1,64}$.
        return "rv-" + hashlib.sha256(f"{base}:{occurrence}".encode()).hexdigest()[:48]

    def _save(self) -> None:
        write_atomic(self.state_path, self._state)

    # -- one review -------------------------------------------------------------

    async def _answer(self, key: str, params: dict[str, Any], request: ReviewRequest) -> Any:
        """The stored Message for `key`: from the file, a batch in flight, or a new batch."""
        started = False
        # Failures an earlier process stored do not count against this one: a
        # resumed batch tries again (the server may be healthy by now).
        entry = self._state["requests"].get(key)
        earlier = len(entry["failures"]) if entry is not None else 0
        while True:
            entry = self._state["requests"].get(key)
            if entry is not None and entry.get("result") is not None:
                if not started:
                    _call_started(request.on_started)
                return entry["result"]
            failures = entry["failures"] if entry is not None else []
            fresh = len(failures) - earlier
            if fresh > 0 and (fresh >= ATTEMPTS or failures[-1].get("error_type") in FINAL_ERRORS):
                invalid = failures[-1].get("error_type") in (
                    "invalid_request_error",
                    "request_too_large",
                )
                raise BackendError(_give_up(request.label, failures), transient=not invalid)
            if entry is not None and len(entry["batches"]) > len(failures):
                if not started:
                    started = True
                    _call_started(request.on_started)
                await self._wait_for(entry["batches"][-1])
                continue
            await self._enqueue(key, params, request.label, None if started else request.on_started)
            started = True

    async def _enqueue(
        self,
        key: str,
        params: dict[str, Any],
        label: str,
        on_started: Callable[[], None] | None,
    ) -> None:
        """Queue one request and return once the batch holding it is recorded."""
        loop = self._bind()
        future: asyncio.Future[str] = loop.create_future()
        size = len(json.dumps(params, ensure_ascii=False).encode("utf-8")) + 200
        self._queue.append(_Queued(key, params, size, label, future, on_started))
        self._last_arrival = loop.time()
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush_when_quiet())
        await future  # a cancelled waiter cancels its future: it is then left out

    # -- submitting -------------------------------------------------------------

    async def _flush_when_quiet(self) -> None:
        loop = asyncio.get_running_loop()
        while (delay := self._last_arrival + self.gather_window - loop.time()) > 0:
            await asyncio.sleep(delay)
        queued, self._queue, self._flusher = self._queue, [], None
        chunks = _chunks([q for q in queued if not q.future.done()])
        for index, chunk in enumerate(chunks):
            try:
                await self._create(chunk)
            except BaseException as exc:
                for later in chunks[index:]:
                    for item in later:
                        if not item.future.done():
                            if isinstance(exc, Exception):
                                item.future.set_exception(exc)
                            else:
                                item.future.cancel()
                if not isinstance(exc, Exception):
                    raise
                return

    async def _create(self, chunk: list[_Queued]) -> None:
        client = self._client_for(None)
        requests = [{"custom_id": q.key, "params": q.params} for q in chunk]
        with self._batch_errors(client):
            batch = await client.messages.batches.create(requests=requests)
        record = {
            "custom_ids": [q.key for q in chunk],
            "status": batch.processing_status,
            "submitted_at": _now(),
            "counts": _counts(batch),
        }
        self._state["batches"][batch.id] = record
        for q in chunk:
            entry = self._state["requests"].setdefault(
                q.key,
                {
                    "label": q.label,
                    "model": q.params["model"],
                    "batches": [],
                    "failures": [],
                    "result": None,
                },
            )
            entry["batches"].append(batch.id)
        self._save()  # recorded before anyone waits: an interruption from here on costs nothing
        self._progress(batch.id, record)
        for q in chunk:
            if not q.future.done():
                _call_started(q.on_started)
                q.future.set_result(batch.id)

    @contextlib.contextmanager
    def _batch_errors(self, client: Any, answer: Answer | None = None) -> Iterator[None]:
        """The anthropic backend's error sentences, plus the SDK's unclassified errors."""
        import anthropic

        try:
            with self._api_errors(client, None, answer):
                yield
        except anthropic.AnthropicError as exc:
            raise BackendError(f"the Message Batches API failed: {exc}") from None

    # -- polling and collecting ----------------------------------------------

    async def _wait_for(self, batch_id: str) -> None:
        """Wait until `batch_id`'s results are in the state file (one poller per batch)."""
        loop = self._bind()
        task = self._pollers.get(batch_id)
        if task is None or task.done():
            task = loop.create_task(self._poll(batch_id))
            self._pollers[batch_id] = task
        self._waiting[batch_id] = self._waiting.get(batch_id, 0) + 1
        try:
            await asyncio.shield(task)
        finally:
            self._waiting[batch_id] -= 1
            if not self._waiting[batch_id]:
                del self._waiting[batch_id]
                if not task.done():
                    task.cancel()  # nobody waits any more; the file keeps the batch id
                if self._pollers.get(batch_id) is task:
                    del self._pollers[batch_id]

    async def _poll(self, batch_id: str) -> None:
        import anthropic

        record = self._state["batches"].get(batch_id)
        if record is None:  # a request names a batch the file lost: rebuild its record
            keys = [k for k, e in self._state["requests"].items() if batch_id in e["batches"]]
            record = {"custom_ids": keys, "status": "in_progress", "submitted_at": None}
            self._state["batches"][batch_id] = record
        if record["status"] == "collected":
            self._settle(batch_id, record)
            return
        client = self._client_for(None)
        errors = 0
        while True:
            try:
                batch = await client.messages.batches.retrieve(batch_id)
            except anthropic.NotFoundError:
                self._settle(batch_id, record, reason="the batch no longer exists on the API")
                return
            except (
                anthropic.APIConnectionError,
                anthropic.RateLimitError,
                anthropic.InternalServerError,
            ):
                # A long batch outlives a network blip: keep polling a while.
                errors += 1
                if errors >= MAX_POLL_FAILURES:
                    with self._batch_errors(client):
                        raise
                await asyncio.sleep(self.poll_interval)
                continue
            except anthropic.AnthropicError:
                with self._batch_errors(client):
                    raise
            errors = 0
            changed = record["status"] != batch.processing_status
            record["status"] = batch.processing_status
            record["counts"] = _counts(batch)
            if changed:
                self._save()
            self._progress(batch_id, record)
            if batch.processing_status == "ended":
                break
            await asyncio.sleep(self.poll_interval)
        await self._collect_all(client, batch_id, record)

    async def _collect_all(self, client: Any, batch_id: str, record: dict[str, Any]) -> None:
        """The results, downloaded again when the connection breaks before they
        end (as often as the SDK retries a failed call): what arrived before
        the break is kept, and a result is recorded once however often it comes.
        Every try cut is a BackendError, and the batch stays resumable."""
        tries = self.max_retries + 1
        attempt = 0
        while True:
            try:
                await self._collect(client, batch_id, record)
                return
            except ReplyCut as exc:
                attempt += 1
                if attempt == tries:
                    raise ReplyCut(
                        f"{exc} while sending the results of Message Batch {batch_id}, "
                        f"{on_tries(tries)}"
                    ) from None
            await asyncio.sleep(messages_api.CUT_RETRY_DELAY * 2 ** (attempt - 1))

    async def _collect(self, client: Any, batch_id: str, record: dict[str, Any]) -> None:
        wanted = set(record["custom_ids"])
        last_save = time.monotonic()
        answer = Answer()
        try:
            with self._batch_errors(client, answer):
                results = await client.messages.batches.results(batch_id)
                answer.began = True
                items = results.__aiter__()
                while True:
                    # Only the SDK's parsing and the reads of what it parsed are the
                    # API's to fail: a bug in santa's own bookkeeping below stays one.
                    with _readable_results(batch_id):
                        try:
                            item = await items.__anext__()
                        except StopAsyncIteration:
                            break
                        key, outcome = _read_item(batch_id, item)
                    if key not in wanted:
                        continue
                    self._outcome(batch_id, key, outcome)
                    if time.monotonic() - last_save >= SAVE_EVERY:
                        self._save()  # partial results survive an interruption
                        last_save = time.monotonic()
        except BaseException:
            with contextlib.suppress(OSError):
                self._save()  # what arrived before the break is kept
            raise
        self._settle(batch_id, record)

    def _outcome(self, batch_id: str, key: str, outcome: _Outcome) -> None:
        entry = self._state["requests"].get(key)
        if entry is None or entry.get("result") is not None or _has_outcome(entry, batch_id):
            return
        if outcome.message is not None:
            entry["result"] = outcome.message
            entry["result_batch"] = batch_id
        else:
            entry["failures"].append(outcome.failure)

    def _settle(self, batch_id: str, record: dict[str, Any], reason: str | None = None) -> None:
        """Close the batch: every request of it without an outcome gets a failure."""
        for key in record["custom_ids"]:
            entry = self._state["requests"].get(key)
            if entry is None or entry.get("result") is not None or _has_outcome(entry, batch_id):
                continue
            entry["failures"].append(
                {
                    "batch_id": batch_id,
                    "type": "missing",
                    "error_type": None,
                    "message": reason or "no result for this request in the batch",
                }
            )
        record["status"] = "collected"
        self._save()

    def _progress(self, batch_id: str, record: dict[str, Any]) -> None:
        if self.on_progress is None:
            return
        event = {
            "batch_id": batch_id,
            "status": record["status"],
            "requests": len(record["custom_ids"]),
            **record.get("counts", {}),
        }
        with contextlib.suppress(Exception):  # a broken progress bar must not break the run
            self.on_progress(event)

    # -- event loops and closing ------------------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._bound is not loop:
            # Tasks of an earlier event loop (verify_sync runs one per call) are
            # gone; what they submitted is in the state file and resumes from it.
            self._bound = loop
            self._queue, self._flusher, self._pollers, self._waiting = [], None, {}, {}
        return loop

    @contextlib.asynccontextmanager
    async def _busy(self) -> AsyncIterator[None]:
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1
            if not self._active and self._close_requested:
                with contextlib.suppress(Exception):
                    await self._close_now()

    async def _close_now(self) -> None:
        self._close_requested = False
        tasks = [t for t in (self._flusher, *self._pollers.values()) if t is not None]
        tasks = [t for t in tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks and self._bound is asyncio.get_running_loop():
            await asyncio.gather(*tasks, return_exceptions=True)
        self._queue, self._flusher, self._pollers, self._waiting = [], None, {}, {}
        await super().aclose()


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"version": STATE_VERSION, "batches": {}, "requests": {}}
    except OSError as exc:
        raise InputError(f"cannot read the batch state file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError
        if not isinstance(data.get("batches"), dict) or not isinstance(data.get("requests"), dict):
            raise ValueError
    except ValueError:
        raise InputError(
            f"the batch state file {path} is damaged or of another version; move it away to "
            "start over (requests of batches it recorded would then be paid again)"
        ) from None
    return data


def _chunks(items: list[_Queued]) -> list[list[_Queued]]:
    """Split a queue into batches within the API's count and size limits."""
    chunks: list[list[_Queued]] = []
    current: list[_Queued] = []
    size = 0
    for item in items:
        if current and (len(current) >= MAX_BATCH_REQUESTS or size + item.size > MAX_BATCH_BYTES):
            chunks.append(current)
            current, size = [], 0
        current.append(item)
        size += item.size
    if current:
        chunks.append(current)
    return chunks


def _counts(batch: Any) -> dict[str, int]:
    counts = batch.request_counts
    return {
        name: int(getattr(counts, name, 0) or 0)
        for name in ("processing", "succeeded", "errored", "canceled", "expired")
    }


def _has_outcome(entry: dict[str, Any], batch_id: str) -> bool:
    return entry.get("result_batch") == batch_id or any(
        f.get("batch_id") == batch_id for f in entry["failures"]
    )


@dataclass(frozen=True)
class _Outcome:
    """One result of a batch, read off the SDK's object: the message of a
    success (as JSON), or what went wrong."""

    message: dict[str, Any] | None
    failure: dict[str, Any] | None


def _read_item(batch_id: str, item: Any) -> tuple[str, _Outcome]:
    result = item.result
    if result.type == "succeeded":
        return str(item.custom_id), _Outcome(result.message.to_dict(mode="json"), None)
    return str(item.custom_id), _Outcome(None, _failure(batch_id, result))


def _failure(batch_id: str, result: Any) -> dict[str, Any]:
    error_type = message = None
    if result.type == "errored":
        inner = getattr(getattr(result, "error", None), "error", None)
        error_type = getattr(inner, "type", None)
        message = getattr(inner, "message", None)
    return {
        "batch_id": batch_id,
        "type": str(result.type),
        "error_type": error_type,
        "message": message,
    }


def _describe(failure: dict[str, Any]) -> str:
    parts = [failure.get("type") or "failed", failure.get("error_type"), failure.get("message")]
    return ": ".join(str(p) for p in parts if p)


def _give_up(label: str, failures: list[dict[str, Any]]) -> str:
    who = f"reviewer {label}" if label else "a reviewer"
    if len(failures) == 1:
        return (
            f"the Message Batch request of {who} failed with {_describe(failures[0])}, "
            "which sending it again cannot fix"
        )
    times = "twice" if len(failures) == 2 else f"{len(failures)} times"
    return (
        f"the Message Batch request of {who} failed {times}, last with "
        f"{_describe(failures[-1])}, and is not sent again"
    )


@contextlib.contextmanager
def _readable_results(batch_id: str) -> Iterator[None]:
    """A results stream the SDK cannot parse (a line that is not JSON, or
    JSON that is not a result) is the API's failure, not santa's: exit 3
    with the reason, never "internal error". It guards only the SDK's
    iteration and the reads of the item it yields (pydantic's ValidationError
    is a ValueError), so a fault in santa's own bookkeeping stays exit 1."""
    try:
        yield
    except (ValueError, LookupError, TypeError, AttributeError, AssertionError) as exc:
        raise BackendError(
            f"the results of Message Batch {batch_id} cannot be read: "
            f"{type(exc).__name__}: {exc}"
        ) from None


def _call_started(on_started: Callable[[], None] | None) -> None:
    if on_started is not None:
        with contextlib.suppress(Exception):
            on_started()


def _view(message: dict[str, Any]) -> Any:
    """An attribute view of a stored Message, the shape the reply parser reads."""
    return json.loads(json.dumps(message), object_hook=lambda d: SimpleNamespace(**d))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
