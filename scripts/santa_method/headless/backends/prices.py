"""Model aliases, API ids and list prices, in one dated table.

Why a table of our own: the APIs report tokens, not money, and the
Messages API takes full model ids, while people (and Claude Code) say
`opus`/`sonnet`. A project sets the price of any other model (or replaces
one of these) in its config (`prices:`; 0 for a model served locally),
which reaches the backends as `overrides`. Update the dates with the table.

Sources: Claude, the price catalogue built into Claude Code 2.1.332
(ARCHITECTURE.md, "Prices"), as of 2026-01; cache writes are priced at
1.25x input (5-minute TTL), cache reads at 0.1x input unless the catalogue
lists a price of its own. OpenAI, the model pages of
developers.openai.com/api/docs/models (gpt-5.1, gpt-5, gpt-5-mini,
gpt-5-nano: input, cached input, output), read 2026-12. Gemini, the Gemini
API's pricing page (ai.google.dev/gemini-api/docs/pricing, paid tier, text)
as quoted by dated copies of 2025-07 to 2026-03: 2.5 Pro is priced higher
for a prompt over 200,000 tokens, and its cache reads, like Flash's, are the
highest price those copies give, so a budget is never under-counted.
OpenAI-compatible endpoints report cached tokens as part of the prompt;
the backend counts them apart, as cache reads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from santa_method.core.errors import InputError
from santa_method.headless.backends.base import Tokens

PRICES_AS_OF = {"claude": "2026-01", "gpt": "2026-12", "gemini": "2026-03"}
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10
# Message Batches are billed at half the list price, every token kind
# (input, output, cache reads and writes) alike; documented publicly, not
# measured here (the API reports tokens, never money). Applied by the
# `anthropic-batch` backend to what `cost()` returns.
BATCH_FACTOR = 0.5


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `long` is the price of a call whose prompt
    (input and cache reads and writes) passes `above` tokens, where the list
    prices a long prompt higher."""

    input: float
    output: float
    listed_cache_read: float | None = None
    """The catalogue's own cache-read price, where it gives one."""
    listed_cache_write: float | None = None
    above: int | None = None
    long: Price | None = None

    @property
    def cache_write(self) -> float:
        if self.listed_cache_write is not None:
            return self.listed_cache_write
        return self.input * CACHE_WRITE_FACTOR

    @property
    def cache_read(self) -> float:
        if self.listed_cache_read is not None:
            return self.listed_cache_read
        return self.input * CACHE_READ_FACTOR

    def for_prompt(self, prompt_tokens: int) -> Price:
        """The price that applies to a call with this many prompt tokens."""
        if self.long is not None and self.above is not None and prompt_tokens > self.above:
            return self.long
        return self


ALIASES: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}

PRICES: dict[str, Price] = {
    "claude-opus-5-5": Price(4.0, 20.0),
    "claude-sonnet-5-5": Price(2.0, 10.0, listed_cache_read=0.10),
    "claude-haiku-5-5": Price(0.10, 0.50),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    # OpenAI: prompt caching is automatic and free to write.
    "gpt-5.1": Price(1.25, 10.0, listed_cache_read=0.125, listed_cache_write=1.25),
    "gpt-5": Price(1.25, 10.0, listed_cache_read=0.125, listed_cache_write=1.25),
    "gpt-5-mini": Price(0.25, 2.0, listed_cache_read=0.025, listed_cache_write=0.25),
    "gpt-5-nano": Price(0.05, 0.40, listed_cache_read=0.005, listed_cache_write=0.05),
    # Gemini, through its OpenAI-compatible endpoint.
    "gemini-2.5-pro": Price(
        1.25,
        10.0,
        listed_cache_read=0.31,
        listed_cache_write=1.25,
        above=200_000,
        long=Price(2.50, 15.0, listed_cache_read=0.625, listed_cache_write=2.50),
    ),
    "gemini-2.5-flash": Price(0.30, 2.50, listed_cache_read=0.075, listed_cache_write=0.30),
}

