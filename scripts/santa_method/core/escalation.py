"""Escalation: when another fix would not help; and a check that asked for none.

A round's gate can only say ship, rereview or fix. Whether the loop may go
on depends on its history, decided here as a pure function so the Claude
Code face and the headless loop escalate for exactly the same reasons:
- fixes exhausted (`max_fixes` fixes already spent),
- the money budget spent (where cost is known; core/budget.py),
- re-reviews exhausted (a round whose replies stay invalid),
- a recurring flag: the same problem in 3 consecutive rounds, or one that
  disappeared and came back (a fix regression). Reports of loops running
  14, 25, 30+ rounds are what this rule exists for.

A run with `max_fixes` 0 is a check: one that finds problems ends
`report` (verdict NAUGHTY, outcome reported), not in an escalation a
person must rescue. Only a check that never got valid reviews escalates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from santa_method.core import budget
from santa_method.core.merge import same_flag_across_rounds
from santa_method.core.types import MergedIssue, Next

RECURRENCE_ROUNDS = 3
MAX_REREVIEWS = 2
#: How a cap escalation's reason starts (the state layer words its refusal by it).
FIXES_EXHAUSTED = "fixes exhausted"
#: Why a check-only run ends with its problems reported.
CHECK_ONLY = "a check only (max_fixes 0): the problems are reported, no fix was asked"


@dataclass(frozen=True)
class Decision:
    next: Next
    reasons: tuple[str, ...] = ()


def _present(flag: MergedIssue, round_flags: Sequence[MergedIssue]) -> bool:
    return any(same_flag_across_rounds(flag, other) for other in round_flags)


def recurring_flags(
    earlier: Sequence[Sequence[MergedIssue]], current: Sequence[MergedIssue]
) -> list[tuple[MergedIssue, str]]:
    """Flags of `current` that recur, with why. `earlier` holds the final
    flags of each earlier round, oldest first."""
    found = []
    for flag in current:
        trail = [_present(flag, flags) for flags in earlier]
        consecutive = len(trail) >= RECURRENCE_ROUNDS - 1 and all(trail[-(RECURRENCE_ROUNDS - 1) :])
        if consecutive:
            found.append((flag, f"flagged in {RECURRENCE_ROUNDS} consecutive rounds"))
            continue
        # Seen before, then gone for at least one round, now back.
        if True in trail:
            first = trail.index(True)
            if not all(trail[first:]):
                found.append((flag, "fixed in an earlier round and back again (a fix regression)"))
    return found


def decide(
    round_next: Next,
    *,
    round_number: int,
    max_fixes: int,
    earlier_flags: Sequence[Sequence[MergedIssue]],
    current_flags: Sequence[MergedIssue],
    rereviews: int = 0,
    cost_usd: float | None = None,
    budget_usd: float | None = None,
) -> Decision:
    """Turn the round's own `next` into the loop's `next`."""
    if round_next == "ship":
        return Decision("ship")
    if round_next == "fix" and max_fixes == 0:
        return Decision("report", (CHECK_ONLY,))
    reasons: list[str] = []
    spent = budget.spent(cost_usd, budget_usd)
    if spent is not None:
        reasons.append(spent)
    if round_next == "rereview" and rereviews >= MAX_REREVIEWS:
        reasons.append(
            f"round {round_number} was re-reviewed {rereviews} times and still lacks valid reviews"
        )
    if round_next == "fix":
        fixes_done = round_number - 1
        if fixes_done >= max_fixes:
            reasons.append(f"{FIXES_EXHAUSTED} ({fixes_done} of {max_fixes} used)")
        for flag, why in recurring_flags(earlier_flags, current_flags):
            reasons.append(f"[{flag.criterion}] {flag.issue}: {why}")
    if reasons:
        return Decision("escalate", tuple(reasons))
    return Decision(round_next)
