"""The headless batch (Pattern C): sample, verify, find systemic patterns,
screen and fix them, re-sample, and state what the result guarantees.

Why it is built from the pieces it is: each sampled item is verified by
`verify()`, the same loop and run state as `santa run`, so an item can
neither skip a step nor ship without a NICE gate; the batch's own rules
(what failed, what is systemic, what comes next) are the pure functions of
core/batch_rules.py, shared with `santa batch plan/record` inside Claude Code;
everything decided is saved in the batch's state before it is acted on, so
`resume` continues an interrupted batch (and, with `anthropic-batch`, the
same Message Batch) without paying twice.

This module checks the arguments, opens (or resumes) the batch and its
first draw, and hands it to `batch_run.BatchRun`, which verifies, screens
and keeps the budget; screens are described there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import Collection, Coroutine, Sequence
from pathlib import Path
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import BackendError, InputError, StartError
from santa_method.core.reviewers import Reviewer, parse_entry, reviewer_slots
from santa_method.core.types import Rubric
from santa_method.headless import options as options_
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import (
    Backend,
    require_prerequisites,
)
from santa_method.headless.batch_run import BatchRun, BatchSettings
from santa_method.headless.options import BatchOptions, EventHook
from santa_method.headless.results import BatchResult
from santa_method.headless.routing import Backends, resolve_backend
from santa_method.state import batches
from santa_method.state.batches import BatchItem, ItemStore
from santa_method.state.model.batch import BatchOptionsRecord, BatchState

__all__ = ["BatchItem", "BatchOptions", "BatchResult", "verify_batch", "verify_batch_sync"]

CONCURRENCY = {"anthropic": 4, "claude": 2}
"""Items verified at once per backend; anthropic-batch verifies a whole
wave at once so that each round's reviews travel in one Message Batch."""


def _check_items(
    items: Sequence[BatchItem | os.PathLike[str]], skip: Collection[str] = ()
) -> list[BatchItem]:
    """Items as BatchItems, every one that will be verified readable now
    (a binary file found half-way through a batch would strand it)."""
    found: list[BatchItem] = []
    for item in items:
        if isinstance(item, BatchItem):
            found.append(item)
        elif isinstance(item, os.PathLike):
            found.append(BatchItem(id=str(item), path=str(item)))
        else:
            raise InputError("batch items are BatchItem values or file paths (pathlib.Path)")
    if not found:
        raise InputError("the batch is empty: give at least one item")
    ids = [i.id for i in found]
    if len(set(ids)) != len(ids):
        raise InputError("item ids must be unique")
    for item in found:
        if item.path is None and item.text is None:
            raise InputError(f"item '{item.id}' has neither a file nor a text")
        if item.id not in skip:
            batches.check_readable(item)
    return found


#: Options only the Message Batches backend takes; its prerequisites are the Messages API's.
_BATCH_ONLY_OPTIONS = frozenset({"state_path", "poll_interval", "gather_window", "on_progress"})


async def _require_backend(
    backend: str | Backend,
    name: str,
    options: dict[str, Any],
    others: list[Reviewer],
    given: Any,
) -> None:
    """Before the batch exists, every backend it calls must be able to start
    (no key, no package, no login: every missing one named), so a setup
    problem leaves no batch and no run behind. `others`: the reviewers,
    screens and fixer whose entries name a backend of their own."""
    if not isinstance(backend, str):
        await require_prerequisites(backend)
    else:
        base = "anthropic" if backend == "anthropic-batch" else backend
        try:
            probe = resolve_backend(
                base, **{k: v for k, v in options.items() if k not in _BATCH_ONLY_OPTIONS}
            )
        except StartError:
            raise
        except BackendError as exc:
            raise StartError(str(exc)) from None
        await require_prerequisites(probe, name)
    routed = Backends(name, given=given)  # its default (asked above) is never made
    await routed.require_all([routed.seat(r) for r in others if r.backend not in (None, name)])


def verify_batch(
    items: Sequence[BatchItem | os.PathLike[str]],
    spec: str,
    options: BatchOptions | None = None,
) -> Coroutine[Any, Any, BatchResult]:
    """Verify a batch by sampling; see the module docstring and core/batch_rules.py.

    Raises InputError for bad arguments (exit 2) and BackendError when the
    backend fails after retries (exit 3; the batch stays open and
    `resume=True` continues it). An interruption also leaves it resumable.

    The settings are one `BatchOptions` (`options=`).
    """
    return _verify_batch(items, spec, options_.resolve(BatchOptions, options, "verify_batch"))


