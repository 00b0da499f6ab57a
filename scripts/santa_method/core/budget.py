"""The money budget: one place for every rule that stops spending.

Why one module: a run (its gate and the loop between rounds), a batch (the
jobs it admits and its verdict) and a resumed run keep the same budget,
and a rule kept in three places drifts. These are pure functions over
dollar amounts; the callers do the counting. A cost that is unknown (None)
means the budget cannot be kept, so it stops the spending: it never
switches the budget off.

Each rule answers the reason to stop, in words for the report, or None
when the budget allows the next step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal


def usd(value: float) -> str:
    """Dollars as a batch's report shows them: cents from $1, else four decimals."""
    return f"${value:.2f}" if value >= 1 else f"${value:.4f}"


# -- a run ------------------------------------------------------------------------


def spent(cost_usd: float | None, budget_usd: float | None) -> str | None:
    """A run whose logged cost has reached its budget goes no further (the
    gate escalates it, and it cannot be resumed)."""
    if budget_usd is not None and cost_usd is not None and cost_usd >= budget_usd:
        return f"the budget is spent (${cost_usd:.4f} of ${budget_usd:.2f})"
    return None


def left(cost_usd: float, budget_usd: float) -> float:
    """What a run may still spend when it is resumed: its budget less what
    the log says it spent (the resumed loop keeps the budget from there)."""
    return budget_usd - cost_usd


def next_round(
    step: Literal["fix", "rereview"],
    *,
    spent_usd: float | None,
    last_round_usd: float,
    last_fix_usd: float,
    budget_usd: float | None,
) -> str | None:
    """Before a fix and its round, or a re-review: the loop forecasts the
    next step from what the last round (and the last fix) cost, and stops
    before a step it cannot pay for rather than halfway through it."""
    if budget_usd is None:
        return None
    if spent_usd is None:
        return (
            f"the cost of a call is unknown (no price for its model), so the budget of "
            f"${budget_usd:.2f} cannot be kept"
        )
    if step == "fix":
        needed = spent_usd + last_round_usd + last_fix_usd
        if needed > budget_usd:
            return (
                f"the budget cannot pay for another fix and round "
                f"(spent ${spent_usd:.4f}, about ${needed - spent_usd:.4f} more needed, "
                f"budget ${budget_usd:.2f})"
            )
        return None
    if spent_usd + last_round_usd > budget_usd:
        return (
            f"the budget cannot pay for a re-review (spent ${spent_usd:.4f} of ${budget_usd:.2f})"
        )
    return None


# -- a batch ----------------------------------------------------------------------
# A job (an item's loop, a screen) starts only when the money left, minus
# what the jobs in flight are expected to cost, pays for it.


def estimate(known: Sequence[float], *, rounds: int = 1) -> float:
    """What the next job may cost, erring high, from what jobs of its kind
    cost so far: the dearest one, or the mean over `rounds` (an item that
    fails costs up to max_fixes more rounds and fixes than the ones seen).
    Nothing known is 0.0: the first job runs alone, to learn."""
    if not known:
        return 0.0
    return max(max(known), sum(known) / len(known) * rounds)


def admission(
    *,
    spent_usd: float | None,
    reserved_usd: float,
    estimate_usd: float,
    budget_usd: float,
    what: str,
) -> str | None:
    """Why one more job (`what`: "items", "screens") may not start."""
    if spent_usd is None:
        return "the cost of a call is unknown, so the budget cannot be kept"
    if spent_usd + reserved_usd + estimate_usd > budget_usd:
        return (
            f"the budget of {usd(budget_usd)} cannot pay for more {what} "
            f"(spent {usd(spent_usd)}, {usd(reserved_usd)} more in flight; "
            f"one may cost {usd(estimate_usd)})"
        )
    return None


def allowance(
    *, spent_usd: float | None, reserved_usd: float, estimate_usd: float, budget_usd: float
) -> float:
    """What one admitted job may spend: the budget less what is spent and what
    the other jobs in flight hold (its loop stops before a fix it cannot pay)."""
    left = budget_usd - (spent_usd or 0.0) - (reserved_usd - estimate_usd)
    return max(left, 1e-9)


def overspent(spent_usd: float | None, budget_usd: float | None) -> str | None:
    """A batch is accepted only within its budget, and only if its cost is known."""
    if budget_usd is None:
        return None
    if spent_usd is None:
        return "the cost is unknown, so the budget was not kept"
    if spent_usd > budget_usd:
        return f"spent {usd(spent_usd)} of a budget of {usd(budget_usd)}"
    return None
