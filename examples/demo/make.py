"""Record the replies `santa demo` replays (examples/demo/replies).

    python examples/demo/make.py        # rewrites replies/ beside it

The demo is the real loop on the bundled example (examples/output.md against
examples/spec.md): two reviewers fail it, the fixer fixes what they
flagged, two fresh reviewers pass it. This script runs exactly that loop
(`santa_method.headless.demo.loop`) with the replies below, through the
recorder of `santa run --record`, so the recording holds the requests the
demo makes. Every reply here is written for the demo, and is labelled so:
round 1's are the example's two reviewer replies (examples/review-b.json
and review-c.json) with the round's canary; the fix and round 2's passes
are written to match. Run it again whenever the texts reviewers or the
fixer receive change (the demo's test says so, naming the request).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from santa_method.core.rubric import load_rubric
from santa_method.headless import demo
from santa_method.headless.backends.base import FixReply, ReviewReply, Tokens
from santa_method.headless.backends.replay import Recorder

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent
WRITTEN = "written for the demo"
_OUTPUT = re.compile(r"<<<OUTPUT (SANTA-\w+)\n(.*)OUTPUT \1>>>", re.S)
_FLAG = re.compile(r"^### (\d+)\. \[[^\]]+\].*\n<<<FLAG (SANTA-\w+)\n([^\n]*)", re.M)

FIXED = """\
# tally

tally counts lines, words and bytes in your files. Current version: 2.1.

## Install

    pip install tally-cli

## Usage

    tally --lines notes.txt      # prints the number of lines
    tally --words notes.txt      # prints the number of words
    tally --bytes notes.txt      # prints the number of bytes

tally reads standard input when no file is given.

## License

tally is MIT-licensed.
"""

#: The fixer's answer to each problem, found by a word of its issue.
ANSWERS = (
    ("version", "fixed: the version now reads 2.1, as the spec says"),
    ("--chars", "fixed: the --chars example is now the --bytes one the spec documents"),
    ("performance", "fixed: removed the speed claim, which nothing in the spec supports"),
    ("License", "fixed: added a License section: tally is MIT-licensed, as the spec says"),
    ("--bytes", "fixed: --bytes is documented in the usage block, where --chars was"),
    ("combine", "fixed: removed the claim about combining flags, which the spec never makes"),
)

PASS_DETAILS = {
    "factual-accuracy": "The version is 2.1 and the install command is the spec's.",
    "no-hallucination": "Only --lines, --words and --bytes are described, as the spec lists.",
    "completeness": "Version, install, the three flags and a License section are all there.",
    "compliance": "Exactly the three flags the spec allows are documented.",
    "internal-consistency": "The opening line and the usage block name the same three counts.",
    "technical-correctness": "Each example command prints the count its comment says.",
}


def _canary(round_part: str) -> str:
    return round_part.rstrip().rsplit("santa-canary: ", 1)[1]


def _with_canary(reply: str, canary: str) -> str:
    """An example reply with the round's canary added as its last key."""
    start, end = reply.index("{"), reply.rindex("}")
    review = json.loads(reply[start : end + 1])
    review["canary"] = canary
    body = json.dumps(review, indent=2, ensure_ascii=False)
    return reply[:start] + body + reply[end + 1 :]


class Author:
    """The demo's reviewers and fixer: replies written for the demo."""

    name = "demo"

    async def review(self, request) -> ReviewReply:
        output = _OUTPUT.search(request.round_part).group(2)
        canary = _canary(request.round_part)
        if "Current version: 2.0." in output:
            example = "review-b.json" if request.label == "B" else "review-c.json"
            text = _with_canary((EXAMPLES / example).read_text(encoding="utf-8"), canary)
        else:
            criteria = load_rubric("base").ids
            review = {
                "verdict": "PASS",
                "checks": [
                    {"criterion": c, "result": "PASS", "detail": PASS_DETAILS[c]} for c in criteria
                ],
                "critical_issues": [],
                "suggestions": ["Show one example of reading standard input."],
                "canary": canary,
            }
            text = json.dumps(review, indent=2)
            if request.label == "B":
                text = f"I read the assignment to the end. Here is my review.\n\n```json\n{text}\n```"
        return ReviewReply(text=text, tokens=Tokens(), cost_usd=0.0, model=WRITTEN)

    async def fix(self, request) -> FixReply:
        lines = []
        for number, _boundary, issue in _FLAG.findall(request.assignment):
            answer = next(a for word, a in ANSWERS if word in issue)
            lines.append(f"{number}. {answer}")
        return FixReply(
            output=FIXED, notes="\n".join(lines), tokens=Tokens(), cost_usd=0.0, model=WRITTEN
        )


def main() -> None:
    target = HERE / "replies"
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / "replies"
        run = Path(tmp) / "run"
        run.mkdir()
        result = demo.loop(run, Recorder(Author(), staging, origin="written"))
        assert result.verdict == "NICE" and [r.next for r in result.history] == ["fix", "ship"], (
            result.to_json()
        )
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(staging, target, ignore=shutil.ignore_patterns(".lock"))
    print(f"wrote {target}: {len(list(target.glob('*.json'))) - 1} requests")


if __name__ == "__main__":
    main()