async def _verify_batch(
    items: Sequence[BatchItem | os.PathLike[str]], spec: str, opts: BatchOptions
) -> BatchResult:
    rubric = opts.rubric
    reviewers = opts.reviewers
    models = opts.models
    backend = opts.backend
    backend_options = opts.backend_options
    rate = opts.rate
    minimum = opts.minimum
    prevalence = opts.prevalence
    confidence = opts.confidence
    stratified = opts.stratified
    seed = opts.seed
    exclude = opts.exclude
    max_fixes = opts.max_fixes
    max_resamples = opts.max_resamples
    max_cost_usd = opts.budget_usd
    timeout = opts.timeout
    in_place = opts.in_place
    resume = opts.resume
    log = opts.log
    field_name = opts.field_name
    systemic_min = opts.systemic_min
    systemic_share = opts.systemic_share
    screen_model = opts.screen_model
    concurrency = opts.concurrency
    on_event = opts.on_event
    project_dir = opts.project_dir
    from santa_method.core.rubric import load_rubric
    from santa_method.state.paths import project_root, project_rubrics_dir

    checked = _check_items(items, skip=set(exclude))
    max_resamples = numbers.RESAMPLES.check(max_resamples, "max_resamples")
    # One failing item is not a pattern: SYSTEMIC_MIN starts at 2.
    systemic_min = numbers.SYSTEMIC_MIN.check(systemic_min, "systemic_min")
    if reviewers is not None:
        numbers.REVIEWERS.check(reviewers, "reviewers")
    # The one rule for the models list (`core/reviewers.py`): names santa
    # cannot route and a count that disagrees are refused before anything.
    slots = reviewer_slots(models, reviewers)
    reviewers = len(slots)
    first = slots[0].entry if models else None
    screen_entry = screen_model if screen_model is not None else first
    screen = Reviewer("screen", *(parse_entry(screen_entry) if screen_entry else (None, None)))
    fixer = Reviewer("fixer", slots[0].backend, slots[0].model)
    custom = prices.custom_prices(opts.prices)
    max_fixes = numbers.MAX_FIXES.check(max_fixes, "max_fixes")
    for name, value, allowed in (
        ("budget_usd", max_cost_usd, numbers.BUDGET_USD),
        ("systemic_share", systemic_share, numbers.SHARE),
        ("concurrency", concurrency, numbers.CONCURRENCY),
        ("timeout", timeout, numbers.TIMEOUT_S),
    ):
        if value is not None:
            allowed.check(value, name)
    name = backend if isinstance(backend, str) else getattr(backend, "name", "custom")
    if max_cost_usd is not None:
        prices.require_prices(
            [(r.on(name).backend, r.model) for r in (*slots, screen, fixer)], custom
        )
    if in_place and any(i.path is None for i in checked):
        raise InputError(
            "--in-place edits files; JSONL items get their fixes in the batch's fixed.jsonl"
        )
    resolved = (
        rubric
        if isinstance(rubric, Rubric)
        else load_rubric(rubric, search_dirs=(project_rubrics_dir(),))
    )
    assert resolved is not None
    options = BatchOptionsRecord(
        rate=rate,
        minimum=minimum,
        prevalence=prevalence,
        confidence=confidence,
        stratified=stratified,
        exclude=sorted(exclude),
        max_resamples=max_resamples,
        rubric=resolved.to_json(),
        field=field_name,
        systemic_min=systemic_min,
        systemic_share=systemic_share,
        in_place=in_place,
        max_fixes=max_fixes,
        reviewers=reviewers,
        models=list(models) if models else None,
        backend=name,
        max_cost_usd=max_cost_usd,
        seed=seed,
    )
    await _require_backend(
        backend, name, backend_options or {}, [*slots, screen, fixer], opts.backends
    )
    fingerprint = batches.fingerprint(checked, spec, options)
    warnings: list[str] = []
    with contextlib.ExitStack() as held:
        # One process drives a batch: the lock is taken before its state is
        # read (resume) or right after it is written (new), and nothing is
        # saved by a process that did not get it.
        if resume:
            batch_id = resume if isinstance(resume, str) else batches.find_resumable(fingerprint)
            if batch_id is None:
                raise InputError(
                    "there is no unfinished batch with these items, spec and options to "
                    "resume; run again without --resume"
                )
            held.enter_context(batches.held(batch_id))
            state = batches.load(batch_id)
            if state.fingerprint != fingerprint:
                raise InputError(
                    f"batch {batch_id} was started with other items, spec or options; "
                    "resume it with exactly the same arguments"
                )
            if state.status != "open":
                raise InputError(f"batch {batch_id} is already finished ({state.status})")
        else:
            earlier = batches.find_resumable(fingerprint)
            if earlier:
                warnings.append(
                    f"an unfinished batch {earlier} had the same inputs; --resume continues one"
                )
            state = batches.open_batch(
                items=checked,
                spec=spec,
                options=options,
                seed=seed if seed is not None else random.SystemRandom().randrange(2**31),
                mode="headless",
                fingerprint_=fingerprint,
            )
            held.enter_context(batches.held(state.id))
            batches.first_draw(state, ItemStore(state, checked, field_name))
        return await _drive_batch(
            state,
            checked,
            spec,
            resolved,
            backend,
            name,
            BatchSettings(
                max_fixes=max_fixes,
                max_cost_usd=max_cost_usd,
                reviewers=reviewers,
                models=list(models) if models else None,
                fixer=fixer,
                screen=screen,
                prices=custom,
                timeout=timeout,
                log=log,
                project_dir=str(Path(project_dir).resolve())
                if project_dir
                else str(project_root()),
                concurrency=concurrency
                if concurrency is not None
                else (None if name == "anthropic-batch" else CONCURRENCY.get(name, 4)),
            ),
            backend_options or {},
            opts.backends,
            field_name,
            bool(resume),
            warnings,
            on_event,
        )


