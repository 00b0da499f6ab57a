"""The escalation report: what a person needs to take over a run.

Written automatically when a run escalates (`.santa/runs/<id>/report.md`
and `report.json`), and on demand (`santa report`). Everything in it passes
through redaction: it is meant for people and may be pasted into tickets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from santa_method.core.files import read_exact
from santa_method.core.redact import redact
from santa_method.state import log as runlog
from santa_method.state import unreadable
from santa_method.state.atomic import replace_text
from santa_method.state.history import outcome
from santa_method.state.model.run import RunState
from santa_method.state.store import StateUnreadable, load_state, run_dir
from santa_method.state.target import target_name, working_copy
from santa_method.state.unreviewed import describe as describe_fix
from santa_method.state.unreviewed import unreviewed_fix

_META = ("run_id", "event", "ts")


def _tokens(value: Any) -> int | None:
    """`tokens` is an integer total; a map of integer parts is tolerated."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        total = value.get("total")  # a map with its own total: the parts are already in it
        if isinstance(total, int) and not isinstance(total, bool):
            return total
        parts = [v for v in value.values() if isinstance(v, int) and not isinstance(v, bool)]
        return sum(parts) if parts else None
    return None


def _findings(
    records: list[dict[str, Any]], rounds: list[dict[str, Any]], fixes: list[Any]
) -> dict[str, Any]:
    """What a report says of the rounds, whether the run's state was read or
    only its log: the last verdict's open flags (an unverified quote apart,
    as a suspected false alarm), the rounds, fixes, waivers and cost."""
    last = next((r for r in reversed(rounds) if r["verdict"] is not None), None)
    unresolved = last["flags"] if last and last["verdict"] == "NAUGHTY" else []
    return {
        "unresolved": [f for f in unresolved if f.get("evidence") != "unverified"],
        "suspected_false_positives": [f for f in unresolved if f.get("evidence") == "unverified"],
        "rounds": rounds,
        "fixes": fixes,
        "waived": [
            {k: v for k, v in rec.items() if k not in _META}
            for rec in records
            if rec.get("event") == "waive"
        ],
        "cost": _cost(records),
        "unreviewed_fix": None,
    }


def _cost(records: list[dict[str, Any]]) -> dict[str, Any]:
    tokens: int | None = None
    spent: dict[str, float | None] = {"verification": None, "generation": None}
    for rec in records:
        kind = "generation" if rec.get("event") == "generate" else "verification"
        if rec.get("event") not in ("review", "fix", "generate"):
            continue
        n = _tokens(rec.get("tokens"))
        if n is not None:
            tokens = (tokens or 0) + n
        usd = runlog.as_number(rec.get("cost_usd"))
        if usd is not None:
            spent[kind] = (spent[kind] or 0.0) + usd
    total: float | None = None
    if spent["verification"] is not None or spent["generation"] is not None:
        total = (spent["verification"] or 0.0) + (spent["generation"] or 0.0)
    return {
        "tokens": tokens,
        "usd": None if total is None else round(total, 6),
        "verification_usd": None
        if spent["verification"] is None
        else round(spent["verification"], 6),
        "generation_usd": None if spent["generation"] is None else round(spent["generation"], 6),
    }


def _jury(state: RunState) -> tuple[list[dict[str, Any]], list[str]]:
    """Each reviewer's slot, backend, model and family, from the replies
    that filled its slot last (the model that answered) or else the run's
    models list; and the warning when all of them share the family of the
    model that wrote the output (`core/reviewers.py`, as `santa run` says it)."""
    from santa_method.core.errors import InputError
    from santa_method.core.reviewers import juror, one_mind, parse_entry

    jurors = []
    labels = list(state.rounds[0].slots) if state.rounds else []
    for i, label in enumerate(labels):
        backend = model = None
        if state.models and i < len(state.models) and state.models[i]:
            try:
                backend, model = parse_entry(state.models[i])
            except InputError:  # an entry of an older santa: shown as it is
                model = state.models[i]
        for r in reversed(state.rounds):
            slot = r.slots.get(label)
            if slot is not None and slot.agent_id:
                model = slot.model or model
                if state.source == "api":  # the loop names the backend first
                    backend = slot.agent_id.split(":", 1)[0]
                break
        jurors.append(juror(label, backend, model))
    warning = one_mind(jurors, state.author_model)
    shown = [
        {"label": j.label, "backend": j.backend, "model": j.model, "family": j.family}
        for j in jurors
    ]
    return shown, [warning] if warning else []


