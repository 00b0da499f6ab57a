"""The one rule for numbers a person gives santa: finite and in range, or refused.

A limit that reads NaN turns itself off (`spent > nan` is never true) and
infinity is no limit at all, so every number from a flag, a config file,
`--data` or the Python API passes through a `Range` here before anything
runs. Each setting's range is named once below; the CLI wraps the same
ranges as argparse types (`cli/_io.number_arg`), the config file and the
API call `Range.check`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from santa_method.core.errors import InputError
from santa_method.core.types import MIN_REVIEWERS, TOO_FEW_REVIEWERS


class Range:
    """Whole or real numbers between `low` and `high` (inclusive unless `*_open`)."""

    __slots__ = ("high", "high_open", "hint", "low", "low_open", "too_low", "unit", "whole")

    def __init__(
        self,
        *,
        whole: bool,
        low: float | None = None,
        high: float | None = None,
        low_open: bool = False,
        high_open: bool = False,
        unit: str = "",
        hint: str = "",
        too_low: str = "",
    ) -> None:
        self.whole, self.low, self.high = whole, low, high
        self.low_open, self.high_open, self.unit, self.hint = low_open, high_open, unit, hint
        self.too_low = too_low  # the one sentence for a number below `low`, if it has one

    def describe(self) -> str:
        """'a whole number from 2 to 50', 'a number of seconds above 0 and at most 86400'."""
        kind = "a whole number" if self.whole else "a number"
        if self.unit:
            kind += f" of {self.unit}"
        parts = []
        if None not in (self.low, self.high) and not (self.low_open or self.high_open):
            return f"{kind} from {_num(self.low)} to {_num(self.high)}" + (  # type: ignore[arg-type]
                f" ({self.hint})" if self.hint else ""
            )
        if self.low is not None:
            parts.append(
                f"above {_num(self.low)}" if self.low_open else f"at least {_num(self.low)}"
            )
        if self.high is not None:
            parts.append(
                f"below {_num(self.high)}" if self.high_open else f"at most {_num(self.high)}"
            )
        text = kind + (" " + " and ".join(parts) if parts else "")
        return f"{text} ({self.hint})" if self.hint else text

    def check(self, value: Any, what: str) -> Any:
        """`value` itself if it is a finite number in range (an int where a
        whole number is wanted: 1.0 is refused); otherwise an InputError naming `what`."""
        kinds = int if self.whole else int | float
        if (
            isinstance(value, bool)
            or not isinstance(value, kinds)
            or (isinstance(value, float) and not math.isfinite(value))
            or not self._inside(value)
        ):
            raise InputError(
                f"{what} must be {self.describe()}, not {_show(value)}{self.why(value)}"
            )
        return value

    def why(self, value: Any) -> str:
        """': <the one sentence>' for a number below `low`, when the range has one."""
        below = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and self.low is not None
            and value < self.low
        )
        return f": {self.too_low}" if self.too_low and below else ""

    def parse(self, text: str, what: str) -> Any:
        """A number from command-line text ('3', '0.5', '1e3'), checked."""
        try:
            value: Any = int(text) if self.whole else float(text)
        except ValueError:  # also a whole number too long to read
            raise InputError(f"{what} must be {self.describe()}, not {text!r}") from None
        return self.check(value, what)

    def _inside(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (
            self.high is not None and (value >= self.high if self.high_open else value > self.high)
        )


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


# Every setting's range, named once. Upper bounds are far above any real use
# and there to refuse typos (`--reviewers 20000`) before anything is spent.
REVIEWERS = Range(whole=True, low=MIN_REVIEWERS, high=50, too_low=TOO_FEW_REVIEWERS)
MAX_FIXES = Range(whole=True, low=0, high=100)
BUDGET_USD = Range(whole=False, low=0, low_open=True, high=1_000_000, unit="US dollars")
TIMEOUT_S = Range(whole=False, low=0, low_open=True, high=86_400, unit="seconds")
POLL_INTERVAL_S = Range(whole=False, low=0, low_open=True, high=3_600, unit="seconds")
CONCURRENCY = Range(whole=True, low=1, high=256)
ROUND = Range(whole=True, low=1, high=1_000_000)
RESAMPLES = Range(whole=True, low=0, high=100)
SYSTEMIC_MIN = Range(whole=True, low=2, high=1_000_000_000)
SHARE = Range(whole=False, low=0, low_open=True, high=1, hint="0.15 means 15 %")
FRACTION = Range(whole=False, low=0, low_open=True, high=1, high_open=True, hint="0.05 means 5 %")
MIN_ITEMS = Range(whole=True, low=0, high=1_000_000_000)
SEED = Range(whole=True, low=-(2**63), high=2**63 - 1)
TOKENS = Range(whole=True, low=0, high=10**15)
COST_USD = Range(whole=False, low=0, high=1_000_000_000, unit="US dollars")
PRICE_PER_MTOK = Range(whole=False, low=0, high=100_000, unit="US dollars per million tokens")
PRICE_PARTS = ("input", "output", "cache_read", "cache_write")


def check_price(parts: Any, what: str) -> dict[str, float]:
    """One model's price as a person gives it (the config's `prices:`, the
    Python options' `prices`): `input` and `output` required, `cache_read`
    and `cache_write` optional, each in US dollars per million tokens."""
    if not isinstance(parts, Mapping):
        raise InputError(f"{what} must map input and output to prices, not {_show(parts)}")
    unknown = sorted(str(k) for k in parts if k not in PRICE_PARTS)
    if unknown:
        raise InputError(
            f"{what} has an unknown part '{unknown[0]}'; known parts: {', '.join(PRICE_PARTS)}"
        )
    missing = [k for k in ("input", "output") if k not in parts]
    if missing:
        raise InputError(f"{what} needs {' and '.join(missing)} (US dollars per million tokens)")
    return {k: float(PRICE_PER_MTOK.check(parts[k], f"{what} {k}")) for k in PRICE_PARTS if k in parts}


def check_usage(data: Mapping[str, Any], source: str) -> None:
    """The usage fields an event may carry (`tokens`, a map of token parts,
    `token_detail`, `cost_usd`): none negative, none NaN or infinite. Any
    other number anywhere in `data` must be finite."""
    tokens = data.get("tokens")
    if isinstance(tokens, Mapping):
        for part, value in tokens.items():
            TOKENS.check(value, f"{source} 'tokens.{part}'")
    elif tokens is not None:
        TOKENS.check(tokens, f"{source} 'tokens'")
    detail = data.get("token_detail")
    if isinstance(detail, Mapping):
        for part, value in detail.items():
            if value is not None:
                TOKENS.check(value, f"{source} 'token_detail.{part}'")
    if data.get("cost_usd") is not None:
        COST_USD.check(data["cost_usd"], f"{source} 'cost_usd'")
    _finite_everywhere(data, source)


def _finite_everywhere(value: Any, source: str) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise InputError(f"{source} holds {item!r}; every number must be finite")
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
