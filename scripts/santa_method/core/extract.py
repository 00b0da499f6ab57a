"""Find the verdict object in a reviewer's raw reply.

Reviewers wrap JSON in prose and code fences. The rule (ARCHITECTURE.md,
"Extraction"): the verdict is a top-level JSON object of the reply, the last
complete one, and only if nothing after it starts another object or fence,
and no other review in the reply disagrees with it (a FAIL then a PASS is
ambiguous, not a PASS: `core/ambiguity.py` looks for one). We never repair JSON; we say what is wrong in words a reviewer can act on.

The scan is linear: at each `{` outside any object that could open a JSON
object we find its matching brace (honouring strings) and decode only that
slice; a complete object is skipped whole (so objects nested inside it are
never candidates), a broken one is skipped to its matching brace, and an
unterminated one runs to the end of the reply. Decoding the slice rather
than the whole reply matters: a failed decode locates its error by counting
lines from the start of the string it was given, which over a long reply
full of prose braces turned the scan quadratic.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from santa_method.core.ambiguity import disagreement

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+-]*)[ \t]*$", re.MULTILINE)
# A brace that opens a line after the verdict object may start a newer review.
_LINE_BRACE = re.compile(r"^[ \t]*\{", re.MULTILINE)
# An object starts with a key or closes at once; anything else after "{" is
# prose. A "{" with nothing but whitespace after it is an object cut off at
# its start (a truncated reply), not prose.
_JSONISH = re.compile(r"\{\s*(?:[\"'}]|\Z)")
# Structural characters for the brace matcher, and the rest of a JSON string
# after its opening quote (possessive, so an unterminated string costs O(n)).
_STRUCTURAL = re.compile(r'[{}"]')
_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
# Brackets of an array of objects: a run of "[" opens arrays only when an
# object follows it, and a run of "]" closes them only right after an
# object's "}". Brackets in prose ("the range [0, n)", "see [1]", "[[link]]")
# do neither, so they never put the review "inside an array".
_OPEN_RUN = re.compile(r"\[[\s\[]*")
_CLOSE_RUN = re.compile(r"\}[\s\]]*")
_LEADING_CLOSES = re.compile(r"[\s\]]*")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Refuse duplicate keys: `{"verdict": "FAIL", ..., "verdict": "PASS"}`
    says two things, and the last one must not silently win."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any) -> Any:
    """Lone surrogates (`"\\ud800"` in JSON) cannot be written as UTF-8: they
    would crash every file the review reaches. They carry no meaning, so they
    become U+FFFD here, where untrusted text enters."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


class Extracted(NamedTuple):  # not a dataclass: its import costs the CLI's cold start
    obj: dict[str, Any] | None
    error: str | None
    #: The reply's object is nested past what a parser can follow: for a
    #: reviewer, a reply to hand back; for a file a person names, bad input.
    too_deep: bool = False


