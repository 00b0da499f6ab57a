"""Merging on the wording of real reviewers (tests/data/real-reviews/).

Real reviewers file one defect under several criteria, quote different spans
of one sentence and name one omission in different words. One planted
defect must come out as one problem; different defects must stay apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from santa_method.core.gate import gate_replies
from santa_method.core.merge import same_missing
from santa_method.core.rubric import load_rubric
from santa_method.core.text import find_spans
from santa_method.core.types import MergedIssue

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "real-reviews"
CASES = sorted(p.name for p in DATA.iterdir() if p.is_dir())
DEFECTS = [c for c in CASES if not c.startswith("control-")]
CONTROLS = [c for c in CASES if c.startswith("control-")]


def _output(case: str) -> str:
    own = DATA / case / "output.md"
    path = own if own.exists() else ROOT / "bench" / "detection" / "cases" / case / "output.md"
    return path.read_text(encoding="utf-8")


def _gate(case: str) -> tuple[list[MergedIssue], float | None, str]:
    output = _output(case)
    replies = [(DATA / case / f"review-{x}.json").read_text(encoding="utf-8") for x in "BC"]
    result = gate_replies(replies, ["B", "C"], rubric=load_rubric("base"), output=output)
    assert all(r.valid for r in result.reviews), [r.errors for r in result.reviews]
    return list(result.issues), result.agreement, output


def _about(problem: MergedIssue, quote: str, output: str) -> bool:
    planted = find_spans(quote, output)
    return any(
        s.overlaps(p) for q in problem.all_quotes for s in find_spans(q, output) for p in planted
    )


def _planted(case: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / case / "planted.yaml").read_text(encoding="utf-8"))


def test_the_data_covers_defects_and_controls() -> None:
    assert len(DEFECTS) >= 10 and len(CONTROLS) >= 4


@pytest.mark.parametrize("case", [c for c in DEFECTS if "quote" in _planted(c)])
def test_a_planted_quoted_defect_is_one_problem_raised_by_both(case: str) -> None:
    problems, _, output = _gate(case)
    planted = _planted(case)
    about = [p for p in problems if _about(p, planted["quote"], output)]
    assert len(about) == 1, [(p.criteria, p.all_quotes) for p in about]
    (problem,) = about
    assert set(problem.flagged_by) == {"B", "C"}


def test_one_defect_under_four_criteria_is_one_problem_listing_them() -> None:
    problems, agreement, output = _gate("howto-invented-method")
    about = [p for p in problems if _about(p, 'tickets.filter(status="open")', output)]
    assert len(about) == 1
    (problem,) = about
    # Both reviewers named no-hallucination, compliance and technical-correctness.
    assert problem.criterion == "no-hallucination"
    assert {"compliance", "technical-correctness"} <= set(problem.criteria)
    assert len(problem.all_quotes) >= 2  # both spans reach the fixer
    assert agreement == 1.0


def test_overlapping_spans_under_two_criteria_are_one_problem() -> None:
    problems, agreement, _ = _gate("incident-count-mismatch")
    assert len(problems) == 1
    assert set(problems[0].criteria) == {"factual-accuracy", "internal-consistency"}
    assert set(problems[0].all_quotes) == {
        "Week 14 had three incidents",
        "Week 14 had three incidents, two of them in billing-api.",
    }
    assert agreement == 1.0


def test_one_omission_in_different_words_is_one_problem() -> None:
    problems, _, _ = _gate("release-missing-upgrading")
    assert len(problems) == 1
    (problem,) = problems
    assert problem.missing is not None and "Upgrading" in problem.missing
    assert problem.criterion == "completeness"  # both named it; one also said compliance
    assert set(problem.criteria) == {"completeness", "compliance"}


def test_a_placeholder_and_the_omitted_content_it_stands_for_are_one_problem() -> None:
    problems, _, _ = _gate("api-reference-placeholder")
    assert len(problems) == 1
    assert problems[0].quote == "TODO: list the error codes."
    assert set(problems[0].criteria) == {"completeness", "compliance"}


def test_a_missing_row_and_a_negative_price_stay_two_problems() -> None:
    problems, agreement, output = _gate("prices-missing-row")
    assert len(problems) == 2
    missing = [p for p in problems if p.missing is not None]
    priced = [p for p in problems if _about(p, "-4.50", output)]
    assert len(missing) == 1 and len(priced) == 1 and missing != priced
    assert "TLY-1377" in (missing[0].missing or "")
    assert set(missing[0].flagged_by) == set(priced[0].flagged_by) == {"B", "C"}
    assert agreement == 1.0
    assert same_missing("A row for TLY-1377", "The data row for SKU TLY-1377 (Item 1377)")
    assert not same_missing("A row for TLY-1377", "A row for TLY-1378")


def test_a_second_defect_a_reviewer_found_stays_apart_from_the_planted_one() -> None:
    # C also saw that the subject's claim ("waits longer") contradicts the body:
    # a different defect from the subject's length, raised by one reviewer.
    problems, agreement, output = _gate("commit-subject-too-long")
    planted = [
        p for p in problems if _about(p, _planted("commit-subject-too-long")["quote"], output)
    ]
    assert len(planted) == 1 and planted[0].criterion == "compliance"
    others = [p for p in problems if p not in planted]
    assert others and all(p.flagged_by == ("C",) for p in others)
    assert agreement is not None and agreement < 1.0


@pytest.mark.parametrize("case", CONTROLS)
def test_clean_controls_have_no_problem(case: str) -> None:
    problems, agreement, _ = _gate(case)
    assert problems == [] and agreement is None


def test_problems_never_outnumber_the_flags_and_shrink_overall() -> None:
    flags = problems = planted = 0
    for case in DEFECTS:
        found, _, _ = _gate(case)
        problems += len(found)
        planted += 2 if case == "prices-missing-row" else 1
        for x in "BC":
            reply = json.loads((DATA / case / f"review-{x}.json").read_text(encoding="utf-8"))
            flags += len(reply["critical_issues"])
    assert problems < flags / 2
    # Nearly one problem per planted defect (reviewers also find real extras).
    assert problems <= planted * 1.5
