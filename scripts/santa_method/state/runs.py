"""The run state machine: rounds, the reply store, gating a run, logged events.

The loop's state lives here, in files under `.santa/runs/<id>/`, so neither
a model in Claude Code nor a script can skip a step, exceed the cap, or ship
without a NICE gate. Every transition checks the state first and refuses
(RefusedError, exit 1) what is out of order:

    round start (round 1) -> replies stored -> gate
        gate says ship      -> log ship                       (run shipped)
        gate says fix       -> log fix -> round start (n+1)   (up to max_fixes)
        gate says rereview  -> round start (same round, open slots only)
        gate says escalate  -> report written                  (run escalated)

A round is *open* from `round start` until its gate: only then can replies be
stored or reviewers reserved, and only an open round can be gated, so a round
is never gated twice without `round start` in between (which is what counts
re-reviews). Shipping re-checks what the NICE gate saw: every expected slot a
valid PASS, and the target still the very content that was reviewed.

A run records where its reviews come from (`source`): `hook` (Claude Code's
reviewer hook stores each reply with its transcript, checked at the gate),
`files` (review files given to the gate, for hosts without hooks) or `api`
(the headless loop stores the replies of the calls it made itself).

State changes happen under an exclusive lock on the run folder, because
reviewers finish concurrently and each stop hook stores its reply at once;
`state.json` is replaced atomically, so unlocked readers (`load`) never see
half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core import assignment as texts
from santa_method.core import numbers
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.files import MAX_REVIEW_BYTES, read_text
from santa_method.core.fixreport import NEEDS_INPUT, FixReport, parse_report
from santa_method.core.gate import default_labels, gate
from santa_method.core.history import FIXES_EXHAUSTED, MAX_REREVIEWS, decide
from santa_method.core.review import validate_reply
from santa_method.core.types import (
    GateResult,
    MergedIssue,
    Rubric,
    ValidationResult,
)
from santa_method.state import locks, transcripts
from santa_method.state import log as runlog
from santa_method.state.atomic import replace_bytes, replace_text
from santa_method.state.jsonfile import write_atomic
from santa_method.state.open_runs import mark_finished
from santa_method.state.paths import default_log_path, ensure_santa_dir, santa_dir

PRE_CHECK_TIMEOUT = 900
STATE_VERSION = 1
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
REVIEW_MARKER = "santa-method review, run "
FIX_MARKER = "santa-method fix, run "


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def runs_dir() -> Path:
    return santa_dir() / "runs"


def is_run_id(run_id: object) -> bool:
    """Whether `run_id` can name a run folder (never a path elsewhere)."""
    return isinstance(run_id, str) and bool(_RUN_ID.fullmatch(run_id)) and ".." not in run_id


def run_dir(run_id: str) -> Path:
    """The run's folder; the id is checked so it can never name a path elsewhere."""
    if not is_run_id(run_id):
        raise InputError(f"'{run_id}' is not a run id")
    return runs_dir() / run_id


