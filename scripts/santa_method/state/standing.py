"""Where an open run stands now: still driven, interrupted, or waiting.

Why it is more than the log: a headless run (`source: api`) is driven by
one process, which holds the run's lock while it lives (`state/locks.py`).
When that process is gone (kill -9, a crash, a closed laptop) the log still
says "open", but nothing will ever move the run on: it was interrupted, and
a person resumes it (`santa run --resume ID`) or closes it (`santa log
escalate --run ID`). Runs driven step by step (inside Claude Code, or with
review files) have no owning process between steps and stay "open".
"""

from __future__ import annotations

from typing import Any

from santa_method.core.errors import InputError
from santa_method.state import locks, store
from santa_method.state.unreviewed import unreviewed_fix


def interrupted(run_id: str, source: Any) -> bool:
    """A headless run no living process drives (call it for open runs only)."""
    return source == "api" and not locks.owner_alive(run_id)


def annotate(row: dict[str, Any]) -> dict[str, Any]:
    """A `santa runs` row of an open run, with what stands now: `outcome`
    becomes `interrupted` with the commands that resume or close it (a
    change is reviewed again instead: `again`), `unreviewed_fix` names
    a fix the target holds that no round reviewed, and `unreadable` says
    why a state that is there cannot be read."""
    if row.get("outcome") != "open" or not interrupted(row["run_id"], row.get("source")):
        return row
    row = {
        **row,
        "outcome": "interrupted",
        "resume": f"santa run --resume {row['run_id']}",
        "close": f"santa log escalate --run {row['run_id']}",
        "unreviewed_fix": None,
    }
    folder = store.run_dir(row["run_id"])
    if folder.is_dir() and not (folder / "state.json").exists():
        # Killed while its first files were written: there is a folder, but
        # nothing to resume from.
        row["resume"] = None
        row["no_state"] = True
        return row
    try:
        state = store.load_state(row["run_id"])
    except store.StateUnreadable as exc:
        # Its folder is there, but not a state to resume from: closing it is left.
        row["resume"] = None
        row["unreadable"] = exc.reason
        return row
    except (InputError, OSError, ValueError):
        row["resume"] = None  # nothing left to resume from: its folder is gone
        return row
    if state.target.kind == "diff":
        # A change is recomputed from the checkout: it is reviewed again, not resumed.
        row["resume"] = None
        row["again"] = f"santa run --against-diff {state.target.rev}"
    found = unreviewed_fix(state)
    if found is not None and found.holds == "fix":
        row["unreviewed_fix"] = str(found.path)
    return row
