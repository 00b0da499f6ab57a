"""Batch sampling with a stated guarantee (Pattern C).

The published method reviews a flat 10-15 % of a batch (at least 5 items) and
claims that this catches "over 90 % of systemic issues". Whether a sample sees
a defect depends on how common the defect is and on the sample size, so every
plan made here states its own figure: the exact probability that a sample,
drawn without replacement, contains at least one defective item when a given
share of the batch is defective (the hypergeometric distribution, not the
binomial approximation, which understates it for small batches).

Two plans:
- ``flat``: ``max(minimum, ceil(rate * N))`` items, never more than ``N``. Its
  stated figure is the detection probability at a prevalence the caller names,
  or at 5 % when none is named (a common "systemic issue" threshold; the
  figure is always printed next to the prevalence it assumes).
- ``guarantee``: the smallest sample that sees a defect with probability at
  least ``confidence`` when a share ``prevalence`` of the batch is defective.
  A prevalence below one item (``prevalence * N < 1``) is treated as one
  defective item: no plan short of reviewing everything can promise anything
  about a defect that is not there, and one item is the rarest defect that is.

Stratified draws (``strata``) allocate the sample proportionally with at least
one item per stratum. Rounding and that floor make some strata's sampling
fraction lower than others', so for a stratified plan the stated probability
is the *worst case* over how the defective items could be spread across the
strata: it holds wherever the defects sit.

Decimal inputs (0.05, 0.95) are read as the decimals the user typed, not as
their binary approximations, so that ``ceil(0.07 * 100)`` is 7 and a
probability of exactly 19/20 meets a confidence of 0.95.

Everything here is pure: no I/O, no global random state (``random.Random``
seeded per call), so a plan is reproducible from its seed.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, TypeVar

T = TypeVar("T", bound=Hashable)
Method = Literal["flat", "guarantee"]

DEFAULT_RATE = 0.15
DEFAULT_MINIMUM = 5
DEFAULT_PREVALENCE = 0.05
"""The prevalence at which a flat plan's detection probability is stated when none is given."""

# Below this log-probability a miss is indistinguishable from 0 in a double.
_LOG_ZERO = -800.0
# Within this distance of the confidence target, decide with exact fractions.
_EXACT_WINDOW = 1e-9
# Exact fallbacks multiply this many factors at most; beyond it floats are
# already far more precise than the window above requires.
_EXACT_MAX_TERMS = 200_000
_CHUNK = 4096


# ---------------------------------------------------------------- validation


def check_count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


