"""What the viewer reads: the log, the run folders and the batch folders.

This is the viewer's only I/O on the way in. The log is the record that
lasts (run folders are git-ignored and often deleted), so every run comes
from the log, through `state.metrics`; a run folder, where it still exists,
adds what the log does not keep: the output as each round saw it, the spec,
and the reviewers' words behind each check.

Redaction: the log is redacted as it is written (`state.log.append`), so
its records are shown as they are. Run and batch folders are not: every
text read from them passes through `core.redact` here, before any page
sees it. Redaction is slow (every detector runs on every line: about
0.1 ms a line here), so the folder texts of only the newest runs are read,
up to `TEXT_BUDGET` characters and `LINE_BUDGET` lines (about a second),
and their reviewers' whole replies up to `RAW_BUDGET`; the others say so on
their page.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from santa_method.core.redact import redact, redact_text
from santa_method.state import log as runlog
from santa_method.state.metrics import (
    RunView,
    compute_runs,
    runs_from_log,
    since_filter,
    since_moment,
)
from santa_method.state.model.batch import BatchState
from santa_method.state.model.reading import StateError
from santa_method.state.model.run import RunState, Slot
from santa_method.state.store import is_run_id

#: Characters of run-folder text (outputs, specs, reviewers' details) read per page.
TEXT_BUDGET = 1_000_000
#: Lines of run-folder text read per page: what redaction's time grows with.
LINE_BUDGET = 10_000
#: Characters of reviewers' whole replies per page (the newest runs'): most of
#: a reply is what the page shows already, checked and merged.
RAW_BUDGET = 300_000


@dataclass(frozen=True)
class RunFiles:
    """What a run's folder adds to the log. `texts` is False when the folder
    exists but its texts were left out to keep the page small and quick."""

    texts: bool
    status: str | None = None
    outputs: dict[int, str] = field(default_factory=dict)
    spec: str | None = None
    replies: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    report: dict[str, Any] | None = None
    problem: str | None = None
    raw: dict[tuple[int, str], str] = field(default_factory=dict)
    """Each reviewer's whole reply as it came back (the slot's), redacted."""
    raw_left_out: bool = False
    """The replies were left out to keep the page small (`RAW_BUDGET`)."""


@dataclass(frozen=True)
class BatchFiles:
    """A batch folder: its state, and its report once it has a verdict."""

    batch_id: str
    state: BatchState | None
    report: dict[str, Any] | None
    problem: str | None = None


@dataclass(frozen=True)
class Sources:
    """Everything one page is built from, newest run first."""

    log: Path
    home: Path
    runs: list[RunView]
    metrics: dict[str, Any]
    folders: dict[str, RunFiles]
    batches: list[BatchFiles]
    warnings: list[str]
    interrupted: frozenset[str] = frozenset()


def collect(
    log_path: Path,
    home: Path,
    since: date | datetime | None = None,
    text_budget: int = TEXT_BUDGET,
    line_budget: int = LINE_BUDGET,
    raw_budget: int = RAW_BUDGET,
) -> Sources:
    """Read the log and the folders under `home` (the project's `.santa/`)."""
    read = runlog.read(log_path)
    warnings = read.warnings()
    runs = since_filter(runs_from_log(read), since)
    metrics = compute_runs(runs)
    runs.sort(key=lambda r: (r.started is not None, r.started, r.run_id), reverse=True)
    folders: dict[str, RunFiles] = {}
    budget, lines = text_budget, line_budget
    runs_root = home / "runs"
    present = set(os.listdir(runs_root)) if runs_root.is_dir() else set()
    for run in runs:
        if run.run_id not in present or not is_run_id(run.run_id):
            continue
        folder = runs_root / run.run_id
        if not (folder / "state.json").is_file():
            continue
        if budget <= 0 or lines <= 0:
            folders[run.run_id] = RunFiles(texts=False)
            continue
        files = read_run_folder(folder, raw=raw_budget > 0)
        raw_budget -= sum(len(t) for t in files.raw.values())
        texts = [*files.outputs.values(), files.spec or "", *files.raw.values()]
        texts += [d for w in files.replies.values() for d in w["details"].values()]
        budget -= sum(len(t) for t in texts)
        lines -= sum(t.count("\n") + 1 for t in texts)
        folders[run.run_id] = files
    batches = [b for b in (read_batch_folder(p) for p in _batch_folders(home)) if _after(b, since)]
    return Sources(log_path, home, runs, metrics, folders, batches, warnings, _interrupted(runs))


def _interrupted(runs: list[RunView]) -> frozenset[str]:
    """Open headless runs whose process is gone (`state.standing`)."""
    from santa_method.state.standing import interrupted

    return frozenset(
        r.run_id
        for r in runs
        if r.outcome == "open" and interrupted(r.run_id, (r.run_record or {}).get("source"))
    )


def read_run_folder(folder: Path, raw: bool = True) -> RunFiles:
    """The texts of one run folder, redacted; a damaged part is left out and named.
    The reviewers' whole replies are read only with `raw`.

    The state is loaded as `RunState`, as every face loads it: a file this
    santa cannot read gives no texts and says why, never a half-read page.
    """
    try:
        data = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        return RunFiles(texts=False, problem=f"its state.json is unreadable ({exc})")
    if not isinstance(data, dict):
        return RunFiles(texts=False, problem="its state.json is not a run state")
    try:
        state = RunState.from_json(data)
    except (StateError, RecursionError) as exc:
        problem = redact_text(f"its state.json is not a run state this santa reads ({exc})")
        return RunFiles(texts=False, problem=problem)
    outputs: dict[int, str] = {}
    replies: dict[tuple[int, str], dict[str, Any]] = {}
    whole: dict[tuple[int, str], str] = {}
    for r in state.rounds:
        text = _read(folder / f"round-{r.round}" / "output.txt")
        if text is not None:
            outputs[r.round] = redact_text(text)
        for label, words in contested(r.slots).items():
            replies[(r.round, label)] = words
        for label, slot in r.slots.items():
            if raw and slot is not None and slot.reply:
                # What the reviewer said, whole: what one reads to judge a false alarm.
                whole[(r.round, label)] = redact_text(slot.reply)
    spec = _read(folder / "spec.md")
    report = None
    with contextlib.suppress(OSError, ValueError, RecursionError):
        loaded = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        report = redact(loaded) if isinstance(loaded, dict) else None
    return RunFiles(
        texts=True,
        status=state.status,
        outputs=outputs,
        spec=None if spec is None else redact_text(spec),
        replies=replies,
        report=report,
        raw=whole,
        raw_left_out=not raw,
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def contested(slots: Mapping[str, Slot | None]) -> dict[str, dict[str, Any]]:
    """Each reviewer's own words on the checks that matter: those some reviewer
    of the round failed or that the reviewers rated differently (a check every
    reviewer passed needs no explanation). Redacted; a round every reviewer
    passed is not even parsed, and an unreadable reply adds nothing (the log
    says why it did not count)."""
    from santa_method.core.extract import extract_verdict_object

    stored = {label: slot for label, slot in slots.items() if slot is not None}
    if all(slot.gated_verdict == "PASS" for slot in stored.values()):
        return {}
    checks: dict[str, dict[str, tuple[str, str | None]]] = {}
    for label, slot in stored.items():
        found = extract_verdict_object(slot.reply).obj
        if isinstance(found, dict):
            checks[label] = {
                c["criterion"]: (str(c.get("result")), c.get("detail"))
                for c in found.get("checks") or []
                if isinstance(c, dict) and isinstance(c.get("criterion"), str)
            }
    criteria = {c for by in checks.values() for c in by}
    wanted = {
        c
        for c in criteria
        if len({by.get(c, ("-", None))[0] for by in checks.values()}) > 1
        or any(by.get(c, ("", None))[0] == "FAIL" for by in checks.values())
    }
    words = {
        label: {
            c: d for c, (_, d) in by.items() if c in wanted and isinstance(d, str) and d.strip()
        }
        for label, by in checks.items()
    }
    return redact({label: {"details": d} for label, d in words.items() if d})


def _batch_folders(home: Path) -> list[Path]:
    from santa_method.state.batches import _BATCH_ID

    root = home / "batches"
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if _BATCH_ID.fullmatch(p.name)), reverse=True)


