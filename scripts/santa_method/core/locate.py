"""Where a quote stands: the line of a file, or the changed file and line of a diff.

Why here: CI tools (SARIF, Code Climate, review comments) place a problem
on a file and a line, while reviewers quote text. A quote is found the way
the gate verifies it (`core.text.normalise`: case, typography and
whitespace do not matter), and since normalising removes line breaks, the
normalised text of a whole file is the concatenation of its normalised
lines, so a match maps back to lines exactly.

For a diff (the working tree against a revision) the reviewers saw a
unified diff; a quote is placed on the changed file and its line in the
new version. Reviewers often drop the `+` of each line when quoting several
lines, so a quote not found in the diff as written is looked up in the new
side of each file's hunks. A quote from a removed line points at the new
line where the removal happened; a deleted file, at the file.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

from santa_method.core.text import line_pieces, normalise

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Place:
    """A problem's place: a file (relative path) and, when known, its lines (1-based)."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line}


def quote_lines(quote: str, text: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of `quote`'s first occurrence in `text`."""
    return _lines_in(quote, _line_index(text))


class _Index(NamedTuple):
    """A text's normalised form, and where each of its pieces (`line_pieces`)
    starts, in lines of the text and in the normalised form."""

    pieces: list[str]
    first_lines: list[int]
    starts: list[int]
    joined: str


def _index(text: str) -> _Index:
    pieces = line_pieces(text) if text else [""]
    first_lines: list[int] = []
    starts: list[int] = []
    normalised: list[str] = []
    line = offset = 0
    for piece in pieces:
        first_lines.append(line)
        starts.append(offset)
        normalised.append(normalise(piece))
        line += piece.count("\n")
        offset += len(normalised[-1])
    return _Index(pieces, first_lines, starts, "".join(normalised))


# Built once per text, not once per quote: a report places every quote of
# every problem in one output.
_line_index = lru_cache(maxsize=8)(_index)


def _lines_in(quote: str, index: _Index) -> tuple[int, int] | None:
    needle = normalise(quote or "")
    if not needle:
        return None
    found = index.joined.find(needle)
    if found < 0:
        return None
    return _line_of(index, found) + 1, _line_of(index, found + len(needle) - 1) + 1


def _line_of(index: _Index, at: int) -> int:
    """The line (0-based) that holds character `at` of the normalised text:
    the last line starting at or before it (blank lines normalise to nothing,
    so the one a character belongs to is the last of those sharing its
    start). Only the piece holding it is normalised line by line."""
    piece = bisect.bisect_right(index.starts, at) - 1
    lines = index.pieces[piece].split("\n")
    starts = list(accumulate((len(normalise(line)) for line in lines[:-1]), initial=0))
    offset = index.starts[piece]
    return index.first_lines[piece] + bisect.bisect_right(starts, at - offset) - 1


@dataclass
class DiffFile:
    """One file of a unified diff: its new path (old path when deleted) and,
    for each line of the diff that belongs to it, the new-version line."""

    path: str
    deleted: bool = False
    # (index of the line in the diff, kind ' ', '+' or '-', new line number)
    rows: list[tuple[int, str, int]] = field(default_factory=list)
    first_row: int = 0
    last_row: int = 0


def _path_of(header: str) -> str | None:
    name = header[4:].rstrip("\n")
    if "\t" in name:
        name = name.split("\t", 1)[0]
    if name == "/dev/null":
        return None
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        name = name.encode("latin-1", "replace").decode("utf-8", "replace")
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_diff(diff: str) -> list[DiffFile]:
    """The files of a `git diff` (several concatenated diffs allowed)."""
    files: list[DiffFile] = []
    lines = diff.split("\n")
    current: DiffFile | None = None
    old: str | None = None
    new_line = 0
    in_hunk = False
    for index, line in enumerate(lines):
        if line.startswith("diff --git "):
            current = DiffFile(path=_git_header_path(line), first_row=index, last_row=index)
            files.append(current)
            in_hunk = False
            old = None
            continue
        if current is None:
            continue
        current.last_row = index
        if not in_hunk and line.startswith("--- "):
            old = _path_of(line)
            continue
        if not in_hunk and line.startswith("+++ "):
            new = _path_of(line)
            current.path = new or old or current.path
            current.deleted = new is None
            continue
        if not in_hunk and line.startswith("deleted file mode"):
            current.deleted = True
            continue
        match = _HUNK.match(line)
        if match:
            in_hunk = True
            new_line = int(match.group(1))
            continue
        if not in_hunk:
            continue
        if not line or line[0] not in " +-\\":
            in_hunk = False  # the hunk is over (e.g. git's "index" or mode lines follow)
            continue
        kind = line[0]
        if kind == "\\":  # "\ No newline at end of file"
            continue
        # A removed line sits where the next new line is; the others are that line.
        current.rows.append((index, kind, max(new_line, 1)))
        if kind != "-":
            new_line += 1
    return files


def _git_header_path(line: str) -> str:
    rest = line[len("diff --git ") :]
    half = rest.split(" b/", 1)
    return half[1] if len(half) == 2 else rest.split(" ")[-1].removeprefix("b/")


def locate_in_diff(quote: str, diff: str) -> Place | None:
    """The changed file and new-version line of `quote` in `diff`, or None."""
    files, sides = _diff_index(diff)
    if not files:
        return None
    found = quote_lines(quote, diff)
    if found is not None:
        first, last = found[0] - 1, found[1] - 1
        for f in files:
            if f.first_row <= first <= f.last_row:
                return _place_rows(f, first, last)
    # Quoted without the diff's line prefixes: look in each file's new side.
    for f, (kept, kept_index, gone, gone_index) in zip(files, sides, strict=True):
        spot = _lines_in(quote, kept_index) if kept else None
        if spot is not None:
            return Place(f.path, kept[spot[0] - 1], kept[spot[1] - 1])
        spot = _lines_in(quote, gone_index) if gone else None
        if spot is not None:
            return Place(f.path) if f.deleted else Place(f.path, gone[spot[0] - 1])
    return None


_Side = tuple[list[int], _Index, list[int], _Index]


@lru_cache(maxsize=4)
def _diff_index(diff: str) -> tuple[list[DiffFile], list[_Side]]:
    """A diff's files, and for each the index of its kept and of its removed
    lines (without their prefix) with each line's new line number: parsed
    once per diff, not once per quote."""
    files = parse_diff(diff)
    lines = diff.split("\n")
    sides: list[_Side] = []
    for f in files:
        kept = [(i, n) for i, kind, n in f.rows if kind != "-"]
        gone = [(i, n) for i, kind, n in f.rows if kind == "-"]
        sides.append(
            (
                [n for _, n in kept],
                _index("\n".join(lines[i][1:] for i, _ in kept)),
                [n for _, n in gone],
                _index("\n".join(lines[i][1:] for i, _ in gone)),
            )
        )
    return files, sides


def _place_rows(f: DiffFile, first: int, last: int) -> Place:
    if f.deleted:
        return Place(f.path)
    numbers = [n for i, kind, n in f.rows if first <= i <= last and kind != "-"]
    if numbers:
        return Place(f.path, min(numbers), max(numbers))
    removed = [n for i, kind, n in f.rows if first <= i <= last]
    if removed:
        return Place(f.path, removed[0], removed[0])
    # The quote is in the file's header lines (its name): the file itself.
    return Place(f.path)


def changed_paths(diff: str) -> list[str]:
    """The files a diff changes, in its order."""
    return list(dict.fromkeys(f.path for f in parse_diff(diff)))


def named_path(text: str, paths: list[str]) -> str | None:
    """The one changed path that `text` (an issue, a missing item, a location)
    names, or None when it names none or several (longest names first, so
    `docs/a.md` wins over `a.md`)."""
    hits: list[str] = []
    for path in sorted(paths, key=len, reverse=True):
        if path and path in text and not any(path in h for h in hits):
            hits.append(path)
    return hits[0] if len(hits) == 1 else None


def place(
    quote: str | None, hint: str, output: str, paths: list[str], *, diff: bool
) -> Place | None:
    """Where one piece of a problem's evidence stands in the reviewed `output`.

    A quote goes to its line (in a diff: its changed file and new line). An
    omission, or a quote not found, goes to a file: for a diff, the changed
    file its wording (`hint`: issue, missing item, location) names, else the
    first changed file; otherwise the one file reviewed.
    """
    if quote:
        if diff:
            found = locate_in_diff(quote, output)
            if found is not None:
                return found
        elif paths:
            lines = quote_lines(quote, output)
            if lines is not None:
                return Place(paths[0], *lines)
    if not paths:
        return None
    return Place((named_path(hint, paths) or paths[0]) if diff else paths[0])


def places_of(flag: dict[str, object], output: str, paths: list[str], *, diff: bool) -> list[Place]:
    """Every place of a merged problem, primary first, no repeats. Reads
    `quotes` when the problem has them, else its one `quote`."""
    quotes = [str(q) for q in flag.get("quotes") or [] if q] or (  # type: ignore[attr-defined]
        [str(flag["quote"])] if flag.get("quote") else []
    )
    hint = " ".join(str(flag.get(k) or "") for k in ("missing", "location", "issue"))
    found = [place(q, hint, output, paths, diff=diff) for q in quotes] or [
        place(None, hint, output, paths, diff=diff)
    ]
    return list(dict.fromkeys(p for p in found if p is not None))
