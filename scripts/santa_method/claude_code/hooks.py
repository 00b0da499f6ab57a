"""Claude Code hooks that enforce the loop where the model cannot be trusted.

- `pretooluse_guard` (guard.py): tool calls that would bypass the loop.
- `pretooluse_agent`: a reviewer or fixer subagent may be spawned only with
  the helper's exact instruction for an open round (or open fix), and no
  more reviewers than the round has open slots. The main agent cannot
  paraphrase, trim or enrich what reviewers and the fixer see.
- `subagent_stop`: a reviewer's final reply is validated against its round
  (found from the reviewer's own transcript, never from anything the main
  agent copies). Invalid replies are handed back with the exact errors, an
  unverified quote once; after at most 2 blocks the reply is stored as a
  failed review. Valid replies are stored verbatim with the agent id and
  transcript path, which the gate checks again. A reply that arrives after
  its round was gated, or when every slot has a reply, is kept with its
  round all the same (a valid FAIL counts against it) and the hook says
  what became of it (`systemMessage`); so does a reply it cannot keep.

The hook protocol decides how failures look: Claude Code lets a tool call or
a reply through when a hook exits non-zero, so these functions never raise.
Every internal error ends in a refusal (PreToolUse) or a stored failed review
(SubagentStop), never in silent acceptance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from santa_method.claude_code.guard import open_run_ids, pretooluse_guard, shell_problem
from santa_method.claude_code.protocol import (
    FIXER_AGENTS,
    REVIEWER_AGENTS,
    answer,
    block,
    deny,
    fail_closed,
    note,
    plugin_agent,
    vendored_agent,
)
from santa_method.claude_code.provenance import reading_problem

__all__ = ["pretooluse_agent", "pretooluse_guard", "run_hook", "shell_problem", "subagent_stop"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, TypeAlias

    from santa_method.core.reask import Asks

    Reply: TypeAlias = dict[str, Any] | None  # the JSON to print; None means "allow"

REVIEWER_TYPES = REVIEWER_AGENTS
FIXER_TYPES = FIXER_AGENTS


# --- PreToolUse on Agent ----------------------------------------------------


def pretooluse_agent(payload: Mapping[str, Any]) -> Reply:
    """PreToolUse on Agent: refuses reviewer and fixer subagents not given the helper's exact instruction, and extra reviewers."""
    try:
        return _pretooluse_agent(payload)
    except Exception as exc:
        return fail_closed(
            "pretooluse-agent",
            payload if isinstance(payload, Mapping) else None,
            f"santa-method could not check this agent call ({type(exc).__name__}: {exc})",
        )


def _pretooluse_agent(payload: Mapping[str, Any]) -> Reply:
    from santa_method.state.fixes import fixer_open
    from santa_method.state.slots import find_round, model_refusal, reserve_reviewer

    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, Mapping):
        return deny("santa-method could not read the Agent call's input")
    kind = tool_input.get("subagent_type")
    prompt = tool_input.get("prompt")
    prompt = prompt.strip() if isinstance(prompt, str) else ""
    # Anywhere in the prompt, not only at its start: wrapping the helper's
    # instruction in other words must not turn another agent into a reviewer.
    is_review_prompt = "santa-method review, run " in prompt
    is_fix_prompt = "santa-method fix, run " in prompt

    # A reviewer's model is its slot's (the user's choice, checked below);
    # everything else of this kind comes from the agent definition.
    chosen = [
        k
        for k in ("model", "effort")
        if tool_input.get(k) and (k == "effort" or kind in FIXER_TYPES)
    ]
    if kind in REVIEWER_TYPES | FIXER_TYPES and chosen:
        return deny(
            f"Do not choose {' or '.join(chosen)} for santa reviewers or the fixer: that comes "
            f"from the agent definition. Call the Agent tool again without {', '.join(chosen)}."
        )
    if kind in REVIEWER_TYPES:
        model = tool_input.get("model") or None
        if model is not None and not isinstance(model, str):
            return deny("santa-method could not read the Agent call's model")
        found = find_round(prompt)
        if found is None:
            return deny(reviewer_prompt_refusal())
        refusal = model_refusal(*found, model) or _unpriced(found[0], model, payload)
        if refusal:
            return deny(refusal)
        tool_use_id = payload.get("tool_use_id")
        refusal = reserve_reviewer(
            *found, tool_use_id=tool_use_id if isinstance(tool_use_id, str) else None, model=model
        )
        if refusal:
            return deny(
                f"No reviewer slot is open: {refusal}. Wait for the task notifications of the "
                f"reviewers still running, then gate the round with `santa gate --run {found[0]}`."
            )
        return None
    if kind in FIXER_TYPES:
        if not fixer_open(prompt):
            return deny(
                "The santa fixer must get exactly the gate's `fixer_instruction` for the open fix, "
                "and nothing else: no flags of your own, no extra context."
            )
        return None
    if is_review_prompt or is_fix_prompt:
        role = "reviewer" if is_review_prompt else "fixer"
        return deny(
            f"A santa {role} assignment must go to the santa {role} agent "
            f"({plugin_agent(role)}, or {vendored_agent(role)} when vendored), which has the "
            "right tools."
        )
    return None


