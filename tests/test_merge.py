"""Merging flags into distinct problems, exactly as ARCHITECTURE.md defines "same problem"."""
# ruff: noqa: RUF001 - Chinese and Japanese text uses full-width punctuation on purpose

from __future__ import annotations

from typing import Any

import pytest

from _reviews import OUTPUT, fail_review, issue
from santa_method.core.gate import gate
from santa_method.core.merge import same_missing, same_wording
from santa_method.core.review import validate_object
from santa_method.core.types import MergedIssue


def merged(
    reviews: list[dict[str, Any]],
    output: str | None = OUTPUT,
    labels: list[str] | None = None,
) -> tuple[list[MergedIssue], float | None]:
    results = [validate_object(r, output=output) for r in reviews]
    for result in results:
        assert result.valid, result.errors
    outcome = gate(results, labels, output=output)
    return list(outcome.issues), outcome.agreement


def one_issue(criterion: str, text: str, **evidence: str) -> dict[str, Any]:
    return fail_review({criterion: ""}, [issue(criterion, text, **evidence)])


def _two(a: dict[str, Any], b: dict[str, Any], output: str | None = OUTPUT) -> list[MergedIssue]:
    return merged([a, b], output)[0]


# --- quotes -------------------------------------------------------------------


def test_a_quote_containing_the_other_merges() -> None:
    issues = _two(
        one_issue("no-hallucination", "Invents --chars", quote="tally --chars notes.txt"),
        one_issue("no-hallucination", "No such flag", quote="--chars notes.txt"),
    )
    assert len(issues) == 1
    assert issues[0].flagged_by == ("B", "C")
    assert issues[0].evidence == "verified"


def test_partially_overlapping_quotes_merge() -> None:
    a = "counts lines, words and bytes"
    b = "words and bytes in your files"
    assert a not in b and b not in a
    issues = _two(
        one_issue("compliance", "Wrong summary", quote=a),
        one_issue("compliance", "Summary lacks detail", quote=b),
    )
    assert len(issues) == 1
    assert issues[0].flagged_by == ("B", "C")


def test_overlap_is_judged_after_normalisation_across_a_line_break() -> None:
    issues = _two(
        one_issue("no-hallucination", "Speed claim", quote="given, and it is the fastest"),
        one_issue("no-hallucination", "Unsourced", quote="IT IS THE FASTEST COUNTER"),
    )
    assert len(issues) == 1


def test_quotes_that_do_not_overlap_stay_apart() -> None:
    issues = _two(
        one_issue("no-hallucination", "Speed claim", quote="the fastest counter available"),
        one_issue("no-hallucination", "Invented flag", quote="tally --chars notes.txt"),
    )
    assert len(issues) == 2
    assert [i.flagged_by for i in issues] == [("B",), ("C",)]


def test_adjacent_quotes_in_different_claims_stay_apart() -> None:
    issues = _two(
        one_issue("factual-accuracy", "x", quote="words and bytes in your files."),
        one_issue("factual-accuracy", "x", quote="Current version: 2.0."),
    )
    assert len(issues) == 2


def test_two_parts_of_one_claim_under_one_criterion_are_one_problem() -> None:
    issues = _two(
        one_issue("factual-accuracy", "Wrong label", quote="Current version:"),
        one_issue("factual-accuracy", "Wrong number", quote="2.0."),
    )
    assert len(issues) == 1
    assert issues[0].all_quotes == ("Current version:", "2.0.")


def test_two_parts_of_one_claim_under_different_criteria_join_only_on_a_shared_figure() -> None:
    issues = _two(
        one_issue("factual-accuracy", "The version is not 2.0", quote="Current version:"),
        one_issue("internal-consistency", "2.0 disagrees with the changelog", quote="2.0."),
    )
    assert len(issues) == 1
    issues = _two(
        one_issue("factual-accuracy", "Wrong label", quote="Current version:"),
        one_issue("internal-consistency", "Disagrees with the changelog", quote="2.0."),
    )
    assert len(issues) == 2


def test_the_same_quote_under_different_criteria_is_one_problem() -> None:
    issues = _two(
        one_issue("no-hallucination", "Invents a flag", quote="tally --chars notes.txt"),
        one_issue(
            "compliance", "Documents a flag the spec forbids", quote="tally --chars notes.txt"
        ),
    )
    assert len(issues) == 1
    assert issues[0].criterion == "no-hallucination"  # one reviewer each: the first named
    assert issues[0].criteria == ("no-hallucination", "compliance")
    assert issues[0].to_json()["criteria"] == ["no-hallucination", "compliance"]
    assert issues[0].to_json()["quotes"] == ["tally --chars notes.txt"]


