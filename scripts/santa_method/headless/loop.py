"""The headless loop: the run state of part 2, driven by a model backend.

Why it delegates every decision: the run state machine (`state/`, the
transitions ARCHITECTURE.md draws) owns the rounds, the gate, the caps and
escalation, exactly as inside Claude Code, so a headless run can neither skip a step nor ship
without a NICE gate. This module only does what a person or the
orchestrating model does there: spawn reviewers (`reviewing.py`: each a
fresh conversation, concurrently, re-asked on an invalid reply), store
replies, call the fixer, log the fix, open the next round, and answer a
`VerifyResult` (`results.py`).

Fail-closed: a backend error or any other exception ends the run escalated
(never shipped) and propagates; a pre-check failure raises RefusedError
before any reviewer is spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Literal

from santa_method.core import assignments, budget, numbers
from santa_method.core.errors import BackendError, InputError, RefusedError
from santa_method.core.files import read_exact
from santa_method.core.locate import changed_paths
from santa_method.core.reviewers import one_mind
from santa_method.core.types import Rubric
from santa_method.headless import options as options_
from santa_method.headless import routing
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import FixReply, FixRequest
from santa_method.headless.backends.checked import ask_fix
from santa_method.headless.change import Change, fix_change, open_change
from santa_method.headless.options import VerifyOptions
from santa_method.headless.results import RoundRecord, VerifyResult
from santa_method.headless.reviewing import LoopRun
from santa_method.headless.routing import Backends
from santa_method.state import locks, sources
from santa_method.state.atomic import replace_bytes, replace_text
from santa_method.state.events import log_event
from santa_method.state.formats.model import with_places
from santa_method.state.gating import gate_run
from santa_method.state.model.run import Target
from santa_method.state.rounds import next_round, reopen, start_run
from santa_method.state.slots import store_reply
from santa_method.state.store import load_state, new_run_id, run_dir
from santa_method.state.target import target_name
from santa_method.state.unreviewed import (
    ChangedMeanwhile,
    fixer_answer,
    fixer_copy,
    keep_fix,
    kept_fix,
    no_longer_a_file,
    still_reviewed,
    unreviewed_fix,
)
from santa_method.state.unreviewed import describe as describe_fix

__all__ = ["RoundRecord", "VerifyOptions", "VerifyResult", "verify", "verify_sync"]


def _working_copy(
    santa: Path, output: str | os.PathLike[str], in_place: bool
) -> tuple[Path, str | None]:
    """Where the loop's fixes go: the user's file only with in_place."""
    if isinstance(output, os.PathLike):
        from santa_method.core.files import check_file

        check_file(output, "output")
        source = Path(output).resolve()
        if in_place:
            return source, None
        folder = santa / "work" / secrets.token_hex(6)
        folder.mkdir(parents=True)
        copy = folder / source.name
        replace_bytes(copy, source.read_bytes())
        return copy, str(source)
    if in_place:
        raise InputError("in_place needs a file to edit, not output text")
    folder = santa / "work" / secrets.token_hex(6)
    folder.mkdir(parents=True)
    copy = folder / "output.txt"
    replace_text(copy, output)
    return copy, None


def verify(
    spec: str,
    output: str | os.PathLike[str] | None = None,
    options: VerifyOptions | None = None,
) -> Coroutine[Any, Any, VerifyResult]:
    """Verify `output` (text, or a file given as a Path) against `spec`, or
    with `against_diff=REV` the working tree's change against that git
    revision (fixes then need `in_place`; see `headless/change.py`).

    Returns a VerifyResult whose verdict is NICE (shipped) or ESCALATED
    (report written). Raises RefusedError when the pre-check fails (no
    reviewer spent), InputError for bad arguments, BackendError when the
    model backend fails (the run is escalated first, never shipped).

    `resume_run` continues a run an interrupted process left with its round
    open (same assignment and canary, so a backend that keyed the requests,
    like anthropic-batch, answers them without paying twice); a run past
    that point is escalated as interrupted and `output` verified afresh.
    `close_backend=False` keeps a shared backend's client open for other
    runs; `resumable=True` leaves a run open when it is cancelled or its
    backend fails, so `resume_run` continues it without paying again (a
    batch does both); a plain run is escalated then.

    The settings are one `VerifyOptions` (`options=`).
    """
    return _verify(spec, output, options_.resolve(VerifyOptions, options, "verify"))


async def _verify(
    spec: str, output: str | os.PathLike[str] | None, opts: VerifyOptions
) -> VerifyResult:
    against_diff = opts.against_diff
    rubric = opts.rubric
    reviewers = opts.reviewers
    backend = opts.backend
    max_fixes = opts.max_fixes
    budget_usd = opts.budget_usd
    timeout = opts.timeout
    pre_check = opts.pre_check
    in_place = opts.in_place
    project_dir = opts.project_dir
    resume_run = opts.resume_run
    close_backend = opts.close_backend
    from santa_method.core.rubric import load_rubric
    from santa_method.state.paths import project_root, project_rubrics_dir

    if reviewers is not None:
        reviewers = numbers.REVIEWERS.check(reviewers, "reviewers")
    max_fixes = numbers.MAX_FIXES.check(max_fixes, "max_fixes")
    if budget_usd is not None:
        budget_usd = numbers.BUDGET_USD.check(budget_usd, "budget_usd")
    if timeout is not None:
        timeout = numbers.TIMEOUT_S.check(timeout, "timeout")
    if pre_check and not in_place and max_fixes > 0:
        raise InputError(
            "a pre-check runs on the project's files, but without in_place (--in-place) the fixes "
            "go to a working copy it cannot see; use --in-place with --pre-check, or --max-fixes 0"
        )
    root = str(Path(project_dir).resolve()) if project_dir else str(project_root())
    change = None
    if against_diff is not None:
        if output is not None or resume_run:
            raise InputError("review either an output or a change (against_diff), not both")
        change = open_change(against_diff, Path(root), in_place=in_place, max_fixes=max_fixes)
    elif output is None:
        raise InputError("say what to review: an output, or against_diff=REV for a change")
    resolved = (
        rubric
        if isinstance(rubric, Rubric)
        else load_rubric(rubric, search_dirs=(project_rubrics_dir(),))
    )
    assert resolved is not None
    checked = dataclasses.replace(
        opts, reviewers=reviewers, max_fixes=max_fixes, budget_usd=budget_usd, timeout=timeout
    )
    custom = prices.custom_prices(opts.prices)
    backends = Backends(backend, given=opts.backends, prices=custom, record=opts.record)
    try:
        return await _verify_with(spec, output, checked, resolved, root, change, backends, custom)
    finally:
        await backends.aclose(default=close_backend)


async def _verify_with(
    spec: str,
    output: str | os.PathLike[str] | None,
    opts: VerifyOptions,
    resolved: Rubric,
    root: str,
    change: Change | None,
    backends: Backends,
    custom: prices.Overrides,
) -> VerifyResult:
    """`verify` once its arguments are checked, with the backends it holds."""
    from santa_method.core.rubric import render_markdown, rubric_hash
    from santa_method.state.paths import ensure_santa_dir

    budget_usd, max_fixes, pre_check = opts.budget_usd, opts.max_fixes, opts.pre_check
    in_place, resume_run, resumable = opts.in_place, opts.resume_run, opts.resumable
    # Which backend answers whom: a name santa cannot route is refused here, before any call.
    the_route = routing.route(backends, opts.models, opts.reviewers, opts.fixer_model)
    reviewers = len(the_route.seats)
    replayed = backends.replayed
    if replayed is not None and resume_run:
        raise InputError(
            "a run is replayed from its start, never resumed: replay it again in a new run"
        )
    # Before any run exists: a setup problem is no verdict, and all of it is named at once.
    await backends.require_all([*the_route.seats, the_route.fixer])
    routing.require_prices(the_route, budget_usd, custom)
    impl = backends.default
    run = LoopRun(
        impl,
        resolved,
        route=the_route,
        timeout=opts.timeout,
        cache_warm=opts.cache_warm,
        project_dir=root,
        on_event=opts.on_event,
    )
    run.replayed = replayed

    def recorded_warning(message: str) -> None:
        run.warnings.append(message)
        run.emit("warning", text=message)

    for recorder in backends.recorders:
        recorder.on_warning = recorded_warning
    if len({(s.backend_name, s.model) for s in the_route.seats}) == 1 and replayed is None:
        run.warnings.append(
            "all reviewers use the same model; different models make their errors less correlated"
        )
    jury = the_route.jury()
    same_mind = one_mind(jury, opts.author_model)
    if same_mind is not None:
        run.warnings.append(same_mind)
    santa = ensure_santa_dir()
    work = santa / "work"
    work.mkdir(exist_ok=True)
    if not (work / ".gitignore").exists():
        replace_text(work / ".gitignore", "*\n")
    with contextlib.ExitStack() as held:
        fixing: set[Path] = set()

        def fix_alone(path: Path) -> None:
            """One run at a time fixes a user's file (a working copy is the run's own)."""
            real = path.resolve()
            if not real.is_relative_to(work.resolve()) and real not in fixing:
                held.enter_context(locks.fixing(path))
                fixing.add(real)

        run.fix_alone = fix_alone

        opened = None
        working: Path | Change
        if resume_run:
            # The run's own process is gone (its lock is free) before anyone resumes it.
            held.enter_context(locks.owning(resume_run))
            working = Path(str(load_state(resume_run).target.path))
            fix_alone(working)
            try:
                opened = await _resume_point(run, resume_run, working)
            except BaseException as exc:
                # As in _guarded: only an interruption or a passing backend
                # failure leaves the run open to be resumed again.
                transient = isinstance(exc, asyncio.CancelledError) or (
                    isinstance(exc, BackendError) and exc.transient
                )
                if not (resumable and transient):
                    _escalate_quietly(resume_run, f"the run stopped on an error: {exc}")
                raise
            if opened == "shipped":
                return _result(run, resume_run, "NICE", working, None, [])
            if isinstance(opened, _Ended):
                return _escalated(run, resume_run, working, None, [opened.reason])
            if opened is None:
                _escalate_quietly(resume_run, "interrupted; verified again in a new run")
        if opened is not None:
            run_id = opened.run_id
            run.emit(
                "run_start",
                run_id=run_id,
                backend=impl.name,
                reviewers=reviewers,
                resumed=True,
                jury=[j.describe() for j in jury],
            )
            return await _guarded(run, opened, working, budget_usd, resumable)
        if change is not None:
            working, original, target = change, None, change.target
            if in_place and max_fixes > 0:
                # The checkout, and each file changed now, before anything is spent
                # (a file the change adds later is locked before its fix is written).
                fix_alone(change.root)
                for path in changed_paths(change.read_text()):
                    fix_alone(change.root / path)
        else:
            assert output is not None
            working, original = _working_copy(santa, output, in_place)
            fix_alone(working)
            # `original`: the user's file, which reports point at.
            target = Target(kind="file", path=str(working), original=original)
        # Held from before the run exists until this process is done with it:
        # a run no living process holds was interrupted (`santa runs` says so).
        new_id = new_run_id()
        held.enter_context(locks.owning(new_id))
        opened = start_run(
            target=target,
            spec=spec,
            rubric=resolved,
            rubric_name=resolved.name,
            rubric_markdown=render_markdown(resolved),
            rubric_hash=rubric_hash(resolved),
            reviewers=reviewers,
            max_fixes=max_fixes,
            source="api",
            models=list(the_route.entries) if the_route.entries else None,
            budget_usd=budget_usd,
            pre_check=pre_check,
            log_path=opts.log,
            cwd=root,
            run_id=new_id,
            in_place=in_place,
            replayed=replayed,
            author_model=opts.author_model,
        )
        run_id = opened.run_id
        run.emit(
            "run_start",
            run_id=run_id,
            backend=impl.name,
            reviewers=reviewers,
            original=original,
            replayed=replayed,
            jury=[j.describe() for j in jury],
        )
        return await _guarded(run, opened, working, budget_usd, resumable)


async def _guarded(
    run: LoopRun,
    opened: Any,
    working: Path | Change,
    budget_usd: float | None,
    resumable: bool,
) -> VerifyResult:
    """Drive the run; any error escalates it (never shipped) and propagates.

    With `resumable`, a cancelled task or a failed backend (an interrupted
    batch) leaves the run open instead, so `resume_run` can pick up the same
    round without paying for it twice. Open is never shipped either.
    """
    try:
        return await _drive(run, opened, working, budget_usd)
    except (asyncio.CancelledError, BackendError) as exc:
        permanent = isinstance(exc, BackendError) and not exc.transient
        if not resumable or permanent:
            _escalate_quietly(opened.run_id, f"the run stopped on an error: {exc}")
        raise
    except BaseException as exc:
        _escalate_quietly(opened.run_id, f"the run stopped on an error: {exc}")
        raise


def _escalate_quietly(run_id: str, reason: str) -> None:
    """Escalate the run if it is open (a closed run refuses, and that is
    kept quiet): also a run whose state can no longer be read."""
    with contextlib.suppress(Exception):
        log_event(run_id, "escalate", data={"reason": reason[:500]})


async def _drive(
    run: LoopRun, opened: Any, working: Path | Change, budget_usd: float | None
) -> VerifyResult:
    run_id = opened.run_id
    rubric_md = read_exact(run_dir(run_id) / "rubric.md")
    spec = read_exact(run_dir(run_id) / "spec.md")
    last_round_cost = 0.0
    last_fix_cost = 0.0
    while True:
        # The prefix is the run's shared part; it changes only if a fix put
        # the run's fence marker into the output (runs.py then draws a new one).
        prefix = assignments.reviewer_prefix(rubric_md, spec, load_state(run_id).boundary)
        assignment = read_exact(opened.assignment)
        if not assignment.startswith(prefix):
            raise RefusedError("the round's assignment does not start with the run's shared prefix")
        round_part = assignment[len(prefix) :]
        output = read_exact(Path(opened.assignment).parent / "output.txt")
        run.emit(
            "round_start",
            round=opened.round,
            reviewers=list(opened.open_slots),
            rereview=opened.rereview,
        )
        cost_before = run.cost or 0.0
        results = await run.review_round(
            list(opened.open_slots), prefix, round_part, output, opened.canary
        )
        records = []
        for label, (text, result, record) in zip(opened.open_slots, results, strict=True):
            store_reply(
                run_id,
                opened.round,
                reply=text,
                agent_id=f"{run.route.seat(label).backend_name}:{label}:{secrets.token_hex(4)}",
                transcript_path="",
                failed=not result.valid,
                errors=result.errors,
                tokens=record.tokens.total,
                cost_usd=record.cost_usd,
                token_detail=record.tokens.to_json(),
                model=record.model,
                duration_s=record.duration_s,
            )
            run.spend(record.tokens, record.cost_usd, logged=True, by=record.backend)
            records.append(record)
        last_round_cost = (run.cost or 0.0) - cost_before
        gate = gate_run(run_id, checks=sources.LOOP)
        round_record = RoundRecord(
            round=opened.round,
            verdict=gate.verdict,
            next=gate.next,
            issues=tuple(with_places(run_id, opened.round, [i.to_json() for i in gate.issues])),
            reviewers=tuple(records),
            reasons=tuple(gate.reasons),
        )
        run.history.append(round_record)
        run.emit("gate", **round_record.to_json())
        if gate.next == "ship":
            log_event(run_id, "ship", data={"backend": run.backend.name, **run.take_unlogged()})
            run.emit("ship", run_id=run_id)
            return _result(run, run_id, "NICE", working, None, [])
        if gate.next == "escalate":
            return _escalated(run, run_id, working, gate.extra.get("report"), list(gate.reasons))
        if gate.next == "report":
            # A check only: its problems are the answer; nothing to rescue.
            report = gate.extra.get("report")
            run.emit("report", run_id=run_id, reasons=list(gate.reasons), report=report)
            return _result(run, run_id, "NAUGHTY", working, report, list(gate.reasons))
        # A budget that cannot be measured cannot be kept: stop, not spend.
        step: Literal["fix", "rereview"] = "fix" if gate.next == "fix" else "rereview"
        reason = budget.next_round(
            step,
            spent_usd=run.cost,
            last_round_usd=last_round_cost,
            last_fix_usd=last_fix_cost,
            budget_usd=budget_usd,
        )
        if reason is not None:
            log_event(run_id, "escalate", data={"reason": reason, **run.take_unlogged()})
            return _escalated(run, run_id, working, None, [reason])
        if gate.next == "fix":
            fix, stop = await _fix(
                run, run_id, opened.round, gate.extra["fixer_assignment"], output, working
            )
            last_fix_cost = fix.cost_usd or 0.0
            run.history[-1] = dataclasses.replace(
                round_record,
                fix={"notes": fix.notes, "tokens": fix.tokens.to_json(), "cost_usd": fix.cost_usd},
            )
            if stop is not None:
                return _stopped(run, run_id, working, stop)
        try:
            opened = next_round(run_id)
        except RefusedError as exc:
            log_event(run_id, "escalate", data={"reason": str(exc), **run.take_unlogged()})
            return _escalated(run, run_id, working, None, [str(exc)])


async def _fix(
    run: LoopRun,
    run_id: str,
    round_number: int,
    fixer_path: str,
    output: str,
    working: Path | Change,
) -> Any:
    """Call the fixer on the round's flags, write its output, log the fix."""
    fixer_text = read_exact(fixer_path)
    run.emit("fix_start", round=round_number, flags=fixer_text.count("\n### "))
    began = time.monotonic()
    try:
        if isinstance(working, Change):
            # One fixer call per changed file, each file replaced atomically.
            fix = await fix_change(
                run.call,
                run.fixer.backend,
                run_id=run_id,
                round_number=round_number,
                diff=output,
                change=working,
                model=run.fixer.model,
                timeout=run.timeout,
                fix_alone=run.fix_alone,
            )
        else:
            fix = await _fix_file(run, run_id, round_number, fixer_text, output, working)
    except ChangedMeanwhile as exc:
        spent = exc.spent if isinstance(exc.spent, FixReply) else FixReply(output=None)
        run.spend(spent.tokens, spent.cost_usd, logged=False, by=run.fixer.backend_name)
        reason = str(exc)
        log_event(run_id, "escalate", data={"reason": reason, **run.take_unlogged()})
        return spent, {"reason": reason}
    run.spend(fix.tokens, fix.cost_usd, logged=False, by=run.fixer.backend_name)
    data = {
        "backend": run.fixer.backend_name,
        "model": fix.model or run.fixer.model,
        "notes": fix.notes[:4000],
        "duration_s": round(time.monotonic() - began, 3),
    }
    data.update(run.take_unlogged())
    run.emit("fix_done", round=round_number, notes=fix.notes, model=data["model"])
    try:
        written = log_event(run_id, "fix", data=data)
    except RefusedError as exc:
        # A fix that changed nothing: not worth a review round of the same text.
        reason = str(exc)
        log_event(run_id, "escalate", data={"reason": reason, "notes": fix.notes[:4000]})
        return fix, {"reason": reason}
    if written.get("event") == "escalate":  # the fixer needs input: no fix, no review
        return fix, written
    return fix, None