async def _drive_batch(
    state: BatchState,
    checked: list[BatchItem],
    spec: str,
    resolved: Rubric,
    backend: str | Backend,
    name: str,
    settings: BatchSettings,
    backend_options: dict[str, Any],
    given: Any,
    field_name: str,
    resumed: bool,
    warnings: list[str],
    on_event: EventHook | None,
) -> BatchResult:
    folder = batches.batch_dir(state.id)
    owned = isinstance(backend, str)
    if backend == "anthropic-batch":
        from santa_method.headless.backends.anthropic_batch import AnthropicBatchBackend

        impl: Backend = AnthropicBatchBackend(
            **_priced(backend, settings.prices),
            state_path=folder / "message-batches.json",
            on_progress=(lambda data: on_event("message_batch", data)) if on_event else None,
            **backend_options,
        )
    else:
        impl = resolve_backend(backend, **_priced(backend, settings.prices), **backend_options)
    # One instance per backend the batch calls, shared by all its items.
    held = Backends(impl, given=given, prices=settings.prices)
    for r in (*reviewer_slots(settings.models, settings.reviewers), settings.screen, settings.fixer):
        held.get(r.backend)
    book = batches.Book(state, ItemStore(state, checked, field_name))
    runner = BatchRun(book, held, resolved, spec, settings, on_event)
    runner.warnings.extend(warnings)
    runner.emit(
        "batch_start",
        batch_id=state.id,
        population=book.population(),
        resumed=resumed,
        backend=name,
    )
    try:
        return await runner.run()
    finally:
        runner.save()
        await held.aclose(default=owned)


def _priced(backend: str | Backend, custom: prices.Overrides) -> dict[str, Any]:
    """The project's prices for a backend santa makes and counts the cost of."""
    counted = isinstance(backend, str) and backend in prices.PRICED_BACKENDS
    return {"prices": custom} if counted and custom else {}


def verify_batch_sync(
    items: Sequence[BatchItem | os.PathLike[str]],
    spec: str,
    options: BatchOptions | None = None,
) -> BatchResult:
    """`verify_batch` for synchronous callers (not from inside a running event loop)."""
    resolved = options_.resolve(BatchOptions, options, "verify_batch_sync")
    return asyncio.run(_verify_batch(items, spec, resolved))
