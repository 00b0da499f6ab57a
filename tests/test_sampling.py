"""Batch sampling: plan sizes, the exact guarantee, strata, seeds, exclusion, the CLI.

The hypergeometric figures are checked against two independent computations:
scipy.stats.hypergeom, and exact fractions from math.comb written out here.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom

from santa_method.core.estimate import estimate_defect_rate
from santa_method.core.sampling import (
    allocate,
    defective_count,
    detection_probability,
    draw,
    flat_plan,
    make_plan,
    size_for_guarantee,
    stratified_detection_probability,
    worst_case_defects,
)


def exact_detection(population: int, defective: int, sample: int) -> Fraction:
    """1 - C(N-D, n)/C(N, n), written out independently of the module."""
    return 1 - Fraction(math.comb(population - defective, sample), math.comb(population, sample))


def ids(n: int) -> list[str]:
    return [f"item-{i:04d}" for i in range(n)]


# ---------------------------------------------------------------- flat plan


@pytest.mark.parametrize(
    ("population", "expected"),
    [(0, 0), (1, 1), (3, 3), (5, 5), (6, 5), (33, 5), (34, 6), (100, 15), (1000, 150)],
)
def test_flat_plan_is_max_of_minimum_and_rate_capped_at_population(
    population: int, expected: int
) -> None:
    assert flat_plan(population) == expected


def test_flat_plan_reads_rates_as_decimals() -> None:
    # 0.07 * 100 is 7.000000000000001 in binary floating point; ceil must still give 7.
    assert flat_plan(100, rate=0.07, minimum=0) == 7
    assert flat_plan(10, rate=1.0, minimum=0) == 10


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0.0},
        {"rate": 1.5},
        {"rate": -0.1},
        {"rate": math.nan},
        {"minimum": -1},
        {"minimum": 2.5},
        {"population": -1},
        {"population": True},
    ],
)
def test_flat_plan_rejects_bad_input(kwargs: dict) -> None:
    args = {"population": 10, "rate": 0.15, "minimum": 5, **kwargs}
    with pytest.raises(ValueError):
        flat_plan(**args)


# ---------------------------------------------------------------- hypergeometric


GRID = [
    (population, defective, sample)
    for population in (1, 2, 5, 10, 37, 100, 1000, 10_000, 1_000_000)
    for defective in sorted({0, 1, 2, population // 20, population // 2, population})
    for sample in sorted({0, 1, 5, population // 7, population // 2, population})
    if defective <= population and sample <= population
]


@pytest.mark.parametrize(("population", "defective", "sample"), GRID)
def test_detection_probability_matches_scipy(population: int, defective: int, sample: int) -> None:
    ours = detection_probability(population, defective, sample)
    theirs = hypergeom.sf(0, population, defective, sample)
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-13)


@pytest.mark.parametrize(
    ("population", "defective", "sample"),
    [(20, 1, 19), (1000, 50, 57), (1000, 50, 56), (500, 3, 200), (60, 30, 2), (7, 7, 1)],
)
def test_detection_probability_matches_exact_fractions(
    population: int, defective: int, sample: int
) -> None:
    expected = float(exact_detection(population, defective, sample))
    assert detection_probability(population, defective, sample) == pytest.approx(
        expected, rel=1e-13
    )


def test_detection_probability_is_accurate_for_a_million_items() -> None:
    # Tiny and near-certain probabilities both keep their relative precision.
    assert detection_probability(10**6, 1, 1) == pytest.approx(1e-6, rel=1e-12)
    miss = 1 - detection_probability(10**6, 50_000, 200)
    assert miss == pytest.approx(hypergeom.pmf(0, 10**6, 50_000, 200), rel=1e-9)
    assert detection_probability(10**6, 500_000, 500_001) == 1.0


def test_detection_probability_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        detection_probability(10, 11, 1)
    with pytest.raises(ValueError):
        detection_probability(10, 1, 11)
    with pytest.raises(ValueError):
        detection_probability(10, -1, 1)


def test_defective_count_is_at_least_one_item() -> None:
    assert defective_count(1000, 0.05) == 50
    assert defective_count(100, 0.07) == 7  # decimal, not 7.000000000000001
    assert defective_count(100, 0.001) == 1  # below one item: assume one
    assert defective_count(0, 0.05) == 0


def test_the_example_figure_is_exact() -> None:
    # N = 1000, P = 5 %, C = 95 %: 57 items see a defect with probability 0.95076...
    n = size_for_guarantee(1000, 0.05, 0.95)
    assert n == 57
    assert float(exact_detection(1000, 50, 56)) < 0.95 <= float(exact_detection(1000, 50, 57))
    plan = make_plan(ids(1000), seed=7, prevalence=0.05, confidence=0.95)
    assert plan.detection_probability == pytest.approx(0.9507631609726, rel=1e-12)
    # Rounded down (95.07 -> 95.0), so the stated figure never exceeds the true one.
    assert (
        plan.statement()
        == "57 of 1000 items: a defect in 5 % of items is seen with probability 95.0 %"
    )


def test_size_for_guarantee_is_exact_at_the_boundary() -> None:
    # One defective item in 20: n/20 >= 0.95 first holds at n = 19, exactly 0.95.
    assert exact_detection(20, 1, 19) == Fraction(19, 20)
    assert size_for_guarantee(20, 0.05, 0.95) == 19
    # 1 - C(14, 4)/C(16, 4) is exactly 9/20, but its floating-point value is 0.44999999999999996.
    assert exact_detection(16, 2, 4) == Fraction(9, 20)
    assert size_for_guarantee(16, 0.125, 0.45) == 4


def test_size_for_guarantee_for_a_million_items_matches_scipy() -> None:
    n = size_for_guarantee(10**6, 0.05, 0.95)
    assert hypergeom.sf(0, 10**6, 50_000, n) >= 0.95 > hypergeom.sf(0, 10**6, 50_000, n - 1)
    assert size_for_guarantee(10**6, 1e-7, 0.95) == 950_000  # one defective item in a million


@settings(max_examples=150, deadline=None)
@given(
    population=st.integers(min_value=1, max_value=3000),
    prevalence=st.floats(min_value=0.0005, max_value=0.6),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
def test_size_for_guarantee_is_minimal_and_never_exceeds_population(
    population: int, prevalence: float, confidence: float
) -> None:
    n = size_for_guarantee(population, prevalence, confidence)
    defective = max(1, math.ceil(Fraction(repr(prevalence)) * population))
    target = Fraction(repr(confidence))
    assert 1 <= n <= population
    assert exact_detection(population, defective, n) >= target
    if n > 1:
        assert exact_detection(population, defective, n - 1) < target


@pytest.mark.parametrize(
    ("prevalence", "confidence"), [(0.0, 0.9), (1.0, 0.9), (0.05, 1.0), (0.05, 0.0), (5, 0.95)]
)
def test_size_for_guarantee_rejects_values_outside_zero_one(
    prevalence: float, confidence: float
) -> None:
    with pytest.raises(ValueError):
        size_for_guarantee(100, prevalence, confidence)


# ---------------------------------------------------------------- small and large batches


@pytest.mark.parametrize("size", [0, 1, 3, 5, 1000])
@pytest.mark.parametrize("guarantee", [False, True])
def test_plans_work_on_small_and_large_batches(size: int, guarantee: bool) -> None:
    items = ids(size)
    kwargs = {"prevalence": 0.05, "confidence": 0.95} if guarantee else {}
    plan = make_plan(items, seed=3, **kwargs)
    assert plan.population == size
    assert plan.n == len(plan.items) <= size
    assert len(set(plan.items)) == plan.n
    assert list(plan.items) == [x for x in items if x in set(plan.items)]  # input order
    if size == 0:
        assert plan.detection_probability is None
        assert "empty" in plan.statement()
    elif size <= 5:
        # The published sampler crashed here (random.sample(items, 5) on fewer than 5 items).
        assert plan.n == size
        assert plan.detection_probability == 1.0
        assert "probability 100 %" in plan.statement()
    else:
        assert plan.n == (57 if guarantee else 150)


def test_flat_plan_states_its_figure_at_five_percent_or_a_given_prevalence() -> None:
    default = make_plan(ids(1000), seed=1, rate=0.01, minimum=0)
    assert default.n == 10
    assert default.detection_probability == pytest.approx(hypergeom.sf(0, 1000, 50, 10))
    assert "a defect in 5 % of items" in default.statement()
    stated = make_plan(ids(1000), seed=1, rate=0.01, minimum=0, prevalence=0.2)
    assert stated.detection_probability == pytest.approx(hypergeom.sf(0, 1000, 200, 10))
    assert "a defect in 20 % of items" in stated.statement()


def test_statement_never_rounds_a_possible_miss_up_to_certainty() -> None:
    plan = make_plan(ids(10_000), seed=1, rate=0.5, minimum=0, prevalence=0.5)
    assert plan.detection_probability == 1.0  # a double cannot hold 1 - 10^-1500
    assert "over 99.9 %" in plan.statement()


def test_make_plan_rejects_mixed_plans() -> None:
    with pytest.raises(ValueError, match="prevalence"):
        make_plan(ids(10), seed=1, confidence=0.95)
    with pytest.raises(ValueError, match="flat plan"):
        make_plan(ids(10), seed=1, rate=0.2, prevalence=0.05, confidence=0.95)


# ---------------------------------------------------------------- seeds and exclusion


def test_same_seed_same_sample_different_seed_different_sample() -> None:
    items = ids(1000)
    first = draw(items, 150, seed=11)
    assert first == draw(items, 150, seed=11)
    assert first != draw(items, 150, seed=12)
    assert make_plan(items, seed=11).items == make_plan(items, seed=11).items


def test_a_seed_keeps_drawing_the_same_items_across_releases() -> None:
    # A recorded plan must stay reproducible: changing the draw breaks old seeds.
    assert draw(ids(20), 4, seed=2024) == ["item-0005", "item-0006", "item-0009", "item-0015"]


def test_draw_caps_n_at_the_population() -> None:
    assert draw(ids(3), 5, seed=1) == ids(3)
    assert draw([], 5, seed=1) == []


def test_draw_rejects_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="more than once"):
        draw(["a", "b", "a"], 1, seed=1)


def test_exclusion_removes_items_before_sampling() -> None:
    items = ids(100)
    first = make_plan(items, seed=5, rate=0.3, minimum=0)
    second = make_plan(items, seed=5, rate=0.3, minimum=0, exclude=[*first.items, "unknown"])
    assert second.population == 100 - first.n
    assert second.excluded == first.n
    assert not set(second.items) & set(first.items)
    assert second.n == math.ceil(0.3 * second.population)
    everything = make_plan(items, seed=5, exclude=items)
    assert (everything.population, everything.n, everything.items) == (0, 0, ())


# ---------------------------------------------------------------- strata


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=12),
    share=st.floats(min_value=0.0, max_value=1.0),
)
def test_allocation_sums_covers_every_stratum_and_is_proportional(
    sizes: list[int], share: float
) -> None:
    strata = {f"s{i}": size for i, size in enumerate(sizes)}
    total = sum(sizes)
    n = round(share * total)
    alloc = allocate(strata, n)
    if n == 0:
        assert sum(alloc.values()) == 0
        return
    assert sum(alloc.values()) == max(n, len(strata))
    assert all(1 <= alloc[s] <= strata[s] for s in strata)
    quotas = {s: Fraction(n * strata[s], total) for s in strata}
    if all(q >= 1 for q in quotas.values()):
        # Largest remainder stays within one item of every exact quota.
        assert all(abs(alloc[s] - quotas[s]) < 1 for s in strata)


def test_allocation_grows_n_to_the_number_of_strata() -> None:
    assert allocate({"a": 50, "b": 30, "c": 20}, 2) == {"a": 1, "b": 1, "c": 1}
    assert allocate({"a": 90, "b": 9, "c": 1}, 10) == {"a": 8, "b": 1, "c": 1}


def test_stratified_draw_takes_each_strata_allocation() -> None:
    items = ids(1000)
    strata = {x: ("big" if i < 900 else "mid" if i < 990 else "tiny") for i, x in enumerate(items)}
    plan = make_plan(items, seed=9, strata=strata)
    allocated = {s.name: s.allocated for s in plan.strata or ()}
    assert allocated == {"big": 135, "mid": 14, "tiny": 1}
    drawn = {name: sum(strata[x] == name for x in plan.items) for name in allocated}
    assert drawn == allocated
    assert plan.items == make_plan(items, seed=9, strata=strata).items
    # make_plan sizes the sample; draw is the same draw for that size.
    assert draw(items, plan.n, seed=9, strata=strata) == list(plan.items)


def test_stratified_plan_states_when_n_grows_to_the_strata() -> None:
    items = ids(10)
    plan = make_plan(items, seed=1, rate=0.1, minimum=1, strata={x: x[-1] for x in items})
    assert plan.n == 10
    assert "raised from 1 so each of the 10 strata has one item" in plan.statement()


def _max_miss_brute_force(sizes: dict[str, int], alloc: dict[str, int], defective: int) -> Fraction:
    """The largest miss probability over every placement of the defective items."""
    names = list(sizes)
    best = Fraction(0)
    for placed in itertools.product(*(range(sizes[s] + 1) for s in names)):
        if sum(placed) != defective:
            continue
        miss = Fraction(1)
        for s, d in zip(names, placed, strict=True):
            miss *= Fraction(math.comb(sizes[s] - d, alloc[s]), math.comb(sizes[s], alloc[s]))
        best = max(best, miss)
    return best


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=3),
    data=st.data(),
)
def test_stratified_probability_is_the_worst_case_placement(sizes: list[int], data) -> None:
    strata = {f"s{i}": size for i, size in enumerate(sizes)}
    total = sum(sizes)
    n = data.draw(st.integers(min_value=1, max_value=total))
    defective = data.draw(st.integers(min_value=1, max_value=total))
    alloc = allocate(strata, n)
    worst = _max_miss_brute_force(strata, alloc, defective)
    assert sum(worst_case_defects(strata, alloc, defective).values()) == defective
    assert stratified_detection_probability(strata, alloc, defective) == pytest.approx(
        float(1 - worst), abs=1e-12
    )


def test_stratified_guarantee_holds_in_the_worst_case() -> None:
    items = ids(1000)
    strata = {x: ("big" if i < 900 else "mid" if i < 990 else "tiny") for i, x in enumerate(items)}
    plan = make_plan(items, seed=4, prevalence=0.05, confidence=0.95, strata=strata)
    assert plan.detection_probability is not None and plan.detection_probability >= 0.95
    alloc = {s.name: s.allocated for s in plan.strata or ()}
    sizes = {s.name: s.size for s in plan.strata or ()}
    assert plan.n == sum(alloc.values()) == len(plan.items)
    # The floor of one for "tiny" starves "big", so plain 57 would fall short.
    assert stratified_detection_probability(sizes, allocate(sizes, 57), 50) < 0.95
    assert plan.n > 57
    assert "worst case" in plan.statement()


# ---------------------------------------------------------------- estimates


def test_estimate_defect_rate_reports_share_and_interval() -> None:
    estimate = estimate_defect_rate(3, 57, 1000)
    assert estimate.rate == pytest.approx(3 / 57)
    assert estimate.low < estimate.rate < estimate.high
    assert estimate.statement().startswith("3 of 57 sampled items failed (5.3%)")
    assert estimate.to_json()["interval"] == [estimate.low, estimate.high]


# ---------------------------------------------------------------- the CLI


def santa(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "santa_method", "sample", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    with (tmp_path / "items.jsonl").open("w") as fh:
        for i in range(1000):
            fh.write(
                json.dumps({"id": f"r{i}", "kind": "rare" if i % 10 == 0 else "common"}) + "\n"
            )
    folder = tmp_path / "docs"
    for rel in ("a/1.md", "a/2.md", "a/3.md", "b/4.md", ".hidden/5.md", "a/.6.md"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(rel)
    return tmp_path


def test_cli_guarantee_plan_json_shape(batch: Path) -> None:
    result = santa(
        batch,
        "items.jsonl",
        "--prevalence",
        "0.05",
        "--confidence",
        "0.95",
        "--seed",
        "3",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert {
        "n",
        "population",
        "detection_probability",
        "items",
        "method",
        "seed",
        "strata",
        "statement",
    } <= set(plan)
    assert (plan["n"], plan["population"], plan["method"], plan["seed"]) == (
        57,
        1000,
        "guarantee",
        3,
    )
    assert len(plan["items"]) == 57 and plan["strata"] is None
    assert (
        plan["statement"]
        == "57 of 1000 items: a defect in 5 % of items is seen with probability 95.0 %"
    )
    again = json.loads(
        santa(
            batch,
            "items.jsonl",
            "--prevalence",
            "0.05",
            "--confidence",
            "0.95",
            "--seed",
            "3",
            "--json",
        ).stdout
    )
    assert again["items"] == plan["items"]


def test_cli_readable_output_prints_the_seed_that_reproduces_it(batch: Path) -> None:
    result = santa(batch, "items.jsonl")
    assert result.returncode == 0, result.stderr
    first, *items = result.stdout.splitlines()
    assert first.startswith("150 of 1000 items (flat 15 %, at least 5)")
    seed = first.rsplit("(seed ", 1)[1].rstrip(")")
    assert len(items) == 150
    replay = santa(batch, "items.jsonl", "--seed", seed).stdout.splitlines()
    assert replay[1:] == items


def test_cli_folder_items_are_recursive_sorted_and_skip_hidden(batch: Path) -> None:
    result = santa(
        batch, "docs", "--strata", "dir", "--min", "1", "--rate", "0.1", "--seed", "1", "--json"
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["population"] == 4
    assert [(s["name"], s["size"], s["allocated"]) for s in plan["strata"]] == [
        ("docs/a", 3, 1),
        ("docs/b", 1, 1),
    ]
    all_items = json.loads(santa(batch, "docs", "--rate", "1", "--json").stdout)["items"]
    assert all_items == ["docs/a/1.md", "docs/a/2.md", "docs/a/3.md", "docs/b/4.md"]


def test_cli_strata_field_and_exclusion_of_an_earlier_plan(batch: Path) -> None:
    first = santa(batch, "items.jsonl", "--strata", "kind", "--seed", "2", "--json")
    assert first.returncode == 0, first.stderr
    (batch / "first.json").write_text(first.stdout)
    plan = json.loads(first.stdout)
    assert {s["name"]: s["allocated"] for s in plan["strata"]} == {"rare": 15, "common": 135}
    second = json.loads(
        santa(batch, "items.jsonl", "--exclude", "first.json", "--seed", "2", "--json").stdout
    )
    assert second["population"] == 850
    assert not set(second["items"]) & set(plan["items"])
    (batch / "ids.txt").write_text("# reviewed already\nr1\nr2\n\n")
    third = json.loads(santa(batch, "items.jsonl", "--exclude", "ids.txt", "--json").stdout)
    assert third["population"] == 998


def test_cli_jsonl_without_ids_uses_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n{"id": 7}\n')
    plan = json.loads(santa(tmp_path, "x.jsonl", "--json").stdout)
    assert plan["items"] == ["1", "3", "7"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["items.jsonl", "--prevalence", "0.05"], "go together"),
        (["items.jsonl", "--confidence", "0.95"], "go together"),
        (["items.jsonl", "--prevalence", "5", "--confidence", "0.95"], "above 0 and below 1"),
        (["items.jsonl", "--prevalence", "0.05", "--confidence", "1"], "above 0 and below 1"),
        (
            ["items.jsonl", "--prevalence", "0.05", "--confidence", "0.9", "--rate", "0.2"],
            "flat plan",
        ),
        (["items.jsonl", "--rate", "0"], "--rate"),
        (["missing.jsonl"], "no such file"),
        (["docs", "--strata", "kind"], "only be stratified by 'dir'"),
        (["items.jsonl", "items.jsonl"], "more than once"),
    ],
)
def test_cli_usage_and_input_errors_exit_2(batch: Path, args: list[str], message: str) -> None:
    result = santa(batch, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_cli_rejects_a_broken_jsonl_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n{oops\n')
    result = santa(tmp_path, "bad.jsonl")
    assert result.returncode == 2
    assert "bad.jsonl line 2 is not valid JSON" in result.stderr


@pytest.mark.parametrize(("population", "n"), [(100, 5), (1000, 57), (50, 10), (20, 20)])
def test_hypergeometric_interval_covers_at_least_its_confidence(population: int, n: int) -> None:
    """Exact coverage by enumeration with scipy: the interval holds the true
    share with probability >= 95 % for every defect count (score intervals do
    not, near zero)."""
    from scipy.stats import hypergeom

    from santa_method.core.estimate import hypergeometric_interval

    step = max(1, population // 40)
    for defective in range(0, population + 1, step):
        dist = hypergeom(population, defective, n)
        covered = 0.0
        for x in range(0, n + 1):
            p = dist.pmf(x)
            if p == 0:
                continue
            low, high = hypergeometric_interval(x, n, population)
            if low - 1e-12 <= defective / population <= high + 1e-12:
                covered += p
        assert covered >= 0.95 - 1e-9, (defective, covered)


def test_hypergeometric_interval_respects_what_was_seen() -> None:
    from santa_method.core.estimate import hypergeometric_interval

    assert hypergeometric_interval(1, 20, 20) == (0.05, 0.05)  # a census is exact
    low, high = hypergeometric_interval(1, 20, 100)
    assert low >= 0.01 and high <= 0.81  # at least the one seen; at most all unseen
    assert hypergeometric_interval(0, 57, 1000)[0] == 0.0


def test_an_excluded_id_that_matches_no_item_is_warned_about(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text("".join(f'{{"id": "i{n}"}}\n' for n in range(5)), encoding="utf-8")
    skip = tmp_path / "skip.txt"
    skip.write_text("i1\nnope\n", encoding="utf-8")
    done = santa(tmp_path, str(items), "--exclude", str(skip), "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["population"] == 4
    assert "1 excluded id(s) match no item: nope" in done.stderr


def test_a_batch_of_one_item_is_said_in_the_singular() -> None:
    assert make_plan(ids(1), seed=7).statement().startswith("1 of 1 item (")
    assert make_plan(ids(2), seed=7).statement().startswith("2 of 2 items (")
