"""Writing a JSON state file so that a reader never sees half of it.

Why one function: the run state, the batch state and the Message Batch
state are all read by another process (or a resumed one) at any moment;
`state/atomic.py` replaces the file whole, so it is the old one or the new
one, never a mix.
"""

from __future__ import annotations

import json
import os
from typing import Any

from santa_method.state.atomic import replace_text


def write_atomic(path: str | os.PathLike[str], data: Any, *, indent: int | None = None) -> None:
    """Replace `path` with `data` as JSON. ASCII escapes: a reply may hold
    lone surrogates, which UTF-8 cannot encode but JSON's \\u escapes can."""
    separators = None if indent is not None else (",", ":")
    replace_text(path, json.dumps(data, indent=indent, ensure_ascii=True, separators=separators))
