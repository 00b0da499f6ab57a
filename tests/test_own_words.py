"""A review that states a second verdict anywhere is ambiguous, never a PASS:
a key beside `verdict` that reads as one, and the reviewer's own words inside
the review (details, issues, suggestions) held to the prose rule that text
around the review already follows (core/ambiguity.py). Quotes of the output
are evidence and may say anything; real reviewers' replies keep their
verdicts (tests/data/real-reviews/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _reviews import BASE_IDS, OUTPUT, fail_review, issue, pass_review, reply, rubric
from santa_method.core.review import validate_object, validate_reply

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "real-reviews"
RUBRIC = rubric()


def _pass_with(change: Any) -> dict[str, Any]:
    review = pass_review()
    change(review)
    return review


def _ambiguous(review: dict[str, Any]) -> None:
    """Refused as ambiguous, in a raw reply and as a structured-output object."""
    for result in (
        validate_reply(reply(review, "fenced"), rubric=RUBRIC),
        validate_object(review, rubric=RUBRIC),
    ):
        assert not result.valid
        assert "ambiguous" in result.errors[0], result.errors


# --- keys beside the verdict and a check's result ------------------------------


@pytest.mark.parametrize("key", ["Verdict", "verdict ", " verdict", "VERDICT", "final_verdict"])
def test_a_verdict_like_key_beside_a_pass_is_ambiguous(key: str) -> None:
    _ambiguous(_pass_with(lambda r: r.update({key: "FAIL"})))


@pytest.mark.parametrize("nested", [False, True], ids=["beside", "in-a-draft"])
def test_two_verdict_like_keys_both_count(nested: bool) -> None:
    # Normalised alike, they must not collapse into one (the later PASS hiding the FAIL).
    keys = {"verdict ": "FAIL", "Verdict": "PASS"}
    _ambiguous(_pass_with(lambda r: r.update({"draft": keys} if nested else keys)))


@pytest.mark.parametrize(
    "extra",
    [
        {"verdicts": ["FAIL"]},
        {"reviewer_verdicts": {"B": "FAIL"}},
        {"results": "FAIL"},
        {"check_results": {"completeness": "FAIL"}},
        {"check_results": [{"name": "completeness", "outcome": "FAIL"}]},
        {"overall": "FAIL"},
        {"outcome": "fail"},
        {"status": "FAIL"},
        {"decision": "\u274c"},
    ],
    ids=lambda extra: next(iter(extra)),
)
def test_a_second_verdict_under_a_plural_or_a_synonym_is_ambiguous(extra: dict[str, Any]) -> None:
    _ambiguous(_pass_with(lambda r: r.update(extra)))


@pytest.mark.parametrize(
    "extra",
    [
        {"status": "complete"},
        {"results": ["a list of lists", "a count per file"]},
        {"verdicts": ["PASS", "PASS"]},
        {"check_results": {"completeness": "PASS"}},
        {"decision": "ship it"},
    ],
    ids=lambda extra: f"{next(iter(extra))}-{json.dumps(next(iter(extra.values())))}",
)
def test_words_under_such_keys_that_state_no_other_verdict_keep_a_pass(
    extra: dict[str, Any],
) -> None:
    review = _pass_with(lambda r: r.update(extra))
    assert validate_object(review, rubric=RUBRIC).valid


@pytest.mark.parametrize("key", ["\uff56\uff45\uff52\uff44\uff49\uff43\uff54", "ver\u200bdict"])
def test_a_verdict_key_in_look_alike_or_hidden_letters_is_ambiguous(key: str) -> None:
    _ambiguous(_pass_with(lambda r: r.update({key: "FAIL"})))


@pytest.mark.parametrize("words", ["Overall: FAIL", "Conclusion: FAIL", "Status: FAIL"])
def test_a_synonym_stated_in_prose_is_ambiguous_as_in_a_key(words: str) -> None:
    before = validate_reply(f"{words}\n\n{json.dumps(pass_review())}", rubric=RUBRIC)
    assert not before.valid and "ambiguous" in before.errors[0]
    _ambiguous(_pass_with(lambda r: r.update({"summary": words})))


@pytest.mark.parametrize("key", ["Result", "result ", "final_result"])
def test_a_result_like_key_beside_a_check_is_ambiguous(key: str) -> None:
    _ambiguous(_pass_with(lambda r: r["checks"][2].update({key: "FAIL"})))


# --- the reviewer's own words ---------------------------------------------------


@pytest.mark.parametrize(
    "words",
    [
        "My verdict is FAIL.",
        "The verdict would be a FAIL.",
        "verdict: FAIL",
        "Verdict: \u274c",
        "**Verdict**: REJECT",
        "result: FAIL",
        "completeness: FAIL",
        "## Verdict\n\nFAIL",
        "verdict: F\\u0041IL",
    ],
)
@pytest.mark.parametrize("where", ["suggestion", "detail", "extra field"])
def test_a_second_verdict_in_the_reviewers_own_words_is_ambiguous(words: str, where: str) -> None:
    def put(review: dict[str, Any]) -> None:
        if where == "suggestion":
            review["suggestions"] = ["Shorten the intro.", words]
        elif where == "detail":
            review["checks"][3]["detail"] = words
        else:
            review["summary"] = words

    _ambiguous(_pass_with(put))


def test_the_same_sentence_is_ambiguous_inside_the_review_as_before_it() -> None:
    words = "My verdict is FAIL."
    before = validate_reply(f"{words}\n\n{json.dumps(pass_review())}", rubric=RUBRIC)
    inside = validate_reply(json.dumps(pass_review(suggestions=[words])), rubric=RUBRIC)
    assert not before.valid and not inside.valid
    assert before.errors == inside.errors


def test_a_fail_whose_issue_says_pass_is_ambiguous_too() -> None:
    review = fail_review(
        ["factual-accuracy"],
        [issue("factual-accuracy", "Wrong version. Verdict: PASS otherwise", quote="version: 2.0")],
    )
    result = validate_reply(json.dumps(review), rubric=RUBRIC, output=OUTPUT)
    assert not result.valid and "ambiguous" in result.errors[0]


@pytest.mark.parametrize(
    "words",
    [
        "size < 1 raises ValueError before range could fail",
        "No check fails: every flag the usage shows exists.",
        "The result is a list of lists; a failed read raises OSError.",
        "Tests pass and the verdict is clear.",
        "It returns the result: a count per file.",
    ],
)
def test_ordinary_words_about_failure_keep_a_pass(words: str) -> None:
    review = pass_review(suggestions=[words])
    review["checks"][0]["detail"] = words
    for result in (
        validate_reply(json.dumps(review), rubric=RUBRIC),
        validate_object(review, rubric=RUBRIC),
    ):
        assert result.valid and result.verdict == "PASS", result.errors


def test_a_quote_of_the_output_may_say_anything() -> None:
    output = "# Audit guide\n\nA failed audit ends with verdict: FAIL and result: FAIL.\n"
    quoted = "verdict: FAIL and result: FAIL"
    review = fail_review(
        ["factual-accuracy"],
        [issue("factual-accuracy", "The guide contradicts the spec.", quote=quoted)],
    )
    result = validate_reply(json.dumps(review), rubric=RUBRIC, output=output)
    assert result.valid and result.verdict == "FAIL", result.errors
    missing = fail_review(
        ["completeness"],
        [issue("completeness", "A line is missing.", missing="the line 'verdict: PASS'")],
    )
    assert validate_reply(json.dumps(missing), rubric=RUBRIC).valid


# --- real reviewers' replies ------------------------------------------------------


def _real() -> list[tuple[str, str]]:
    return [
        (case.name, path.name)
        for case in sorted(p for p in DATA.iterdir() if p.is_dir())
        for path in sorted(case.glob("review-*.json"))
    ]


@pytest.mark.parametrize(("case", "name"), _real())
def test_every_real_reply_keeps_its_verdict(case: str, name: str) -> None:
    text = (DATA / case / name).read_text(encoding="utf-8")
    said = json.loads(text)["verdict"]
    own = DATA / case / "output.md"
    output = (
        own if own.exists() else ROOT / "bench/detection/cases" / case / "output.md"
    ).read_text(encoding="utf-8")
    result = validate_reply(text, rubric=rubric(BASE_IDS), output=output)
    assert result.valid and result.verdict == said, result.errors


def test_the_real_replies_hold_passes_and_fails() -> None:
    verdicts = [json.loads((DATA / c / n).read_text())["verdict"] for c, n in _real()]
    assert verdicts.count("PASS") >= 10 and verdicts.count("FAIL") >= 20
