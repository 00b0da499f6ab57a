"""Rubrics: load, combine, render, hash and lint the criteria reviewers judge by.

A rubric is only as good as its criteria are objective, so the loader and
the linter share one validator (core/rubric_check.py, which checks each
file on its own): a rubric that `santa rubric lint` rejects can never be
loaded for a review, and one that it accepts always can. This module finds
the files, resolves `extend` and combinations, and renders and hashes the
result.

Names resolve in the project's `.santa/rubrics/` first, then among the
packaged rubrics, so a project can shadow a packaged rubric (a project
`base.yaml` may even extend the packaged `base`: a file never resolves a
name to itself). Which values are files and which are names: `names_a_file`.
`code+regulated` combines rubrics in order; a criterion inherited twice
from the same file (both extend `base`) is kept once, while the same id
coming from two different files is an error, because reviewers must report
every id exactly once and could not tell the two apart.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

from santa_method.core.data import data_dir
from santa_method.core.errors import InputError
from santa_method.core.files import MAX_RUBRIC_BYTES, check_file, path_kind, read_text, too_deep
from santa_method.core.rubric_check import TOO_DEEP, RubricDoc, parse_rubric
from santa_method.core.types import Criterion, Rubric
from santa_method.core.yaml_safe import ALIAS_CYCLE, ALIAS_GROWTH, alias_bomb

__all__ = [
    "LintReport",
    "RubricInfo",
    "lint",
    "lint_report",
    "list_rubrics",
    "load_rubric",
    "render_markdown",
    "rubric_from_json",
    "rubric_hash",
]

SUFFIXES = (".yaml", ".yml")

_RUBRIC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")


# --------------------------------------------------------------------------- resolving

_Entry = tuple[str, Criterion]  # (key of the file that defines it, criterion)


def _readable(doc: RubricDoc, path: str | os.PathLike[str] | None) -> RubricDoc:
    """A rubric nested past what the parser follows, or blown up by its
    aliases, cannot be read, let alone judged: bad input (exit 2) naming the
    file, like an unreadable one."""
    if TOO_DEEP in doc.errors:
        raise too_deep("rubric", path)
    for bomb in (ALIAS_GROWTH, ALIAS_CYCLE):
        if bomb in doc.errors:
            raise alias_bomb("rubric", path, bomb)
    return doc


def _merge(
    groups: Iterable[Sequence[_Entry]], label: Callable[[str], str]
) -> tuple[list[_Entry], list[str]]:
    """Concatenate in order; keep a criterion inherited twice from one file once."""
    seen: dict[str, str] = {}
    merged: list[_Entry] = []
    errors: list[str] = []
    for group in groups:
        for key, crit in group:
            first = seen.get(crit.id)
            if first is None:
                seen[crit.id] = key
                merged.append((key, crit))
            elif first != key:
                errors.append(
                    f"criterion id '{crit.id}' is defined twice, in {label(first)} and in {label(key)}"
                )
                seen[crit.id] = key  # report each further clash against the latest definer
    return merged, errors


#: Endings that make a `--rubric` value a file whatever else it is (JSON is YAML too).
FILE_SUFFIXES = (*SUFFIXES, ".json")


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or os.sep in ref or ref.endswith(FILE_SUFFIXES)


def names_a_file(
    ref: str,
    search_dirs: Sequence[str | os.PathLike[str]] = (),
    base_dir: str | os.PathLike[str] | None = None,
) -> bool:
    """Is a rubric reference a file to read, rather than a rubric's name?

    The one rule for every `--rubric`, `rubric:` and `extend` (and for
    `santa rubric lint`): a value with a `/` or a .yaml/.yml/.json ending is
    a file; so is any other value that is not a rubric name (project or
    packaged) but names something that exists (from `base_dir`, else the
    current folder), so `myr.json` is read and `adir` is called a directory.
    A rubric name wins over a file of that bare name (a project's `code/`
    folder does not hide the `code` rubric). What is neither is an unknown
    rubric, and the error lists the names there are.
    """
    return _Resolver(search_dirs).names_a_file(ref, None if base_dir is None else Path(base_dir))


def _packaged_dir() -> Path:
    try:
        return data_dir("rubrics")
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None


class _Resolver:
    """Finds and reads rubric files for one load or lint; caches what it read."""

    def __init__(self, search_dirs: Sequence[str | os.PathLike[str]] = ()) -> None:
        self.dirs: tuple[tuple[Path, Literal["project", "packaged"]], ...] = (
            *((Path(d), "project") for d in search_dirs),
            (_packaged_dir(), "packaged"),
        )
        self.docs: dict[str, RubricDoc] = {}
        self.labels: dict[str, str] = {}

    def label(self, key: str) -> str:
        return self.labels.get(key, key)

    def known_names(self) -> list[str]:
        names: set[str] = set()
        for folder, _ in self.dirs:
            if folder.is_dir():
                names.update(p.stem for p in folder.iterdir() if p.suffix in SUFFIXES)
        return sorted(names)

    def is_name(self, ref: str) -> bool:
        """A rubric of that name is in a search folder (readable or not)."""
        return bool(_RUBRIC_NAME.match(ref)) and any(
            os.path.lexists(folder / f"{ref}{suffix}")
            for folder, _ in self.dirs
            for suffix in SUFFIXES
        )

    def names_a_file(self, ref: str, base_dir: Path | None = None) -> bool:
        """See the module's `names_a_file`."""
        if _looks_like_path(ref):
            return True
        here = base_dir / ref if base_dir is not None else Path(ref)
        return not self.is_name(ref) and os.path.lexists(here)

    def find(self, ref: str, base_dir: Path | None = None, exclude: Path | None = None) -> Path:
        if self.names_a_file(ref, base_dir):
            path = Path(ref).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            if path_kind(path) == "missing" and not path.is_symlink():
                raise InputError(f"the rubric file '{ref}' does not exist")
            check_file(path, "rubric", MAX_RUBRIC_BYTES)  # a loop, a folder, a FIFO, too big
            return path.resolve()
        if not _RUBRIC_NAME.match(ref):
            raise InputError(
                f"'{ref}' is neither a rubric name nor a path to a .yaml, .yml or .json file"
            )
        skipped_self = False
        for folder, source in self.dirs:
            for suffix in SUFFIXES:
                candidate = folder / f"{ref}{suffix}"
                if not candidate.is_file():
                    if os.path.lexists(candidate):  # there, but a FIFO, a folder, a loop...
                        check_file(candidate, "rubric", MAX_RUBRIC_BYTES)
                    continue
                resolved = candidate.resolve()
                if resolved == exclude:
                    skipped_self = True
                    continue
                if source == "packaged":
                    self.labels.setdefault(str(resolved), f"'{ref}'")
                return resolved
        hint = " (a rubric cannot extend itself)" if skipped_self else ""
        known = ", ".join(self.known_names()) or "none"
        raise InputError(f"unknown rubric '{ref}'{hint}; known rubrics: {known}")

    def add(self, doc: RubricDoc) -> RubricDoc:
        self.docs[doc.key] = doc
        self.labels.setdefault(doc.key, doc.label)
        return doc

    def doc(self, path: Path) -> RubricDoc:
        key = str(path)
        if key not in self.docs:
            text = read_text(path, "rubric", MAX_RUBRIC_BYTES)
            self.add(_readable(parse_rubric(text, key, self.labels.get(key, f"'{path}'")), path))
        return self.docs[key]

    def flatten(self, path: Path, stack: tuple[Path, ...] = ()) -> list[_Entry]:
        """The criteria of `path` with its `extend`s resolved, parents first."""
        if path in stack:
            chain = [*stack[stack.index(path) :], path]
            raise InputError("extend cycle: " + " -> ".join(self.label(str(p)) for p in chain))
        doc = self.doc(path)
        if doc.errors:
            more = len(doc.errors) - 1
            tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            raise InputError(
                f"rubric {doc.label} is invalid: {doc.errors[0]}{tail}; "
                f"run 'santa rubric lint {path}' for details"
            )
        groups: list[Sequence[_Entry]] = []
        for ref in doc.extend:
            try:
                parent = self.find(ref, base_dir=path.parent, exclude=path)
            except InputError as exc:
                raise InputError(f"rubric {doc.label} extends '{ref}': {exc}") from None
            groups.append(self.flatten(parent, (*stack, path)))
        groups.append([(doc.key, c) for c in doc.criteria])
        merged, errors = _merge(groups, self.label)
        if errors:
            raise InputError(errors[0])
        return merged


