"""A run's state as typed records: the run, its target, rounds, slots, gates, fixes.

A run's `state.json` is read and changed under its lock by the faces
(`santa round`, `santa gate`, the hooks, the headless loop); `RunState`
says what it holds. The fields are declared in the order the files hold
their keys, and `reading.py` converts them (how a field's declaration says
when its key is written: see there).
Their annotations are evaluated at import (no `from __future__ import
annotations`): kept as strings, they would be compiled again by every hook
process on its first load.
"""

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from santa_method.core.types import MergedIssue
from santa_method.state.model.reading import Record, Refusal, along, kept

RUN_STATE_VERSION = 1


@dataclass
class Target(Record):
    """What a run reviews: a file (`path`; `original` when the run reviews a
    working copy of it) or a git diff against `rev` in `cwd`."""

    kind: str
    path: str | None = None
    original: str | None = None
    rev: str | None = None
    cwd: str | None = None


def _counts(detail: dict[str, int]) -> bool:
    return all(v >= 0 for v in detail.values())


def _seconds(found: float) -> bool:
    return 0 <= found < math.inf  # a whole number too big for a float is finite too


Counts = Annotated[dict[str, int], Refusal("holds a count that is not a whole number", _counts)]
Seconds = Annotated[float, Refusal("is not a finite number of seconds of at least 0", _seconds)]


@dataclass(kw_only=True)
class Slot(Record):
    """One reviewer's place in a round, once a reply fills it.

    A reply from a reviewer (the hook, the headless loop) carries its agent,
    transcript and cost (`agent_id` set); one handed to the gate as a file
    (`santa gate --review`) carries its `file`. The gate marks what it saw
    (`gated_valid`, `gated_verdict`): a gated slot is never refilled.
    """

    reply: str = kept("")
    agent_id: str | None = None
    transcript_path: str = along("agent_id", "")
    transcript_source: str = along("agent_id", "")
    failed: bool = along("agent_id", False)
    errors: list[str] = along("agent_id", list)
    tokens: int | None = along("agent_id")
    cost_usd: float | None = along("agent_id")
    token_detail: Counts | None = along("agent_id")
    model: str | None = None
    """The model that wrote the reply, as its backend or transcript says."""
    duration_s: Seconds | None = None
    """How long the reviewer took (every ask of it), when known."""
    file: str | None = None
    stored: str = kept("")
    gated_valid: bool | None = None
    gated_verdict: str | None = along("gated_valid")
    verdict: str | None = None
    """The verdict of a valid reply as the hook judged it when it stored it
    (set for a reply no slot could take, whose count depends on it)."""
    why_extra: str | None = None
    """Why the reply is extra: no slot could take it when it arrived."""


@dataclass(kw_only=True)
class Spawn(Record):
    """One reviewer the PreToolUse guard let start (inside Claude Code): when,
    in which opening of its round (`opening`: the round's re-reviews then),
    the Agent call's id, and the reviewer whose reply answered it."""

    at: str
    opening: int = kept(0)
    id: str | None = kept(None)
    agent_id: str | None = kept(None)
    answered: str | None = kept(None)
    slot: str | None = None
    """The slot it was started for, in a run whose slots have models of
    their own (`RunState.slot_models`); None otherwise."""


class _IssueKeys(TypedDict):
    criterion: str
    issue: str


class IssueJSON(_IssueKeys, total=False):
    """A merged problem as a gate's JSON holds it (`MergedIssue.to_json`)."""

    quote: str | None
    missing: str | None
    location: str | None
    evidence: str
    flagged_by: list[str]
    source: str
    key: str
    criteria: list[str] | None
    quotes: list[str] | None
    criteria_by: dict[str, list[str]] | None


@dataclass
class Gate(Record):
    """One gate of a round: the verdict, what comes next, and why."""

    round: int
    verdict: str
    next: str
    issues: list[Annotated[MergedIssue, IssueJSON]] = kept(list)
    suggestions: list[Any] = kept(list)
    agreement: float | None = kept(None)
    reasons: list[str] = kept(list)
    ts: str = kept("")


@dataclass(kw_only=True)
class Round(Record):
    """One round: the output under review (by its hash), the reviewers'
    assignment and instruction, the slots they fill, and its gates."""

    round: int
    opened: str = kept("")
    canary: str
    boundary: str
    assignment: str
    instruction: str = kept("")
    output_sha256: str
    open: bool
    rereviews: int = kept(0)
    capacity: int
    spawned: int = kept(0)
    slots: dict[str, Slot | None]
    gates: list[Gate] = kept(list)
    assignment_sha256: str | None = None
    spawn_ids: list[str] | None = None
    """Inside Claude Code: the reviewer spawns the guard let through."""
    spawns: list[Spawn] | None = None
    """Inside Claude Code: every reviewer the guard let start for this round,
    in all its openings (None in rounds older than the record)."""
    extras: dict[str, Slot] = field(default_factory=dict)
    """Replies from reviewers let start for this round that no slot could
    take (every slot had a reply, or the round was gated), by label."""


@dataclass
class Fix(Record):
    """A fix the fixer made after a round (`santa log fix`)."""

    after_round: int
    ts: str = kept("")


@dataclass
class LastGate(Record):
    round: int
    verdict: str
    next: str


@dataclass(kw_only=True)
class Fixer(Record):
    """The fixer's assignment of the round that asked for a fix."""

    round: int
    instruction: str = kept("")
    assignment: str
    assignment_sha256: str | None = None


@dataclass
class Escalation(Record):
    """Why a run was escalated; `questions` when the fixer asked a person."""

    round: int
    reasons: list[str] = kept(list)
    questions: list[dict[str, Any]] | None = None


@dataclass(kw_only=True)
class RunState(Record):
    """A run's `state.json`."""

    version: int = kept(RUN_STATE_VERSION)
    id: str
    created: str = kept("")
    status: str
    """open, shipped or escalated."""
    target: Target
    rubric: str = kept("")
    rubric_hash: str = kept("")
    reviewers: int
    max_fixes: int
    budget_usd: float | None = kept(None)
    source: str
    """Where the reviews come from: hook, files or api (`state/sources.py`)."""
    models: list[str] | None = kept(None)
    pre_check: str | None = kept(None)
    cwd: str = kept("")
    log: str
    boundary: str = kept("")
    spec_sha256: str | None = kept(None)
    """The spec's and the rubric's hashes, which the run's files are held to
    (None in runs older than the check)."""
    rubric_md_sha256: str | None = kept(None)
    rounds: list[Round]
    fixes: list[Fix] = kept(list)
    last_gate: LastGate | None = kept(None)
    fixer: Fixer | None = kept(None)
    escalation: Escalation | None = kept(None)
    in_place: bool | None = None
    """Whether the fixes go to the user's file itself; None in runs older
    than the key (a resumed one decides from where its target is), which
    stay without it when saved again."""
    replayed: str | None = None
    """The recording a replayed run's replies came from (no model was
    called); None for a run whose backend answered."""
    author_model: str | None = None
    """The model that wrote the output under review, when the run was told."""
    slot_models: dict[str, str] | None = None
    """Inside Claude Code: the model each reviewer slot runs on, by label
    (only slots with a configured model); None when every reviewer inherits
    the session's model."""