def check_fraction(value: float, name: str, *, closed_top: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    top_ok = value <= 1 if closed_top else value < 1
    if not (math.isfinite(value) and value > 0 and top_ok):
        interval = "(0, 1]" if closed_top else "(0, 1)"
        raise ValueError(f"{name} must be a fraction in {interval} (0.05 means 5 %), got {value}")
    return value


def _decimal(value: float) -> Fraction:
    """The decimal the user meant: 0.05 is 1/20, not 0.05000000000000000277."""
    return Fraction(repr(float(value)))


# ---------------------------------------------------------------- sizes


def flat_plan(population: int, rate: float = DEFAULT_RATE, minimum: int = DEFAULT_MINIMUM) -> int:
    """The method's flat rule, made safe: max(minimum, ceil(rate*N)), capped at N."""
    check_count(population, "population")
    check_fraction(rate, "rate", closed_top=True)
    check_count(minimum, "minimum")
    if population == 0:
        return 0
    return min(population, max(minimum, math.ceil(_decimal(rate) * population)))


def defective_count(population: int, prevalence: float) -> int:
    """Defective items implied by a prevalence: ceil(P*N), and at least one (see module doc)."""
    check_count(population, "population")
    check_fraction(prevalence, "prevalence", closed_top=True)
    if population == 0:
        return 0
    return min(population, max(1, math.ceil(_decimal(prevalence) * population)))


def _miss_terms(population: int, defective: int, sample: int) -> tuple[int, int]:
    """P(miss) = prod_{i<k} (1 - m/(N-i)) with k = min(n, D), m = max(n, D).

    C(N-D, n)/C(N, n) is symmetric in n and D, so the product needs only
    min(n, D) factors: cheap for the usual case of a small sample or a rare defect.
    """
    return (sample, defective) if sample <= defective else (defective, sample)


def _log_miss(population: int, defective: int, sample: int) -> float:
    """log P(no defective in the sample); -inf when a miss is impossible (or < 1e-347)."""
    if defective == 0 or sample == 0:
        return 0.0
    if defective + sample > population:
        return -math.inf
    k, m = _miss_terms(population, defective, sample)
    total = 0.0
    for start in range(0, k, _CHUNK):
        stop = min(k, start + _CHUNK)
        # log1p of a correctly rounded ratio, summed exactly: relative error ~1e-16 per factor.
        total += math.fsum(math.log1p(-m / (population - i)) for i in range(start, stop))
        if total < _LOG_ZERO:
            return -math.inf
    return total


def _miss_exact(population: int, defective: int, sample: int) -> Fraction:
    if defective == 0 or sample == 0:
        return Fraction(1)
    if defective + sample > population:
        return Fraction(0)
    k, m = _miss_terms(population, defective, sample)
    return Fraction(math.perm(population - m, k), math.perm(population, k))


def detection_probability(population: int, defective: int, sample: int) -> float:
    """P(a sample of n drawn without replacement from N holds >= 1 of D defectives).

    1 - C(N-D, n)/C(N, n), as a product of min(n, D) factors summed in log
    space and turned back with expm1, so it stays accurate for N = 1,000,000
    and for probabilities near 0 or 1.
    """
    check_count(population, "population")
    check_count(defective, "defective")
    check_count(sample, "sample")
    if defective > population or sample > population:
        raise ValueError(
            f"defective ({defective}) and sample ({sample}) cannot exceed the population ({population})"
        )
    return -math.expm1(_log_miss(population, defective, sample))


@dataclass(frozen=True)
class _Part:
    """One stratum (or the whole batch) as the detection formula sees it."""

    size: int
    defective: int
    sample: int


def _meets(parts: Sequence[_Part], confidence: float) -> bool:
    """Does the detection probability reach the confidence? Exact near the boundary."""
    log_miss = sum(_log_miss(p.size, p.defective, p.sample) for p in parts)
    probability = -math.expm1(log_miss)
    terms = sum(min(p.defective, p.sample) for p in parts)
    if abs(probability - confidence) > _EXACT_WINDOW or terms > _EXACT_MAX_TERMS:
        return probability >= confidence
    miss = math.prod((_miss_exact(p.size, p.defective, p.sample) for p in parts), start=Fraction(1))
    return 1 - miss >= _decimal(confidence)


def size_for_guarantee(population: int, prevalence: float, confidence: float) -> int:
    """The smallest n whose sample sees a defect with probability >= confidence.

    D = max(1, ceil(prevalence * N)) (see the module doc for D < 1). Detection
    grows with n, and n = N - D + 1 always sees a defect, so a binary search
    over [1, N - D + 1] finds the minimum; the comparison at the boundary is
    exact.
    """
    check_count(population, "population")
    check_fraction(prevalence, "prevalence", closed_top=False)
    check_fraction(confidence, "confidence", closed_top=False)
    if population == 0:
        return 0
    defective = defective_count(population, prevalence)
    lo, hi = 1, population - defective + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _meets([_Part(population, defective, mid)], confidence):
            hi = mid
        else:
            lo = mid + 1
    return lo


# ---------------------------------------------------------------- strata


@dataclass(frozen=True)
class Stratum:
    """A stratum's share of the sample: its exact proportional quota and what it got."""

    name: str
    size: int
    quota: float
    allocated: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size": self.size,
            "quota": round(self.quota, 6),
            "allocated": self.allocated,
        }


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Proportional allocation, largest remainder, at least one item per stratum.

    Each stratum starts at max(1, floor(quota)); the shortfall goes one item
    at a time to the largest remainders (quota - allocated), and an excess
    (caused by the floor of one) is taken one at a time from the strata most
    over their quota. Ties go to the larger stratum, then to the earlier one.
    If n is below the number of strata every stratum still gets one, so the
    total is max(n, number of strata); n above the population is capped.
    """
    names = list(sizes)
    for name in names:
        if check_count(sizes[name], f"size of stratum {name!r}") == 0:
            raise ValueError(f"stratum {name!r} is empty")
    total_size = sum(sizes.values())
    n = min(check_count(n, "n"), total_size)
    if n == 0 or not names:
        return dict.fromkeys(names, 0)
    target = max(n, len(names))
    quota = {name: Fraction(target * sizes[name], total_size) for name in names}
    alloc = {name: max(1, math.floor(quota[name])) for name in names}
    order = {name: i for i, name in enumerate(names)}
    gap = target - sum(alloc.values())
    if gap > 0:
        heap = [
            (-(quota[s] - alloc[s]), -sizes[s], order[s], s) for s in names if alloc[s] < sizes[s]
        ]
        heapq.heapify(heap)
        while gap > 0:
            _, _, _, s = heapq.heappop(heap)
            alloc[s] += 1
            gap -= 1
            if alloc[s] < sizes[s]:
                heapq.heappush(heap, (-(quota[s] - alloc[s]), -sizes[s], order[s], s))
    elif gap < 0:
        heap = [(-(alloc[s] - quota[s]), sizes[s], order[s], s) for s in names if alloc[s] > 1]
        heapq.heapify(heap)
        while gap < 0:
            _, _, _, s = heapq.heappop(heap)
            alloc[s] -= 1
            gap += 1
            if alloc[s] > 1:
                heapq.heappush(heap, (-(alloc[s] - quota[s]), sizes[s], order[s], s))
    return alloc


def worst_case_defects(
    sizes: Mapping[str, int], alloc: Mapping[str, int], defective: int
) -> dict[str, int]:
    """Where D defectives hide best from a stratified sample (maximum miss probability).

    log P(miss) is a sum over strata of functions concave in each stratum's
    defect count, so adding defects one at a time where the marginal loss is
    smallest (the stratum whose remaining sampling fraction is lowest) is
    optimal. Returns the placement; a stratum never takes so many that a miss
    becomes impossible unless every stratum is full.
    """
    placed = dict.fromkeys(sizes, 0)
    heap: list[tuple[float, int, str]] = []
    for i, name in enumerate(sizes):
        if sizes[name] - alloc[name] > 0:
            heap.append((-math.log1p(-alloc[name] / sizes[name]), i, name))
    heapq.heapify(heap)
    left = defective
    log_miss = 0.0
    while left > 0 and heap:
        cost, i, name = heapq.heappop(heap)
        placed[name] += 1
        left -= 1
        log_miss -= cost
        if log_miss < _LOG_ZERO:
            break  # already certain to be seen; the rest cannot hide it
        room = sizes[name] - placed[name]
        if room - alloc[name] > 0:
            heapq.heappush(heap, (-math.log1p(-alloc[name] / room), i, name))
    # Defects left over (no stratum can take one without being seen, or the
    # early stop above) go anywhere: the sample sees a defect for certain.
    for name in sizes:
        if left == 0:
            break
        extra = min(left, sizes[name] - placed[name])
        placed[name] += extra
        left -= extra
    return placed


def _parts(sizes: Mapping[str, int], alloc: Mapping[str, int], defective: int) -> list[_Part]:
    placed = worst_case_defects(sizes, alloc, defective)
    return [_Part(sizes[s], placed[s], alloc[s]) for s in sizes]


def _probability(parts: Sequence[_Part]) -> float:
    return -math.expm1(sum(_log_miss(p.size, p.defective, p.sample) for p in parts))


def stratified_detection_probability(
    sizes: Mapping[str, int], alloc: Mapping[str, int], defective: int
) -> float:
    """Worst-case detection probability of a stratified sample (see module doc)."""
    return _probability(_parts(sizes, alloc, defective))


# ---------------------------------------------------------------- drawing


def _population(items: Sequence[T], exclude: Iterable[T]) -> list[T]:
    if len(set(items)) != len(items):
        seen: set[T] = set()
        for item in items:
            if item in seen:
                raise ValueError(f"item ids must be unique; {item!r} appears more than once")
            seen.add(item)
    excluded = set(exclude)
    return [x for x in items if x not in excluded]


def _group(population: Sequence[T], strata: Mapping[T, str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, item in enumerate(population):
        if item not in strata:
            raise ValueError(f"item {item!r} has no stratum")
        groups.setdefault(str(strata[item]), []).append(i)
    return groups


def _draw_indices(
    rng: random.Random, groups: Mapping[str, list[int]] | None, size: int, alloc: Mapping[str, int]
) -> list[int]:
    if groups is None:
        return sorted(rng.sample(range(size), alloc.get("", 0)))
    picked: list[int] = []
    for name, members in groups.items():  # first-appearance order: reproducible
        picked.extend(rng.sample(members, alloc[name]))
    return sorted(picked)


def draw(
    items: Sequence[T],
    n: int,
    seed: int,
    strata: Mapping[T, str] | None = None,
    exclude: Iterable[T] = (),
) -> list[T]:
    """A seeded sample of n items, returned in input order.

    Excluded items are removed first (the population is the rest). n above
    the population takes all of it (small batches never crash). With
    ``strata`` (item -> stratum name) the sample is allocated by
    ``allocate``, so it has max(n, number of strata) items.
    """
    population = _population(items, exclude)
    groups = _group(population, strata) if strata is not None else None
    n = min(check_count(n, "n"), len(population))
    sizes = {name: len(members) for name, members in (groups or {}).items()}
    alloc = {"": n} if groups is None else allocate(sizes, n)
    rng = random.Random(_check_seed(seed))
    return [population[i] for i in _draw_indices(rng, groups, len(population), alloc)]


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    return seed


# ---------------------------------------------------------------- the plan


def percent(value: float) -> str:
    """5 for 0.05, 2.5 for 0.025: the decimal as typed, times 100, without noise."""
    return format((Decimal(repr(float(value))) * 100).normalize(), "f")


def _floor_percent(probability: float, certain: bool) -> str:
    """Rounded *down* to 0.1 %, so a stated guarantee is never overstated.

    A double rounds 1 - 1e-20 to 1.0; "100 %" is kept for plans that cannot
    miss (the sample is too large for the defects to hide).
    """
    if certain:
        return "100"
    tenths = math.floor(_decimal(probability) * 1000)
    if tenths >= 1000:
        return "over 99.9"
    if tenths == 0 and probability > 0:
        return "under 0.1"
    whole, frac = divmod(tenths, 10)
    return f"{whole}.{frac}"


@dataclass(frozen=True)
class Plan:
    """A sampling plan and its draw: what to review, and what that review can promise.

    ``detection_probability`` is the probability that the sample holds at
    least one defective item when ``defective`` items of the population are
    (``prevalence`` of it; at least one); for stratified plans it is the
    worst case over the defects' spread across strata; None for an empty
    population. ``population`` counts items after exclusion.
    """

    n: int
    population: int
    method: Method
    items: tuple[Any, ...]
    seed: int
    prevalence: float
    defective: int
    detection_probability: float | None
    confidence: float | None = None
    rate: float | None = None
    minimum: int | None = None
    strata: tuple[Stratum, ...] | None = None
    excluded: int = 0
    notes: tuple[str, ...] = ()
    certain: bool = False
    """True when no placement of the defective items can escape the sample."""

    def statement(self) -> str:
        """One sentence: the plan and its guarantee, e.g. '57 of 1000 items: a defect ...'."""
        if self.population == 0:
            return "0 of 0 items: the batch is empty, there is nothing to sample"
        head = f"{self.n} of {self.population} {'item' if self.population == 1 else 'items'}"
        if self.method == "flat":
            head += f" (flat {percent(self.rate or 0)} %, at least {self.minimum})"
        defect = f"a defect in {percent(self.prevalence)} % of items"
        if _decimal(self.prevalence) * self.population < 1:
            defect += " (at least 1 item)"
        assert self.detection_probability is not None
        text = f"{head}: {defect} is seen with probability {_floor_percent(self.detection_probability, self.certain)} %"
        if self.strata is not None:
            text += (
                f"; stratified over {len(self.strata)} strata, "
                "worst case over where the defects sit"
            )
        for note in self.notes:
            text += f"; {note}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "population": self.population,
            "detection_probability": self.detection_probability,
            "items": list(self.items),
            "method": self.method,
            "seed": self.seed,
            "strata": None if self.strata is None else [s.to_json() for s in self.strata],
            "statement": self.statement(),
            "prevalence": self.prevalence,
            "defective": self.defective,
            "confidence": self.confidence,
            "rate": self.rate,
            "minimum": self.minimum,
            "excluded": self.excluded,
            "notes": list(self.notes),
        }


def _stratified_guarantee(
    sizes: Mapping[str, int], start: int, defective: int, confidence: float
) -> tuple[int, dict[str, int]]:
    """The first n >= start whose stratified worst case meets the confidence.

    Rounding can make the worst case dip as n grows (a stratum may lose an
    item to another), so this is not a proof of global minimality: it scans
    upward a few steps, then gallops and bisects.
    """
    population = sum(sizes.values())

    def ok(n: int) -> tuple[bool, dict[str, int]]:
        alloc = allocate(sizes, n)
        return _meets(_parts(sizes, alloc, defective), confidence), alloc

    n = start
    for _ in range(64):
        good, alloc = ok(n)
        if good or n >= population:
            return n, alloc
        n += 1
    step, lo = 1, n
    while True:
        hi = min(population, lo + step)
        good, alloc = ok(hi)
        if good or hi == population:
            break
        lo, step = hi, step * 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if ok(mid)[0]:
            hi = mid
        else:
            lo = mid
    return hi, allocate(sizes, hi)


def make_plan(
    items: Sequence[T],
    *,
    seed: int,
    rate: float | None = None,
    minimum: int | None = None,
    prevalence: float | None = None,
    confidence: float | None = None,
    strata: Mapping[T, str] | None = None,
    exclude: Iterable[T] = (),
) -> Plan:
    """Size, allocate and draw a sample, and state what it guarantees.

    With ``confidence`` (and then ``prevalence``, required) the plan is a
    guarantee plan; otherwise it is the flat plan (``rate``/``minimum``,
    defaults 15 % and 5) and ``prevalence`` only names the prevalence at which
    its detection probability is stated (default 5 %).
    """
    if confidence is not None:
        if prevalence is None:
            raise ValueError(
                "a confidence needs a prevalence: the guarantee is about defects that common"
            )
        if rate is not None or minimum is not None:
            raise ValueError("rate and minimum belong to the flat plan, not to a guarantee plan")
        method: Method = "guarantee"
    else:
        method = "flat"
        rate = DEFAULT_RATE if rate is None else rate
        minimum = DEFAULT_MINIMUM if minimum is None else minimum
    _check_seed(seed)
    excluded_ids = list(exclude)
    population_items = _population(items, excluded_ids)
    excluded = len(items) - len(population_items)
    size = len(population_items)
    stated = DEFAULT_PREVALENCE if prevalence is None else prevalence

    if method == "guarantee":
        assert confidence is not None
        n = size_for_guarantee(size, stated, confidence)
    else:
        assert rate is not None and minimum is not None
        n = flat_plan(size, rate, minimum)
    defective = defective_count(size, stated)

    notes: list[str] = []
    groups = _group(population_items, strata) if strata is not None else None
    strata_out: tuple[Stratum, ...] | None = None
    if groups is None:
        alloc = {"": n}
        probability = detection_probability(size, defective, n) if size else None
        certain = size > 0 and defective + n > size
    else:
        sizes = {name: len(members) for name, members in groups.items()}
        asked = n
        if method == "guarantee" and size:
            assert confidence is not None
            n, alloc = _stratified_guarantee(sizes, max(n, len(sizes)), defective, confidence)
        else:
            alloc = allocate(sizes, n)
            n = sum(alloc.values())
        if size and asked < len(sizes):
            notes.append(f"raised from {asked} so each of the {len(sizes)} strata has one item")
        if n > max(asked, len(sizes)):
            notes.append(
                f"raised from {max(asked, len(sizes))} to meet the confidence "
                "in the worst case across strata"
            )
        total = sum(sizes.values())
        strata_out = tuple(
            Stratum(name, sizes[name], n * sizes[name] / total if total else 0.0, alloc[name])
            for name in sizes
        )
        probability = stratified_detection_probability(sizes, alloc, defective) if size else None
        certain = size > 0 and defective + n > size

    rng = random.Random(seed)
    chosen = _draw_indices(rng, groups, size, alloc)
    return Plan(
        n=n,
        population=size,
        method=method,
        items=tuple(population_items[i] for i in chosen),
        seed=seed,
        prevalence=float(stated),
        defective=defective,
        detection_probability=probability,
        confidence=confidence,
        rate=rate if method == "flat" else None,
        minimum=minimum if method == "flat" else None,
        strata=strata_out,
        excluded=excluded,
        notes=tuple(notes),
        certain=certain,
    )
