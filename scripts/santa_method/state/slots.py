"""Reviewer slots: who may review a round, and where each reply is kept.

A round has one slot per expected reviewer. The reviewer hook (and the
headless loop) finds the round from the reviewer's exact instruction,
reserves a spawn, and stores the reply in the first open slot; one agent
fills at most one slot. A slot the last gate found valid stands across a
re-review.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from santa_method.core.errors import InputError, RefusedError
from santa_method.state.atomic import replace_bytes
from santa_method.state.model.run import RunState, Slot
from santa_method.state.store import RUN_ID, load_state, locked_state, now, run_dir

REVIEW_MARKER = "santa-method review, run "


FIX_MARKER = "santa-method fix, run "


def run_of(instruction: str, marker: str) -> str | None:
    text = instruction.strip() if isinstance(instruction, str) else ""
    if not text.startswith(marker):
        return None
    run_id = text[len(marker) :].split(",", 1)[0]
    return run_id if RUN_ID.fullmatch(run_id) else None


def slot_stands(slot: Slot | None) -> bool:
    """A slot keeps its reply across a re-review only if the last gate found it valid."""
    return slot is not None and slot.gated_valid is True


def find_round(instruction: str) -> tuple[str, int] | None:
    """The open run and round whose reviewer instruction is exactly `instruction`."""
    run_id = run_of(instruction, REVIEW_MARKER)
    if run_id is None:
        return None
    try:
        state = load_state(run_id)
    except InputError:
        return None
    if state.status != "open" or not state.rounds:
        return None
    current = state.rounds[-1]
    if current.instruction != instruction.strip():
        return None
    return state.id, current.round


def _accepting(state: RunState, round_number: int) -> str | None:
    """Why the round cannot take reviewers or replies now, or None."""
    current = state.rounds[-1]
    if state.status != "open":
        return f"run {state.id} is {state.status}"
    if current.round != round_number:
        return f"round {round_number} is over; the current round is {current.round}"
    if not current.open:
        return f"round {round_number} has been gated already"
    return None


def reserve_reviewer(run_id: str, round_number: int, tool_use_id: str | None = None) -> str | None:
    """Count one reviewer spawn: None when allowed, else the reason it is not.

    A round (or a re-review) has as many spawns as it had open slots when it
    was opened; a reviewer that dies without a reply leaves its slot empty,
    which the gate counts as a failed review and a re-review reopens.
    """
    with locked_state(run_id) as state:
        why = _accepting(state, round_number)
        if why:
            return why
        current = state.rounds[-1]
        if current.spawn_ids is None:
            current.spawn_ids = []
        seen = current.spawn_ids
        if tool_use_id and tool_use_id in seen:
            # The same Agent call seen twice (plugin and vendored hooks both
            # installed): one reviewer, one slot.
            return None
        if current.spawned >= current.capacity:
            return (
                f"round {round_number} has {current.capacity} open reviewer slot(s) "
                "and every one has its reviewer"
            )
        current.spawned += 1
        if tool_use_id:
            seen.append(tool_use_id)
        return None


def _keep_transcript(run_id: str, round_number: int, agent_id: str, source: str) -> str | None:
    """A copy of the reviewer's transcript, as it stood when its reply was
    stored, kept with the run: the gate may run where Claude Code's own
    folder is out of reach (a sandboxed shell), and later edits to the
    original cannot change what was judged."""
    if not source:
        return None
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in agent_id) or "unknown"
    target = run_dir(run_id) / f"round-{round_number}" / "transcripts" / f"{safe}.jsonl"
    try:
        data = Path(source).read_bytes()
    except OSError:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_bytes(target, data)
    return str(target)


def store_reply(
    run_id: str,
    round_number: int,
    *,
    reply: str,
    agent_id: str,
    transcript_path: str,
    failed: bool = False,
    errors: Sequence[str] = (),
    tokens: int | None = None,
    cost_usd: float | None = None,
    token_detail: dict[str, int] | None = None,
    model: str | None = None,
    duration_s: float | None = None,
) -> str:
    """Put a reviewer's reply into the round's first open slot; returns its label.

    One agent fills at most one slot: storing again for the same agent
    replaces its own reply (a hook that runs twice), never takes a second.
    `token_detail` (input, output, cache_read, cache_write, total), when the
    caller knows it, goes into the review record beside `tokens`, so the log
    shows what prompt caching saved; `model` and `duration_s` (what wrote
    the reply and how long it took) go there too when known.
    """
    with locked_state(run_id) as state:
        why = _accepting(state, round_number)
        if why:
            raise RefusedError(f"cannot store the reply: {why}")
        current = state.rounds[-1]
        kept = _keep_transcript(run_id, current.round, str(agent_id), str(transcript_path or ""))
        slot = Slot(
            reply=reply if isinstance(reply, str) else "",
            agent_id=str(agent_id),
            transcript_path=kept or str(transcript_path or ""),
            transcript_source=str(transcript_path or ""),
            failed=bool(failed),
            errors=[str(e) for e in errors],
            tokens=tokens,
            cost_usd=cost_usd,
            token_detail=dict(token_detail) if token_detail else None,
            stored=now(),
            model=model if isinstance(model, str) and model else None,
            duration_s=duration_s,
        )
        for label, held in current.slots.items():
            if held is not None and held.agent_id == slot.agent_id:
                if slot_stands(held):
                    raise RefusedError(f"reviewer {label}'s reply was already gated")
                current.slots[label] = slot
                return label
        if state.source == "hook":
            # Only a reviewer the PreToolUse guard let through may fill a slot:
            # a reply that arrives without a spawn is not a reviewer's.
            filled = sum(
                1 for held in current.slots.values() if held is not None and not slot_stands(held)
            )
            if filled >= current.spawned:
                raise RefusedError(
                    f"no reviewer was spawned for this reply in round {round_number}; "
                    "replies count only from reviewers started through the Agent tool"
                )
        for label, held in current.slots.items():
            if held is None:
                current.slots[label] = slot
                return label
        raise RefusedError(f"every reviewer slot of round {round_number} is filled")
