"""Logged events: ship, fix, escalate, escape, waive, generate.

Each is refused when the state forbids it: a ship only after a NICE gate of
the current round, with the log agreeing and the target still the reviewed
content; a fix only when the last gate asked for one. Escalating puts back
every file holding a fix no round reviewed (before the escalation is
saved or logged) and writes the report.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.gate import all_passed
from santa_method.state import late, locks, unreadable, waiting
from santa_method.state import log as runlog
from santa_method.state.atomic import is_temporary
from santa_method.state.fixes import check_changed, fix_report, needs_input
from santa_method.state.model.run import Escalation, Fix, RunState
from santa_method.state.store import (
    check_log_path,
    locked_state,
    now,
    run_dir,
    runs_dir,
    sha256,
)
from santa_method.state.target import read_target, reviewed_name
from santa_method.state.unreviewed import put_back

LOGGABLE = ("fix", "ship", "escalate", "escape", "waive", "generate")


def _round_iteration(event: str, iteration: Any, current: int) -> int:
    if iteration is None:
        return current
    if iteration != current:
        raise InputError(f"a {event} belongs to the current round ({current}), not {iteration!r}")
    return current


def _check_ship(state: RunState) -> None:
    """Ship only what a NICE gate saw: every expected slot a valid PASS, no
    reviewer started for the round still out and no FAIL since, and the
    target still the content that was reviewed."""
    run_id = state.id
    current = state.rounds[-1]
    last = state.last_gate
    if still := waiting.awaited(current):
        names = "; ".join(a.phrase() for a in still)
        raise RefusedError(f"run {run_id} cannot ship: a reviewer has not replied yet ({names})")
    if stale := late.stale_gate(state):
        raise RefusedError(f"run {run_id} cannot ship: {stale}")
    if not last or last.round != current.round or last.verdict != "NICE":
        said = f"said {last.verdict} (next: {last.next})" if last else "never happened"
        raise RefusedError(f"run {run_id} cannot ship: its last gate {said}, not NICE")
    gated = [
        (s is not None and s.gated_valid is True, s.gated_verdict if s is not None else None)
        for s in current.slots.values()
    ]
    if not all_passed(gated, state.reviewers):
        raise RefusedError(
            f"run {run_id} cannot ship: not every expected reviewer gave a valid PASS"
        )
    gates = [
        r
        for r in runlog.read(state.log).records
        if r.get("run_id") == run_id and r.get("event") == "gate"
    ]
    logged = gates[-1] if gates else None
    if (
        logged is None
        or logged.get("iteration") != current.round
        or logged.get("verdict") != "NICE"
        or sorted(logged.get("valid_reviewers") or []) != sorted(current.slots)
    ):
        raise RefusedError(
            f"run {run_id} cannot ship: the log {state.log} has no NICE gate of round "
            f"{current.round} with every reviewer valid; the run state and the log disagree"
        )
    try:
        now = read_target(state.target)
    except InputError as exc:
        raise RefusedError(f"run {run_id} cannot ship: {exc}") from None
    if sha256(now) != current.output_sha256:
        raise RefusedError(
            f"run {run_id} cannot ship: {reviewed_name(state.target)} changed after round "
            f"{current.round} was reviewed; what ships must be what was reviewed "
            "(restore it, or verify the new content in a new run)"
        )


def log_event(
    run_id: str,
    event: str,
    *,
    iteration: Any = None,
    data: dict[str, Any] | None = None,
    log_path: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Record a person's or the loop's event, refusing what the state forbids."""
    data = dict(data or {})
    if event not in LOGGABLE:
        raise InputError(f"'{event}' cannot be logged by hand; use one of {', '.join(LOGGABLE)}")
    for reserved in ("run_id", "event", "iteration", "ts"):
        data.pop(reserved, None)
    numbers.check_usage(data, "the event's data")
    if event == "waive" and (
        not (data.get("key") or data.get("issue")) or not str(data.get("reason") or "").strip()
    ):
        raise InputError('a waive needs --data \'{"key": "<flag key>", "reason": "why"}\'')
    if event == "escape" and not str(data.get("description") or "").strip():
        raise InputError('an escape needs --data \'{"description": "what escaped"}\'')
    if not (run_dir(run_id) / "state.json").exists():
        return _log_without_state(run_id, event, iteration, data, log_path)
    report_needed = False
    conflict = ""
    if event in ("ship", "fix", "escalate"):
        driver = locks.driven_elsewhere(run_id)
        if driver is not None:
            raise RefusedError(
                f"run {run_id} is being driven by {driver} right now; stop that process "
                "(it escalates the run itself) or wait for it to end"
            )
    if event == "escalate" and (why := unreadable.why(run_id)) is not None:
        return _escalate_unreadable(run_id, data, log_path, why)
    with locked_state(run_id) as state:
        check_log_path(state, log_path)
        current = state.rounds[-1]
        last = state.last_gate
        if event == "escape":
            if state.status != "shipped":
                raise RefusedError(f"run {run_id} never shipped, so nothing escaped from it")
        elif event == "waive":
            iteration = current.round if iteration is None else iteration
        elif event in ("ship", "fix", "escalate"):
            if state.status != "open":
                raise RefusedError(f"run {run_id} is {state.status}; it cannot {event} now")
            iteration = _round_iteration(event, iteration, current.round)
            if event == "ship":
                _check_ship(state)
                state.status = "shipped"
            elif event == "fix":
                if current.open or not last or last.round != current.round or last.next != "fix":
                    said = f"said '{last.next}'" if last else "never happened"
                    raise RefusedError(
                        f"run {run_id} has no fix pending: its last gate {said}, not 'fix'"
                    )
                if any(f.after_round == current.round for f in state.fixes):
                    raise RefusedError(
                        f"a fix is already logged after round {current.round}; "
                        f"open the next round with 'santa round start --run {run_id}'"
                    )
                report = fix_report(state, data)
                if report.questions:
                    event, iteration = "escalate", current.round
                    data = needs_input(state, report, data)
                    report_needed = True
                else:
                    check_changed(state, report)
                    state.fixes.append(Fix(after_round=current.round, ts=now()))
                    state.fixer = None
            else:
                data["reason"] = str(data.get("reason") or "escalated by hand")
                state.status = "escalated"
                state.escalation = Escalation(current.round, [data["reason"]])
                report_needed = True
        ended = _logged_end(state.log, run_id) if event in ("ship", "escalate") else None
        if ended is not None and ended.get("event") != event:
            # The log ended the run the other way before its process died:
            # the state comes up to the log, and this end is refused.
            said = "shipped" if ended.get("event") == "ship" else "escalated"
            conflict = (
                f"the log {state.log} already records run {run_id} as {said} (its process "
                f"ended before the run's state said so); the run is now {said}, as logged"
            )
            event, data, report_needed = str(ended.get("event")), {}, ended.get("event") != "ship"
            state.status = said
            if report_needed:
                reason = str(ended.get("reason") or "escalated")
                state.escalation = Escalation(current.round, [reason])
        if event == "escalate" and report_needed:
            # Before the escalation is saved or logged: a kill after this
            # leaves an open run and the reviewed text, never an escalated
            # run whose file still holds text no reviewer saw.
            put_back(state)
        written = ended or runlog.append(
            state.log, {"run_id": run_id, "event": event, "iteration": iteration, **data}
        )
    if report_needed:
        from santa_method.state.report import write_report

        write_report(run_id)
    if conflict:
        raise RefusedError(conflict)
    return written


