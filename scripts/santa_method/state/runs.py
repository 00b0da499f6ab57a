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

State changes happen under an exclusive lock on the run folder, because
reviewers finish concurrently and each stop hook stores its reply at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core import assignment as texts
from santa_method.core.errors import InputError, RefusedError
from santa_method.core.gate import default_labels, gate
from santa_method.core.history import MAX_REREVIEWS, decide
from santa_method.core.review import validate_reply
from santa_method.core.types import GateResult, MergedIssue, Rubric, ValidationResult
from santa_method.state import log as runlog
from santa_method.state.paths import default_log_path, ensure_santa_dir, santa_dir

PRE_CHECK_TIMEOUT = 900


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def runs_dir() -> Path:
    return santa_dir() / "runs"


def run_dir(run_id: str) -> Path:
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise InputError(f"'{run_id}' is not a run id")
    return runs_dir() / run_id


@contextlib.contextmanager
def _locked(run_id: str) -> Iterator[dict[str, Any]]:
    """Load the run's state under an exclusive lock; save it on clean exit."""
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
    tmp = folder / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, folder / "state.json")


def load(run_id: str) -> dict[str, Any]:
    """A snapshot of the run's state (read-only use)."""
    state_file = run_dir(run_id) / "state.json"
    if not state_file.exists():
        raise InputError(f"no run '{run_id}' under {runs_dir()}")
    return json.loads(state_file.read_text(encoding="utf-8"))


def _now() -> str:
    return runlog.now_iso()


def _log(state: dict[str, Any], event: str, iteration: Any, **data: Any) -> None:
    runlog.append(state["log"], {"run_id": state["id"], "event": event, "iteration": iteration, **data})


# --- what is reviewed -----------------------------------------------------


