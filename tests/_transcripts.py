"""Reviewer transcripts as Claude Code writes them, for tests that store
replies the way the hooks do.

Why one helper: the gate trusts a stored reply only if the reviewer's own
transcript shows it (stamped with its agent id), starting with the round's
instruction, reading the whole assignment with the Read tool, and ending
with the reply. Tests that fake a reviewer must fake all of that, or they
prove a refusal for the wrong reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_records(assignment: str | Path, tool_id: str = "toolu_read_1") -> list[dict[str, Any]]:
    """The reviewer's Read of its assignment and what came back: every line,
    numbered as the Read tool numbers them ("12<TAB>text")."""
    text = Path(assignment).read_text(encoding="utf-8")
    numbered = "\n".join(f"{n}\t{line}" for n, line in enumerate(text.splitlines(), 1))
    return [
        {
            "type": "assistant",
            "message": {
                "id": f"msg_{tool_id}",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "Read",
                        "input": {"file_path": str(assignment)},
                    }
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": numbered}],
            },
        },
    ]


def reply_record(
    text: str, *, model: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A final reply; with `model` and `usage` as the API answered them
    (Claude Code copies both into the transcript)."""
    message: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    if model is not None:
        message["model"] = model
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "message": message}


def usage(input: int, output: int, cache_read: int = 0, cache_write: int = 0) -> dict[str, int]:
    """A message's `usage` as the Messages API reports it."""
    return {
        "input_tokens": input,
        "output_tokens": output,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


def reviewer_records(
    prompt: str,
    *replies: str,
    agent_id: str | None = None,
    assignment: str | Path | None = None,
    started: str | None = None,
    model: str | None = None,
    usage: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The prompt first, then the Read of `assignment` (when given), then the
    replies in order; every record stamped with `agent_id` when given, and
    with `started` as its `timestamp` (when the reviewer began) when given;
    every assistant message (each one model call) with `model` and `usage`
    when given."""
    records: list[dict[str, Any]] = [
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": prompt}},
        {"type": "attachment"},
    ]
    if assignment is not None:
        records.extend(read_records(assignment))
    records.extend(reply_record(text) for text in replies)
    for record in records:
        if record["type"] == "assistant":
            said = {"model": model, "usage": usage}
            record["message"].update({k: v for k, v in said.items() if v is not None})
    if agent_id is not None:
        records = [{**record, "agentId": agent_id} for record in records]
    if started is not None:
        records = [{**record, "timestamp": started} for record in records]
    return records


def write_transcript(path: Path, records: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def reviewer_transcript(
    path: Path,
    prompt: str,
    *replies: str,
    agent_id: str | None = None,
    assignment: str | Path | None = None,
    started: str | None = None,
    model: str | None = None,
    usage: dict[str, Any] | None = None,
) -> str:
    """Write a reviewer's transcript (JSON Lines) and return its path."""
    return write_transcript(
        path,
        reviewer_records(
            prompt,
            *replies,
            agent_id=agent_id,
            assignment=assignment,
            started=started,
            model=model,
            usage=usage,
        ),
    )
