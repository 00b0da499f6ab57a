"""The protocol a reviewer/fixer backend implements, and the values it trades.

Why a protocol and plain dataclasses: the loop must not care which model
answers, so another agent repository can plug in its own model in a few
lines, and the shipped backends (`anthropic`, `claude`) use exactly the
same contract (as plugins do in simonw/llm). A backend is stateless between
calls: a follow-up turn (a reply handed back with its errors) arrives as a
new request carrying the earlier exchange, plus an opaque `session` handle
the backend returned, so it may resume instead of replaying.

A custom backend, complete::

    from santa_method.headless.api import FixReply, ReviewReply, Tokens, VerifyOptions, verify_sync

    class MyBackend:
        name = "mine"

        async def review(self, request):
            text = await my_model(request.prefix + request.round_part, schema=request.schema)
            return ReviewReply(text=text, tokens=Tokens(), cost_usd=None, model="my-model")

        async def fix(self, request):
            new = await my_model(request.assignment + "\\nReturn the corrected output only.")
            return FixReply(output=new, notes="", tokens=Tokens(), cost_usd=None)

    result = verify_sync("The README must have a License section.", "README body...",
                         options=VerifyOptions(backend=MyBackend()))

Errors: raise `BackendError` (exit 3) with one sentence a person can act on
(no credentials, auth refused, overloaded, timed out). Never return a fake
PASS on failure: a reply that is not a review fails closed anyway.
What `review` and `fix` return is checked where the loop receives it
(`checked.py`): a ReviewReply or FixReply whose texts are strings (UTF-8,
no lone surrogates), whose `tokens` is a Tokens of whole numbers from 0
and whose `cost_usd` is None or a finite number from 0. Anything else is a
BackendError naming the backend, and the run is not shipped.

Optionally, `async def preflight(self) -> list[str]` names what the backend
lacks to start at all (a package, a key, a login), one sentence each. The
loop asks before any run or batch exists, so a setup problem is reported
whole and never counted as a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from santa_method.core.errors import BackendError, StartError

__all__ = [
    "Backend",
    "BackendError",
    "FixReply",
    "FixRequest",
    "FollowUp",
    "ReviewReply",
    "ReviewRequest",
    "Tokens",
    "missing_prerequisites",
    "require_prerequisites",
]


@dataclass(frozen=True)
class Tokens:
    """Token counts of one or more calls; cache reads and writes kept apart."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "total": self.total,
        }


@dataclass(frozen=True)
class FollowUp:
    """One earlier exchange of the same reviewer: what it said, what it was told."""

    reply: str
    feedback: str


@dataclass(frozen=True)
class ReviewRequest:
    """One reviewer call.

    `prefix` is shared by every reviewer and round of the run, byte for byte
    (instructions, rubric, spec): cache it if your API can. `round_part` is
    the output under review and the canary line, always last. `schema` is
    the strict review schema (the structured-output subset). `followups`
    is empty for a fresh reviewer; otherwise the backend continues the same
    conversation with them (or resumes `session`). `on_started`, when set,
    should be called once the model's answer has begun streaming (the loop
    uses it for --cache-warm); a backend that never calls it still works.
    """

    prefix: str
    round_part: str
    schema: dict[str, Any]
    model: str | None = None
    timeout: float | None = None
    read_only_tools: bool = True
    project_dir: str = "."
    label: str = ""
    followups: tuple[FollowUp, ...] = ()
    session: str | None = None
    on_started: Callable[[], None] | None = field(default=None, compare=False, repr=False)

    @property
    def assignment(self) -> str:
        """The whole assignment text, as a reviewer reading one file sees it."""
        return self.prefix + self.round_part


@dataclass(frozen=True)
class ReviewReply:
    """What a reviewer said: `obj` when the API returned parsed structured
    output, else `text` (prose and fences allowed; the helper extracts the
    object). `failure` marks a reply that is no review at all (e.g. the
    model never produced structured output): it counts as a failed review
    and is not re-asked."""

    text: str = ""
    obj: dict[str, Any] | None = None
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float | None = None
    model: str | None = None
    session: str | None = None
    failure: str | None = None


@dataclass(frozen=True)
class FixRequest:
    """One fixer call: the helper's fixer assignment (the output and only the
    merged flags) and the working copy the fix belongs in."""

    assignment: str
    target_path: str
    output: str
    model: str | None = None
    timeout: float | None = None
    project_dir: str = "."


@dataclass(frozen=True)
class FixReply:
    """`output` is the full corrected text, or None when the backend edited
    `target_path` in place. `notes` is the fixer's per-flag report."""

    output: str | None
    notes: str = ""
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float | None = None
    model: str | None = None


@runtime_checkable
class Backend(Protocol):
    """A reviewer and fixer. `name` appears in logs and the result."""

    name: str

    async def review(self, request: ReviewRequest) -> ReviewReply: ...

    async def fix(self, request: FixRequest) -> FixReply: ...


async def missing_prerequisites(backend: Any) -> list[str]:
    """What `backend` says it lacks to start (empty for one without `preflight`)."""
    check = getattr(backend, "preflight", None)
    return list(await check()) if check is not None else []


async def require_prerequisites(backend: Any, name: str | None = None) -> None:
    """Refuse to start (StartError, exit 3) naming every missing prerequisite at once."""
    missing = await missing_prerequisites(backend)
    if missing:
        name = name or getattr(backend, "name", "custom")
        raise StartError(f"the {name} backend cannot start: " + "; ".join(missing))
