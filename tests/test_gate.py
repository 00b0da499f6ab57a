"""The verdict gate: NICE only with at least two valid PASS reviews (ARCHITECTURE.md, "The gate")."""

from __future__ import annotations

import pytest

from _reviews import OUTPUT, fail_review, issue, pass_review, reply, review_reply, rubric
from santa_method.core.gate import all_passed, default_labels, gate, gate_replies
from santa_method.core.review import validate_object, validate_reply

RUBRIC = rubric()
PASS = reply(pass_review(), "fenced")
FAIL = reply(
    fail_review({"no-hallucination": ""}, [issue("no-hallucination", "x", quote="--chars")]),
    "prose",
)


def test_two_valid_passes_are_nice() -> None:
    result = gate_replies([PASS, PASS], rubric=RUBRIC, output=OUTPUT)
    assert (result.verdict, result.next) == ("NICE", "ship")
    assert result.issues == ()
    assert [r.label for r in result.reviews] == ["B", "C"]
    assert all(r.valid and r.verdict == "PASS" for r in result.reviews)


def test_three_passes_are_nice_and_one_fail_among_them_is_not() -> None:
    assert gate_replies([PASS, PASS, PASS]).verdict == "NICE"
    result = gate_replies([PASS, FAIL, PASS])
    assert (result.verdict, result.next) == ("NAUGHTY", "fix")


def test_one_review_alone_is_never_nice() -> None:
    result = gate_replies([PASS])
    assert (result.verdict, result.next) == ("NAUGHTY", "rereview")
    assert [r.label for r in result.reviews] == ["B", "C"]
    assert result.reviews[1].valid is False
    assert "no reply" in result.reviews[1].errors[0]
    assert gate([]).verdict == "NAUGHTY"


def test_a_missing_expected_reviewer_is_a_failed_slot() -> None:
    result = gate_replies([PASS, PASS], expected=3)
    assert (result.verdict, result.next) == ("NAUGHTY", "rereview")
    assert result.reviews[2].label == "D"
    result = gate_replies([PASS, None])
    assert (result.verdict, result.next) == ("NAUGHTY", "rereview")


@pytest.mark.parametrize("bad", ["", "not a review", PASS[:-30], '{"verdict": "PASS"}'])
def test_an_invalid_reply_and_a_pass_means_review_again(bad: str) -> None:
    result = gate_replies([PASS, bad], rubric=RUBRIC)
    assert (result.verdict, result.next) == ("NAUGHTY", "rereview")
    assert result.reviews[1].valid is False
    assert result.reviews[1].errors
    assert result.issues == ()
    assert any("C" in reason for reason in result.reasons)


def test_a_fail_means_fix_with_its_flags() -> None:
    result = gate_replies([PASS, FAIL], output=OUTPUT)
    assert (result.verdict, result.next) == ("NAUGHTY", "fix")
    assert [i.flagged_by for i in result.issues] == [("C",)]
    assert result.issues[0].evidence == "verified"


def test_an_invalid_reply_and_a_fail_means_fix() -> None:
    result = gate_replies(["garbage", FAIL])
    assert (result.verdict, result.next) == ("NAUGHTY", "fix")


def test_an_invalid_review_contributes_no_flags() -> None:
    inconsistent = pass_review(critical_issues=[issue("completeness", "should not count")])
    result = gate_replies([reply(inconsistent), FAIL])
    assert all("C" in i.flagged_by for i in result.issues)
    assert not any(i.issue == "should not count" for i in result.issues)


def test_labels() -> None:
    assert default_labels(3) == ["B", "C", "D"]
    assert default_labels(27)[-2:] == ["R27", "R28"]
    assert len(set(default_labels(40))) == 40
    result = gate_replies([PASS, FAIL], ["opus", "sonnet"])
    assert [r.label for r in result.reviews] == ["opus", "sonnet"]
    assert result.issues[0].flagged_by == ("sonnet",)
    with pytest.raises(ValueError):
        gate_replies([PASS, PASS], ["x", "x"])


def test_suggestions_are_merged() -> None:
    b = pass_review(suggestions=["Show one example of reading standard input.", "Add a FAQ"])
    c = pass_review(suggestions=["show one example of reading standard input", "Add badges"])
    result = gate([validate_object(b), validate_object(c)])
    assert result.verdict == "NICE"
    assert result.suggestions == (
        "Show one example of reading standard input.",
        "Add a FAQ",
        "Add badges",
    )


def test_suggestions_of_invalid_reviews_are_dropped() -> None:
    bad = pass_review(suggestions=["from an invalid review"], verdict="FAIL")
    result = gate([validate_object(pass_review()), validate_object(bad)])
    assert "from an invalid review" not in result.suggestions


def test_canary_is_enforced_for_every_reviewer() -> None:
    good = reply(pass_review(canary="tok-1"))
    assert gate_replies([good, good], canary="tok-1").verdict == "NICE"
    result = gate_replies([good, PASS], canary="tok-1")
    assert (result.verdict, result.next) == ("NAUGHTY", "rereview")


def test_json_form() -> None:
    data = gate_replies([PASS, FAIL], output=OUTPUT).to_json()
    assert {"verdict", "reviews", "issues", "suggestions", "agreement", "next"} <= set(data)
    assert set(data["reviews"][0]) >= {"label", "valid", "verdict", "errors"}
    flag = data["issues"][0]
    assert {"criterion", "issue", "evidence", "flagged_by"} <= set(flag)
    assert flag["quote"] == "--chars"


# --- the one rule of NICE ----------------------------------------------------


@pytest.mark.parametrize("expected", [1, 2, 3])
@pytest.mark.parametrize(
    "replies",
    [
        [],
        [(True, "PASS")],
        [(True, "PASS"), (True, "PASS")],
        [(True, "PASS"), (True, "FAIL")],
        [(True, "PASS"), (False, None)],
        [(True, "PASS"), (False, "PASS")],
        [(True, "PASS"), (True, "PASS"), (True, "PASS")],
    ],
)
def test_all_passed_is_exactly_every_expected_reply_a_valid_pass(
    replies: list[tuple[bool, str | None]], expected: int
) -> None:
    want = (
        expected >= 2
        and len(replies) == expected
        and all(valid and verdict == "PASS" for valid, verdict in replies)
    )
    assert all_passed(replies, expected) is want


@pytest.mark.parametrize(
    "verdicts", [("PASS", "PASS"), ("PASS", "FAIL"), ("PASS", None), ("PASS",), ("PASS",) * 3]
)
def test_the_gate_says_nice_exactly_when_all_passed_holds(verdicts: tuple[str | None, ...]) -> None:
    """The gate and the later checks of its NICE (ship, the state's own) share one rule."""
    results = [
        None
        if verdict is None
        else validate_reply(review_reply(failing=() if verdict == "PASS" else ["completeness"]))
        for verdict in verdicts
    ]
    result = gate(results, expected=2)
    replies = [(o.valid, o.verdict) for o in result.reviews]
    assert len(replies) == max(len(verdicts), 2)  # a missing reply is a slot, never skipped
    assert (result.verdict == "NICE") is all_passed(replies, len(replies))
