"""Metrics on a hand-computed log, Fleiss' kappa against statsmodels, and the CLI."""

from __future__ import annotations

import json
import random
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from santa_method.cli import main
from santa_method.state import log, metrics
from santa_method.state.metrics import (
    compute,
    fleiss_kappa,
    runs_from_records,
    since_filter,
)

FA, CO = "factual-accuracy", "completeness"
T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


class Log:
    """Builds a log through the real writer, one minute per record."""

    def __init__(self, path: Path, start: datetime = T0) -> None:
        self.path, self.clock = path, start

    def add(self, run_id: str, event: str, iteration=None, **data) -> None:
        log.append(
            self.path,
            {"run_id": run_id, "event": event, "iteration": iteration, **data},
            ts=self.clock,
        )
        self.clock += timedelta(minutes=1)

    def review(
        self, run_id: str, it: int, label: str, fa: str, co: str, *, valid: bool = True, **data
    ) -> None:
        checks = [{"criterion": FA, "result": fa}, {"criterion": CO, "result": co}]
        verdict = "PASS" if fa == co == "PASS" else "FAIL"
        self.add(
            run_id,
            "review",
            it,
            label=label,
            valid=valid,
            verdict=verdict if valid else None,
            errors=[],
            checks=checks,
            issues=[],
            **data,
        )

    def gate(
        self,
        run_id: str,
        it: int,
        verdict: str,
        nxt: str,
        issues=(),
        valid=("B", "C"),
        slots=("B", "C"),
    ) -> None:
        merged = [
            {
                "criterion": c,
                "issue": f"{c} problem",
                "key": f"{c}|k",
                "flagged_by": list(by),
                "evidence": "none",
            }
            for c, by in issues
        ]
        self.add(
            run_id,
            "gate",
            it,
            verdict=verdict,
            next=nxt,
            issues=merged,
            agreement=None,
            reviewers=list(slots),
            valid_reviewers=list(valid),
        )


@pytest.fixture
def fixture_log(tmp_path: Path) -> Path:
    return build_fixture_log(tmp_path / "log.jsonl")


def build_fixture_log(path: Path) -> Path:
    """Six runs whose every metric is computed by hand in the tests below."""
    g = Log(path)
    # R1: NICE in round 1, shipped. Cost known in USD for both sides.
    g.add("R1", "run", 0, target="a.md", reviewers=2)
    g.add("R1", "generate", None, tokens=1000, cost_usd=0.02)
    g.review("R1", 1, "B", "PASS", "PASS", tokens=500, cost_usd=0.005)
    # C also rates two criteria B does not share (compliance) or that never vary.
    g.add(
        "R1",
        "review",
        1,
        label="C",
        valid=True,
        verdict="PASS",
        errors=[],
        issues=[],
        tokens=500,
        cost_usd=0.005,
        checks=[
            {"criterion": FA, "result": "PASS"},
            {"criterion": CO, "result": "PASS"},
            {"criterion": "compliance", "result": "PASS"},
        ],
    )
    g.gate("R1", 1, "NICE", "ship")
    g.add("R1", "ship", 1, reason="NICE")
    # R2: completeness flagged by both, fixed, NICE in round 2; an escape later.
    g.add("R2", "run", 0, target="b.md", reviewers=2)
    g.add("R2", "generate", None, tokens=700)
    g.review("R2", 1, "B", "PASS", "FAIL", tokens=300)
    g.review("R2", 1, "C", "PASS", "FAIL", tokens=300)
    g.gate("R2", 1, "NAUGHTY", "fix", [(CO, "BC")])
    g.add("R2", "fix", 1, changed="added the section", tokens=200)
    g.review("R2", 2, "B", "PASS", "PASS", tokens=300)
    g.review("R2", 2, "C", "PASS", "PASS", tokens=300)
    g.gate("R2", 2, "NICE", "ship")
    g.add("R2", "ship", 2, reason="NICE")
    # R3: two rounds, then escalated (cap).
    g.add("R3", "run", 0, target="c.md", reviewers=2)
    g.review("R3", 1, "B", "FAIL", "PASS")
    g.review("R3", 1, "C", "PASS", "PASS")
    g.gate("R3", 1, "NAUGHTY", "fix", [(FA, "B")])
    g.add("R3", "fix", 1, changed="reworded")
    g.review("R3", 2, "B", "PASS", "FAIL")
    g.review("R3", 2, "C", "FAIL", "FAIL")
    g.gate("R3", 2, "NAUGHTY", "escalate", [(CO, "BC"), (FA, "C")])
    g.add("R3", "escalate", 2, reason="fixes exhausted")
    # R4: C's reply invalid -> rereview of C alone -> NICE, same round 1.
    g.add("R4", "run", 0, target="d.md", reviewers=2)
    g.review("R4", 1, "B", "PASS", "PASS")
    g.review("R4", 1, "C", "FAIL", "FAIL", valid=False)  # invalid: must not rate
    g.gate("R4", 1, "NAUGHTY", "rereview", [], valid=("B",))
    g.review("R4", 1, "C", "PASS", "PASS")
    g.gate("R4", 1, "NICE", "ship")
    g.add("R4", "ship", 1, reason="NICE")
    # R5: three reviewers, one round, left open.
    g.add("R5", "run", 0, target="e.md", reviewers=3)
    g.review("R5", 1, "B", "PASS", "FAIL")
    g.review("R5", 1, "C", "PASS", "PASS")
    g.review("R5", 1, "D", "PASS", "FAIL")
    g.gate("R5", 1, "NAUGHTY", "fix", [(CO, "BD")], valid=("B", "C", "D"), slots=("B", "C", "D"))
    # R6: generated, never reviewed.
    g.add("R6", "generate", None, tokens=50)
    # The escape on R2 is filed weeks later.
    g.clock += timedelta(days=30)
    g.add("R2", "escape", "after release", description="a wrong date slipped through")
    return g.path


