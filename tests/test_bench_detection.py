"""bench/detection: its cases, and a smoke run against the scripted Messages API.

Why the smoke run asserts exact numbers: the stub's reviewers follow a
fixed plan (STUB_PLAN in run.py), so every column of the report is
predictable; a benchmark that miscounted recall, false positives,
agreement, rounds or cost would pass a looser test unnoticed. Everything
runs on loopback (the stub) or in-process (a scripted backend); nothing is
written to the repository's `.santa/`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _reviews import review_reply
from santa_method.core.errors import InputError
from santa_method.core.rubric import load_rubric
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "bench" / "detection" / "run.py"
CRITERIA = load_rubric("base").ids


def _load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_detection_run", RUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


@contextlib.contextmanager
def _isolated_env(tmp: Path, *, api_key: bool = True) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        if api_key:
            mp.setenv("ANTHROPIC_API_KEY", "dummy-not-used")
        else:
            mp.delenv("ANTHROPIC_API_KEY", raising=False)
            mp.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        mp.setenv("SANTA_HOME", str(tmp / "outer-santa"))
        mp.setenv("CLAUDE_PROJECT_DIR", str(tmp))
        mp.delenv("SANTA_LOG", raising=False)
        mp.delenv("ANTHROPIC_BASE_URL", raising=False)
        mp.chdir(tmp)
        yield


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = bench.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("detection")
    with _isolated_env(tmp):
        code, out, err = _main("--backend", "stub", "--json", "--keep", str(tmp / "kept"))
    return {"code": code, "report": json.loads(out), "stderr": err, "tmp": tmp}


# --------------------------------------------------------------------------
# The cases


def test_cases_cover_the_brief():
    cases = bench.load_cases()
    planted = [c for c in cases if c.planted]
    controls = [c for c in cases if not c.planted]
    assert len(planted) >= 8 and len(controls) >= 3
    assert len({c.criterion for c in planted}) >= 4
    for case in planted:
        assert case.criterion in CRITERIA
        assert case.quote or case.missing
        if case.quote:
            assert case.quote in case.output, case.name
    names = {c.name for c in cases}
    # The stub's plan names real cases, or its misses would silently vanish.
    assert {name for plan in bench.STUB_PLAN.values() for name in plan} <= names


def _write_case(root: Path, name: str, manifest: str, output: str = "Out.\n") -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "spec.md").write_text("Spec.\n", encoding="utf-8")
    (folder / "output.md").write_text(output, encoding="utf-8")
    (folder / "case.yaml").write_text(manifest, encoding="utf-8")


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("criterion: completeness\nquote: not there\n", "not in the output verbatim"),
        ("criterion: style\nquote: Out.\n", "criterion must be"),
        ("criterion: completeness\n", "needs a quote or a missing item"),
        ("criterion: clean\nquote: Out.\n", "a clean control has no quote"),
        ("criterion: clean\nsecret: 1\n", "unknown manifest keys"),
    ],
)
def test_bad_manifests_are_refused(tmp_path, manifest, message):
    _write_case(tmp_path, "case-x", manifest)
    with pytest.raises(InputError, match=message):
        bench.load_cases(root=tmp_path)


def test_case_globs_select_folders(tmp_path):
    _write_case(tmp_path, "alpha", "criterion: clean\n")
    _write_case(tmp_path, "beta", "criterion: completeness\nmissing: a License section\n")
    assert [c.name for c in bench.load_cases(["b*"], root=tmp_path)] == ["beta"]
    with pytest.raises(InputError, match="no case matches"):
        bench.load_cases(["zeta*"], root=tmp_path)


# --------------------------------------------------------------------------
# The smoke run against the stub


def _expected_catches(label: str) -> dict[str, tuple[int, int]]:
    """Per criterion (caught, planted) for one scripted reviewer, from its plan."""
    plan = bench.STUB_PLAN[label]
    table: dict[str, list[int]] = {c: [0, 0] for c in CRITERIA}
    for case in bench.load_cases():
        if not case.planted:
            continue
        move = plan.get(case.name)
        caught = not (
            move is not None
            and (
                move.kind == "miss"
                or (move.kind == "wrong-criterion" and move.criterion not in case.targets)
            )
        )
        table[case.criterion][0] += caught
        table[case.criterion][1] += 1
    return {c: (n[0], n[1]) for c, n in table.items()}


def test_stub_run_reports_what_the_script_implies(stub_run):
    assert stub_run["code"] == 0, stub_run["stderr"]
    report = stub_run["report"]
    assert report["runs_done"] == report["runs_planned"] == 17
    assert report["errors"] == [] and report["stopped"] is None
    arms = report["arms"]
    for label in ("B", "C"):
        expected = _expected_catches(label)
        got = {c: (r["count"], r["of"]) for c, r in arms[label]["recall"].items()}
        assert got == expected, label
    # The planted case both reviewers miss: recall < 1 even with two.
    assert arms["two"]["recall"]["internal-consistency"] == {"count": 1, "of": 2, "rate": 0.5}
    # B alone misses the commit subject; C catches it, so the gate does.
    assert arms["B"]["recall"]["compliance"]["rate"] == 0.5
    assert arms["two"]["recall"]["compliance"]["rate"] == 1.0
    # C files the chunk bug under completeness: blocked, but not caught.
    assert arms["C"]["recall"]["technical-correctness"]["count"] == 1
    assert arms["C"]["blocked"]["count"] == arms["C"]["recall_overall"]["count"] + 1
    assert arms["two"]["recall_overall"]["count"] == 11
    assert arms["one"]["recall_overall"] == {"count": 20, "of": 24, "rate": 20 / 24}
    for criterion in CRITERIA:
        assert arms["two"]["recall"][criterion]["rate"] >= arms["one"]["recall"][criterion]["rate"]
    # Exactly one false positive on the controls, C's.
    assert arms["two"]["false_positives"] == {"count": 1, "of": 5, "rate": 0.2}
    assert arms["B"]["false_positives"]["count"] == 0
    assert arms["C"]["false_positives"]["count"] == 1
    assert [a["invalid"] for a in arms.values()] == [0, 0, 0, 0]
    # One re-ask each: B's wrong canary, C's quote that was not in the output.
    assert arms["B"]["reasks"] == 1 and arms["C"]["reasks"] == 1


def test_stub_run_agreement_matches_statsmodels(stub_run):
    from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

    report = stub_run["report"]
    agreement = report["agreement"]
    pairs = [
        (r["reviewers"]["B"]["verdict"], r["reviewers"]["C"]["verdict"]) for r in report["runs"]
    ]
    # B and C disagree on the commit subject (B misses) and the survey control (C's FP).
    assert agreement["pairs"] == 17
    assert agreement["verdicts"]["count"] == 15
    table = [
        [sum(b == x and c == y for b, c in pairs) for y in ("PASS", "FAIL")]
        for x in ("PASS", "FAIL")
    ]
    assert table == [[5, 2], [0, 10]]
    assert agreement["cohen_kappa"] == pytest.approx(100 / 134)
    assert agreement["cohen_kappa"] == pytest.approx(cohens_kappa(table).kappa)
    ratings = [[(b == "PASS") + (c == "PASS"), (b == "FAIL") + (c == "FAIL")] for b, c in pairs]
    assert agreement["fleiss_kappa"] == pytest.approx(fleiss_kappa(ratings))
    assert agreement["fleiss_kappa"] != pytest.approx(agreement["cohen_kappa"])


def test_stub_run_rounds_tokens_and_cost(stub_run):
    arms = stub_run["report"]["arms"]
    # 11 caught planted cases are fixed and pass in round 2; the one both miss ships in round 1.
    assert arms["two"]["rounds"]["planted"] == {"mean_to_nice": 23 / 12, "nice": 12, "of": 12}
    # C's false positive costs its control a fix and a second round.
    assert arms["two"]["rounds"]["controls"]["mean_to_nice"] == pytest.approx(6 / 5)
    # B alone would have shipped its two misses in round 1.
    assert arms["B"]["rounds"]["planted"]["mean_to_nice"] == pytest.approx(22 / 12)
    assert arms["B"]["rounds"]["controls"]["mean_to_nice"] == 1.0
    # Stub usage is 100 in / 20 out per call: sonnet $0.0004, haiku $0.00002.
    assert arms["B"]["round1_tokens_per_run"] == pytest.approx(120 * 18 / 17)
    assert arms["B"]["round1_cost_usd_per_run"] == pytest.approx(0.0004 * 18 / 17)
    assert arms["C"]["round1_cost_usd_per_run"] == pytest.approx(0.00002 * 18 / 17)
    assert arms["two"]["round1_cost_usd_per_run"] == pytest.approx(0.00042 * 18 / 17)
    # 36 round-1 calls, then 12 fixes (sonnet) each followed by a 2-reviewer round.
    total = stub_run["report"]["total"]
    assert total["tokens"] == 120 * (36 + 12 * 3)
    assert total["cost_usd"] == pytest.approx(36 * 0.00021 + 12 * (0.0004 + 0.00042))
    assert arms["two"]["loop_cost_usd_per_run"] == pytest.approx(total["cost_usd"] / 17)


def test_stub_run_stays_out_of_the_repository(stub_run):
    tmp = stub_run["tmp"]
    kept_runs = tmp / "kept" / "santa" / "runs"
    run_ids = {r["run_id"] for r in stub_run["report"]["runs"]}
    # Run folders, as the helper counts them (`.finished` holds marks, not runs).
    assert run_ids == {p.name for p in kept_runs.iterdir() if (p / "state.json").exists()}
    assert not any((ROOT / ".santa" / "runs" / run_id).exists() for run_id in run_ids)
    assert not (tmp / "outer-santa").exists()
    assert os.environ.get("SANTA_HOME") != str(tmp / "kept" / "santa")  # restored


def test_the_table_names_every_column(stub_run):
    from rich.console import Console

    console = Console(file=io.StringIO(), width=160)
    bench.render(stub_run["report"], console)
    text = console.file.getvalue()
    for needle in (
        "B alone (sonnet)",
        "C alone (haiku)",
        "1 reviewer (mean)",
        "2 reviewers (gate)",
        "internal-consistency",
        "1/2 50%",
        "false positives (controls)",
        "1/5 20%",
        "15/17 88%",
        "0.75",
        "rounds to NICE, planted",
        "cost / run, whole loop",
    ):
        assert needle in text, needle


@pytest.mark.slow
def test_the_script_runs_on_its_own(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SANTA_"))}
    env.update(ANTHROPIC_API_KEY="dummy-not-used", CLAUDE_PROJECT_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, str(RUN), "--backend", "stub", "--cases", "control-*", "--quiet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"false positives \(controls\)\s*│\s*0/5 0%\s*│\s*1/5 20%", done.stdout)
    assert "Per case" in done.stdout and "control-survey-summary" in done.stdout


# --------------------------------------------------------------------------
# Failures and arguments


def test_usage_errors_exit_2(tmp_path):
    with _isolated_env(tmp_path):
        assert _main("--cases", "no-such-case*")[0] == 2
        code, _, err = _main("--backend", "stub", "--models", "sonnet,sonnet")
        assert code == 2 and "two different models" in err
        assert _main("--repeat", "0")[0] == 2
        assert _main("--backend", "anthropic", "--models", "mystery", "--max-cost-usd", "1")[0] == 2


def test_no_credentials_exit_3_before_any_run(tmp_path):
    with _isolated_env(tmp_path, api_key=False):
        code, out, err = _main("--backend", "anthropic", "--cases", "control-api-guide")
    assert code == 3
    assert "ANTHROPIC_API_KEY" in err and out == ""


class _Scripted:
    """A backend in-process: reviewer B passes, C replies `c_reply` (or fails)."""

    name = "scripted"

    def __init__(self, c_reply: str | None) -> None:
        self.c_reply = c_reply

    async def review(self, request: ReviewRequest) -> ReviewReply:
        from santa_method.core.errors import BackendError

        if request.label == "C" and self.c_reply is None:
            raise BackendError("the scripted API is overloaded (529) after 2 retries")
        canary = re.search(r"santa-canary: (\w+)\s*$", request.round_part)
        assert canary is not None
        review = review_reply(CRITERIA, suggestions=None, canary=canary.group(1))
        text = review if request.label == "B" else str(self.c_reply)
        return ReviewReply(text=text, tokens=Tokens(10, 2), cost_usd=0.001, model="scripted-1")

    async def fix(self, request: FixRequest) -> FixReply:
        return FixReply(output=request.output + "\nRevised.\n", notes="1. fixed")


def _run_batch(tmp: Path, case_glob: str, c_reply: str | None) -> Any:
    import asyncio

    cases = bench.load_cases([case_glob])
    with _isolated_env(tmp), bench.isolated(tmp / "work") as (santa, project):
        return cases, asyncio.run(
            bench.run_cases(
                cases,
                make_backend=lambda: _Scripted(c_reply),
                models=None,
                repeat=1,
                max_fixes=1,
                jobs=2,
                timeout=None,
                budget_usd=None,
                project_dir=project,
                log_path=santa / "log.jsonl",
            )
        )


def test_an_invalid_review_fails_closed_in_every_column(tmp_path):
    cases, batch = _run_batch(tmp_path, "control-api-guide", "I think it is fine.")
    assert batch.errors == []
    (run,) = batch.outcomes
    assert run.slots["B"].passed and not run.slots["C"].valid
    assert run.slots["C"].asks >= 3  # asked, then re-asked twice with the errors
    report = bench.build_report(
        batch.outcomes, cases=cases, backend="scripted", models=None, repeat=1, max_fixes=1
    )
    arms = report["arms"]
    # A control that a reviewer could not review is not passed: a false positive, never NICE.
    assert arms["C"]["false_positives"]["count"] == 1 and arms["C"]["invalid"] == 1
    assert arms["two"]["false_positives"]["count"] == 1
    assert arms["B"]["false_positives"]["count"] == 0
    assert arms["two"]["rounds"]["controls"]["nice"] == 0
    assert report["agreement"]["pairs"] == 0 and report["agreement"]["cohen_kappa"] is None


def test_a_backend_failure_stops_the_benchmark(tmp_path):
    _, batch = _run_batch(tmp_path, "control-*", None)
    assert batch.outcomes == []
    assert batch.errors and all(e["backend"] for e in batch.errors)
    assert len(batch.errors) <= 2  # runs already under way (jobs=2); no new ones started
    assert batch.stopped and "overloaded" in batch.stopped


def test_cohen_kappa_edges():
    assert bench.cohen_kappa([]) is None
    assert bench.cohen_kappa([("PASS", "PASS")] * 3) is None
    assert bench.cohen_kappa([("PASS", "PASS"), ("FAIL", "FAIL")]) == 1.0
    assert bench.cohen_kappa([("PASS", "FAIL"), ("FAIL", "PASS")]) == -1.0
