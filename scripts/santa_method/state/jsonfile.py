"""Writing a JSON state file so that a reader never sees half of it.

Why one function: the run state, the batch state and the Message Batch
state are all read by another process (or a resumed one) at any moment; a
temporary file in the same folder, flushed to disk and renamed over the old
one, is either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(
    path: str | os.PathLike[str], data: Any, *, indent: int | None = None, durable: bool = False
) -> None:
    """Replace `path` with `data` as JSON. ASCII escapes: a reply may hold
    lone surrogates, which UTF-8 cannot encode but JSON's \\u escapes can.
    `durable` also flushes it to disk first (a record of money spent)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            separators = None if indent is not None else (",", ":")
            json.dump(data, handle, indent=indent, ensure_ascii=True, separators=separators)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