@pytest.fixture
def result(fixture_log: Path) -> dict:
    read = log.read(fixture_log)
    assert read.damaged == ()
    return compute(read.records)


def test_outcomes_and_counts(result: dict, fixture_log: Path) -> None:
    assert result["runs"] == {"total": 6, "shipped": 3, "escalated": 1, "reported": 0, "open": 2}
    views = {r.run_id: r for r in runs_from_records(log.read(fixture_log).records)}
    assert {k: v.outcome for k, v in views.items()} == {
        "R1": "shipped",
        "R2": "shipped",
        "R3": "escalated",
        "R4": "shipped",
        "R5": "open",
        "R6": "open",
    }
    # A round's verdict is its last gate: R4's round 1 is NICE despite its first gate.
    assert views["R4"].rounds[1]["verdict"] == "NICE" and views["R4"].first_nice == 1


def test_rates(result: dict) -> None:
    # Runs with a round-1 gate: R1..R5. NICE in round 1: R1, R4.
    assert result["first_pass_rate"] == pytest.approx(2 / 5)
    assert result["pass_at_k"] == {
        "1": pytest.approx(0.4),
        "2": pytest.approx(0.6),
        "3": pytest.approx(0.6),
        "4": pytest.approx(0.6),
    }
    assert result["mean_rounds_to_nice"] == pytest.approx((1 + 2 + 1) / 3)
    assert result["escalation_rate"] == pytest.approx(1 / 4)
    assert result["escape_rate"] == pytest.approx(1 / 3)


def test_taxonomy_and_recurring(result: dict) -> None:
    # Last gates only: R2r1 CO; R3r1 FA; R3r2 CO, FA; R5r1 CO.
    assert result["taxonomy"] == {CO: 3, FA: 2}
    assert list(result["taxonomy"]) == [CO, FA]
    # Completeness fails in R2, R3, R5; factual accuracy only in R3.
    assert result["recurring"] == [{"criterion": CO, "runs": 3}]


