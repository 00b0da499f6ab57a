"""A big output is gated like a small one: every step on the gate's path is
linear in the output's size (bench/gate_size.py measures how fast).

The optimised steps are held to their plain definitions (normalising a
text whole, cutting it into claims line by line, placing a quote by
normalising every line), on texts whose pieces are made tiny so that every
boundary between them is crossed; and one run over an 8 MB data file (one
claim of 200,000 indented lines) is opened and gated, each command in a
child process under a CPU limit far above what it needs (a second or two):
the quadratic claim cutting took hours there, and a regression fails
instead of hanging.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _reviews import BASE_IDS, review_reply
from santa_method.core import locate, text

# Characters that make normalising hard at a piece's edge: line breaks of
# every kind, combining marks (which NFKC reorders and composes), letters
# that fold to two (ß), compatibility forms, typographic punctuation, spaces.
_TRICKY = st.sampled_from(
    list("\n\r\x0b\x0c\x1c\x85\u2028 \t\u00a0\u3000")
    + list("aAzß\u0301\u0327\u0323e\u00e9\u1e9e\ufb01\uff21\u2460\u201c\u2014\u2026#-*|>`(")
)
_TEXT = st.lists(_TRICKY, max_size=200).map("".join)


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "_PIECE", 3)
    text._normalised_output.cache_clear()
    locate._line_index.cache_clear()


def _plain_normalise(value: str) -> str:
    folded = unicodedata.normalize("NFKC", value).translate(text._PUNCT).casefold()
    return "".join(ch for ch in folded if not ch.isspace())


def _plain_claims(value: str) -> list[str]:
    """The claims as first defined: the lines of a claim added to one string."""
    pieces: list[str] = []
    current = ""
    in_code = False
    for line in value.splitlines(keepends=True):
        fence_line = bool(text._FENCE_LINE.match(line))
        continues = (
            not in_code
            and not fence_line
            and current.strip() != ""
            and line.strip() != ""
            and not text._BLOCK_START.match(line)
            and (line[:1].isspace() or line.lstrip()[:1].islower() or line.lstrip()[:1] in "`(\"'")
        )
        if continues:
            current += line
            continue
        if current:
            pieces.append(current)
        current = line
        if fence_line:
            in_code = not in_code
    if current:
        pieces.append(current)
    out: list[str] = []
    for piece in pieces:
        parts = text._SENTENCE_END.split(piece)
        out.extend(parts[:-1])
        out.append(parts[-1])
    return out


def _plain_lines(quote: str, value: str) -> tuple[int, int] | None:
    """The lines of a quote as first defined: every line normalised, the
    match's first and last character each on the last line starting at or
    before it."""
    needle = _plain_normalise(quote)
    if not needle:
        return None
    starts, offset = [], 0
    for line in value.split("\n"):
        starts.append(offset)
        offset += len(_plain_normalise(line))
    joined = _plain_normalise(value.replace("\n", " "))
    found = joined.find(needle)
    if found < 0:
        return None

    def line_of(at: int) -> int:
        return max(i for i, s in enumerate(starts) if s <= at) + 1

    return line_of(found), line_of(found + len(needle) - 1)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_TEXT)
def test_normalising_in_pieces_is_normalising_whole(tiny_pieces: None, value: str) -> None:
    assert text.normalise(value) == _plain_normalise(value)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_TEXT)
def test_claims_are_cut_as_first_defined(tiny_pieces: None, value: str) -> None:
    assert text._line_claims(value) == _plain_claims(value)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_TEXT, data=st.data())
def test_a_quote_is_placed_as_first_defined(tiny_pieces: None, value: str, data) -> None:
    start = data.draw(st.integers(0, len(value)))
    quote = value[start : data.draw(st.integers(start, len(value)))]
    locate._line_index.cache_clear()
    assert locate.quote_lines(quote, value) == _plain_lines(quote, value)


# --- an 8 MB output, end to end ------------------------------------------------

# CPU seconds each command may use: the 8 MB run needs one or two; the
# quadratic claim cutting needed hours.
_CPU = 60


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (_CPU, _CPU))


def _santa(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "santa_method", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=_limited,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


@pytest.mark.slow
def test_an_8_mb_data_file_is_opened_gated_and_placed(santa_project: Path) -> None:
    rows = [
        f'    "record-{i:06d}": {{"value": {i % 9973}, "unit": "kg"}},\n' for i in range(200_000)
    ]
    data = "# Records\n\nThe records below are exported nightly.\n\n{\n" + "".join(rows) + "}\n"
    assert len(data) > 8_000_000
    (santa_project / "data.md").write_text(data, encoding="utf-8")
    (santa_project / "spec.md").write_text("Export every record.\n", encoding="utf-8")
    opened = _santa(
        santa_project,
        "round",
        "start",
        "--against",
        "data.md",
        "--spec",
        "spec.md",
        "--source",
        "files",
        "--json",
    )
    assert opened.returncode == 0, opened.stderr
    start = json.loads(opened.stdout)
    issue = {
        "criterion": "factual-accuracy",
        "issue": "Record 199998 has the wrong value",
        "quote": f'"record-199998": {{"value": {199998 % 9973}',
    }
    for label, detail in (("b", "first"), ("c", "second")):
        (santa_project / f"{label}.json").write_text(
            review_reply(
                BASE_IDS, (issue,), detail=detail, suggestions=None, canary=start["canary"]
            ),
            encoding="utf-8",
        )
    gated = _santa(santa_project, "gate", "--run", start["run_id"], "b.json", "c.json", "--json")
    assert gated.returncode == 1, gated.stderr
    verdict = json.loads(gated.stdout)
    assert verdict["verdict"] == "NAUGHTY" and len(verdict["issues"]) == 1
    assert verdict["issues"][0]["evidence"] == "verified"
    # Where a report puts it (the report itself also redacts the whole output,
    # linear but slow, so it is not run here).
    places = locate.places_of(verdict["issues"][0], data, ["data.md"], diff=False)
    assert [p.to_json() for p in places] == [
        {"path": "data.md", "start_line": 200_004, "end_line": 200_004}
    ]
