"""How gating scales with the size of the output under review.

    python bench/gate_size.py [--sizes 1,8,30] [--repeat 3]

Why: a run over a large file (an in-place fix of a 30 MB data file, a
generated reference) is gated like any other, and every step on the way
must be linear in the output's size, or the gate of a big file never ends
(issue 29: 2.5 MB took 40 s). The steps, each timed on its own:

- normalise: the output's matching form (core/text.py), which every quote
  is looked up in;
- claims: the output cut into claims (`claim_spans`), which the merge
  joins two quotes by;
- gate: the whole of `santa gate` on two reviews minus the file reads
  (`gate_replies`: extraction, the review contract, quotes checked, flags
  merged, the verdict), each review quoting the start, the middle and the
  end of the output, in its own words and with altered spacing and case;
- place: each merged problem's quotes put on their lines (`places_of`, as
  the reports do: core/locate.py).

The output is a data file of each size: Markdown prose with wrapped
paragraphs, an indented JSON block (half the file) and a code block without
fences (each of their indented lines continues the claim before it, so a
claim grows as long as the block), a CSV of lowercase rows. Times are the
CPU seconds of this process (what other load on the machine changes least),
the best of --repeat runs with caches cleared before each; the last columns
are each size's total against the first size's, beside the ratio of their
sizes: a linear gate keeps the two about equal.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from santa_method.core import locate, text
from santa_method.core.gate import gate_replies
from santa_method.core.rubric import load_rubric

MB = 1024 * 1024
RUBRIC = load_rubric("base")
_WORDS = ["the", "tool", "counts", "lines", "words", "bytes", "file", "input", "output", "flag", "value", "total", "record", "field", "entry", "returns", "reads", "writes", "every", "each", "when", "before", "after"]


def _prose(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 7)):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 18))]
        sentences.append(" ".join(words).capitalize() + ".")
    # Wrapped at 72 columns: the lines after the first continue the paragraph.
    paragraph, line = [], ""
    for word in " ".join(sentences).split():
        if len(line) + len(word) > 72:
            paragraph.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    paragraph.append(line)
    return "\n".join(paragraph) + "\n\n"


def _records(rng: random.Random, size: int) -> str:
    parts, length, i = ["## Records\n\n{\n"], 0, 0
    while length < size:
        line = (
            f'    "record-{i}": {{"value": {rng.randint(0, 9999)}, '
            f'"label": "{rng.choice(_WORDS)} {rng.choice(_WORDS)}"}},\n'
        )
        parts.append(line)
        length, i = length + len(line), i + 1
    return "".join(parts) + "}\n\n"


def _code(size: int) -> str:
    parts, length, i = ["def total(records):\n"], 0, 0
    while length < size:
        line = f"    value_{i} = records.get('record-{i}', 0)\n"
        parts.append(line)
        length, i = length + len(line), i + 1
    return "".join(parts) + "    return sum(records.values())\n\n"


def _csv(rng: random.Random, size: int) -> str:
    parts, length = ["name,count,unit\n"], 0
    while length < size:
        line = f"{rng.choice(_WORDS)},{rng.randint(0, 99)},{rng.choice(_WORDS)}\n"
        parts.append(line)
        length += len(line)
    return "".join(parts) + "\n"


def _paragraphs(rng: random.Random, size: int) -> str:
    parts, length = [], 0
    while length < size:
        parts.append(_prose(rng))
        length += len(parts[-1])
    return "".join(parts)


def build_output(size: int, seed: int = 7) -> str:
    """A data file of `size` characters: prose, then one JSON block (half of
    it), code and a CSV (each a tenth), then prose again. The JSON and the
    code are one claim each, as long as the block."""
    rng = random.Random(seed)
    out = "# Data file\n\n" + _paragraphs(rng, size // 10)
    out += _records(rng, size // 2) + _code(size // 10) + _csv(rng, size // 10)
    out += _paragraphs(rng, size - len(out))
    return out[:size]


def _quotes(output: str) -> list[str]:
    """Three short quotes of whole words from the start, the middle and the end."""
    found = []
    for at in (len(output) // 50, len(output) // 2, len(output) - 4000):
        start = output.index(" ", at) + 1
        found.append(output[start : output.index(" ", start + 40)])
    return found


def _review(quotes: list[str], altered: bool) -> str:
    issues = [
        {
            "criterion": "factual-accuracy",
            "issue": f"Record {i} gives a value the spec does not have",
            "quote": q.upper().replace(" ", "  ") if altered else q,
        }
        for i, q in enumerate(quotes)
    ]
    checks = [
        {"criterion": c, "result": "FAIL" if c == "factual-accuracy" else "PASS", "detail": "x"}
        for c in RUBRIC.ids
    ]
    review = {"verdict": "FAIL", "checks": checks, "critical_issues": issues, "suggestions": []}
    return "Here is my review.\n\n```json\n" + json.dumps(review, indent=2) + "\n```\n"


def _clear() -> None:
    for module in (text, locate):
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def _best(step: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        _clear()
        started = time.process_time()
        step()
        best = min(best, time.process_time() - started)
    return best


def measure(output: str, repeat: int) -> dict[str, float]:
    quotes = _quotes(output)
    replies = [_review(quotes, altered=False), _review(quotes, altered=True)]
    result = gate_replies(replies, rubric=RUBRIC, output=output)
    # Quotes inside one block fall in one claim and may merge: each problem
    # is both reviewers' and verified, whatever their number.
    assert result.verdict == "NAUGHTY" and result.issues, result
    assert all(i.evidence == "verified" and len(i.flagged_by) == 2 for i in result.issues)
    flags = [i.to_json() for i in result.issues]
    times = {
        "normalise": _best(lambda: text.normalise(output), repeat),
        "claims": _best(lambda: text.claim_spans(output), repeat),
        "gate": _best(lambda: gate_replies(replies, rubric=RUBRIC, output=output), repeat),
        "place": _best(
            lambda: [locate.places_of(f, output, ["data.md"], diff=False) for f in flags], repeat
        ),
    }
    places = [locate.places_of(f, output, ["data.md"], diff=False) for f in flags]
    assert all(p and p[0].start_line for p in places), places
    times["total"] = times["gate"] + times["place"]
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,8,30", help="output sizes in MB (default 1,8,30)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best counts")
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    steps = ("normalise", "claims", "gate", "place", "total")
    print(f"{'size':>8}  " + "  ".join(f"{s:>9}" for s in steps) + "   time ratio / size ratio")
    first: tuple[float, dict[str, float]] | None = None
    for size in sizes:
        output = build_output(int(size * MB))
        times = measure(output, args.repeat)
        row = f"{size:>6g} MB  " + "  ".join(f"{times[s]:>8.2f}s" for s in steps)
        if first is None:
            first = (size, times)
        else:
            base_size, base = first
            row += f"   {times['total'] / base['total']:.1f}x / {size / base_size:g}x"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
