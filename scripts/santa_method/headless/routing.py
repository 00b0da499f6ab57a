"""Which backend answers which reviewer: a run's slots, each bound to a backend instance.

Why apart from the loop: a run whose `models` name several backends
(`anthropic:claude-sonnet-4-5,openai:gpt-5.1`) holds one instance per
backend it calls, besides the one `--backend` names (which answers every
entry without a backend of its own); the fixer is routed the same way
from its own setting. The list is read by `core/reviewers.py`, the one
rule the CLI, the config and the Python options share; this module binds
what it reads to instances, asks each one before anything is opened
whether it can start, and closes the ones it made.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from santa_method.core.errors import InputError, StartError
from santa_method.core.reviewers import Juror, Reviewer, juror, parse_entry, reviewer_slots
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import Backend, missing_prerequisites
from santa_method.headless.backends.checked import backend_name

#: Backends whose cost santa counts, and so take the project's prices.
_TAKE_PRICES = frozenset({"anthropic", "anthropic-batch", "openai"})


def resolve_backend(backend: str | Backend, **options: Any) -> Backend:
    """A backend instance from a name (`anthropic`, `claude`, `openai`,
    `replay:DIR`) or the instance itself."""
    if not isinstance(backend, str):
        return backend
    from santa_method.headless.backends.replay import ReplayBackend, replay_folder

    folder = replay_folder(backend)
    if folder is not None:
        return ReplayBackend(folder)
    if backend == "anthropic":
        from santa_method.headless.backends.anthropic import AnthropicBackend

        return AnthropicBackend(**options)
    if backend == "openai":
        from santa_method.headless.backends.openai import OpenAIBackend

        return OpenAIBackend(**options)
    if backend == "claude":
        from santa_method.headless.backends.claude import ClaudeBackend

        return ClaudeBackend(**options)
    if backend == "anthropic-batch":
        from santa_method.headless.backends.anthropic_batch import AnthropicBatchBackend

        if "state_path" not in options:
            raise InputError(
                "the anthropic-batch backend needs state_path= (where its batches are kept)"
            )
        return AnthropicBatchBackend(**options)
    raise InputError(
        f"unknown backend '{backend}'; use 'anthropic', 'claude', 'openai', 'anthropic-batch' "
        "or 'replay:DIR'"
    )


@dataclass(frozen=True)
class Seat:
    """A reviewer slot (or the fixer, labelled `fixer`) and the instance that answers it."""

    reviewer: Reviewer
    backend: Backend

    @property
    def label(self) -> str:
        return self.reviewer.label

    @property
    def model(self) -> str | None:
        return self.reviewer.model

    @property
    def backend_name(self) -> str:
        return self.reviewer.backend or backend_name(self.backend)


class Backends:
    """The backend instances of one run or batch, one per name.

    `default` answers every entry that names no backend; `given` are
    instances the caller shares by name (a batch's, across its items);
    any other name gets an instance made here, closed by `aclose`. The
    project's `prices` reach every backend whose cost santa counts. With
    `record`, every instance answers through a `Recorder` keeping its
    replies in that folder; a replay (`replay:DIR`) answers every slot,
    whatever backend it names, and calls none."""

    def __init__(
        self,
        default: str | Backend,
        *,
        given: Mapping[str, Backend] | None = None,
        prices: prices.Overrides | None = None,
        record: str | os.PathLike[str] | None = None,
    ) -> None:
        self.prices = dict(prices or {})
        self.given = dict(given or {})
        self.default_name = default if isinstance(default, str) else backend_name(default)
        self._default = default
        self._default_instance: Backend | None = None
        self.made: dict[str, Backend] = {}
        self._lent: dict[str, Backend] = {}
        self.record = record
        #: The recorders of a recorded run, one per backend it calls.
        self.recorders: list[Any] = []

    @property
    def default(self) -> Backend:
        """The instance `--backend` names, made when first asked for."""
        if self._default_instance is None:
            if self.default_name in self.given:
                self._default_instance = self._recorded(self.given[self.default_name])
            elif isinstance(self._default, str):
                self._default_instance = self._recorded(
                    resolve_backend(self._default, **self._options(self.default_name))
                )
                self.made[self.default_name] = self._default_instance
            else:
                self._default_instance = self._recorded(self._default)
        return self._default_instance

    @property
    def replayed(self) -> str | None:
        """The recording a replayed run is answered from, else None."""
        return getattr(self.default, "replayed", None)

    def _recorded(self, backend: Backend) -> Backend:
        if self.record is None:
            return backend
        if getattr(backend, "replayed", None) is not None:
            raise InputError("a replayed run calls no backend, so it has nothing to record")
        from santa_method.headless.backends.replay import Recorder

        recorder = Recorder(backend, self.record)
        self.recorders.append(recorder)
        return recorder

    def _options(self, name: str) -> dict[str, Any]:
        return {"prices": self.prices} if name in _TAKE_PRICES and self.prices else {}

    def get(self, name: str | None) -> Backend:
        """The instance that answers `name` (None: the default)."""
        if name is None or name == self.default_name or self.replayed is not None:
            return self.default
        if name in self.given:
            if name not in self._lent:
                self._lent[name] = self._recorded(self.given[name])
            return self._lent[name]
        if name not in self.made:
            self.made[name] = self._recorded(resolve_backend(name, **self._options(name)))
        return self.made[name]

    def lent(self) -> dict[str, Backend]:
        """The instances of other backends than the default, to lend to runs by name."""
        return {n: b for n, b in {**self.given, **self.made}.items() if n != self.default_name}

    def seat(self, reviewer: Reviewer) -> Seat:
        """The slot bound to its instance, its backend named (a replayed
        run's by the replay: it calls none)."""
        backend = self.get(reviewer.backend)
        if self.replayed is not None:
            return Seat(Reviewer(reviewer.label, backend_name(backend), reviewer.model), backend)
        return Seat(reviewer.on(self.default_name), backend)

    async def require_all(self, seats: Sequence[Seat]) -> None:
        """Before anything is opened: every backend the seats call can start
        (everything each lacks named at once, StartError, exit 3), and every
        seat of a backend that has no default model names one (InputError)."""
        for seat in seats:
            answering = getattr(seat.backend, "inner", seat.backend)  # a Recorder's backend
            if seat.model is None and getattr(answering, "requires_model", False):
                who = "the fixer" if seat.label == "fixer" else f"reviewer {seat.label}"
                raise InputError(
                    f"{who} uses the {seat.backend_name} backend, which has no default model: "
                    f"name one, e.g. --models {seat.backend_name}:MODEL"
                )
        problems: list[str] = []
        checked: set[int] = set()
        for seat in seats:
            if id(seat.backend) in checked:
                continue
            checked.add(id(seat.backend))
            missing = await missing_prerequisites(seat.backend)
            if missing:
                problems.append(f"the {seat.backend_name} backend cannot start: " + "; ".join(missing))
        if problems:
            raise StartError("; ".join(problems))

    async def aclose(self, *, default: bool) -> None:
        """Close the instances made here, the default among them only when
        `default` (a shared one stays open for its other runs)."""
        closing = [
            b for n, b in self.made.items() if default or n != self.default_name
        ]
        if default and self._default_instance is not None and not isinstance(self._default, str):
            closing.append(self._default_instance)
        self.made = {n: b for n, b in self.made.items() if b not in closing}
        for backend in closing:
            closer = getattr(backend, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()


@dataclass(frozen=True)
class Route:
    """A run's reviewer slots and its fixer, each bound to its instance;
    `entries` are the slots as the user named them (None: no models given),
    which the run's state keeps."""

    seats: tuple[Seat, ...]
    fixer: Seat
    entries: tuple[str | None, ...] | None = None

    def seat(self, label: str) -> Seat:
        return next(s for s in self.seats if s.label == label)

    def jury(self) -> list[Juror]:
        """The reviewers as a person is told of them: slot, backend, model, family."""
        return [juror(s.label, s.backend_name, s.model) for s in self.seats]

    def calls(self) -> list[tuple[str | None, str | None]]:
        """(backend, model) of every call the run may make, for the price check."""
        return [(s.backend_name, s.model) for s in (*self.seats, self.fixer)]


def route(
    backends: Backends,
    models: Sequence[str] | None,
    reviewers: int | None,
    fixer_model: str | None = None,
) -> Route:
    """The slots `models` and `reviewers` describe (the one rule,
    `core/reviewers.py`), and the fixer: `fixer_model` (`MODEL` or
    `BACKEND:MODEL`), else the first slot's backend and model."""
    slots = reviewer_slots(models, reviewers)
    seats = tuple(backends.seat(r) for r in slots)
    if fixer_model is not None:
        backend, model = parse_entry(fixer_model, "fixer_model")
        fixer = backends.seat(Reviewer("fixer", backend, model))
    else:
        first = seats[0].reviewer
        fixer = backends.seat(Reviewer("fixer", first.backend, first.model))
    return Route(seats, fixer, tuple(r.entry for r in slots) if models else None)


def require_prices(the_route: Route, budget_usd: float | None, overrides: prices.Overrides) -> None:
    """With a budget, every model the run may call needs a price, before anything runs."""
    if budget_usd is not None:
        prices.require_prices(the_route.calls(), overrides)
