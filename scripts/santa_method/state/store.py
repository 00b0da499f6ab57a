"""A run's folder and its state: ids, the lock, loading and saving.

Every run lives in `.santa/runs/<id>/`: `state.json` (the state machine's
state, replaced atomically so unlocked readers never see half a file), the
files the helper wrote for it (spec, rubric, each round's output and
assignment) and a `.lock`. State changes happen under an exclusive lock on
that file, because reviewers finish concurrently and each stop hook stores
its reply at once; `locked_state` saves only on a clean exit, so a refusal or a
crash half-way leaves the state as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError, RefusedError
from santa_method.core.files import read_exact
from santa_method.core.types import MergedIssue, Rubric
from santa_method.state import log as runlog
from santa_method.state.jsonfile import write_atomic
from santa_method.state.model.reading import StateError
from santa_method.state.model.run import Round, RunState
from santa_method.state.open_runs import mark_finished
from santa_method.state.paths import santa_dir

STATE_VERSION = 1


RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def runs_dir() -> Path:
    return santa_dir() / "runs"


def is_run_id(run_id: object) -> bool:
    """Whether `run_id` can name a run folder (never a path elsewhere)."""
    return isinstance(run_id, str) and bool(RUN_ID.fullmatch(run_id)) and ".." not in run_id


def run_dir(run_id: str) -> Path:
    """The run's folder; the id is checked so it can never name a path elsewhere."""
    if not is_run_id(run_id):
        raise InputError(f"'{run_id}' is not a run id")
    return runs_dir() / run_id


def agent_file_name(agent_id: str) -> str:
    """An agent id as a file name of the run folder: the ids Claude Code
    gives are letters, digits and dashes, and anything else cannot climb out
    of the folder."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in agent_id) or "unknown"


def new_run_id() -> str:
    """A fresh run id (a caller may draw it first, to lock the run before it exists)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def save(folder: Path, data: dict[str, Any]) -> None:
    """Write `state.json` (a `RunState`'s `to_json`) atomically: the one
    writer, under `save_state` and `locked_state`."""
    write_atomic(folder / "state.json", data, indent=2)
    # Only once the state itself says so: the guard trusts this mark.
    mark_finished(str(folder.parent), folder.name, data["status"])


class StateUnreadable(InputError):
    """A run whose `state.json` exists but cannot be read: not JSON, cut
    short, or holding what this santa refuses (`reason` says which). Such a
    run can still be listed, reported and escalated (`state/unreadable.py`)."""

    def __init__(self, run_id: str, message: str, reason: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.reason = reason


def _typed(run_id: str, data: Any) -> RunState:
    try:
        return RunState.from_json(data)
    except StateError as exc:
        raise StateUnreadable(
            run_id, f"the state of run '{run_id}' cannot be read by this santa: {exc}", str(exc)
        ) from None


def _parsed(run_id: str, state_file: Path) -> Any:
    """The state file's JSON; StateUnreadable when it holds none."""
    try:
        return json.loads(state_file.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:
        reason = (
            "it is nested too deeply"
            if isinstance(exc, RecursionError)
            else f"it is not JSON text ({exc})"
        )
        message = f"the state of run '{run_id}' is unreadable: {reason}"
        raise StateUnreadable(run_id, message, reason) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"the state of run '{run_id}' is unreadable: {reason}"
        raise StateUnreadable(run_id, message, reason) from None


def load_state(run_id: str) -> RunState:
    """A snapshot of the run's state as typed records (read-only use); a
    file this version cannot read is a StateUnreadable (an InputError)
    naming its key."""
    state_file = run_dir(run_id) / "state.json"
    if not state_file.exists():
        raise InputError(f"no run '{run_id}' under {runs_dir()}")
    return _typed(run_id, _parsed(run_id, state_file))


@contextlib.contextmanager
def locked_state(run_id: str) -> Iterator[RunState]:
    """The run's state under an exclusive lock, saved (atomically) only on a
    clean exit, so a refusal or a crash half-way leaves the state as it was."""
    folder = run_dir(run_id)
    state_file = folder / "state.json"
    if not state_file.exists():
        raise InputError(f"no run '{run_id}' under {runs_dir()}")
    with open(folder / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _typed(run_id, _parsed(run_id, state_file))
        yield state
        save(folder, state.to_json())


def save_state(state: RunState) -> None:
    save(run_dir(state.id), state.to_json())


def list_run_ids() -> list[str]:
    base = runs_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "state.json").exists())


def now() -> str:
    return runlog.now_iso()


def log_record(state: RunState, event: str, iteration: Any, **data: Any) -> dict[str, Any]:
    """One record of the run in its log."""
    record = {"run_id": state.id, "event": event, "iteration": iteration, **data}
    return runlog.append(state.log, record)


def check_log_path(state: RunState, log_path: str | os.PathLike[str] | None) -> None:
    """A run's log is the one it opened with: `--log` cannot move it."""
    if log_path and Path(log_path).absolute() != Path(state.log):
        raise InputError(
            f"run {state.id} logs to {state.log}; --log cannot move it to another file"
        )


def checked_file(path: Path, expected: str | None, what: str) -> str:
    """A run file the helper wrote, refused if anyone changed it since."""
    try:
        text = read_exact(path)
    except (OSError, UnicodeDecodeError):
        raise RefusedError(f"the run's {what} ({path}) is missing or unreadable") from None
    if expected is not None and sha256(text) != expected:
        raise RefusedError(
            f"the run's {what} ({path.name}) was changed after the run opened; start a new run"
        )
    return text


def judged_files(state: RunState, r: Round) -> tuple[Rubric, str]:
    """The rubric and round `r`'s output as the helper wrote them, for
    judging a reply (the reviewer hook) or a round (the gate); refused if
    anyone changed either after the run opened."""
    from santa_method.core.rubric import rubric_from_json, rubric_hash

    folder = run_dir(state.id)
    rubric = rubric_from_json(json.loads(checked_file(folder / "rubric.json", None, "rubric")))
    if rubric_hash(rubric) != state.rubric_hash:
        raise RefusedError(
            "the run's rubric (rubric.json) was changed after the run opened; start a new run"
        )
    output = checked_file(folder / f"round-{r.round}" / "output.txt", None, "reviewed output")
    if sha256(output) != r.output_sha256:
        raise RefusedError(
            f"the run's reviewed output (output.txt) was changed after round {r.round} "
            "opened; start a new run"
        )
    return rubric, output


def merged_from_json(items: Sequence[dict[str, Any]]) -> list[MergedIssue]:
    return [MergedIssue.from_json(i) for i in items]


def last_flags(run_id: str) -> list[MergedIssue]:
    """The merged flags of the run's last gate (what a fix is owed for)."""
    gated = [r for r in load_state(run_id).rounds if r.gates]
    return list(gated[-1].gates[-1].issues) if gated else []