def test_the_primary_criterion_is_the_one_most_reviewers_named() -> None:
    flag = {"quote": "tally --chars notes.txt"}
    reviews = [
        one_issue("compliance", "Documents a forbidden flag", **flag),
        one_issue("no-hallucination", "Invents --chars", **flag),
        fail_review(
            {"no-hallucination": "", "technical-correctness": ""},
            [
                issue("technical-correctness", "The command fails", **flag),
                issue("no-hallucination", "No such flag", quote="--chars"),
            ],
        ),
    ]
    issues, agreement = merged(reviews)
    assert len(issues) == 1
    assert issues[0].criterion == "no-hallucination"
    assert issues[0].issue == "Invents --chars"
    assert set(issues[0].criteria) == {"compliance", "no-hallucination", "technical-correctness"}
    assert issues[0].flagged_by == ("B", "C", "D")
    assert agreement == 1.0


TURBO = "# tally 2.1\n\nVersion 2.5.0 adds `--turbo` for large files.\n"


@pytest.mark.parametrize(
    ("version_quote", "turbo_quote"),
    [
        ("Version 2.5.0 adds `--turbo`", "Version 2.5.0 adds `--turbo`"),  # both quote it all
        ("Version 2.5.0", "adds `--turbo`"),  # each its part
        ("Version 2.5.0", "Version 2.5.0 adds `--turbo` for large files."),
    ],
)
def test_a_wrong_version_and_an_invented_flag_in_one_sentence_are_two_problems(
    version_quote: str, turbo_quote: str
) -> None:
    for version_criterion in ("factual-accuracy", "no-hallucination"):
        issues = _two(
            one_issue(
                version_criterion,
                "The spec's release is 2.4.0, not 2.5.0.",
                quote=version_quote,
            ),
            one_issue(
                "no-hallucination",
                "`--turbo` is not an option the spec lists; it is invented.",
                quote=turbo_quote,
            ),
            output=TURBO,
        )
        assert len(issues) == 2, (version_quote, turbo_quote, version_criterion)


def test_no_chain_of_flags_joins_two_different_defects() -> None:
    # A third flag overlaps both, but the version and the flag stay apart.
    reviews = [
        one_issue("factual-accuracy", "2.5.0 should be 2.4.0", quote="Version 2.5.0"),
        one_issue("no-hallucination", "`--turbo` is invented", quote="adds `--turbo`"),
        one_issue("compliance", "This sentence breaks the spec", quote="2.5.0 adds `--turbo`"),
    ]
    issues, _ = merged(reviews, TURBO)
    assert len(issues) == 2


def test_a_placeholder_joins_the_omission_its_description_names() -> None:
    output = "## Errors\n\nTODO: list the error codes.\n"
    issues = _two(
        one_issue(
            "completeness",
            "A placeholder instead of the `400 Bad Request` and `404 Not Found` errors",
            quote="TODO: list the error codes.",
        ),
        one_issue("completeness", "Absent", missing="`400 Bad Request` and `404 Not Found`"),
        output=output,
    )
    assert len(issues) == 1
    assert issues[0].quote == "TODO: list the error codes."
    assert issues[0].missing is None  # the face is the quoted flag (listed first)


def test_unlocated_quotes_merge_only_by_containment() -> None:
    # Without the output the quotes cannot be placed; one contains the other.
    issues = _two(
        one_issue("factual-accuracy", "x", quote="Current version: 2.0."),
        one_issue("factual-accuracy", "y", quote="version: 2.0"),
        output=None,
    )
    assert len(issues) == 1
    assert issues[0].evidence == "unverified"


def test_a_verified_quote_is_the_face_of_its_group() -> None:
    issues = _two(
        one_issue("factual-accuracy", "made up", quote="Current version: 2.0. Released 2020"),
        one_issue("factual-accuracy", "Wrong version", quote="Current version: 2.0."),
    )
    assert len(issues) == 1
    assert issues[0].evidence == "verified"
    assert issues[0].issue == "Wrong version"


