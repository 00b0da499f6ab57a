"""The rules the helper enforces beyond the schema (ARCHITECTURE.md, "The review contract")."""

from __future__ import annotations

import json

import pytest

from _reviews import BASE_IDS, OUTPUT, check, fail_review, issue, pass_review, reply, rubric
from santa_method.core.review import validate_object, validate_reply
from santa_method.core.types import UNSPECIFIED

RUBRIC = rubric()


def _errors(obj: dict, **kwargs) -> list[str]:
    result = validate_object(obj, **kwargs)
    assert not result.valid
    assert result.errors
    return list(result.errors)


def _valid(obj: dict, **kwargs):
    result = validate_object(obj, **kwargs)
    assert result.valid, result.errors
    assert result.errors == ()
    return result


# --- consistency -------------------------------------------------------------


def test_valid_pass_and_valid_fail() -> None:
    assert _valid(pass_review(), rubric=RUBRIC).verdict == "PASS"
    failing = fail_review({"completeness": "no license"}, [issue("completeness", "No license")])
    assert _valid(failing, rubric=RUBRIC).verdict == "FAIL"


def test_pass_with_a_failing_check_is_inconsistent() -> None:
    obj = pass_review()
    obj["checks"][2]["result"] = "FAIL"
    errors = _errors(obj)
    assert any("$.checks[2]" in e and "completeness" in e and "PASS" in e for e in errors)


def test_pass_with_critical_issues_is_inconsistent() -> None:
    obj = pass_review(critical_issues=[issue(None, "a problem")])
    errors = _errors(obj)
    assert any("$.critical_issues" in e and "PASS" in e for e in errors)
    obj = pass_review(critical_issues=["a seed-form problem"])
    assert _errors(obj)


def test_fail_citing_nothing_is_inconsistent() -> None:
    obj = fail_review({})
    errors = _errors(obj)
    assert any("FAIL" in e and "cite" in e for e in errors)


def test_an_issue_under_a_passing_criterion_is_inconsistent() -> None:
    obj = fail_review({"completeness": "x"}, [issue("compliance", "breaks the spec")])
    errors = _errors(obj)
    assert any("$.critical_issues[0]" in e and "compliance" in e for e in errors)


def test_fail_with_only_an_issue_is_consistent() -> None:
    # No checks at all (no rubric given) but a critical issue: still a cited FAIL.
    _valid({"verdict": "FAIL", "checks": [], "critical_issues": ["No license section"]})


def test_a_failing_check_no_issue_names_is_handed_back() -> None:
    errors = _errors(fail_review({"completeness": "no license"}))
    assert errors == [
        "$.checks[2]: check completeness failed, but no issue with evidence names it; add a "
        "critical issue for completeness with a quote from the output (or what is missing), "
        "or make the check PASS"
    ]
    # Named by an issue of its own: valid; another criterion's issue does not explain it.
    _valid(fail_review({"completeness": ""}, [issue("completeness", "x", missing="License")]))
    errors = _errors(
        fail_review(
            {"completeness": "", "compliance": ""},
            [issue("compliance", "Forbidden flag", quote="--chars")],
        )
    )
    assert len(errors) == 1 and "check completeness failed" in errors[0]


def test_a_seed_form_reply_with_plain_string_issues_stays_valid() -> None:
    # The seed's form: issues are strings naming no criterion; the checks say what fails.
    obj = fail_review({"completeness": "no license", "compliance": ""}, ["No License section"])
    result = _valid(obj)
    assert result.review.critical_issues[0].criterion == "unspecified"


def test_an_invalid_review_still_shows_what_was_said() -> None:
    obj = pass_review()
    obj["checks"][0]["result"] = "FAIL"
    result = validate_object(obj)
    assert result.review is not None
    assert result.verdict == "PASS"
    assert not result.valid


# --- coverage ---------------------------------------------------------------


