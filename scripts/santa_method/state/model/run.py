"""A run's state as typed records: the run, its target, rounds, slots, gates, fixes.

Why typed, and why written out key by key: see `state/model/__init__.py`.
A run's `state.json` is read and changed under its lock by the faces
(`santa round`, `santa gate`, the hooks, the headless loop); `RunState`
says what it holds. `to_json` writes the keys in the order today's files
hold them, an optional group only when it is there, so a state loaded and
saved again is the same file, byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from santa_method.core.types import MergedIssue
from santa_method.state.model.reading import (
    StateError,
    bool_,
    get,
    int_,
    is_int,
    list_,
    obj,
    opt_int,
    opt_num,
    opt_obj,
    opt_str,
    opt_strs,
    str_,
    strs,
    top,
)

RUN_STATE_VERSION = 1


@dataclass
class Target:
    """What a run reviews: a file (`path`; `original` when the run reviews a
    working copy of it) or a git diff against `rev` in `cwd`."""

    kind: str
    path: str | None = None
    original: str | None = None
    rev: str | None = None
    cwd: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for key in ("path", "original", "rev", "cwd"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> Target:
        return cls(
            kind=str_(d, "kind", w),
            path=opt_str(d, "path", w),
            original=opt_str(d, "original", w),
            rev=opt_str(d, "rev", w),
            cwd=opt_str(d, "cwd", w),
        )


@dataclass
class Slot:
    """One reviewer's place in a round, once a reply fills it.

    A reply from a reviewer (the hook, the headless loop) carries its agent,
    transcript and cost (`agent_id` set); one handed to the gate as a file
    (`santa gate --review`) carries its `file`. The gate marks what it saw
    (`gated_valid`, `gated_verdict`): a gated slot is never refilled.
    """

    reply: str
    stored: str
    agent_id: str | None = None
    transcript_path: str = ""
    transcript_source: str = ""
    failed: bool = False
    errors: list[str] = field(default_factory=list)
    tokens: int | None = None
    cost_usd: float | None = None
    token_detail: dict[str, int] | None = None
    file: str | None = None
    gated_valid: bool | None = None
    gated_verdict: str | None = None
    model: str | None = None
    """The model that wrote the reply, as its backend or transcript says."""
    duration_s: float | None = None
    """How long the reviewer took (every ask of it), when known."""
    verdict: str | None = None
    """The verdict of a valid reply as the hook judged it when it stored it
    (set for a reply no slot could take, whose count depends on it)."""
    why_extra: str | None = None
    """Why the reply is extra: no slot could take it when it arrived."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"reply": self.reply}
        if self.agent_id is not None:
            data.update(
                agent_id=self.agent_id,
                transcript_path=self.transcript_path,
                transcript_source=self.transcript_source,
                failed=self.failed,
                errors=list(self.errors),
                tokens=self.tokens,
                cost_usd=self.cost_usd,
                token_detail=None if self.token_detail is None else dict(self.token_detail),
            )
        # Written only when known, so a state from before these keys loads
        # and saves again byte for byte.
        if self.model is not None:
            data["model"] = self.model
        if self.duration_s is not None:
            data["duration_s"] = self.duration_s
        if self.file is not None:
            data["file"] = self.file
        data["stored"] = self.stored
        if self.gated_valid is not None:
            data.update(gated_valid=self.gated_valid, gated_verdict=self.gated_verdict)
        for key in ("verdict", "why_extra"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> Slot:
        detail = obj(d, "token_detail", w, None) if d.get("token_detail") is not None else None
        if detail is not None and not all(is_int(v) and v >= 0 for v in detail.values()):
            raise StateError(f"{w}.token_detail holds a count that is not a whole number")
        return cls(
            reply=str_(d, "reply", w, ""),
            stored=str_(d, "stored", w, ""),
            agent_id=opt_str(d, "agent_id", w),
            transcript_path=str_(d, "transcript_path", w, ""),
            transcript_source=str_(d, "transcript_source", w, ""),
            failed=bool_(d, "failed", w, False),
            errors=strs(d, "errors", w, []),
            tokens=opt_int(d, "tokens", w),
            cost_usd=opt_num(d, "cost_usd", w),
            token_detail=None if detail is None else {str(k): v for k, v in detail.items()},
            file=opt_str(d, "file", w),
            gated_valid=None if d.get("gated_valid") is None else bool_(d, "gated_valid", w),
            gated_verdict=opt_str(d, "gated_verdict", w),
            model=opt_str(d, "model", w),
            duration_s=_duration(d, w),
            verdict=opt_str(d, "verdict", w),
            why_extra=opt_str(d, "why_extra", w),
        )


@dataclass
class Spawn:
    """One reviewer the PreToolUse guard let start (inside Claude Code): when,
    in which opening of its round (`opening`: the round's re-reviews then),
    the Agent call's id, and the reviewer whose reply answered it."""

    at: str
    opening: int
    id: str | None = None
    agent_id: str | None = None
    answered: str | None = None
    slot: str | None = None
    """The slot it was started for, in a run whose slots have models of
    their own (`RunState.slot_models`); None otherwise."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "at": self.at,
            "opening": self.opening,
            "id": self.id,
            "agent_id": self.agent_id,
            "answered": self.answered,
        }
        if self.slot is not None:
            data["slot"] = self.slot
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> Spawn:
        return cls(
            at=str_(d, "at", w),
            opening=int_(d, "opening", w, 0),
            id=opt_str(d, "id", w),
            agent_id=opt_str(d, "agent_id", w),
            answered=opt_str(d, "answered", w),
            slot=opt_str(d, "slot", w),
        )


def _duration(d: Mapping[str, Any], w: str) -> float | None:
    found = opt_num(d, "duration_s", w)
    if found is not None and not (math.isfinite(found) and found >= 0):
        raise StateError(f"{w}.duration_s is not a finite number of seconds of at least 0")
    return found


def _issue(d: Mapping[str, Any], w: str) -> MergedIssue:
    # Every field is checked here: `MergedIssue.from_json` trusts its input,
    # and a wrong type must be a StateError, never a crash of its reader.
    for key in ("criterion", "issue"):
        str_(d, key, w)
    for key in ("evidence", "source", "key"):
        str_(d, key, w, "")
    for key in ("quote", "missing", "location"):
        opt_str(d, key, w)
    strs(d, "flagged_by", w, [])
    for key in ("criteria", "quotes"):
        opt_strs(d, key, w)
    by = get(d, "criteria_by", w, lambda v: v is None or isinstance(v, dict), "an object", None)
    for label, named in (by or {}).items():
        if isinstance(named, list) and not all(isinstance(c, str) for c in named):
            raise StateError(f"{w}.criteria_by[{label!r}] is not a list of strings")
    return MergedIssue.from_json(dict(d))


@dataclass
class Gate:
    """One gate of a round: the verdict, what comes next, and why."""

    round: int
    verdict: str
    next: str
    issues: list[MergedIssue]
    suggestions: list[Any]
    agreement: float | None
    reasons: list[str]
    ts: str

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "verdict": self.verdict,
            "next": self.next,
            "issues": [i.to_json() for i in self.issues],
            "suggestions": list(self.suggestions),
            "agreement": self.agreement,
            "reasons": list(self.reasons),
            "ts": self.ts,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> Gate:
        return cls(
            round=int_(d, "round", w),
            verdict=str_(d, "verdict", w),
            next=str_(d, "next", w),
            issues=[
                _issue(i, f"{w}.issues[{n}]") for n, i in enumerate(list_(d, "issues", w, [], dict))
            ],
            suggestions=list(list_(d, "suggestions", w, [])),
            agreement=opt_num(d, "agreement", w),
            reasons=strs(d, "reasons", w, []),
            ts=str_(d, "ts", w, ""),
        )


@dataclass
class Round:
    """One round: the output under review (by its hash), the reviewers'
    assignment and instruction, the slots they fill, and its gates."""

    round: int
    opened: str
    canary: str
    boundary: str
    assignment: str
    instruction: str
    output_sha256: str
    open: bool
    rereviews: int
    capacity: int
    spawned: int
    slots: dict[str, Slot | None]
    gates: list[Gate] = field(default_factory=list)
    assignment_sha256: str | None = None
    spawn_ids: list[str] | None = None
    """Inside Claude Code: the reviewer spawns the guard let through."""
    spawns: list[Spawn] | None = None
    """Inside Claude Code: every reviewer the guard let start for this round,
    in all its openings (None in rounds older than the record)."""
    extras: dict[str, Slot] = field(default_factory=dict)
    """Replies from reviewers let start for this round that no slot could
    take (every slot had a reply, or the round was gated), by label."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "round": self.round,
            "opened": self.opened,
            "canary": self.canary,
            "boundary": self.boundary,
            "assignment": self.assignment,
            "instruction": self.instruction,
            "output_sha256": self.output_sha256,
            "open": self.open,
            "rereviews": self.rereviews,
            "capacity": self.capacity,
            "spawned": self.spawned,
            "slots": {k: None if s is None else s.to_json() for k, s in self.slots.items()},
            "gates": [g.to_json() for g in self.gates],
        }
        if self.assignment_sha256 is not None:
            data["assignment_sha256"] = self.assignment_sha256
        if self.spawn_ids is not None:
            data["spawn_ids"] = list(self.spawn_ids)
        if self.spawns is not None:
            data["spawns"] = [s.to_json() for s in self.spawns]
        if self.extras:
            data["extras"] = {k: s.to_json() for k, s in self.extras.items()}
        return data

    @classmethod
    def from_json(cls, d: Mapping[str, Any], w: str) -> Round:
        slots: dict[str, Slot | None] = {}
        for label, slot in obj(d, "slots", w).items():
            if slot is not None and not isinstance(slot, dict):
                raise StateError(f"{w}.slots[{label!r}] is not an object or null")
            slots[label] = None if slot is None else Slot.from_json(slot, f"{w}.slots[{label!r}]")
        return cls(
            round=int_(d, "round", w),
            opened=str_(d, "opened", w, ""),
            canary=str_(d, "canary", w),
            boundary=str_(d, "boundary", w),
            assignment=str_(d, "assignment", w),
            instruction=str_(d, "instruction", w, ""),
            output_sha256=str_(d, "output_sha256", w),
            open=bool_(d, "open", w),
            rereviews=int_(d, "rereviews", w, 0),
            capacity=int_(d, "capacity", w, len(slots)),
            spawned=int_(d, "spawned", w, 0),
            slots=slots,
            gates=[
                Gate.from_json(g, f"{w}.gates[{n}]")
                for n, g in enumerate(list_(d, "gates", w, [], dict))
            ],
            assignment_sha256=opt_str(d, "assignment_sha256", w),
            spawn_ids=opt_strs(d, "spawn_ids", w),
            spawns=None
            if d.get("spawns") is None
            else [
                Spawn.from_json(s, f"{w}.spawns[{n}]")
                for n, s in enumerate(list_(d, "spawns", w, of=dict))
            ],
            extras={
                label: Slot.from_json(s, f"{w}.extras[{label!r}]")
                for label, s in obj(d, "extras", w, {}).items()
                if _is_slot(s, f"{w}.extras[{label!r}]")
            },
        )


