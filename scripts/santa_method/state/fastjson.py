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
def fast_loads() -> Callable[[bytes], Any] | None:
    """orjson's parser, or None when it is not installed."""
    try:
        import orjson
    except ImportError:
        return None
    loads: Callable[[bytes], Any] = orjson.loads
    return loads


@functools.cache
def _fast_dumps() -> Callable[[Any], bytes] | None:
    try:
        import orjson
    except ImportError:
        return None
    dumps: Callable[[Any], bytes] = orjson.dumps
    return dumps


def dumps(data: Any) -> str:
    """Compact JSON text, non-ASCII kept: `json.dumps(data, ensure_ascii=False,
    separators=(",", ":"), allow_nan=False)`. orjson writes it when it can
    (it refuses lone surrogates, integers past 64 bits and keys that are not
    strings: json writes those); it writes NaN and infinity as null where
    json refuses them, so callers keep numbers finite (the viewer does)."""
    fast = _fast_dumps()
    if fast is not None:
        try:
            return fast(data).decode("utf-8")
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
