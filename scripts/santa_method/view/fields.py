"""Fields of log records and states read tolerantly: a damaged field is absent.

Why a module of its own: the run pages (`view/model.py`) and the batch
pages (`view/batches.py`) read records written by many versions of santa
(and sometimes damaged); both read every field through these.
"""

from __future__ import annotations

from typing import Any


def text(value: Any) -> str | None:
    return value if isinstance(value, str) and value != "" else None


def texts(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and abs(value) != float("inf") else None


def plain(value: Any) -> bool:
    """JSON-safe scalars, and lists or maps of them (a config value, a model map)."""
    if value is None or isinstance(value, str | bool):
        return True
    if isinstance(value, int | float):
        return number(value) is not None
    if isinstance(value, list):
        return all(plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    return False