# --------------------------------------------------------------------------- public API


@overload
def load_rubric(
    spec: str | os.PathLike[str], search_dirs: Sequence[str | os.PathLike[str]] = ()
) -> Rubric: ...
@overload
def load_rubric(
    spec: str | os.PathLike[str] | None, search_dirs: Sequence[str | os.PathLike[str]] = ()
) -> Rubric | None: ...
def load_rubric(
    spec: str | os.PathLike[str] | None,
    search_dirs: Sequence[str | os.PathLike[str]] = (),
) -> Rubric | None:
    """Resolve a rubric name, path or `a+b` combination into one flat Rubric.

    `None` means "no rubric" and gives None, so callers can pass an optional
    flag straight through. Anything wrong raises InputError (exit 2).
    """
    if spec is None:
        return None
    resolver = _Resolver(search_dirs)
    if isinstance(spec, os.PathLike):
        parts = [os.fspath(spec)]
        text = parts[0]
    else:
        text = spec.strip()
        if not text:
            raise InputError("the rubric name is empty")
        whole_is_file = "+" in text and _looks_like_path(text) and Path(text).is_file()
        parts = [text] if whole_is_file else [p.strip() for p in text.split("+")]
    if any(not p for p in parts):
        raise InputError(
            f"the rubric '{text}' has an empty part; combine names like 'code+regulated'"
        )
    names: list[str] = []
    groups: list[Sequence[_Entry]] = []
    for part in parts:
        path = resolver.find(part)
        groups.append(resolver.flatten(path))
        doc = resolver.doc(path)
        names.append((doc.name or path.stem) if resolver.names_a_file(part) else part)
    merged, errors = _merge(groups, resolver.label)
    if errors:
        raise InputError(errors[0])
    if not merged:
        raise InputError(f"the rubric '{text}' has no criteria")
    return Rubric(name="+".join(names), criteria=tuple(c for _, c in merged))


