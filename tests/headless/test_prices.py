"""The price table: aliases, dated ids and cache prices, as the notes list them."""

from __future__ import annotations

import pytest

from santa_method.headless.backends import prices
from santa_method.headless.backends.base import Tokens


@pytest.mark.parametrize(
    ("model", "tokens", "usd"),
    [
        ("sonnet", Tokens(input=1_000_000), 2.0),
        ("sonnet", Tokens(output=1_000_000), 10.0),
        ("sonnet", Tokens(cache_read=1_000_000), 0.10),  # listed in the catalogue
        ("haiku", Tokens(cache_read=1_000_000), 0.01),  # 0.1x input otherwise
        ("opus", Tokens(cache_write=1_000_000), 5.0),  # 1.25x input
        ("claude-haiku-4-5-20251001", Tokens(input=1_000_000), 1.0),  # a dated id
    ],
)
def test_list_prices(model: str, tokens: Tokens, usd: float) -> None:
    assert prices.cost(model, tokens) == pytest.approx(usd)


def test_an_unknown_model_has_no_price() -> None:
    assert prices.cost("claude-unknown-9", Tokens(input=10)) is None