def _unpriced(run_id: str, model: str | None, payload: Mapping[str, Any]) -> str | None:
    """With a budget, a reviewer on no model of its own runs on the
    session's, which must have a list price before it spends anything (a
    configured model was priced when the run opened)."""
    from santa_method.claude_code import models
    from santa_method.headless.backends import prices
    from santa_method.state.store import load_state

    if model is not None or load_state(run_id).budget_usd is None:
        return None
    path = payload.get("transcript_path")
    session = models.session_model(_records(path)) if isinstance(path, str) and path else None
    if session is not None and prices.price(session) is not None:
        return None
    which = f"this session's model ({session})" if session else "this session's model"
    return (
        f"Run {run_id} has a budget, and {which} has no list price, so a reviewer on it could "
        "not be counted against the budget. Configure a priced model for each reviewer slot "
        "(models: in .santa/config.yaml), or run without the budget."
    )


def reviewer_prompt_refusal() -> str:
    """What a main agent that changed a reviewer's prompt is told: the way
    forward that works (a second `santa round start` refuses while the round
    is open)."""
    open_ids = open_run_ids()
    where = (
        f"`santa runs show {open_ids[0]}` prints it again"
        if len(open_ids) == 1
        else "`santa runs show RUN_ID` prints it again"
    )
    return (
        "A santa reviewer must get exactly the instruction `santa round start` printed for the "
        "open round (its `instruction`), character for character, and nothing else. Call the "
        f"Agent tool again with that instruction, unchanged, as the prompt; {where}. Do not run "
        "`santa round start` again: it refuses while the round is open."
    )


# --- SubagentStop for reviewers ---------------------------------------------


def _records(transcript_path: str) -> list[dict[str, Any]]:
    from santa_method.state import transcripts

    try:
        return transcripts.read(transcript_path)
    except (OSError, UnicodeDecodeError):
        return []


def _blocks_file(run_dir: Path, round_number: int, agent_id: str) -> Path:
    from santa_method.state.store import agent_file_name

    folder = run_dir / f"round-{round_number}" / "hook-blocks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{agent_file_name(agent_id)}.json"


def subagent_stop(payload: Mapping[str, Any]) -> Reply:
    """SubagentStop: validates a reviewer's reply, hands errors back, and stores the reply for the gate; keeps the fixer's report."""
    if isinstance(payload, Mapping) and payload.get("agent_type") in FIXER_TYPES:
        return fixer_stop(payload)
    if not isinstance(payload, Mapping) or payload.get("agent_type") not in REVIEWER_TYPES:
        return None
    found: tuple[str, int] | None = None
    try:
        from santa_method.state import transcripts
        from santa_method.state.slots import round_of_reply

        transcript = str(payload.get("agent_transcript_path") or "")
        records = _records(transcript) if transcript else []
        if not records:
            # No round can be told without the transcript: the reply counts
            # nowhere (its slot stays missing), and the user is told why.
            return note(
                f"santa: the reply of reviewer agent {payload.get('agent_id')} was not counted: "
                f"its transcript ({transcript or 'none given'}) could not be read, so its round "
                "is unknown; the gate counts its review as missing"
            )
        prompt = transcripts.first_prompt(records)
        found = round_of_reply(prompt) if prompt else None
        if found is None:
            # Not given the instruction of any run's round (the PreToolUse
            # guard refuses that); there is no round to count this reply in.
            return None
        return _judge(payload, found, transcript)
    except Exception as exc:
        return _store_failure(
            payload, found, f"internal error in the santa stop hook ({type(exc).__name__}: {exc})"
        )


def fixer_stop(payload: Mapping[str, Any]) -> Reply:
    """Keep the fixer's final reply (its per-flag report) for `santa log fix`.

    Never blocks: the fixer's reply is judged by `santa log fix` (a question
    escalates the run, a fix that changed nothing is refused), not here; a
    hook that failed to keep it leaves `santa log fix` without the report,
    never the fixer stuck.
    """
    try:
        from santa_method.state import transcripts
        from santa_method.state.fixes import record_fixer_reply

        transcript = str(payload.get("agent_transcript_path") or "")
        prompt = transcripts.first_prompt(_records(transcript)) if transcript else None
        reply = payload.get("last_assistant_message")
        if prompt and isinstance(reply, str):
            record_fixer_reply(prompt, reply)
    except Exception:
        return None
    return None