class _Lines:
    """Line and column of increasing positions in one text, counted
    incrementally so that locating many broken objects stays linear."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._line = 1
        self._line_start = 0

    def at(self, pos: int) -> tuple[int, int]:
        if pos >= self._pos:
            newlines = self._text.count("\n", self._pos, pos)
            if newlines:
                self._line += newlines
                self._line_start = self._text.rfind("\n", self._pos, pos) + 1
            self._pos = pos
        return self._line, pos - self._line_start + 1


def _matching_brace(text: str, start: int) -> int | None:
    """Index just past the brace that closes the one at `start`, honouring
    JSON strings; None if the reply ends first (a truncated object)."""
    depth = 0
    pos = start
    while True:
        found = _STRUCTURAL.search(text, pos)
        if found is None:
            return None
        if found.group() == '"':
            rest = _STRING_REST.match(text, found.end())
            if rest is None:
                return None
            pos = rest.end()
            continue
        depth += 1 if found.group() == "{" else -1
        pos = found.end()
        if depth == 0:
            return pos


def _array_brackets(text: str, pos: int, end: int) -> int:
    """How many arrays of objects open, less how many close, in
    text[pos:end], the prose between two objects (or before the first)."""
    change = sum(
        run.group().count("[")
        for run in _OPEN_RUN.finditer(text, pos, end)
        if text.startswith("{", run.end())
    )
    lead = _LEADING_CLOSES.match(text, pos, end)
    if lead and pos and text[pos - 1] == "}":  # right after the object before
        change -= lead.group().count("]")
    return change - sum(run.group().count("]") for run in _CLOSE_RUN.finditer(text, pos, end))


def extract_verdict_object(reply: str) -> Extracted:
    text = reply.lstrip("\ufeff")
    if not text.strip():
        return Extracted(None, "the reply is empty; send the review as one JSON object")

    complete: list[tuple[int, int, Any]] = []
    broken: list[tuple[int, str]] = []  # (start, what is wrong)
    deep: set[int] = set()  # the starts of objects nested too deeply
    lines = _Lines(text)
    in_array: list[int] = []
    nested: list[Any] = []  # what the objects inside arrays decode to, if anything
    depth = 0
    pos = 0
    while True:
        opening = _JSONISH.search(text, pos)
        if opening is None:
            # Any other "{" is a brace in prose ("a {placeholder}"), not an object.
            break
        start = opening.start()
        close = _matching_brace(text, start)
        if close is None:
            broken.append(
                (
                    start,
                    f"the JSON object starting on line {lines.at(start)[0]} is cut off "
                    "before its closing brace (the reply looks truncated)",
                )
            )
            break
        # Brackets between objects: an object opened inside an unclosed "["
        # is an array element, never the reply's top-level verdict.
        depth = max(0, depth + _array_brackets(text, pos, start))
        if depth:
            in_array.append(start)
            nested.append(_decoded(text[start:close]))
            pos = close
            continue
        try:
            # _clean recurses: a value json.loads can build may still be too deep for it.
            value = _clean(json.loads(text[start:close], object_pairs_hook=_unique_keys))
        except _DuplicateKey as exc:
            broken.append(
                (
                    start,
                    f"the JSON object on line {lines.at(start)[0]} gives the key '{exc}' "
                    "more than once",
                )
            )
        except json.JSONDecodeError as exc:
            line, column = lines.at(start)
            where = (
                f"line {line} column {column + exc.colno - 1}"
                if exc.lineno == 1
                else f"line {line + exc.lineno - 1} column {exc.colno}"
            )
            broken.append(
                (start, f"the JSON object on line {line} is not valid JSON: {exc.msg} at {where}")
            )
        except RecursionError:
            deep.add(start)
            broken.append(
                (
                    start,
                    f"the JSON object on line {lines.at(start)[0]} is nested too deeply "
                    "to be a review",
                )
            )
        else:
            complete.append((start, close, value))
        pos = close

    if not complete:
        if broken:
            return Extracted(
                None,
                broken[-1][1] + "; send the whole review as one valid JSON object",
                too_deep=broken[-1][0] in deep,
            )
        if in_array:
            return Extracted(
                None,
                "the review is inside a JSON array; send it as one top-level JSON object",
            )
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
    if any(at > end for at in in_array):
        return Extracted(
            None,
            "a JSON array of objects follows the last JSON object; end the reply with "
            "exactly one top-level JSON object",
        )
    brace = _LINE_BRACE.search(text, end)
    if brace:
        # Fail closed: a brace after the verdict may be the start of a newer,
        # cut-off review; the reply must end with the one it means.
        return Extracted(
            None,
            f"something that may start another JSON object follows the last complete one "
            f"(a '{{' opening line {_line_of_text(text, brace.end())}); end the reply with "
            "exactly one complete JSON object and nothing after it but a closing fence",
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
    if not isinstance(value, dict):  # pragma: no cover - a slice from "{" to "}" decodes to a dict
        return Extracted(None, "the review must be a JSON object")
    conflict = _disagreeing(complete, text) or disagreement(
        value, text, (start, end), [v for _, _, v in complete[:-1]] + nested
    )
    if conflict:
        return Extracted(None, conflict)
    return Extracted(value, None)


def _decoded(slice_: str) -> Any:
    """An object that is only looked into for verdicts: None if it does not decode."""
    try:
        return json.loads(slice_)
    except (ValueError, RecursionError):
        return None


def _verdict_and_checks(value: Any) -> tuple[str | None, dict[str, str]] | None:
    """What a top-level object says, if it reads as a review: its verdict and
    each criterion's result. None for objects that are not reviews."""
    if not isinstance(value, dict) or not ({"verdict", "checks"} & value.keys()):
        return None
    verdict = value.get("verdict")
    results: dict[str, str] = {}
    checks = value.get("checks")
    for item in checks if isinstance(checks, list) else ():
        if isinstance(item, dict) and isinstance(item.get("criterion"), str):
            results.setdefault(item["criterion"].strip(), str(item.get("result")).strip().upper())
    return (str(verdict).strip().upper() if verdict is not None else None), results


def _disagreeing(complete: list[tuple[int, int, Any]], text: str) -> str | None:
    """A reply holding two reviews that say different things is ambiguous:
    which one the reviewer meant is not for the helper to guess (a FAIL then a
    PASS must not count as PASS because the PASS came last). Reviews that
    agree (an example, then the real review with the same verdict) are fine."""
    last_start, _, last = complete[-1]
    final = _verdict_and_checks(last)
    if final is None:
        return None
    for start, _, value in complete[:-1]:
        earlier = _verdict_and_checks(value)
        if earlier is None:
            continue
        verdicts = {v for v in (earlier[0], final[0]) if v is not None}
        clash = sorted(
            c for c in earlier[1].keys() & final[1].keys() if earlier[1][c] != final[1][c]
        )
        if len(verdicts) > 1 or clash:
            what = (
                f"verdict {earlier[0]} on line {_line_of_text(text, start)}, "
                f"{final[0]} on line {_line_of_text(text, last_start)}"
                if len(verdicts) > 1
                else f"{clash[0]} is {earlier[1][clash[0]]} in the object on line "
                f"{_line_of_text(text, start)}, {final[1][clash[0]]} in the one on line {_line_of_text(text, last_start)}"
            )
            return (
                f"the reply holds more than one review and they disagree ({what}); "
                "it is ambiguous: send exactly one review as one JSON object"
            )
    return None


def _line_of_text(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1
