"""Property-based proof that the gate is fail-closed.

Start from pairs of valid PASS replies, break them in arbitrary ways, and
check one invariant, stated here independently of the code under test: the
gate says NICE only if both replies are still clean PASS reviews, meaning
the last top-level JSON object of each reply is a PASS whose checks give
every rubric criterion exactly once, all PASS, with no critical issue and
the round's canary echoed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from _reviews import BASE_IDS, OUTPUT, pass_review, reply, rubric
from santa_method.core.gate import gate_replies
from santa_method.core.review import validate_reply

CANARY = "santa-7f3a-91bc"
RUBRIC = rubric()
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# --- the independent invariant --------------------------------------------------


def _last_object(text: str) -> Any:
    """The last JSON object a naive scan finds (json's own decoder at every
    '{' outside an object already found). More lenient than the helper's
    rule, which is fine: the invariant only needs NICE => clean."""
    decoder = json.JSONDecoder()
    last, pos = None, 0
    while (start := text.find("{", pos)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            pos = start + 1
            continue
        last, pos = value, end
    return last


def clean_pass(text: str, ids: tuple[str, ...] = BASE_IDS, canary: str = CANARY) -> bool:
    obj = _last_object(text.lstrip("\ufeff"))
    if not isinstance(obj, dict) or obj.get("verdict") != "PASS":
        return False
    checks = obj.get("checks")
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        return False
    named = [c.get("criterion") for c in checks]
    if not all(isinstance(n, str) for n in named):
        return False
    if sorted(n.strip() for n in named) != sorted(ids):
        return False
    if any(c.get("result") != "PASS" for c in checks):
        return False
    if obj.get("critical_issues") != []:
        return False
    token = obj.get("canary")
    return isinstance(token, str) and token.strip() == canary


# --- valid PASS replies ---------------------------------------------------------

_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def pass_objects(draw: st.DrawFn) -> dict[str, Any]:
    obj = pass_review(canary=CANARY, suggestions=draw(st.lists(_words, max_size=3)))
    obj["checks"] = draw(st.permutations(obj["checks"]))
    for c in obj["checks"]:
        c["detail"] = draw(st.one_of(_words, st.none()))
    if draw(st.booleans()):
        obj["confidence"] = draw(st.integers(0, 10))  # an unknown field: a warning only
    return obj


# --- mutations ------------------------------------------------------------------

_junk_verdicts = st.one_of(
    st.sampled_from(["pass", "Pass", "PASS ", "NICE", "FAIL", "", "P\u0410SS"]),
    st.integers(),
    st.none(),
    st.lists(st.just("PASS"), max_size=2),
    _words,
).filter(lambda v: v != "PASS")

_injected_issues = st.one_of(
    _words.filter(lambda s: s.strip() != ""),
    st.fixed_dictionaries(
        {"issue": _words.filter(lambda s: s.strip() != "")},
        optional={"criterion": st.sampled_from(BASE_IDS), "quote": st.sampled_from(["tally", "x"])},
    ),
)

# Mutations that certainly break a clean PASS, whatever else happens.
BREAKING = {"flip", "remove", "duplicate", "junk_verdict", "inject", "drop_canary", "alter_canary"}

_object_mutations = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 99)),
    st.tuples(st.just("remove"), st.integers(0, 99)),
    st.tuples(st.just("duplicate"), st.integers(0, 99)),
    st.tuples(st.just("rename"), st.integers(0, 99), st.sampled_from([*BASE_IDS, "vibes", ""])),
    st.tuples(st.just("junk_result"), st.integers(0, 99), _junk_verdicts),
    st.tuples(st.just("junk_verdict"), _junk_verdicts),
    st.tuples(st.just("inject"), _injected_issues),
    st.tuples(st.just("drop_canary")),
    st.tuples(st.just("alter_canary"), _words.filter(lambda s: s.strip() != CANARY)),
    st.tuples(st.just("drop_field"), st.sampled_from(["verdict", "checks", "critical_issues"])),
)

_text_mutations = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("append_partial"), st.floats(0, 0.99)),
    st.tuples(st.just("append_fence"), st.sampled_from(["```", "```json", "~~~"])),
    st.tuples(st.just("append"), st.text(max_size=40)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.text(max_size=40)),
    st.tuples(st.just("replace"), st.text(max_size=200)),
)


def _apply_to_object(obj: dict[str, Any], mutation: tuple) -> None:
    kind, *args = mutation
    checks = obj["checks"] if isinstance(obj.get("checks"), list) else []
    pick = (args[0] % len(checks)) if checks and args and isinstance(args[0], int) else None
    if kind == "flip" and pick is not None:
        checks[pick]["result"] = "FAIL"
    elif kind == "remove" and pick is not None:
        del checks[pick]
    elif kind == "duplicate" and pick is not None:
        checks.append(copy.deepcopy(checks[pick]))
    elif kind == "rename" and pick is not None:
        checks[pick]["criterion"] = args[1]
    elif kind == "junk_result" and pick is not None:
        checks[pick]["result"] = args[1]
    elif kind == "junk_verdict":
        obj["verdict"] = args[0]
    elif kind == "inject" and isinstance(obj.get("critical_issues"), list):
        obj["critical_issues"].append(args[0])
    elif kind == "drop_canary":
        obj.pop("canary", None)
    elif kind == "alter_canary":
        obj["canary"] = args[0]
    elif kind == "drop_field":
        obj.pop(args[0], None)


def _apply_to_text(text: str, mutation: tuple, donor: str) -> str:
    kind, *args = mutation
    if kind == "truncate":
        return text[: int(len(text) * args[0])]
    if kind == "append_partial":
        body = donor[donor.index("{") :]
        return text + "\n" + body[: max(1, int(len(body) * args[0]))]
    if kind == "append_fence":
        return text + f"\n{args[0]}\nmore\n"
    if kind == "append":
        return text + args[0]
    if kind == "insert":
        at = int(len(text) * args[0])
        return text[:at] + args[1] + text[at:]
    if kind == "replace":
        return args[0]
    raise AssertionError(kind)


@st.composite
def mutated_reply(draw: st.DrawFn) -> tuple[str, set[str], bool]:
    """A reply, the kinds of mutation applied, and whether any was applied."""
    obj = draw(pass_objects())
    donor = reply(draw(pass_objects()))
    object_mutations = draw(st.lists(_object_mutations, max_size=3))
    text_mutations = draw(st.lists(_text_mutations, max_size=2))
    for mutation in object_mutations:
        _apply_to_object(obj, mutation)
    text = reply(obj, draw(st.sampled_from(["plain", "fenced", "prose"])))
    for mutation in text_mutations:
        text = _apply_to_text(text, mutation, donor)
    kinds = {m[0] for m in object_mutations} | {m[0] for m in text_mutations}
    return text, kinds, bool(object_mutations or text_mutations)


# --- the properties -------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(st.lists(pass_objects(), min_size=2, max_size=3), st.data())
def test_unmutated_pass_replies_are_nice(objs: list[dict[str, Any]], data: st.DataObject) -> None:
    # Not vacuous: the starting point of every mutation does pass.
    replies = [reply(o, data.draw(st.sampled_from(["plain", "fenced", "prose"]))) for o in objs]
    assert all(clean_pass(r) for r in replies)
    result = gate_replies(replies, rubric=RUBRIC, output=OUTPUT, canary=CANARY)
    assert result.verdict == "NICE", [r.errors for r in result.reviews]


@pytest.mark.slow
@settings(SETTINGS, max_examples=500)
@given(mutated_reply(), mutated_reply())
def test_the_gate_is_fail_closed_under_mutation(
    b: tuple[str, set[str], bool], c: tuple[str, set[str], bool]
) -> None:
    (text_b, kinds_b, _), (text_c, kinds_c, _) = b, c
    result = gate_replies([text_b, text_c], rubric=RUBRIC, output=OUTPUT, canary=CANARY)
    event(f"{result.verdict} {result.next}")
    if result.verdict == "NICE":
        assert clean_pass(text_b), text_b
        assert clean_pass(text_c), text_c
        assert result.next == "ship"
    else:
        assert result.next in {"rereview", "fix"}
    # Object mutations that break the PASS are caught unless a later text
    # mutation replaced or cut the object (then the reply is broken anyway).
    for text, kinds, label in ((text_b, kinds_b, "B"), (text_c, kinds_c, "C")):
        outcome = next(r for r in result.reviews if r.label == label)
        breaking = kinds & BREAKING
        if {"remove", "duplicate"} <= kinds:
            # Duplicating a check and then removing the original (possibly
            # after flipping it) can give back a permutation of a clean PASS;
            # the independent invariant above still judges these cases.
            breaking = set()
        if breaking:
            assert not (outcome.valid and outcome.verdict == "PASS"), (kinds, text)
        # (An insertion may land in what was appended: "0```" opens no fence.)
        if kinds & {"append_partial", "append_fence"} and not kinds & {
            "replace",
            "truncate",
            "insert",
        }:
            assert not outcome.valid, (kinds, text)


@SETTINGS
@given(pass_objects(), st.sampled_from(["plain", "fenced", "prose"]), st.data())
def test_truncation_inside_the_object_never_passes(
    obj: dict[str, Any], style: str, data: st.DataObject
) -> None:
    text = reply(obj, style)
    end = text.rindex("}")
    cut = data.draw(st.integers(0, end))
    result = validate_reply(text[:cut], rubric=RUBRIC, canary=CANARY)
    assert not result.valid
    assert result.errors


@SETTINGS
@given(pass_objects(), pass_objects(), st.floats(0, 0.99), st.sampled_from(["plain", "prose"]))
def test_a_trailing_partial_object_never_passes(
    obj: dict[str, Any], other: dict[str, Any], frac: float, style: str
) -> None:
    partial = json.dumps(other)
    partial = partial[: max(1, int(len(partial) * frac))]
    result = validate_reply(reply(obj, style) + "\n" + partial, rubric=RUBRIC, canary=CANARY)
    assert not result.valid


_jsonish = st.text(
    st.one_of(st.sampled_from(list('{}[]":,\n `~PASFILverdictchecks')), st.characters()),
    max_size=300,
)


@SETTINGS
@given(st.one_of(st.text(max_size=300), _jsonish))
def test_arbitrary_text_never_raises_and_never_passes(text: str) -> None:
    assume(not clean_pass(text))
    result = validate_reply(text, rubric=RUBRIC, canary=CANARY, output=OUTPUT)
    assert not (result.valid and result.verdict == "PASS")
    assert isinstance(result.errors, tuple)
    validate_reply(text)  # no rubric, no canary, no output: still no exception
    good = reply(pass_review(canary=CANARY))
    for pair in ([good, text], [text, good], [text, text]):
        gated = gate_replies(pair, rubric=RUBRIC, canary=CANARY, output=OUTPUT)
        assert gated.verdict == "NAUGHTY"
        assert gated.next in {"rereview", "fix"}