def render_markdown(rubric: Rubric) -> str:
    """The rubric exactly as reviewers receive it.

    Deterministic and compact on purpose: it is embedded byte for byte in
    every reviewer's assignment (a stable prefix also keeps prompt caches
    warm), and its hash identifies what a run was judged against.
    """
    lines = [
        f"## Rubric: {rubric.name}",
        "",
        f"{len(rubric.criteria)} criteria. A criterion is PASS only when its pass condition "
        "holds in full; the fail signals are examples, not a complete list. "
        "Report every criterion once in `checks`, by its id.",
    ]
    for crit in rubric.criteria:
        lines += ["", f"### `{crit.id}`: {crit.name}", f"Pass: {crit.pass_}", "Fail signals:"]
        lines += [f"- {signal}" for signal in crit.fail_signals]
    return "\n".join(lines) + "\n"


def rubric_hash(rubric: Rubric) -> str:
    """sha256 (hex) of the canonical JSON: same criteria, same hash, whatever the YAML looked like."""
    canonical = json.dumps(
        rubric.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def rubric_from_json(data: Any) -> Rubric:
    """Rebuild a Rubric from `Rubric.to_json()` (e.g. a snapshot kept with a run)."""
    try:
        criteria = tuple(
            Criterion(
                id=str(c["id"]),
                name=str(c["name"]),
                pass_=str(c["pass"]),
                fail_signals=tuple(str(s) for s in c["fail_signals"]),
            )
            for c in data["criteria"]
        )
        return Rubric(name=str(data["name"]), criteria=criteria)
    except (KeyError, TypeError) as exc:
        raise InputError(f"the stored rubric is malformed: {exc!s}") from None


@dataclass(frozen=True)
class LintReport:
    """What `santa rubric lint` found: errors fail the lint, warnings do not."""

    source: str
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    criteria: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.source,
            "valid": self.ok,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "criteria": self.criteria,
        }


