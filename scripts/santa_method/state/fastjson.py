"""orjson where the `view` extra installed it, json otherwise.

Why: the big reads and writes (a log of 10,000 runs is 30 MB, its page
8 MB) take seconds with json and a fraction with orjson. Both functions
give what json gives, so no result depends on whether orjson is there:
where orjson would differ, json decides (`state.log.read` sends it the
lines orjson refuses or would read otherwise; `dumps` falls back on what
orjson cannot write). orjson is imported on first use, not by every
command that imports this module.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any


@functools.cache
def _orjson() -> Any:
    """The orjson module, or None when it is not installed."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson


def fast_loads() -> Callable[[bytes], Any] | None:
    """orjson's parser, or None when it is not installed."""
    module = _orjson()
    return None if module is None else module.loads


def dumps(data: Any) -> str:
    """Compact JSON text, non-ASCII kept: `json.dumps(data, ensure_ascii=False,
    separators=(",", ":"), allow_nan=False)`. orjson writes it when it can
    (it refuses lone surrogates, integers past 64 bits and keys that are not
    strings: json writes those); it writes NaN and infinity as null where
    json refuses them, so callers keep numbers finite (the viewer does)."""
    module = _orjson()
    if module is not None:
        try:
            return module.dumps(data).decode("utf-8")
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