def read_batch_folder(folder: Path) -> BatchFiles:
    """A batch's state and report, redacted (its items may quote outputs).

    The state is loaded as `BatchState`, as `santa batch` loads it, so the
    page reads typed fields; a file this santa cannot read is named, never
    half shown. Two parts of it are dropped before redaction (the slow step):
    the rubric, which is the batch's input, not its result, and the items'
    whole JSONL records, which the page never shows.
    """
    try:
        data = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        return BatchFiles(folder.name, None, None, f"its state.json is unreadable ({exc})")
    if not isinstance(data, dict):
        return BatchFiles(folder.name, None, None, "its state.json is not a batch state")
    try:
        state = BatchState.from_json(data)
        state.options = replace(state.options, rubric={})
        state.items = [replace(i, record=None) for i in state.items]
        # Redaction changes only the text of strings, which no check of
        # `from_json` reads, so the redacted state loads as the first did.
        state = BatchState.from_json(redact(state.to_json()))
    except (StateError, RecursionError) as exc:
        problem = redact_text(f"its state.json is not a batch state this santa reads ({exc})")
        return BatchFiles(folder.name, None, None, problem)
    # `redact` keeps keys, and item ids and criteria are keys here: the page
    # shows some.
    for wave in state.waves:
        wave.outcomes = {redact_text(k): o for k, o in wave.outcomes.items()}
        wave.screens = {
            redact_text(c): {redact_text(i): s for i, s in by.items()}
            for c, by in wave.screens.items()
        }
    report = None
    with contextlib.suppress(OSError, ValueError, RecursionError):
        loaded = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        report = redact(loaded) if isinstance(loaded, dict) else None
    return BatchFiles(folder.name, state, report)


def _after(batch: BatchFiles, since: date | datetime | None) -> bool:
    if since is None or batch.state is None:
        return True
    created = runlog.parse_ts(batch.state.created)
    return created is not None and since_moment(since) <= created
