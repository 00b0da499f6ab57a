"""The hook's JSON without `json`: the same answers as `json.loads` and `json.dumps`."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from santa_method.claude_code import hook_json, protocol

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)) as raised:
            hook_json.loads(text)
        assert str(raised.value) == str(exc)
        return
    # Compared as JSON text: NaN is not equal to itself.
    assert json.dumps(hook_json.loads(text)) == json.dumps(expected)


@given(VALUES)
def test_values_read_back_as_json_reads_them(value: object) -> None:
    _same(json.dumps(value))
    _same(json.dumps(value, indent=2) + "\n")
    _same(" \t" + json.dumps(value, ensure_ascii=False) + "\r\n")


@given(st.text(alphabet='{}[]":, \t\n\r\x0b\ufeff0123456789.eE+-truefalsnNIy\\u'))
def test_any_text_reads_or_fails_as_json_does(text: str) -> None:
    _same(text)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "{} {}", '{"a": 1} x', "\ufeff{}", '{"a": 1,}', "[1, 2", '"a\x01"', "\x0b{}"],
)
def test_bad_input_fails_with_json_s_own_error(text: str) -> None:
    _same(text)


def test_constants_read_as_json_reads_them() -> None:
    value = hook_json.loads("[NaN, Infinity, -Infinity, 1e400, 12345678901234567890]")
    assert math.isnan(value[0]) and value[1:4] == [math.inf, -math.inf, math.inf]
    assert value[4] == 12345678901234567890


@given(VALUES)
def test_answers_are_written_as_json_writes_them(value: object) -> None:
    assert hook_json.dumps(value) == json.dumps(value)


def test_hook_answers_are_written_as_json_writes_them() -> None:
    for answer in (
        protocol.deny('a "quoted" reason\nwith é, \u2028 and \x00'),
        protocol.block("again"),
        {"a": True, "b": False, "c": None, "d": {"e": "f"}, "g": [1, 2.5], 3: "x"},
        {"nan": math.nan, "inf": math.inf},
    ):
        assert protocol.answer_text(answer) == json.dumps(answer)
    circular: dict[str, object] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match="Circular"):
        hook_json.dumps(circular)
