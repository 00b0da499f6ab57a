"""Model aliases, API ids and list prices, in one dated table.

Why a table of our own: the Messages API reports tokens, not money, and
takes full model ids, while people (and Claude Code) say `opus`/`sonnet`.
Update `PRICES_AS_OF` with the table. Source: the price catalogue built
into Claude Code 2.1.332 (ARCHITECTURE.md, "Prices"); cache writes are priced at
1.25x input (5-minute TTL), cache reads at 0.1x input unless the catalogue
lists a price of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from santa_method.core.errors import InputError
from santa_method.headless.backends.base import Tokens

PRICES_AS_OF = "2026-01"
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10
# Message Batches are billed at half the list price, every token kind
# (input, output, cache reads and writes) alike; documented publicly, not
# measured here (the API reports tokens, never money). Applied by the
# `anthropic-batch` backend to what `cost()` returns.
BATCH_FACTOR = 0.5


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    listed_cache_read: float | None = None
    """The catalogue's own cache-read price, where it gives one."""

    @property
    def cache_write(self) -> float:
        return self.input * CACHE_WRITE_FACTOR

    @property
    def cache_read(self) -> float:
        if self.listed_cache_read is not None:
            return self.listed_cache_read
        return self.input * CACHE_READ_FACTOR


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
}

DEFAULT_MODEL = "sonnet"


def model_id(model: str | None) -> str:
    """The API id for an alias or id (unknown names pass through unchanged)."""
    name = (model or DEFAULT_MODEL).strip()
    return ALIASES.get(name, name)


def price(model: str | None) -> Price | None:
    """The list price of a model, matching dated ids (`claude-haiku-4-5-20251001`) by prefix."""
    mid = model_id(model)
    if mid in PRICES:
        return PRICES[mid]
    for known in sorted(PRICES, key=len, reverse=True):
        if mid.startswith(known + "-"):
            return PRICES[known]
    return None


#: The backends whose cost is counted by this table (Claude Code reports its own).
PRICED_BACKENDS = ("anthropic", "anthropic-batch")


def require_prices(backend: str | None, models: Iterable[str | None]) -> None:
    """A budget is kept only if every model a run may call has a price here:
    refused before any run exists (None is the backend's default model)."""
    if backend not in PRICED_BACKENDS:
        return
    unpriced = sorted({model_id(m) for m in models if price(m) is None})
    if unpriced:
        raise InputError(
            f"no list price is known for {', '.join(unpriced)}, so --budget-usd cannot be "
            "kept; use a model in the price table or drop the budget"
        )


def cost(model: str | None, tokens: Tokens) -> float | None:
    """USD for `tokens` at list price; None when the model is not in the table."""
    p = price(model)
    if p is None:
        return None
    total = (
        tokens.input * p.input
        + tokens.output * p.output
        + tokens.cache_write * p.cache_write
        + tokens.cache_read * p.cache_read
    )
    return total / 1_000_000
