"""Project defaults from `.santa/config.yaml`; command-line flags override them.

A project states once how it verifies (rubric, how many reviewers, which
models, the fix cap, a budget, the deterministic pre-check, the price of a
model santa has no list price for) instead of repeating flags in every call. The file is strict: an unknown key or a
value of the wrong type stops the command with one sentence naming the key,
because a typo such as `max_fix: 1` silently ignored would change what
"verified" means. See `examples/config.yaml` for every key, documented.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import InputError
from santa_method.core.reviewers import parse_entry, reviewer_slots
from santa_method.state import paths

CONFIG_NAME = "config.yaml"

Models = tuple[str, ...] | Mapping[str, str] | None
#: model -> {"input": USD, "output": USD, ...} per million tokens.
Prices = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Config:
    """The effective settings of a run.

    `models`: None inherits the backend's (or Claude Code's) default; a tuple
    has one entry per reviewer, `MODEL` or `BACKEND:MODEL`, and sets how
    many there are (`core/reviewers.py`; one entry alone means "every
    reviewer"); a mapping goes by reviewer label (`B`, `C`, ...), with the
    optional key `default` for the others. `prices` gives a model's price in
    US dollars per million tokens (`input`, `output`, optionally
    `cache_read`, `cache_write`), over the shipped table; 0 for a local
    model. `log` is None for the default log (`SANTA_LOG`, else
    `.santa/log.jsonl`).
    """

    rubric: str = "base"
    reviewers: int = 2
    models: Models = None
    max_fixes: int = 3
    budget_usd: float | None = None
    pre_check: str | None = None
    log: Path | None = None
    prices: Prices | None = None

    def override(self, **cli_values: Any) -> Config:
        """A copy with each given value replacing the config's; None keeps it.

        Values are checked exactly like the file's, so `--reviewers 1` fails
        with the same sentence as `reviewers: 1`.
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(cli_values) - known)
        if unknown:
            raise TypeError(f"Config.override() got unknown settings: {', '.join(unknown)}")
        given = {k: v for k, v in cli_values.items() if v is not None}
        values = _check_values(given, source="the command line", base=None)
        if "models" not in values and isinstance(self.models, tuple) and "reviewers" in values:
            # The config's list sets the count; a flag that says otherwise is refused.
            reviewer_slots(
                self.models,
                values["reviewers"],
                what="the config's 'models'",
                count_what="the command line's 'reviewers'",
            )
        return replace(self, **values)

    def model_for(self, index: int, label: str) -> str | None:
        """The model of reviewer slot `index` (0-based) labelled `label`, None to inherit."""
        if self.models is None:
            return None
        if isinstance(self.models, tuple):
            return self.models[index % len(self.models)] if self.models else None
        return self.models.get(label, self.models.get("default"))

    def to_json(self) -> dict[str, Any]:
        models: Any = self.models
        if isinstance(models, tuple):
            models = list(models)
        elif models is not None:
            models = dict(models)
        return {
            "rubric": self.rubric,
            "reviewers": self.reviewers,
            "models": models,
            "max_fixes": self.max_fixes,
            "budget_usd": self.budget_usd,
            "pre_check": self.pre_check,
            "log": str(self.log) if self.log is not None else None,
            "prices": None
            if self.prices is None
            else {model: dict(parts) for model, parts in self.prices.items()},
        }


def config_path(project_root: str | os.PathLike[str] | None = None) -> Path:
    """`<project_root>/.santa/config.yaml`; with no root, the `.santa/` that `paths` finds."""
    folder = Path(project_root) / ".santa" if project_root is not None else paths.santa_dir()
    return folder / CONFIG_NAME


def load_config(project_root: str | os.PathLike[str] | None = None) -> Config:
    """Read the project's config; a missing file (or an empty one) means the defaults."""
    data, source, path = _read_config(project_root)
    if not data:
        return Config()
    return Config(**_check_values(data, source=source, base=path.parent.parent))


def config_keys(project_root: str | os.PathLike[str] | None = None) -> frozenset[str]:
    """The settings the project's config gives (checked as `load_config` checks them)."""
    data, source, path = _read_config(project_root)
    _check_values(data, source=source, base=path.parent.parent)
    return frozenset(data)


def _read_config(project_root: str | os.PathLike[str] | None) -> tuple[dict[str, Any], str, Path]:
    from santa_method.core.files import MAX_RUBRIC_BYTES, path_kind, read_text

    path = config_path(project_root)
    if path_kind(path) == "missing" and not path.is_symlink():
        return {}, "", path
    text = read_text(path, "the config", MAX_RUBRIC_BYTES)
    return _settings(text, str(path)), f"the config '{path}'", path


def parse_config(text: str, *, source: str = CONFIG_NAME, base_dir: Path | None = None) -> Config:
    """A Config from YAML text; relative `log` paths are taken from `base_dir` (the project root)."""
    data = _settings(text, source)
    if not data:
        return Config()
    return Config(**_check_values(data, source=f"the config '{source}'", base=base_dir))


def _settings(text: str, source: str) -> dict[str, Any]:
    """The config's mapping of settings, read by the safe loader that refuses
    a key given twice (`reviewers: 3` then `reviewers: 1` must not silently
    mean 1) and alias bombs, as rubrics are read."""
    import yaml

    from santa_method.core.yaml_safe import AliasBomb, alias_bomb, safe_load, yaml_too_deep

    try:
        data = safe_load(text, unique_keys=True)
    except yaml.YAMLError as exc:
        if yaml_too_deep(exc):
            raise InputError(f"the config '{source}' is nested too deeply to be a config") from None
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None)
        if isinstance(problem, str) and problem.startswith("duplicate key"):
            raise InputError(
                f"the config '{source}' gives the {problem[len('duplicate ') :]} more than once "
                f"(again{at}); give each setting once"
            ) from None
        raise InputError(f"the config '{source}' is not valid YAML{at}") from None
    except AliasBomb as exc:
        raise alias_bomb("the config", source, exc) from None
    except RecursionError:
        raise InputError(f"the config '{source}' is nested too deeply to be a config") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(
            f"the config '{source}' must be a mapping of settings, not a {_kind(data)}"
        )
    return data


