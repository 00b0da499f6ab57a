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
        try:
            found: Self = _reader(typing.cast(Any, cls))(data)
        except _Wrong as wrong:
            raise StateError(
                f"{where or 'state'}{''.join(reversed(wrong.path))} {wrong.said}"
            ) from None
        return found


def _check_file(cls: Any, data: Any) -> None:
    if not isinstance(data, dict):
        raise StateError("the file does not hold a JSON object")
    newest = next((f.default for f in dataclasses.fields(cls) if f.name == "version"), None)
    if isinstance(newest, int):
        version = data.get("version", newest)
        if not _SCALARS[int][0](version):
            raise StateError("state.version is not a whole number")
        if version > newest:
            raise StateError(
                f"it was written by a newer santa (state version {version}; this one "
                f"reads up to {newest}): upgrade santa-method"
            )


# ---------------------------------------------------------------- reading


class _Wrong(Exception):
    """A refusal on its way up: what is wrong, and the key path, innermost
    first (built only when a file is refused, never on the way down)."""

    def __init__(self, said: str, *path: str) -> None:
        self.said, self.path = said, list(path)


_SCALARS: dict[Any, tuple[Callable[[Any], bool], str]] = {
    str: (lambda v: isinstance(v, str), "a string"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    float: (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    bool: (lambda v: isinstance(v, bool), "true or false"),
}
Reader = Callable[[Any], Any]


@functools.cache
def _reader(tp: Any, nullable: bool = False) -> Reader:
    """How to read JSON as the type `tp` (made once a type), raising _Wrong."""
    origin, args = get_origin(tp), get_args(tp)
    null = " or null" if nullable else ""

    def checked(check: Callable[[Any], bool], what: str) -> Reader:
        def read(value: Any) -> Any:
            if not check(value):
                raise _Wrong(f"is not {what}{null}")
            return value

        return read

    if tp is Any:
        return lambda value: value
    if tp in _SCALARS:
        return checked(*_SCALARS[tp])
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]  # the state holds only `T | None`
        read_inner = _reader(inner, True)
        return lambda value: None if value is None else read_inner(value)
    if origin is Annotated:
        return _annotated(args[0], args[1], nullable)
    if origin is Literal:
        string = checked(*_SCALARS[str])
        named = checked(lambda v: v in args, ", ".join(args[:-1]) + f" or {args[-1]}")
        return lambda value: named(string(value))
    if origin in (list, tuple) and args[0] is str:
        strings = checked(
            lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "a list of strings",
        )
        return lambda value: (list if origin is list else tuple)(strings(value))
    if origin in (list, tuple):
        return _items(_reader(args[0]), checked(lambda v: isinstance(v, list), "a list"), origin)
    is_object = checked(lambda v: isinstance(v, dict), "an object")
    if origin is dict:
        return _values(_reader(args[1]), is_object)
    if typing.is_typeddict(tp):
        return _shape(tp, is_object)
    return _record(tp, is_object)


def _items(read: Reader, is_list: Reader, made: type) -> Reader:
    def items(value: Any) -> Any:
        found = []
        for n, v in enumerate(is_list(value)):
            try:
                found.append(read(v))
            except _Wrong as wrong:
                wrong.path.append(f"[{n}]")
                raise
        return made(found)

    return items


def _values(read: Reader, is_object: Reader) -> Reader:
    def values(value: Any) -> Any:
        found = {}
        for k, v in is_object(value).items():
            try:
                found[k] = read(v)
            except _Wrong as wrong:
                wrong.path.append(f"[{k!r}]")
                raise
        return found

    return values


def _shape(tp: Any, is_object: Reader) -> Reader:
    keys = [(k, _reader(hint), k in tp.__required_keys__) for k, hint in _hints(tp).items()]

    def shape(value: Any) -> Any:
        is_object(value)
        for key, read, required in keys:
            if key in value:
                try:
                    read(value[key])
                except _Wrong as wrong:
                    wrong.path.append(f".{key}")
                    raise
            elif required:
                raise _Wrong("is missing", f".{key}")
        return value

    return shape


def _annotated(tp: Any, how: Any, nullable: bool) -> Reader:
    if isinstance(how, Refusal):
        read = _reader(tp)

        def refused(value: Any) -> Any:
            try:
                found = read(value)
            except _Wrong:
                raise _Wrong(how.phrase) from None
            if not how.check(found):
                raise _Wrong(how.phrase)
            return found

        return refused
    shape = _reader(how, nullable)  # the JSON form a contract of core/ reads
    return lambda value: tp.from_json(shape(value))


def _record(cls: Any, is_object: Reader) -> Reader:
    plan = _plan(cls)

    def record(value: Any) -> Any:
        is_object(value)
        found = {}
        for f in plan:
            if f.inline is not None:
                if any(k in value for k in f.inline):
                    found[f.name] = f.read(value)
            elif f.key in value:
                try:
                    found[f.name] = f.read(value[f.key])
                except _Wrong as wrong:
                    wrong.path.append(f".{f.key}")
                    raise
            elif f.required:
                raise _Wrong("is missing", f".{f.key}")
        return cls(**found)

    return record


class _Field(typing.NamedTuple):
    name: str
    key: str
    read: Reader
    required: bool
    written: Callable[[Any], bool] | None
    """Whether the record's key is written (None: always)."""
    inline: tuple[str, ...] | None
    """An inline record's keys."""


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _differs(f: dataclasses.Field[Any]) -> Callable[[Any], bool]:
    made: Any = f.default_factory
    if f.default is not dataclasses.MISSING:
        return lambda record: bool(getattr(record, f.name) != f.default)
    return lambda record: bool(getattr(record, f.name) != made())


@functools.cache
def _plan(cls: Any) -> tuple[_Field, ...]:
    """Each field of a record: its key in the file, how to read it, when it is written."""
    fields = dataclasses.fields(cls)
    meta = {f.name: f.metadata.get(_META, {}) for f in fields}
    required = {
        f.name: f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in fields
    }
    rule = {
        f.name: None if required[f.name] or meta[f.name].get("kept") else _differs(f)
        for f in fields
    }
    found = []
    for f in fields:
        hint, inline = _hints(cls)[f.name], None
        if meta[f.name].get("inline"):
            (hint,) = [a for a in get_args(hint) if a is not type(None)]
            inline = tuple(x.key for x in _plan(hint))
        written = rule[meta[f.name]["along"]] if "along" in meta[f.name] else rule[f.name]
        key = meta[f.name].get("key") or f.name
        found.append(_Field(f.name, key, _reader(hint), required[f.name], written, inline))
    return tuple(found)


# ---------------------------------------------------------------- writing


def _dump(record: Any) -> dict[str, Any]:
    data: dict[str, Any] = {}
    cls: Any = type(record)
    for f in _plan(cls):
        if f.written is None or f.written(record):
            value = getattr(record, f.name)
            if f.inline is not None:
                data.update(_dump(value))
            else:
                data[f.key] = _json(value)
    for anchor, order in getattr(record, "_layouts", {}).items():
        if anchor in data:
            data = {**{k: data.pop(k) for k in order if k in data}, **data}
    return data


def _json(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, Record):
        return _dump(value)
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value.to_json()  # a contract of core/ writes itself
