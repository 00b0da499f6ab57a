"""Resuming an interrupted headless run (`santa run --resume RUN`).

Why it reads everything from the run: a resumed run must be the run that
was interrupted (same target, spec, rubric, reviewers, cap, pre-check and
budget), or its earlier rounds would count toward a different question.
Only how to reach the models (backend, timeout, cache warming) is the
caller's. The loop then continues where the run stopped (its open round,
its pending fix, or the round its last gate asked for), as a batch's runs
resume.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from santa_method.core import budget
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.files import read_exact
from santa_method.headless.backends.base import Backend
from santa_method.headless.loop import verify
from santa_method.headless.options import EventHook, VerifyOptions
from santa_method.headless.results import VerifyResult
from santa_method.state import locks
from santa_method.state import log as runlog
from santa_method.state.log import logged_cost
from santa_method.state.model.run import RunState
from santa_method.state.paths import santa_dir
from santa_method.state.rounds import describe
from santa_method.state.store import load_state, run_dir, runs_dir
from santa_method.state.target import target_name


def _resumable(run_id: str) -> RunState:
    """The run's state, or the sentence that says why it cannot be resumed."""
    try:
        known = (run_dir(run_id) / "state.json").exists()
    except InputError:  # not a run id
        known = False
    if not known:
        raise InputError(
            f"run {run_id} has no state to resume from (no folder under {runs_dir()}); "
            f"close it with 'santa log escalate --run {run_id}'"
        )
    # A state this version cannot read is refused naming its key.
    state = load_state(run_id)
    if state.status != "open":
        raise RefusedError(f"run {run_id} is {state.status}; only an open run resumes")
    if state.target.kind == "diff":
        raise InputError(
            f"run {run_id} reviewed a change ({target_name(state.target)}), which is "
            "recomputed from the checkout: review it again with 'santa run --against-diff "
            f"{state.target.rev}' instead of resuming"
        )
    driver = locks.driven_elsewhere(run_id)
    if driver is not None:
        raise InputError(f"run {run_id} is being driven by another process ({driver}) right now")
    if state.source != "api":
        step = describe(run_id)["next_step"]
        raise InputError(
            f"run {run_id} is driven step by step (source {state.source}), not by santa run"
            + (f"; its next step is '{step}'" if step else "")
        )
    return state


def _budget_left(state: RunState) -> float | None:
    allowed = state.budget_usd
    if allowed is None:
        return None
    spent = logged_cost(runlog.read(state.log).records, state.id) or 0.0
    if budget.spent(spent, allowed) is not None:
        raise RefusedError(
            f"run {state.id} has spent ${spent:.4f} of its ${allowed:.2f} budget; close it "
            f"with 'santa log escalate --run {state.id}'"
        )
    return budget.left(spent, allowed)


async def resume(
    run_id: str,
    *,
    backend: str | Backend = "anthropic",
    timeout: float | None = None,
    cache_warm: bool = False,
    on_event: EventHook | None = None,
    prices: Mapping[str, Any] | None = None,
) -> VerifyResult:
    """Continue the interrupted headless run `run_id` to NICE or escalated
    (`prices` as `VerifyOptions.prices`: the project's, which keep its budget).

    Refused (InputError) while another process drives it, and for runs that
    are closed or driven step by step.
    """
    from santa_method.core.rubric import rubric_from_json

    state = _resumable(run_id)
    folder = run_dir(run_id)
    rubric = rubric_from_json(json.loads((folder / "rubric.json").read_text(encoding="utf-8")))
    target = Path(str(state.target.path))
    in_place = state.in_place
    if in_place is None:  # a run started before the state said so
        in_place = not target.resolve().is_relative_to((santa_dir() / "work").resolve())
    return await verify(
        read_exact(folder / "spec.md"),
        target,
        options=VerifyOptions(
            rubric=rubric,
            reviewers=state.reviewers,
            models=state.models,
            backend=backend,
            prices=prices,
            max_fixes=state.max_fixes,
            budget_usd=_budget_left(state),
            timeout=timeout,
            cache_warm=cache_warm,
            pre_check=state.pre_check,
            in_place=in_place,
            on_event=on_event,
            project_dir=state.cwd,
            resume_run=run_id,
            author_model=state.author_model,
        ),
    )


def resume_sync(run_id: str, **kwargs: Any) -> VerifyResult:
    """`resume` for synchronous callers (not from inside a running event loop)."""
    return asyncio.run(resume(run_id, **kwargs))