def _settle_count(values: dict[str, Any], *, source: str) -> None:
    """A models list of two or more entries is the reviewer count (one rule
    for flags, the config and the Python API: `core/reviewers.py`); a
    `reviewers` given beside it must agree."""
    models = values.get("models")
    if isinstance(models, tuple) and len(models) >= 2:
        slots = reviewer_slots(
            models,
            values.get("reviewers"),
            what=f"{source}: 'models'",
            count_what="'reviewers'",
        )
        values["reviewers"] = len(slots)


def _check_values(data: Mapping[Any, Any], *, source: str, base: Path | None) -> dict[str, Any]:
    defaults = {f.name: f.default for f in fields(Config)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in defaults:
            raise InputError(
                f"{source} has an unknown key '{key}'; known keys: {', '.join(defaults)}"
            )
        if value is None and defaults[key] is None:
            out[key] = None  # an explicit null is the default: inherit / none
            continue
        out[key] = _CHECKS[key](value, f"{source}: '{key}'", base)
    _settle_count(out, source=source)
    return out


def _rubric(value: Any, what: str, _base: Path | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a rubric name or path, not {_show(value)}")
    return value.strip()


def _reviewers(value: Any, what: str, _base: Path | None) -> int:
    return int(numbers.REVIEWERS.check(value, what))


def _max_fixes(value: Any, what: str, _base: Path | None) -> int:
    return int(numbers.MAX_FIXES.check(value, what))


def _budget(value: Any, what: str, _base: Path | None) -> float:
    return float(numbers.BUDGET_USD.check(value, what))


def _pre_check(value: Any, what: str, _base: Path | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a shell command (a non-empty string), not {_show(value)}")
    return value


def _log(value: Any, what: str, base: Path | None) -> Path:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a file path, not {_show(value)}")
    path = Path(value).expanduser()
    return base / path if base is not None and not path.is_absolute() else path


def _models(value: Any, what: str, _base: Path | None) -> Models:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    if isinstance(value, list | tuple):
        if not value or not all(isinstance(m, str) and m.strip() for m in value):
            raise InputError(
                f"{what} must be a model name, a list of model names, or a map of reviewer label to model name"
            )
        for m in value:
            parse_entry(m, what)  # a name santa cannot route is refused now, not at the first call
        return tuple(m.strip() for m in value)
    if isinstance(value, Mapping):
        if not value or not all(
            isinstance(k, str) and k.strip() and isinstance(m, str) and m.strip()
            for k, m in value.items()
        ):
            raise InputError(
                f"{what} maps reviewer labels to model names; every key and value must be a non-empty string"
            )
        for m in value.values():
            parse_entry(m, what)
        return MappingProxyType({k.strip(): m.strip() for k, m in value.items()})
    raise InputError(
        f"{what} must be a model name, a list of model names, or a map of reviewer label to model name, not {_show(value)}"
    )


def _prices(value: Any, what: str, _base: Path | None) -> Prices:
    """Each model's price: `input` and `output` required, cache prices
    optional, every one a finite number of dollars per million tokens from 0."""
    if not isinstance(value, Mapping) or not value:
        raise InputError(
            f"{what} maps model names to prices ({{MODEL: {{input: USD, output: USD}}}} per "
            f"million tokens), not {_show(value)}"
        )
    out: dict[str, Mapping[str, float]] = {}
    for model, parts in value.items():
        if not isinstance(model, str) or not model.strip():
            raise InputError(f"{what}: every model name must be a non-empty string")
        out[model.strip()] = MappingProxyType(numbers.check_price(parts, f"{what}: '{model}'"))
    return MappingProxyType(out)


_CHECKS = {
    "rubric": _rubric,
    "reviewers": _reviewers,
    "models": _models,
    "max_fixes": _max_fixes,
    "budget_usd": _budget,
    "pre_check": _pre_check,
    "log": _log,
    "prices": _prices,
}


def _kind(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _show(value: Any) -> str:
    text = repr(value)
    return f"{_kind(value)} {text[:40]}{'...' if len(text) > 40 else ''}"


def resolve_log_path(
    cli_log: str | os.PathLike[str] | None = None,
    project_root: str | os.PathLike[str] | None = None,
) -> Path:
    """Which log a command uses: `--log`, else `SANTA_LOG`, else the config's `log`,
    else `.santa/log.jsonl`. One rule, so every command reads the log the others write.

    A log that is there must be a regular file (a FIFO, a folder or a
    symlink loop is a usage error before anything runs): records appended
    to anything else would be lost."""
    if cli_log is not None and str(cli_log) != "":
        return _usable_log(Path(cli_log))
    env = os.environ.get("SANTA_LOG")
    if env:
        return _usable_log(Path(env))
    configured = load_config(project_root).log
    if configured is not None:
        return _usable_log(configured)
    if project_root is not None:
        return _usable_log(Path(project_root) / ".santa" / "log.jsonl")
    return _usable_log(paths.default_log_path())


def _usable_log(path: Path) -> Path:
    import sys

    from santa_method.core.files import check_file

    if os.path.lexists(path):
        check_file(path, "the log", sys.maxsize)  # the log has no size ceiling
    return path
