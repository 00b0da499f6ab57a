"""The run state machine, as one import: `from santa_method.state import runs`.

The loop's state lives in files under `.santa/runs/<id>/`, so neither a
model in Claude Code nor a script can skip a step, exceed the cap, or ship
without a NICE gate. Every transition checks the state first and refuses
(RefusedError, exit 1) what is out of order. Each part has its own module:

- `store`: run ids, the folder, the lock, loading and saving the state;
- `target`: what is reviewed (a file or a git diff) and the pre-check;
- `rounds`: opening round 1, the next round, a re-review; where a run stands;
- `slots`: reviewer spawns and the reply store;
- `waiting`: the reviewers started and not heard from yet, and their deadline;
- `late`: replies no slot can take, and what they count for;
- `gating`: gating a round and deciding what comes next;
- `fixes`: the fixer's assignment and report;
- `events`: ship, fix, escalate, escape, waive, generate;
- `sources`: the one provenance check per source of reviews (Claude Code's
  transcript checks are in `claude_code/provenance.py`).

This module only gathers their public names, for the faces that drive a run.
"""

from __future__ import annotations

from santa_method.state.events import LOGGABLE, log_event
from santa_method.state.fixes import FIXER_REPLY, fixer_open, record_fixer_reply
from santa_method.state.gating import gate_run
from santa_method.state.log import as_number, logged_cost
from santa_method.state.rounds import RoundOpened, describe, next_round, reopen, start_run
from santa_method.state.slots import (
    FIX_MARKER,
    REVIEW_MARKER,
    Stored,
    find_round,
    keep_reply,
    model_refusal,
    reserve_reviewer,
    round_of_reply,
    store_reply,
)
from santa_method.state.store import (
    STATE_VERSION,
    is_run_id,
    last_flags,
    list_run_ids,
    load_state,
    locked_state,
    new_run_id,
    run_dir,
    runs_dir,
    save_state,
    sha256,
)
from santa_method.state.target import (
    PRE_CHECK_TIMEOUT,
    check_rev,
    read_target,
    target_name,
    working_copy,
)
from santa_method.state.waiting import DEADLINE_MINUTES, StillReviewing, wait_step

__all__ = [
    "DEADLINE_MINUTES",
    "FIXER_REPLY",
    "FIX_MARKER",
    "LOGGABLE",
    "PRE_CHECK_TIMEOUT",
    "REVIEW_MARKER",
    "STATE_VERSION",
    "RoundOpened",
    "StillReviewing",
    "Stored",
    "as_number",
    "check_rev",
    "describe",
    "find_round",
    "fixer_open",
    "gate_run",
    "is_run_id",
    "keep_reply",
    "last_flags",
    "list_run_ids",
    "load_state",
    "locked_state",
    "log_event",
    "logged_cost",
    "model_refusal",
    "new_run_id",
    "next_round",
    "read_target",
    "record_fixer_reply",
    "reopen",
    "reserve_reviewer",
    "round_of_reply",
    "run_dir",
    "runs_dir",
    "save_state",
    "sha256",
    "start_run",
    "store_reply",
    "target_name",
    "wait_step",
    "working_copy",
]