def test_agreement_by_hand(result: dict) -> None:
    # Problems raised by two or more valid reviewers: R2r1 CO (B,C), R3r2 CO (B,C)
    # and R5r1 CO (B,D of B,C,D) of 5.
    assert result["agreement"]["issues"] == pytest.approx(3 / 5)
    kappa = result["agreement"]["kappa"]
    # Units (PASS, FAIL) for FA: R1 (2,0) R2r1 (2,0) R2r2 (2,0) R3r1 (1,1) R3r2 (1,1)
    # R4 (2,0) R5 (3,0): P-bar = 5/7, P_e = (13/15)^2 + (2/15)^2 = 173/225 -> -43/182.
    assert kappa[FA] == pytest.approx(float(Fraction(-43, 182)))
    # CO: (2,0) (0,2) (2,0) (2,0) (0,2) (2,0) (1,2): P-bar = 19/21, P_e = 13/25 -> 101/126.
    assert kappa[CO] == pytest.approx(float(Fraction(101, 126)))
    # Rated by one reviewer only: no unit; undefined.
    assert kappa["compliance"] is None
    assert set(kappa) == {FA, CO, "compliance"}


def test_cost_by_hand(result: dict) -> None:
    cost = result["cost"]
    r1, r2, r6 = cost["per_run"]["R1"], cost["per_run"]["R2"], cost["per_run"]["R6"]
    assert r1 == {
        "tokens": 1000,
        "cache_read_tokens": None,  # no record of the run carries the cache split
        "cache_write_tokens": None,
        "cost_usd": pytest.approx(0.01),
        "generation_tokens": 1000,
        "generation_cost_usd": pytest.approx(0.02),
        "multiple": pytest.approx(0.5),
        "basis": "usd",
    }
    assert r2["tokens"] == 1400 and r2["cost_usd"] is None
    assert r2["multiple"] == pytest.approx(2.0) and r2["basis"] == "tokens"
    assert r6["tokens"] is None and r6["generation_tokens"] == 50 and r6["multiple"] is None
    assert set(cost["per_run"]) == {"R1", "R2", "R6"}
    assert cost["tokens_total"] == 2400
    assert cost["cost_usd_total"] == pytest.approx(0.01)
    assert cost["mean_tokens_per_run"] == pytest.approx(1200)
    assert cost["mean_cost_usd_per_run"] == pytest.approx(0.01)
    assert cost["mean_multiple"] == pytest.approx(1.25)


def test_cache_split_from_token_detail_without_double_counting(tmp_path: Path) -> None:
    g = Log(tmp_path / "log.jsonl")
    detail = {"input": 100, "output": 20, "cache_read": 900, "cache_write": 0, "total": 1020}
    g.review("C1", 1, "B", "PASS", "PASS", tokens=1020, token_detail=detail, cost_usd=0.001)
    second = {**detail, "cache_read": 0, "cache_write": 900}
    g.review("C1", 1, "C", "PASS", "PASS", tokens=1020, token_detail=second, cost_usd=0.002)
    g.gate("C1", 1, "NICE", "ship")
    # A tokens map with its own total counts the total once, not total + parts.
    g.add("C1", "ship", None, tokens={"input": 5, "output": 5, "cache_read": 2, "total": 12})
    g.review("C2", 1, "B", "PASS", "PASS", tokens=300)  # an older record: no split
    cost = compute(log.read(g.path).records)["cost"]
    c1, c2 = cost["per_run"]["C1"], cost["per_run"]["C2"]
    assert c1["tokens"] == 1020 + 1020 + 12
    assert c1["cache_read_tokens"] == 902 and c1["cache_write_tokens"] == 900
    assert c1["cost_usd"] == pytest.approx(0.003)
    assert c2["tokens"] == 300
    assert c2["cache_read_tokens"] is None and c2["cache_write_tokens"] is None
    assert cost["tokens_total"] == 2352
    assert cost["cache_read_tokens_total"] == 902 and cost["cache_write_tokens_total"] == 900
    assert compute([])["cost"]["cache_read_tokens_total"] is None


def test_a_cost_or_count_below_zero_in_a_log_is_unknown_not_a_saving(tmp_path: Path) -> None:
    # A log edited by hand (or written before backends were checked) may hold
    # -5: neither the metrics nor a run's budget may count it.
    g = Log(tmp_path / "log.jsonl")
    g.review("N1", 1, "B", "PASS", "PASS", tokens=-300, cost_usd=-5)
    g.review("N1", 1, "C", "PASS", "PASS", tokens=200, cost_usd=0.5)
    records = log.read(g.path).records
    cost = compute(records)["cost"]
    assert cost["per_run"]["N1"]["cost_usd"] == pytest.approx(0.5)
    assert cost["per_run"]["N1"]["tokens"] == 200
    assert cost["mean_cost_usd_per_run"] == pytest.approx(0.5)
    assert log.logged_cost(records, "N1") == pytest.approx(0.5)