DEFAULT_MODEL = "sonnet"
# A dated snapshot of a listed model: `claude-haiku-4-5-20251001`, `gpt-5.1-2025-11-13`.
_DATED = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


def model_id(model: str | None) -> str:
    """The Messages API id for an alias or id (unknown names pass through unchanged)."""
    name = (model or DEFAULT_MODEL).strip()
    return ALIASES.get(name, name)


Overrides = Mapping[str, Price]


def price(
    model: str | None, overrides: Overrides | None = None, *, aliases: bool = True
) -> Price | None:
    """The price of a model: the project's own first (by the name as given,
    then as the API knows it), else the list price, matching a dated
    snapshot (`claude-haiku-4-5-20251001`) by its model. Only a date may
    follow a listed name: `gpt-5-pro` is not `gpt-5`. `aliases=False` for
    a backend whose model names are not Claude Code's (`openai`)."""
    given = (model or "").strip() if not aliases else (model or DEFAULT_MODEL).strip()
    mid = model_id(given) if aliases else given
    for table in (overrides or {}, PRICES):
        for name in dict.fromkeys((given, mid)):
            if name in table:
                return table[name]
        dated = _DATED.search(mid)
        if dated and mid[: dated.start()] in table:
            return table[mid[: dated.start()]]
    return None


def custom_prices(given: Mapping[str, Any] | None) -> dict[str, Price]:
    """A project's prices (the config's `prices:`, the options' `prices`) in
    dollars per million tokens: `input` and `output`, and the cache prices
    where given (else the factors above), checked by the one rule for a
    price a person gives (`core/numbers.py`)."""
    from santa_method.core import numbers

    if given is not None and not isinstance(given, Mapping):
        raise InputError("prices maps model names to {input: USD, output: USD} per million tokens")
    found: dict[str, Price] = {}
    for model, parts in (given or {}).items():
        if isinstance(parts, Price):
            found[model] = parts
            continue
        checked = numbers.check_price(parts, f"the price of {model}")
        found[model] = Price(
            checked["input"],
            checked["output"],
            listed_cache_read=checked.get("cache_read"),
            listed_cache_write=checked.get("cache_write"),
        )
    return found


#: The backends whose cost is counted by this table (Claude Code reports its own).
PRICED_BACKENDS = ("anthropic", "anthropic-batch", "openai")


def require_prices(
    calls: Iterable[tuple[str | None, str | None]], overrides: Overrides | None = None
) -> None:
    """A budget is kept only if every model a run may call has a price:
    `calls` are (backend, model) pairs (a model of None is the backend's
    default), refused before any run exists."""
    unpriced: set[str] = set()
    for backend, model in calls:
        if backend not in PRICED_BACKENDS:
            continue
        claude = backend != "openai"
        if price(model, overrides, aliases=claude) is None:
            unpriced.add(model_id(model) if claude else f"{backend}:{model}")
    if unpriced:
        raise InputError(
            f"no list price is known for {', '.join(sorted(unpriced))} and the config gives "
            "none, so --budget-usd cannot be kept; use a model in the price table, give its "
            "price in .santa/config.yaml (prices: {MODEL: {input: USD, output: USD}}, per "
            "million tokens; 0 for a local model), or drop the budget"
        )


def cost(
    model: str | None,
    tokens: Tokens,
    overrides: Overrides | None = None,
    *,
    aliases: bool = True,
) -> float | None:
    """USD for the tokens of one call (or of calls priced alike); None when
    the model has no price."""
    p = price(model, overrides, aliases=aliases)
    if p is None:
        return None
    p = p.for_prompt(tokens.input + tokens.cache_read + tokens.cache_write)
    total = (
        tokens.input * p.input
        + tokens.output * p.output
        + tokens.cache_write * p.cache_write
        + tokens.cache_read * p.cache_read
    )
    result = total / 1_000_000
    return result if math.isfinite(result) else None
