"""One `verify_batch` call at work: its waves, items, screens and budget.

Why apart from `batch.py` (which checks the arguments and opens or resumes
the batch): this is the part that spends money. Each sampled item is
verified by `verify()`, the same loop and run state as `santa run`; the
batch's rules (what failed, what is systemic, what comes next) are the
pure functions of core/batch_rules.py, applied by the Book of state/batches.py;
everything decided is saved before it is acted on, so an interrupted batch
resumes without paying twice.

A screen is one reviewer judging one item on one criterion (the systemic
one), with the same schema, checks and re-asks as a run's reviewers; an
item it flags goes to the fixer with those flags only. Screens never ship
anything: the fresh sample that follows is what the verdict rests on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from santa_method.core import assignments, batch_rules, budget
from santa_method.core.errors import BackendError, InputError, RefusedError, StartError
from santa_method.core.files import read_exact
from santa_method.core.merge import flags_of, merge_flags
from santa_method.core.reviewers import Reviewer
from santa_method.core.types import Rubric
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import FixRequest, Tokens
from santa_method.headless.backends.checked import ask_fix
from santa_method.headless.loop import verify
from santa_method.headless.options import EventHook, VerifyOptions
from santa_method.headless.results import BatchResult
from santa_method.headless.reviewing import first_error, review_once
from santa_method.headless.routing import Backends
from santa_method.state import batches
from santa_method.state.atomic import replace_text
from santa_method.state.model.batch import ScreenFix, ScreenRecord, Wave
from santa_method.state.store import load_state


@dataclass(frozen=True)
class BatchSettings:
    """What the batch's jobs are run with, settled once the arguments are
    checked (the fixer and the screens default to the first model)."""

    max_fixes: int
    max_cost_usd: float | None
    reviewers: int
    models: list[str] | None
    fixer: Reviewer
    """Who fixes a flagged item (a backend and model; None: the batch's own)."""
    screen: Reviewer
    """Who screens."""
    prices: prices.Overrides
    timeout: float | None
    log: str | os.PathLike[str] | None
    project_dir: str
    concurrency: int | None
    """Jobs at once; None runs a whole wave at once (anthropic-batch)."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class BatchRun:
    """One `verify_batch` call: verifies and screens; the Book keeps the rules."""

    def __init__(
        self,
        book: batches.Book,
        backends: Backends,
        rubric: Rubric,
        spec: str,
        settings: BatchSettings,
        on_event: EventHook | None,
    ) -> None:
        self.book = book
        self.state = book.state
        self.store = book.store
        self.backends = backends
        self.impl = backends.default
        self.screener = backends.seat(settings.screen)
        self.fixer = backends.seat(settings.fixer)
        self.rubric = rubric
        self.spec = spec
        self.settings = settings
        self.on_event = on_event
        self.tokens = Tokens(**self.state.tokens)
        self.reserved = 0.0
        # What jobs cost so far (a resumed batch starts from what it knows).
        self.costs: dict[str, list[float]] = {
            "item": [o.cost_usd for o in book.outcomes() if o.cost_usd is not None],
            "screen": [
                e.cost_usd + ((e.fix.cost_usd if e.fix is not None else None) or 0.0)
                for w in book.waves
                for by_item in w.screens.values()
                for e in by_item.values()
                if e.cost_usd is not None
            ],
        }
        self.probes: dict[str, asyncio.Event] = {}
        self.stop_reason: str | None = None
        self.warnings: list[str] = []

    @property
    def batch_id(self) -> str:
        return self.book.batch_id

    def emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            with contextlib.suppress(Exception):  # a broken progress bar must not break the batch
                self.on_event(kind, data)

    def save(self) -> None:
        self.state.tokens = {k: v for k, v in self.tokens.to_json().items() if k != "total"}
        self.book.save()

    def spend(self, tokens: Tokens, cost: float | None) -> None:
        self.tokens = self.tokens + tokens
        if cost is None or self.state.cost_usd is None:
            self.state.cost_usd = None
        else:
            self.state.cost_usd = round(self.state.cost_usd + cost, 8)

    async def run(self) -> BatchResult:
        concluded = self.book.concluded()
        if concluded is not None:  # interrupted between a decision and the verdict
            return self.finish(concluded)
        while True:
            wave = self.book.current() or self.book.draw()
            self.emit(
                "wave_start",
                number=wave.number,
                n=len(wave.items),
                statement=wave.plan.statement,
                done=len(wave.outcomes),
            )
            await self.verify_wave(wave)
            decision = self.book.decide(wave)
            if decision.step == "screen" and not self.stop_reason:
                await self.screen(wave, decision.criteria)
                if not self.stop_reason:
                    wave.screened = True
                    decision = self.book.decide(wave)
            if self.stop_reason:
                decision = batch_rules.Decision("escalate", reasons=(self.stop_reason,))
            self.save()
            self.book.conclude(wave, decision)
            self.emit("decision", wave=wave.number, **decision.to_json())
            if decision.step != "resample":
                return self.finish(decision)

    # -- verifying items ----------------------------------------------------------

    # The budget: a job (an item's loop, a screen) starts only when the money
    # left, minus what the jobs in flight are expected to cost, pays for it.
    # The first job of each kind runs alone, to learn what one costs.

    async def admit(self, kind: str) -> float | None:
        """Reserve the expected cost of one job; None when the budget cannot pay."""
        limit = self.settings.max_cost_usd
        if limit is None:
            return 0.0
        mine: asyncio.Event | None = None
        while not self.costs[kind] and not self.stop_reason:
            probe = self.probes.get(kind)
            if probe is None or probe.is_set():
                # This job is the probe (again, if an earlier one learned nothing).
                mine = self.probes[kind] = asyncio.Event()
                break
            await probe.wait()
        estimate = self.estimate(kind)
        if not self.stop_reason:
            self.stop_reason = budget.admission(
                spent_usd=self.state.cost_usd,
                reserved_usd=self.reserved,
                estimate_usd=estimate,
                budget_usd=limit,
                what="items" if kind == "item" else "screens",
            )
        if self.stop_reason:
            if mine is not None:
                mine.set()  # never leave the others waiting on a probe that will not run
            return None
        self.reserved += estimate
        return estimate

    def estimate(self, kind: str) -> float:
        """What the next job may cost (core/budget.py): an item that fails costs
        up to max_fixes more rounds (and fixes) than the ones seen so far."""
        rounds = 1 + self.settings.max_fixes if kind == "item" else 1
        return budget.estimate(self.costs[kind], rounds=rounds)

    def settle(self, kind: str, estimate: float, cost: float | None) -> None:
        """Release a job's reservation and learn from what it cost."""
        self.reserved -= estimate
        if cost:  # a job that cost nothing (refused) teaches nothing about the next
            self.costs[kind].append(cost)
        probe = self.probes.get(kind)
        if probe is not None:
            probe.set()

    def left_for(self, estimate: float) -> float | None:
        """What one admitted job may spend (its loop stops before a fix it cannot pay)."""
        limit = self.settings.max_cost_usd
        if limit is None:
            return None
        return budget.allowance(
            spent_usd=self.state.cost_usd,
            reserved_usd=self.reserved,
            estimate_usd=estimate,
            budget_usd=limit,
        )

    async def gather(self, jobs: Sequence[Any]) -> None:
        """Run jobs under the concurrency limit; the first BackendError wins."""
        limit = asyncio.Semaphore(self.settings.concurrency or max(1, len(jobs)))

        async def limited(job: Any) -> None:
            async with limit:
                await job()

        try:
            async with asyncio.TaskGroup() as group:
                for job in jobs:
                    group.create_task(limited(job))
        except BaseExceptionGroup as group:
            raise first_error(group) from None

    async def verify_wave(self, wave: Wave) -> None:
        todo = [i for i in wave.items if i not in wave.outcomes]
        await self.gather([self._item_job(wave, item) for item in todo])

    def _item_job(self, wave: Wave, item: str) -> Callable[[], Any]:
        async def job() -> None:
            ended = wave.running.get(item)
            status = load_state(ended).status if ended else None
            if ended and status != "open":
                # Paid for already (before an interruption): count it, whatever the budget.
                paid = self._record(
                    wave,
                    item,
                    self.store.text(item),
                    ended,
                    Tokens(),
                    status == "shipped",
                )
                self.settle("item", 0.0, paid)
                return
            estimate = await self.admit("item")
            if estimate is None:
                wave.skipped.append(item)
                self.emit("item_skipped", item=item, reason=self.stop_reason)
                return
            cost: float | None = None
            try:
                cost = await self._verify_item(wave, item, self.left_for(estimate))
            finally:
                self.settle("item", estimate, cost)

        return job

    async def _verify_item(self, wave: Wave, item: str, left: float | None) -> float | None:
        text = self.store.text(item)
        resume_run = wave.running.get(item)

        def seen(kind: str, data: dict[str, Any]) -> None:
            if kind == "run_start":
                wave.running[item] = data["run_id"]
                self.save()

        self.emit("item_start", item=item)
        try:
            result = await self._verify(item, text, resume_run, left, seen)
        except StartError as exc:
            # The batch exists (a login that expired mid-batch): it stops,
            # resumable, unlike a batch whose backend could not start at all.
            raise BackendError(str(exc)) from None
        except BackendError as exc:
            run_id = wave.running.get(item)
            if exc.transient or run_id is None:
                raise  # the batch stops, resumable; the run stays open
            # A call that fails the same way every time: its run was escalated,
            # and the batch goes on without paying for it again.
            self.warnings.append(f"item {item}: {exc}")
            return self._record(wave, item, text, run_id, Tokens(), False)
        except RefusedError as exc:
            # This item cannot be verified (e.g. it is empty); the batch goes on
            # and cannot be accepted with it (an escalated item never is).
            outcome = batch_rules.ItemOutcome(
                item=item, run_id=None, status="escalated", reason=str(exc)
            )
            wave.outcomes[item] = outcome
            self.save()
            batches.event(self.batch_id, "item", wave=wave.number, **outcome.to_json())
            self.emit("item_done", **outcome.to_json())
            return 0.0
        return self._record(
            wave, item, text, result.run_id, result.tokens, result.verdict == "NICE"
        )

    def change(self, item: str, before: str, after: str, **why: Any) -> str:
        """Store an item's new text and log the change; returns where it is."""
        where = self.store.write(item, after)
        batches.event(
            self.batch_id,
            "fix",
            item=item,
            before_sha256=_digest(before),
            after_sha256=_digest(after),
            path=where,
            **why,
        )
        return where

    def _record(
        self,
        wave: Wave,
        item: str,
        text: str,
        run_id: str,
        tokens: Tokens,
        shipped: bool,
    ) -> float | None:
        """Save a finished run as the item's outcome, and its fixed output.

        From the run's state and log, not from this process's view of it: a
        resumed run's first round (and its cost) happened in another process.
        """
        outcome = batches.outcome_of_run(item, run_id)
        self.spend(tokens, outcome.cost_usd)
        path = load_state(run_id).target.path
        assert path is not None  # an item's run reviews a file (its text, copied)
        output = read_exact(path)
        if shipped and output != text:
            self.change(item, text, output, via="run", run_id=run_id)
        wave.outcomes[item] = outcome
        wave.running.pop(item, None)
        self.save()
        batches.event(self.batch_id, "item", wave=wave.number, **outcome.to_json())
        self.emit("item_done", **outcome.to_json())
        return outcome.cost_usd

    async def _verify(
        self, item: str, text: str, resume_run: str | None, left: float | None, seen: Any
    ) -> Any:
        return await verify(
            self.spec,
            text,
            options=VerifyOptions(
                rubric=self.rubric,
                reviewers=self.settings.reviewers,
                models=self.settings.models,
                backend=self.impl,
                backends=self.backends.lent(),
                prices=self.settings.prices,
                max_fixes=self.settings.max_fixes,
                budget_usd=left,
                timeout=self.settings.timeout,
                log=self.settings.log,
                on_event=seen,
                project_dir=self.settings.project_dir,
                resume_run=resume_run,
                close_backend=False,
                resumable=True,
            ),
        )

    # -- screening ----------------------------------------------------------------

    async def screen(self, wave: Wave, criteria: Sequence[str]) -> None:
        from santa_method.core.rubric import render_markdown

        candidates = self.book.unverified()
        for criterion in criteria:
            chosen = next(c for c in self.rubric.criteria if c.id == criterion)
            narrow = Rubric(name=f"{self.rubric.name}:{criterion}", criteria=(chosen,))
            screens = wave.screens.setdefault(criterion, {})
            todo = [i for i in candidates if i not in screens]
            self.emit("screen_start", criterion=criterion, items=len(candidates), done=len(screens))
            markdown = render_markdown(narrow)
            jobs = [self._screen_job(wave, narrow, markdown, criterion, i) for i in todo]
            await self.gather(jobs)
            if self.stop_reason:
                return

    def _boundary(self, criterion: str, text: str) -> str:
        """Derived, not drawn: a resumed screen must send the same request."""
        for attempt in range(100):
            token = "SANTA-" + _digest(self.batch_id, criterion, str(attempt))[:16].upper()
            if token not in text and token not in self.spec:
                return token
        raise InputError("cannot find a fence marker absent from the item")  # pragma: no cover

    def _screen_job(
        self, wave: Wave, narrow: Rubric, markdown: str, criterion: str, item: str
    ) -> Callable[[], Any]:
        async def job() -> None:
            estimate = await self.admit("screen")
            if estimate is None:
                return
            cost: float | None = None
            try:
                cost = await self._screen_one(wave, narrow, markdown, criterion, item)
            except BackendError as exc:
                if exc.transient:
                    raise
                entry = ScreenRecord(
                    result="unusable", fixed=False, cost_usd=None, errors=[str(exc)]
                )
                wave.screens[criterion][item] = entry
                self.save()
                batches.event(
                    self.batch_id, "screen", item=item, criterion=criterion, **entry.to_json()
                )
            finally:
                self.settle("screen", estimate, cost)

        return job

    async def _screen_one(
        self, wave: Wave, narrow: Rubric, markdown: str, criterion: str, item: str
    ) -> float | None:
        """One screen (and its fix when flagged); returns what it cost."""
        text = self.store.text(item)
        boundary = self._boundary(criterion, text)
        canary = _digest(self.batch_id, str(wave.number), item, criterion, "canary")[:24]
        result, record = await review_once(
            self.screener,
            narrow,
            prefix=assignments.reviewer_prefix(markdown, self.spec, boundary),
            round_part=assignments.screening_round_part(
                batch_id=self.batch_id,
                criterion=criterion,
                output=text,
                boundary=boundary,
                canary=canary,
            ),
            output=text,
            canary=canary,
            timeout=self.settings.timeout,
            project_dir=self.settings.project_dir,
        )
        self.spend(record.tokens, record.cost_usd)
        entry = ScreenRecord(result="clean", fixed=False, cost_usd=record.cost_usd)
        if not result.valid or result.review is None:
            entry.result, entry.errors = "unusable", list(result.errors)[:5]
        elif result.verdict != "PASS":
            entry.result = "flagged"
            entry.fix = await self._fix(wave, item, criterion, text, result.review, boundary)
            entry.fixed = entry.fix.path is not None
        wave.screens[criterion][item] = entry
        self.save()
        batches.event(self.batch_id, "screen", item=item, criterion=criterion, **entry.to_json())
        self.emit("screened", item=item, criterion=criterion, **entry.to_json())
        costs = [entry.cost_usd, entry.fix.cost_usd if entry.fix is not None else 0.0]
        return None if None in costs else sum(c or 0.0 for c in costs)

    async def _fix(
        self, wave: Wave, item: str, criterion: str, text: str, review: Any, boundary: str
    ) -> ScreenFix:
        """The fixer's change of a flagged item (`path` set only when it changed it)."""
        flags = merge_flags(flags_of("screen", review), text)
        assignment = assignments.fixer_assignment(
            run_id=f"batch {self.batch_id}",
            round_number=wave.number,
            target=json.dumps(item, ensure_ascii=False),
            output=text,
            flags=flags,
            boundary=boundary,
            spec=self.spec,
        )
        scratch = self.store.folder / "work" / f"fix-{_digest(item, criterion)[:12]}.txt"
        replace_text(scratch, text)
        request = FixRequest(
            assignment=assignment,
            target_path=str(scratch),
            output=text,
            model=self.fixer.model,
            timeout=self.settings.timeout,
            project_dir=self.settings.project_dir,
        )
        try:
            async with asyncio.timeout(self.settings.timeout):  # None: no limit
                reply = await ask_fix(self.fixer.backend, request)
        except TimeoutError:
            raise BackendError(
                f"the screen's fixer timed out after {self.settings.timeout:g}s"
            ) from None
        self.spend(reply.tokens, reply.cost_usd)
        new = reply.output if reply.output is not None else read_exact(scratch)
        scratch.unlink(missing_ok=True)
        # Whitespace alone is no fix (it must not earn the batch a fresh sample).
        changed = " ".join(new.split()) != " ".join(text.split()) and bool(new.strip())
        fix = ScreenFix(cost_usd=reply.cost_usd, flags=len(flags), notes=reply.notes[:2000])
        if changed:
            fix.path = self.change(
                item, text, new, via="screen", criterion=criterion, notes=reply.notes[:2000]
            )
        return fix

    # -- the verdict ----------------------------------------------------------------

    def finish(self, decision: batch_rules.Decision) -> BatchResult:
        over = budget.overspent(self.state.cost_usd, self.settings.max_cost_usd)
        if decision.step == "accept" and over is not None:
            decision = batch_rules.Decision("escalate", reasons=(over,))
        self.save()
        data = self.book.finish(decision, tokens=self.tokens.to_json(), warnings=self.warnings)
        self.emit("batch_done", verdict=data["verdict"], report=data["report"])
        return BatchResult(data)
