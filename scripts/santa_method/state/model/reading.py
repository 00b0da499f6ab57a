"""The one conversion between the state's records and their JSON, both ways.

Why one generic conversion: the records are dataclasses, so their fields
and type hints already say what a file holds; reading and writing them
from those (`dataclasses.fields`, `typing.get_type_hints`) means a field
added to a record is read and written with nothing more than its
declaration, and every refusal is phrased once. What the declaration says:

- a field without a default is a key every file holds: missing, it is refused;
- a field with a default is a key older files may lack (they get the
  default), written only when it differs from it, so a file loaded and saved
  again is the same file, byte for byte; `kept(default)` writes it always;
  `along(anchor)` exactly when `anchor` is written (keys that come together);
  `inline()` a record whose keys sit in its parent's object;
- keys are written in the order the fields are declared (`_layouts`: a
  record with a second order, when a field is written);
- `Annotated[T, Shape]`: `T`, a contract of `core/`, owns its JSON
  (`T.from_json`, `to_json`), checked against the `TypedDict` `Shape`
  first; `Annotated[T, Refusal(...)]`: the sentence for a wrong value.

A state file this version cannot read is refused with a sentence naming the
key (`state.rounds[0].slots['A'].tokens is not a whole number or null`),
never a KeyError or a TypeError.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

from santa_method.core.errors import InputError

_META = "santa_json"


class StateError(InputError):
    """A state file this version cannot read: the message names the key."""


@dataclass(frozen=True)
class Refusal:
    """A field's own sentence (after its key path) for any value it refuses,
    and a check of the value once read."""

    phrase: str
    check: Callable[[Any], bool] = lambda _value: True


def kept(default: Any, *, key: str | None = None) -> Any:
    """A key today's files always hold, even at its default (`list`, `dict`:
    a new one each). `key` names it in the file, when not the field's name."""
    made = {"default_factory": default} if callable(default) else {"default": default}
    return dataclasses.field(**made, metadata={_META: {"kept": True, "key": key}})


def along(anchor: str, default: Any = None) -> Any:
    """A key written exactly when the field `anchor` is."""
    made = {"default_factory": default} if callable(default) else {"default": default}
    return dataclasses.field(**made, metadata={_META: {"along": anchor}})


def inline() -> Any:
    """A record (or None) whose keys are its parent's: it is read when one is there."""
    return dataclasses.field(default=None, metadata={_META: {"inline": True}})


class Record:
    """A dataclass of the state, read and written by this module."""

    def to_json(self) -> dict[str, Any]:
        return _dump(self)

    @classmethod
    def from_json(cls, data: Any, where: str | None = None) -> Self:
        """The record at `where` in a file; without `where`, a whole file
        (its top object), refused when a newer santa wrote it."""
        if where is None:
            _check_file(cls, data)
        found: Self = _read(cls, data, where or "state")
        return found


def _check_file(cls: Any, data: Any) -> None:
    if not isinstance(data, dict):
        raise StateError("the file does not hold a JSON object")
    newest = next((f.default for f, *_ in _fields(cls) if f.name == "version"), None)
    if isinstance(newest, int):
        version = _read(int, data.get("version", newest), "state.version")
        if version > newest:
            raise StateError(
                f"it was written by a newer santa (state version {version}; this one "
                f"reads up to {newest}): upgrade santa-method"
            )


# ---------------------------------------------------------------- reading