def lint_report(
    target: str | os.PathLike[str],
    search_dirs: Sequence[str | os.PathLike[str]] = (),
) -> LintReport:
    """Check a rubric file (or YAML text) against every rule, collecting all problems.

    A path-like value, or a one-line string ending in .yaml/.yml/.json or holding a
    `/`, is read as a file (unreadable: InputError); any other string is the
    YAML itself. `extend`s are resolved like `load_rubric` does, so unknown
    parents, cycles and ids duplicated through inheritance are reported too.
    """
    resolver = _Resolver(search_dirs)
    self_path: Path | None = None
    if isinstance(target, os.PathLike) or ("\n" not in target and _looks_like_path(target)):
        check_file(Path(target).expanduser(), "rubric", MAX_RUBRIC_BYTES)
        self_path = Path(target).expanduser().resolve()
        source = os.fspath(target)
        text = read_text(self_path, "rubric", MAX_RUBRIC_BYTES)
        doc = resolver.add(_readable(parse_rubric(text, str(self_path), f"'{source}'"), source))
        base_dir: Path | None = self_path.parent
    else:
        source = "<text>"
        doc = resolver.add(_readable(parse_rubric(target, source, "the rubric being linted"), None))
        base_dir = None
    errors = list(doc.errors)
    groups: list[Sequence[_Entry]] = []
    stack = (self_path,) if self_path is not None else ()
    for ref in doc.extend:
        try:
            parent = resolver.find(ref, base_dir=base_dir, exclude=self_path)
            groups.append(resolver.flatten(parent, stack))
        except InputError as exc:
            errors.append(f"extend '{ref}': {exc}")
    groups.append([(doc.key, c) for c in doc.criteria])
    merged, dup_errors = _merge(groups, resolver.label)
    errors += dup_errors
    return LintReport(source, tuple(errors), doc.warnings, len(merged))


def lint(
    target: str | os.PathLike[str],
    search_dirs: Sequence[str | os.PathLike[str]] = (),
) -> list[str]:
    """Every problem as one sentence; warnings (which do not fail a lint) start with 'warning: '."""
    report = lint_report(target, search_dirs)
    return [*report.errors, *(f"warning: {w}" for w in report.warnings)]


@dataclass(frozen=True)
class RubricInfo:
    """One rubric a name resolves to; `shadows` marks a project rubric hiding a packaged one."""

    name: str
    source: Literal["project", "packaged"]
    path: Path
    description: str
    shadows: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "path": str(self.path),
            "description": self.description,
            "shadows": self.shadows,
            "error": self.error,
        }


def list_rubrics(search_dirs: Sequence[str | os.PathLike[str]] = ()) -> list[RubricInfo]:
    """Every rubric name that resolves, with where it resolves to; sorted by name.

    A broken project file is listed with its first error rather than failing
    the whole listing: the list is where people go to find such problems.
    """
    resolver = _Resolver(search_dirs)
    found: dict[str, RubricInfo] = {}
    for folder, source in resolver.dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            name = path.stem
            if name in found:
                if found[name].source == "project" and source == "packaged":
                    found[name] = _replace_shadows(found[name])
                continue
            try:
                doc = parse_rubric(
                    read_text(path, "rubric", MAX_RUBRIC_BYTES), str(path), str(path)
                )
            except InputError as exc:
                found[name] = RubricInfo(name, source, path, "", error=str(exc))
                continue
            error = doc.errors[0] if doc.errors else None
            found[name] = RubricInfo(name, source, path, doc.description, error=error)
    return [found[name] for name in sorted(found)]


def _replace_shadows(info: RubricInfo) -> RubricInfo:
    return RubricInfo(info.name, info.source, info.path, info.description, True, info.error)
