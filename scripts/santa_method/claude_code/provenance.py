"""Claude Code transcript forensics: a stored reply is its own reviewer's, who read its assignment.

The reviewer hook stores a reply with the reviewer's transcript (copied into
the run folder). The gate checks that transcript again for runs whose
replies come from the hook (`hook`, and hook-stored replies of `files`
runs): its first message is the round's instruction and nothing else told
the reviewer anything, the reviewer read its whole assignment and none of
santa's other run files, and the stored reply is its final message. These
are the provenance checks of those sources (`CHECKS`), which `santa gate`
hands the gate (`state/sources.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from santa_method.state import sources, transcripts
from santa_method.state.model.run import Slot
from santa_method.state.paths import santa_dir
from santa_method.state.sources import Asked

message_text = transcripts.message_text


def _last_reply_forms(records: list[dict[str, Any]]) -> set[str]:
    """The ways the reviewer's final message can be written as one string.

    Claude Code writes one record per content block, all sharing the
    message's id; the final message is the last group with text.
    """
    groups: list[list[str]] = []
    last_id: object = object()
    for record in records:
        if record.get("type") != "assistant":
            last_id = object()
            continue
        message = record.get("message")
        msg_id = message.get("id") if isinstance(message, dict) else None
        blocks = [b for b in transcripts.text_blocks(message) if b.strip()]
        if groups and msg_id is not None and msg_id == last_id:
            groups[-1].extend(blocks)
        else:
            groups.append(blocks)
        last_id = msg_id if msg_id is not None else object()
    final = next((g for g in reversed(groups) if g), None)
    if final is None:
        return set()
    return {"\n".join(final).strip(), "".join(final).strip(), final[-1].strip()}


STOP_HOOK_FEEDBACK = "Stop hook feedback:"


def reading_problem(records: list[dict[str, Any]], assignment: str) -> str | None:
    """Why the transcript does not show the reviewer reading its whole
    assignment, and nothing else of santa's run files; None if it does."""
    try:
        lines = Path(assignment).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return "the round's assignment file cannot be read"
    changed = transcripts.first_changed_line(records, assignment, lines)
    if changed is not None:
        return (
            f"what the reviewer read differs from the round's assignment (line {changed}): "
            "the file was changed while it was being reviewed"
        )
    gaps = transcripts.unread_lines(records, assignment, len(lines))
    if gaps:
        return (
            f"the reviewer did not read the whole assignment (lines {transcripts.describe_gaps(gaps)} "
            "unread); read it to the end with the Read tool"
        )
    peeked = transcripts.peeked_files(records, str(santa_dir()), assignment)
    if peeked:
        return f"the reviewer looked at santa's run files besides its assignment ({peeked[0]})"
    return None


def _told_more(record: dict[str, Any]) -> bool:
    """Whether a later user record tells the reviewer something: only tool
    results and our own stop-hook feedback may follow the instruction."""
    if record.get("type") != "user":
        return False
    text = message_text(record.get("message")).strip()
    if not text:
        return False
    return not (record.get("isMeta") is True and text.startswith(STOP_HOOK_FEEDBACK))


def transcript_problem(
    path: str,
    instruction: str,
    reply: str,
    agent_id: str | None = None,
    *,
    require_agent_id: bool = False,
    assignment: str | None = None,
) -> str | None:
    """Why a stored reply cannot be trusted as this reviewer's own, or None.

    The transcript's first message is the prompt the reviewer was given; it
    must be the round's instruction. The reply must be the reviewer's own
    final message in that transcript, so no one else's text (and no earlier
    draft) can stand in for it.
    """
    if not path:
        return "no transcript was recorded for this reply"
    try:
        records = transcripts.read(path)
    except (OSError, UnicodeDecodeError):
        return "the reviewer's transcript cannot be read"
    messages = [r for r in records if r.get("type") in ("user", "assistant")]
    if not messages:
        return "the reviewer's transcript is empty"
    if agent_id and any(
        isinstance(r.get("agentId"), str) and r["agentId"] != agent_id for r in records
    ):
        return "the transcript belongs to another agent"
    first = messages[0]
    if require_agent_id and (not agent_id or first.get("agentId") != agent_id):
        # Claude Code stamps a subagent's transcript with its agent id.
        return "the transcript is not the transcript of this reviewer agent"
    if first.get("type") != "user" or message_text(first.get("message")).strip() != instruction:
        return "the reviewer's transcript does not start with this round's instruction"
    if require_agent_id and any(_told_more(r) for r in messages[1:]):
        return "the reviewer was sent messages besides its instruction (e.g. SendMessage)"
    if assignment is not None:
        problem = reading_problem(records, assignment)
        if problem:
            return problem
    if not reply.strip():
        return "the stored reply is empty"
    if reply.strip() not in _last_reply_forms(messages):
        return "the stored reply is not the reviewer's final reply in its transcript"
    return None


def _stored_reply_problem(asked: Asked, slot: Slot) -> str | None:
    return transcript_problem(
        slot.transcript_path,
        asked.instruction,
        slot.reply,
        slot.agent_id,
        require_agent_id=True,
        assignment=asked.assignment,
    )


def hook_provenance(asked: Asked, slot: Slot) -> str | None:
    """`hook` runs: only replies the reviewer hook stored, each checked against its transcript."""
    if slot.agent_id is None:
        return "the reply did not come through the reviewer hook"
    return _stored_reply_problem(asked, slot)


def files_provenance(asked: Asked, slot: Slot) -> str | None:
    """`files` runs: review files (the gate checks them further), and hook-stored replies."""
    if slot.agent_id is None:
        return None
    return _stored_reply_problem(asked, slot)


#: What `santa gate` vouches with: the runs Claude Code's hooks (or review files) fill.
CHECKS: sources.Checks = {"hook": hook_provenance, "files": files_provenance}
