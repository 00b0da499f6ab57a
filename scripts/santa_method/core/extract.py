"""Find the verdict object in a reviewer's raw reply.

Reviewers wrap JSON in prose and code fences. The rule (DESIGN.md,
"Extraction"): the verdict is a top-level JSON object of the reply, the last
complete one, and only if nothing after it starts another object or fence.
We never repair JSON; we say what is wrong in words a reviewer can act on.

The scan is linear: at each `{` outside any object we try to decode; a
complete object is skipped whole (so objects nested inside it are never
candidates), a broken one is skipped to its matching brace, and an
unterminated one runs to the end of the reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+-]*)[ \t]*$", re.MULTILINE)
_DECODER = json.JSONDecoder()
# An object starts with a key or closes at once; anything else after "{" is prose.
_JSONISH = re.compile(r"\{\s*[\"'}]")


@dataclass(frozen=True)
class Extracted:
    obj: dict[str, Any] | None
    error: str | None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _matching_brace(text: str, start: int) -> int | None:
    """Index just past the brace that closes the one at `start`, honouring
    JSON strings; None if the reply ends first (a truncated object)."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def extract_verdict_object(reply: str) -> Extracted:
    text = reply.lstrip("\ufeff")
    if not text.strip():
        return Extracted(None, "the reply is empty; send the review as one JSON object")

    complete: list[tuple[int, int, Any]] = []
    broken: list[tuple[int, str]] = []  # (start, what is wrong)
    pos = 0
    while True:
        start = text.find("{", pos)
        if start == -1:
            break
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if not _JSONISH.match(text, start):
                # A brace in prose ("a {placeholder}"), not the start of an object.
                pos = start + 1
                continue
            close = _matching_brace(text, start)
            if close is None:
                broken.append(
                    (
                        start,
                        f"the JSON object starting on line {_line_of(text, start)} is cut off "
                        "before its closing brace (the reply looks truncated)",
                    )
                )
                break
            broken.append(
                (
                    start,
                    f"the JSON object on line {_line_of(text, start)} is not valid JSON: "
                    f"{exc.msg} at line {exc.lineno} column {exc.colno}",
                )
            )
            pos = close
            continue
        complete.append((start, end, value))
        pos = end

    if not complete:
        if broken:
            return Extracted(None, broken[-1][1] + "; send the whole review as one valid JSON object")
        return Extracted(None, "the reply holds no JSON object; send the review as one JSON object")

    start, end, value = complete[-1]
    later = [msg for s, msg in broken if s > start]
    if later:
        return Extracted(
            None,
            "after the last complete JSON object another object starts and is not complete: "
            + later[0]
            + "; end the reply with exactly one complete JSON object",
        )
    fences_before = len(_FENCE.findall(text, 0, start))
    fences_after = _FENCE.findall(text, end)
    # An odd count before means the object sits inside a fence whose closing
    # line comes after it; any further fence opens something new.
    allowed_after = 1 if fences_before % 2 == 1 else 0
    if len(fences_after) > allowed_after:
        return Extracted(
            None,
            "a new code fence starts after the last JSON object; end the reply with the "
            "review's JSON object and nothing after it but a closing fence",
        )
    if not isinstance(value, dict):  # pragma: no cover - raw_decode at "{" yields a dict
        return Extracted(None, "the review must be a JSON object")
    return Extracted(value, None)