_SCALARS: dict[Any, tuple[Callable[[Any], bool], str]] = {
    str: (lambda v: isinstance(v, str), "a string"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    float: (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    bool: (lambda v: isinstance(v, bool), "true or false"),
}


def _refused(where: str, what: str, nullable: bool) -> StateError:
    return StateError(f"{where} is not {what}{' or null' if nullable else ''}")


def _read(tp: Any, value: Any, where: str, nullable: bool = False) -> Any:
    """`value` (JSON) as the type `tp`, or a StateError naming `where`."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return value
    if tp in _SCALARS:
        check, what = _SCALARS[tp]
        if not check(value):
            raise _refused(where, what, nullable)
        return value
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if value is None and len(rest) < len(args):
            return None
        (inner,) = rest  # the state holds no union but `T | None`
        return _read(inner, value, where, nullable=len(rest) < len(args))
    if origin is Annotated:
        return _annotated(args[0], args[1], value, where, nullable)
    if origin is Literal:
        if not isinstance(value, str):
            raise _refused(where, "a string", nullable)
        if value not in args:
            raise _refused(where, ", ".join(args[:-1]) + f" or {args[-1]}", nullable)
        return value
    if origin in (list, tuple):
        item = args[0]
        if not isinstance(value, list):
            raise _refused(where, "a list of strings" if item is str else "a list", nullable)
        if item is str and not all(isinstance(v, str) for v in value):
            raise _refused(where, "a list of strings", nullable)
        found = [_read(item, v, f"{where}[{n}]") for n, v in enumerate(value)]
        return found if origin is list else tuple(found)
    if not isinstance(value, dict):
        raise _refused(where, "an object", nullable)
    if origin is dict:
        return {k: _read(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
    if typing.is_typeddict(tp):
        for key, hint in _hints(tp).items():
            if key in value:
                _read(hint, value[key], f"{where}.{key}")
            elif key in tp.__required_keys__:
                raise StateError(f"{where}.{key} is missing")
        return value
    return _record(tp, value, where)


def _annotated(tp: Any, how: Any, value: Any, where: str, nullable: bool) -> Any:
    if isinstance(how, Refusal):
        try:
            found = _read(tp, value, where)
        except StateError:
            raise StateError(f"{where} {how.phrase}") from None
        if not how.check(found):
            raise StateError(f"{where} {how.phrase}")
        return found
    _read(how, value, where, nullable)  # the JSON form a contract of core/ reads
    return tp.from_json(value)


def _record(cls: Any, data: dict[str, Any], where: str) -> Any:
    found = {}
    for f, hint, key, meta in _fields(cls):
        if meta.get("inline"):
            (inner,) = [a for a in get_args(hint) if a is not type(None)]
            if any(k in data for _f, _h, k, _m in _fields(inner)):
                found[f.name] = _record(inner, data, where)
        elif key in data:
            found[f.name] = _read(hint, data[key], f"{where}.{key}")
        elif _required(f):
            raise StateError(f"{where}.{key} is missing")
    return cls(**found)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def _fields(cls: Any) -> tuple[tuple[dataclasses.Field[Any], Any, str, dict[str, Any]], ...]:
    """Each field of a record, its type, its key in the file and how it is written."""
    hints = _hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META, {})
        found.append((f, hints[f.name], meta.get("key") or f.name, meta))
    return tuple(found)


# ---------------------------------------------------------------- writing


def _written(record: Any, f: dataclasses.Field[Any], meta: dict[str, Any]) -> bool:
    if "along" in meta:
        cls: Any = type(record)
        (anchor,) = [x for x in _fields(cls) if x[0].name == meta["along"]]
        return _written(record, anchor[0], anchor[3])
    if meta.get("kept") or _required(f):
        return True
    made = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    return bool(getattr(record, f.name) != made)


def _dump(record: Any) -> dict[str, Any]:
    data: dict[str, Any] = {}
    cls: Any = type(record)
    for f, _hint, key, meta in _fields(cls):
        if _written(record, f, meta):
            value = getattr(record, f.name)
            if meta.get("inline"):
                data.update(_dump(value))
            else:
                data[key] = _json(value)
    for anchor, order in getattr(record, "_layouts", {}).items():
        if anchor in data:
            data = {**{k: data.pop(k) for k in order if k in data}, **data}
    return data


def _json(value: Any) -> Any:
    if isinstance(value, Record):
        return _dump(value)
    if hasattr(value, "to_json"):  # a contract of core/ writes itself
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value
