"""Runs as the log remembers them: the log outlives `.santa/runs/` folders
(which are git-ignored), so listing and history read the log alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from santa_method.state import log as runlog


def _outcome(events: list[dict[str, Any]]) -> str:
    if any(e["event"] == "gate" and e.get("verdict") == "NICE" for e in events):
        return "shipped" if any(e["event"] == "ship" for e in events) else "nice"
    if any(e["event"] == "escalate" or (e["event"] == "gate" and e.get("next") == "escalate") for e in events):
        return "escalated"
    return "open"


def summarise_runs(log_path: str | os.PathLike[str], target: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    read = runlog.read(log_path)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for record in read.records:
        by_run.setdefault(record["run_id"], []).append(record)
    wanted = str(Path(target).resolve()) if target else None
    rows = []
    for run_id, events in by_run.items():
        start = next((e for e in events if e["event"] == "run"), None)
        if start is None:
            continue
        if wanted and start.get("target") not in (wanted, target):
            continue
        rounds = [e.get("iteration") for e in events if e["event"] == "gate" and isinstance(e.get("iteration"), int)]
        rows.append(
            {
                "run_id": run_id,
                "target": start.get("target"),
                "started": start.get("ts", ""),
                "rounds": max(rounds) if rounds else 0,
                "outcome": _outcome(events),
                "escapes": sum(1 for e in events if e["event"] == "escape"),
            }
        )
    return rows, read.warnings()


def run_history(log_path: str | os.PathLike[str], run_id: str) -> tuple[list[dict[str, Any]], list[str]]:
    read = runlog.read(log_path)
    return [r for r in read.records if r.get("run_id") == run_id], read.warnings()
