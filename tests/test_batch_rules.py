"""The batch rules (core/batch_rules.py): what failed, what is systemic, what comes next."""

from __future__ import annotations

import pytest

from santa_method.core.batch_rules import (
    ItemOutcome,
    cost_relative_to_all,
    decide,
    failures_by_criterion,
    systemic_criteria,
)


def item(name: str, *criteria: str, status: str = "passed", rounds: int = 1, cost=0.01):
    if criteria and status == "passed":
        status = "fixed"
    return ItemOutcome(name, f"run-{name}", status, tuple(criteria), rounds, cost)


WAVE = [item("a", "completeness"), item("b", "completeness", "compliance"), item("c")]


def test_failures_are_grouped_by_criterion_in_first_seen_order():
    assert failures_by_criterion(WAVE) == {"completeness": ["a", "b"], "compliance": ["b"]}


def test_an_item_that_never_got_a_verdict_counts_as_failed():
    assert item("x", status="escalated", rounds=1).failed
    assert not item("y").failed
    assert item("z", "compliance").failed


@pytest.mark.parametrize(
    ("min_items", "share", "expected"),
    [
        (2, None, ["completeness"]),
        (3, None, []),
        (3, 0.5, ["completeness"]),  # half of 3 items, rounded up: 2
        (3, 0.1, ["completeness"]),  # never below 2 items: compliance (1) is not systemic
    ],
)
def test_systemic_by_count_or_share(min_items, share, expected):
    assert systemic_criteria(WAVE, min_items=min_items, share=share) == expected


def _decide(wave, **overrides):
    args = {
        "all_outcomes": wave,
        "screened": False,
        "unscreened": 0,
        "unverified_left": 10,
        "resamples_left": 2,
    }
    args.update(overrides)
    return decide(wave, **args)


def test_a_clean_wave_is_accepted():
    assert _decide([item("a"), item("b")]).step == "accept"


def test_a_systemic_pattern_is_screened_first_then_resampled():
    first = _decide(WAVE)
    assert (first.step, first.criteria) == ("screen", ("completeness",))
    assert _decide(WAVE, screened=True, screen_fixes=1).step == "resample"


def test_failures_in_no_pattern_escalate_rather_than_redraw():
    """Redrawing until a sample comes back clean would overstate the guarantee."""
    wave = [item("a", "compliance"), item("b")]
    decision = _decide(wave)
    assert decision.step == "escalate" and "only retry the draw" in decision.reasons[0]


def test_after_a_screen_that_fixed_items_a_fresh_sample_while_resamples_are_left():
    assert _decide(WAVE, screened=True, screen_fixes=3, resamples_left=1).step == "resample"
    decision = _decide(WAVE, screened=True, screen_fixes=3, resamples_left=0)
    assert decision.step == "escalate" and "no re-sample is left" in decision.reasons[0]


def test_screens_that_changed_nothing_do_not_earn_a_fresh_sample():
    decision = _decide(WAVE, screened=True, screen_fixes=0)
    assert decision.step == "escalate" and "changed no item" in decision.reasons[0]


def test_a_pattern_of_unspecified_flags_is_not_screened():
    wave = [item("a", "unspecified"), item("b", "unspecified")]
    decision = _decide(wave, screenable={"completeness", "compliance"})
    assert decision.step == "escalate" and decision.criteria == ()


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"unscreened": 1}, "could not be screened"),
        ({"unfixed": 2}, "flagged by a screen were not fixed"),
    ],
)
def test_a_clean_wave_escalates_with_unfinished_screens(overrides, reason):
    decision = _decide([item("a")], **overrides)
    assert decision.step == "escalate" and reason in decision.reasons[0]


def test_an_escalated_item_anywhere_blocks_acceptance():
    earlier = item("old", "compliance", status="escalated", rounds=3)
    decision = _decide([item("a")], all_outcomes=[earlier, item("a")])
    assert decision.step == "escalate" and "old" in decision.reasons[0]


def test_everything_verified_is_accepted_when_every_item_shipped():
    decision = _decide(WAVE, unverified_left=0)
    assert decision.step == "accept" and "every item" in decision.reasons[0]


def test_cost_relative_to_verifying_all():
    assert cost_relative_to_all(0.05, [item("a", cost=0.01), item("b", cost=0.03)], 10) == 0.25
    assert cost_relative_to_all(0.05, [item("a", cost=None)], 10) is None
    assert cost_relative_to_all(None, [item("a")], 10) is None
