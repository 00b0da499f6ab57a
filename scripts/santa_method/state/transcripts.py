"""What a reviewer's own transcript shows it did.

The canary proves a reviewer saw the assignment's last line, but a Grep for
`santa-canary` finds that line without reading anything else. Claude Code's
transcript of the reviewer holds every Read it made and what came back,
with line numbers, so the helper can tell whether the whole assignment was
read, and whether the reviewer looked at santa's other run files (earlier
reviews, the store) it must not see.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# The Read tool numbers each line: "     12\ttext" (or "12→text" in some versions).
_NUMBERED_LINE = re.compile(r"^\s*(\d+)(?:\t|\u2192)(.*)$", re.MULTILINE)
_PATH_KEYS = ("file_path", "path", "notebook_path")


def read(path: str | Path) -> list[dict[str, Any]]:
    """A transcript's records (JSON Lines); damaged lines are skipped.

    Raises OSError or UnicodeDecodeError when the file cannot be read, so a
    caller can tell "no transcript" from "an empty one".
    """
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError, RecursionError):
            item = json.loads(line)
            if isinstance(item, dict):
                records.append(item)
    return records


def text_blocks(message: Any) -> list[str]:
    """The text parts of a message, whether its content is a string or blocks."""
    content = message.get("content") if isinstance(message, Mapping) else message
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        ]
    return []


def message_text(message: Any) -> str:
    return "\n".join(text_blocks(message))


def first_prompt(records: Iterable[Mapping[str, Any]]) -> str | None:
    """What the agent was first told: the text of its first user record."""
    for record in records:
        if record.get("type") == "user":
            return message_text(record.get("message")).strip()
    return None


def began(records: Iterable[Mapping[str, Any]]) -> str | None:
    """When the agent began, as Claude Code stamped its first record (ISO 8601)."""
    for record in records:
        stamp = record.get("timestamp")
        return stamp if isinstance(stamp, str) else None
    return None


def _blocks(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _result_text(block: Mapping[str, Any]) -> str:
    return message_text(block)


def tool_calls(records: Iterable[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any], str]]:
    """(tool name, input, result text) for every tool call in the transcript."""
    calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
    results: dict[str, str] = {}
    order: list[str] = []
    for record in records:
        for block in _blocks(record):
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                tool_input = block.get("input")
                calls[block["id"]] = (
                    str(block.get("name")),
                    tool_input if isinstance(tool_input, Mapping) else {},
                )
                order.append(block["id"])
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                results[block["tool_use_id"]] = _result_text(block)
    return [(calls[i][0], calls[i][1], results.get(i, "")) for i in order]


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError):
        return a == b


def _lines_read(records: Iterable[Mapping[str, Any]], assignment: str) -> dict[int, str]:
    """Line number -> text, for every line of the assignment a Read returned."""
    seen: dict[int, str] = {}
    for name, tool_input, result in tool_calls(records):
        if name == "Read" and _same_file(str(tool_input.get("file_path", "")), assignment):
            for number, text in _NUMBERED_LINE.findall(result):
                seen[int(number)] = text
    return seen


def unread_lines(
    records: Iterable[Mapping[str, Any]], assignment: str, total_lines: int
) -> list[tuple[int, int]]:
    """Line ranges of the assignment that no Read of it returned."""
    seen = _lines_read(records, assignment)
    gaps: list[tuple[int, int]] = []
    start = None
    for line in range(1, total_lines + 1):
        if line not in seen and start is None:
            start = line
        elif line in seen and start is not None:
            gaps.append((start, line - 1))
            start = None
    if start is not None:
        gaps.append((start, total_lines))
    return gaps


def first_changed_line(
    records: Iterable[Mapping[str, Any]], assignment: str, lines: list[str]
) -> int | None:
    """The first line the reviewer read that is not the assignment's line
    (the file was edited while it read, then put back), or None."""
    for number, text in sorted(_lines_read(records, assignment).items()):
        if number == len(lines) + 1 and not text.strip():
            continue  # the Read tool shows the empty line after a final newline
        if not 1 <= number <= len(lines):
            return number
        on_disk, seen = lines[number - 1].rstrip(), text.rstrip()
        # The Read tool may cut very long lines: a long enough prefix counts.
        if on_disk != seen and not (len(seen) >= 100 and on_disk.startswith(seen[:100])):
            return number
    return None


def peeked_files(
    records: Iterable[Mapping[str, Any]], santa_dir: str, assignment: str
) -> list[str]:
    """Paths under `.santa/` a reviewer's tools touched, other than its assignment."""
    base = Path(santa_dir).resolve()
    found = []
    for _name, tool_input, _result in tool_calls(records):
        for key in _PATH_KEYS:
            value = tool_input.get(key)
            if not isinstance(value, str) or not value:
                continue
            path = Path(value).resolve()
            if (path == base or base in path.parents) and not _same_file(value, assignment):
                found.append(value)
    return found


def describe_gaps(gaps: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in gaps[:5])
    return shown + (" and more" if len(gaps) > 5 else "")


def reply_facts(records: Iterable[Mapping[str, Any]]) -> tuple[str | None, float | None]:
    """The model that wrote a reviewer's replies (its last assistant message
    names it) and the seconds from its transcript's first record to its
    last, each None when the transcript does not say. What a person needs
    beside a reply to judge it: which model, and how long it looked."""
    from datetime import datetime

    model: str | None = None
    moments: list[datetime] = []
    for record in records:
        message = record.get("message")
        if record.get("type") == "assistant" and isinstance(message, Mapping):
            said = message.get("model")
            if isinstance(said, str) and said and not said.startswith("<"):
                model = said  # "<synthetic>" marks a message Claude Code wrote itself
        stamp = record.get("timestamp")
        if isinstance(stamp, str):
            with contextlib.suppress(ValueError):
                moment = datetime.fromisoformat(stamp)
                if moment.tzinfo is not None:
                    moments.append(moment)
    seconds = (max(moments) - min(moments)).total_seconds() if len(moments) > 1 else None
    return model, None if seconds is None else round(seconds, 3)
