"""Where a reviewer's quote stands in the output, and what a fix changed.

Why here and not in `core.text`: the gate only needs to know *whether* a
quote occurs (in normalised text); a person looking at the output needs to
see *where*, in the text as it was written. The same normalisation is used
(`core.text.normalise`, applied character by character), so a quote the
gate verified is found here too, curly quotes, case and line breaks
notwithstanding.
"""

from __future__ import annotations

import difflib
import functools
import itertools
from collections.abc import Sequence

from santa_method.core.text import normalise

#: Lines of unchanged text kept around each change in a diff.
CONTEXT = 3
#: At most this many places are marked for one quote.
MAX_PLACES = 20


class Located:
    """An output with its normalised form and the map back to the original,
    built once per output and shared by all the quotes of its round, and
    only when a quote is not found as it stands (most are)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def _normalised(self) -> tuple[str, list[int]]:
        chars: list[str] = []
        origin: list[int] = []
        for index, char in enumerate(self.text):
            for part in normalise(char):
                chars.append(part)
                origin.append(index)
        return "".join(chars), origin

    def spans(self, quote: str) -> list[tuple[int, int]]:
        """Every place `quote` occurs, as (start, end) offsets in the original text."""
        if not quote or not quote.strip():
            return []
        found = _exact(quote, self.text)
        if found:
            return found
        needle = normalise(quote)
        if not needle:
            return []
        normalised, origin = self._normalised
        spans: list[tuple[int, int]] = []
        start = normalised.find(needle)
        while start != -1 and len(spans) < MAX_PLACES:
            end = start + len(needle) - 1
            spans.append((origin[start], origin[end] + 1))
            start = normalised.find(needle, start + len(needle))
        return spans


def _exact(quote: str, text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = text.find(quote)
    while start != -1 and len(spans) < MAX_PLACES:
        spans.append((start, start + len(quote)))
        start = text.find(quote, start + len(quote))
    return spans


def line_diff(before: str, after: str, context: int = CONTEXT) -> list[list[str]]:
    """What changed, line by line: `[op, line]` with op ` ` (kept), `-`, `+`,
    or `~` (a run of unchanged lines left out; the line says how many)."""
    if before == after:
        return []
    a = before.splitlines()
    b = after.splitlines()
    ops: list[list[str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    last = 0
    for group in matcher.get_grouped_opcodes(context):
        first = group[0][1]
        if first > last:
            ops.append(["~", _skipped(first - last)])
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                ops.extend([" ", line] for line in a[i1:i2])
                continue
            ops.extend(["-", line] for line in a[i1:i2])
            ops.extend(["+", line] for line in b[j1:j2])
        last = group[-1][2]
    if ops and last < len(a):
        ops.append(["~", _skipped(len(a) - last)])
    return ops


def _skipped(n: int) -> str:
    return f"{n} unchanged line{'s' if n != 1 else ''}"


def merge_spans(spans: Sequence[tuple[int, int, int]]) -> list[tuple[int, int, list[int]]]:
    """Overlapping marks (start, end, problem number) cut into pieces that each
    list every problem covering them, so nested quotes stay readable."""
    cuts = sorted({p for s, e, _ in spans for p in (s, e)})
    pieces: list[tuple[int, int, list[int]]] = []
    for start, end in itertools.pairwise(cuts):
        covering = sorted({n for s, e, n in spans if s <= start and end <= e})
        if covering:
            if pieces and pieces[-1][1] == start and pieces[-1][2] == covering:
                pieces[-1] = (pieces[-1][0], end, covering)
            else:
                pieces.append((start, end, covering))
    return pieces
