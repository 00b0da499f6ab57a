"""A batch inside Claude Code: reviewers are subagents, the helper keeps the books.

Why it works this way: `/santa-method:batch` needs no model backend, so each
sampled item is verified by an ordinary run (`santa round start`, reviewer
subagents, the gate), and `santa batch record` reads the run's outcome
from its state, never from what the orchestrating model says. The rules
(classification, systemic patterns, screens, re-samples, verdict) are the
Book's, the same as `santa batch` headless.

A screen here is a run too: the item, one criterion (a rubric the batch
writes), two reviewers, and the fixer if they flag it. `santa round start`
accepts that narrow rubric inside Claude Code only while the batch is
screening for exactly that criterion (see `screen_rubric_allowed`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError, RefusedError
from santa_method.core.files import read_exact
from santa_method.core.types import Rubric
from santa_method.state import batches
from santa_method.state import log as runlog
from santa_method.state.atomic import replace_text
from santa_method.state.batches import BatchItem, Book, ItemStore
from santa_method.state.model.batch import (
    BatchOptionsRecord,
    BatchState,
    ScreenRecord,
    ScreenResult,
    ScreenRubric,
)
from santa_method.state.model.run import RunState
from santa_method.state.paths import ensure_santa_dir
from santa_method.state.store import list_run_ids, load_state, sha256


def _store(state: BatchState) -> ItemStore:
    items = [
        BatchItem(id=i.id, stratum=i.stratum, path=i.path, record=i.record) for i in state.items
    ]
    return ItemStore(state, items, state.options.field)


def _book(state: BatchState) -> Book:
    return Book(state, _store(state))


def plan(
    items: Sequence[BatchItem],
    spec: str,
    *,
    rubric_ref: str,
    rubric: Rubric,
    options: BatchOptionsRecord,
    seed: int,
) -> dict[str, Any]:
    """Open a batch for reviewer subagents and draw its first sample; returns its view."""
    from santa_method.core.rubric import rubric_hash

    state = batches.open_batch(
        items=items,
        spec=spec,
        options=options,
        seed=seed,
        mode="claude-code",
        fingerprint_=batches.fingerprint(items, spec, options),
    )
    # JSONL items become files the runs can review and the fixer can edit;
    # they live under .santa/inputs/ (not the batch folder, which the
    # guards keep the model out of).
    inputs = ensure_santa_dir() / "inputs" / f"batch-{state.id}"
    for index, (item, entry) in enumerate(zip(items, state.items, strict=True)):
        if item.path is None:
            inputs.mkdir(parents=True, exist_ok=True)
            path = inputs / f"{index:06d}.txt"
            replace_text(path, item.text or "")
            entry.path, entry.record = str(path), item.record
        else:
            entry.path = str(Path(item.path).resolve())
        # What the batch knows the item to hold: a run counts for the item only
        # if its first round reviewed exactly this.
        entry.sha256 = _content_sha(entry.path)
    state.rubric_ref, state.rubric_hash = rubric_ref, rubric_hash(rubric)
    state.screen_rubrics = {}
    batches.first_draw(state, _store(state))
    return view(state)


def _content_sha(path: str) -> str | None:
    try:
        return sha256(read_exact(path))
    except (OSError, UnicodeDecodeError):
        return None


def _command(state: BatchState, path: str, rubric: str) -> str:
    spec = batches.batch_dir(state.id) / "spec.md"
    return (
        f"santa round start --against {shlex.quote(path)} --spec {shlex.quote(str(spec))} "
        f"--rubric {shlex.quote(rubric)} --json"
    )


def _path_of(state: BatchState, item: str) -> str:
    path = state.item(item).path
    assert path is not None  # every item of a batch inside Claude Code is a file
    return path


def next_step(state: BatchState) -> dict[str, Any]:
    """What the orchestrator does next, with the exact commands."""
    if state.status != "open":
        folder = batches.batch_dir(state.id)
        done: dict[str, Any] = {
            "step": "done",
            "verdict": state.verdict,
            "report": str(folder / "report.md"),
        }
        problems = _book(state).audit()
        if problems:  # a verdict its own runs do not back is no verdict
            done.update(verdict="ESCALATED", problems=problems)
        return done
    if state.mode != "claude-code":
        return {"step": "resume", "hint": "run the same `santa batch` command with --resume"}
    book = _book(state)
    wave = book.current()
    if wave is None:
        return {"step": "decide"}
    pending = [i for i in wave.items if i not in wave.outcomes]
    if pending:
        return {
            "step": "verify",
            "wave": wave.number,
            "statement": wave.plan.statement,
            "items": [
                {
                    "id": i,
                    "against": _path_of(state, i),
                    "command": _command(state, _path_of(state, i), state.rubric_ref or ""),
                }
                for i in pending
            ],
        }
    for criterion in wave.screening or []:
        screened = wave.screens.get(criterion, {})
        todo = [i for i in book.unverified() if i not in screened]
        if todo:
            rubric = _screen_rubrics(state)[criterion].path
            return {
                "step": "screen",
                "wave": wave.number,
                "criterion": criterion,
                "items": [
                    {
                        "id": i,
                        "against": _path_of(state, i),
                        "command": _command(state, _path_of(state, i), rubric),
                    }
                    for i in todo
                ],
            }
    return {"step": "decide"}  # never left standing: record() advances past it


def view(state: BatchState) -> dict[str, Any]:
    """What `santa batch plan/record/status` print: the waves and the next step."""
    step = next_step(state)
    return {
        "batch_id": state.id,
        "status": state.status,
        "population": _book(state).population(),
        "seed": state.seed,
        "waves": [batches.wave_summary(w) for w in state.waves],
        "next": step,
        "record": f"santa batch record {state.id} --item ITEM --run RUN_ID",
    }


def _screen_rubrics(state: BatchState) -> dict[str, ScreenRubric]:
    if state.screen_rubrics is None:
        state.screen_rubrics = {}
    return state.screen_rubrics


def _screen_rubric(state: BatchState, criterion: str) -> ScreenRubric:
    import yaml

    from santa_method.core.rubric import load_rubric, rubric_from_json, rubric_hash

    full = rubric_from_json(state.options.rubric)
    chosen = next(c for c in full.criteria if c.id == criterion)
    path = batches.batch_dir(state.id) / f"screen-{criterion}.yaml"
    doc = {
        "name": f"screen-{criterion}",
        "description": f"Batch {state.id}: screen every unverified item for {criterion} only.",
        "criteria": [chosen.to_json()],
    }
    replace_text(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    loaded = load_rubric(str(path))
    assert loaded is not None
    return ScreenRubric(path=str(path), hash=rubric_hash(loaded))


def _advance(book: Book) -> None:
    """Apply the rules once every item of the current step is recorded."""
    state = book.state
    while state.status == "open":
        wave = book.current()
        assert wave is not None
        if any(i not in wave.outcomes for i in wave.items):
            return
        decision = book.decide(wave)
        if decision.step == "screen":
            if not wave.screening:
                for criterion in decision.criteria:
                    _screen_rubrics(state)[criterion] = _screen_rubric(state, criterion)
                wave.screening = list(decision.criteria)
                wave.screening_since = runlog.now_iso()
                book.save()
            if next_step(state)["step"] == "screen":
                return
            wave.screened = True
            decision = book.decide(wave)
        book.conclude(wave, decision)
        if decision.step == "resample":
            book.draw()
            continue
        book.finish(decision, tokens=None, warnings=[])
        return


def _inside_claude_code() -> bool:
    import os

    names = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT")
    return any(os.environ.get(name) for name in names)


def _check_run(state: BatchState, item: str, run_id: str) -> RunState:
    """The run must be this item's (its first round reviewed the item as the
    batch knows it, and a shipped run's output is what the file holds now),
    for this batch's spec, finished, and new. Inside Claude Code its reviews
    must have come through the reviewer hook."""
    run = load_state(run_id)
    if run.status == "open":
        raise InputError(
            f"run {run_id} is still open; finish it (ship or escalate) before recording it"
        )
    target = run.target
    entry = state.item(item)
    expected = Path(_path_of(state, item)).resolve()
    if target.kind != "file" or Path(target.path or "").resolve() != expected:
        raise RefusedError(f"run {run_id} did not verify item '{item}' ({expected})")
    if run.rounds[0].output_sha256 != entry.sha256:
        raise RefusedError(
            f"run {run_id} did not review item '{item}' as the batch knows it (the item "
            "changed before the run, or the run reviewed other content); open a new run "
            "with the command `santa batch status` prints"
        )
    if (
        run.status == "shipped"
        and _content_sha(_path_of(state, item)) != run.rounds[-1].output_sha256
    ):
        raise RefusedError(
            f"item '{item}' no longer holds what run {run_id} shipped; open a new run for it"
        )
    if _inside_claude_code() and run.source != "hook":
        raise RefusedError(
            f"run {run_id} took its reviews from '{run.source}', not from reviewer "
            "subagents through the hook; inside Claude Code a batch counts only those"
        )
    if run.spec_sha256 != state.spec_sha256:
        raise RefusedError(f"run {run_id} used another spec than batch {state.id}")
    if run.created < state.created:
        raise RefusedError(f"run {run_id} is older than batch {state.id}")
    used = {o.run_id for w in state.waves for o in w.outcomes.values()} | {
        e.run_id for w in state.waves for s in w.screens.values() for e in s.values()
    }
    if run_id in used:
        raise RefusedError(f"run {run_id} is already recorded in batch {state.id}")
    return run


def _first_run(state: BatchState, item: str, rubric_hash: str, since: str) -> str | None:
    """The earliest run since `since` (the batch's start; a screen's start)
    of the item as the batch knows it, with the batch's spec and this step's
    rubric: rerunning an item until a run passes (before its draw or after)
    must not pick the verdict."""
    entry = state.item(item)
    path = Path(_path_of(state, item)).resolve()
    found = []
    for run_id in list_run_ids():
        try:
            run = load_state(run_id)
            target = run.target
            if (
                target.kind == "file"
                and Path(target.path or "").resolve() == path
                and run.created >= since
                and run.spec_sha256 == state.spec_sha256
                and run.rubric_hash == rubric_hash
                and run.rounds[0].output_sha256 == entry.sha256
            ):
                found.append((run.created, run_id))
        except (InputError, KeyError, OSError, ValueError):
            continue
    return min(found)[1] if found else None


def record(batch_id: str, item: str, run_id: str) -> dict[str, Any]:
    """Record a finished run as the outcome of an item the batch is waiting for."""
    with batches.locked(batch_id) as state:
        if state.mode != "claude-code":
            raise InputError(f"batch {batch_id} is run by `santa batch`, not recorded by hand")
        _recover(state)
        if state.status != "open":
            raise RefusedError(f"batch {batch_id} is finished ({state.status})")
        if item not in {i.id for i in state.items}:
            raise InputError(f"batch {batch_id} has no item '{item}'")
        run = _check_run(state, item, run_id)
        step = next_step(state)
        waiting = {i["id"] for i in step.get("items", [])}
        if item not in waiting:
            raise RefusedError(
                f"item '{item}' is not waiting for a run now (the batch's next step is "
                f"{step['step']}); see `santa batch status {batch_id}`"
            )
        book = _book(state)
        wave = book.current()
        assert wave is not None
        if step["step"] == "screen":
            # Screens of this wave only: an earlier wave may have screened the
            # same item for the same criterion.
            rubric = _screen_rubrics(state)[step["criterion"]].hash
            since = wave.screening_since or state.created
        else:
            rubric, since = state.rubric_hash or "", state.created
        first = _first_run(state, item, rubric, since)
        if first is not None and first != run_id:
            raise RefusedError(
                f"run {first} of item '{item}' came first; the first run of an item counts "
                f"(record it: santa batch record {batch_id} --item {item} --run {first})"
            )
        outcome = batches.outcome_of_run(item, run_id)
        if step["step"] == "verify":
            if run.rubric_hash != state.rubric_hash:
                raise RefusedError(f"run {run_id} used another rubric than the batch")
            wave.outcomes[item] = outcome
            recorded: dict[str, Any] = {"phase": "verify", **outcome.to_json()}
        else:
            criterion = step["criterion"]
            screen_rubric = _screen_rubrics(state)[criterion]
            if run.rubric_hash != screen_rubric.hash:
                raise RefusedError(
                    f"run {run_id} did not use the screen rubric for {criterion} "
                    f"({screen_rubric.path})"
                )
            results: dict[str, ScreenResult] = {
                "passed": "clean",
                "fixed": "flagged",
                "escalated": "unusable",
            }
            result = results[outcome.status]
            if outcome.status == "escalated" and outcome.criteria:
                result = "flagged"  # flagged, and its loop could not fix it
            entry = ScreenRecord(
                run_id=run_id,
                result=result,
                fixed=outcome.status == "fixed",
                cost_usd=outcome.cost_usd,
            )
            wave.screens.setdefault(criterion, {})[item] = entry
            recorded = {"phase": "screen", "item": item, "criterion": criterion, **entry.to_json()}
        state.item(item).sha256 = _content_sha(_path_of(state, item))
        if outcome.cost_usd is None or state.cost_usd is None:
            state.cost_usd = None  # unknown, never reported as $0
        else:
            state.cost_usd = round(state.cost_usd + outcome.cost_usd, 8)
        batches.event(batch_id, "record", **recorded)
        _advance(book)
        answer = view(state)
    answer["recorded"] = recorded
    return answer


def _recover(state: BatchState) -> None:
    """Write the verdict of a batch whose last decision ended it but whose
    verdict was never written (an interruption between the two)."""
    book = _book(state)
    concluded = book.concluded()
    if concluded is not None:
        book.finish(concluded, tokens=None, warnings=[])
    elif (
        state.status == "open"
        and book.waves
        and book.waves[-1].decision is not None
        and book.waves[-1].decision.step == "resample"
    ):
        book.draw()  # decided to draw again, interrupted before drawing


def status(batch_id: str | None) -> dict[str, Any]:
    if batch_id is None:
        found = [b for b in batches.list_ids() if batches.load(b).mode == "claude-code"]
        if not found:
            raise InputError("there is no batch yet; start one with `santa batch plan`")
        batch_id = found[-1]
    if batches.load(batch_id).mode == "claude-code":
        with batches.locked(batch_id) as state:
            _recover(state)
    return view(batches.load(batch_id))


def screen_rubric_allowed(rubric_arg: str | None, against: str | None, spec: str | None) -> bool:
    """True when `rubric_arg` is the screen rubric of an open batch that is
    screening for that criterion now, unchanged since the batch wrote it,
    and the run is for one of the items waiting for that screen, with the
    batch's spec."""
    from santa_method.core.rubric import load_rubric, rubric_hash

    if not rubric_arg or not against or spec is None:
        return False
    path = Path(rubric_arg).resolve()
    base = batches.batches_dir().resolve()
    if path.parent.parent != base or not path.name.startswith("screen-"):
        return False
    try:
        state = batches.load(path.parent.name)
    except InputError:
        return False
    criterion = path.name.removeprefix("screen-").removesuffix(".yaml")
    wave = state.waves[-1] if state.waves else None
    known = (state.screen_rubrics or {}).get(criterion)
    if state.status != "open" or wave is None or known is None:
        return False
    if criterion not in (wave.screening or []) or wave.screened:
        return False
    if sha256(spec) != state.spec_sha256:
        return False
    step = next_step(state)
    waiting = {Path(i["against"]).resolve() for i in step.get("items", [])}
    if step["step"] != "screen" or step["criterion"] != criterion:
        return False
    if Path(against).resolve() not in waiting:
        return False
    try:
        loaded = load_rubric(str(path))
    except InputError:
        return False
    return loaded is not None and rubric_hash(loaded) == known.hash


__all__ = ["plan", "record", "screen_rubric_allowed", "status", "view"]
