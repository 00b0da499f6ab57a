"""The price table: aliases, dated ids and cache prices, as the notes list them."""

from __future__ import annotations

import pytest

from santa_method.core.errors import InputError
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


@pytest.mark.parametrize(
    ("model", "tokens", "usd"),
    [
        ("gpt-5.1", Tokens(input=1_000_000), 1.25),
        ("gpt-5.1", Tokens(output=1_000_000), 10.0),
        ("gpt-5.1", Tokens(cache_read=1_000_000), 0.125),  # cached input
        ("gpt-5.1-2025-11-13", Tokens(input=1_000_000), 1.25),  # the snapshot the API names
        ("gpt-5-mini", Tokens(input=1_000_000, output=1_000_000), 0.25 + 2.0),
        ("gpt-5-mini-2025-08-07", Tokens(cache_read=1_000_000), 0.025),
        ("gpt-5-nano", Tokens(output=1_000_000), 0.40),
        ("gemini-2.5-flash", Tokens(input=1_000_000, output=1_000_000), 0.30 + 2.50),
        ("gemini-2.5-pro", Tokens(input=200_000), 0.25),
        # A prompt over 200,000 tokens is priced at the long tier, all of it.
        ("gemini-2.5-pro", Tokens(input=300_000, output=1_000), (300_000 * 2.5 + 1_000 * 15) / 1e6),
        (
            "gemini-2.5-pro",
            Tokens(input=100_000, cache_read=150_000),
            (100_000 * 2.5 + 150_000 * 0.625) / 1e6,
        ),
    ],
)
def test_openai_and_gemini_list_prices(model: str, tokens: Tokens, usd: float) -> None:
    assert prices.cost(model, tokens, aliases=False) == pytest.approx(usd)


@pytest.mark.parametrize(
    "model", ["gpt-5-pro", "gpt-5.1-codex-max", "gemini-2.5-pro-preview", "sonnet"]
)
def test_only_a_date_may_follow_a_listed_name(model: str) -> None:
    """gpt-5-pro costs twelve times gpt-5: priced as gpt-5 it would let a
    budget be overspent, so a name is priced only as itself or a dated snapshot."""
    assert prices.price(model, aliases=False) is None


def test_the_projects_prices_come_first_and_reach_any_model() -> None:
    own = prices.custom_prices(
        {
            "llama3.1:8b": {"input": 0, "output": 0},
            "gpt-5.1": {"input": 2, "output": 20, "cache_read": 1},
        }
    )
    assert prices.cost("llama3.1:8b", Tokens(input=10**9, output=10**9), own, aliases=False) == 0.0
    assert prices.cost("gpt-5.1", Tokens(cache_read=1_000_000), own, aliases=False) == 1.0
    assert prices.cost("gpt-5.1-2025-11-13", Tokens(output=1_000_000), own, aliases=False) == 20.0
    assert prices.cost(
        "claude-mystery-9", Tokens(input=10), {"claude-mystery-9": prices.Price(1, 1)}
    ) == pytest.approx(1e-5)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"m": {"input": 1}}, "needs output"),
        ({"m": {"input": -1, "output": 1}}, "from 0 to 100000"),
        ({"m": {"input": float("nan"), "output": 1}}, "from 0 to 100000"),
        ({"m": {"input": 1, "output": 1, "cache": 1}}, "unknown part 'cache'"),
        ({"m": 3}, "must map input and output"),
        ([1], "maps model names"),
    ],
)
def test_a_price_a_person_gives_is_checked(given: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        prices.custom_prices(given)  # type: ignore[arg-type]


def test_a_budget_needs_a_price_for_every_call_a_priced_backend_makes() -> None:
    prices.require_prices([("anthropic", "sonnet"), ("openai", "gpt-5.1"), ("claude", "mystery")])
    with pytest.raises(
        InputError, match=r"no list price is known for openai:llama3\.1:8b, openai:sonnet and"
    ):
        # An alias of Claude Code's is no model name at an OpenAI-compatible endpoint.
        prices.require_prices(
            [("openai", "llama3.1:8b"), ("openai", "sonnet"), ("anthropic", None)]
        )
    prices.require_prices([("openai", "llama3.1:8b")], {"llama3.1:8b": prices.Price(0, 0)})
