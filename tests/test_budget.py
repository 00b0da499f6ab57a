"""core/budget.py: each rule that stops spending, at its edges."""

from __future__ import annotations

import pytest

from santa_method.core import budget


def test_usd_shows_cents_from_a_dollar_and_four_decimals_below() -> None:
    assert budget.usd(1.0) == "$1.00"
    assert budget.usd(12.345) == "$12.35"
    assert budget.usd(0.98765) == "$0.9877"


def test_a_run_is_spent_when_its_cost_reaches_the_budget() -> None:
    assert budget.spent(0.99, 1.0) is None
    reason = budget.spent(1.0, 1.0)
    assert reason is not None and "spent" in reason and "$1.0000 of $1.00" in reason
    assert budget.spent(None, 1.0) is None  # the loop stops an unknown cost itself
    assert budget.spent(5.0, None) is None


def test_the_loop_stops_before_a_fix_and_round_it_cannot_pay() -> None:
    def fix(spent: float) -> str | None:
        return budget.next_round(
            "fix", spent_usd=spent, last_round_usd=0.3, last_fix_usd=0.2, budget_usd=1.0
        )

    assert fix(0.5) is None  # 0.5 + 0.3 + 0.2 is exactly the budget
    reason = fix(0.6)
    assert reason is not None and "another fix and round" in reason
    assert "$0.5000 more needed" in reason


def test_a_rereview_needs_only_the_round() -> None:
    def rereview(spent: float) -> str | None:
        return budget.next_round(
            "rereview", spent_usd=spent, last_round_usd=0.3, last_fix_usd=5.0, budget_usd=1.0
        )

    assert rereview(0.7) is None
    reason = rereview(0.71)
    assert reason is not None and "re-review" in reason and "$0.7100 of $1.00" in reason


@pytest.mark.parametrize("step", ["fix", "rereview"])
def test_an_unknown_cost_stops_a_run_with_a_budget_only(step: str) -> None:
    kept = budget.next_round(
        step,  # type: ignore[arg-type]
        spent_usd=None,
        last_round_usd=0.0,
        last_fix_usd=0.0,
        budget_usd=2.0,
    )
    assert kept is not None and "cannot be kept" in kept
    free = budget.next_round(
        step,  # type: ignore[arg-type]
        spent_usd=None,
        last_round_usd=9.0,
        last_fix_usd=9.0,
        budget_usd=None,
    )
    assert free is None


def test_an_estimate_errs_high() -> None:
    assert budget.estimate([]) == 0.0
    assert budget.estimate([0.1, 0.4]) == 0.4  # a screen: the dearest so far
    # An item: the mean over every round it may take, unless one cost more.
    assert budget.estimate([0.1, 0.3], rounds=4) == pytest.approx(0.8)
    assert budget.estimate([0.1, 0.1, 1.0], rounds=2) == 1.0


def test_a_job_is_admitted_only_when_the_money_left_pays_for_it() -> None:
    def admit(spent: float | None, reserved: float) -> str | None:
        return budget.admission(
            spent_usd=spent,
            reserved_usd=reserved,
            estimate_usd=0.25,
            budget_usd=1.0,
            what="items",
        )

    assert admit(0.5, 0.25) is None
    refused = admit(0.5, 0.3)
    assert refused is not None and "cannot pay for more items" in refused
    for amount in ("$1.00", "spent $0.5000", "$0.3000 more in flight", "$0.2500"):
        assert amount in refused, amount
    unknown = admit(None, 0.0)
    assert unknown is not None and "unknown" in unknown and "cannot be kept" in unknown


def test_an_admitted_job_may_spend_what_the_others_do_not_hold() -> None:
    left = budget.allowance(spent_usd=0.5, reserved_usd=0.4, estimate_usd=0.1, budget_usd=1.0)
    assert left == pytest.approx(0.2)
    assert (
        budget.allowance(spent_usd=None, reserved_usd=0.0, estimate_usd=0.0, budget_usd=1.0) == 1.0
    )
    # Never zero or less: a loop given no money would be a loop without a budget.
    assert budget.allowance(spent_usd=2.0, reserved_usd=0.0, estimate_usd=0.0, budget_usd=1.0) > 0


def test_a_batch_is_accepted_only_within_a_known_budget() -> None:
    assert budget.overspent(1.0, 1.0) is None
    over = budget.overspent(1.5, 1.0)
    assert over is not None and "$1.50" in over and "$1.00" in over
    unknown = budget.overspent(None, 1.0)
    assert unknown is not None and "unknown" in unknown and "not kept" in unknown
    assert budget.overspent(None, None) is None


def test_a_resumed_run_may_spend_what_its_budget_has_left() -> None:
    assert budget.left(0.75, 2.0) == 1.25
    assert budget.left(0.0, 2.0) == 2.0
