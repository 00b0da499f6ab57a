"""What a reviewed sample says about the whole batch: its defect rate, with an exact interval.

A batch reviews a sample (core/sampling.py draws it); the items it found
defective estimate the share of defective items in the whole batch. The
interval is exact for sampling without replacement from a known population
(the hypergeometric analogue of Clopper-Pearson), because the counts are
small and often 0, where approximate intervals cover less than they say.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from santa_method.core.sampling import check_count, check_fraction, percent


def _log_comb(a: int, b: int) -> float:
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def _tail(population: int, defective: int, sample: int, x: int, upper: bool) -> float:
    """P(X >= x) (upper) or P(X <= x) for the defectives X in a sample without replacement."""
    lo = max(0, sample - (population - defective))
    hi = min(sample, defective)
    ks = range(max(x, lo), hi + 1) if upper else range(lo, min(x, hi) + 1)
    base = _log_comb(population, sample)
    terms = [
        _log_comb(defective, k) + _log_comb(population - defective, sample - k) - base for k in ks
    ]
    return math.fsum(math.exp(t) for t in terms)


def hypergeometric_interval(
    defects: int, n: int, population: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Exact interval for the share of defective items in the population.

    Why exact (the hypergeometric analogue of Clopper-Pearson): the counts
    here are small and often 0, where score intervals cover less than they
    say, and the sample is drawn without replacement from a known N. The
    bounds are defect counts D: the smallest D with P(X >= x | D) above
    (1 - C)/2 and the largest with P(X <= x | D) above it, as shares of N;
    so the interval covers the true share with probability at least C.
    """
    check_count(defects, "defects")
    check_count(n, "n")
    check_count(population, "population")
    check_fraction(confidence, "confidence", closed_top=False)
    if defects > n or n > population:
        raise ValueError("need defects <= n <= population")
    if n == 0:
        return (0.0, 1.0)
    alpha = (1 - confidence) / 2
    most = population - (n - defects)  # the sample's passing items are not defective

    def first(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
        """The smallest D in [lo, hi] with ok(D), ok being monotone (False..True)."""
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    low = 0
    if defects > 0:
        low = first(defects, most, lambda d: _tail(population, d, n, defects, True) > alpha)
    high = most
    if defects < n:
        # The first D whose lower tail drops to alpha or below, minus one.
        high = (
            first(
                defects,
                most + 1,
                lambda d: d > most or _tail(population, d, n, defects, False) <= alpha,
            )
            - 1
        )
    return (low / population, max(high, low) / population)


@dataclass(frozen=True)
class RateEstimate:
    """The batch's estimated defect rate from its sample, for the batch report."""

    defects: int
    sampled: int
    population: int
    rate: float
    low: float
    high: float
    confidence: float
    method: str = "exact (hypergeometric)"

    def statement(self) -> str:
        level = percent(self.confidence)
        return (
            f"{self.defects} of {self.sampled} sampled items failed ({self.rate:.1%}); "
            f"estimated defect rate in the {self.population} items: "
            f"{self.low:.1%} to {self.high:.1%} at {level} % confidence"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "defects": self.defects,
            "sampled": self.sampled,
            "population": self.population,
            "rate": self.rate,
            "interval": [self.low, self.high],
            "confidence": self.confidence,
            "method": self.method,
        }


def estimate_defect_rate(
    defects: int, sampled: int, population: int, confidence: float = 0.95
) -> RateEstimate:
    """Share of sampled items that failed, with an exact hypergeometric interval."""
    low, high = hypergeometric_interval(defects, sampled, population, confidence)
    rate = defects / sampled if sampled else 0.0
    return RateEstimate(defects, sampled, population, rate, low, high, confidence)