def build(run_id: str) -> dict[str, Any]:
    """The report as data, redacted; `santa report --format json` prints this."""
    try:
        state = load_state(run_id)
    except StateUnreadable as exc:
        return _unreadable(run_id, exc.reason)
    folder = run_dir(run_id)
    records = [r for r in runlog.read(state.log).records if r.get("run_id") == run_id]
    fixes = [
        {k: v for k, v in rec.items() if k not in _META}
        for rec in records
        if rec.get("event") == "fix"
    ]
    fixes_by_round = {f.get("iteration"): f for f in fixes}
    rounds: list[dict[str, Any]] = []
    for r in state.rounds:
        final = r.gates[-1] if r.gates else None
        fix = fixes_by_round.get(r.round)
        rounds.append(
            {
                "round": r.round,
                "verdict": final.verdict if final else None,
                "next": final.next if final else None,
                "flags": [i.to_json() for i in final.issues] if final else [],
                "reasons": list(final.reasons) if final else [],
                "gates": len(r.gates),
                "rereviews": r.rereviews,
                "fix": None
                if fix is None
                else {k: v for k, v in fix.items() if k not in ("iteration",)},
            }
        )
    last_round = state.rounds[-1].round
    output_file = folder / f"round-{last_round}" / "output.txt"
    escalation = state.escalation
    reasons = list(escalation.reasons) if escalation else []
    questions = list(escalation.questions or []) if escalation else []
    if not reasons:
        reasons = [r["reason"] for r in records if r.get("event") == "escalate" and r.get("reason")]
    jury, warnings = _jury(state)
    report = {
        "run_id": run_id,
        "status": state.status,
        "target": target_name(state.target),
        "working_copy": working_copy(state.target),
        "source": state.source,
        "replayed": state.replayed,
        "rubric": state.rubric,
        "reviewers": state.reviewers,
        "jury": jury,
        "author_model": state.author_model,
        "warnings": warnings,
        "max_fixes": state.max_fixes,
        "budget_usd": state.budget_usd,
        "escalation_reasons": reasons,
        "questions": questions,
        "spec": read_exact(folder / "spec.md", "replace"),
        "output": read_exact(output_file, "replace") if output_file.exists() else "",
        **_findings(records, rounds, fixes),
    }
    found = unreviewed_fix(state) if state.status != "shipped" else None
    if found is not None:
        report["unreviewed_fix"] = {**found.to_json(), "sentence": describe_fix(found)}
    return redact(report)


def _unreadable(run_id: str, why: str) -> dict[str, Any]:
    """The report of a run whose state cannot be read, from what is left:
    the log (its start, gates, fixes and escalation), the run folder's spec
    and last output. `state_unreadable` says why; no fix can be named."""
    folder = run_dir(run_id)
    records = unreadable.records(run_id, unreadable.log_path(run_id))
    start = next((r for r in records if r.get("event") == "run"), {})
    status = outcome(records)
    fixes = [
        {k: v for k, v in r.items() if k not in _META} for r in records if r.get("event") == "fix"
    ]
    by_round = {f.get("iteration"): f for f in fixes}
    gates: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        if rec.get("event") == "gate" and isinstance(rec.get("iteration"), int):
            gates.setdefault(rec["iteration"], []).append(rec)
    rounds: list[dict[str, Any]] = []
    for number, held in sorted(gates.items()):
        final = held[-1]
        flags = [f for f in final.get("issues") or [] if isinstance(f, dict)]
        rounds.append(
            {
                "round": number,
                "verdict": final.get("verdict"),
                "next": final.get("next"),
                "flags": flags,
                "reasons": [str(r) for r in final.get("reasons") or []],
                "gates": len(held),
                "rereviews": 0,
                "fix": None
                if (fix := by_round.get(number)) is None
                else {k: v for k, v in fix.items() if k != "iteration"},
            }
        )
    latest = unreadable.last_round(run_id)
    output_file = folder / f"round-{latest}" / "output.txt"
    spec_file = folder / "spec.md"
    reasons = [
        str(r["reason"]) for r in records if r.get("event") == "escalate" and r.get("reason")
    ]
    report = {
        "run_id": run_id,
        "status": {"nice": "open"}.get(status, status),
        "target": str(start.get("target") or "?"),
        "working_copy": start.get("working_copy")
        if isinstance(start.get("working_copy"), str)
        else None,
        "source": start.get("source"),
        "replayed": start.get("replayed") if isinstance(start.get("replayed"), str) else None,
        "rubric": str(start.get("rubric") or "?"),
        "reviewers": start.get("reviewers"),
        "max_fixes": start.get("max_fixes"),
        "budget_usd": None,
        "escalation_reasons": reasons,
        "questions": [],
        "spec": read_exact(spec_file, "replace") if spec_file.is_file() else "",
        "output": read_exact(output_file, "replace") if output_file.is_file() else "",
        **_findings(records, rounds, fixes),
        "state_unreadable": why,
    }
    return redact(report)


def replayed_sentence(folder: str) -> str:
    """What every report says of a replayed run."""
    return (
        f"replayed from the recording {_inline(folder)}: every reply is a recorded one, "
        "no model was called"
    )


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(4, longest + 1)


