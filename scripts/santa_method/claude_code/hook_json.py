"""JSON in and out of a hook, without importing `json` on the guard's path.

`import json` compiles regular expressions, and `re` brings `enum`,
`functools` and `collections` with it: together they cost about as much as
a bare interpreter start, on every Bash, Write and Edit call of a session.
The C scanner and string encoder that `json` itself uses (`_json`) need none
of that, so the hook input is read and the answer written with them.

Every answer is the one `json.loads` / `json.dumps` gives: the fast path
returns only when it is sure, and anything else (input `json.loads` would
refuse, a value the encoder below does not cover, an interpreter without
`_json`) goes to `json` itself, with its own errors (tests hold the two to
the same answers).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BLANK = " \t\n\r"  # JSON's whitespace, and nothing else (str.strip() strips more)


class _Options:
    """The decoding options `json.loads` uses by default, as the C scanner reads them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


def _scanner() -> Any:
    try:
        from _json import make_scanner

        options: Any = _Options  # duck-typed: the scanner reads these attributes
        return make_scanner(options)
    except Exception:  # no C accelerator here: json does it all
        return None


def _encoder() -> Any:
    try:
        from _json import encode_basestring_ascii

        return encode_basestring_ascii
    except Exception:
        return None


def loads(text: str) -> Any:
    """`json.loads(text)`."""
    scan = _scanner()
    if scan is not None and not text.startswith("\ufeff"):
        start = len(text) - len(text.lstrip(_BLANK))
        try:
            value, stop = scan(text, start)
        except Exception:
            pass  # json raises its own error below
        else:
            # A JSON value never ends in whitespace: the rest is blank exactly
            # when json.loads would find no extra data.
            if stop == len(text.rstrip(_BLANK)):
                return value
    import json

    return json.loads(text)


def dumps(value: Any) -> str:
    """`json.dumps(value)` (default options)."""
    quote = _encoder()
    try:
        text = _dumps(value, quote) if quote is not None else None
    except RecursionError:  # nested too deep, or circular: json says which
        text = None
    if text is None:
        import json

        return json.dumps(value)
    return text


def _dumps(value: Any, quote: Any) -> str | None:
    """The objects, strings, booleans and nulls hook answers are made of; None for anything else."""
    if isinstance(value, str):
        return str(quote(value))
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is dict:
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                return None
            text = _dumps(item, quote)
            if text is None:
                return None
            items.append(f"{quote(key)}: {text}")
        return "{" + ", ".join(items) + "}"
    return None