async def _fix_file(
    run: LoopRun, run_id: str, round_number: int, fixer_text: str, output: str, working: Path
) -> FixReply:
    """The fixer on a file: it edits a copy in the run folder (or answers
    the text), the fix is kept there, and only then replaces the file, if
    the file still holds what the round reviewed."""
    reviewed = (run_dir(run_id) / f"round-{round_number}" / "output.txt").read_bytes()
    copy = fixer_copy(run_id, round_number, working.name, output)
    fix: FixReply = await run.call(
        "the fixer",
        ask_fix(
            run.fixer.backend,
            FixRequest(
                assignment=fixer_text,
                target_path=str(copy),
                output=output,
                model=run.fixer.model,
                timeout=run.timeout,
                project_dir=run.project_dir,
            ),
        ),
    )
    own = kept_fix(run_id, round_number)  # written before this process was interrupted
    fixed, write = fixer_answer(fix.output, copy, working, reviewed)
    # Kept with the run first: if the run ends before a round reviews it,
    # the target is put back and this copy is what the report names.
    keep_fix(run_id, round_number, fixed)
    gone = no_longer_a_file(working, round_number)
    if gone is not None:  # deleted, or a folder in its place: nothing to write the fix to
        raise ChangedMeanwhile(gone, fix)
    if write:
        try:
            still_reviewed(working, reviewed, round_number, own)
        except ChangedMeanwhile as exc:
            raise ChangedMeanwhile(str(exc), fix) from None
        replace_bytes(working, fixed)
    return fix


