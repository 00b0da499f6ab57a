"""The report object every CI format is written from: a run or a batch, read once.

Why one object: SARIF, JUnit, Code Climate and the PR comment must say the
same thing about the same problems (one fingerprint, one place, one
verdict), so they are pure functions of this object, and only this module
reads run and batch state. Places are computed from the real reviewed text
(a redacted quote would not be found); everything a person sees is then
redacted as the log is, and fingerprints are taken from the redacted text,
so no hash of a secret leaves either.

A problem is the gate's merged flag of a run's last gated round. Issue
shapes differ by version: a problem may carry `criteria` (primary first)
and `quotes`; older ones only `criterion` and `quote`. Both are read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError
from santa_method.core.files import read_exact
from santa_method.core.locate import Place, changed_paths, places_of
from santa_method.core.merge import readable_key
from santa_method.core.redact import redact, redact_text
from santa_method.core.types import Criterion, Issue
from santa_method.state import batches, store
from santa_method.state import report as run_report
from santa_method.state.model.run import RunState
from santa_method.state.rounds import describe
from santa_method.state.target import target_name

_QUESTION = re.compile(r"^\s*\d+[.)]\s*needs[ -]input\s*:\s*(.+?)\s*$", re.I | re.M)


@dataclass(frozen=True)
class Problem:
    """One merged problem (or, with `blocking` False, a reviewer's suggestion)."""

    criteria: tuple[str, ...]
    issue: str
    flagged_by: tuple[str, ...]
    evidence: str
    quotes: tuple[str, ...]
    missing: str | None
    places: tuple[Place, ...]
    blocking: bool
    fingerprint: str
    subject: str

    @property
    def rule(self) -> str:
        """The primary criterion: the rule a CI tool files the problem under."""
        return self.criteria[0] if self.criteria else "suggestion"

    def to_json(self) -> dict[str, Any]:
        return {
            "criteria": list(self.criteria),
            "criterion": self.rule,
            "issue": self.issue,
            "flagged_by": list(self.flagged_by),
            "evidence": self.evidence,
            "quotes": list(self.quotes),
            "missing": self.missing,
            "places": [p.to_json() for p in self.places],
            "blocking": self.blocking,
            "fingerprint": self.fingerprint,
            "subject": self.subject,
        }


@dataclass(frozen=True)
class RoundLine:
    round: int
    verdict: str | None
    next: str | None
    problems: int
    fix_notes: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "verdict": self.verdict,
            "next": self.next,
            "problems": self.problems,
            "fix_notes": self.fix_notes,
        }


@dataclass(frozen=True)
class Subject:
    """What one run verified: a file, a change (several files), or a batch item."""

    name: str
    run_id: str | None
    verdict: str
    next: str | None
    paths: tuple[str, ...]
    problems: tuple[Problem, ...] = ()
    suggestions: tuple[Problem, ...] = ()
    rounds: tuple[RoundLine, ...] = ()
    reasons: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    cost_usd: float | None = None
    tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "run_id": self.run_id,
            "verdict": self.verdict,
            "next": self.next,
            "paths": list(self.paths),
            "problems": [p.to_json() for p in self.problems],
            "suggestions": [p.to_json() for p in self.suggestions],
            "rounds": [r.to_json() for r in self.rounds],
            "reasons": list(self.reasons),
            "questions": list(self.questions),
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class Report:
    """A run (one subject) or a batch (a subject per verified item)."""

    kind: str
    id: str
    verdict: str
    next: str | None
    rubric: str
    criteria: tuple[Criterion, ...]
    subjects: tuple[Subject, ...]
    reasons: tuple[str, ...] = ()
    cost_usd: float | None = None
    tokens: int | None = None
    facts: tuple[tuple[str, str], ...] = ()
    """Lines a person reads under the verdict (a batch's guarantee, its estimate)."""
    version: str = ""
    legacy: dict[str, Any] = field(default_factory=dict, compare=False)
    """The existing report's JSON (`santa report --format json` keeps its keys)."""

    @property
    def problems(self) -> list[Problem]:
        return [p for s in self.subjects for p in s.problems]

    @property
    def suggestions(self) -> list[Problem]:
        return [p for s in self.subjects for p in s.suggestions]

    @property
    def questions(self) -> list[str]:
        return [q for s in self.subjects for q in s.questions]

    @property
    def rounds(self) -> int:
        return max((len({r.round for r in s.rounds}) for s in self.subjects), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "verdict": self.verdict,
            "next": self.next,
            "rubric": self.rubric,
            "criteria": [c.to_json() for c in self.criteria],
            "subjects": [s.to_json() for s in self.subjects],
            "reasons": list(self.reasons),
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
            "facts": [list(f) for f in self.facts],
        }


