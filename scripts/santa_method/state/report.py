"""The escalation report: what a person needs to take over a run.

Written automatically when a run escalates, and on demand (`santa report`).
Everything in it passes through redaction: it is meant for people and may
be pasted into tickets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from santa_method.state import log as runlog
from santa_method.state import runs
from santa_method.state.redact import redact


def build(run_id: str) -> dict[str, Any]:
    state = runs.load(run_id)
    folder = runs.run_dir(run_id)
    records = [r for r in runlog.read(state["log"]).records if r.get("run_id") == run_id]
    rounds = []
    for r in state["rounds"]:
        final = r["gates"][-1] if r["gates"] else None
        rounds.append(
            {
                "round": r["round"],
                "verdict": final["verdict"] if final else None,
                "next": final["next"] if final else None,
                "flags": final["issues"] if final else [],
                "reasons": final.get("reasons", []) if final else [],
                "rereviews": r["rereviews"],
            }
        )
    fixes = [
        {k: v for k, v in rec.items() if k not in ("run_id", "event")}
        for rec in records
        if rec.get("event") == "fix"
    ]
    tokens, cost = 0, 0.0
    for rec in records:
        if isinstance(rec.get("tokens"), int):
            tokens += rec["tokens"]
        if isinstance(rec.get("cost_usd"), (int, float)):
            cost += float(rec["cost_usd"])
    last = next((r for r in reversed(rounds) if r["verdict"] is not None), None)
    unresolved = last["flags"] if last and last["verdict"] == "NAUGHTY" else []
    last_round = state["rounds"][-1]["round"] if state["rounds"] else None
    output_file = folder / f"round-{last_round}" / "output.txt"
    escalations = [rec.get("reason") for rec in records if rec.get("event") == "escalate"]
    report = {
        "run_id": run_id,
        "status": state["status"],
        "target": state["target"].get("path") or f"diff:{state['target'].get('rev')}",
        "rubric": state["rubric"],
        "reviewers": state["reviewers"],
        "max_fixes": state["max_fixes"],
        "escalation_reasons": [r for r in escalations if r],
        "spec": (folder / "spec.md").read_text(encoding="utf-8"),
        "output": output_file.read_text(encoding="utf-8") if output_file.exists() else "",
        "unresolved": [f for f in unresolved if f.get("evidence") != "unverified"],
        "suspected_false_positives": [f for f in unresolved if f.get("evidence") == "unverified"],
        "rounds": rounds,
        "fixes": fixes,
        "waived": [rec for rec in records if rec.get("event") == "waive"],
        "tokens": tokens or None,
        "cost_usd": round(cost, 6) if cost else None,
    }
    return redact(report)


def _flag_md(flag: dict[str, Any]) -> str:
    line = f"- **[{flag['criterion']}]** {flag['issue']} (flagged by {', '.join(flag.get('flagged_by', []))})"
    if flag.get("quote"):
        line += f"\n  - quote ({flag.get('evidence')}): `{flag['quote']}`"
    if flag.get("missing"):
        line += f"\n  - missing: {flag['missing']}"
    if flag.get("location"):
        line += f"\n  - location: {flag['location']}"
    return line


def to_markdown(report: dict[str, Any]) -> str:
    fence = "````"
    parts = [
        f"# santa-method escalation report: run {report['run_id']}",
        "",
        f"- target: `{report['target']}`",
        f"- status: {report['status']}",
        f"- rubric: {report['rubric']}, {report['reviewers']} reviewers, up to {report['max_fixes']} fixes",
    ]
    if report["cost_usd"] is not None or report["tokens"] is not None:
        parts.append(f"- cost: {report['tokens'] or 0} tokens, ${report['cost_usd'] or 0:.4f}")
    if report["escalation_reasons"]:
        parts += ["", "## Why it escalated", ""]
        parts += [f"- {r}" for r in report["escalation_reasons"]]
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
    if report["fixes"]:
        parts += ["", "## Fixes", ""]
        for f in report["fixes"]:
            notes = f.get("changed") or f.get("notes") or "(no notes)"
            parts.append(f"- after round {f.get('iteration')}: {notes}")
    if report["waived"]:
        parts += ["", "## Waived by a person", ""]
        parts += [f"- {w.get('key') or w.get('issue')}: {w.get('reason')}" for w in report["waived"]]
    parts += ["", "## Spec", "", fence, report["spec"].rstrip("\n"), fence]
    parts += ["", "## Output (last round)", "", fence, report["output"].rstrip("\n"), fence, ""]
    return "\n".join(parts)


def write_report(run_id: str) -> Path:
    report = build(run_id)
    path = runs.run_dir(run_id) / "report.md"
    path.write_text(to_markdown(report), encoding="utf-8")
    (runs.run_dir(run_id) / "report.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    return path