def _stopped(
    run: LoopRun, run_id: str, working: Path | Change, stop: dict[str, Any]
) -> VerifyResult:
    """The run ended at its fix: a question for a person, or a fix that fixed nothing."""
    questions = list(stop.get("questions") or [])
    result = _escalated(run, run_id, working, None, [str(stop["reason"])])
    result.questions = questions
    return result


@dataclasses.dataclass(frozen=True)
class _Ended:
    """A resumed run that ended (escalated) where it picked up, and why."""

    reason: str


async def _resume_point(run: LoopRun, run_id: str, working: Path | Change) -> Any:
    """Where an interrupted run goes on: its open round, its pending fix, or
    the round its last gate asked for; None when there is nothing to resume."""
    opened = reopen(run_id)
    if opened is not None:
        return opened
    state = load_state(run_id)
    last = state.last_gate
    if state.status != "open" or not last:
        return None
    if last.next == "ship":  # the gate said NICE; only the ship record is missing
        log_event(run_id, "ship", data={"backend": run.backend.name, "resumed": True})
        return "shipped"
    if last.next not in ("fix", "rereview"):
        return None
    fixed = any(f.after_round == last.round for f in state.fixes)
    if last.next == "fix" and not fixed and state.fixer:
        current = state.rounds[-1]
        output = read_exact(Path(current.assignment).parent / "output.txt")
        _, stop = await _fix(run, run_id, last.round, state.fixer.assignment, output, working)
        if stop is not None:
            return _Ended(str(stop.get("reason") or "the resumed run was refused"))
    try:
        return next_round(run_id)
    except RefusedError as exc:
        log_event(run_id, "escalate", data={"reason": str(exc)})
        return _Ended(str(exc))