def test_missing_criterion_with_a_rubric() -> None:
    obj = pass_review(ids=BASE_IDS[:-1])
    errors = _errors(obj, rubric=RUBRIC)
    assert any("technical-correctness" in e and "$.checks" in e for e in errors)
    # Without a rubric there is nothing to cover.
    _valid(obj)


def test_duplicate_criterion() -> None:
    obj = pass_review()
    obj["checks"].append(check("completeness"))
    errors = _errors(obj, rubric=RUBRIC)
    assert any("completeness appears 2 times" in e for e in errors)
    assert _errors(obj)  # duplicates are wrong with or without a rubric


def test_unknown_criterion_in_checks() -> None:
    obj = pass_review()
    obj["checks"].append(check("vibes"))
    errors = _errors(obj, rubric=RUBRIC)
    assert any("$.checks[6].criterion" in e and "vibes" in e for e in errors)
    _valid(obj)


def test_unknown_criterion_in_issues() -> None:
    obj = fail_review({"completeness": "x"}, [issue("vibes", "feels off")])
    errors = _errors(obj, rubric=RUBRIC)
    assert any("$.critical_issues[0].criterion" in e and "vibes" in e for e in errors)


# --- canary -----------------------------------------------------------------

TOKEN = "k7Qz-9fXw-secret"


def test_canary_right() -> None:
    _valid(pass_review(canary=TOKEN), canary=TOKEN)
    _valid(pass_review(canary=f"  {TOKEN}\n"), canary=TOKEN)


@pytest.mark.parametrize("given", [None, "", "wrong-token", TOKEN[:-1], TOKEN.upper()])
def test_canary_missing_or_wrong_never_reveals_the_token(given: str | None) -> None:
    obj = pass_review(canary=given)
    result = validate_object(obj, canary=TOKEN)
    assert not result.valid
    assert any(e.startswith("$.canary") for e in result.errors)
    everything = json.dumps([result.errors, result.warnings])
    assert TOKEN not in everything
    assert TOKEN.lower() not in everything.lower()


def test_canary_not_needed_without_a_round() -> None:
    _valid(pass_review())
    _valid(pass_review(canary="anything"))


# --- evidence ---------------------------------------------------------------

SOURCE = (
    'The tool\'s name is "tally".\nIt prints the count\n   of lines, words and bytes.\n'
    "Version 2.0 ships today."
)


@pytest.mark.parametrize(
    "quote",
    [
        'The tool\'s name is "tally".',  # exact
        "The tool\u2019s name is \u201ctally\u201d.",  # curly quotes
        'THE TOOL\'S NAME IS "TALLY".',  # case
        "It prints the count of lines,   words and bytes.",  # line break and spaces
        "it prints the count\nof lines",
        "\uff36\uff45\uff52\uff53\uff49\uff4f\uff4e \uff12\uff0e\uff10",  # full-width "Version 2.0"
    ],
)
def test_quote_verified_after_normalisation(quote: str) -> None:
    obj = fail_review({"factual-accuracy": "x"}, [issue("factual-accuracy", "wrong", quote=quote)])
    result = _valid(obj, output=SOURCE)
    assert result.review.critical_issues[0].evidence == "verified"
    assert not result.unverified_quotes


def test_full_width_output_matches_an_ascii_quote() -> None:
    obj = fail_review({"factual-accuracy": "x"}, [issue("factual-accuracy", "w", quote="v 2.0")])
    result = _valid(obj, output="\uff56 \uff12\uff0e\uff10")
    assert result.review.critical_issues[0].evidence == "verified"


def test_quote_not_in_the_output_is_unverified_and_handed_back() -> None:
    obj = fail_review(
        {"factual-accuracy": "x"},
        [issue("factual-accuracy", "wrong version", quote="Version 3.0 ships today")],
    )
    result = _valid(obj, output=SOURCE)  # an unverified quote does not invalidate
    assert result.review.critical_issues[0].evidence == "unverified"
    assert len(result.unverified_quotes) == 1
    assert any("$.critical_issues[0].quote" in w and "exactly" in w for w in result.warnings)


