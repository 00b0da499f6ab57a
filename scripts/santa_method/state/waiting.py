"""Reviewers started and not heard from yet: who the gate waits for, and until when.

Inside Claude Code the main agent may start reviewers in the background and
go on; a reviewer's reply reaches santa only when its SubagentStop hook
runs. So the PreToolUse guard records every reviewer it lets start (a
`Spawn`), and each reply answers one of them. While a reviewer started for
the round may still reply, the gate does not judge (`next: wait`): a FAIL
that came after a verdict would otherwise be dropped or come too late.

A reviewer that never replies (killed, its session gone) must not hold the
run forever: DEADLINE_MINUTES after it started it counts as a missing
review, which the gate treats as it always has (re-review, or escalate once
re-reviews are spent). If its reply comes after all, it still counts against
its round when it is a valid FAIL (`state/late.py`).

Replies carry no Agent call id, so a reply answers a start by time: the
latest start before the reviewer's transcript began (Claude Code stamps
every record), else the oldest start not answered yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from santa_method.core.errors import RefusedError
from santa_method.state.log import now_iso, parse_ts
from santa_method.state.model.run import Round, Spawn

#: How long a started reviewer may take before it counts as a missing review.
DEADLINE_MINUTES = 30
DEADLINE = timedelta(minutes=DEADLINE_MINUTES)
#: Clock slack when a transcript's first record is compared with a start.
_SLACK = timedelta(seconds=5)


def _now() -> datetime:
    return datetime.now(UTC)


def started_at(spawn: Spawn) -> datetime | None:
    return parse_ts(spawn.at)


def _order(spawn: Spawn) -> datetime:
    """Oldest first; a start whose time cannot be read counts as the oldest."""
    return started_at(spawn) or datetime.min.replace(tzinfo=UTC)


def overdue(spawn: Spawn, now: datetime) -> bool:
    """Past its deadline (a start whose time cannot be read is treated as old)."""
    at = started_at(spawn)
    return at is None or now - at >= DEADLINE


def record_start(r: Round, tool_use_id: str | None, slot: str | None = None) -> None:
    """Record a reviewer the guard let start for round `r` (under the run's
    lock), and the slot it was started for when its run gives slots models."""
    if r.spawns is None:
        r.spawns = []
    r.spawns.append(Spawn(at=now_iso(), opening=r.rereviews, id=tool_use_id, slot=slot))


def answer(
    r: Round,
    agent_id: str,
    began: datetime | None,
    prefer: Callable[[Spawn], bool] | None = None,
) -> Spawn | None:
    """The start that `agent_id`'s reply answers (marked answered), or None
    when no reviewer started for the round is left to answer.

    An agent answers one start at most: its hook running again finds the
    same one. `began` is when its transcript began, if known; `prefer`
    narrows the choice to the starts it accepts, when any does (a reply
    from a slot's model answers a start for that slot).
    """
    spawns = r.spawns or []
    for spawn in spawns:
        if spawn.agent_id == agent_id:
            return spawn
    unanswered = [s for s in spawns if s.agent_id is None]
    if not unanswered:
        return None
    if prefer is not None:
        unanswered = [s for s in unanswered if prefer(s)] or unanswered
    chosen: Spawn | None = None
    if began is not None:
        before = [
            s for s in unanswered if (at := started_at(s)) is not None and at <= began + _SLACK
        ]
        if before:
            chosen = max(before, key=_order)
    if chosen is None:
        chosen = min(unanswered, key=_order)
    chosen.agent_id = agent_id
    chosen.answered = now_iso()
    return chosen


@dataclass(frozen=True)
class Awaited:
    """A started reviewer the gate waits for (or counts as missing)."""

    label: str | None
    """The empty slot its reply would fill; None when every slot has a reply."""
    started: str
    seconds: int

    def phrase(self) -> str:
        who = self.label or "another reviewer"
        return f"{who}, started {_ago(self.seconds)} ago"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "started": self.started, "seconds": self.seconds}


def _ago(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    return f"{seconds // 60} min"


def _awaited(r: Round, spawns: list[Spawn], now: datetime) -> list[Awaited]:
    spawns = sorted(spawns, key=_order)
    empty = [label for label, slot in r.slots.items() if slot is None]
    found = []
    for n, spawn in enumerate(spawns):
        at = started_at(spawn)
        seconds = max(0, int((now - at).total_seconds())) if at is not None else 0
        found.append(Awaited(empty[n] if n < len(empty) else None, spawn.at, seconds))
    return found


def awaited(r: Round, now: datetime | None = None) -> list[Awaited]:
    """The reviewers started for round `r` that have not replied and may
    still: the gate waits for them."""
    now = now or _now()
    live = [s for s in r.spawns or [] if s.agent_id is None and not overdue(s, now)]
    return _awaited(r, live, now)


def missing(r: Round, now: datetime | None = None) -> dict[str, str]:
    """Empty slots whose reviewer was started and is past its deadline, with
    the sentence the gate gives for each (the newest starts, one per slot)."""
    now = now or _now()
    late = [s for s in r.spawns or [] if s.agent_id is None and overdue(s, now)]
    empty = sum(1 for slot in r.slots.values() if slot is None)
    newest = sorted(late, key=_order)[-empty:] if empty else []
    return {
        a.label: (
            f"reviewer {a.label} was started {_ago(a.seconds)} ago and did not reply within "
            f"{DEADLINE_MINUTES} min: counted as a missing review"
        )
        for a in _awaited(r, newest, now)
        if a.label is not None
    }


class StillReviewing(RefusedError):
    """The gate's answer while started reviewers may still reply: `next: wait`."""

    def __init__(self, run_id: str, round_number: int, waiting: list[Awaited]) -> None:
        self.run_id = run_id
        self.round = round_number
        self.waiting = waiting
        names = "; ".join(a.phrase() for a in waiting)
        super().__init__(f"round {round_number} of run {run_id} is waiting for {names}")

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "round": self.round,
            "verdict": None,
            "next": "wait",
            "waiting": [a.to_json() for a in self.waiting],
            "deadline_minutes": DEADLINE_MINUTES,
            "reasons": [f"waiting for {a.phrase()}" for a in self.waiting],
            "next_step": wait_step(self.run_id),
        }


def wait_step(run_id: str) -> str:
    """What the main agent does while reviewers run: the one sentence every face shows."""
    return (
        "wait for the task notification of every reviewer still running (do not start "
        f"more), then run 'santa gate --run {run_id}' again; a reviewer that has not "
        f"replied {DEADLINE_MINUTES} min after it started counts as a missing review"
    )