def _is_slot(value: Any, w: str) -> bool:
    if not isinstance(value, dict):
        raise StateError(f"{w} is not an object")
    return True


@dataclass
class Fix:
    """A fix the fixer made after a round (`santa log fix`)."""

    after_round: int
    ts: str

    def to_json(self) -> dict[str, Any]:
        return {"after_round": self.after_round, "ts": self.ts}


@dataclass
class LastGate:
    round: int
    verdict: str
    next: str

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "verdict": self.verdict, "next": self.next}


@dataclass
class Fixer:
    """The fixer's assignment of the round that asked for a fix."""

    round: int
    instruction: str
    assignment: str
    assignment_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "round": self.round,
            "instruction": self.instruction,
            "assignment": self.assignment,
        }
        if self.assignment_sha256 is not None:
            data["assignment_sha256"] = self.assignment_sha256
        return data


@dataclass
class Escalation:
    """Why a run was escalated; `questions` when the fixer asked a person."""

    round: int
    reasons: list[str]
    questions: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"round": self.round, "reasons": list(self.reasons)}
        if self.questions is not None:
            data["questions"] = [dict(q) for q in self.questions]
        return data


@dataclass
class RunState:
    """A run's `state.json`."""

    id: str
    created: str
    status: str
    """open, shipped or escalated."""
    target: Target
    rubric: str
    rubric_hash: str
    reviewers: int
    max_fixes: int
    budget_usd: float | None
    source: str
    """Where the reviews come from: hook, files or api (`state/sources.py`)."""
    models: list[str] | None
    pre_check: str | None
    cwd: str
    log: str
    boundary: str
    spec_sha256: str | None
    """The spec's and the rubric's hashes, which the run's files are held to
    (None in runs older than the check)."""
    rubric_md_sha256: str | None
    rounds: list[Round] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    last_gate: LastGate | None = None
    fixer: Fixer | None = None
    escalation: Escalation | None = None
    in_place: bool | None = None
    """Whether the fixes go to the user's file itself; None in runs older
    than the key (a resumed one decides from where its target is), which
    stay without it when saved again."""
    replayed: str | None = None
    """The recording a replayed run's replies came from (no model was
    called); None for a run whose backend answered."""
    slot_models: dict[str, str] | None = None
    """Inside Claude Code: the model each reviewer slot runs on, by label
    (only slots with a configured model); None when every reviewer inherits
    the session's model."""
    version: int = RUN_STATE_VERSION

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "created": self.created,
            "status": self.status,
            "target": self.target.to_json(),
            "rubric": self.rubric,
            "rubric_hash": self.rubric_hash,
            "reviewers": self.reviewers,
            "max_fixes": self.max_fixes,
            "budget_usd": self.budget_usd,
            "source": self.source,
            "models": None if self.models is None else list(self.models),
            "pre_check": self.pre_check,
            "cwd": self.cwd,
            "log": self.log,
            "boundary": self.boundary,
            "spec_sha256": self.spec_sha256,
            "rubric_md_sha256": self.rubric_md_sha256,
            "rounds": [r.to_json() for r in self.rounds],
            "fixes": [f.to_json() for f in self.fixes],
            "last_gate": None if self.last_gate is None else self.last_gate.to_json(),
            "fixer": None if self.fixer is None else self.fixer.to_json(),
            "escalation": None if self.escalation is None else self.escalation.to_json(),
        }
        if self.in_place is not None:
            data["in_place"] = self.in_place
        if self.replayed is not None:
            data["replayed"] = self.replayed
        if self.slot_models is not None:
            data["slot_models"] = dict(self.slot_models)
        return data

    @classmethod
    def from_json(cls, d: Any) -> RunState:
        """The state as a file holds it; StateError names what is wrong."""
        w = "state"
        d, version = top(d, RUN_STATE_VERSION)
        last = obj(d, "last_gate", w, None) if d.get("last_gate") is not None else None
        fixer = obj(d, "fixer", w, None) if d.get("fixer") is not None else None
        esc = obj(d, "escalation", w, None) if d.get("escalation") is not None else None
        return cls(
            version=version,
            id=str_(d, "id", w),
            created=str_(d, "created", w, ""),
            status=str_(d, "status", w),
            target=Target.from_json(obj(d, "target", w), f"{w}.target"),
            rubric=str_(d, "rubric", w, ""),
            rubric_hash=str_(d, "rubric_hash", w, ""),
            reviewers=int_(d, "reviewers", w),
            max_fixes=int_(d, "max_fixes", w),
            budget_usd=opt_num(d, "budget_usd", w),
            source=str_(d, "source", w),
            models=opt_strs(d, "models", w),
            pre_check=opt_str(d, "pre_check", w),
            cwd=str_(d, "cwd", w, ""),
            log=str_(d, "log", w),
            boundary=str_(d, "boundary", w, ""),
            spec_sha256=opt_str(d, "spec_sha256", w),
            rubric_md_sha256=opt_str(d, "rubric_md_sha256", w),
            rounds=[
                Round.from_json(r, f"{w}.rounds[{n}]")
                for n, r in enumerate(list_(d, "rounds", w, of=dict))
            ],
            fixes=[
                Fix(int_(f, "after_round", f"{w}.fixes[{n}]"), str_(f, "ts", f"{w}.fixes[{n}]", ""))
                for n, f in enumerate(list_(d, "fixes", w, [], dict))
            ],
            last_gate=None
            if last is None
            else LastGate(
                int_(last, "round", f"{w}.last_gate"),
                str_(last, "verdict", f"{w}.last_gate"),
                str_(last, "next", f"{w}.last_gate"),
            ),
            fixer=None
            if fixer is None
            else Fixer(
                round=int_(fixer, "round", f"{w}.fixer"),
                instruction=str_(fixer, "instruction", f"{w}.fixer", ""),
                assignment=str_(fixer, "assignment", f"{w}.fixer"),
                assignment_sha256=opt_str(fixer, "assignment_sha256", f"{w}.fixer"),
            ),
            escalation=None
            if esc is None
            else Escalation(
                round=int_(esc, "round", f"{w}.escalation"),
                reasons=strs(esc, "reasons", f"{w}.escalation", []),
                questions=None
                if esc.get("questions") is None
                else list(list_(esc, "questions", f"{w}.escalation", of=dict)),
            ),
            in_place=None if "in_place" not in d else bool_(d, "in_place", w),
            replayed=opt_str(d, "replayed", w),
            slot_models=_slot_models(d, w),
        )


def _slot_models(d: Mapping[str, Any], w: str) -> dict[str, str] | None:
    found = opt_obj(d, "slot_models", w)
    if found is not None and not all(isinstance(m, str) and m for m in found.values()):
        raise StateError(f"{w}.slot_models maps a slot to something that is not a model name")
    return None if found is None else {str(k): v for k, v in found.items()}
