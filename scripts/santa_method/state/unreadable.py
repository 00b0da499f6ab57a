"""A run whose state this santa cannot read: what is left to know about it.

Why: a `state.json` cut short by a full disk, edited by hand, or written by
an older santa with numbers this one refuses (a negative token count) must
not leave a run nobody can close. `santa runs` says why its state cannot
be read (`why`), `santa log escalate` closes it (`state/events.py`) and
`santa report` reports it (`state/report.py`), all from what is left: the
state's JSON when it is still an object, the run folder's files and the
iteration log. Nothing here reads the state as typed records, and nothing
is decided from it: such a run is never shipped, only closed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError
from santa_method.state import log as runlog
from santa_method.state.store import StateUnreadable, load_state, read_json, run_dir, save

_ROUND = re.compile(r"round-([1-9][0-9]{0,8})")


def why(run_id: str) -> str | None:
    """Why the run's state cannot be read; None when it can, or when there is none."""
    try:
        load_state(run_id)
    except StateUnreadable as exc:
        return exc.reason
    except InputError:
        return None
    return None


def raw(run_id: str) -> dict[str, Any] | None:
    """The state file's JSON when it is still an object, else None."""
    try:
        data = read_json(run_dir(run_id) / "state.json", f"run '{run_id}'")
    except StateUnreadable:
        return None
    return data if isinstance(data, dict) else None


def log_path(run_id: str, given: str | os.PathLike[str] | None = None) -> Path:
    """The run's log: the one its state names (`--log` cannot move it), else
    the one `given` (--log) or the project's settings name."""
    from santa_method.state.config import resolve_log_path

    named = (raw(run_id) or {}).get("log")
    if isinstance(named, str) and named:
        if given and Path(given).absolute() != Path(named):
            raise InputError(f"run {run_id} logs to {named}; --log cannot move it to another file")
        return Path(named)
    return resolve_log_path(given)


def records(run_id: str, log: Path) -> list[dict[str, Any]]:
    """The run's records in `log`, in order."""
    return [r for r in runlog.read(log).records if r.get("run_id") == run_id]


def last_round(run_id: str) -> int | None:
    """The highest round the run folder holds (`round-N/`), if any."""
    try:
        names = os.listdir(run_dir(run_id))
    except OSError:
        return None
    found = [int(m.group(1)) for n in names if (m := _ROUND.fullmatch(n))]
    return max(found) if found else None


def mark(run_id: str, status: str) -> None:
    """Set the state's status (escalated) when its JSON is still an object:
    the guard and `santa runs` read the bare status, and must not count the
    run open once it is closed. The rest of the file is kept as it was."""
    data = raw(run_id)
    if data is None:
        return  # no status anyone could read as open
    data["status"] = status
    save(run_dir(run_id), data)
