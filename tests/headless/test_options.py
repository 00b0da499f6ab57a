"""VerifyOptions and BatchOptions: one options object per call is the API;
settings as keyword arguments, and the old name `max_cost_usd`, are refused
as Python refuses any unknown keyword."""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pytest

from santa_method.core.errors import InputError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions, verify
from santa_method.headless.batch import BatchOptions, verify_batch, verify_batch_sync

from .scripted import Scripted

SPEC = "The README names the current year."


def test_options_run_the_loop_without_a_warning(project: Path, target: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), max_fixes=0))
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert result.verdict == "NAUGHTY"  # max_fixes=0 was applied: a check, no fix tried
    assert result.outcome == "reported"
    assert result.rounds == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda t: verify_sync(SPEC, t, backend=Scripted(), max_fixes=0),
        lambda t: verify(SPEC, t, backend=Scripted()),
        lambda t: verify_batch_sync([t], SPEC, max_resamples=1),
        lambda t: verify_batch([t], SPEC, max_resamples=1),
    ],
    ids=["verify_sync", "verify", "verify_batch_sync", "verify_batch"],
)
def test_settings_as_keywords_are_refused(call: Any, project: Path, target: Path) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        call(target)


def test_unknown_keywords_and_wrong_options_are_type_errors() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'reviewer'"):
        verify_sync(SPEC, "text", reviewer=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'rounds'"):
        verify_batch_sync([], SPEC, rounds=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"options=VerifyOptions\(\.\.\.\), not BatchOptions"):
        verify_sync(SPEC, "text", options=BatchOptions())  # type: ignore[arg-type]


def test_every_old_keyword_is_an_option_with_its_old_default() -> None:
    run = {f.name: f.default for f in dataclasses.fields(VerifyOptions)}
    # reviewers: None is 2 without models, else one per entry (core/reviewers.py).
    assert run["rubric"] == "base" and run["reviewers"] is None and run["max_fixes"] == 3
    assert run["backend"] == "anthropic" and run["close_backend"] is True
    assert run["budget_usd"] is None and run["in_place"] is False
    batch = {f.name: f.default for f in dataclasses.fields(BatchOptions)}
    assert batch["max_resamples"] == 2 and batch["field_name"] == "output"
    assert batch["exclude"] == () and batch["resume"] is False
    assert run["record"] is None  # new: no keyword of earlier releases
    assert run["backends"] is None and run["prices"] is None  # new too
    assert run["author_model"] is None
    # With record, backends, prices and author_model, new since the keyword calls.
    assert len(run) == 22 and len(batch) == 28


def test_batch_options_reach_the_batch(project: Path, target: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="max_resamples"):
            verify_batch_sync([target], SPEC, options=BatchOptions(max_resamples=-1))
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)]
    with pytest.raises(InputError, match="max_resamples"):
        asyncio.run(verify_batch([target], SPEC, options=BatchOptions(max_resamples=-1)))


@pytest.mark.parametrize("kind", [VerifyOptions, BatchOptions])
def test_max_cost_usd_is_gone_and_budget_usd_is_the_name(kind: type) -> None:
    with pytest.raises(TypeError, match="max_cost_usd"):
        kind(max_cost_usd=0.5)
    assert kind(budget_usd=0.5).budget_usd == 0.5


def test_the_budget_reaches_the_loop(project: Path, target: Path) -> None:
    # A budget too small for a reply of unknown cost: the run cannot price it and stops.
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), budget_usd=0.01))
    assert result.verdict == "ESCALATED" and "budget of $0.01" in result.reasons[0]