def _inline(text: str) -> str:
    text = " ".join(str(text).split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {text} {ticks}" if longest else f"`{text}`"


def _flag_md(flag: dict[str, Any]) -> str:
    who = ", ".join(flag.get("flagged_by", [])) or "?"
    line = f"- **[{flag['criterion']}]** {flag['issue']} (flagged by {who})"
    others = [c for c in flag.get("criteria") or [] if c != flag["criterion"]]
    if others:
        line += f"\n  - also breaks: {', '.join(others)}"
    if flag.get("quote"):
        line += f"\n  - quote ({flag.get('evidence')}): {_inline(flag['quote'])}"
    for quote in (flag.get("quotes") or [])[1:]:
        line += f"\n  - also quoted: {_inline(quote)}"
    if flag.get("missing"):
        line += f"\n  - missing: {flag['missing']}"
    if flag.get("location"):
        line += f"\n  - location: {flag['location']}"
    return line


def _block(text: str) -> list[str]:
    fence = _fence(text)
    return [fence, text.rstrip("\n"), fence]


def to_markdown(report: dict[str, Any]) -> str:
    title = "escalation report" if report["status"] == "escalated" else "report"
    parts = [
        f"# santa-method {title}: run {report['run_id']}",
        "",
        f"- target: {_inline(report['target'])}",
        *([f"- working copy: {_inline(report['working_copy'])}"] if report["working_copy"] else []),
        f"- status: {report['status']}",
        f"- rubric: {report['rubric']}, {report['reviewers']} reviewers, "
        f"up to {report['max_fixes']} fixes",
    ]
    for j in report.get("jury") or []:
        where = f", on {j['backend']}" if j.get("backend") else ""
        parts.append(
            f"- reviewer {j['label']}: {j.get('model') or 'default model'} ({j['family']}{where})"
        )
    if report.get("author_model"):
        parts.append(f"- written by: {report['author_model']}")
    parts += [f"- warning: {w}" for w in report.get("warnings") or []]
    if report.get("replayed"):
        parts.append(f"- {replayed_sentence(report['replayed'])}")
    cost = report["cost"]
    if cost["usd"] is not None or cost["tokens"] is not None:
        usd = f"${cost['usd']:.4f}" if cost["usd"] is not None else "cost unknown"
        parts.append(f"- cost: {cost['tokens'] or 0} tokens, {usd}")
    if report["status"] == "reported":
        parts += [
            "",
            "## A check only",
            "",
            "This run asked for no fix (max fixes 0): it reports the problems below and ends. "
            "To have them fixed, run the fix loop on the same target: `santa run` with "
            "`--max-fixes 1` or more, or `/santa-method:verify` in Claude Code.",
        ]
    if report["escalation_reasons"]:
        parts += ["", "## Why it escalated", ""]
        parts += [f"- {r}" for r in report["escalation_reasons"]]
    if report.get("state_unreadable"):
        parts += [
            "",
            "## The run's state cannot be read",
            "",
            f"- {report['state_unreadable']}",
            "- This report is built from the log and the run folder. Whether the target holds "
            "a fix no round reviewed cannot be told: check it against the last round's output "
            "(the kept fixes are the run folder's `round-N/fix.txt` and `round-N/fixes/`).",
        ]
    if report.get("unreviewed_fix"):
        parts += ["", "## Unreviewed fix", "", f"- {report['unreviewed_fix']['sentence']}"]
    if report["questions"]:
        parts += ["", "## The fixer needs input (answer in the spec, then start a new run)", ""]
        parts += [f"- [{q.get('criterion') or '?'}] {q['question']}" for q in report["questions"]]
    parts += ["", "## Unresolved flags", ""]
    parts += [_flag_md(f) for f in report["unresolved"]] or ["- none"]
    if report["suspected_false_positives"]:
        parts += ["", "## Suspected false positives (quote not found in the output)", ""]
        parts += [_flag_md(f) for f in report["suspected_false_positives"]]
    parts += ["", "## Rounds", ""]
    for r in report["rounds"]:
        parts.append(
            f"- round {r['round']}: {r['verdict'] or 'not gated'}, next {r['next'] or '-'}, "
            f"{len(r['flags'])} flag(s), {r['rereviews']} re-review(s)"
        )
        parts += [f"  - [{f['criterion']}] {f['issue']}" for f in r["flags"]]
        if r["fix"] is not None:
            notes = r["fix"].get("changed") or r["fix"].get("notes") or "(no notes)"
            lines = str(notes).strip().splitlines() or ["(no notes)"]
            parts.append(f"  - fixer: {lines[0]}")
            parts += [f"    {line}" for line in lines[1:]]
    if report["waived"]:
        parts += ["", "## Waived by a person", ""]
        parts += [
            f"- {w.get('key') or w.get('issue')}: {w.get('reason')}" for w in report["waived"]
        ]
    parts += ["", "## Spec", "", *_block(report["spec"])]
    parts += ["", "## Output (last round)", "", *_block(report["output"]), ""]
    return "\n".join(parts)


def write_report(run_id: str) -> Path:
    """Write `report.md` and `report.json` into the run's folder; returns the Markdown path."""
    report = build(run_id)
    folder = run_dir(run_id)
    path = folder / "report.md"
    replace_text(path, to_markdown(report))
    replace_text(folder / "report.json", json.dumps(report, indent=2, ensure_ascii=False))
    return path
