"""The reviewers of a run: backend calls, their cost, and the re-asks.

Why apart from the loop: a batch's screens are reviewers too (one reviewer
outside any run, `review_once`), re-asked exactly as a run's are, so the
code that asks a backend for a review, checks the reply, hands an invalid
one back (up to 2 times) and an unverified quote once, and counts what
each call cost lives in one place. Nothing is decided here: the loop
(`loop.py`) stores what this module returns, and the run state gates it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from santa_method.core import reask
from santa_method.core.errors import BackendError
from santa_method.core.review import validate_object, validate_reply
from santa_method.core.schema import strict_schema
from santa_method.core.types import Rubric, ValidationResult
from santa_method.headless.backends.base import (
    Backend,
    FollowUp,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.headless.backends.checked import ask_review
from santa_method.headless.options import EventHook
from santa_method.headless.results import ReviewerRecord, RoundRecord
from santa_method.headless.routing import Route, Seat


class LoopRun:
    """The mutable bookkeeping of one `verify` call. `backend` is the run's
    own (`--backend`, named in its log and result); `route` says which
    instance answers each reviewer slot and the fixer."""

    def __init__(
        self,
        backend: Backend,
        rubric: Rubric,
        *,
        route: Route,
        timeout: float | None,
        cache_warm: bool,
        project_dir: str,
        on_event: EventHook | None,
    ) -> None:
        self.backend = backend
        self.rubric = rubric
        self.route = route
        self.timeout = timeout
        self.cache_warm = cache_warm
        self.project_dir = project_dir
        self.on_event = on_event
        self.schema = strict_schema(rubric.ids)
        self.tokens = Tokens()
        self.cost: float | None = 0.0
        self.unlogged_cost = 0.0
        self.unlogged_tokens = Tokens()
        self.history: list[RoundRecord] = []
        self.warnings: list[str] = []
        self.replayed: str | None = None
        """The recording a replayed run is answered from."""
        # Takes a user's file's lock for the rest of the run before a fix writes it.
        self.fix_alone: Callable[[Path], None] = lambda path: None

    def emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            with contextlib.suppress(Exception):  # a broken live view must not break the run
                self.on_event(kind, data)

    @property
    def fixer(self) -> Seat:
        return self.route.fixer

    def spend(
        self, tokens: Tokens, cost: float | None, *, logged: bool, by: str | None = None
    ) -> None:
        self.tokens = self.tokens + tokens
        if cost is None:
            if self.cost is not None:
                self.warnings.append(
                    f"the {by or self.backend.name} backend reported no cost for a call; "
                    "the money budget cannot be enforced"
                )
            self.cost = None
        elif self.cost is not None:
            self.cost += cost
        if not logged:
            self.unlogged_tokens = self.unlogged_tokens + tokens
            self.unlogged_cost += cost or 0.0

    def take_unlogged(self) -> dict[str, Any]:
        data = {
            "tokens": self.unlogged_tokens.to_json()["total"],
            "token_detail": self.unlogged_tokens.to_json(),
        }
        data["cost_usd"] = round(self.unlogged_cost, 8) if self.cost is not None else None
        self.unlogged_tokens, self.unlogged_cost = Tokens(), 0.0
        return data

    async def call(self, what: str, coro: Any, *, queued: bool = False) -> Any:
        """One backend call under the per-call timeout; every failure is a BackendError.

        A `queued` call (a review waiting in a Message Batch, for hours maybe)
        is not timed as a whole: the backend times its own HTTP calls.
        """
        try:
            if self.timeout and not queued:
                async with asyncio.timeout(self.timeout):
                    return await coro
            return await coro
        except BackendError:
            raise
        except TimeoutError:
            raise BackendError(f"{what} timed out after {self.timeout:g}s") from None

    # -- reviewers ----------------------------------------------------------

    def _validate(self, reply: ReviewReply, output: str, canary: str) -> ValidationResult:
        if reply.failure:
            return ValidationResult(False, (reply.failure,))
        if reply.obj is not None:
            return validate_object(reply.obj, rubric=self.rubric, output=output, canary=canary)
        return validate_reply(reply.text, rubric=self.rubric, output=output, canary=canary)

    async def review_slot(
        self,
        label: str,
        *,
        prefix: str,
        round_part: str,
        output: str,
        canary: str,
        on_started: Callable[[], None] | None,
    ) -> tuple[str, ValidationResult, ReviewerRecord]:
        """One reviewer, re-asked as ARCHITECTURE.md says ("Re-asking"); returns (reply text, result, record)."""
        seat = self.route.seat(label)
        model = seat.model
        followups: list[FollowUp] = []
        session: str | None = None
        tokens, cost = Tokens(), 0.0
        cost_known = True
        waited = 0.0
        asks = reask.Asks()
        self.emit("reviewer_start", label=label, model=model, backend=seat.backend_name)
        while True:
            request = ReviewRequest(
                prefix=prefix,
                round_part=round_part,
                schema=self.schema,
                model=model,
                timeout=self.timeout,
                project_dir=self.project_dir,
                label=label,
                followups=tuple(followups),
                session=session,
                on_started=on_started if not followups else None,
            )
            began = time.monotonic()
            reply = await self.call(
                f"reviewer {label}",
                ask_review(seat.backend, request),
                queued=bool(getattr(seat.backend, "queued", False)),
            )
            waited += time.monotonic() - began
            on_started = None
            tokens = tokens + reply.tokens
            if reply.cost_usd is None:
                cost_known = False
            else:
                cost += reply.cost_usd
            session = reply.session or session
            text = (
                json.dumps(reply.obj, ensure_ascii=False) if reply.obj is not None else reply.text
            )
            result = self._validate(reply, output, canary)
            if reply.failure:
                break
            ask = reask.next_ask(result, asks)
            if ask is not None:
                asks = ask.asks
                followups.append(FollowUp(text, ask.feedback))
                self.emit("reviewer_reask", label=label, errors=list(ask.reasons))
                continue
            break
        record = ReviewerRecord(
            label=label,
            backend=seat.backend_name,
            model=reply.model or model,
            valid=result.valid,
            verdict=result.verdict if result.valid else None,
            asks=1 + len(followups),
            errors=result.errors,
            tokens=tokens,
            cost_usd=cost if cost_known else None,
            duration_s=round(waited, 3),
        )
        self.emit("reviewer_done", **record.to_json())
        return text, result, record

    async def review_round(
        self, labels: Sequence[str], prefix: str, round_part: str, output: str, canary: str
    ) -> list[tuple[str, ValidationResult, ReviewerRecord]]:
        """All open slots concurrently; with cache_warm the others wait for the first stream."""

        async def slot(label: str, on_started: Callable[[], None] | None = None) -> Any:
            return await self.review_slot(
                label,
                prefix=prefix,
                round_part=round_part,
                output=output,
                canary=canary,
                on_started=on_started,
            )

        try:
            async with asyncio.TaskGroup() as group:
                if self.cache_warm and len(labels) > 1:
                    started = asyncio.Event()
                    first = group.create_task(slot(labels[0], started.set))
                    waiter = asyncio.ensure_future(started.wait())
                    await asyncio.wait({first, waiter}, return_when=asyncio.FIRST_COMPLETED)
                    waiter.cancel()
                    rest = [group.create_task(slot(label)) for label in labels[1:]]
                    tasks = [first, *rest]
                else:
                    tasks = [group.create_task(slot(label)) for label in labels]
        except BaseExceptionGroup as group:
            # One failed reviewer cancels the others; surface its own error.
            raise first_error(group) from None
        return [t.result() for t in tasks]


async def review_once(
    seat: Seat,
    rubric: Rubric,
    *,
    prefix: str,
    round_part: str,
    output: str,
    canary: str,
    timeout: float | None = None,
    project_dir: str = ".",
) -> tuple[ValidationResult, ReviewerRecord]:
    """One reviewer outside a run (a batch's screen, `seat`), re-asked exactly as in a run."""
    run = LoopRun(
        seat.backend,
        rubric,
        route=Route((seat,), seat),
        timeout=timeout,
        cache_warm=False,
        project_dir=project_dir,
        on_event=None,
    )
    _text, result, record = await run.review_slot(
        seat.label,
        prefix=prefix,
        round_part=round_part,
        output=output,
        canary=canary,
        on_started=None,
    )
    return result, record


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The error to report from a task group: a BackendError first (it has
    the sentence a person acts on), else the first one raised."""
    errors = list(_leaves(group))
    return next((e for e in errors if isinstance(e, BackendError)), errors[0])


def _leaves(group: BaseExceptionGroup) -> Any:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            yield from _leaves(error)
        else:
            yield error
