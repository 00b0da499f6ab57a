"""Write answers.jsonl: 300 short answers about `tally`, a few of them wrong.

    python examples/batch/generate.py        # rewrites answers.jsonl beside it

The example batch for `santa sample` and `santa batch`: big enough that a
sample is a real saving (300 items, about 55 drawn for a 95 % chance of
seeing a defect that 5 % of the items share), small in bytes. Every answer
replies to a user's question about tally 2.1 (see spec.md); one in twenty
documents the `--chars` flag tally does not have, the kind of systemic
mistake a batch exists to catch. Deterministic: the same file every time,
and a test holds the shipped file to this script.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

COUNT = 300
SEED = 2026
FILES = ["notes.txt", "draft.md", "report.csv", "todo.txt", "essay.md", "log.txt", "data.tsv"]
GOOD = {
    "lines": "To count the lines of {f}, run `tally --lines {f}`; it prints one number.",
    "words": "Run `tally --words {f}` to print how many words {f} holds.",
    "bytes": "`tally --bytes {f}` prints the size of {f} in bytes.",
    "both": "`tally --lines --words {f}` prints both counts on one line, lines first.",
    "stdin": "With no file, tally reads standard input: `cat {f} | tally --lines`.",
    "install": "Install tally 2.1 with `pip install tally-cli`, then run `tally --lines {f}`.",
}
BAD = "To count the characters of {f}, run `tally --chars {f}`; it prints one number."


def answers() -> list[dict[str, str]]:
    rng = random.Random(SEED)
    topics = list(GOOD)
    out = []
    for n in range(1, COUNT + 1):
        topic = topics[(n - 1) % len(topics)]
        name = rng.choice(FILES)
        text = (BAD if n % 20 == 7 else GOOD[topic]).format(f=name)
        out.append({"id": f"a{n:03d}", "topic": topic, "output": text})
    return out


def render() -> str:
    return "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers())


if __name__ == "__main__":
    (Path(__file__).with_name("answers.jsonl")).write_text(render(), encoding="utf-8")
