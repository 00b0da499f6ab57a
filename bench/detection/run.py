"""Detection benchmark: do the reviewers catch planted defects, and at what price?

    python bench/detection/run.py [--backend anthropic|claude|stub] [--models M1,M2]
        [--cases GLOB[,GLOB]] [--repeat N] [--max-fixes N] [--jobs N] [--timeout S]
        [--budget-usd X] [--keep DIR] [--json] [--quiet]

Each case under `cases/` is a spec, an output and a manifest (`case.yaml`)
naming the rubric criterion its planted defect belongs to, or `clean` for a
control. Every case is verified by the real headless loop, `verify()`, with
2 reviewers and `--max-fixes` fixes (default 1): the same assignment text,
strict schema, concurrency, re-asking (an invalid reply twice, an
unverified quote once), re-review of failed slots, gate, merge, fixer and
cost accounting as `santa run`. Calling `verify()` reuses all of that,
where driving `_Run.review_slot` by hand would copy the round logic and
still not measure rounds.

One reviewer vs two, paired: the loop needs 2 reviewers by design, so the
one-reviewer figures come from the same run, reading each reviewer's own
round-1 review alone (what a gate with that one reviewer would have
decided), and the two-reviewer figures from the gate itself (either FAIL
fails). Same outputs, same replies: the difference is the second reviewer.

- recall: a planted case is caught when the verdict would not pass it
  and its criterion (or one the manifest also accepts) is among the flags.
- false positives: clean controls that would not pass.
- agreement: round-1 PASS/FAIL verdicts of the two reviewers, in percent
  and as Cohen's kappa (Fleiss' kappa as `santa metrics` computes it, too).
- rounds: review rounds until NICE. Two reviewers: the loop's own count.
  One reviewer: the first round of the same run in which that reviewer
  alone passed; the fixes in between answered both reviewers' flags, so it
  is what one reviewer would have accepted along this path, not a separate
  one-reviewer loop.
- tokens and cost: round 1's reviews per run (re-asks included); the
  whole loop (all rounds and fixes) for two reviewers.

`--backend stub` serves tests/e2e/stub_server.py on loopback with a
scripted, deterministic and deliberately imperfect pair of reviewers
(STUB_PLAN) so a smoke run exercises every column; its numbers measure the
benchmark, not a model. Exit status: 0 when every run finished, 1 when a
run failed or the budget stopped the benchmark, 2 for bad arguments or
cases, 3 when the backend failed (no credentials, refused, overloaded).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fnmatch
import json
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES_DIR = HERE / "cases"
sys.path.insert(0, str(ROOT / "scripts"))

import yaml  # noqa: E402

from santa_method.cli._io import add_budget_option  # noqa: E402
from santa_method.core.errors import BackendError, InputError  # noqa: E402
from santa_method.core.gate import default_labels  # noqa: E402
from santa_method.core.rubric import load_rubric  # noqa: E402
from santa_method.core.yaml_safe import safe_load  # noqa: E402
from santa_method.headless.backends import prices  # noqa: E402
from santa_method.headless.loop import VerifyResult, verify  # noqa: E402
from santa_method.headless.options import VerifyOptions  # noqa: E402
from santa_method.state.metrics import fleiss_kappa  # noqa: E402

RUBRIC = "base"
CLEAN = "clean"
LABELS: tuple[str, ...] = tuple(default_labels(2))  # the loop's reviewer slots: B, C
ARMS = (*LABELS, "one", "two")
STUB_MODELS = ("sonnet", "haiku")
BACKENDS = ("anthropic", "claude", "stub")


# --------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Case:
    """One output to review. `criterion` is a base rubric id, or `clean` for a control."""

    name: str
    spec: str
    output: str
    criterion: str
    quote: str | None = None
    missing: str | None = None
    accept: tuple[str, ...] = ()
    note: str = ""

    @property
    def planted(self) -> bool:
        return self.criterion != CLEAN

    @property
    def targets(self) -> frozenset[str]:
        """Criteria under which a flag counts as catching the planted defect."""
        return frozenset((self.criterion, *self.accept)) if self.planted else frozenset()


def _read_case(folder: Path, criteria: Sequence[str]) -> Case:
    name = folder.name
    outputs = sorted(p for p in folder.glob("output.*") if p.is_file())
    if len(outputs) != 1:
        raise InputError(f"case {name}: expected exactly one output.* file, found {len(outputs)}")
    try:
        spec = (folder / "spec.md").read_text(encoding="utf-8")
        output = outputs[0].read_text(encoding="utf-8")
        manifest = safe_load((folder / "case.yaml").read_text(encoding="utf-8"), unique_keys=True)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise InputError(f"case {name}: {exc}") from None
    if not isinstance(manifest, dict):
        raise InputError(f"case {name}: case.yaml must be a mapping")
    unknown = set(manifest) - {"criterion", "quote", "missing", "accept", "note"}
    if unknown:
        raise InputError(f"case {name}: unknown manifest keys {sorted(unknown)}")
    criterion = manifest.get("criterion")
    accept = tuple(manifest.get("accept") or ())
    quote, missing = manifest.get("quote"), manifest.get("missing")
    if criterion != CLEAN and criterion not in criteria:
        raise InputError(f"case {name}: criterion must be '{CLEAN}' or one of {list(criteria)}")
    if any(c not in criteria for c in accept):
        raise InputError(f"case {name}: accept holds an unknown criterion")
    if criterion == CLEAN:
        if quote or missing or accept:
            raise InputError(f"case {name}: a clean control has no quote, missing or accept")
    elif not (quote or missing):
        raise InputError(f"case {name}: a planted defect needs a quote or a missing item")
    if quote and quote not in output:
        raise InputError(f"case {name}: the quote {quote!r} is not in the output verbatim")
    if not spec.strip() or not output.strip():
        raise InputError(f"case {name}: the spec and the output must not be empty")
    return Case(
        name=name,
        spec=spec,
        output=output,
        criterion=str(criterion),
        quote=quote,
        missing=missing,
        accept=accept,
        note=str(manifest.get("note") or "").strip(),
    )


def load_cases(patterns: Sequence[str] = ("*",), root: Path = CASES_DIR) -> list[Case]:
    """The cases whose folder name matches any of `patterns`, checked and sorted by name."""
    criteria = load_rubric(RUBRIC).ids
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    chosen = [p for p in folders if any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)]
    if not chosen:
        raise InputError(f"no case matches {','.join(patterns)} under {root}")
    return [_read_case(p, criteria) for p in chosen]


# --------------------------------------------------------------------------
# What one run says, read from the loop's own history


@dataclass(frozen=True)
class SlotOutcome:
    """One reviewer slot of a run, judged alone."""

    label: str
    model: str | None
    valid: bool  # round 1's final review was valid (after re-asks and re-reviews)
    verdict: str | None
    flagged: frozenset[str]  # criteria this reviewer flagged in round 1
    asks: int  # calls spent in round 1 (1 per review when nothing was re-asked)
    reviews: int  # reviews in round 1 (more than 1 after a re-review)
    tokens: int
    cost_usd: float | None
    ship_round: int | None  # first round this reviewer alone passed

    @property
    def passed(self) -> bool:
        return self.valid and self.verdict == "PASS"


@dataclass(frozen=True)
class RunOutcome:
    case: str
    criterion: str
    targets: frozenset[str]
    repeat: int
    slots: dict[str, SlotOutcome]
    gate_verdict: str  # round 1's last gate: NICE or NAUGHTY
    flagged: frozenset[str]  # criteria of round 1's merged flags
    flags: int
    flags_by_all: int
    verdict: str  # how the run ended: NICE or ESCALATED
    rounds: int
    tokens: int
    cost_usd: float | None
    run_id: str

    @property
    def planted(self) -> bool:
        return self.criterion != CLEAN

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "repeat": self.repeat,
            "criterion": self.criterion,
            "round1_gate": self.gate_verdict,
            "round1_flagged": sorted(self.flagged),
            "caught": self.planted
            and self.gate_verdict != "NICE"
            and bool(self.flagged & self.targets),
            "verdict": self.verdict,
            "rounds": self.rounds,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "run_id": self.run_id,
            "reviewers": {
                label: {
                    "model": s.model,
                    "valid": s.valid,
                    "verdict": s.verdict,
                    "flagged": sorted(s.flagged),
                    "asks": s.asks,
                    "tokens": s.tokens,
                    "cost_usd": s.cost_usd,
                    "ship_round": s.ship_round,
                }
                for label, s in self.slots.items()
            },
        }


def _sum_cost(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else float(sum(v or 0.0 for v in values))


def _first_pass(result: VerifyResult, label: str) -> int | None:
    for number in sorted({r.round for r in result.history}):
        records = [v for r in result.history if r.round == number for v in r.reviewers]
        mine = [v for v in records if v.label == label]
        if mine and mine[-1].valid and mine[-1].verdict == "PASS":
            return number
    return None


def outcome_of(case: Case, repeat: int, result: VerifyResult) -> RunOutcome:
    """Round 1 per reviewer and for the gate, and how the run ended.

    A round's verdict is its last gate (re-reviews of invalid replies add
    gates to the same round); a slot's review is its last one in the round.
    """
    round1 = [r for r in result.history if r.round == 1]
    if not round1:
        raise ValueError(f"the run of {case.name} has no round 1")
    last = round1[-1]
    slots: dict[str, SlotOutcome] = {}
    for label in LABELS:
        records = [v for r in round1 for v in r.reviewers if v.label == label]
        if not records:
            raise ValueError(f"reviewer {label} never reviewed round 1 of {case.name}")
        final = records[-1]
        slots[label] = SlotOutcome(
            label=label,
            model=final.model,
            valid=final.valid,
            verdict=final.verdict,
            # The criteria this reviewer itself named (a problem may merge several).
            flagged=frozenset(
                c
                for i in last.issues
                if label in (i.get("flagged_by") or ())
                for c in (i.get("criteria_by") or {}).get(label, [i["criterion"]])
            ),
            asks=sum(v.asks for v in records),
            reviews=len(records),
            tokens=sum(v.tokens.total for v in records),
            cost_usd=_sum_cost([v.cost_usd for v in records]),
            ship_round=_first_pass(result, label),
        )
    return RunOutcome(
        case=case.name,
        criterion=case.criterion,
        targets=case.targets,
        repeat=repeat,
        slots=slots,
        gate_verdict=last.verdict,
        flagged=frozenset(c for i in last.issues for c in (i.get("criteria") or [i["criterion"]])),
        flags=len(last.issues),
        flags_by_all=sum(1 for i in last.issues if set(LABELS) <= set(i.get("flagged_by") or ())),
        verdict=result.verdict,
        rounds=result.rounds,
        tokens=result.tokens.total,
        cost_usd=result.cost_usd,
        run_id=result.run_id,
    )


# --------------------------------------------------------------------------
# Summaries: pure functions of the outcomes


@dataclass(frozen=True)
class View:
    """One verdict on one run, as an arm (a reviewer alone, or the gate) sees it."""

    planted: bool
    criterion: str
    targets: frozenset[str]
    passed: bool
    flagged: frozenset[str]
    ship_round: int | None
    valid: bool
    reasks: int
    tokens: int
    cost_usd: float | None

    @property
    def caught(self) -> bool:
        return self.planted and not self.passed and bool(self.flagged & self.targets)


def views(run: RunOutcome, arm: str) -> list[View]:
    """B or C: that reviewer alone; one: each reviewer alone (two views); two: the gate."""
    if arm in LABELS:
        s = run.slots[arm]
        return [
            View(
                run.planted,
                run.criterion,
                run.targets,
                s.passed,
                s.flagged,
                s.ship_round,
                s.valid,
                s.asks - s.reviews,
                s.tokens,
                s.cost_usd,
            )
        ]
    if arm == "one":
        return [v for label in LABELS for v in views(run, label)]
    slots = list(run.slots.values())
    return [
        View(
            run.planted,
            run.criterion,
            run.targets,
            run.gate_verdict == "NICE",
            run.flagged,
            run.rounds if run.verdict == "NICE" else None,
            all(s.valid for s in slots),
            sum(s.asks - s.reviews for s in slots),
            sum(s.tokens for s in slots),
            _sum_cost([s.cost_usd for s in slots]),
        )
    ]


def ratio(count: int, of: int) -> dict[str, Any]:
    return {"count": count, "of": of, "rate": count / of if of else None}


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _rounds(group: Sequence[View]) -> dict[str, Any]:
    shipped = [v.ship_round for v in group if v.ship_round is not None]
    return {"mean_to_nice": _mean(shipped), "nice": len(shipped), "of": len(group)}


def summarise_arm(runs: Sequence[RunOutcome], arm: str, criteria: Sequence[str]) -> dict[str, Any]:
    all_views = [v for run in runs for v in views(run, arm)]
    planted = [v for v in all_views if v.planted]
    controls = [v for v in all_views if not v.planted]
    costs = [v.cost_usd for v in all_views]
    return {
        "recall": {
            c: ratio(
                sum(v.caught for v in planted if v.criterion == c),
                sum(1 for v in planted if v.criterion == c),
            )
            for c in criteria
        },
        "recall_overall": ratio(sum(v.caught for v in planted), len(planted)),
        "blocked": ratio(sum(not v.passed for v in planted), len(planted)),
        "false_positives": ratio(sum(not v.passed for v in controls), len(controls)),
        "invalid": sum(not v.valid for v in all_views),
        "reasks": sum(v.reasks for v in all_views),
        "rounds": {"planted": _rounds(planted), "controls": _rounds(controls)},
        "round1_tokens_per_run": _mean([v.tokens for v in all_views]),
        "round1_cost_usd_per_run": None
        if any(c is None for c in costs)
        else _mean([c or 0.0 for c in costs]),
    }


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels: (p_o - p_e) / (1 - p_e).

    p_e multiplies each rater's own label shares, where Fleiss' kappa (the
    helper `santa metrics` uses) pools them: the two differ when the two
    reviewers fail outputs at different rates, as two different models do.
    None when undefined (no pairs, or both always gave one and the same label).
    """
    n = len(pairs)
    if n == 0:
        return None
    labels = {label for pair in pairs for label in pair}
    observed = sum(a == b for a, b in pairs) / n
    expected = sum(
        (sum(a == label for a, _ in pairs) / n) * (sum(b == label for _, b in pairs) / n)
        for label in labels
    )
    if 1.0 - expected <= 1e-12:
        return None
    return (observed - expected) / (1.0 - expected)