# --- building ----------------------------------------------------------------


def build(report_id: str) -> Report:
    """The report of a run or a batch: a batch id starts with `b-`."""
    if report_id.startswith("b-"):
        return build_batch(report_id)
    return build_run(report_id)


def fingerprint(
    path: str, criterion: str, quote: str | None, missing: str | None, issue: str
) -> str:
    """Stable across rounds and runs: the file, the primary criterion and the
    evidence (normalised as the gate compares it), never a line number, so a
    problem that recurs after an edit is still the same alert."""
    key = readable_key(Issue(criterion, issue, quote, missing))
    return hashlib.sha256(f"{path}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _relative(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(Path(path).resolve(), Path(root).resolve())
    except ValueError:
        return Path(path).as_posix()
    return Path(path).as_posix() if rel.startswith("..") else Path(rel).as_posix()


def _subject_paths(state: RunState, output: str) -> tuple[str, ...]:
    if state.target.kind == "file":
        return (_relative(target_name(state.target), state.cwd),)
    return tuple(changed_paths(output))


def _problem(
    state: RunState,
    output: str,
    paths: tuple[str, ...],
    flag: dict[str, Any],
    subject: str,
    blocking: bool = True,
) -> Problem:
    criteria = [str(c) for c in flag.get("criteria") or [] if c] or [str(flag["criterion"])]
    quotes = [str(q) for q in flag.get("quotes") or [] if q] or (
        [str(flag["quote"])] if flag.get("quote") else []
    )
    kept = tuple(places_of(flag, output, list(paths), diff=state.target.kind == "diff"))
    issue = redact_text(str(flag.get("issue") or ""))
    quotes_shown = tuple(redact_text(q) for q in quotes)
    missing = redact_text(flag["missing"]) if flag.get("missing") else None
    home = kept[0].path if kept else subject
    return Problem(
        criteria=tuple(criteria),
        issue=issue,
        flagged_by=tuple(str(x) for x in flag.get("flagged_by") or ()),
        evidence=str(flag.get("evidence") or "none"),
        quotes=quotes_shown,
        missing=missing,
        places=kept,
        blocking=blocking,
        fingerprint=fingerprint(
            home, criteria[0], quotes_shown[0] if quotes_shown else None, missing, issue
        ),
        subject=subject,
    )


def _suggestion(paths: tuple[str, ...], text: str, subject: str) -> Problem:
    shown = redact_text(text)
    home = paths[0] if paths else subject
    return Problem(
        criteria=(),
        issue=shown,
        flagged_by=(),
        evidence="none",
        quotes=(),
        missing=None,
        places=(Place(home),) if paths else (),
        blocking=False,
        fingerprint=fingerprint(home, "suggestion", None, None, shown),
        subject=subject,
    )


def questions_of(fixes: list[dict[str, Any]]) -> list[str]:
    """The fixer's `needs input` questions: a `questions` list when the fix
    record has one, else its report's `<n>. needs input: ...` lines."""
    found: list[str] = []
    for fix in fixes:
        listed = fix.get("questions")
        if isinstance(listed, list):
            found += [
                str(q.get("question") if isinstance(q, dict) else q)
                for q in listed
                if str(q.get("question") if isinstance(q, dict) else q).strip()
            ]
            continue
        notes = fix.get("notes") or fix.get("changed") or ""
        found += _QUESTION.findall(notes if isinstance(notes, str) else "")
    return [redact_text(q) for q in dict.fromkeys(found)]


def _verdict(state: RunState) -> tuple[str, str | None]:
    last = state.last_gate
    if state.status == "shipped":
        return "NICE", None
    if state.status == "escalated":
        return "ESCALATED", "escalate"
    if not last:
        return "OPEN", describe(state.id)["next_step"]
    return last.verdict, last.next


def run_subject(run_id: str, name: str | None = None, path: str | None = None) -> Subject:
    """One run as a subject; `path` (a batch item's file) replaces its target's."""
    try:
        state = store.load_state(run_id)
    except store.StateUnreadable:
        return _unreadable_subject(run_id, run_report.build(run_id), name, path)
    legacy = run_report.build(run_id)
    folder = store.run_dir(run_id)
    gated = [r for r in state.rounds if r.gates]
    last = gated[-1] if gated else state.rounds[-1]
    output_file = folder / f"round-{last.round}" / "output.txt"
    output = read_exact(output_file, "replace") if output_file.exists() else ""
    paths = (_relative(path, state.cwd),) if path is not None else _subject_paths(state, output)
    if name is not None:
        title = name
    elif state.target.kind == "file":
        title = paths[0]
    else:
        title = legacy["target"]
    verdict, step = _verdict(state)
    gate = last.gates[-1] if last.gates else None
    problems: tuple[Problem, ...] = ()
    if gate is not None and gate.verdict == "NAUGHTY" and verdict != "NICE":
        # Each problem as the gate's JSON holds it (core/locate.py reads that).
        problems = tuple(_problem(state, output, paths, f.to_json(), title) for f in gate.issues)
    suggestions = tuple(
        _suggestion(paths, str(s), title) for s in (gate.suggestions if gate is not None else [])
    )
    rounds = _round_lines(legacy)
    cost = legacy["cost"]
    return Subject(
        name=title,
        run_id=run_id,
        verdict=verdict,
        next=step,
        paths=paths,
        problems=problems,
        suggestions=suggestions,
        rounds=rounds,
        reasons=tuple(legacy["escalation_reasons"]),
        questions=tuple(
            questions_of([*legacy["fixes"], {"questions": legacy.get("questions") or []}])
        ),
        cost_usd=cost["usd"],
        tokens=cost["tokens"],
    )


def _round_lines(legacy: dict[str, Any]) -> tuple[RoundLine, ...]:
    """Each round of a run's report (`state/report.py`), in a line."""
    return tuple(
        RoundLine(
            round=r["round"],
            verdict=r["verdict"],
            next=r["next"],
            problems=len(r["flags"]),
            fix_notes=(r["fix"] or {}).get("notes") or (r["fix"] or {}).get("changed"),
        )
        for r in legacy["rounds"]
    )


def _criteria(data: Any) -> tuple[Criterion, ...]:
    from santa_method.core.rubric import rubric_from_json

    return rubric_from_json(data).criteria


def _version() -> str:
    from santa_method import __version__

    return __version__


def build_run(run_id: str) -> Report:
    try:
        state = store.load_state(run_id)
    except store.StateUnreadable:
        return _unreadable_run(run_id)
    subject = run_subject(run_id)
    rubric = json.loads((store.run_dir(run_id) / "rubric.json").read_text(encoding="utf-8"))
    legacy = run_report.build(run_id)
    return Report(
        kind="run",
        id=run_id,
        verdict=subject.verdict,
        next=subject.next,
        rubric=state.rubric,
        criteria=_criteria(rubric),
        subjects=(subject,),
        reasons=subject.reasons,
        cost_usd=subject.cost_usd,
        tokens=subject.tokens,
        facts=_replayed_facts(legacy) + _jury_facts(legacy),
        version=_version(),
        legacy=legacy,
    )


def _replayed_facts(legacy: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A replayed run says so under its verdict, in every format."""
    folder = legacy.get("replayed")
    if not isinstance(folder, str):
        return ()
    return (("replayed", run_report.replayed_sentence(folder).split(" ", 1)[1]),)


def _jury_facts(legacy: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Who reviewed (each reviewer's model and family) and the one-mind
    warning, under the verdict in every format (`state/report.py` finds them)."""
    jury = legacy.get("jury") or []
    facts = []
    if jury:
        named = [
            f"{j['label']} {j.get('model') or 'default model'} ({j['family']})" for j in jury
        ]
        facts.append(("reviewers", ", ".join(named)))
    facts += [("warning", str(w)) for w in legacy.get("warnings") or []]
    return tuple(facts)


def _unreadable_subject(
    run_id: str, legacy: dict[str, Any], name: str | None = None, path: str | None = None
) -> Subject:
    """A run whose state cannot be read, as its report (`state/report.py`,
    `legacy`) rebuilds it from the log: a verdict and the reasons, no places."""
    verdict, step = {
        "shipped": ("NICE", None),
        "escalated": ("ESCALATED", "escalate"),
        "reported": ("NAUGHTY", "report"),
    }.get(legacy["status"], ("OPEN", None))
    why = f"its state cannot be read: {legacy['state_unreadable']}"
    return Subject(
        name=name if name is not None else legacy["target"],
        run_id=run_id,
        verdict=verdict,
        next=step,
        paths=(path,) if path is not None else (),
        rounds=_round_lines(legacy),
        reasons=(*legacy["escalation_reasons"], why),
        cost_usd=legacy["cost"]["usd"],
        tokens=legacy["cost"]["tokens"],
    )


def _unreadable_run(run_id: str) -> Report:
    legacy = run_report.build(run_id)
    subject = _unreadable_subject(run_id, legacy)
    try:
        criteria = _criteria(json.loads((store.run_dir(run_id) / "rubric.json").read_bytes()))
    except (OSError, ValueError, InputError):
        criteria = ()
    return Report(
        kind="run",
        id=run_id,
        verdict=subject.verdict,
        next=subject.next,
        rubric=legacy["rubric"],
        criteria=criteria,
        subjects=(subject,),
        reasons=subject.reasons,
        cost_usd=subject.cost_usd,
        tokens=subject.tokens,
        version=_version(),
        legacy=legacy,
    )


def build_batch(batch_id: str) -> Report:
    state = batches.load(batch_id)
    report_file = batches.batch_dir(batch_id) / "report.json"
    legacy: dict[str, Any] = {}
    if report_file.exists():
        try:
            legacy = json.loads(report_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"the report of batch '{batch_id}' is unreadable: {exc}") from None
    paths = {i.id: i.path for i in state.items}
    subjects = []
    for wave in state.waves:
        for item, outcome in wave.outcomes.items():
            run_id = outcome.run_id
            if run_id and (store.run_dir(run_id) / "state.json").exists():
                subjects.append(run_subject(run_id, name=item, path=paths.get(item)))
            else:
                status = outcome.status
                subjects.append(
                    Subject(
                        name=item,
                        run_id=run_id,
                        verdict="NICE" if status in ("passed", "fixed") else "ESCALATED",
                        next=None,
                        paths=(path,) if (path := paths.get(item)) else (),
                        reasons=tuple(r for r in [outcome.reason] if r),
                        cost_usd=outcome.cost_usd,
                    )
                )
    verdict = str(state.verdict or legacy.get("verdict") or "OPEN")
    facts = tuple(
        (label, str(legacy[key]))
        for label, key in (
            ("guarantee", "guarantee"),
            ("estimate", "estimate_statement"),
            ("seed", "seed"),
        )
        if legacy.get(key) is not None
    )
    return Report(
        kind="batch",
        id=batch_id,
        verdict=verdict,
        next="accept"
        if verdict == "ACCEPTED"
        else ("escalate" if verdict == "ESCALATED" else None),
        rubric=str(state.options.rubric.get("name", "")),
        criteria=_criteria(state.options.rubric),
        subjects=tuple(subjects),
        reasons=tuple(redact(list(state.reasons or legacy.get("reasons") or []))),
        cost_usd=state.cost_usd,
        tokens=state.tokens.get("total"),
        facts=tuple(redact(list(facts))),
        version=_version(),
        legacy=redact(legacy),
    )


def with_places(
    run_id: str, round_number: int, issues: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The gate's issues of a round, each with `places`: its file and lines
    (for a change, the changed file and the line in the new version)."""
    state = store.load_state(run_id)
    output_file = store.run_dir(run_id) / f"round-{round_number}" / "output.txt"
    output = read_exact(output_file, "replace") if output_file.exists() else ""
    paths = list(_subject_paths(state, output))
    diff = state.target.kind == "diff"
    return [
        {**issue, "places": [p.to_json() for p in places_of(issue, output, paths, diff=diff)]}
        for issue in issues
    ]
