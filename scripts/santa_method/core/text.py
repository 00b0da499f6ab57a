"""Text normalisation for matching quotes against the output under review.

Reviewers copy text imperfectly: curly quotes for straight ones, different
case, a line break where the output had a space, full-width forms. We match
on a normalised form: Unicode NFKC, case folded, typographic punctuation
mapped to ASCII, and all whitespace removed. Removing whitespace (rather
than collapsing it) is what makes matching work for languages written
without spaces, such as Chinese and Japanese, where a wrapped line must not
break a quote; for spaced languages it is strictly more tolerant than
collapsing, and a quote is still only "verified" if its characters occur in
order and contiguously in the output.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

_PUNCT = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2032": "'",
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
        "\u00a0": " ",
    }
)


# Long text is normalised a piece at a time, each piece ending at a line
# break: every step is exact across a line break (NFKC neither reorders nor
# composes across one, the others map one character at a time), and a piece
# this size stays in the processor's cache through all five passes, where a
# 30 MB text would go to memory and back for each.
_PIECE = 1 << 16


def normalise(text: str) -> str:
    """The matching form of `text` (see the module docstring)."""
    if len(text) <= _PIECE:
        return _normalise(text)
    return "".join(map(_normalise, line_pieces(text)))


def line_pieces(text: str) -> list[str]:
    """`text` cut after line breaks into pieces of about 64 KB (a longer
    line is a piece of its own); the normalised text is the concatenation
    of the normalised pieces."""
    pieces = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + _PIECE)
        end = len(text) if end < 0 else end + 1
        pieces.append(text[start:end])
        start = end
    return pieces


def _normalise(text: str) -> str:
    # `str.split` drops exactly the characters `str.isspace` calls whitespace, in C.
    return "".join(unicodedata.normalize("NFKC", text).translate(_PUNCT).casefold().split())


def words(text: str) -> str:
    """NFKC, case folded, punctuation mapped, whitespace collapsed to single spaces.

    Used where word boundaries matter (fuzzy comparison of wording).
    """
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT).casefold()
    return " ".join(text.split())


class Span(NamedTuple):
    """A place in normalised text (a NamedTuple: dataclasses cost the CLI's cold start)."""

    start: int
    end: int

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


@lru_cache(maxsize=8)
def _normalised_output(output: str) -> str:
    return normalise(output)


def find_spans(quote: str, output: str, limit: int = 64) -> tuple[Span, ...]:
    """Every place (in normalised coordinates) where `quote` occurs in `output`.

    An empty quote (after normalisation) occurs nowhere: it is no evidence.
    """
    needle = normalise(quote)
    if not needle:
        return ()
    haystack = _normalised_output(output)
    spans: list[Span] = []
    start = haystack.find(needle)
    while start != -1 and len(spans) < limit:
        spans.append(Span(start, start + len(needle)))
        start = haystack.find(needle, start + 1)
    return tuple(spans)


def quote_occurs(quote: str, output: str) -> bool:
    return bool(find_spans(quote, output, limit=1))


_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|\||>)")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+")


def _line_claims(text: str) -> list[str]:
    """Split text outside comments into claims: sentences of prose (a wrapped
    line continues its sentence), single lines of code, data rows and list
    items. Linear: a claim is gathered as a list of lines, joined once, so a
    block of a million indented lines (one claim) is not copied per line."""
    pieces: list[str] = []
    current: list[str] = []
    said = False  # whether `current` holds more than whitespace
    in_code = False
    # Line by line through pieces of the text (a piece ends after a line
    # break, so its lines are the text's): no list of every line at once.
    for line in (line for piece in line_pieces(text) for line in piece.splitlines(True)):
        fence_line = bool(_FENCE_LINE.match(line))
        blank = line.isspace()
        continues = (
            not in_code
            and not fence_line
            and said
            and not blank
            and not _BLOCK_START.match(line)
            and (line[:1].isspace() or line.lstrip()[:1].islower() or line.lstrip()[:1] in "`(\"'")
        )
        if continues:
            current.append(line)
            continue
        if current:
            pieces.append("".join(current))
        current, said = [line], not blank
        if fence_line:
            in_code = not in_code
    if current:
        pieces.append("".join(current))
    out: list[str] = []
    for piece in pieces:
        parts = _SENTENCE_END.split(piece)
        out.extend(parts[:-1])
        out.append(parts[-1])
    return out


def claim_spans(output: str) -> tuple[Span, ...]:
    """The output cut into claims (normalised coordinates, like `find_spans`).

    A claim is a sentence of prose, one line of code or data, or one hidden
    HTML comment (text slipped in whole). Two quotes inside one claim may be
    different parts of one statement; quotes in different claims never are.
    Empty when the pieces do not add up to the normalised output (then no
    claim is known and nothing joins by claim).
    """
    pieces: list[str] = []
    last = 0
    for match in _COMMENT.finditer(output):
        pieces.extend(_line_claims(output[last : match.start()]))
        pieces.append(match.group())
        last = match.end()
    pieces.extend(_line_claims(output[last:]))
    spans: list[Span] = []
    start = 0
    for piece in pieces:
        n = len(normalise(piece))
        if n:
            spans.append(Span(start, start + n))
            start += n
    if start != len(_normalised_output(output)):
        return ()
    return tuple(spans)
