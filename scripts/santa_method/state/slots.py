"""Reviewer slots: who may review a round, and where each reply is kept.

A round has one slot per expected reviewer. The reviewer hook (and the
headless loop) finds the round from the reviewer's exact instruction,
reserves a spawn, and stores the reply in the first open slot; one agent
fills at most one slot. A slot the last gate found valid stands across a
re-review.

Inside Claude Code a reviewer may reply after its round was gated, or when
every slot already has a reply (it was started in the background, the
round went on without it). Its reply is still its round's: it is kept as an
extra reply (`state/late.py` says what it counts for), never dropped; only
a reply no started reviewer is left to answer is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from santa_method.core.errors import InputError, RefusedError
from santa_method.state import late, waiting
from santa_method.state.atomic import replace_bytes
from santa_method.state.log import parse_ts
from santa_method.state.model.run import Round, RunState, Slot, Spawn
from santa_method.state.store import (
    RUN_ID,
    agent_file_name,
    load_state,
    locked_state,
    now,
    run_dir,
)

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


def round_of_reply(instruction: str) -> tuple[str, int] | None:
    """The run and round whose reviewer instruction is exactly `instruction`,
    whatever the run's status and however far it has gone since: a reply
    belongs to the round its reviewer was started for."""
    run_id = run_of(instruction, REVIEW_MARKER)
    if run_id is None:
        return None
    try:
        state = load_state(run_id)
    except InputError:
        return None
    for r in state.rounds:
        if r.instruction == instruction.strip():
            return state.id, r.round
    return None


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


def _unstarted(state: RunState) -> list[str]:
    """The current round's empty slots no reviewer was started for in this opening."""
    current = state.rounds[-1]
    started = {s.slot for s in current.spawns or [] if s.opening == current.rereviews}
    return [label for label, slot in current.slots.items() if slot is None and label not in started]


def _wanted(state: RunState, labels: Sequence[str]) -> str:
    models = state.slot_models or {}
    return ", ".join(f"{label} model {models.get(label) or '(none)'}" for label in labels)


def model_refusal(run_id: str, round_number: int, model: str | None) -> str | None:
    """Why an Agent call for a reviewer of this round may not run on `model`
    (None: no `model` given), or None when a slot waits for a reviewer on it.

    A run whose slots have models (`slot_models`) takes each slot's reviewer
    only on that slot's model; a slot without one, and every slot of a run
    without them, takes a reviewer only without a `model`, which then runs
    on the agent definition's (the session's) model. The choice is the
    user's (the config, or `--models`), never the main agent's.
    """
    state = load_state(run_id)
    models = state.slot_models
    if models is None:
        if model is None:
            return None
        return (
            f"Do not choose model for santa reviewers: run {run_id} configures no reviewer "
            "model, so each runs on the agent definition's. Call the Agent tool again "
            "without model."
        )
    unstarted = _unstarted(state)
    if any(models.get(label) == model for label in unstarted) or not unstarted:
        return None  # no open slot left: reserve_reviewer says so
    given = f"model {model}" if model is not None else "no model"
    return (
        f"The reviewer slots of run {run_id} that still wait for a reviewer run on configured "
        f"models ({_wanted(state, unstarted)}), and this call gives {given}. Call the Agent "
        "tool once per open slot with exactly that slot's model as `model` "
        "(no `model` for a slot that has none)."
    )


