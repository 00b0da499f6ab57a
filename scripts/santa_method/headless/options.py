"""How `verify` and `verify_batch` run: one options object each.

Why objects rather than keywords: a run takes about twenty settings and a
batch nearly thirty; one value can be built once, checked by a type
checker, shared between calls and changed with `dataclasses.replace`, as
the agent SDK's own options are. The options object is the API: settings
are not taken as keyword arguments of `verify`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from santa_method.core.batch_rules import DEFAULT_MIN_ITEMS

if TYPE_CHECKING:
    from santa_method.core.types import Rubric
    from santa_method.headless.backends.base import Backend
    from santa_method.headless.backends.prices import Price

EventHook = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class VerifyOptions:
    """The settings of one `verify` run (see `verify` for what each does).

    `models` has one entry per reviewer, `MODEL` (answered by `backend`) or
    `BACKEND:MODEL` (`anthropic:claude-sonnet-4-5`, `openai:gpt-5.1`), and
    their number is the number of reviewers (one entry: every reviewer);
    `reviewers`, when given, must agree, and is 2 without models. The fixer
    is `fixer_model` (either form), else the first reviewer's. `backends`
    lends instances by name for the backends `models` names (an
    `OpenAIBackend(base_url=...)` as `openai`); `prices` gives the price of
    models the table lacks, `{model: {"input": USD, "output": USD}}` per
    million tokens (0 for a local one), as the config's `prices:` does.
    """

    against_diff: str | None = None
    rubric: str | Rubric = "base"
    reviewers: int | None = None
    models: Sequence[str] | None = None
    fixer_model: str | None = None
    backend: str | Backend = "anthropic"
    backends: Mapping[str, Backend] | None = None
    prices: Mapping[str, Mapping[str, float] | Price] | None = None
    max_fixes: int = 3
    budget_usd: float | None = None
    timeout: float | None = None
    cache_warm: bool = False
    pre_check: str | None = None
    in_place: bool = False
    log: str | os.PathLike[str] | None = None
    on_event: EventHook | None = None
    project_dir: str | os.PathLike[str] | None = None
    resume_run: str | None = None
    close_backend: bool = True
    resumable: bool = False
    record: str | os.PathLike[str] | None = None
    """A folder to keep every backend reply in, for `backend="replay:DIR"`."""
    author_model: str | None = None
    """The model that wrote the output: when every reviewer is of its family,
    the run warns (once) that they tend to miss what it missed."""


@dataclass(frozen=True)
class BatchOptions:
    """The settings of one `verify_batch` call (see `verify_batch`); `models`,
    `reviewers`, `backends` and `prices` as in `VerifyOptions`, the screens
    and the fixer on `screen_model` and the first model."""

    rubric: str | Rubric = "base"
    reviewers: int | None = None
    models: Sequence[str] | None = None
    backend: str | Backend = "anthropic"
    backends: Mapping[str, Backend] | None = None
    prices: Mapping[str, Mapping[str, float] | Price] | None = None
    backend_options: dict[str, Any] | None = None
    rate: float | None = None
    minimum: int | None = None
    prevalence: float | None = None
    confidence: float | None = None
    stratified: bool = False
    seed: int | None = None
    exclude: Sequence[str] = field(default=())
    max_fixes: int = 3
    max_resamples: int = 2
    budget_usd: float | None = None
    timeout: float | None = None
    in_place: bool = False
    resume: bool | str = False
    log: str | os.PathLike[str] | None = None
    field_name: str = "output"
    systemic_min: int = DEFAULT_MIN_ITEMS
    systemic_share: float | None = None
    screen_model: str | None = None
    concurrency: int | None = None
    on_event: EventHook | None = None
    project_dir: str | os.PathLike[str] | None = None


Options = TypeVar("Options", VerifyOptions, BatchOptions)


def resolve(kind: type[Options], options: Options | None, caller: str) -> Options:
    """The options of a call, or the defaults; another kind is a TypeError
    naming the one the call takes."""
    if options is not None and not isinstance(options, kind):
        raise TypeError(
            f"{caller}() takes options={kind.__name__}(...), not {type(options).__name__}"
        )
    return options if options is not None else kind()
