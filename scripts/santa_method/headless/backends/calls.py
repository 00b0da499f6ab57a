"""What the API backends share, whichever SDK they call through.

Why apart: the Messages API backend (`anthropic.py`, and the Message
Batches one built on it) and the Chat Completions backend (`openai.py`)
send reviewers and the fixer the same words, ask the fixer for the same
JSON, and treat a reply whose connection broke after it began the same way
(sent again, as often as the SDK retries a call that fails before it
begins), so those rules live once.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from santa_method.core.errors import BackendError

REVIEWER_SYSTEM = (
    "You are a santa-method reviewer: independent, context-isolated, judging one output "
    "against a rubric. The assignment follows."
)
FIXER_SYSTEM = (
    "You are the santa-method fixer. Follow the fix assignment exactly and return the whole "
    "corrected output."
)
FIX_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "output": {
            "type": "string",
            "description": "The complete corrected output, every line, not a diff.",
        },
        "report": {
            "type": "array",
            "items": {"type": "string"},
            "description": "One line per flag: 'N. fixed: ...', 'N. not an issue: ...' or "
            "'N. needs input: <question>' (never invent a missing fact).",
        },
    },
    "required": ["output", "report"],
    "additionalProperties": False,
}
FIX_TAIL = (
    '\n\nReply with a JSON object: "output" holds the complete corrected output (the whole '
    'text, not a diff), "report" one line per flag.'
)

#: Seconds before the first new try after a cut reply (doubled each time,
#: as the SDKs' own retries wait). Each backend module binds its own name,
#: so a test can set one backend's to 0.
CUT_RETRY_DELAY = 0.5


class ReplyCut(BackendError):
    """The connection broke after the reply began, which the SDKs do not
    retry (they retry only what fails before the reply starts). Sending the
    call again may work."""


class Answer:
    """Whether the API's answer has begun: set once its status and headers are
    in. A connection that breaks after that cuts a reply. The SDKs raise the
    same connection error for it as for a host that cannot be reached (or
    let the HTTP client's own error through); only the moment tells the two
    apart."""

    def __init__(self) -> None:
        self.began = False


def on_tries(tries: int) -> str:
    """'once', 'on each of 3 tries': how often a cut call was sent."""
    return "once" if tries == 1 else f"on each of {tries} tries"


def detail(exc: BaseException) -> str:
    """An exception in a few words for a sentence: its type and first line."""
    text = str(exc).splitlines()[0][:160] if str(exc) else "no detail"
    return f"{type(exc).__name__}: {text}"


def transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP client's errors for a body that stopped arriving or cannot be
    decoded, from whichever client the installed SDK uses (httpx2, or httpx
    before it): SDK releases that do not wrap them let them through."""
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found += [module.TransportError, module.DecodingError]
    return tuple(found)


def read_fix(text: str) -> tuple[str, list[str]] | None:
    """The fixer's corrected output and report lines, or None for a reply that
    is not the JSON object it was asked for."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return None
    report = data.get("report") or []
    if not isinstance(report, list):
        report = [report]
    return data["output"], [str(line) for line in report]
