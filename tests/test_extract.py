"""Finding the verdict object in a reviewer's raw reply (ARCHITECTURE.md, "Extraction")."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _reviews import fail_review, pass_review
from santa_method.core.extract import extract_verdict_object
from santa_method.core.review import validate_reply

PASS = pass_review()
PASS_TEXT = json.dumps(PASS, indent=2)


def _ok(reply: str) -> dict:
    found = extract_verdict_object(reply)
    assert found.error is None, found.error
    assert found.obj is not None
    return found.obj


def _bad(reply: str) -> str:
    found = extract_verdict_object(reply)
    assert found.obj is None
    assert found.error
    return found.error


def test_plain_json() -> None:
    assert _ok(PASS_TEXT) == PASS


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("```json", "```"),
        ("```JSON", "```"),
        ("```Json", "```"),
        ("```", "```"),
        ("~~~", "~~~"),
        ("~~~json", "~~~"),
        ("````json", "````"),
    ],
)
def test_fenced_json_with_any_tag(opening: str, closing: str) -> None:
    reply = f"Here is the review.\n\n{opening}\n{PASS_TEXT}\n{closing}\n"
    assert _ok(reply) == PASS


def test_json_inside_prose_before_and_after() -> None:
    reply = f"I read everything carefully.\n{PASS_TEXT}\nLet me know if you need more."
    assert _ok(reply) == PASS


def test_byte_order_mark() -> None:
    assert _ok("\ufeff" + PASS_TEXT) == PASS
    assert _ok("\ufeff```json\n" + PASS_TEXT + "\n```") == PASS


@pytest.mark.timeout(20)
def test_very_long_reply_with_prose_braces_stays_fast() -> None:
    # 2 MB of prose full of braces before the object. A scan that re-counts
    # lines from the start of the reply at every brace took over half a
    # minute on this input; a linear one takes milliseconds.
    prose = "Consider {placeholder} and { spaced } braces here. " * 40_000
    assert len(prose) > 2_000_000
    assert _ok(prose + PASS_TEXT) == PASS
    assert _ok(PASS_TEXT + "\n" + prose) == PASS


@pytest.mark.timeout(20)
def test_very_long_reply_with_many_broken_objects_stays_fast() -> None:
    broken = '{"note" oops} ' * 20_000  # each looks like an object and is not one
    assert _ok(broken + "\n" + PASS_TEXT) == PASS
    error = _bad(PASS_TEXT + "\n" + broken)
    assert "not valid JSON" in error


@pytest.mark.timeout(20)
def test_very_long_truncated_string_is_reported_not_scanned_forever() -> None:
    error = _bad('{"verdict": "PASS", "checks": [{"detail": "' + "x\\n" * 700_000)
    assert "cut off" in error


def test_deeply_nested_object_is_invalid_not_a_crash() -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    error = _bad(deep)
    assert "nested too deeply" in error
    result = validate_reply(deep)
    assert not result.valid


def test_only_top_level_objects_count() -> None:
    # The review nested inside another object is not the verdict object: the
    # wrapper is, and it is not a review.
    wrapped = json.dumps({"result": PASS})
    assert _ok(wrapped) == {"result": PASS}
    result = validate_reply(wrapped)
    assert not result.valid
    assert any("verdict" in e for e in result.errors)


def test_object_nested_in_a_broken_object_never_counts() -> None:
    reply = '{"outer": ' + json.dumps(PASS) + ", oops}"
    error = _bad(reply)
    assert "not valid JSON" in error


def test_of_several_agreeing_reviews_the_last_complete_one_wins() -> None:
    failing = fail_review({"completeness": "no license"})
    example = {"verdict": "FAIL", "checks": [{"criterion": "completeness", "result": "FAIL"}]}
    reply = f"For example:\n{json.dumps(example)}\nMy review:\n{json.dumps(failing)}\n"
    assert _ok(reply) == failing
    reply = f"Draft:\n{json.dumps(PASS)}\nFinal:\n{json.dumps(PASS)}\n"
    assert _ok(reply) == PASS


@pytest.mark.parametrize(
    "layout",
    [
        "Draft:\n{first}\nOn reflection, final:\n{second}\n",  # in prose
        "```json\n{first}\n{second}\n```\n",  # one fence
        "<!-- {first} -->\n{second}\n",  # an HTML comment
        "[{first}]\n{second}\n",  # the first inside an array
        '{{"review": {first}}}\n{second}\n',  # the first nested in another object
        "{first},\n{second}\n",  # the first followed by a stray comma
    ],
    ids=["prose", "one-fence", "html-comment", "array", "nested", "stray-comma"],
)
@pytest.mark.parametrize("order", ["fail-then-pass", "pass-then-fail"])
def test_reviews_that_disagree_make_the_reply_ambiguous(layout: str, order: str) -> None:
    failing = json.dumps(fail_review({"completeness": "no license"}))
    first, second = (failing, PASS_TEXT) if order == "fail-then-pass" else (PASS_TEXT, failing)
    error = _bad(layout.format(first=first, second=second))
    assert "more than one review" in error and "disagree" in error and "ambiguous" in error


def test_reviews_with_one_verdict_but_different_checks_are_ambiguous() -> None:
    one = fail_review({"completeness": "no license"}, [{"issue": "no license"}])
    other = fail_review({"compliance": "wrong tone"}, [{"issue": "wrong tone"}])
    error = _bad(f"{json.dumps(one)}\n{json.dumps(other)}")
    assert "completeness is FAIL" in error and "ambiguous" in error


def test_truncated_object_after_a_complete_one_is_invalid() -> None:
    reply = PASS_TEXT + '\n\nUpdated review:\n{"verdict": "FAIL", "checks": ['
    error = _bad(reply)
    assert "truncated" in error
    assert f"line {PASS_TEXT.count(chr(10)) + 4}" in error


def test_broken_object_after_a_complete_one_is_invalid() -> None:
    error = _bad(PASS_TEXT + '\n{"verdict": "FAIL",}')
    assert "not complete" in error


@pytest.mark.parametrize("fence", ["```", "```json", "~~~"])
def test_a_new_fence_after_the_object_is_invalid(fence: str) -> None:
    reply = f"```json\n{PASS_TEXT}\n```\n\nAnd also:\n{fence}\nsomething else\n"
    error = _bad(reply)
    assert "fence" in error
    # An unfenced object followed by a fence is invalid too.
    assert "fence" in _bad(f"{PASS_TEXT}\n{fence}\n")


def test_the_closing_fence_alone_is_fine_and_fences_before_do_not_count() -> None:
    reply = f"An example:\n```python\nprint(1)\n```\nThe review:\n```json\n{PASS_TEXT}\n```\n"
    assert _ok(reply) == PASS


def test_prose_braces_are_ignored() -> None:
    reply = (
        "Fill in the {placeholder} and {another one} before.\n"
        + PASS_TEXT
        + "\nThe template uses {name} and { value }."
    )
    assert _ok(reply) == PASS


def test_single_quoted_pseudo_json_is_invalid_with_a_useful_message() -> None:
    error = _bad("{'verdict': 'PASS', 'checks': [], 'critical_issues': []}")
    assert "double quotes" in error
    assert "line 1" in error


def test_error_names_the_line_of_the_broken_object() -> None:
    error = _bad('Here it is:\n\n{"verdict": "PASS",\n "checks": [] oops}')
    assert "line 3" in error
    assert "line 4" in error  # where the decoder stopped


@pytest.mark.parametrize("reply", ["", "   ", "\n\t\n", "\ufeff", "\ufeff  \n"])
def test_empty_reply_is_invalid(reply: str) -> None:
    assert "empty" in _bad(reply)
    result = validate_reply(reply)
    assert not result.valid
    assert result.review is None


def test_reply_without_any_object() -> None:
    assert "no JSON object" in _bad("PASS. Everything looks fine to me.")


def test_a_non_object_json_value_is_not_a_review() -> None:
    assert "no JSON object" in _bad('["PASS"]')


@pytest.mark.parametrize("tail", ["{", "{\n", "{  \n\t", '{"', '{"verdict": "FAIL"'])
def test_a_reply_cut_right_after_a_new_brace_is_truncated(tail: str) -> None:
    assert "truncated" in _bad(PASS_TEXT + "\nUpdated review:\n" + tail)


@pytest.mark.parametrize(
    "first",
    [
        "{'verdict': 'FAIL', 'checks': [{'criterion': 'completeness', 'result': 'FAIL'}]}",
        "verdict: FAIL\nchecks:\n  - criterion: completeness\n    result: FAIL",
        'verdict: "FAIL"\nchecks: []',
        "{'verdict': \"FAIL\", 'checks': []}",
        '{verdict: "FAIL", checks: []}',
        '[{"verdict": "F\\u0041IL", "checks": []}]',
        'verdict = "FAIL"\n[[checks]]\ncriterion = "completeness"',
        '{"draft": {"verd\\u0069ct": "FAIL", "checks": []}}',
        '[{"draft": {"verd\\u0069ct": "F\\u0041IL"}}]',
    ],
    ids=[
        "python-dict",
        "yaml",
        "yaml-double-quoted",
        "python-dict-mixed-quotes",
        "unquoted-key",
        "array-escaped-value",
        "toml",
        "escaped-key-nested",
        "escaped-key-nested-in-array",
    ],
)
def test_a_fail_written_in_another_notation_before_a_pass_is_ambiguous(first: str) -> None:
    error = _bad(f"Draft:\n{first}\nFinal:\n{PASS_TEXT}\n")
    assert "more than one review" in error and "disagree" in error


def test_a_fail_nested_inside_the_final_review_makes_it_ambiguous() -> None:
    final = dict(PASS, draft={"verd\u0069ct": "FAIL"})
    error = _bad(json.dumps(final))
    assert "more than one review" in error and "FAIL besides PASS" in error


def test_a_quote_that_reads_like_a_verdict_inside_the_review_is_evidence() -> None:
    """The output under review may itself say `verdict: FAIL` (a document
    about reviews); a PASS review quoting it holds one review, not two."""
    quoting = pass_review()
    quoting["checks"][0]["evidence"] = (
        "the guide's example says 'verdict: FAIL' then verdict = FAIL"
    )
    assert _ok(json.dumps(quoting)) == quoting


# Drafts a reviewer (or text steering one) can write before a final PASS: each
# holds another verdict, so the reply must be ambiguous, never a PASS.
@pytest.mark.parametrize(
    "first",
    [
        "verdict: |\n  FAIL",
        "verdict: >-\n  FAIL",
        "verdict: !!str FAIL",
        "verdict: &v FAIL",
        "reviewed: &v FAIL\nverdict: *v",
        "**verdict**: FAIL",
        "`verdict`: FAIL",
        '- **Verdict:** "FAIL"',
        'verdict="""FAIL"""',
        '{:verdict => "FAIL"}',
        "verdict => FAIL",
        '{"verdict": "\\U00000046AIL"}',
        '{"verdict": "\\106AIL"}',
        'verdict: "F\u200bAIL"',
        '{"ver\u200bdict": "FAIL"}',
        "verdict: F\u200bAIL",
        "verdict: \uff26\uff21\uff29\uff2c",  # fullwidth letters
        '{"note": "{\\"verdict\\": \\"FAIL\\"}"}',
        '{"note": "{\\\\\\"verdict\\\\\\": \\\\\\"FAIL\\\\\\"}"}',  # escaped twice
        "&quot;verdict&quot;: &quot;FAIL&quot;",
        "verdict: REJECT",
        "{verdict: needs-work}",
        "<!-- verdict: REJECT -->",
        '[{"verdict": ["FAIL"]}]',
        '[{"verdict": null}]',
        '{"draft": {"verdict": 0}}',
        "Verdict: \u274c FAIL",
        "Verdict: \U0001f534 FAIL",
        "Verdict: \u274c",
        "| criterion | verdict |\n|---|---|\n| verdict | FAIL |",
        "Verdict (draft): FAIL",
        "Verdict \u2014 FAIL",
        "Verdict - FAIL",
        "<verdict>FAIL</verdict>",
        "Verdict: ~~PASS~~ FAIL",
        "Verdict: NOT PASS",
        '{"draft_verdict": "FAIL"}',
        "initial-verdict: rejected",
    ],
)
def test_a_draft_in_any_notation_before_a_pass_is_ambiguous(first: str) -> None:
    error = _bad(f"Draft:\n{first}\n\nFinal:\n{PASS_TEXT}\n")
    assert "more than one review" in error and "ambiguous" in error


def _failing_check(criterion: str = "completeness") -> dict:
    return {"criterion": criterion, "result": "FAIL"}


# The same verdict, but a check that fails where the final review passes it.
@pytest.mark.parametrize(
    "first",
    [
        json.dumps({"draft": {"verdict": "PASS", "checks": [_failing_check()]}}),
        json.dumps([{"verdict": "PASS", "checks": [_failing_check()]}]),
        "verdict: PASS\nchecks:\n  - criterion: completeness\n    result: FAIL",
        "```yaml\nverdict: PASS\nchecks:\n  - {criterion: completeness, result: FAIL}\n```",
        "- completeness: **result: FAIL**",
        json.dumps({"note": json.dumps({"checks": [_failing_check()]})}),
    ],
    ids=["nested", "array", "yaml", "yaml-fenced-flow", "markdown", "json-in-a-string"],
)
def test_a_draft_with_the_same_verdict_and_a_failing_check_is_ambiguous(first: str) -> None:
    error = _bad(f"Draft:\n{first}\n\nFinal:\n{PASS_TEXT}\n")
    assert "more than one review" in error and "ambiguous" in error


def test_a_failing_draft_nested_in_a_check_of_the_final_review_is_ambiguous() -> None:
    final = pass_review()
    final["checks"][0]["draft"] = {"result": "FAIL"}
    error = _bad(json.dumps(final))
    assert "FAIL in one, PASS in the other" in error


def test_a_yaml_draft_whose_check_differs_from_a_final_fail_is_ambiguous() -> None:
    # Both say FAIL, but about different criteria: which did the reviewer mean?
    failing = json.dumps(fail_review({"completeness": "no license"}))
    draft = "verdict: FAIL\nchecks:\n  - criterion: completeness\n    result: PASS"
    error = _bad(f"{draft}\n\n{failing}")
    assert "completeness is PASS in one, FAIL in the other" in error


@pytest.mark.parametrize(
    "prose",
    [
        "Verdict: PASS, every criterion holds.",
        "My verdict: the output holds up on every criterion.",
        "As a result: nothing blocks this.\n\nThe result: every check passes as written.",
        "verdict: pass",
        "```yaml\nverdict: PASS\nchecks:\n  - criterion: completeness\n    result: PASS\n```",
        "Verdict: the output is fine\nResult: it reads well",
        "I checked the \\u0041PI reference and the changelog's \\x41 entries.",
    ],
)
def test_prose_and_drafts_that_agree_with_the_final_pass_stay_valid(prose: str) -> None:
    assert _ok(f"{prose}\n\n{PASS_TEXT}\n") == PASS


def test_a_yaml_bomb_outside_the_review_is_walked_once() -> None:
    # Aliases share what they point at; walking each container once keeps a
    # billion-laughs draft linear (it holds no verdict, so the PASS stands).
    lines = ['a0: &a0 ["result-free"]']
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    bomb = "\n".join(lines) + "\nverdict: PASS"
    assert _ok(f"{bomb}\n\n{PASS_TEXT}\n") == PASS


_KEYS = st.sampled_from(
    ["verdict", '"verdict"', "'verdict'", "**verdict**", "`verdict`", ":verdict", "Verdict"]
)
_SEPARATORS = st.sampled_from([": ", ":", " = ", "=", " => ", ": !!str ", ": &v ", ": |\n  "])
_VALUES = st.sampled_from(
    ["FAIL", '"FAIL"', "'FAIL'", '"""FAIL"""', "**FAIL**", '"REJECT"', "fail", '"F\u200bAIL"']
)
_WRAPPERS = st.sampled_from(
    ["{}", "{{{}}}", "<!-- {} -->", "```\n{}\n```", "- {}", "# {}", "{}, then I looked again"]
)


@given(key=_KEYS, separator=_SEPARATORS, value=_VALUES, wrapper=_WRAPPERS, escape=st.booleans())
@settings(max_examples=300, deadline=None)
def test_property_a_draft_in_any_notation_before_a_pass_is_never_a_pass(
    key: str, separator: str, value: str, wrapper: str, escape: bool
) -> None:
    draft = wrapper.format(key + separator + value)
    if escape:  # held in a JSON string, as a note beside the draft would hold it
        draft = json.dumps({"note": draft})
    found = extract_verdict_object(f"Draft:\n{draft}\n\nFinal:\n{PASS_TEXT}\n")
    assert found.obj is None and found.error and "ambiguous" in found.error


@pytest.mark.parametrize(
    "draft",
    [
        "- technical-correctness: FAIL",
        "| criterion | result |\n|---|---|\n| completeness | FAIL |",
        "**Completeness**: \u274c",
        "Completeness \u2014 not a pass",
    ],
)
def test_a_criterion_given_another_result_before_the_final_review_is_ambiguous(
    draft: str,
) -> None:
    error = _bad(f"First pass:\n{draft}\n\nFinal:\n{PASS_TEXT}\n")
    assert "is FAIL in one, PASS in the other" in error


def test_a_failing_review_held_as_json_in_a_detail_of_the_final_review_is_ambiguous() -> None:
    final = pass_review()
    final["checks"][1]["detail"] = json.dumps(fail_review({"completeness": "no license"}))
    assert "ambiguous" in _bad(json.dumps(final))


def test_a_quote_of_an_output_that_is_itself_a_failing_review_is_evidence() -> None:
    # The output under review may be a JSON review (santa's own test data):
    # its quote, verbatim, is evidence, not a second review.
    quoted = json.dumps({"verdict": "FAIL", "checks": []})
    failing = fail_review(
        {"completeness": "no license"},
        [{"criterion": "completeness", "issue": "a FAIL example", "quote": quoted}],
    )
    assert _ok(json.dumps(failing)) == failing


# Prose reviewers write around their one review: it must stay valid (these
# were rejected by a text search that read past the line's end into the fence).
@pytest.mark.parametrize(
    "before",
    [
        "Final verdict:",
        "Verdict:",
        "Here is my verdict:",
        "My verdict:",
        "Here is the result:",
        "**Verdict: PASS**",
        "Verdict: \u2705 PASS",
        "Verdict: \u2705",
        "Verdict: approved.",
        "Result: clean",
        "The code keeps `result = None` as its default, which is fine.",
        "- completeness: PASS\n- compliance: \u2705",
        "| criterion | result |\n|---|---|\n| completeness | PASS |",
        "verdict_reason: every criterion holds",
    ],
)
@pytest.mark.parametrize("after", ["", "Done.", "That is all."])
def test_ordinary_prose_around_one_fenced_review_stays_valid(before: str, after: str) -> None:
    reply = f"{before}\n```json\n{PASS_TEXT}\n```\n{after}\n"
    assert _ok(reply) == PASS


@pytest.mark.parametrize(
    "heading",
    [
        "## Verdict\n\nFAIL",
        "**Verdict**\nFAIL",
        "My final verdict:\n\n\u274c",
        "Verdict\n\nNOT PASS",
    ],
)
def test_a_verdict_given_under_a_heading_before_a_pass_is_ambiguous(heading: str) -> None:
    assert "ambiguous" in _bad(f"{heading}\n\nOn reflection:\n{PASS_TEXT}\n")


@pytest.mark.parametrize(
    "reply",
    [
        "## Verdict\n\nPASS, see below.\n\n{review}",
        "Final verdict:\n\n{review}\n\nFAIL-safe defaults were checked too.",
        "My verdict:\n{review}\nFAIL cases: none.",
    ],
)
def test_a_heading_never_reads_past_the_review_itself(reply: str) -> None:
    assert _ok(reply.format(review=PASS_TEXT)) == PASS


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "prose",
    [
        ("a-" * 10_000 + "\n") * 100,
        ("-" * 200 + "\n") * 10_000,
        ("verdict:" + " " * 5000) * 399,
        ("*" * 1000 + "verdict") * 1986,
        ("verdict" + "-" * 1000 + " ") * 1984,
        ("## verdict\n\n\n") * 150_000,
    ],
    ids=[
        "hyphenated",
        "rules",
        "spaces-after-key",
        "stars-before-key",
        "dashes-after-key",
        "headings",
    ],
)
def test_long_runs_of_prose_stay_linear(prose: str) -> None:
    # Each took from 13 s to over 40 s when the key's patterns were unbounded.
    found = extract_verdict_object(f"{prose}\n```json\n{PASS_TEXT}\n```\n")
    assert found.obj == PASS or (found.error and "ambiguous" in found.error)


_PIECES = [
    "verdict",
    "Verdict",
    "result",
    "completeness",
    ":",
    " ",
    "\n",
    "-",
    "*",
    "#",
    "## ",
    "FAIL",
    "pass",
    "is",
    "not",
    "a",
    "x",
    "_",
    "`",
    '"',
    "\u274c",
    "\\",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.integers(0, 3))
def test_searching_near_the_key_word_finds_what_a_full_scan_finds(
    pieces: list[str], pad: int
) -> None:
    # The prose rule looks for a key only just before the word it must hold
    # (ambiguity._near); the matches must be exactly a full scan's, sparse or dense.
    from santa_method.core import ambiguity as a

    text = ("." * 200 * pad).join(["".join(pieces), "".join(reversed(pieces))])
    criteria, names = a._criteria_pattern(("completeness",))
    for pattern, word, reach in (
        (a._VERDICT, a._WORD, a._KEY_REACH + 30),
        (a._RESULT, a._RESULT_WORD, a._KEY_REACH + 30),
        (a._SENTENCE, a._WORD, 30),
        (a._HEADING, a._WORD, 154),
        (criteria, names, a._KEY_REACH),
    ):
        near = [m.span() for m in a._near(pattern, text, word, reach)]
        assert near == [m.span() for m in pattern.finditer(text)]


@pytest.mark.parametrize(
    "line",
    [
        "Verdict: PASS.",
        "Verdict: PASS!",
        "Verdict: PASSED.",
        "Verdict: Approved.",
        "verdict: pass.",
    ],
)
def test_a_verdict_line_ending_in_punctuation_agrees_with_a_pass(line: str) -> None:
    assert _ok(f"{line}\n\n```json\n{PASS_TEXT}\n```\n\n{line}\n") == PASS


@pytest.mark.parametrize(
    "draft",
    [
        "- completeness: FAILED \u2014 missing upgrade section",
        "Verdict: Rejected \u2014 see below",
        "- internal consistency: FAIL",
        "- internal_consistency: FAIL",
        "Results: FAIL",
        "Verdict \u21d2 FAIL",
        "Draft verdict \u2192 FAIL",
    ],
)
def test_more_drafts_before_a_pass_are_ambiguous(draft: str) -> None:
    assert "ambiguous" in _bad(f"{draft}\n\n{PASS_TEXT}\n")


@pytest.mark.parametrize("depth", [400, 900, 990])
def test_an_object_just_within_the_parsers_depth_is_invalid_not_a_crash(depth: int) -> None:
    # json.loads builds it, but cleaning it recursed past the limit: a crash.
    nested = '{"a": ' * depth + "1" + "}" * depth
    found = extract_verdict_object(nested)
    assert found.obj is not None or found.error
    found = extract_verdict_object('{"verdict": "PASS", "x": ' + nested + "}")
    assert found.obj is not None or found.error


@pytest.mark.parametrize(
    ("draft", "where"),
    [
        ("My verdict is FAIL. Actually on reflection:", "before"),
        ("Verdict is FAIL", "before"),
        ("The verdict would be a FAIL, but", "before"),
        ("On second look the verdict is actually FAIL.", "after"),
        ("The verdict remains not a pass.", "after"),
    ],
)
def test_a_verdict_said_in_a_sentence_that_disagrees_is_ambiguous(draft: str, where: str) -> None:
    reply = f"{draft}\n{PASS_TEXT}\n" if where == "before" else f"{PASS_TEXT}\n{draft}\n"
    assert "ambiguous" in _bad(reply)


@pytest.mark.parametrize(
    "prose", ["My verdict is PASS.", "The verdict is clear: it holds.", "The verdict is \u2705"]
)
def test_a_verdict_said_in_a_sentence_that_agrees_stays_valid(prose: str) -> None:
    assert _ok(f"{prose}\n{PASS_TEXT}\n") == PASS
