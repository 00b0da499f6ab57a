"""The contracts of core/types.py behave as the frozen dataclasses they were.

They are plain classes so that `santa validate` need not import dataclasses
(tests/test_imports.py holds it to that); everything callers relied on is
kept: construction by position or keyword with the same defaults, equality
and hashing by field within one class, a repr naming the fields, no
assignment after construction, a changed copy by `replace`, copy and pickle.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from santa_method.core import types
from santa_method.core.types import (
    Check,
    Criterion,
    Flag,
    FrozenInstanceError,
    GateResult,
    Issue,
    MergedIssue,
    Review,
    ReviewOutcome,
    Rubric,
    ValidationResult,
    replace,
)

ISSUE = Issue("accuracy", "wrong flag", quote="--x", location="line 3", evidence="verified")
REVIEW = Review("FAIL", (Check("accuracy", "FAIL", "bad"),), (ISSUE,), ("s",), "c")
MERGED = MergedIssue(
    "accuracy", "wrong flag", "verified", ("B", "C"), quote="--x", criteria_by=(("B", ("a",)),)
)
ALL = (
    Criterion("accuracy", "Accuracy", "every claim holds", ("a wrong flag",)),
    Rubric("base", (Criterion("a", "A", "p", ()),)),
    Check("accuracy", "PASS"),
    ISSUE,
    REVIEW,
    ValidationResult(True, (), ("w",), REVIEW),
    Flag("B", ISSUE, "check"),
    MERGED,
    ReviewOutcome("B", True, "FAIL", review=REVIEW),
    GateResult("NAUGHTY", "fix", (), (MERGED,), agreement=0.5, extra={"report": "r"}),
)


def test_defaults_and_keywords_are_the_dataclass_ones() -> None:
    assert Check("a", "PASS") == Check(criterion="a", result="PASS", detail="")
    issue = Issue("a", "b")
    assert (issue.quote, issue.missing, issue.location, issue.evidence) == (None, None, None, "none")
    review = Review("PASS", (), ())
    assert (review.suggestions, review.canary) == ((), None)
    assert ValidationResult(False).errors == () and ValidationResult(False).review is None
    assert Flag("B", issue).source == "issue"
    merged = MergedIssue("a", "b", "none", ("B",))
    assert (merged.key, merged.criteria, merged.quotes, merged.criteria_by) == ("", (), (), ())
    assert merged.source == "issue" and merged.all_criteria == ("a",)
    with pytest.raises(TypeError):
        Check("a", "PASS", "", "one too many")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Issue("a", "b", colour="red")  # type: ignore[call-arg]


def test_a_gate_result_gets_a_fresh_extra_each_time() -> None:
    first, second = GateResult("NICE", "ship", (), ()), GateResult("NICE", "ship", (), ())
    first.extra["report"] = "r"
    assert second.extra == {}
    assert first.to_json()["report"] == "r"


@pytest.mark.parametrize("value", ALL, ids=lambda v: type(v).__name__)
def test_fields_cannot_be_assigned_or_deleted(value: types.Contract) -> None:
    name = value._fields[0]
    with pytest.raises(FrozenInstanceError):
        setattr(value, name, "x")
    with pytest.raises(AttributeError):  # FrozenInstanceError is one, as in dataclasses
        delattr(value, name)
    with pytest.raises(FrozenInstanceError):
        value.other = 1


@pytest.mark.parametrize("value", ALL, ids=lambda v: type(v).__name__)
def test_equality_repr_copy_and_pickle(value: types.Contract) -> None:
    same = type(value)(**{name: getattr(value, name) for name in value._fields})
    assert same == value
    assert not same.__ne__(value)
    assert vars(value) == {name: getattr(value, name) for name in value._fields}
    assert repr(value) == (
        f"{type(value).__name__}("
        + ", ".join(f"{name}={getattr(value, name)!r}" for name in value._fields)
        + ")"
    )
    assert copy.copy(value) == value and copy.deepcopy(value) == value
    assert pickle.loads(pickle.dumps(value)) == value
    if not isinstance(value, GateResult):  # it holds a dict, as the dataclass did
        assert hash(same) == hash(value)
        assert {value: 1}[same] == 1


def test_equal_only_within_one_class() -> None:
    assert Check("a", "PASS") != Check("a", "FAIL")
    assert Check("a", "PASS") != ("a", "PASS", "")
    assert Issue("a", "b") != Flag("B", Issue("a", "b"))
    with pytest.raises(TypeError):
        hash(GateResult("NICE", "ship", (), ()))


def test_replace_makes_a_changed_copy() -> None:
    result = ValidationResult(True, (), (), REVIEW)
    changed = replace(result, valid=False, errors=("unread",))
    assert (changed.valid, changed.errors, changed.review) == (False, ("unread",), REVIEW)
    assert result.valid and result.errors == ()
    assert result.__replace__(valid=False) == replace(result, valid=False)
    with pytest.raises(TypeError):
        replace(result, colour="red")