# --- missing items ------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("License section (MIT)", "A License section", True),
        ("license section", "The LICENSE section is required", True),
        ("License section", "Changelog section", False),
        ("documentation of --bytes", "documentation of --words", False),
        ("License section \uff08MIT\uff09", "a license section", True),
        ("A row for TLY-1377", "The data row for SKU TLY-1377 (Item 1377)", True),
        ("A row for TLY-1377", "A row for TLY-1378", False),
        (
            "A level-2 'Upgrading' section",
            "The third level-2 heading, 'Upgrading', after 'Fixes'",
            True,
        ),
        ("A level-2 'Upgrading' section", "A level-2 'Changelog' section", False),
        ("the `Upgrading` section", "an upgrading section with the pip command", True),
        ("the `--bytes` option", "the `--words` option", False),
    ],
)
def test_same_missing_item(a: str, b: str, same: bool) -> None:
    assert same_missing(a, b) is same
    issues = _two(
        one_issue("completeness", "Missing part", missing=a),
        one_issue("completeness", "Missing part", missing=b),
    )
    assert len(issues) == (1 if same else 2)
    assert all(i.evidence == "none" for i in issues)


def test_a_quote_and_a_missing_item_never_merge() -> None:
    issues = _two(
        one_issue("completeness", "No bytes flag", quote="tally --lines notes.txt"),
        one_issue("completeness", "No bytes flag", missing="tally --lines notes.txt"),
    )
    assert len(issues) == 2


# --- wording, the last resort -------------------------------------------------


def test_wording_merges_only_without_evidence() -> None:
    text_a, text_b = "The intro paragraph is too long", "the intro paragraph is too long."
    assert same_wording(text_a, text_b)
    assert len(_two(one_issue("compliance", text_a), one_issue("compliance", text_b))) == 1
    # Alike words with quotes that do not overlap: two problems.
    issues = _two(
        one_issue("compliance", text_a, quote="Current version: 2.0."),
        one_issue("compliance", text_b, quote="the fastest counter available"),
    )
    assert len(issues) == 2
    # A flag without evidence joins one with evidence that says the same.
    issues = _two(
        one_issue("compliance", text_a, quote="Current version: 2.0."),
        one_issue("compliance", text_b),
    )
    assert len(issues) == 1
    assert issues[0].quote == "Current version: 2.0."
    assert issues[0].flagged_by == ("B", "C")
    # ... but not under another criterion, nor when the words differ.
    assert (
        len(
            _two(
                one_issue("compliance", text_a, quote="Current version: 2.0."),
                one_issue("factual-accuracy", text_b),
            )
        )
        == 2
    )
    assert (
        len(
            _two(
                one_issue("compliance", text_a, quote="Current version: 2.0."),
                one_issue("compliance", "The usage section is too long"),
            )
        )
        == 2
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("lacks error handling for network errors", "lacks error handling for file errors"),
        ("The version should be 2.1", "The version should be 3.1"),
        ("Step 2 is missing", "Step 3 is missing"),
    ],
)
def test_alike_wording_of_different_problems_stays_apart(a: str, b: str) -> None:
    assert not same_wording(a, b)
    issues = _two(one_issue("technical-correctness", a), one_issue("technical-correctness", b))
    assert len(issues) == 2


# --- failing checks, labels, agreement ----------------------------------------


def test_a_seed_form_failing_check_no_issue_explains_becomes_a_flag() -> None:
    # Seed form: plain-string issues name no criterion (two checks fail, so
    # the string cannot be assigned); each unexplained failing check is a flag.
    b = fail_review(
        {"completeness": "--bytes is not documented", "compliance": ""}, ["Documents --chars"]
    )
    c = fail_review({"technical-correctness": ""}, ["The example command fails"])
    issues, _ = merged([b, c])
    by_criterion = {i.criterion: i for i in issues}
    assert set(by_criterion) == {
        "unspecified",
        "completeness",
        "compliance",
        "technical-correctness",
    }
    assert by_criterion["completeness"].issue == "--bytes is not documented"
    assert by_criterion["completeness"].source == "check"
    assert by_criterion["completeness"].flagged_by == ("B",)
    assert "compliance" in by_criterion["compliance"].issue
    # C's string issue took its only failing check's criterion: no extra flag.
    assert by_criterion["technical-correctness"].source == "issue"
    assert by_criterion["technical-correctness"].flagged_by == ("C",)


def test_the_same_failing_check_from_two_seed_replies_is_one_flag() -> None:
    b = fail_review({"completeness": "No License section", "compliance": ""}, ["Bad"])
    c = fail_review({"completeness": "no license section.", "compliance": ""}, ["bad"])
    issues, agreement = merged([b, c])
    (license_,) = [i for i in issues if i.criterion == "completeness"]
    assert license_.flagged_by == ("B", "C")
    assert agreement == 1.0


