"""Which runs are open, without reading every finished run's state.

The PreToolUse guard asks on every Write, Edit and SendMessage of a Claude
Code session, and a project's finished runs pile up. So a run that has
finished gets a mark, an empty file `.santa/runs/.finished/<id>`, and the
guard reads the state of unmarked runs only.

Why a mark of *finished* runs, not a list of open ones: only a wrong mark
could hide an open run, and a mark is written only after the run's own
`state.json` says shipped or escalated, which never becomes open again. Any
run without a mark (a new run, one that crashed before its mark was
written, one an older helper made, a `.finished` folder that is gone or
unreadable) is checked in full by reading its state, and marked then if it
has finished. A missing mark costs time, never safety. The marks live
under `runs/`, which the guard protects like the states themselves.

Only `os` is imported up front: this is on the guard's path, and `json`
(with the `re` it brings) is imported only to read an unmarked run's state.
"""

from __future__ import annotations

import os

FINISHED = ".finished"
# Statuses a run never leaves. Any other status is read in full each time.
FINAL_STATUSES = frozenset({"shipped", "escalated", "reported"})


def mark_finished(runs_dir: str, run_id: str, status: str) -> None:
    """Mark `run_id` finished if `status` (saved in its state already) is final.

    Best effort: a mark that cannot be written only means the guard reads
    this run's state in full.
    """
    if status not in FINAL_STATUSES:
        return
    folder = os.path.join(runs_dir, FINISHED)
    try:
        os.makedirs(folder, exist_ok=True)
        os.close(os.open(os.path.join(folder, run_id), os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError:
        pass


def _status(runs_dir: str, run_id: str) -> str | None:
    import json

    try:
        with open(os.path.join(runs_dir, run_id, "state.json"), encoding="utf-8") as handle:
            status = json.load(handle).get("status")
    except (OSError, ValueError, AttributeError):
        return None  # not a run (yet), or unreadable: never counted as open
    return status if isinstance(status, str) else None


def open_run_ids(runs_dir: str) -> list[str]:
    """The ids of the runs under `runs_dir` whose state says open, sorted."""
    if not os.path.isdir(runs_dir):
        return []
    names = os.listdir(runs_dir)
    try:
        finished = set(os.listdir(os.path.join(runs_dir, FINISHED)))
    except OSError:
        finished = set()
    found = []
    for run_id in sorted(names):
        # Run ids start with a letter or digit; dot names are the helper's own.
        if run_id.startswith(".") or run_id in finished:
            continue
        status = _status(runs_dir, run_id)
        if status == "open":
            found.append(run_id)
        elif status is not None:
            mark_finished(runs_dir, run_id, status)
    return found
