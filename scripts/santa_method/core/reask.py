"""Re-asking a reviewer: the one policy every face follows.

A reply that is not a valid review goes back to its reviewer with the exact
errors, at most MAX_INVALID times; then it counts as a failed review. A
valid review whose quotes are not in the output goes back once
(MAX_QUOTES), because an unverified quote still blocks and sends the fixer
hunting for text that is not there. Headless, the loop sends the feedback as
a follow-up turn; inside Claude Code the SubagentStop hook blocks the
reviewer's stop with it. Both ask `next_ask` with the asks spent so far, so
the two faces ask the same reviewer the same things, in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from santa_method.core.review import unverified_quote_messages
from santa_method.core.types import ValidationResult

MAX_INVALID = 2
MAX_QUOTES = 1


@dataclass(frozen=True)
class Asks:
    """The re-asks one reviewer has had in its round: for an invalid reply, and for quotes."""

    invalid: int = 0
    quotes: int = 0

    @property
    def total(self) -> int:
        return self.invalid + self.quotes


#: No ask left: a reviewer whose run has ended is not asked again.
SPENT = Asks(MAX_INVALID, MAX_QUOTES)


@dataclass(frozen=True)
class Ask:
    """Send `feedback` to the reviewer (what is wrong: `reasons`); `asks`
    are its re-asks once it is sent."""

    feedback: str
    reasons: tuple[str, ...]
    asks: Asks


def invalid_feedback(errors: tuple[str, ...]) -> str:
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        "Your review is not valid and was not counted. Fix exactly these problems and "
        f"reply again with the review JSON only:\n{listed}"
    )


def quote_feedback(messages: list[str] | tuple[str, ...]) -> str:
    listed = "\n".join(f"- {m}" for m in messages)
    return (
        "Some quotes do not occur in the output under review. For each, copy the exact text "
        "from the output, or withdraw the issue; then reply with the whole review JSON "
        f"again:\n{listed}"
    )


def next_ask(result: ValidationResult, asks: Asks) -> Ask | None:
    """What to send the reviewer after `result`, or None: its reply stands
    (valid, or invalid with every re-ask spent: a failed review)."""
    if not result.valid:
        if asks.invalid >= MAX_INVALID:
            return None
        reasons = tuple(result.errors)
        return Ask(invalid_feedback(reasons), reasons, replace(asks, invalid=asks.invalid + 1))
    if result.review is None or asks.quotes >= MAX_QUOTES:
        return None
    messages = unverified_quote_messages(result.review)
    if not messages:
        return None
    return Ask(quote_feedback(messages), tuple(messages), replace(asks, quotes=asks.quotes + 1))
