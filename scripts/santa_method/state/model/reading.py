"""Reading a state file's JSON into typed records, key by key.

Each reader takes the object, the key and where the object is (`state.rounds[0]`),
and returns the value or raises `StateError` with a sentence naming the key:
a state file this version cannot read is refused in words, never with a
KeyError. A `default` makes the key optional (files of earlier releases).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from santa_method.core.errors import InputError

T = TypeVar("T")
_MISSING: Any = object()


class StateError(InputError):
    """A state file this version cannot read: the message names the key."""


def get(
    d: Mapping[str, Any],
    key: str,
    where: str,
    check: Callable[[Any], bool],
    what: str,
    default: Any = _MISSING,
) -> Any:
    if key not in d:
        if default is _MISSING:
            raise StateError(f"{where}.{key} is missing")
        return default
    value = d[key]
    if not check(value):
        raise StateError(f"{where}.{key} is not {what}")
    return value


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def str_(d: Mapping[str, Any], k: str, w: str, default: Any = _MISSING) -> str:
    return cast(str, get(d, k, w, lambda v: isinstance(v, str), "a string", default))


def opt_str(d: Mapping[str, Any], k: str, w: str) -> str | None:
    check: Callable[[Any], bool] = lambda v: v is None or isinstance(v, str)  # noqa: E731
    return cast("str | None", get(d, k, w, check, "a string or null", None))


def int_(d: Mapping[str, Any], k: str, w: str, default: Any = _MISSING) -> int:
    return cast(int, get(d, k, w, is_int, "a whole number", default))


def opt_int(d: Mapping[str, Any], k: str, w: str) -> int | None:
    check: Callable[[Any], bool] = lambda v: v is None or is_int(v)  # noqa: E731
    return cast("int | None", get(d, k, w, check, "a whole number or null", None))


def num(d: Mapping[str, Any], k: str, w: str) -> float:
    return cast(float, get(d, k, w, is_num, "a number"))


def opt_num(d: Mapping[str, Any], k: str, w: str) -> float | None:
    check: Callable[[Any], bool] = lambda v: v is None or is_num(v)  # noqa: E731
    return cast("float | None", get(d, k, w, check, "a number or null", None))


def bool_(d: Mapping[str, Any], k: str, w: str, default: Any = _MISSING) -> bool:
    return cast(bool, get(d, k, w, lambda v: isinstance(v, bool), "true or false", default))


def strs(d: Mapping[str, Any], k: str, w: str, default: Any = _MISSING) -> list[str]:
    return list(get(d, k, w, _is_strs, "a list of strings", default))


def opt_strs(d: Mapping[str, Any], k: str, w: str) -> list[str] | None:
    check: Callable[[Any], bool] = lambda v: v is None or _is_strs(v)  # noqa: E731
    found = get(d, k, w, check, "a list of strings or null", None)
    return None if found is None else list(found)


def obj(d: Mapping[str, Any], k: str, w: str, default: Any = _MISSING) -> dict[str, Any]:
    return cast("dict[str, Any]", get(d, k, w, lambda v: isinstance(v, dict), "an object", default))


def opt_obj(d: Mapping[str, Any], k: str, w: str) -> dict[str, Any] | None:
    check: Callable[[Any], bool] = lambda v: v is None or isinstance(v, dict)  # noqa: E731
    return cast("dict[str, Any] | None", get(d, k, w, check, "an object or null", None))


def list_(
    d: Mapping[str, Any], k: str, w: str, default: Any = _MISSING, of: type | None = None
) -> list[Any]:
    """A list; with `of`, every entry must be one (named by its index if not)."""
    found = get(d, k, w, lambda v: isinstance(v, list), "a list", default)
    if of is not None:
        for n, entry in enumerate(found):
            if not isinstance(entry, of):
                kind = "an object" if of is dict else f"a {of.__name__}"
                raise StateError(f"{w}.{k}[{n}] is not {kind}")
    return list(found)


def objects(
    found: Mapping[str, Any], w: str, read: Callable[[Mapping[str, Any], str], T]
) -> dict[str, T]:
    """An object of objects, each read by `read` with where it is."""
    out: dict[str, T] = {}
    for key, value in found.items():
        if not isinstance(value, dict):
            raise StateError(f"{w}[{key!r}] is not an object")
        out[key] = read(value, f"{w}[{key!r}]")
    return out


def top(d: Any, newest: int) -> tuple[dict[str, Any], int]:
    """A state file's top object and its version, refused when a newer
    santa wrote it (its keys may mean what this version cannot know)."""
    if not isinstance(d, dict):
        raise StateError("the file does not hold a JSON object")
    version = int_(d, "version", "state", newest)
    if version > newest:
        raise StateError(
            f"it was written by a newer santa (state version {version}; this one reads "
            f"up to {newest}): upgrade santa-method"
        )
    return d, version