@contextlib.contextmanager
def _locked(run_id: str) -> Iterator[dict[str, Any]]:
    """Load the run's state under an exclusive lock; save it only on a clean
    exit, so a refusal or a crash half-way leaves the state as it was."""
    folder = run_dir(run_id)
    state_file = folder / "state.json"
    if not state_file.exists():
        raise InputError(f"no run '{run_id}' under {runs_dir()}")
    with open(folder / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(state_file.read_text(encoding="utf-8"))
        yield state
        _save(folder, state)


def _save(folder: Path, state: dict[str, Any]) -> None:
    write_atomic(folder / "state.json", state, indent=2)
    # Only once the state itself says so: the guard trusts this mark.
    mark_finished(str(folder.parent), folder.name, state["status"])


def load(run_id: str) -> dict[str, Any]:
    """A snapshot of the run's state (read-only use)."""
    state_file = run_dir(run_id) / "state.json"
    if not state_file.exists():
        raise InputError(f"no run '{run_id}' under {runs_dir()}")
    return json.loads(state_file.read_text(encoding="utf-8"))


def _now() -> str:
    return runlog.now_iso()


def _log(state: dict[str, Any], event: str, iteration: Any, **data: Any) -> dict[str, Any]:
    record = {"run_id": state["id"], "event": event, "iteration": iteration, **data}
    return runlog.append(state["log"], record)


# --- what is reviewed -----------------------------------------------------


def check_rev(rev: str, cwd: str) -> None:
    """A revision for `--against-diff` must be one git knows, never an option."""
    if not rev or rev.startswith("-") or any(ch.isspace() for ch in rev):
        raise InputError(f"'{rev}' is not a git revision")
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise InputError(f"'{rev}' is not a commit of the git repository at {cwd}")


def read_target(target: dict[str, Any]) -> str:
    """The current content under review: the file, or the diff recomputed now."""
    if target["kind"] == "file":
        return read_text(target["path"], "target")
    rev = target["rev"]
    if rev.startswith("-"):
        raise InputError(f"'{rev}' is not a git revision")
    result = subprocess.run(
        ["git", "diff", "--no-color", "--no-ext-diff", "--no-textconv", rev, "--"],
        cwd=target["cwd"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise InputError(f"git diff {rev} failed: {result.stderr.strip() or 'unknown error'}")
    return result.stdout + _untracked_diff(target["cwd"])


def working_copy(target: dict[str, Any]) -> str | None:
    """The run's own copy of the user's file, when it reviewed one (headless runs)."""
    return str(target["path"]) if target["kind"] == "file" and target.get("original") else None


def _reviewed_name(target: dict[str, Any]) -> str:
    """The file whose content was reviewed (a working copy, for a headless run)."""
    return target["path"] if target["kind"] == "file" else target_name(target)


def _untracked_diff(cwd: str) -> str:
    """New files git does not track yet are part of the change under review:
    `git diff REV` alone would leave them out of the reviewers' sight."""
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    parts = []
    for name in sorted(n for n in listed.stdout.split("\0") if n):
        if name == ".santa" or name.startswith(".santa/"):
            continue
        shown = subprocess.run(
            ["git", "diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", name],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        parts.append(shown.stdout)
    return "".join(parts)


def target_name(target: dict[str, Any]) -> str:
    """The name a person knows the target by: the file they named (a headless
    run reviews a working copy of it, kept as `path`, and names the file as
    `original`; older runs have no `original`), or diff:REV."""
    if target["kind"] == "file":
        return str(target.get("original") or target["path"])
    return f"diff:{target['rev']}"


def _run_pre_check(command: str | None, cwd: str) -> None:
    if not command:
        return
    try:
        result = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=PRE_CHECK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RefusedError(f"the pre-check '{command}' timed out; no reviewer was spent") from None
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
        detail = (": " + " | ".join(tail)) if tail else ""
        raise RefusedError(
            f"the pre-check '{command}' failed (exit {result.returncode}){detail}; "
            "fix it before spending reviewers"
        )


# --- opening rounds -------------------------------------------------------


@dataclass(frozen=True)
class RoundOpened:
    run_id: str
    round: int
    assignment: str
    instruction: str
    canary: str
    open_slots: tuple[str, ...]
    rereview: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "round": self.round,
            "assignment": self.assignment,
            "instruction": self.instruction,
            "canary": self.canary,
            "open_slots": list(self.open_slots),
            "reviewers": len(self.open_slots),
            "rereview": self.rereview,
        }


def _opened(state: dict[str, Any], rereview: bool) -> RoundOpened:
    r = state["rounds"][-1]
    slots = tuple(label for label, slot in r["slots"].items() if slot is None)
    return RoundOpened(
        state["id"], r["round"], r["assignment"], r["instruction"], r["canary"], slots, rereview
    )


def new_run_id() -> str:
    """A fresh run id (a caller may draw it first, to lock the run before it exists)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def _checked(path: Path, expected: str | None, what: str) -> str:
    """A run file the helper wrote, refused if anyone changed it since."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise RefusedError(f"the run's {what} ({path}) is missing or unreadable") from None
    if expected is not None and sha256(text) != expected:
        raise RefusedError(
            f"the run's {what} ({path.name}) was changed after the run opened; start a new run"
        )
    return text


def _assignment_body(folder: Path, state: dict[str, Any], r: dict[str, Any]) -> str:
    """The round's assignment, rebuilt from the run's checked files: the
    same bytes every time, so a tampered file can be detected and restored."""
    return texts.reviewer_assignment(
        run_id=state["id"],
        round_number=r["round"],
        reviewers=state["reviewers"],
        rubric_markdown=_checked(folder / "rubric.md", state.get("rubric_md_sha256"), "rubric"),
        spec=_checked(folder / "spec.md", state.get("spec_sha256"), "spec"),
        output=_checked(
            folder / f"round-{r['round']}" / "output.txt", r["output_sha256"], "reviewed output"
        ),
        boundary=r["boundary"],
        canary=r["canary"],
    )


def _assignment_intact(r: dict[str, Any]) -> bool:
    try:
        text = Path(r["assignment"]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return sha256(text) == r["assignment_sha256"]


def _write_round(folder: Path, state: dict[str, Any], number: int, output: str) -> dict[str, Any]:
    if not output.strip():
        raise RefusedError("the output under review is empty; there is nothing to verify")
    spec = _checked(folder / "spec.md", state.get("spec_sha256"), "spec")
    # The boundary stays the same for the whole run so the shared prefix is
    # byte-identical across rounds (prompt caches); a fix that put it into
    # the output only costs a new one, never an open fence.
    if state["boundary"] in output:
        state["boundary"] = texts.boundary_for(spec, output)
    round_dir = folder / f"round-{number}"
    round_dir.mkdir(exist_ok=True)
    replace_text(round_dir / "output.txt", output)
    path = round_dir / "assignment.md"
    labels = default_labels(state["reviewers"])
    r: dict[str, Any] = {
        "round": number,
        "opened": _now(),
        "canary": texts.new_token(),
        "boundary": state["boundary"],
        "assignment": str(path),
        "instruction": texts.reviewer_instruction(str(path), state["id"], number),
        "output_sha256": sha256(output),
        "open": True,
        "rereviews": 0,
        "capacity": len(labels),
        "spawned": 0,
        "slots": {label: None for label in labels},
        "gates": [],
    }
    body = _assignment_body(folder, state, r)
    replace_text(path, body)
    r["assignment_sha256"] = sha256(body)
    return r


def start_run(
    *,
    target: dict[str, Any],
    spec: str,
    rubric: Rubric,
    rubric_name: str,
    rubric_markdown: str,
    rubric_hash: str,
    reviewers: int,
    max_fixes: int,
    source: str,
    models: Any = None,
    budget_usd: float | None = None,
    pre_check: str | None = None,
    log_path: str | os.PathLike[str] | None = None,
    cwd: str | None = None,
    run_id: str | None = None,
    in_place: bool = False,
) -> RoundOpened:
    """Open a run and its round 1, after the pre-check passes.

    Nothing is written (no folder, no assignment, no log record) unless the
    inputs are usable and the pre-check passed. The log's `run` record comes
    first, so no run folder is ever without one: a process killed while it
    writes the folder leaves a logged run without state, which `santa runs`
    shows and `santa log escalate` closes.
    """
    numbers.REVIEWERS.check(reviewers, "reviewers")
    numbers.MAX_FIXES.check(max_fixes, "max_fixes")
    if budget_usd is not None:
        numbers.BUDGET_USD.check(budget_usd, "budget_usd")
    if source not in ("hook", "files", "api"):
        raise InputError("the source must be 'hook', 'files' or 'api'")
    if not spec.strip():
        raise InputError("the spec is empty; say what the output must do")
    work_dir = cwd or str(Path.cwd())
    output = read_target(target)
    if not output.strip():
        raise RefusedError("the output under review is empty; there is nothing to verify")
    _run_pre_check(pre_check, work_dir)
    ensure_santa_dir()
    run_id = run_id or new_run_id()
    folder = run_dir(run_id)
    if folder.exists():
        raise InputError(f"run {run_id} exists already")
    log_file = Path(log_path) if log_path else default_log_path()
    state: dict[str, Any] = {
        "version": STATE_VERSION,
        "id": run_id,
        "created": _now(),
        "status": "open",
        "target": target,
        "rubric": rubric_name,
        "rubric_hash": rubric_hash,
        "reviewers": reviewers,
        "max_fixes": max_fixes,
        "budget_usd": budget_usd,
        "source": source,
        "models": models,
        "pre_check": pre_check,
        "cwd": work_dir,
        "log": str(log_file.absolute()),
        "boundary": texts.boundary_for(spec, output),
        "spec_sha256": sha256(spec),
        "rubric_md_sha256": sha256(rubric_markdown),
        "rounds": [],
        "fixes": [],
        "last_gate": None,
        "fixer": None,
        "escalation": None,
        "in_place": bool(in_place),  # the fixes go to the user's file itself
    }
    _log(
        state,
        "run",
        0,
        target=target_name(target),
        **({"working_copy": copy} if (copy := working_copy(target)) else {}),
        target_sha256=sha256(output),
        spec_sha256=sha256(spec),
        rubric=rubric_name,
        rubric_hash=rubric_hash,
        models=models,
        reviewers=reviewers,
        source=source,
        max_fixes=max_fixes,
    )
    try:
        folder.mkdir(parents=True)
        replace_text(folder / "spec.md", spec)
        replace_text(folder / "rubric.md", rubric_markdown)
        replace_text(folder / "rubric.json", json.dumps(rubric.to_json(), indent=2))
        state["rounds"].append(_write_round(folder, state, 1, output))
        _save(folder, state)
    except BaseException as exc:  # the logged run must not stay open with no folder
        with contextlib.suppress(Exception):
            _log(state, "escalate", 1, reason=f"the run folder could not be written: {exc}")
        raise
    return _opened(state, False)


def _cap_refusal(state: dict[str, Any], number: int) -> str:
    cap = state["max_fixes"] + 1
    return (
        f"round {number} would pass the cap of {cap} round{'s' if cap != 1 else ''} "
        f"(max_fixes {state['max_fixes']}); run {state['id']} goes to a person instead"
    )


def _next_round_check(state: dict[str, Any]) -> str:
    """What `round start --run` would do now ('rereview' or 'fresh'), or a refusal."""
    current = state["rounds"][-1]
    last = state["last_gate"]
    gated_now = last is not None and last["round"] == current["round"]
    if state["status"] != "open":
        reasons = (state.get("escalation") or {}).get("reasons") or []
        if (
            gated_now
            and any(r.startswith(FIXES_EXHAUSTED) for r in reasons)
            and current["round"] + 1 > state["max_fixes"] + 1
        ):
            raise RefusedError(
                _cap_refusal(state, current["round"] + 1) + f" (it is {state['status']})"
            )
        raise RefusedError(
            f"run {state['id']} is {state['status']}; no more rounds, start a new run"
        )
    if current["open"] or not gated_now:
        raise RefusedError(
            f"round {current['round']} of run {state['id']} has not been gated yet; "
            f"run 'santa gate --run {state['id']}' first"
        )
    if last["next"] == "rereview":
        if current["rereviews"] >= MAX_REREVIEWS:
            raise RefusedError(
                f"round {current['round']} has had {MAX_REREVIEWS} re-reviews already"
            )
        return "rereview"
    if last["next"] != "fix":
        raise RefusedError(
            f"the last gate of run {state['id']} said '{last['next']}', not 'fix' or 'rereview'; "
            + ("log the ship instead" if last["next"] == "ship" else "no new round")
        )
    number = current["round"] + 1
    if number > state["max_fixes"] + 1:
        raise RefusedError(_cap_refusal(state, number))
    if not any(f["after_round"] == current["round"] for f in state["fixes"]):
        raise RefusedError(
            f"no fix is logged after round {current['round']}; run "
            f"'santa log fix --run {state['id']}' once the fixer is done"
        )
    return "fresh"


def next_round(run_id: str) -> RoundOpened:
    """Open the round the last gate asked for: a fresh one after a logged
    fix, or the same one again for its failed or missing slots."""
    kind = _next_round_check(load(run_id))
    if kind == "fresh":
        # The pre-check may take minutes: run it outside the lock, then check
        # the state again under the lock before changing anything.
        state = load(run_id)
        _run_pre_check(state.get("pre_check"), state["cwd"])
    with _locked(run_id) as state:
        if _next_round_check(state) != kind:
            raise RefusedError(f"run {run_id} changed while the round was being opened; try again")
        current = state["rounds"][-1]
        if kind == "rereview":
            for label, slot in current["slots"].items():
                if not _slot_stands(slot):
                    current["slots"][label] = None
            if not _assignment_intact(current):
                body = _assignment_body(run_dir(run_id), state, current)
                replace_text(Path(current["assignment"]), body)
            current["rereviews"] += 1
            current["open"] = True
            current["spawned"] = 0
            current["capacity"] = sum(1 for s in current["slots"].values() if s is None)
            return _opened(state, True)
        output = read_target(state["target"])
        state["rounds"].append(_write_round(run_dir(run_id), state, current["round"] + 1, output))
        state["fixer"] = None
        return _opened(state, False)


def reopen(run_id: str) -> RoundOpened | None:
    """The round a resumed process continues: the open round of an open run
    (its empty slots to fill, or none left and only the gate to run), or
    None when the run is past that point."""
    state = load(run_id)
    if state["status"] != "open":
        return None
    current = state["rounds"][-1]
    if not current["open"]:
        return None
    return _opened(state, current["rereviews"] > 0)


def _slot_stands(slot: dict[str, Any] | None) -> bool:
    """A slot keeps its reply across a re-review only if the last gate found it valid."""
    return slot is not None and slot.get("gated_valid") is True


# --- the reply store (written by the Claude Code hook) ---------------------


def _run_of(instruction: str, marker: str) -> str | None:
    text = instruction.strip() if isinstance(instruction, str) else ""
    if not text.startswith(marker):
        return None
    run_id = text[len(marker) :].split(",", 1)[0]
    return run_id if _RUN_ID.fullmatch(run_id) else None


def find_round(instruction: str) -> tuple[str, int] | None:
    """The open run and round whose reviewer instruction is exactly `instruction`."""
    run_id = _run_of(instruction, REVIEW_MARKER)
    if run_id is None:
        return None
    try:
        state = load(run_id)
    except InputError:
        return None
    if state["status"] != "open" or not state["rounds"]:
        return None
    current = state["rounds"][-1]
    if current["instruction"] != instruction.strip():
        return None
    return run_id, current["round"]


def _accepting(state: dict[str, Any], round_number: int) -> str | None:
    """Why the round cannot take reviewers or replies now, or None."""
    current = state["rounds"][-1]
    if state["status"] != "open":
        return f"run {state['id']} is {state['status']}"
    if current["round"] != round_number:
        return f"round {round_number} is over; the current round is {current['round']}"
    if not current["open"]:
        return f"round {round_number} has been gated already"
    return None


def reserve_reviewer(run_id: str, round_number: int, tool_use_id: str | None = None) -> str | None:
    """Count one reviewer spawn: None when allowed, else the reason it is not.

    A round (or a re-review) has as many spawns as it had open slots when it
    was opened; a reviewer that dies without a reply leaves its slot empty,
    which the gate counts as a failed review and a re-review reopens.
    """
    with _locked(run_id) as state:
        why = _accepting(state, round_number)
        if why:
            return why
        current = state["rounds"][-1]
        seen = current.setdefault("spawn_ids", [])
        if tool_use_id and tool_use_id in seen:
            # The same Agent call seen twice (plugin and vendored hooks both
            # installed): one reviewer, one slot.
            return None
        if current["spawned"] >= current["capacity"]:
            return (
                f"round {round_number} has {current['capacity']} open reviewer slot(s) "
                "and every one has its reviewer"
            )
        current["spawned"] += 1
        if tool_use_id:
            seen.append(tool_use_id)
        return None


def _keep_transcript(run_id: str, round_number: int, agent_id: str, source: str) -> str | None:
    """A copy of the reviewer's transcript, as it stood when its reply was
    stored, kept with the run: the gate may run where Claude Code's own
    folder is out of reach (a sandboxed shell), and later edits to the
    original cannot change what was judged."""
    if not source:
        return None
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in agent_id) or "unknown"
    target = run_dir(run_id) / f"round-{round_number}" / "transcripts" / f"{safe}.jsonl"
    try:
        data = Path(source).read_bytes()
    except OSError:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_bytes(target, data)
    return str(target)


def store_reply(
    run_id: str,
    round_number: int,
    *,
    reply: str,
    agent_id: str,
    transcript_path: str,
    failed: bool = False,
    errors: Sequence[str] = (),
    tokens: int | None = None,
    cost_usd: float | None = None,
    token_detail: dict[str, int] | None = None,
) -> str:
    """Put a reviewer's reply into the round's first open slot; returns its label.

    One agent fills at most one slot: storing again for the same agent
    replaces its own reply (a hook that runs twice), never takes a second.
    `token_detail` (input, output, cache_read, cache_write, total), when the
    caller knows it, goes into the review record beside `tokens`, so the log
    shows what prompt caching saved.
    """
    with _locked(run_id) as state:
        why = _accepting(state, round_number)
        if why:
            raise RefusedError(f"cannot store the reply: {why}")
        current = state["rounds"][-1]
        kept = _keep_transcript(run_id, current["round"], str(agent_id), str(transcript_path or ""))
        slot = {
            "reply": reply if isinstance(reply, str) else "",
            "agent_id": str(agent_id),
            "transcript_path": kept or str(transcript_path or ""),
            "transcript_source": str(transcript_path or ""),
            "failed": bool(failed),
            "errors": [str(e) for e in errors],
            "tokens": tokens,
            "cost_usd": cost_usd,
            "token_detail": dict(token_detail) if token_detail else None,
            "stored": _now(),
        }
        for label, held in current["slots"].items():
            if held is not None and held.get("agent_id") == slot["agent_id"]:
                if _slot_stands(held):
                    raise RefusedError(f"reviewer {label}'s reply was already gated")
                current["slots"][label] = slot
                return label
        if state["source"] == "hook":
            # Only a reviewer the PreToolUse guard let through may fill a slot:
            # a reply that arrives without a spawn is not a reviewer's.
            filled = sum(
                1
                for held in current["slots"].values()
                if held is not None and not _slot_stands(held)
            )
            if filled >= current["spawned"]:
                raise RefusedError(
                    f"no reviewer was spawned for this reply in round {round_number}; "
                    "replies count only from reviewers started through the Agent tool"
                )
        for label, held in current["slots"].items():
            if held is None:
                current["slots"][label] = slot
                return label
        raise RefusedError(f"every reviewer slot of round {round_number} is filled")


def fixer_open(instruction: str) -> bool:
    """Whether `instruction` is exactly the fixer instruction of an open fix."""
    run_id = _run_of(instruction, FIX_MARKER)
    if run_id is None:
        return False
    try:
        state = load(run_id)
    except InputError:
        return False
    fixer: dict[str, Any] = state.get("fixer") or {}
    last: dict[str, Any] = state.get("last_gate") or {}
    if fixer.get("assignment_sha256"):
        # The fixer reads its flags from the file: an edited file would hand
        # it flags no reviewer raised.
        try:
            body = Path(fixer["assignment"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if sha256(body) != fixer["assignment_sha256"]:
            return False
    return (
        state["status"] == "open"
        and bool(fixer)
        and fixer["instruction"] == instruction.strip()
        and bool(last)
        and last["next"] == "fix"
        and fixer["round"] == state["rounds"][-1]["round"]
    )


# --- transcripts ----------------------------------------------------------


message_text = transcripts.message_text


def _last_reply_forms(records: list[dict[str, Any]]) -> set[str]:
    """The ways the reviewer's final message can be written as one string.

    Claude Code writes one record per content block, all sharing the
    message's id; the final message is the last group with text.
    """
    groups: list[list[str]] = []
    last_id: object = object()
    for record in records:
        if record.get("type") != "assistant":
            last_id = object()
            continue
        message = record.get("message")
        msg_id = message.get("id") if isinstance(message, dict) else None
        blocks = [b for b in transcripts.text_blocks(message) if b.strip()]
        if groups and msg_id is not None and msg_id == last_id:
            groups[-1].extend(blocks)
        else:
            groups.append(blocks)
        last_id = msg_id if msg_id is not None else object()
    final = next((g for g in reversed(groups) if g), None)
    if final is None:
        return set()
    return {"\n".join(final).strip(), "".join(final).strip(), final[-1].strip()}


STOP_HOOK_FEEDBACK = "Stop hook feedback:"


def reading_problem(records: list[dict[str, Any]], assignment: str) -> str | None:
    """Why the transcript does not show the reviewer reading its whole
    assignment, and nothing else of santa's run files; None if it does."""
    try:
        lines = Path(assignment).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return "the round's assignment file cannot be read"
    changed = transcripts.first_changed_line(records, assignment, lines)
    if changed is not None:
        return (
            f"what the reviewer read differs from the round's assignment (line {changed}): "
            "the file was changed while it was being reviewed"
        )
    gaps = transcripts.unread_lines(records, assignment, len(lines))
    if gaps:
        return (
            f"the reviewer did not read the whole assignment (lines {transcripts.describe_gaps(gaps)} "
            "unread); read it to the end with the Read tool"
        )
    peeked = transcripts.peeked_files(records, str(santa_dir()), assignment)
    if peeked:
        return f"the reviewer looked at santa's run files besides its assignment ({peeked[0]})"
    return None


def _told_more(record: dict[str, Any]) -> bool:
    """Whether a later user record tells the reviewer something: only tool
    results and our own stop-hook feedback may follow the instruction."""
    if record.get("type") != "user":
        return False
    text = message_text(record.get("message")).strip()
    if not text:
        return False
    return not (record.get("isMeta") is True and text.startswith(STOP_HOOK_FEEDBACK))


def transcript_problem(
    path: str,
    instruction: str,
    reply: str,
    agent_id: str | None = None,
    *,
    require_agent_id: bool = False,
    assignment: str | None = None,
) -> str | None:
    """Why a stored reply cannot be trusted as this reviewer's own, or None.

    The transcript's first message is the prompt the reviewer was given; it
    must be the round's instruction. The reply must be the reviewer's own
    final message in that transcript, so no one else's text (and no earlier
    draft) can stand in for it.
    """
    if not path:
        return "no transcript was recorded for this reply"
    try:
        records = transcripts.read(path)
    except (OSError, UnicodeDecodeError):
        return "the reviewer's transcript cannot be read"
    messages = [r for r in records if r.get("type") in ("user", "assistant")]
    if not messages:
        return "the reviewer's transcript is empty"
    if agent_id and any(
        isinstance(r.get("agentId"), str) and r["agentId"] != agent_id for r in records
    ):
        return "the transcript belongs to another agent"
    first = messages[0]
    if require_agent_id and (not agent_id or first.get("agentId") != agent_id):
        # Claude Code stamps a subagent's transcript with its agent id.
        return "the transcript is not the transcript of this reviewer agent"
    if first.get("type") != "user" or message_text(first.get("message")).strip() != instruction:
        return "the reviewer's transcript does not start with this round's instruction"
    if require_agent_id and any(_told_more(r) for r in messages[1:]):
        return "the reviewer was sent messages besides its instruction (e.g. SendMessage)"
    if assignment is not None:
        problem = reading_problem(records, assignment)
        if problem:
            return problem
    if not reply.strip():
        return "the stored reply is empty"
    if reply.strip() not in _last_reply_forms(messages):
        return "the stored reply is not the reviewer's final reply in its transcript"
    return None


# --- gating a run ---------------------------------------------------------


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def logged_cost(records: Sequence[dict[str, Any]], run_id: str) -> float | None:
    """What verifying the run has cost so far, from its review and fix records."""
    costs = [
        as_number(r.get("cost_usd"))
        for r in records
        if r.get("run_id") == run_id and r.get("event") in ("review", "fix")
    ]
    known = [c for c in costs if c is not None]
    return sum(known) if known else None


def _merged_from_json(items: Sequence[dict[str, Any]]) -> list[MergedIssue]:
    return [MergedIssue.from_json(i) for i in items]


def last_flags(run_id: str) -> list[MergedIssue]:
    """The merged flags of the run's last gate (what a fix is owed for)."""
    gated = [r for r in load(run_id)["rounds"] if r["gates"]]
    return _merged_from_json(gated[-1]["gates"][-1]["issues"]) if gated else []


def _fill_from_files(
    state: dict[str, Any], files: Sequence[str], labels: Sequence[str] | None
) -> None:
    current = state["rounds"][-1]
    if state["source"] != "files":
        raise RefusedError(
            f"run {state['id']} takes reviews only from the hook's store "
            "(its source is 'hook'), not from files"
        )
    open_labels = [lab for lab, slot in current["slots"].items() if slot is None]
    if labels is not None and len(labels) != len(files):
        raise InputError("--labels must name one label per review file")
    targets = list(labels) if labels is not None else open_labels[: len(files)]
    if len(files) > len(open_labels) or any(t not in open_labels for t in targets):
        raise RefusedError(
            f"round {current['round']} has open slot(s) {', '.join(open_labels) or 'none'}; "
            f"{len(files)} review file(s) do not fit"
        )
    for label, path in zip(targets, files, strict=True):
        current["slots"][label] = {
            "reply": read_text(path, "review", MAX_REVIEW_BYTES),
            "file": path,
            "stored": _now(),
        }


def _provenance_problem(
    state: dict[str, Any], slot: dict[str, Any], seen: dict[str, str]
) -> str | None:
    """Why a slot's reply cannot count as its own reviewer's, or None.

    By source: `hook` takes only replies stored by the reviewer hook, each
    the final reply in a transcript that starts with the round's
    instruction; `files` takes review files (and hook-stored replies, checked
    the same way); `api` takes replies the headless loop stored after making
    each reviewer's call itself, so there is no transcript to check. In every
    source one agent, or one transcript, fills one slot at most.
    """
    via_store = "agent_id" in slot
    for key in (slot.get("agent_id"), slot.get("transcript_source") or slot.get("transcript_path")):
        if key and key in seen:
            return f"the same reviewer already fills slot {seen[key]}"
    if state["source"] == "api":
        return None
    if not via_store:
        return (
            "the reply did not come through the reviewer hook"
            if state["source"] == "hook"
            else None
        )
    return transcript_problem(
        slot.get("transcript_path", ""),
        state["rounds"][-1]["instruction"],
        slot.get("reply", ""),
        slot.get("agent_id"),
        require_agent_id=True,
        assignment=state["rounds"][-1]["assignment"],
    )


def _validate_slots(
    state: dict[str, Any], rubric: Rubric, output: str
) -> list[ValidationResult | None]:
    """Each slot's validation; anything that makes a reply untrustworthy makes it invalid."""
    current = state["rounds"][-1]
    results: list[ValidationResult | None] = []
    seen_agents: dict[str, str] = {}
    seen_reviews: dict[Any, str] = {}
    for label, slot in current["slots"].items():
        if slot is None:
            results.append(None)
            continue
        problem = _provenance_problem(state, slot, seen_agents)
        for key in (
            slot.get("agent_id"),
            slot.get("transcript_source") or slot.get("transcript_path"),
        ):
            if key:
                seen_agents.setdefault(key, label)
        if slot.get("failed"):
            errors = tuple(slot.get("errors") or ["the reviewer's reply failed validation"])
            results.append(ValidationResult(False, errors))
            continue
        if problem:
            results.append(ValidationResult(False, (problem,)))
            continue
        result = validate_reply(
            slot.get("reply", ""), rubric=rubric, output=output, canary=current["canary"]
        )
        if result.valid and "file" in slot:
            # Review files have no transcript behind them: one review handed
            # in twice must not count as two reviewers.
            key = result.review
            if key in seen_reviews:
                result = ValidationResult(
                    False,
                    (f"this review is identical to reviewer {seen_reviews[key]}'s",),
                    result.warnings,
                    result.review,
                )
            else:
                seen_reviews[key] = label
        results.append(result)
    return results


def _check_log_path(state: dict[str, Any], log_path: str | os.PathLike[str] | None) -> None:
    if log_path and Path(log_path).absolute() != Path(state["log"]):
        raise InputError(
            f"run {state['id']} logs to {state['log']}; --log cannot move it to another file"
        )


def gate_run(
    run_id: str,
    *,
    iteration: int | None = None,
    review_files: Sequence[str] = (),
    labels: Sequence[str] | None = None,
    log_path: str | None = None,
) -> GateResult:
    """Gate the current round of a run and decide what comes next."""
    from santa_method.core.rubric import rubric_from_json, rubric_hash

    with _locked(run_id) as state:
        _check_log_path(state, log_path)
        if state["status"] != "open":
            raise RefusedError(f"run {run_id} is {state['status']}; there is nothing to gate")
        current = state["rounds"][-1]
        if iteration is not None and iteration != current["round"]:
            raise RefusedError(f"only the current round ({current['round']}) can be gated")
        if not current["open"]:
            raise RefusedError(
                f"round {current['round']} of run {run_id} was gated already "
                f"(next: {state['last_gate']['next']}); a round is gated once per opening"
            )
        if review_files:
            _fill_from_files(state, review_files, labels)
        elif labels is not None:
            raise InputError("--labels goes with review files")
        folder = run_dir(run_id)
        rubric = rubric_from_json(json.loads(_checked(folder / "rubric.json", None, "rubric")))
        if rubric_hash(rubric) != state["rubric_hash"]:
            raise RefusedError(
                "the run's rubric (rubric.json) was changed after the run opened; start a new run"
            )
        output = _checked(
            folder / f"round-{current['round']}" / "output.txt",
            current["output_sha256"],
            "reviewed output",
        )
        slot_labels = list(current["slots"])
        standing = {label for label in slot_labels if _slot_stands(current["slots"][label])}

        results = _validate_slots(state, rubric, output)
        if not _assignment_intact(current):
            # What the reviewers read is not what the helper wrote: no reply
            # of this round can count, standing ones included.
            results = [
                ValidationResult(False, ("the assignment file was changed after the round opened",))
                for _ in slot_labels
            ]
        core = gate(results, slot_labels, output=output, expected=state["reviewers"])

        new_costs = [
            as_number((current["slots"][label] or {}).get("cost_usd"))
            for label in slot_labels
            if label not in standing
        ]
        so_far = logged_cost(runlog.read(state["log"]).records, run_id)
        fresh = [c for c in new_costs if c is not None]
        cost = None if so_far is None and not fresh else (so_far or 0.0) + sum(fresh)
        earlier = [
            _merged_from_json(r["gates"][-1]["issues"]) for r in state["rounds"][:-1] if r["gates"]
        ]
        decision = decide(
            core.next,
            round_number=current["round"],
            max_fixes=state["max_fixes"],
            earlier_flags=earlier,
            current_flags=core.issues,
            rereviews=current["rereviews"],
            cost_usd=cost,
            budget_usd=state.get("budget_usd"),
        )
        if decision.next == "ship" and (
            core.verdict != "NICE"
            or len(core.reviews) != state["reviewers"]
            or not all(o.valid and o.verdict == "PASS" for o in core.reviews)
        ):
            raise RuntimeError("the gate said ship without a valid PASS from every reviewer")

        current["open"] = False
        for outcome in core.reviews:
            slot = current["slots"][outcome.label]
            if slot is not None:
                slot["gated_valid"] = outcome.valid
                slot["gated_verdict"] = outcome.verdict
        reasons = list(core.reasons) + list(decision.reasons)
        record = {
            "round": current["round"],
            "verdict": core.verdict,
            "next": decision.next,
            "issues": [i.to_json() for i in core.issues],
            "suggestions": list(core.suggestions),
            "agreement": core.agreement,
            "reasons": reasons,
            "ts": _now(),
        }
        current["gates"].append(record)
        state["last_gate"] = {
            "round": current["round"],
            "verdict": core.verdict,
            "next": decision.next,
        }

        result_extra: dict[str, Any] = {"run_id": run_id, "round": current["round"]}
        if decision.next == "fix":
            result_extra.update(_write_fixer(state, output, core.issues))
        elif decision.next == "rereview":
            result_extra["next_step"] = f"santa round start --run {run_id}"
        elif decision.next == "ship":
            result_extra["next_step"] = f"santa log ship --run {run_id}"
        elif decision.next == "escalate":
            state["status"] = "escalated"
            state["escalation"] = {"round": current["round"], "reasons": list(decision.reasons)}

        # The state is saved before the log is written: if logging fails, the
        # log lacks a gate the state has, and `log ship` (which needs both)
        # refuses. The other order could leave a NICE in the log that never was.
        _save(folder, state)
        for outcome in core.reviews:
            review = outcome.review
            slot = current["slots"][outcome.label] or {}
            extra: dict[str, Any] = {}
            if outcome.label in standing:
                extra["standing"] = True
            else:
                for key in ("tokens", "cost_usd", "token_detail"):
                    if slot.get(key) is not None:
                        extra[key] = slot[key]
            _log(
                state,
                "review",
                current["round"],
                label=outcome.label,
                valid=outcome.valid,
                verdict=outcome.verdict,
                errors=list(outcome.errors),
                checks=[{"criterion": c.criterion, "result": c.result} for c in review.checks]
                if review
                else [],
                issues=[i.to_json() for i in review.critical_issues] if review else [],
                agent_id=slot.get("agent_id"),
                rereview=current["rereviews"],
                **extra,
            )
        _log(
            state,
            "gate",
            current["round"],
            verdict=core.verdict,
            next=decision.next,
            issues=record["issues"],
            agreement=core.agreement,
            reviewers=slot_labels,
            valid_reviewers=[o.label for o in core.reviews if o.valid],
            reasons=reasons,
            rereview=current["rereviews"],
        )

        if decision.next == "escalate":
            _log(state, "escalate", current["round"], reason="; ".join(decision.reasons))

    if decision.next == "escalate":
        from santa_method.state.report import write_report

        result_extra["report"] = str(write_report(run_id))
    return GateResult(
        core.verdict,
        decision.next,
        core.reviews,
        core.issues,
        core.suggestions,
        core.agreement,
        tuple(reasons),
        result_extra,
    )


def _write_fixer(
    state: dict[str, Any], output: str, flags: Sequence[MergedIssue]
) -> dict[str, Any]:
    current = state["rounds"][-1]
    run_id = state["id"]
    name = (
        state["target"]["path"]
        if state["target"]["kind"] == "file"
        else f"the working tree (diff against {state['target']['rev']})"
    )
    spec = (run_dir(run_id) / "spec.md").read_text(encoding="utf-8")
    body = texts.fixer_assignment(
        run_id=run_id,
        round_number=current["round"],
        target=name,
        output=output,
        flags=flags,
        spec=spec,
        boundary=texts.boundary_for(
            output, spec, *(i.issue + (i.quote or "") + (i.missing or "") for i in flags)
        ),
    )
    path = run_dir(run_id) / f"round-{current['round']}" / "fixer-assignment.md"
    replace_text(path, body)
    instruction = texts.fixer_instruction(str(path), run_id, current["round"], name)
    state["fixer"] = {
        "round": current["round"],
        "instruction": instruction,
        "assignment": str(path),
        "assignment_sha256": sha256(body),
    }
    return {
        "fixer_instruction": instruction,
        "fixer_assignment": str(path),
        "next_step": f"santa log fix --run {run_id}, then santa round start --run {run_id}",
    }


# --- logged events --------------------------------------------------------

LOGGABLE = ("fix", "ship", "escalate", "escape", "waive", "generate")


def _round_iteration(event: str, iteration: Any, current: int) -> int:
    if iteration is None:
        return current
    if iteration != current:
        raise InputError(f"a {event} belongs to the current round ({current}), not {iteration!r}")
    return current


def _check_ship(state: dict[str, Any]) -> None:
    """Ship only what a NICE gate saw: every expected slot a valid PASS, and
    the target still the content that was reviewed."""
    run_id = state["id"]
    current = state["rounds"][-1]
    last = state["last_gate"]
    if not last or last["round"] != current["round"] or last["verdict"] != "NICE":
        said = f"said {last['verdict']} (next: {last['next']})" if last else "never happened"
        raise RefusedError(f"run {run_id} cannot ship: its last gate {said}, not NICE")
    slots = list(current["slots"].values())
    if len(slots) != state["reviewers"] or not all(
        s and s.get("gated_valid") is True and s.get("gated_verdict") == "PASS" for s in slots
    ):
        raise RefusedError(
            f"run {run_id} cannot ship: not every expected reviewer gave a valid PASS"
        )
    gates = [
        r
        for r in runlog.read(state["log"]).records
        if r.get("run_id") == run_id and r.get("event") == "gate"
    ]
    logged = gates[-1] if gates else None
    if (
        logged is None
        or logged.get("iteration") != current["round"]
        or logged.get("verdict") != "NICE"
        or sorted(logged.get("valid_reviewers") or []) != sorted(current["slots"])
    ):
        raise RefusedError(
            f"run {run_id} cannot ship: the log {state['log']} has no NICE gate of round "
            f"{current['round']} with every reviewer valid; the run state and the log disagree"
        )
    try:
        now = read_target(state["target"])
    except InputError as exc:
        raise RefusedError(f"run {run_id} cannot ship: {exc}") from None
    if sha256(now) != current["output_sha256"]:
        raise RefusedError(
            f"run {run_id} cannot ship: {_reviewed_name(state['target'])} changed after round "
            f"{current['round']} was reviewed; what ships must be what was reviewed "
            "(restore it, or verify the new content in a new run)"
        )


FIXER_REPLY = "fixer-reply.txt"


def record_fixer_reply(instruction: str, reply: str) -> bool:
    """Keep the fixer's final reply for `santa log fix` (the SubagentStop hook
    calls this); False when the instruction is no open fix's."""
    if not fixer_open(instruction):
        return False
    run_id = _run_of(instruction, FIX_MARKER)
    assert run_id is not None
    state = load(run_id)
    path = run_dir(run_id) / f"round-{state['fixer']['round']}" / FIXER_REPLY
    replace_text(path, reply)
    return True


def _fix_report(state: dict[str, Any], data: dict[str, Any]) -> FixReport:
    """The fixer's report: the notes given with the fix, else the reply the
    SubagentStop hook kept. The notes go into the log record either way."""
    current = state["rounds"][-1]
    notes = data.get("notes")
    if not isinstance(notes, str) or not notes.strip():
        kept = run_dir(state["id"]) / f"round-{current['round']}" / FIXER_REPLY
        notes = kept.read_text(encoding="utf-8") if kept.is_file() else ""
        if notes:
            data["notes"] = notes[:4000]
    flags = _merged_from_json(current["gates"][-1]["issues"])
    report = parse_report(notes, flags)
    data["report"] = report.to_json()
    return report


def _keep_unreviewed(state: dict[str, Any]) -> bool:
    """Keep what the fixer left in a file target as the round's unreviewed
    fix, so the one restore of escalated runs (`unreviewed.restore_reviewed`,
    called once the escalation is logged) puts the reviewed text back. True
    when the target differs from what was reviewed (it will be restored)."""
    target = state["target"]
    if target.get("kind") != "file":
        return False
    current = state["rounds"][-1]
    try:
        now = Path(target["path"]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if sha256(now) == current["output_sha256"]:
        return False
    from santa_method.state.unreviewed import keep_fix

    keep_fix(state["id"], current["round"], now)
    return True


def _needs_input(state: dict[str, Any], report: FixReport, data: dict[str, Any]) -> dict[str, Any]:
    """A fixer asked: no fix is logged, the run escalates with the questions
    and the target goes back to the text the reviewers saw (nothing guessed
    stands; what the fixer left is kept in the run folder)."""
    current = state["rounds"][-1]
    questions = [
        {
            "n": a.number,
            "key": a.key,
            "criterion": a.criterion,
            "question": a.text or "(no question given)",
        }
        for a in report.questions
    ]
    restored = _keep_unreviewed(state)
    state["status"] = "escalated"
    state["fixer"] = None
    state["escalation"] = {
        "round": current["round"],
        "reasons": [NEEDS_INPUT],
        "questions": questions,
    }
    return {
        "reason": NEEDS_INPUT,
        "questions": questions,
        "notes": data.get("notes", ""),
        "report": data.get("report", []),
        "restored": restored,
    }


def _check_changed(state: dict[str, Any], report: FixReport) -> None:
    """A fix that leaves the output as reviewed is no fix, unless the fixer
    answered every problem "not an issue" (the next round tests that claim)."""
    if report.all_not_an_issue:
        return
    current = state["rounds"][-1]
    try:
        now = read_target(state["target"])
    except InputError as exc:
        raise RefusedError(f"run {state['id']} cannot log the fix: {exc}") from None
    if sha256(now) == current["output_sha256"]:
        raise RefusedError(
            f"the fix left {target_name(state['target'])} unchanged, so it is not a fix: another "
            "round would review the same text. Run the fixer again (it must change the output, or "
            "answer every flag 'not an issue' with its reason, or 'needs input' with a question)"
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
    if event in ("ship", "fix", "escalate"):
        driver = locks.driven_elsewhere(run_id)
        if driver is not None:
            raise RefusedError(
                f"run {run_id} is being driven by {driver} right now; stop that process "
                "(it escalates the run itself) or wait for it to end"
            )
    with _locked(run_id) as state:
        _check_log_path(state, log_path)
        current = state["rounds"][-1]
        last = state["last_gate"]
        if event == "escape":
            if state["status"] != "shipped":
                raise RefusedError(f"run {run_id} never shipped, so nothing escaped from it")
        elif event == "waive":
            iteration = current["round"] if iteration is None else iteration
        elif event in ("ship", "fix", "escalate"):
            if state["status"] != "open":
                raise RefusedError(f"run {run_id} is {state['status']}; it cannot {event} now")
            iteration = _round_iteration(event, iteration, current["round"])
            if event == "ship":
                _check_ship(state)
                state["status"] = "shipped"
            elif event == "fix":
                if (
                    current["open"]
                    or not last
                    or last["round"] != current["round"]
                    or last["next"] != "fix"
                ):
                    said = f"said '{last['next']}'" if last else "never happened"
                    raise RefusedError(
                        f"run {run_id} has no fix pending: its last gate {said}, not 'fix'"
                    )
                if any(f["after_round"] == current["round"] for f in state["fixes"]):
                    raise RefusedError(
                        f"a fix is already logged after round {current['round']}; "
                        f"open the next round with 'santa round start --run {run_id}'"
                    )
                report = _fix_report(state, data)
                if report.questions:
                    event, iteration = "escalate", current["round"]
                    data = _needs_input(state, report, data)
                    report_needed = True
                else:
                    _check_changed(state, report)
                    state["fixes"].append({"after_round": current["round"], "ts": _now()})
                    state["fixer"] = None
            else:
                data["reason"] = str(data.get("reason") or "escalated by hand")
                state["status"] = "escalated"
                state["escalation"] = {"round": current["round"], "reasons": [data["reason"]]}
                report_needed = True
        written = runlog.append(
            state["log"], {"run_id": run_id, "event": event, "iteration": iteration, **data}
        )
    if report_needed:
        from santa_method.state.report import write_report
        from santa_method.state.unreviewed import restore_reviewed

        restore_reviewed(run_id)
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
    if event == "escape" and not any(r.get("event") == "ship" for r in records):
        raise RefusedError(f"run {run_id} never shipped, so nothing escaped from it")
    return runlog.append(path, {"run_id": run_id, "event": event, "iteration": iteration, **data})


# --- looking at runs --------------------------------------------------------


def list_run_ids() -> list[str]:
    base = runs_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "state.json").exists())


def describe(run_id: str) -> dict[str, Any]:
    """Where a run stands and the one command that moves it on (for a session
    that lost track of its run, e.g. after context compaction)."""
    state = load(run_id)
    current = state["rounds"][-1]
    last = state["last_gate"]
    filled = [label for label, slot in current["slots"].items() if slot is not None]
    empty = [label for label, slot in current["slots"].items() if slot is None]
    if state["status"] != "open":
        step = None
    elif current["open"]:
        step = f"santa gate --run {run_id}"
    elif last and last["next"] == "fix":
        fixed = any(f["after_round"] == current["round"] for f in state["fixes"])
        step = f"santa round start --run {run_id}" if fixed else f"santa log fix --run {run_id}"
    elif last and last["next"] == "rereview":
        step = f"santa round start --run {run_id}"
    elif last and last["next"] == "ship":
        step = f"santa log ship --run {run_id}"
    else:
        step = None
    return {
        "run_id": run_id,
        "status": state["status"],
        "target": target_name(state["target"]),
        "source": state["source"],
        "round": current["round"],
        "round_open": current["open"],
        "rereviews": current["rereviews"],
        "filled_slots": filled,
        "open_slots": empty if current["open"] else [],
        "last_gate": last,
        "instruction": current["instruction"] if current["open"] else None,
        "fixer_instruction": (state.get("fixer") or {}).get("instruction"),
        "next_step": step,
    }
