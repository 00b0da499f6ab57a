"""Runs as the log remembers them: the log outlives `.santa/runs/` folders
(which are git-ignored), so listing and history read the log alone. This is
how an escape found weeks later is filed against the right run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from santa_method.state import log as runlog


def outcome(events: list[dict[str, Any]]) -> str:
    """shipped (logged), nice (a NICE gate, ship not logged yet), escalated,
    reported (a check that found problems), or open."""
    if any(e["event"] == "ship" for e in events):
        return "shipped"
    if any(
        e["event"] == "escalate" or (e["event"] == "gate" and e.get("next") == "escalate")
        for e in events
    ):
        return "escalated"
    if any(e["event"] == "gate" and e.get("next") == "report" for e in events):
        return "reported"
    if any(e["event"] == "gate" and e.get("verdict") == "NICE" for e in events):
        return "nice"
    return "open"


def _same_target(recorded: Any, wanted: str) -> bool:
    if not isinstance(recorded, str):
        return False
    if recorded == wanted:
        return True
    if recorded.startswith("diff:"):
        return False
    return Path(recorded).resolve() == Path(wanted).resolve()


def summarise_runs(
    log_path: str | os.PathLike[str], target: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per run that has a `run` record, oldest first, and the reader's warnings."""
    read = runlog.read(log_path)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for record in read.records:
        by_run.setdefault(record["run_id"], []).append(record)
    rows = []
    for run_id, events in by_run.items():
        start = next((e for e in events if e["event"] == "run"), None)
        if start is None:
            continue
        if target and not _same_target(start.get("target"), target):
            continue
        rounds = [
            e["iteration"]
            for e in events
            if e["event"] == "gate" and isinstance(e.get("iteration"), int)
        ]
        rows.append(
            {
                "run_id": run_id,
                "target": start.get("target"),
                "started": start.get("ts", ""),
                "rounds": max(rounds) if rounds else 0,
                "outcome": outcome(events),
                "source": start.get("source"),
                "escapes": sum(1 for e in events if e["event"] == "escape"),
            }
        )
    rows.sort(key=lambda r: (r["started"], r["run_id"]))
    return rows, read.warnings()


def run_history(
    log_path: str | os.PathLike[str], run_id: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every record of one run, in log order, and the reader's warnings."""
    read = runlog.read(log_path)
    return [r for r in read.records if r.get("run_id") == run_id], read.warnings()