def agreement(runs: Sequence[RunOutcome]) -> dict[str, Any]:
    """Round-1 verdicts of the two reviewers, over runs where both reviews were valid."""
    both = [r for r in runs if all(s.valid for s in r.slots.values())]
    pairs = [(r.slots[LABELS[0]].verdict or "", r.slots[LABELS[1]].verdict or "") for r in both]
    table = [[sum(v == "PASS" for v in p), sum(v == "FAIL" for v in p)] for p in pairs]
    flags = sum(r.flags for r in both)
    return {
        "pairs": len(pairs),
        "verdicts": ratio(sum(a == b for a, b in pairs), len(pairs)),
        "cohen_kappa": cohen_kappa(pairs),
        "fleiss_kappa": fleiss_kappa(table) if table else None,
        "flags_by_both": ratio(sum(r.flags_by_all for r in both), flags),
    }


def build_report(
    runs: Sequence[RunOutcome],
    *,
    cases: Sequence[Case],
    backend: str,
    models: Sequence[str] | None,
    repeat: int,
    max_fixes: int,
    errors: Sequence[dict[str, Any]] = (),
    stopped: str | None = None,
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    criteria = load_rubric(RUBRIC).ids
    arms = {arm: summarise_arm(runs, arm, criteria) for arm in ARMS}
    asked = [models[i % len(models)] for i in range(len(LABELS))] if models else [None] * 2
    reviewers: dict[str, dict[str, str | None]] = {}
    for label, model in zip(LABELS, asked, strict=True):
        seen = next((r.slots[label].model for r in runs if r.slots[label].model), None)
        reviewers[label] = {"asked": model, "model": seen}
    titles = {
        label: f"{label} alone ({reviewers[label]['asked'] or reviewers[label]['model'] or 'default'})"
        for label in LABELS
    }
    titles.update({"one": "1 reviewer (mean)", "two": "2 reviewers (gate)"})
    for arm, title in titles.items():
        arms[arm]["title"] = title
    costs = [r.cost_usd for r in runs]
    arms["two"]["loop_tokens_per_run"] = _mean([r.tokens for r in runs])
    arms["two"]["loop_cost_usd_per_run"] = (
        None if any(c is None for c in costs) else _mean([c or 0.0 for c in costs])
    )
    return {
        "benchmark": "detection",
        "backend": backend,
        "rubric": RUBRIC,
        "reviewers": reviewers,
        "max_fixes": max_fixes,
        "repeat": repeat,
        "cases": {
            "planted": sum(c.planted for c in cases),
            "controls": sum(not c.planted for c in cases),
            "criteria": sorted({c.criterion for c in cases if c.planted}),
        },
        "runs_done": len(runs),
        "runs_planned": len(cases) * repeat,
        "criteria": list(criteria),
        "arms": arms,
        "agreement": agreement(runs),
        "total": {
            "tokens": sum(r.tokens for r in runs),
            "cost_usd": _sum_cost(costs),
        },
        "errors": list(errors),
        "stopped": stopped,
        "warnings": list(dict.fromkeys(warnings)),
        "runs": [r.to_json() for r in runs],
    }


# --------------------------------------------------------------------------
# Running


ProgressHook = Callable[[RunOutcome, int, int], None]


@dataclass
class Batch:
    outcomes: list[RunOutcome]
    errors: list[dict[str, Any]]
    stopped: str | None
    warnings: list[str]


async def run_cases(
    cases: Sequence[Case],
    *,
    make_backend: Callable[[], Any],
    models: Sequence[str] | None,
    repeat: int,
    max_fixes: int,
    jobs: int,
    timeout: float | None,
    budget_usd: float | None,
    project_dir: Path,
    log_path: Path,
    progress: ProgressHook | None = None,
) -> Batch:
    """Verify every case `repeat` times, `jobs` runs at a time.

    A backend failure stops new runs (the next would fail alike); any other
    failure is recorded and the rest still run. The budget is checked before
    each run starts, so runs already under way may pass it by up to `jobs`
    runs' cost.
    """
    gate = asyncio.Semaphore(jobs)
    batch = Batch([], [], None, [])
    spent = 0.0
    planned = [(case, k) for k in range(1, repeat + 1) for case in cases]

    async def one(case: Case, k: int) -> None:
        nonlocal spent
        async with gate:
            if batch.stopped:
                return
            if budget_usd is not None and spent >= budget_usd:
                batch.stopped = f"the budget of ${budget_usd:.2f} was spent (${spent:.4f})"
                return
            try:
                result = await verify(
                    case.spec,
                    case.output,
                    options=VerifyOptions(
                        rubric=RUBRIC,
                        reviewers=len(LABELS),
                        models=models,
                        backend=make_backend(),  # one per run: the loop closes it at the end
                        max_fixes=max_fixes,
                        timeout=timeout,
                        log=log_path,
                        project_dir=project_dir,
                    ),
                )
                outcome = outcome_of(case, k, result)
            except BackendError as exc:
                batch.errors.append(
                    {"case": case.name, "repeat": k, "backend": True, "error": str(exc)}
                )
                batch.stopped = batch.stopped or f"the backend failed: {exc}"
                return
            except Exception as exc:  # every failure is reported; the other runs go on
                batch.errors.append(
                    {
                        "case": case.name,
                        "repeat": k,
                        "backend": False,
                        "error": f"{type(exc).__name__}: {exc}",
                    }
                )
                return
            spent += result.cost_usd or 0.0
            batch.warnings.extend(result.warnings)
            batch.outcomes.append(outcome)
            if progress is not None:
                progress(outcome, len(batch.outcomes), len(planned))

    await asyncio.gather(*(one(case, k) for case, k in planned))
    batch.outcomes.sort(key=lambda o: (o.case, o.repeat))
    return batch


# --------------------------------------------------------------------------
# The scripted reviewers of --backend stub


@dataclass(frozen=True)
class StubMove:
    """What a scripted reviewer does on one case instead of the default.

    Defaults: a planted defect is flagged under its criterion with the
    manifest's quote (or missing item); a control, and any output a fix
    has changed, passes.
    """

    kind: Literal[
        "miss", "wrong-criterion", "false-positive", "bad-canary-first", "paraphrase-first"
    ]
    criterion: str | None = None
    quote: str | None = None


# A deterministic, imperfect pair: both miss one case, each misses or
# mislabels one more, C flags one clean control, and two first replies are
# re-asked (a wrong canary; a quote that is not in the output).
STUB_PLAN: dict[str, dict[str, StubMove]] = {
    "B": {
        "incident-count-mismatch": StubMove("miss"),
        "commit-subject-too-long": StubMove("miss"),
        "howto-invented-method": StubMove("bad-canary-first"),
    },
    "C": {
        "incident-count-mismatch": StubMove("miss"),
        "chunk-function-drops-tail": StubMove("wrong-criterion", criterion="completeness"),
        "control-survey-summary": StubMove(
            "false-positive", criterion="technical-correctness", quote="32 people (20 %)"
        ),
        "release-date-contradiction": StubMove("paraphrase-first"),
    },
}

_OUTPUT_FENCE = re.compile(r"<<<OUTPUT (SANTA-[0-9A-F]+)\n(.*?)OUTPUT \1>>>", re.DOTALL)
_CANARY = re.compile(r"santa-canary: ([0-9a-f]+)\s*$")


def _fenced_output(text: str) -> str | None:
    found = list(_OUTPUT_FENCE.finditer(text))
    return found[-1].group(2) if found else None


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


class StubModel:
    """Replies for the scripted Messages API: a reviewer per model, and a fixer.

    Reviewers are told apart by the model they were asked for (B gets the
    first of --models, C the second), because each reviewer is a fresh
    conversation and the request carries nothing else that says which slot
    it fills. A case is recognised by its output, read from the
    assignment's OUTPUT fence, exactly as a reviewer would read it.
    """

    def __init__(
        self, cases: Sequence[Case], models: Sequence[str], criteria: Sequence[str]
    ) -> None:
        self.cases = {_with_newline(c.output): c for c in cases}
        self.labels = {prices.model_id(m): label for m, label in zip(models, LABELS, strict=True)}
        self.criteria = list(criteria)

    def review(self, body: dict[str, Any]) -> Any:
        from e2e.stub_server import Json, first_user_text

        label = self.labels.get(str(body.get("model")))
        if label is None:
            raise ValueError(f"no scripted reviewer for model {body.get('model')!r}")
        first = first_user_text(body)
        canary_match = _CANARY.search(first)
        canary = canary_match.group(1) if canary_match else ""
        retry = len(body.get("messages") or []) > 1
        case = self.cases.get(_fenced_output(first) or "")
        move = STUB_PLAN.get(label, {}).get(case.name) if case else None
        if case is None or (move is not None and move.kind == "miss"):
            return Json(self._review(canary))
        if move is not None and move.kind == "false-positive":
            issue = {"issue": "this share looks miscomputed", "quote": move.quote}
            return Json(self._review(canary, move.criterion, issue))
        if not case.planted:
            return Json(self._review(canary))
        criterion = case.criterion
        if move is not None and move.kind == "wrong-criterion":
            criterion = move.criterion or criterion
        issue: dict[str, Any] = {"issue": case.note or "planted defect"}
        if case.quote:
            issue["quote"] = case.quote
            if move is not None and move.kind == "paraphrase-first" and not retry:
                issue["quote"] = "a paraphrase that is not in the output"
        else:
            issue["missing"] = case.missing
        if move is not None and move.kind == "bad-canary-first" and not retry:
            canary = "0" * 24
        return Json(self._review(canary, criterion, issue))

    def _review(
        self, canary: str, criterion: str | None = None, issue: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        failing = criterion is not None
        return {
            "verdict": "FAIL" if failing else "PASS",
            "checks": [
                {
                    "criterion": c,
                    "result": "FAIL" if c == criterion else "PASS",
                    "detail": "see the critical issue" if c == criterion else "no problem found",
                }
                for c in self.criteria
            ],
            "critical_issues": [{"criterion": criterion, **(issue or {})}] if failing else [],
            "suggestions": [],
            "canary": canary,
        }

    def fix(self, body: dict[str, Any]) -> Any:
        from e2e.stub_server import Json, first_user_text

        output = _fenced_output(first_user_text(body)) or ""
        return Json({"output": output + "Revised after review.\n", "report": ["1. fixed"]})


@contextlib.contextmanager
def backend_factory(
    name: str, models: Sequence[str] | None, cases: Sequence[Case]
) -> Iterator[Callable[[], Any]]:
    """A maker of fresh backends (the loop closes each at the end of its run).

    Fails fast with BackendError when the backend cannot work at all (no
    credentials, SDK missing), before any case is started.
    """
    if name in ("anthropic", "claude"):
        from santa_method.headless.backends.base import require_prerequisites
        from santa_method.headless.routing import resolve_backend

        # No key, no SDK, no login: every missing one named, before any case runs.
        asyncio.run(require_prerequisites(resolve_backend(name)))
        yield lambda: resolve_backend(name)
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from e2e.stub_server import FIXER, REVIEWER, StubServer
    from santa_method.headless.backends.anthropic import AnthropicBackend

    model = StubModel(cases, models or STUB_MODELS, load_rubric(RUBRIC).ids)
    server = StubServer({REVIEWER: model.review, FIXER: model.fix}).start()
    try:
        yield lambda: AnthropicBackend(
            base_url=server.base_url, api_key="bench-stub", max_retries=0
        )
    finally:
        server.stop()
    try:
        server.check()
    except Exception as exc:  # a reply function raised: the runs only saw a 500
        raise BackendError(f"the stub's scripted reviewers failed: {exc}") from None


@contextlib.contextmanager
def isolated(workdir: Path) -> Iterator[tuple[Path, Path]]:
    """Runs, log and reports under `workdir`, never in the repository's `.santa/`.

    The reviewers' project folder is empty: a reviewer with read-only tools
    (claude backend) finds nothing there, not even the other runs.
    """
    santa, project = workdir / "santa", workdir / "project"
    project.mkdir(parents=True, exist_ok=True)
    names = ("SANTA_HOME", "CLAUDE_PROJECT_DIR", "SANTA_LOG")
    saved = {n: os.environ.get(n) for n in names}
    os.environ["SANTA_HOME"] = str(santa)
    os.environ["CLAUDE_PROJECT_DIR"] = str(project)
    os.environ.pop("SANTA_LOG", None)
    try:
        yield santa, project
    finally:
        for n, value in saved.items():
            if value is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = value


@contextlib.contextmanager
def _workdir(keep: str | None) -> Iterator[Path]:
    if keep:
        path = Path(keep).resolve()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="santa-detection-") as tmp:
        yield Path(tmp)


# --------------------------------------------------------------------------
# Output


def _pct(r: dict[str, Any]) -> str:
    if not r["of"]:
        return "-"
    return f"{r['count']}/{r['of']} {100 * r['rate']:.0f}%"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.6f}" if value < 0.01 else f"${value:.4f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rounds_cell(r: dict[str, Any]) -> str:
    if not r["of"]:
        return "-"
    return f"{_num(r['mean_to_nice'])} ({r['nice']}/{r['of']} NICE)"


def _case_cell(views_: Sequence[View]) -> str:
    counts: dict[str, int] = {}
    for v in views_:
        if v.planted:
            word = "caught" if v.caught else "other flag" if not v.passed else "MISSED"
        else:
            word = "ok" if v.passed else "FALSE POS"
        counts[word] = counts.get(word, 0) + 1
    if len(counts) == 1 and len(views_) == 1:
        return next(iter(counts))
    return ", ".join(f"{w} {n}" for w, n in counts.items())


def render(report: dict[str, Any], console: Any, runs: Sequence[RunOutcome] | None = None) -> None:
    """The readable form: recall per criterion, a summary, and (with outcomes) one line per case."""
    from rich.table import Table

    arms = report["arms"]
    heads = [arms[a]["title"] for a in ARMS]
    console.print(
        f"Detection benchmark: backend {report['backend']}, rubric {report['rubric']}, "
        f"{report['cases']['planted']} planted + {report['cases']['controls']} controls, "
        f"repeat {report['repeat']}, max fixes {report['max_fixes']}, "
        f"{report['runs_done']}/{report['runs_planned']} runs"
    )
    recall = Table(
        title="Recall: planted defects caught under their criterion", title_justify="left"
    )
    recall.add_column("criterion")
    for head in heads:
        recall.add_column(head, justify="right")
    for c in report["criteria"]:
        recall.add_row(c, *(_pct(arms[a]["recall"][c]) for a in ARMS))
    recall.add_row("all planted", *(_pct(arms[a]["recall_overall"]) for a in ARMS), style="bold")
    console.print(recall)

    agree = report["agreement"]
    summary = Table(title="Summary", title_justify="left")
    summary.add_column("")
    for head in heads:
        summary.add_column(head, justify="right")
    dash = ["-", "-", "-"]
    rows = [
        ("blocked (any flag)", [_pct(arms[a]["blocked"]) for a in ARMS]),
        ("false positives (controls)", [_pct(arms[a]["false_positives"]) for a in ARMS]),
        ("invalid reviews", [str(arms[a]["invalid"]) for a in ARMS]),
        ("re-asks", [str(arms[a]["reasks"]) for a in ARMS]),
        ("agreement (verdicts)", [*dash, _pct(agree["verdicts"])]),
        (
            "Cohen's kappa (Fleiss)",
            [*dash, f"{_num(agree['cohen_kappa'])} ({_num(agree['fleiss_kappa'])})"],
        ),
        ("flags raised by both", [*dash, _pct(agree["flags_by_both"])]),
        ("rounds to NICE, planted", [_rounds_cell(arms[a]["rounds"]["planted"]) for a in ARMS]),
        ("rounds to NICE, controls", [_rounds_cell(arms[a]["rounds"]["controls"]) for a in ARMS]),
        ("tokens / run, round 1", [_num(arms[a]["round1_tokens_per_run"], 0) for a in ARMS]),
        ("cost / run, round 1", [_usd(arms[a]["round1_cost_usd_per_run"]) for a in ARMS]),
        ("tokens / run, whole loop", [*dash, _num(arms["two"]["loop_tokens_per_run"], 0)]),
        ("cost / run, whole loop", [*dash, _usd(arms["two"]["loop_cost_usd_per_run"])]),
    ]
    for name, cells in rows:
        summary.add_row(name, *cells)
    console.print(summary)

    if runs:
        per_case = Table(title="Per case (round 1)", title_justify="left")
        for head in ("case", "planted", *LABELS, "2 reviewers", "rounds"):
            per_case.add_column(head)
        for name in sorted({r.case for r in runs}):
            mine = [r for r in runs if r.case == name]
            per_case.add_row(
                name,
                mine[0].criterion,
                *(_case_cell([v for r in mine for v in views(r, a)]) for a in (*LABELS, "two")),
                ", ".join(f"{r.verdict} r{r.rounds}" for r in mine),
            )
        console.print(per_case)
    total = report["total"]
    console.print(
        f"Total: {total['tokens']} tokens, {_usd(total['cost_usd'])}. Rounds: review rounds until "
        "NICE; for one reviewer, the first round of the same run it alone passed. Small n: one "
        "case more or less moves a rate by 100/n points."
    )


def _progress(quiet: bool) -> ProgressHook | None:
    if quiet:
        return None

    def show(o: RunOutcome, done: int, total: int) -> None:
        def slot(s: SlotOutcome) -> str:
            if not s.valid:
                return f"{s.label} invalid"
            flags = ",".join(sorted(s.flagged))
            return f"{s.label} {s.verdict}" + (f"({flags})" if flags else "")

        cells = " ".join(slot(s) for s in o.slots.values())
        print(
            f"[{done}/{total}] {o.case} #{o.repeat}: {cells} -> {o.verdict} "
            f"in {o.rounds} round(s), {_usd(o.cost_usd)}",
            file=sys.stderr,
        )

    return show


# --------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/detection/run.py",
        description=(
            "Verify planted-defect cases and clean controls with the real review loop and "
            "report, for 1 reviewer vs 2: recall per criterion, false positives, agreement, "
            "rounds, tokens and cost."
        ),
        epilog=(
            "Real runs cost money: ANTHROPIC_API_KEY=... python bench/detection/run.py "
            "--backend anthropic --models sonnet,haiku. The claude backend uses your Claude "
            "Code login. See bench/detection/README.md."
        ),
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="stub",
        help="who reviews: the Messages API (ANTHROPIC_API_KEY), Claude Code (its login), or the "
        "scripted stub on loopback (default; a smoke test, not a measurement)",
    )
    parser.add_argument(
        "--models",
        help="reviewer models, B then C (aliases or API ids), e.g. sonnet,haiku; default: the "
        "backend's default for both (stub: sonnet,haiku)",
    )
    parser.add_argument(
        "--cases", default="*", help="comma-separated globs over case folder names (default: all)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (default 1)")
    parser.add_argument(
        "--max-fixes", type=int, default=1, help="fixes the loop may make per run (default 1)"
    )
    parser.add_argument("--jobs", type=int, default=4, help="runs at a time (default 4)")
    parser.add_argument("--timeout", type=float, help="seconds per model call")
    add_budget_option(
        parser,
        "stop starting runs once this much is spent (runs under way may add up to --jobs runs)",
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="keep runs, log and reports in DIR (default: a temp folder)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def _check_args(args: argparse.Namespace) -> tuple[list[Case], list[str] | None]:
    if args.repeat < 1 or args.jobs < 1 or args.max_fixes < 0:
        raise InputError("--repeat and --jobs must be at least 1, --max-fixes at least 0")
    if args.timeout is not None and args.timeout <= 0:
        raise InputError("--timeout must be positive")
    if args.budget_usd is not None and args.budget_usd <= 0:
        raise InputError("--budget-usd must be positive")
    cases = load_cases([p.strip() for p in args.cases.split(",") if p.strip()] or ["*"])
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    if models is not None and not 1 <= len(models) <= len(LABELS):
        raise InputError("--models takes one or two models (reviewer B, reviewer C)")
    if args.backend == "stub":
        models = list(models or STUB_MODELS)
        if len(models) != 2 or prices.model_id(models[0]) == prices.model_id(models[1]):
            raise InputError(
                "the stub tells its reviewers apart by model: give two different models"
            )
    if args.budget_usd is not None and args.backend != "claude":
        unpriced = sorted({str(m) for m in (models or [None]) if prices.price(m) is None})
        if unpriced:
            raise InputError(
                f"no list price for {', '.join(unpriced)}: --budget-usd cannot be kept"
            )
    return cases, models


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cases, models = _check_args(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with (
            _workdir(args.keep) as workdir,
            isolated(workdir) as (santa, project),
            backend_factory(args.backend, models, cases) as make_backend,
        ):
            batch = asyncio.run(
                run_cases(
                    cases,
                    make_backend=make_backend,
                    models=models,
                    repeat=args.repeat,
                    max_fixes=args.max_fixes,
                    jobs=args.jobs,
                    timeout=args.timeout,
                    budget_usd=args.budget_usd,
                    project_dir=project,
                    log_path=santa / "log.jsonl",
                    progress=_progress(args.quiet),
                )
            )
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    report = build_report(
        batch.outcomes,
        cases=cases,
        backend=args.backend,
        models=models,
        repeat=args.repeat,
        max_fixes=args.max_fixes,
        errors=batch.errors,
        stopped=batch.stopped,
        warnings=batch.warnings,
    )
    if args.keep:
        report["kept"] = str(Path(args.keep).resolve())
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from rich.console import Console

        render(report, Console(width=max(120, Console().width)), batch.outcomes)
    for warning in report["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    for error in batch.errors:
        print(f"error: {error['case']} #{error['repeat']}: {error['error']}", file=sys.stderr)
    if batch.stopped:
        print(f"error: stopped early: {batch.stopped}", file=sys.stderr)
    if any(e["backend"] for e in batch.errors):
        return 3
    return 1 if batch.errors or batch.stopped else 0


if __name__ == "__main__":
    sys.exit(main())