def test_words_of_the_quote_in_another_order_are_not_a_match() -> None:
    obj = fail_review(
        {"factual-accuracy": "x"}, [issue("factual-accuracy", "w", quote="2.0 Version")]
    )
    assert _valid(obj, output=SOURCE).review.critical_issues[0].evidence == "unverified"


def test_no_evidence_and_missing_are_none() -> None:
    obj = fail_review(
        {"completeness": "x"},
        [
            issue("completeness", "no license"),
            issue("completeness", "no license", missing="License section"),
            issue("completeness", "empty quote", quote="   "),
        ],
    )
    result = _valid(obj, output=SOURCE)
    kinds = [i.evidence for i in result.review.critical_issues]
    assert kinds[:2] == ["none", "none"]
    assert result.review.critical_issues[1].missing == "License section"
    # A blank quote is no quote at all.
    assert kinds[2] == "none"
    assert result.review.critical_issues[2].quote is None


def test_quotes_without_an_output_are_unverified_with_a_warning() -> None:
    obj = fail_review({"completeness": "x"}, [issue("completeness", "w", quote="anything")])
    result = _valid(obj)
    assert result.review.critical_issues[0].evidence == "unverified"
    assert any("--against" in w for w in result.warnings)


# --- seed-form string issues ------------------------------------------------


def test_string_issue_takes_the_only_failing_check() -> None:
    obj = fail_review({"completeness": "x"}, ["No License section"])
    result = _valid(obj, rubric=RUBRIC)
    only = result.review.critical_issues[0]
    assert (only.criterion, only.issue, only.evidence) == (
        "completeness",
        "No License section",
        "none",
    )


def test_string_issue_with_several_failing_checks_is_unspecified() -> None:
    obj = fail_review({"completeness": "x", "compliance": "y"}, ["Something is wrong"])
    result = _valid(obj, rubric=RUBRIC)  # 'unspecified' is not an unknown criterion
    assert result.review.critical_issues[0].criterion == UNSPECIFIED


def test_string_issue_without_failing_checks_is_unspecified() -> None:
    result = _valid({"verdict": "FAIL", "checks": [], "critical_issues": ["Bad"]})
    assert result.review.critical_issues[0].criterion == UNSPECIFIED


def test_object_issue_without_criterion_takes_the_only_failing_check() -> None:
    obj = fail_review({"compliance": "y"}, [issue(None, "Documents --chars", quote="--chars")])
    result = _valid(obj, output=OUTPUT)
    assert result.review.critical_issues[0].criterion == "compliance"
    assert result.review.critical_issues[0].evidence == "verified"


# --- tolerance --------------------------------------------------------------


def test_unknown_fields_are_warnings_not_errors() -> None:
    obj = fail_review(
        {"completeness": "x"},
        [dict(issue("completeness", "no license", missing="License"), severity="high")],
    )
    obj["confidence"] = 0.8
    obj["checks"][0]["score"] = 5
    result = _valid(obj, rubric=RUBRIC)
    assert "$.confidence: unknown field ignored" in result.warnings
    assert "$.checks[0].score: unknown field ignored" in result.warnings
    assert "$.critical_issues[0].severity: unknown field ignored" in result.warnings
    assert "confidence" not in result.review.to_json()


# --- the normalised review, as `santa validate --json` prints it ------------