def _logged_end(log: str, run_id: str) -> dict[str, Any] | None:
    """The ship or escalation the log already holds for the run, if any.

    Why: the log is written before the state, so a process killed between
    the two leaves the end logged and the run open. Ending it the same way
    again brings the state up to date without a second record; ending it
    the other way is refused, so the log and the state never disagree."""
    ends = (
        r
        for r in reversed(runlog.read(log).records)
        if r.get("run_id") == run_id and r.get("event") in ("ship", "escalate")
    )
    found: dict[str, Any] | None = next(ends, None)
    return found


def _escalate_unreadable(
    run_id: str,
    data: dict[str, Any],
    log_path: str | os.PathLike[str] | None,
    why: str,
) -> dict[str, Any]:
    """Close a run whose state this santa cannot read, so a person can.

    Nothing can be put back (which file holds a fix is in the state), so the
    report says so; the log records the escalation and why the state cannot
    be read, and the state's status says escalated when it is still JSON."""
    from santa_method.state.history import outcome

    path = unreadable.log_path(run_id, log_path)
    status = (unreadable.raw(run_id) or {}).get("status")
    with open(run_dir(run_id) / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = unreadable.records(run_id, path)
        ended = _logged_end(str(path), run_id)
        said = status if status in ("shipped", "escalated") else outcome(found)
        if said == "shipped" or (said == "escalated" and status != "open"):
            raise RefusedError(f"run {run_id} is {said}; it cannot escalate now")
        if ended is not None and ended.get("event") == "escalate":
            written = ended  # logged before its process died: the state comes up to it
        else:
            data["reason"] = str(data.get("reason") or "escalated by hand")
            data["state_unreadable"] = why
            written = runlog.append(
                path,
                {
                    "run_id": run_id,
                    "event": "escalate",
                    "iteration": unreadable.last_round(run_id),
                    **data,
                },
            )
        unreadable.mark(run_id, "escalated")
    from santa_method.state.report import write_report

    write_report(run_id)
    return written


def _log_without_state(
    run_id: str,
    event: str,
    iteration: Any,
    data: dict[str, Any],
    log_path: str | os.PathLike[str] | None,
) -> dict[str, Any]:
    """Events a person may file long after the run folder is gone (it is
    git-ignored; the log may be committed): escape, waive, generate."""
    from santa_method.state.config import resolve_log_path

    path = resolve_log_path(log_path)
    if event not in ("escape", "waive", "generate", "escalate"):
        raise InputError(f"no run '{run_id}' under {runs_dir()}")
    records = [r for r in runlog.read(path).records if r.get("run_id") == run_id]
    if not any(r.get("event") == "run" for r in records):
        raise InputError(f"no run '{run_id}' in the log {path}")
    if event == "escalate":
        # A run logged whose folder was never written (its process was
        # killed first): closing it is all that is left to do.
        from santa_method.state.history import outcome

        if outcome(records) != "open" or locks.driven_elsewhere(run_id):
            raise InputError(f"no run '{run_id}' under {runs_dir()}")
        data["reason"] = str(data.get("reason") or "escalated by hand")
        _remove_half_written(run_dir(run_id))
    if event == "escape" and not any(r.get("event") == "ship" for r in records):
        raise RefusedError(f"run {run_id} never shipped, so nothing escaped from it")
    return runlog.append(path, {"run_id": run_id, "event": event, "iteration": iteration, **data})


def _remove_half_written(folder: Path) -> None:
    """A run killed while its first files were written leaves their
    temporaries (`.spec.md.*.santa-tmp`) and no state: once it is closed
    nothing will finish them, so they go, and the folder too if that
    empties it. Nothing else in the folder is touched."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if is_temporary(entry.name) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    with contextlib.suppress(OSError):
        folder.rmdir()  # only if empty