def _judge(payload: Mapping[str, Any], found: tuple[str, int], transcript: str) -> Reply:
    from santa_method.claude_code.models import spent
    from santa_method.core import reask
    from santa_method.core.review import validate_reply
    from santa_method.core.types import replace
    from santa_method.state import transcripts
    from santa_method.state.atomic import replace_text
    from santa_method.state.store import judged_files, load_state, run_dir

    run_id, round_number = found
    state = load_state(run_id)
    folder = run_dir(run_id)
    current = next(r for r in state.rounds if r.round == round_number)
    # Judging against edited run files would hand the reviewer wrong errors;
    # the gate refuses such a run for the same reason (one check for both).
    rubric, output = judged_files(state, current)
    reply = payload.get("last_assistant_message")
    reply = reply if isinstance(reply, str) else ""
    agent_id = payload.get("agent_id")
    if not isinstance(agent_id, str) or not agent_id:
        raise RuntimeError("the stop hook's input names no agent_id")
    result = validate_reply(reply, rubric=rubric, output=output, canary=current.canary)
    records = _records(transcript)
    unread = reading_problem(records, current.assignment)
    if unread:
        # Reading is part of a valid review: a reply from a reviewer that
        # skipped part of the assignment (or peeked at other reviews) fails.
        result = replace(result, valid=False, errors=(*result.errors, unread))

    counter_file = _blocks_file(folder, round_number, agent_id)
    # The run has ended: its reply is kept, but nothing it says can change
    # the run, so the reviewer is not asked again.
    asks = _asks(counter_file) if state.status == "open" else reask.SPENT
    began = transcripts.began(records)
    model, seconds = transcripts.reply_facts(records)
    used = spent(records)
    cost = {
        "model": used.model or model,
        "tokens": None if used.tokens is None else used.tokens.total,
        "token_detail": None if used.tokens is None else used.tokens.to_json(),
        "cost_usd": used.cost_usd,
    }
    ask = reask.next_ask(result, asks)
    if ask is not None:
        replace_text(
            counter_file, json.dumps({"invalid": ask.asks.invalid, "quotes": ask.asks.quotes})
        )
        return block(ask.feedback)
    if not result.valid:
        return _kept(
            run_id,
            round_number,
            reply=reply,
            agent_id=agent_id,
            transcript_path=transcript,
            failed=True,
            errors=list(result.errors),
            began=began,
            duration_s=seconds,
            **cost,
        )
    return _kept(
        run_id,
        round_number,
        reply=reply,
        agent_id=agent_id,
        transcript_path=transcript,
        verdict=result.verdict,
        began=began,
        duration_s=seconds,
        **cost,
    )


def _asks(counter_file: Path) -> Asks:
    """The re-asks this reviewer has had (a file of the round; one written
    by an older santa counted 'blocks' and 'quote_blocks')."""
    from santa_method.core.reask import Asks

    if not counter_file.exists():
        return Asks()
    data = json.loads(counter_file.read_text(encoding="utf-8"))
    if "blocks" in data:
        return Asks(int(data["blocks"]) - int(data["quote_blocks"]), int(data["quote_blocks"]))
    return Asks(int(data["invalid"]), int(data["quotes"]))


def _kept(run_id: str, round_number: int, **reply: Any) -> Reply:
    """Store the reply; say out loud what became of one no slot could take,
    and why one could not be kept at all (never a silent drop)."""
    from santa_method.core.errors import RefusedError
    from santa_method.state.slots import keep_reply

    try:
        stored = keep_reply(run_id, round_number, **reply)
    except RefusedError as exc:
        return note(
            f"santa: the reply of agent {reply.get('agent_id')} was not counted for round "
            f"{round_number} of run {run_id}: {exc}"
        )
    return note(stored.note) if stored.note else None


def _store_failure(payload: Mapping[str, Any], found: tuple[str, int] | None, why: str) -> Reply:
    """Record the reviewer's slot as failed; if even that fails, the slot
    stays empty and the gate counts it as a missing review, and the hook
    says that nothing was kept."""
    if found is None:
        return None
    try:
        return _kept(
            found[0],
            found[1],
            reply=str(payload.get("last_assistant_message") or ""),
            agent_id=str(payload.get("agent_id") or "unknown"),
            transcript_path=str(payload.get("agent_transcript_path") or ""),
            failed=True,
            errors=[why],
        )
    except Exception as exc:
        return note(
            f"santa: the reply of agent {payload.get('agent_id')} could not be kept for round "
            f"{found[1]} of run {found[0]} ({type(exc).__name__}: {exc}); {why}"
        )


#: Every hook `santa hook NAME` runs; its help lists them from here.
HANDLERS = {
    "pretooluse-agent": pretooluse_agent,
    "pretooluse-guard": pretooluse_guard,
    "subagent-stop": subagent_stop,
}


def run_hook(name: str, raw: str | None) -> str:
    """Run hook `name` on Claude Code's JSON input; return what to print."""
    return answer(name, HANDLERS[name], raw)