def test_json_form_holds_the_normalised_review() -> None:
    obj = fail_review(
        {"completeness": "no license"},
        [
            "No License section",
            issue(None, "  padded  ", missing=" License section "),
        ],
        suggestions=["  add a usage example ", "   "],
    )
    data = validate_reply(reply(obj, "fenced"), rubric=RUBRIC, output=OUTPUT).to_json()
    assert set(data) == {"valid", "verdict", "errors", "warnings", "review"}
    assert data["valid"] is True
    assert data["verdict"] == "FAIL"
    review = data["review"]
    assert review["critical_issues"] == [
        {"criterion": "completeness", "issue": "No License section", "evidence": "none"},
        {
            "criterion": "completeness",
            "issue": "padded",
            "missing": "License section",
            "evidence": "none",
        },
    ]
    assert review["suggestions"] == ["add a usage example"]
    assert [c["criterion"] for c in review["checks"]] == list(BASE_IDS)
    assert json.loads(json.dumps(data)) == data


def test_json_form_of_an_unparseable_reply() -> None:
    data = validate_reply("no review here").to_json()
    assert data["valid"] is False
    assert data["verdict"] is None
    assert data["review"] is None
    assert data["errors"]


# --- replies that must not count: arrays, duplicate keys, blank or empty fields ---


def _text(obj: object) -> str:
    return json.dumps(obj)


def test_a_review_inside_a_json_array_does_not_count() -> None:
    fail, passing = fail_review(["factual-accuracy"]), pass_review()
    result = validate_reply(f"[{_text(fail)}, {_text(passing)}]", rubric=RUBRIC)
    assert not result.valid and "array" in result.errors[0]


def test_an_array_of_objects_after_the_verdict_makes_the_reply_invalid() -> None:
    text = _text(pass_review()) + "\nand also\n" + f"[{_text(fail_review(['factual-accuracy']))}]"
    result = validate_reply(text, rubric=RUBRIC)
    assert not result.valid


@pytest.mark.parametrize(
    "prose",
    [
        "The loop runs over [0, n) and stops.",
        "See [1], [2, 3 and [[the guide]].",
        "An unclosed [ bracket, then ] and ]] alone.",
        "Fill in [{name}] before shipping.",
    ],
)
def test_brackets_in_prose_before_the_review_are_prose_not_an_array(prose: str) -> None:
    result = validate_reply(prose + "\n" + _text(pass_review()), rubric=RUBRIC)
    assert result.valid, result.errors


@pytest.mark.parametrize(
    "layout",
    ["[{review}]", "[\n  {other},\n  {review}\n]", "[[ {review} ]]", "See [0, n).\n[{review}]"],
)
def test_a_review_in_an_array_after_prose_brackets_still_does_not_count(layout: str) -> None:
    text = layout.format(review=_text(pass_review()), other=_text({"note": "x"}))
    result = validate_reply(text, rubric=RUBRIC)
    assert not result.valid and "array" in result.errors[0]


def test_duplicate_keys_are_refused_not_last_one_wins() -> None:
    fail = _text(fail_review(["factual-accuracy"]))
    forged = fail[:-1] + ', "verdict": "PASS"}'
    result = validate_reply(forged, rubric=RUBRIC)
    assert not result.valid and "'verdict' more than once" in result.errors[0]


def test_a_review_with_no_checks_is_invalid_even_without_a_rubric() -> None:
    result = validate_reply(_text({"verdict": "PASS", "checks": [], "critical_issues": []}))
    assert not result.valid and any("$.checks: empty" in e for e in result.errors)


def test_blank_criterion_and_blank_issue_are_invalid() -> None:
    blank_check = {"verdict": "PASS", "checks": [check(" ")], "critical_issues": []}
    assert not validate_reply(_text(blank_check)).valid
    blank_issue = fail_review(["factual-accuracy"])
    blank_issue["critical_issues"] = ["   "]
    result = validate_reply(_text(blank_issue), rubric=RUBRIC)
    assert not result.valid and any("blank" in e for e in result.errors)


def test_an_issue_with_a_verified_quote_still_validates() -> None:
    # The tightened rules leave ordinary reviews alone.
    review = fail_review(
        ["factual-accuracy"], [issue("factual-accuracy", "wrong", quote="Current version: 2.0.")]
    )
    assert validate_reply(_text(review), rubric=RUBRIC, output=OUTPUT).valid
