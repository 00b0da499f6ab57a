"""`santa metrics` counts problems: taxonomy by primary criterion, and per
reviewer slot and model what only that reviewer raised and what the fixer
made of it."""

from __future__ import annotations

from typing import Any

from santa_method.state.metrics import compute


def _records() -> list[dict[str, Any]]:
    def rec(event: str, iteration: int, **data: Any) -> dict[str, Any]:
        return {
            "run_id": "R1",
            "event": event,
            "iteration": iteration,
            "ts": "2026-12-01T10:00:00Z",
            **data,
        }

    def problem(key: str, by: list[str], criteria: list[str]) -> dict[str, Any]:
        return {
            "criterion": criteria[0],
            "issue": key,
            "key": key,
            "flagged_by": by,
            "criteria": criteria,
        }

    return [
        rec("run", 0, reviewers=2, models=["opus", "haiku"], target="x.md"),
        rec("review", 1, label="B", valid=True, verdict="FAIL", checks=[]),
        rec("review", 1, label="C", valid=True, verdict="FAIL", checks=[]),
        rec(
            "gate",
            1,
            verdict="NAUGHTY",
            next="fix",
            valid_reviewers=["B", "C"],
            issues=[
                problem(
                    "both", ["B", "C"], ["no-hallucination", "compliance", "technical-correctness"]
                ),
                problem("b-real", ["B"], ["factual-accuracy"]),
                problem("b-wrong", ["B"], ["compliance", "factual-accuracy"]),
                problem("c-only", ["C"], ["completeness"]),
            ],
        ),
        rec(
            "fix",
            1,
            report=[
                {"n": 1, "answer": "fixed", "key": "both"},
                {"n": 2, "answer": "fixed", "key": "b-real"},
                {"n": 3, "answer": "not an issue", "key": "b-wrong"},
                {"n": 4, "answer": "unanswered", "key": "c-only"},
            ],
        ),
    ]


def test_taxonomy_counts_each_problem_once_under_its_primary_criterion() -> None:
    result = compute(_records())
    assert result["taxonomy"] == {
        "compliance": 1,
        "completeness": 1,
        "factual-accuracy": 1,
        "no-hallucination": 1,
    }
    assert result["taxonomy_secondary"] == {
        "compliance": 1,
        "factual-accuracy": 1,
        "technical-correctness": 1,
    }
    assert result["agreement"]["issues"] == 1 / 4


def test_what_only_one_reviewer_raised_and_what_the_fixer_made_of_it() -> None:
    reviewers = compute(_records())["reviewers"]
    assert reviewers["by_slot"] == {
        "B": {"problems": 3, "only": 2, "confirmed": 1, "withdrawn": 1},
        "C": {"problems": 2, "only": 1, "confirmed": 0, "withdrawn": 0},
    }
    assert reviewers["by_model"] == {
        "haiku": {"problems": 2, "only": 1, "confirmed": 0, "withdrawn": 0},
        "opus": {"problems": 3, "only": 2, "confirmed": 1, "withdrawn": 1},
    }