def _escalated(
    run: LoopRun, run_id: str, working: Path | Change, report: str | None, reasons: list[str]
) -> VerifyResult:
    if report is None:
        from santa_method.state.report import write_report

        report = str(write_report(run_id))
    run.emit("escalate", run_id=run_id, reasons=reasons, report=report)
    found = unreviewed_fix(load_state(run_id))
    if found is not None:
        run.warnings.append(describe_fix(found))
    return _result(run, run_id, "ESCALATED", working, report, reasons)


def _result(
    run: LoopRun,
    run_id: str,
    verdict: Literal["NICE", "NAUGHTY", "ESCALATED"],
    working: Path | Change,
    report: str | None,
    reasons: list[str],
) -> VerifyResult:
    if isinstance(working, Change):
        output = working.read_text()
    else:
        try:
            output = read_exact(working, "replace")
        except OSError as exc:
            # Deleted, or a folder put in its place, after the run ended its
            # rounds: there is no output to answer, only what became of the run.
            lost = f"{working} cannot be read any more ({exc.strerror or exc})"
            if verdict != "ESCALATED":
                said = "shipped" if verdict == "NICE" else "reported its problems"
                raise InputError(f"run {run_id} {said}, but {lost}") from None
            why = "; ".join(reasons)
            raise InputError(
                f"run {run_id} is escalated: {why if str(working) in why else f'{why}; {lost}'}"
            ) from None
    return VerifyResult(
        verdict=verdict,
        run_id=run_id,
        rounds=len({r.round for r in run.history}),
        history=run.history,
        output=output,
        output_path=str(working),
        report=report,
        tokens=run.tokens,
        cost_usd=round(run.cost, 8) if run.cost is not None else None,
        backend=run.backend.name,
        warnings=list(dict.fromkeys(run.warnings)),
        reasons=reasons,
        target=target_name(load_state(run_id).target),
        replayed=run.replayed,
    )


def verify_sync(
    spec: str,
    output: str | os.PathLike[str] | None = None,
    options: VerifyOptions | None = None,
) -> VerifyResult:
    """`verify` for synchronous callers (not from inside a running event loop)."""
    resolved = options_.resolve(VerifyOptions, options, "verify_sync")
    return asyncio.run(_verify(spec, output, resolved))
