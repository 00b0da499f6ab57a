"""Monte Carlo of batch sampling: the flat 15 % plan against the guarantee plan.

    python bench/sampling.py [--trials N] [--draw-trials N] [--seed S]

For N = 100, 1,000, 10,000 items and a defect in 1, 2, 5, 10 % of them, it
compares the method's flat plan (15 %, at least 5) with the plan sized by
`--prevalence P --confidence 0.95`: items reviewed, the exact detection
probability the plan states, and the share of simulated batches whose sample
contained a defective item.

Two simulations, both independent of the formula:
- `observed`: numpy, `--trials` batches per cell. Each batch orders its items
  at random (uniform keys); a plan of n reviews the first n. The sample
  holds a defective item iff the first defective item in that order comes
  before position n.
- `draw()`: the shipped sampler itself (santa_method.core.sampling.draw, one
  seed per trial, defective items at random positions), `--draw-trials`
  batches per cell, so a bug in the sampler (not uniform, off by one) shows.
A cell is flagged when an observed share is more than 4 standard errors from
the exact probability.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from santa_method.core.sampling import (
    defective_count,
    detection_probability,
    draw,
    flat_plan,
    size_for_guarantee,
)

POPULATIONS = (100, 1_000, 10_000)
PREVALENCES = (0.01, 0.02, 0.05, 0.10)
CONFIDENCE = 0.95
BLOCK_CELLS = 4_000_000  # keys per numpy block (32 MB)


def first_defect_ranks(
    rng: np.random.Generator, population: int, defects: list[int], trials: int
) -> dict[int, np.ndarray]:
    """For each D: the position of the first defective item in `trials` random orders.

    Items 0..D-1 are the defective ones (any fixed set will do: the order is
    random). Position = how many sound items come before the first defective.
    """
    ranks = {d: np.empty(trials, dtype=np.int64) for d in defects}
    block = max(1, BLOCK_CELLS // population)
    for start in range(0, trials, block):
        stop = min(trials, start + block)
        keys = rng.random((stop - start, population))
        for d in defects:
            first = keys[:, :d].min(axis=1)
            ranks[d][start:stop] = (keys[:, d:] < first[:, None]).sum(axis=1)
    return ranks


def draw_detection(population: int, defective: int, n: int, trials: int, seed: int) -> float:
    """Share of trials in which the shipped `draw` picks a defective item."""
    items = list(range(population))
    placer = random.Random(seed)
    hits = 0
    for t in range(trials):
        bad = set(placer.sample(items, defective))
        hits += any(x in bad for x in draw(items, n, seed=seed * 1_000_003 + t))
    return hits / trials


def flag(observed: float, exact: float, trials: int) -> bool:
    se = math.sqrt(max(exact * (1 - exact), 1e-12) / trials)
    return abs(observed - exact) > 4 * se + 1e-12


def pct(x: float) -> str:
    return f"{100 * x:6.2f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50_000, help="numpy batches per cell")
    parser.add_argument(
        "--draw-trials", type=int, default=1_000, help="batches per cell through draw() (0: skip)"
    )
    parser.add_argument("--seed", type=int, default=20240)
    args = parser.parse_args()
    if args.trials < 1 or args.draw_trials < 0:
        parser.error("--trials must be at least 1 and --draw-trials not negative")

    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    print(
        f"flat plan: 15 % of N, at least 5 | guarantee plan: --prevalence P --confidence "
        f"{CONFIDENCE:g}\nobserved: {args.trials} simulated batches per cell (numpy); "
        f"draw(): {args.draw_trials} batches through the shipped sampler\n"
    )
    head = (
        f"{'N':>6} {'P':>4} {'D':>4} | {'flat n':>6} {'share':>7} {'exact':>7} {'observ':>7} "
        f"{'draw()':>7} | {'guar n':>6} {'share':>7} {'exact':>7} {'observ':>7} {'draw()':>7}"
    )
    print(head)
    print("-" * len(head))
    flagged: list[str] = []
    for population in POPULATIONS:
        defects = {p: defective_count(population, p) for p in PREVALENCES}
        ranks = first_defect_ranks(rng, population, sorted(set(defects.values())), args.trials)
        for prevalence in PREVALENCES:
            d = defects[prevalence]
            cells = []
            for name, n in (
                ("flat", flat_plan(population)),
                ("guarantee", size_for_guarantee(population, prevalence, CONFIDENCE)),
            ):
                exact = detection_probability(population, d, n)
                observed = float(np.mean(ranks[d] < n))
                seed = args.seed + population + round(prevalence * 1000) + (n << 20)
                via_draw = (
                    draw_detection(population, d, n, args.draw_trials, seed)
                    if args.draw_trials
                    else math.nan
                )
                for label, value, trials in (
                    ("observed", observed, args.trials),
                    ("draw()", via_draw, args.draw_trials),
                ):
                    if trials and flag(value, exact, trials):
                        flagged.append(f"N={population} P={prevalence:g} {name} {label}")
                cells.append(
                    f"{n:>6} {pct(n / population)} {pct(exact)} {pct(observed)} "
                    f"{pct(via_draw) if args.draw_trials else '      -'}"
                )
            print(f"{population:>6} {prevalence * 100:>3g}% {d:>4} | {cells[0]} | {cells[1]}")
    elapsed = time.perf_counter() - started
    print(
        f"\n{elapsed:.1f} s;",
        "all cells within 4 standard errors of the exact probability"
        if not flagged
        else "OUTSIDE 4 standard errors: " + ", ".join(flagged),
    )
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