def test_targets(result: dict) -> None:
    t = result["targets"]
    assert t["first_pass_rate"] == {"target": "> 70 %", "value": pytest.approx(0.4), "met": False}
    assert t["mean_rounds_to_nice"]["met"] is True
    assert t["escape_rate"]["met"] is False


def test_since_keeps_whole_runs(fixture_log: Path) -> None:
    records = log.read(fixture_log).records
    # Every run started on 2025-06-01; R2's escape a month later stays with R2.
    assert compute(records, since=date(2025, 6, 1))["escape_rate"] == pytest.approx(1 / 3)
    assert compute(records, since=date(2025, 6, 2))["runs"]["total"] == 0
    runs = runs_from_records(records)
    cut = T0 + timedelta(minutes=14)  # R3 starts at minute 14
    kept = [r.run_id for r in since_filter(runs, cut)]
    assert kept == ["R3", "R4", "R5", "R6"]
    naive = cut.replace(tzinfo=None)  # a naive time is UTC
    assert [r.run_id for r in since_filter(runs, naive)] == kept


def test_empty_log_has_no_rates() -> None:
    r = compute([])
    assert r["runs"] == {"total": 0, "shipped": 0, "escalated": 0, "reported": 0, "open": 0}
    for key in ("first_pass_rate", "mean_rounds_to_nice", "escalation_rate", "escape_rate"):
        assert r[key] is None
    assert r["pass_at_k"] == {"1": None, "2": None, "3": None, "4": None}
    assert r["agreement"] == {"issues": None, "kappa": {}}
    assert r["taxonomy"] == {} and r["recurring"] == []
    assert r["cost"]["mean_multiple"] is None and r["cost"]["per_run"] == {}
    assert all(t["met"] is None for t in r["targets"].values())
    json.dumps(r, allow_nan=False)


def test_malformed_fields_never_crash() -> None:
    ts = "2025-01-01T00:00:00Z"
    records = [
        {
            "ts": ts,
            "run_id": "x",
            "event": "gate",
            "iteration": 1,
            "verdict": "NICE",
            "issues": "oops",
        },
        {
            "ts": ts,
            "run_id": "x",
            "event": "review",
            "iteration": 1,
            "label": 5,
            "valid": True,
            "checks": "no",
        },
        {
            "ts": ts,
            "run_id": "y",
            "event": "review",
            "iteration": 1,
            "label": "B",
            "valid": True,
            "checks": [1, {"criterion": 3}],
        },
        {
            "ts": ts,
            "run_id": "y",
            "event": "gate",
            "iteration": 1,
            "verdict": "NAUGHTY",
            "issues": [1, {"flagged_by": "B"}],
            "valid_reviewers": 2,
        },
        {
            "ts": ts,
            "run_id": "y",
            "event": "fix",
            "iteration": 1,
            "tokens": "many",
            "cost_usd": float("nan"),
        },
        {"ts": ts, "run_id": "z", "event": "nonsense"},  # skipped, not a record
        {"ts": ts, "event": "ship"},
    ]
    r = compute(records)
    assert r["runs"]["total"] == 2
    assert r["first_pass_rate"] == pytest.approx(0.5)
    assert r["taxonomy"] == {"unspecified": 1}
    json.dumps(r, allow_nan=False)


def test_a_criterion_rated_twice_by_one_review_is_not_counted() -> None:
    ts = "2025-01-01T00:00:00Z"
    two = [{"criterion": FA, "result": "PASS"}, {"criterion": FA, "result": "FAIL"}]
    one = [{"criterion": FA, "result": "PASS"}]
    records = [
        {
            "ts": ts,
            "run_id": "x",
            "event": "review",
            "iteration": 1,
            "label": "B",
            "valid": True,
            "checks": two,
        },
        {
            "ts": ts,
            "run_id": "x",
            "event": "review",
            "iteration": 1,
            "label": "C",
            "valid": True,
            "checks": one,
        },
        {
            "ts": ts,
            "run_id": "x",
            "event": "gate",
            "iteration": 1,
            "verdict": "NAUGHTY",
            "next": "rereview",
            "issues": [],
        },
    ]
    assert compute(records)["agreement"]["kappa"] == {FA: None}