def test_flagged_by_lists_every_label_and_agreement_counts_unanimous_issues() -> None:
    shared = issue("no-hallucination", "Invents --chars", quote="tally --chars notes.txt")
    reviews = [
        fail_review({"no-hallucination": ""}, [shared]),
        fail_review({"no-hallucination": ""}, [dict(shared, quote="--chars notes.txt")]),
        fail_review(
            {"no-hallucination": "", "factual-accuracy": ""},
            [
                dict(shared, quote="tally --chars"),
                issue("factual-accuracy", "Wrong version", quote="Current version: 2.0."),
            ],
        ),
    ]
    issues, agreement = merged(reviews, labels=["alice", "bob", "carol"])
    assert [i.flagged_by for i in issues] == [("alice", "bob", "carol"), ("carol",)]
    assert agreement == pytest.approx(1 / 2)
    issues, _ = merged(reviews)
    assert issues[0].flagged_by == ("B", "C", "D")


def test_agreement_is_zero_when_no_issue_is_shared() -> None:
    _, agreement = merged(
        [
            one_issue("factual-accuracy", "Wrong version", quote="Current version: 2.0."),
            one_issue("completeness", "No license", missing="License section"),
        ]
    )
    assert agreement == 0.0


def test_merged_keys_are_stable_and_distinct() -> None:
    reviews = [
        one_issue("factual-accuracy", "Wrong version", quote="Current version: 2.0."),
        one_issue("completeness", "No license", missing="License section (MIT)"),
    ]
    first, _ = merged(reviews)
    again, _ = merged(list(reversed(reviews)))
    assert {i.key for i in first} == {i.key for i in again}
    assert len({i.key for i in first}) == 2


# --- Chinese and Japanese -----------------------------------------------------

ZH_OUTPUT = (
    "tally 用于统计文件中的行数、单词数和字节数。当前版本为\n"
    "二点零。它是所有平台上最快的计数工具，没有之一。"
)
JA_OUTPUT = "tallyはファイルの行数と単語数を数えます。現在のバージョンは\n2.0です。どのプラットフォームでも最速のカウンターです。"


def test_chinese_quotes_are_verified_across_a_line_break_and_merged() -> None:
    issues = _two(
        one_issue("factual-accuracy", "版本错误", quote="当前版本为二点零"),  # spans the break
        one_issue("factual-accuracy", "版本号不对", quote="版本为二点零。它是"),
        output=ZH_OUTPUT,
    )
    assert len(issues) == 1
    assert issues[0].evidence == "verified"
    assert issues[0].flagged_by == ("B", "C")


def test_chinese_quotes_that_do_not_overlap_stay_apart() -> None:
    issues = _two(
        one_issue("no-hallucination", "夸大", quote="最快的计数工具"),
        one_issue("no-hallucination", "功能", quote="统计文件中的行数"),
        output=ZH_OUTPUT,
    )
    assert len(issues) == 2
    assert all(i.evidence == "verified" for i in issues)


def test_chinese_quote_not_in_the_output_is_unverified() -> None:
    result = validate_object(
        one_issue("no-hallucination", "夸大", quote="最慢的计数工具"), output=ZH_OUTPUT
    )
    assert result.review.critical_issues[0].evidence == "unverified"


def test_japanese_quotes_are_verified_and_merged() -> None:
    issues = _two(
        one_issue(
            "factual-accuracy", "版が違う", quote="現在のバージョンは2.0です"
        ),  # spans the break
        one_issue("factual-accuracy", "誤り", quote="バージョンは 2.0"),
        output=JA_OUTPUT,
    )
    assert len(issues) == 1
    assert issues[0].evidence == "verified"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("许可证部分", "缺少许可证部分", True),
        ("许可证部分（MIT）", "缺少许可证部分", True),
        ("许可证部分", "更新日志部分", False),
        ("ライセンスのセクション", "ライセンスのセクションがありません", True),
        ("ライセンスのセクション", "変更履歴のセクション", False),
    ],
)
def test_cjk_missing_items_merge_by_containment(a: str, b: str, same: bool) -> None:
    issues = _two(
        one_issue("completeness", "缺失", missing=a),
        one_issue("completeness", "缺失", missing=b),
        output=ZH_OUTPUT,
    )
    assert len(issues) == (1 if same else 2)


# --- missing items: different ones stay apart ------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("License section (MIT)", "A License section", True),
        ("Licence section", "License section", True),
        ("License section", "Changelog section", False),
        ("support for Python 3.11", "support for Python 3.12", False),
        ("step 1 of the install guide", "step 7 of the install guide", False),
        ("a Changelog section", "License section and Changelog section", False),
    ],
)
def test_missing_items(a: str, b: str, same: bool) -> None:
    from santa_method.core.merge import same_missing

    assert same_missing(a, b) is same
