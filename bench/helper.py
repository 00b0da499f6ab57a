"""Helper speed: gate throughput, and `santa validate` cold start against bare Python.

    python bench/helper.py [--pairs N] [--runs K] [--seed S]

Two measurements, side by side in one run:

- Gate throughput: review pairs per second through the whole of `santa
  gate` on files minus the file reads (extract, schema, rules, merge,
  verdict), on a synthetic set of N pairs (default 2,000) with realistic
  sizes: a 3-7 KB Markdown output per pair, replies of about 2 KB in prose
  and code fences, 6 rubric checks with details, 0-6 critical issues quoting
  the output (some quotes altered, so unverified), missing items and seed
  strings, suggestions; about 40 % of pairs pass. Measured with the base
  rubric, with and without the output to check quotes against (`--against`).
- Cold start: the median wall time of K runs (default 15) of
  `santa validate REVIEW` and of a bare `python -c pass` with the same
  interpreter, interleaved so that machine load hits both alike, and their
  ratio against the target of at most 5x (issue 15: importing jsonschema
  alone costs more, so a conforming reply is accepted by the compiled
  schema, core/review_schema.py). `santa validate --rubric base --against
  FILE` is shown too, on the example review and on a failing review whose
  issues name the rubric's longest criteria (`internal-consistency`,
  `technical-correctness`: what it prints is redacted, and printed text
  that a detect-secrets plugin could match costs the import of
  detect-secrets), and the floor under any `santa` command: importing
  argparse and json, which parse its arguments and the reply. The runs
  counted are warm: .pyc files written, as an installed package has them
  (PYTHONDONTWRITEBYTECODE, which some shells and CI images set, is dropped
  for the measured commands).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from santa_method.core.gate import gate_replies
from santa_method.core.rubric import load_rubric

IDS = load_rubric("base").ids
TARGET_RATIO = 5.0

_WORDS = [
    "the",
    "tool",
    "counts",
    "lines",
    "words",
    "bytes",
    "file",
    "files",
    "input",
    "output",
    "flag",
    "option",
    "version",
    "install",
    "usage",
    "example",
    "default",
    "value",
    "error",
    "returns",
    "prints",
    "reads",
    "writes",
    "config",
    "section",
    "license",
    "user",
    "command",
    "standard",
    "stream",
    "fast",
    "small",
    "simple",
    "format",
    "number",
]


def _sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words).capitalize() + "."


def _output(rng: random.Random) -> str:
    parts = ["# tally\n"]
    while sum(map(len, parts)) < rng.randint(3_000, 7_000):
        parts.append(f"## {_sentence(rng, 2, 4)[:-1]}\n")
        for _ in range(rng.randint(1, 3)):
            parts.append(" ".join(_sentence(rng) for _ in range(rng.randint(2, 5))) + "\n")
        if rng.random() < 0.4:
            parts.append(
                "```\n"
                + "\n".join(f"tally --{rng.choice(_WORDS)} notes.txt" for _ in range(3))
                + "\n```\n"
            )
    return "\n".join(parts)


def _quote(rng: random.Random, output: str) -> str:
    start = rng.randrange(0, len(output) - 80)
    quote = output[start : start + rng.randint(20, 70)]
    if rng.random() < 0.2:
        quote = quote.replace(" ", "  ").upper()  # still verified after normalisation
    if rng.random() < 0.1:
        quote = quote[::-1]  # not in the output: unverified
    return quote


def _review(rng: random.Random, output: str, passing: bool) -> str:
    failing = set() if passing else set(rng.sample(IDS, rng.randint(1, 3)))
    checks = [
        {
            "criterion": cid,
            "result": "FAIL" if cid in failing else "PASS",
            "detail": _sentence(rng, 8, 30),
        }
        for cid in IDS
    ]
    issues: list[object] = []
    for cid in sorted(failing):
        for _ in range(rng.randint(0, 2)):
            kind = rng.random()
            if kind < 0.6:
                issues.append(
                    {
                        "criterion": cid,
                        "issue": _sentence(rng),
                        "quote": _quote(rng, output),
                        "location": f"line {rng.randint(1, 90)}",
                    }
                )
            elif kind < 0.85:
                issues.append(
                    {"criterion": cid, "issue": _sentence(rng), "missing": _sentence(rng, 2, 5)}
                )
            else:
                issues.append(_sentence(rng))
    if not passing and not issues and rng.random() < 0.5:
        issues.append(_sentence(rng))
    if len(failing) > 1:
        # A seed string must name no criterion when several checks fail.
        issues = [
            i if isinstance(i, dict) else {"criterion": sorted(failing)[0], "issue": i}
            for i in issues
        ]
    review = {
        "verdict": "PASS" if passing else "FAIL",
        "checks": checks,
        "critical_issues": issues,
        "suggestions": [_sentence(rng) for _ in range(rng.randint(0, 3))],
    }
    body = json.dumps(review, indent=2)
    if rng.random() < 0.5:
        return f"I read the assignment to its end.\n\n```json\n{body}\n```\n"
    return f"{_sentence(rng)}\n{body}\n"


def synthetic_pairs(n: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        output = _output(rng)
        passing = rng.random() < 0.4
        pairs.append(
            (
                output,
                _review(rng, output, passing),
                _review(rng, output, passing or rng.random() < 0.3),
            )
        )
    return pairs


def gate_throughput(
    pairs: list[tuple[str, str, str]], against: bool
) -> tuple[float, dict[str, int]]:
    rubric = load_rubric("base")
    verdicts: dict[str, int] = {}
    start = time.perf_counter()
    for output, b, c in pairs:
        result = gate_replies([b, c], rubric=rubric, output=output if against else None)
        verdicts[f"{result.verdict}/{result.next}"] = (
            verdicts.get(f"{result.verdict}/{result.next}", 0) + 1
        )
    return len(pairs) / (time.perf_counter() - start), verdicts


def _wall(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench: {' '.join(cmd)} exited {proc.returncode}")
    return elapsed


#: A failing review of examples/output.md, in the words real reviewers use.
FAILING_REVIEW = {
    "verdict": "FAIL",
    "checks": [
        {"criterion": cid, "result": "PASS", "detail": ""}
        for cid in IDS
        if cid not in ("internal-consistency", "technical-correctness")
    ]
    + [
        {
            "criterion": "internal-consistency",
            "result": "FAIL",
            "detail": "The usage says the counts are combined on one line; the examples never show it.",
        },
        {
            "criterion": "technical-correctness",
            "result": "FAIL",
            "detail": "tally --chars notes.txt fails: the tool has no such flag.",
        },
    ],
    "critical_issues": [
        {
            "criterion": "internal-consistency",
            "issue": "The text promises combined counts on one line, which no example shows.",
            "quote": "tally then prints both counts on one line, lines first.",
        },
        {
            "criterion": "technical-correctness",
            "issue": "The third example calls a flag the tool does not have, so it fails at runtime.",
            "quote": "tally --chars notes.txt",
        },
    ],
    "suggestions": [],
}


def cold_start(runs: int) -> dict[str, float]:
    santa = Path(sys.executable).with_name("santa")
    if not santa.exists():
        raise SystemExit(
            "bench: the santa console script is not next to this interpreter; pip install -e . first"
        )
    examples = Path(__file__).resolve().parents[1] / "examples"
    with tempfile.TemporaryDirectory() as tmp:
        failing = Path(tmp) / "review-failing.json"
        failing.write_text(json.dumps(FAILING_REVIEW, indent=2), encoding="utf-8")
        env = dict(os.environ, SANTA_HOME=str(Path(tmp) / ".santa"), CLAUDE_PROJECT_DIR=tmp)
        # Without .pyc files every start compiles the helper (and jsonschema)
        # from source again, which no installed copy does.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        commands = {
            "cold start: python -c pass": [sys.executable, "-c", "pass"],
            "cold start: import argparse, json (the floor)": [
                sys.executable,
                "-c",
                "import argparse, json",
            ],
            "cold start: santa validate": [str(santa), "validate", str(examples / "review-b.json")],
            "cold start: santa validate --rubric --against": [
                str(santa),
                "validate",
                str(examples / "review-b.json"),
                "--rubric",
                "base",
                "--against",
                str(examples / "output.md"),
            ],
            "cold start: ... on a FAIL naming long criteria": [
                str(santa),
                "validate",
                str(failing),
                "--rubric",
                "base",
                "--against",
                str(examples / "output.md"),
            ],
        }
        for cmd in commands.values():  # warm the file cache and .pyc files
            _wall(cmd, env, tmp)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, cmd in commands.items():
                times[name].append(_wall(cmd, env, tmp))
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs", type=int, default=2_000, help="synthetic review pairs (default 2000)"
    )
    parser.add_argument(
        "--runs", type=int, default=15, help="cold-start runs per command (default 15)"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    pairs = synthetic_pairs(args.pairs, args.seed)
    size = sum(len(b) + len(c) for _, b, c in pairs) / (2 * len(pairs))
    out_size = sum(len(o) for o, _, _ in pairs) / len(pairs)
    gate_replies([pairs[0][1], pairs[0][2]], rubric=load_rubric("base"))  # warm caches and imports
    plain, verdicts = gate_throughput(pairs, against=False)
    against, _ = gate_throughput(pairs, against=True)
    cold = cold_start(args.runs)
    base = cold["cold start: python -c pass"]

    print(
        f"santa-method helper bench: {len(pairs)} pairs (reply {size / 1000:.1f} KB, output {out_size / 1000:.1f} KB avg), "
        f"{args.runs} cold-start runs, Python {sys.version.split()[0]}"
    )
    print(f"verdicts: {', '.join(f'{k} {v}' for k, v in sorted(verdicts.items()))}")
    print()
    print(f"{'measure':<46} {'value':>14} {'per item':>12}")
    print(f"{'gate throughput (base rubric)':<46} {plain:>9.0f} pairs/s {1e3 / plain:>9.2f} ms")
    print(
        f"{'gate throughput (base rubric, --against)':<46} {against:>9.0f} pairs/s {1e3 / against:>9.2f} ms"
    )
    for name, seconds in cold.items():
        ratio = "" if name == "cold start: python -c pass" else f"{seconds / base:>9.1f}x"
        print(f"{name:<46} {seconds * 1e3:>11.1f} ms {ratio:>12}")
    print()
    for name, label in (
        ("cold start: santa validate", "santa validate"),
        ("cold start: ... on a FAIL naming long criteria", "a FAIL with --rubric --against"),
    ):
        ratio = cold[name] / base
        verdict = "meets" if ratio <= TARGET_RATIO else "misses"
        print(
            f"cold start of {label}: {ratio:.1f}x bare Python ({verdict} the {TARGET_RATIO:.0f}x target)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