def _read_target(target: dict[str, Any]) -> str:
    if target["kind"] == "file":
        try:
            return Path(target["path"]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the target '{target['path']}': {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InputError(f"the target '{target['path']}' is not UTF-8 text") from None
    result = subprocess.run(
        ["git", "diff", target["rev"]],
        cwd=target["cwd"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise InputError(f"git diff {target['rev']} failed: {result.stderr.strip() or 'unknown error'}")
    return result.stdout


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
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
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


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def _write_round(folder: Path, state: dict[str, Any], number: int, slots: list[str]) -> dict[str, Any]:
    spec = (folder / "spec.md").read_text(encoding="utf-8")
    rubric_md = (folder / "rubric.md").read_text(encoding="utf-8")
    output = _read_target(state["target"])
    if not output.strip():
        raise RefusedError("the output under review is empty; there is nothing to verify")
    canary = texts.new_token()
    # The boundary is fixed per run so the shared prefix stays byte-identical
    # across rounds; a new one is drawn only if the new output contains it.
    boundary = state["boundary"]
    if boundary in output:
        raise RefusedError("the output contains this run's fence marker; start a new run")
    round_dir = folder / f"round-{number}"
    round_dir.mkdir(exist_ok=True)
    (round_dir / "output.txt").write_text(output, encoding="utf-8")
    body = texts.reviewer_assignment(
        run_id=state["id"],
        round_number=number,
        reviewers=state["reviewers"],
        rubric_markdown=rubric_md,
        spec=spec,
        output=output,
        boundary=boundary,
        canary=canary,
    )
    path = round_dir / "assignment.md"
    path.write_text(body, encoding="utf-8")
    instruction = texts.reviewer_instruction(str(path), state["id"], number)
    return {
        "round": number,
        "opened": _now(),
        "canary": canary,
        "assignment": str(path),
        "instruction": instruction,
        "output_sha256": sha256(output),
        "rereviews": 0,
        "spawned": 0,
        "slots": {label: None for label in slots},
        "gates": [],
    }


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
) -> RoundOpened:
    """Open a run and its round 1, after the pre-check passes."""
    if reviewers < 2:
        raise InputError("a run needs at least 2 reviewers")
    if max_fixes < 0:
        raise InputError("max_fixes cannot be negative")
    if source not in ("hook", "files"):
        raise InputError("--source must be 'hook' or 'files'")
    if not spec.strip():
        raise InputError("the spec is empty; say what the output must do")
    work_dir = cwd or str(Path.cwd())
    _run_pre_check(pre_check, work_dir)
    ensure_santa_dir()
    run_id = _new_run_id()
    folder = run_dir(run_id)
    folder.mkdir(parents=True)
    (folder / "spec.md").write_text(spec, encoding="utf-8")
    (folder / "rubric.md").write_text(rubric_markdown, encoding="utf-8")
    (folder / "rubric.json").write_text(json.dumps(rubric.to_json(), indent=2), encoding="utf-8")
    first_output = _read_target(target)
    state: dict[str, Any] = {
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
        "log": str(Path(log_path) if log_path else default_log_path()),
        "boundary": texts.boundary_for(spec, first_output),
        "rounds": [],
        "fixes": [],
        "last_gate": None,
        "fixer": None,
    }
    labels = default_labels(reviewers)
    state["rounds"].append(_write_round(folder, state, 1, labels))
    _save(folder, state)
    _log(
        state,
        "run",
        0,
        target=target.get("path") or f"diff:{target.get('rev')}",
        target_sha256=state["rounds"][0]["output_sha256"],
        spec_sha256=sha256(spec),
        rubric=rubric_name,
        rubric_hash=rubric_hash,
        models=models,
        reviewers=reviewers,
        source=source,
    )
    r = state["rounds"][0]
    return RoundOpened(run_id, 1, r["assignment"], r["instruction"], r["canary"], tuple(labels), False)


def next_round(run_id: str) -> RoundOpened:
    """Open the round the last gate asked for: a fresh one after a logged
    fix, or the same one again for its failed or missing slots."""
    with _locked(run_id) as state:
        _require_open(state)
        current = state["rounds"][-1]
        last = state["last_gate"]
        if last is None or last["round"] != current["round"]:
            raise RefusedError(
                f"round {current['round']} has not been gated yet; run 'santa gate --run {run_id}'"
            )
        if last["next"] == "rereview":
            if current["rereviews"] >= MAX_REREVIEWS:
                raise RefusedError(f"round {current['round']} has had {MAX_REREVIEWS} re-reviews already")
            open_slots = [label for label, slot in current["slots"].items() if not _slot_stands(slot)]
            for label in open_slots:
                current["slots"][label] = None
            current["rereviews"] += 1
            current["spawned"] = 0
            return RoundOpened(
                run_id,
                current["round"],
                current["assignment"],
                current["instruction"],
                current["canary"],
                tuple(open_slots),
                True,
            )
        if last["next"] != "fix":
            raise RefusedError(
                f"the last gate said '{last['next']}', not 'fix' or 'rereview'; no new round"
            )
        if not any(f["after_round"] == current["round"] for f in state["fixes"]):
            raise RefusedError(
                f"no fix is logged after round {current['round']}; "
                f"run 'santa log fix --run {run_id}' once the fixer is done"
            )
        number = current["round"] + 1
        if number > state["max_fixes"] + 1:
            raise RefusedError(f"round {number} would pass the cap of {state['max_fixes'] + 1} rounds")
        _run_pre_check(state.get("pre_check"), state["cwd"])
        labels = default_labels(state["reviewers"])
        state["rounds"].append(_write_round(run_dir(run_id), state, number, labels))
        state["fixer"] = None
        r = state["rounds"][-1]
        return RoundOpened(run_id, number, r["assignment"], r["instruction"], r["canary"], tuple(labels), False)


def _require_open(state: dict[str, Any]) -> None:
    if state["status"] != "open":
        raise RefusedError(f"run {state['id']} is {state['status']}; start a new run")


def _slot_stands(slot: dict[str, Any] | None) -> bool:
    """A slot keeps its reply across a re-review only if the last gate found it valid."""
    return bool(slot) and slot.get("gated_valid") is True


# --- the reply store (written by the Claude Code hook) ---------------------


def find_round(instruction: str) -> tuple[str, int] | None:
    """The open run and round whose reviewer instruction is exactly `instruction`."""
    marker = "santa-method review, run "
    text = instruction.strip()
    if not text.startswith(marker):
        return None
    run_id = text[len(marker) :].split(",", 1)[0]
    try:
        state = load(run_id)
    except InputError:
        return None
    if state["status"] != "open" or not state["rounds"]:
        return None
    current = state["rounds"][-1]
    if current["instruction"] != text:
        return None
    return run_id, current["round"]


def reserve_reviewer(run_id: str, round_number: int) -> str | None:
    """Count one reviewer spawn; None if the round has no open slot left."""
    with _locked(run_id) as state:
        current = state["rounds"][-1]
        if state["status"] != "open" or current["round"] != round_number:
            return "the round is no longer open"
        if state["last_gate"] and state["last_gate"]["round"] == round_number and state["last_gate"]["next"] != "rereview":
            return "the round has been gated already"
        open_slots = [label for label, slot in current["slots"].items() if slot is None]
        if current["spawned"] >= len(open_slots):
            return f"the round has {len(open_slots)} reviewer slot(s) and all are taken"
        current["spawned"] += 1
        return None


def store_reply(
    run_id: str,
    round_number: int,
    *,
    reply: str,
    agent_id: str,
    transcript_path: str,
    failed: bool = False,
    errors: Sequence[str] = (),
) -> str:
    """Put a reviewer's reply into the round's first open slot; returns its label."""
    with _locked(run_id) as state:
        current = state["rounds"][-1]
        if state["status"] != "open" or current["round"] != round_number:
            raise RefusedError("the round is no longer open")
        for label, slot in current["slots"].items():
            if slot is not None and slot.get("agent_id") == agent_id:
                current["slots"][label] = _slot(reply, agent_id, transcript_path, failed, errors)
                return label
        for label, slot in current["slots"].items():
            if slot is None:
                current["slots"][label] = _slot(reply, agent_id, transcript_path, failed, errors)
                return label
        raise RefusedError("every reviewer slot of this round is filled")


def _slot(reply: str, agent_id: str, transcript: str, failed: bool, errors: Sequence[str]) -> dict[str, Any]:
    return {
        "reply": reply,
        "agent_id": agent_id,
        "transcript_path": transcript,
        "failed": failed,
        "errors": list(errors),
        "stored": _now(),
    }


def fixer_open(instruction: str) -> bool:
    """Whether `instruction` is exactly the fixer instruction of an open fix."""
    marker = "santa-method fix, run "
    text = instruction.strip()
    if not text.startswith(marker):
        return False
    run_id = text[len(marker) :].split(",", 1)[0]
    try:
        state = load(run_id)
    except InputError:
        return False
    fixer = state.get("fixer")
    return state["status"] == "open" and bool(fixer) and fixer["instruction"] == text


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def transcript_problem(path: str, instruction: str, reply: str) -> str | None:
    """Why a stored reply cannot be trusted as this reviewer's own, or None.

    The transcript's first record is the prompt the reviewer was given; it
    must be the round's instruction. The reply must be text the reviewer
    itself produced (an assistant message of that transcript).
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return "the reviewer's transcript cannot be read"
    records = []
    for line in lines:
        with contextlib.suppress(json.JSONDecodeError):
            records.append(json.loads(line))
    records = [r for r in records if isinstance(r, dict)]
    if not records:
        return "the reviewer's transcript is empty"
    first = next((r for r in records if r.get("type") == "user"), None)
    if first is None or _message_text(first.get("message")).strip() != instruction:
        return "the reviewer's transcript does not start with this round's instruction"
    said = "\n".join(_message_text(r.get("message")) for r in records if r.get("type") == "assistant")
    if reply.strip() and reply.strip() in said:
        return None
    return "the stored reply is not in the reviewer's transcript"


# --- gating a run ---------------------------------------------------------


def _read_review(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read review '{path}': {exc}") from None


def _cost_so_far(state: dict[str, Any]) -> float | None:
    total, seen = 0.0, False
    for record in runlog.read(state["log"]).records:
        if record.get("run_id") == state["id"] and isinstance(record.get("cost_usd"), (int, float)):
            if record.get("event") in ("review", "fix"):
                total += float(record["cost_usd"])
                seen = True
    return total if seen else None


def _merged_from_json(items: Sequence[dict[str, Any]]) -> list[MergedIssue]:
    return [
        MergedIssue(
            criterion=i["criterion"],
            issue=i["issue"],
            evidence=i.get("evidence", "none"),
            flagged_by=tuple(i.get("flagged_by", ())),
            quote=i.get("quote"),
            missing=i.get("missing"),
            location=i.get("location"),
            source=i.get("source", "issue"),
            key=i.get("key", ""),
        )
        for i in items
    ]


def gate_run(
    run_id: str,
    *,
    iteration: int | None = None,
    review_files: Sequence[str] = (),
    labels: Sequence[str] | None = None,
    log_path: str | None = None,
) -> GateResult:
    """Gate the current round of a run and decide what comes next."""
    from santa_method.core.rubric import rubric_from_json

    with _locked(run_id) as state:
        _require_open(state)
        if log_path:
            state["log"] = log_path
        current = state["rounds"][-1]
        if iteration is not None and iteration != current["round"]:
            raise RefusedError(f"only the current round ({current['round']}) can be gated")
        folder = run_dir(run_id)
        rubric = rubric_from_json(json.loads((folder / "rubric.json").read_text(encoding="utf-8")))
        output = (folder / f"round-{current['round']}" / "output.txt").read_text(encoding="utf-8")
        slot_labels = list(current["slots"])

        if review_files:
            if state["source"] != "files":
                raise RefusedError(
                    f"run {run_id} takes reviews only from the hook's store, not from files"
                )
            open_labels = [lab for lab in slot_labels if not _slot_stands(current["slots"][lab])]
            if labels is not None and len(labels) != len(review_files):
                raise InputError("--labels must name one label per review file")
            targets = list(labels) if labels is not None else open_labels
            if len(review_files) > len(open_labels) or any(t not in open_labels for t in targets):
                raise RefusedError(
                    f"round {current['round']} has open slots {', '.join(open_labels) or 'none'}; "
                    f"{len(review_files)} review file(s) do not fit"
                )
            for label, path in zip(targets, review_files, strict=False):
                current["slots"][label] = {"reply": _read_review(path), "file": path, "stored": _now()}

        results: list[ValidationResult | None] = []
        for label in slot_labels:
            slot = current["slots"][label]
            if slot is None:
                results.append(None)
                continue
            if slot.get("failed"):
                errors = tuple(slot.get("errors") or ["the reviewer's reply failed validation"])
                results.append(ValidationResult(False, errors))
                continue
            if state["source"] == "hook":
                problem = transcript_problem(slot.get("transcript_path", ""), current["instruction"], slot["reply"])
                if problem:
                    results.append(ValidationResult(False, (problem,)))
                    continue
            results.append(
                validate_reply(slot["reply"], rubric=rubric, output=output, canary=current["canary"])
            )
        core = gate(results, slot_labels, output=output, expected=len(slot_labels))

        earlier = [_merged_from_json(r["gates"][-1]["issues"]) for r in state["rounds"][:-1] if r["gates"]]
        decision = decide(
            core.next,
            round_number=current["round"],
            max_fixes=state["max_fixes"],
            earlier_flags=earlier,
            current_flags=core.issues,
            rereviews=current["rereviews"],
            cost_usd=_cost_so_far(state),
            budget_usd=state.get("budget_usd"),
        )
        for label, outcome in zip(slot_labels, core.reviews, strict=True):
            if current["slots"][label] is not None:
                current["slots"][label]["gated_valid"] = outcome.valid

        extra: dict[str, Any] = {"run_id": run_id, "round": current["round"]}
        record = {
            "round": current["round"],
            "verdict": core.verdict,
            "next": decision.next,
            "issues": [i.to_json() for i in core.issues],
            "agreement": core.agreement,
            "reasons": list(core.reasons) + list(decision.reasons),
            "ts": _now(),
        }
        current["gates"].append(record)
        state["last_gate"] = {"round": current["round"], "verdict": core.verdict, "next": decision.next}

        for label, outcome in zip(slot_labels, core.reviews, strict=True):
            review = outcome.review
            slot = current["slots"][label] or {}
            _log(
                state,
                "review",
                current["round"],
                label=label,
                valid=outcome.valid,
                verdict=outcome.verdict,
                errors=list(outcome.errors),
                checks=[{"criterion": c.criterion, "result": c.result} for c in review.checks] if review else [],
                issues=[i.to_json() for i in review.critical_issues] if review else [],
                agent_id=slot.get("agent_id"),
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
            reasons=record["reasons"],
        )

        if decision.next == "fix":
            target_name = state["target"].get("path") or f"the working tree (diff against {state['target']['rev']})"
            body = texts.fixer_assignment(
                run_id=run_id,
                round_number=current["round"],
                target=target_name,
                output=output,
                flags=core.issues,
                boundary=texts.boundary_for(output, *(i.issue + (i.quote or "") + (i.missing or "") for i in core.issues)),
            )
            path = folder / f"round-{current['round']}" / "fixer-assignment.md"
            path.write_text(body, encoding="utf-8")
            instruction = texts.fixer_instruction(str(path), run_id, current["round"], target_name)
            state["fixer"] = {"round": current["round"], "instruction": instruction, "assignment": str(path)}
            extra["fixer_instruction"] = instruction
            extra["fixer_assignment"] = str(path)
        if decision.next == "escalate":
            state["status"] = "escalated"
            _log(state, "escalate", current["round"], reason="; ".join(decision.reasons))
        if decision.next == "ship":
            extra["ship"] = f"santa log ship --run {run_id}"

    if decision.next == "escalate":
        from santa_method.state.report import write_report

        extra["report"] = str(write_report(run_id))
    return GateResult(
        core.verdict,
        decision.next,
        core.reviews,
        core.issues,
        core.suggestions,
        core.agreement,
        core.reasons + decision.reasons,
        extra,
    )


# --- logged events --------------------------------------------------------

LOGGABLE = ("fix", "ship", "escalate", "escape", "waive", "generate")


def log_event(run_id: str, event: str, *, iteration: Any = None, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """Record a person's or the loop's event, refusing what the state forbids."""
    data = dict(data or {})
    if event not in LOGGABLE:
        raise InputError(f"'{event}' cannot be logged by hand; use one of {', '.join(LOGGABLE)}")
    for reserved in ("run_id", "event", "iteration", "ts"):
        data.pop(reserved, None)
    if event == "escape":
        return _log_escape(run_id, iteration, data)
    report_needed = False
    with _locked(run_id) as state:
        current = state["rounds"][-1]
        last = state["last_gate"]
        if event == "generate":
            pass
        elif event == "waive":
            if not (data.get("key") or data.get("issue")) or not data.get("reason"):
                raise InputError('a waive needs --data \'{"key": "...", "reason": "..."}\'')
        else:
            _require_open(state)
            if event == "ship":
                if not last or last["round"] != current["round"] or last["verdict"] != "NICE":
                    raise RefusedError(f"run {run_id} cannot ship: its last gate did not say NICE")
                state["status"] = "shipped"
            elif event == "fix":
                if not last or last["round"] != current["round"] or last["next"] != "fix":
                    raise RefusedError(f"run {run_id} has no fix pending: its last gate did not say fix")
                state["fixes"].append({"after_round": current["round"], "ts": _now()})
                state["fixer"] = None
            elif event == "escalate":
                state["status"] = "escalated"
                data.setdefault("reason", "escalated by hand")
                report_needed = True
        if iteration is None and event in ("fix", "ship", "escalate", "waive"):
            iteration = current["round"]
        record = {"run_id": run_id, "event": event, "iteration": iteration, **data}
        written = runlog.append(state["log"], record)
    if report_needed:
        from santa_method.state.report import write_report

        write_report(run_id)
    return written


def _log_escape(run_id: str, iteration: Any, data: dict[str, Any]) -> dict[str, Any]:
    if not data.get("description"):
        raise InputError('an escape needs --data \'{"description": "what escaped"}\'')
    log_path: str | None = None
    with contextlib.suppress(InputError):
        log_path = load(run_id)["log"]
    path = log_path or str(default_log_path())
    shipped = any(
        r.get("run_id") == run_id and r.get("event") == "ship" for r in runlog.read(path).records
    )
    if not shipped:
        raise RefusedError(f"run {run_id} never shipped, so nothing escaped from it")
    return runlog.append(path, {"run_id": run_id, "event": "escape", "iteration": iteration, **data})


def list_run_ids() -> list[str]:
    base = runs_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "state.json").exists())
