"""VerifyOptions and BatchOptions: one options object per call, and the
keyword calls of earlier releases still working, with a DeprecationWarning
that points at the caller."""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from pathlib import Path

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


def test_keyword_calls_still_work_and_warn_at_the_caller(project: Path, target: Path) -> None:
    with pytest.warns(
        DeprecationWarning, match=r"options=VerifyOptions\(backend=\.\.\., max_fixes=\.\.\.\)"
    ) as caught:
        result = verify_sync(SPEC, target, backend=Scripted(), max_fixes=0)
    assert caught[0].filename == __file__
    assert result.verdict == "NAUGHTY" and result.rounds == 1
    # The async form warns where it is called, not where it is awaited.
    with pytest.warns(DeprecationWarning) as caught:
        pending = verify(SPEC, target, backend=Scripted())
    assert caught[0].filename == __file__
    assert asyncio.run(pending).verdict == "NICE"


def test_keywords_override_the_options_they_come_with(project: Path, target: Path) -> None:
    base = VerifyOptions(backend=Scripted(), max_fixes=3)
    with pytest.warns(DeprecationWarning):
        result = verify_sync(SPEC, target, options=base, max_fixes=0)
    assert result.verdict == "NAUGHTY" and result.rounds == 1
    assert base.max_fixes == 3  # the caller's options are never changed


def test_unknown_keywords_and_wrong_options_are_type_errors() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'reviewer'"):
        verify_sync(SPEC, "text", reviewer=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'rounds'"):
        verify_batch_sync([], SPEC, rounds=2)
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
    # With max_cost_usd, budget_usd's old name, record, backends, prices and author_model.
    assert len(run) == 23 and len(batch) == 29


def test_batch_options_reach_the_batch(project: Path, target: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="max_resamples"):
            verify_batch_sync([target], SPEC, options=BatchOptions(max_resamples=-1))
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)]
    with (
        pytest.warns(DeprecationWarning) as caught,
        pytest.raises(InputError, match="max_resamples"),
    ):
        verify_batch_sync([target], SPEC, max_resamples=-1)
    assert caught[0].filename == __file__
    with pytest.warns(DeprecationWarning) as caught:
        pending = verify_batch([target], SPEC, max_resamples=-1)
    assert caught[0].filename == __file__
    with pytest.raises(InputError, match="max_resamples"):
        asyncio.run(pending)


@pytest.mark.parametrize("kind", [VerifyOptions, BatchOptions])
def test_max_cost_usd_is_the_old_name_of_budget_usd(kind: type) -> None:
    with pytest.warns(DeprecationWarning, match="it is budget_usd now") as caught:
        options = kind(max_cost_usd=0.5)
    assert caught[0].filename == __file__
    assert options.budget_usd == 0.5 and options.max_cost_usd is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # carried on by replace, the old name is gone
        changed = dataclasses.replace(options, timeout=10.0)
        assert changed.budget_usd == 0.5
        assert dataclasses.replace(options, budget_usd=1.0).budget_usd == 1.0
    with pytest.raises(TypeError, match="max_cost_usd is its old name"):
        kind(budget_usd=1.0, max_cost_usd=0.5)


def test_the_old_budget_name_reaches_the_loop(project: Path, target: Path) -> None:
    # A budget too small for a reply of unknown cost: the run cannot price it
    # and stops, under either name.
    with pytest.warns(DeprecationWarning):
        old = verify_sync(
            SPEC, target, options=VerifyOptions(backend=Scripted(), max_cost_usd=0.01)
        )
    new = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), budget_usd=0.01))
    assert (old.verdict, old.reasons) == (new.verdict, new.reasons)
    assert old.verdict == "ESCALATED" and "budget of $0.01" in old.reasons[0]
