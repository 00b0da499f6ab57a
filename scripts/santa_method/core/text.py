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

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

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


def normalise(text: str) -> str:
    """The matching form of `text` (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT).casefold()
    return "".join(ch for ch in text if not ch.isspace())


def words(text: str) -> str:
    """NFKC, case folded, punctuation mapped, whitespace collapsed to single spaces.

    Used where word boundaries matter (fuzzy comparison of wording).
    """
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT).casefold()
    return " ".join(text.split())


@dataclass(frozen=True)
class Span:
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