def reserve_reviewer(
    run_id: str, round_number: int, tool_use_id: str | None = None, model: str | None = None
) -> str | None:
    """Count one reviewer spawn: None when allowed, else the reason it is not.

    A round (or a re-review) has as many spawns as it had open slots when it
    was opened; a reviewer that dies without a reply leaves its slot empty,
    which the gate counts as a failed review and a re-review reopens. In a
    run whose slots have models, the spawn is for the first open slot on
    `model` (`model_refusal` says why a call fits none).
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
        slot = None
        if state.slot_models is not None:
            fits = [x for x in _unstarted(state) if state.slot_models.get(x) == model]
            if not fits:
                return (
                    f"every open reviewer slot of round {round_number} on "
                    f"{'model ' + model if model else 'no model'} has its reviewer"
                )
            slot = fits[0]
        current.spawned += 1
        if tool_use_id:
            seen.append(tool_use_id)
        if state.source == "hook":
            waiting.record_start(current, tool_use_id, slot)
        return None


def _keep_transcript(run_id: str, round_number: int, agent_id: str, source: str) -> str | None:
    """A copy of the reviewer's transcript, as it stood when its reply was
    stored, kept with the run: the gate may run where Claude Code's own
    folder is out of reach (a sandboxed shell), and later edits to the
    original cannot change what was judged."""
    if not source:
        return None
    name = agent_file_name(agent_id)
    target = run_dir(run_id) / f"round-{round_number}" / "transcripts" / f"{name}.jsonl"
    try:
        data = Path(source).read_bytes()
    except OSError:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_bytes(target, data)
    return str(target)


@dataclass(frozen=True)
class Stored:
    """Where a reply went: its slot's label, and for a reply no slot could
    take, what became of it in words (the hook says it out loud)."""

    label: str
    note: str | None = None


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
    return keep_reply(
        run_id,
        round_number,
        reply=reply,
        agent_id=agent_id,
        transcript_path=transcript_path,
        failed=failed,
        errors=errors,
        tokens=tokens,
        cost_usd=cost_usd,
        token_detail=token_detail,
        model=model,
        duration_s=duration_s,
    ).label


def keep_reply(
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
    verdict: str | None = None,
    began: str | None = None,
    model: str | None = None,
    duration_s: float | None = None,
) -> Stored:
    """Store a reviewer's reply (as `store_reply`), and inside Claude Code
    keep one that no slot can take as an extra reply of its round.

    `verdict` is the reply's verdict as the hook judged it (valid replies),
    `began` when the reviewer's transcript began (which start it answers).
    """
    with locked_state(run_id) as state:
        r = next((x for x in state.rounds if x.round == round_number), None)
        if r is None:
            raise RefusedError(f"cannot store the reply: run {run_id} has no round {round_number}")
        if state.source != "hook":
            why = _accepting(state, round_number)
            if why:
                raise RefusedError(f"cannot store the reply: {why}")
        kept = _keep_transcript(run_id, r.round, str(agent_id), str(transcript_path or ""))
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
        own = _own_place(state, r, slot, verdict)
        if own is not None:
            return own
        if state.source == "hook":
            return _keep_hook_reply(state, r, slot, verdict, began)
        for label, held in r.slots.items():
            if held is None:
                r.slots[label] = slot
                return Stored(label)
        raise RefusedError(f"every reviewer slot of round {round_number} is filled")


def _own_place(state: RunState, r: Round, slot: Slot, verdict: str | None) -> Stored | None:
    """The agent's own earlier reply, replaced (its hook ran again); None if it has none."""
    for places in (r.slots, r.extras):
        for label, held in places.items():
            if held is None or held.agent_id != slot.agent_id:
                continue
            extra = places is r.extras
            if (held.reply, held.failed) == (slot.reply, slot.failed):
                # The same reply stored twice (plugin and vendored hooks both ran).
                return Stored(label, late.note(state, r, label, held) if extra else None)
            if slot_stands(held) or held.gated_valid is not None:
                raise RefusedError(f"reviewer {label}'s reply was already gated")
            if extra:
                slot.why_extra = held.why_extra
                slot.verdict = verdict if not slot.failed else None
            else:
                _check_model(state, label, slot)
            places[label] = slot
            return Stored(label, late.note(state, r, label, slot) if extra else None)
    return None


def _keep_hook_reply(
    state: RunState, r: Round, slot: Slot, verdict: str | None, began: str | None
) -> Stored:
    """A reply stored by the hook: only a reviewer the PreToolUse guard let
    start may fill a slot, and one that no slot can take is kept all the same."""
    spawn = None
    if r.spawns is None:
        # A round opened before starts were recorded: one spawn, one slot.
        filled = sum(1 for held in r.slots.values() if held is not None and not slot_stands(held))
        if filled >= r.spawned:
            raise _no_spawn(r.round)
    else:
        spawn = waiting.answer(r, str(slot.agent_id), parse_ts(began), _on(state, slot.model))
        if spawn is None:
            raise _no_spawn(r.round)
    why = late.why_extra(state, r)
    if why is None:
        empty = [label for label, held in r.slots.items() if held is None]
        label = spawn.slot if spawn is not None and spawn.slot in empty else empty[0]
        _check_model(state, label, slot)
        r.slots[label] = slot
        return Stored(label)
    slot.verdict = verdict if not slot.failed else None
    label = late.keep(state, r, slot, why)
    return Stored(label, late.note(state, r, label, slot))


def _on(state: RunState, answered: str | None) -> Callable[[Spawn], bool] | None:
    """Which starts a reply from model `answered` may answer first: those of
    slots configured for that model (replies carry no Agent call id)."""
    models = state.slot_models
    if models is None or not answered:
        return None
    return lambda spawn: spawn.slot is not None and same_model(models.get(spawn.slot, ""), answered)


def _check_model(state: RunState, label: str, slot: Slot) -> None:
    """A reply on another model than its slot's is a failed review: the
    slot's model is the user's choice, and the transcript shows what answered."""
    wanted = (state.slot_models or {}).get(label)
    if wanted is None or slot.failed or same_model(wanted, slot.model):
        return
    slot.failed = True
    answered = slot.model or "a model the transcript does not name"
    slot.errors = [
        *slot.errors,
        f"slot {label} is configured for model {wanted}, but {answered} wrote this reply",
    ]


def same_model(configured: str, answered: str | None) -> bool:
    """Whether `answered` (the id a transcript names) is the configured
    alias's model: Claude Code sends `haiku` as a `claude-haiku-...` id."""
    if not configured or not answered:
        return False
    return answered == configured or f"-{configured}-" in f"-{answered}-"


def _no_spawn(round_number: int) -> RefusedError:
    return RefusedError(
        f"no reviewer was spawned for this reply in round {round_number}; "
        "replies count only from reviewers started through the Agent tool"
    )