# -- Fleiss' kappa -------------------------------------------------------------


def random_table(rng: random.Random, units: int, raters: int, categories: int) -> list[list[int]]:
    # Skewed category preferences so that kappa spreads over its range.
    weights = [rng.random() ** 2 + 0.01 for _ in range(categories)]
    table = []
    for _ in range(units):
        row = [0] * categories
        bias = rng.randrange(categories)
        for _ in range(raters):
            j = bias if rng.random() < 0.6 else rng.choices(range(categories), weights)[0]
            row[j] += 1
        table.append(row)
    return table


@pytest.mark.parametrize("seed", range(40))
def test_fleiss_kappa_matches_statsmodels_for_equal_raters(seed: int) -> None:
    rng = random.Random(seed)
    raters = rng.randint(2, 7)
    table = random_table(rng, rng.randint(1, 40), raters, rng.randint(2, 4))
    ours = fleiss_kappa(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        theirs = float(sm_fleiss_kappa(np.array(table), method="fleiss"))
    if ours is None:
        assert not np.isfinite(theirs) or abs(theirs) > 1e9
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def pairwise_kappa(ratings: list[list[int]]) -> float:
    """Independent form: agreeing ordered rater pairs per unit; pooled category shares."""
    observed = []
    for unit in ratings:
        pairs = [(a, b) for i, a in enumerate(unit) for j, b in enumerate(unit) if i != j]
        observed.append(sum(a == b for a, b in pairs) / len(pairs))
    pooled = [x for unit in ratings for x in unit]
    expected = sum((pooled.count(c) / len(pooled)) ** 2 for c in set(pooled))
    return (sum(observed) / len(observed) - expected) / (1 - expected)


@pytest.mark.parametrize("seed", range(25))
def test_fleiss_kappa_with_varying_raters(seed: int) -> None:
    rng = random.Random(1000 + seed)
    categories = rng.randint(2, 3)
    ratings = [
        [rng.randrange(categories) if rng.random() < 0.5 else 0 for _ in range(rng.randint(2, 5))]
        for _ in range(rng.randint(2, 30))
    ]
    table = [[unit.count(c) for c in range(categories)] for unit in ratings]
    ours = fleiss_kappa(table)
    if len({x for unit in ratings for x in unit}) == 1:
        assert ours is None
        return
    assert ours == pytest.approx(pairwise_kappa(ratings), abs=1e-12)
    # Grouped by rater count, each group is an ordinary Fleiss table: statsmodels agrees.
    for n in {len(u) for u in ratings}:
        group = [row for row, unit in zip(table, ratings, strict=True) if len(unit) == n]
        mine = fleiss_kappa(group)
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = float(sm_fleiss_kappa(np.array(group), method="fleiss"))
        if mine is not None:
            assert mine == pytest.approx(ref, abs=1e-12)


def test_fleiss_kappa_edges() -> None:
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([[2, 0], [3, 0]]) is None  # no expected disagreement
    assert fleiss_kappa([[2, 0], [0, 2]]) == pytest.approx(1.0)
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="at least two"):
        fleiss_kappa([[1, 0]])
    with pytest.raises(ValueError, match="every category"):
        fleiss_kappa([[1, 1], [2]])


