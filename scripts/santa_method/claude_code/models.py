"""Which Claude model each reviewer slot runs on inside Claude Code, and what a reviewer spent.

Inside Claude Code a reviewer is a subagent, and the main agent picks its
model with the Agent tool's `model` parameter. That parameter takes only
the aliases in `AGENT_MODELS` (the Claude Code the tests run refuses a full
model id, and `inherit`, with an input error), so a slot's configured model
must be one of them, and the PreToolUse guard requires it on that slot's
call. What a reviewer spent is read from its own transcript (each assistant
message names its `model` and `usage`) and priced with the same table as
headless runs, so `budget_usd` holds here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from santa_method.core.errors import InputError
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import Tokens
from santa_method.state.config import Config

#: The models the Agent tool's `model` parameter takes.
AGENT_MODELS = ("haiku", "sonnet", "opus", "fable")
#: `BACKEND:MODEL` entries that mean a Claude model (inside Claude Code, the only kind).
CLAUDE_BACKENDS = ("anthropic", "claude")


def agent_model(entry: str, where: str) -> str:
    """The Agent tool's model for one configured entry (`haiku`,
    `anthropic:haiku`), or an InputError saying what a slot takes."""
    name = entry.strip()
    backend, colon, rest = name.partition(":")
    if colon:
        if backend.strip().lower() not in CLAUDE_BACKENDS:
            raise InputError(
                f"{where}: '{entry}' names the backend '{backend.strip()}', but inside Claude "
                "Code every reviewer is a Claude Code subagent on a Claude model "
                f"({', '.join(AGENT_MODELS)}); reviewers on other backends run headless "
                "(santa run)"
            )
        name = rest.strip()
    if name not in AGENT_MODELS:
        raise InputError(
            f"{where}: '{entry}' is not a model Claude Code's Agent tool takes; a reviewer "
            f"slot runs on one of {', '.join(AGENT_MODELS)} (the Agent tool refuses full "
            "model ids)"
        )
    return name


def slot_models(config: Config, labels: Sequence[str], where: str) -> dict[str, str] | None:
    """The model of each slot that has one configured, by label; None when
    no slot has (every reviewer inherits the session's model)."""
    found: dict[str, str] = {}
    for index, label in enumerate(labels):
        entry = config.model_for(index, label)
        if entry is not None:
            found[label] = agent_model(entry, where)
    return found or None


def require_prices(models: Mapping[str, str] | None, overrides: prices.Overrides | None) -> None:
    """With a budget, every configured model needs a price (the list's or the
    config's) before the run starts: the headless rule, as Claude Code bills
    at the API's prices."""
    prices.require_prices((("anthropic", m) for m in (models or {}).values()), overrides)


@dataclass(frozen=True)
class Spent:
    """What a reviewer's transcript says it spent: the model that answered
    (its last message's), every message's tokens once (None when no message
    says), and their list price (None when a message's model has no price or
    its usage cannot be read)."""

    model: str | None
    tokens: Tokens | None
    cost_usd: float | None


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _tokens(usage: Any) -> Tokens | None:
    if not isinstance(usage, Mapping):
        return None
    counts = [
        _count(usage, key)
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        )
    ]
    if any(c is None for c in counts):
        return None
    i, o, read, write = (int(c or 0) for c in counts)
    return Tokens(input=i, output=o, cache_read=read, cache_write=write)


def spent(records: Iterable[Mapping[str, Any]]) -> Spent:
    """Read model, tokens and cost from a transcript's assistant messages.

    Claude Code writes one record per content block of a message, each with
    the message's id and usage (the last one final), so a message counts once.
    """
    messages: dict[Any, Mapping[str, Any]] = {}
    for n, record in enumerate(records):
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, Mapping):
            continue
        model = message.get("model")
        if isinstance(model, str) and model.startswith("<"):
            continue  # "<synthetic>": a message Claude Code wrote itself, no call
        key = message.get("id") if isinstance(message.get("id"), str) else ("record", n)
        messages[key] = message
    tokens: Tokens | None = None
    cost, answered, known = 0.0, None, True
    for message in messages.values():
        model = message.get("model")
        model = model if isinstance(model, str) and model else None
        answered = model or answered
        counted = _tokens(message.get("usage"))
        if counted is None:
            known = False
            continue
        tokens = counted if tokens is None else tokens + counted
        price = prices.cost(model, counted) if model is not None else None
        if price is None:
            known = False
        else:
            cost += price
    return Spent(answered, tokens, cost if known and tokens is not None else None)


def session_model(records: Iterable[Mapping[str, Any]]) -> str | None:
    """The model the session's main agent runs on (its last assistant
    message says), which a reviewer without a model of its own inherits."""
    return spent(records).model