@pytest.mark.parametrize("seed", range(10))
def test_log_kappa_matches_statsmodels(seed: int, tmp_path: Path) -> None:
    """Random rounds of three reviewers through the real log: the metric equals
    statsmodels on the table built straight from the planted ratings."""
    rng = random.Random(seed)
    g = Log(tmp_path / "log.jsonl")
    table = []
    for run in range(rng.randint(3, 12)):
        ratings = ["PASS" if rng.random() < 0.7 else "FAIL" for _ in "BCD"]
        table.append([ratings.count("PASS"), ratings.count("FAIL")])
        for label, result in zip("BCD", ratings, strict=True):
            g.add(
                f"r{run}",
                "review",
                1,
                label=label,
                valid=True,
                checks=[{"criterion": FA, "result": result}],
            )
        g.add(
            f"r{run}",
            "gate",
            1,
            verdict="NAUGHTY",
            next="fix",
            issues=[],
            valid_reviewers=list("BCD"),
        )
    kappa = compute(log.read(g.path).records)["agreement"]["kappa"][FA]
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = float(sm_fleiss_kappa(np.array(table), method="fleiss"))
    if kappa is None:
        assert not np.isfinite(ref)
    else:
        assert kappa == pytest.approx(ref, abs=1e-12)


# -- the command ---------------------------------------------------------------


def test_cli_json(fixture_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "--log", str(fixture_log), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"]["total"] == 6
    assert out["first_pass_rate"] == pytest.approx(0.4)
    assert out["log"] == str(fixture_log) and out["damaged_lines"] == []
    for key in (
        "pass_at_k",
        "mean_rounds_to_nice",
        "escalation_rate",
        "escape_rate",
        "taxonomy",
        "agreement",
        "recurring",
        "cost",
        "targets",
    ):
        assert key in out


def test_cli_table_and_damage_warnings(
    fixture_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(fixture_log, "ab") as handle:
        handle.write(b"{torn\n")
    assert main(["metrics", "--log", str(fixture_log)]) == 0
    captured = capsys.readouterr()
    assert "first-pass rate" in captured.out and "40.0 %" in captured.out
    assert "pass@2" in captured.out and "completeness" in captured.out
    assert "6 runs: 3 shipped, 1 escalated, 2 open" in captured.out
    assert (
        "santa: warning:" in captured.err and "line" in captured.err and "skipped" in captured.err
    )


def test_cli_since_and_env_log(
    fixture_log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANTA_LOG", str(fixture_log))
    assert main(["metrics", "--json", "--since", "2025-06-02"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"]["total"] == 0
    assert main(["metrics", "--json", "--since", "2025-06-01T09:14:00+00:00"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"]["total"] == 4


def test_cli_absent_default_log_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No runs yet: the default log does not exist, and that is no error.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / ".santa"))
    monkeypatch.delenv("SANTA_LOG", raising=False)
    assert main(["metrics", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"]["total"] == 0
    assert main(["metrics"]) == 0
    assert "0 runs" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["metrics", "runs", "view"])
def test_cli_named_log_that_does_not_exist_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # A mistyped --log must not read as "no runs yet".
    missing = tmp_path / "missing.jsonl"
    assert main([command, "--log", str(missing)]) == 2
    captured = capsys.readouterr()
    assert f"cannot read the log '{missing}': no such file" in captured.err
    assert captured.out == ""
    assert not missing.exists()


def test_cli_bad_date_and_unreadable_log_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["metrics", "--log", str(tmp_path / "x.jsonl"), "--since", "last tuesday"]) == 2
    assert "--since 'last tuesday' is not a date" in capsys.readouterr().err
    assert main(["metrics", "--log", str(tmp_path)]) == 2
    assert "cannot read the log" in capsys.readouterr().err


def test_runs_read_from_the_log_give_the_same_metrics(fixture_log: Path) -> None:
    """`runs_from_log` (santa view's one pass, records neither checked nor copied
    again) groups exactly as `runs_from_records` does, re-reviews included."""
    read = log.read(fixture_log)
    assert metrics.compute_runs(metrics.runs_from_log(read)) == metrics.compute(read.records)
    for view in metrics.runs_from_log(read):
        for iteration, gate in view.rounds.items():
            before = view.records[: view.records.index(gate)]
            latest = {
                r["label"]: r
                for r in before
                if r["event"] == "review" and r["iteration"] == iteration
            }
            assert dict(view.reviews[iteration]) == latest


def test_one_run_is_counted_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = Log(tmp_path / "log.jsonl")
    g.add("R1", "run", 0, target="a.md", reviewers=2)
    assert main(["metrics", "--log", str(g.path)]) == 0
    out = capsys.readouterr().out
    assert "1 run: 0 shipped, 0 escalated, 1 open" in out and "1 runs" not in out
