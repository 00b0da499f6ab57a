"""state/model/: the typed state, loaded from and saved to the same files.

The files under tests/data/state/ were written by santa before the state
was typed: four batches (screened and fixed headless, screened inside
Claude Code with JSONL records, stratified, interrupted with runs in
flight) and seven runs (every source, a file and a diff, open, shipped
and escalated, a working copy, a budget, a fixer and its fixes, a fixer's
questions, reviewer spawns, review files), each from a test of its own;
only the temporary folder in their paths was renamed. One run was written
since (`run-hook-late.json`: reviewers' starts and a round's extra
replies, from the background-reviewer story of test_late_replies.py).
Loading one and saving it again must give the same bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from santa_method.cli import main
from santa_method.core.batch_rules import Decision, ItemOutcome
from santa_method.core.errors import InputError
from santa_method.state import batches, store
from santa_method.state.model.batch import BATCH_STATE_VERSION, BatchState, ScreenFix, ScreenRecord
from santa_method.state.model.reading import StateError
from santa_method.state.model.run import RUN_STATE_VERSION, RunState

DATA = Path(__file__).parent / "data" / "state"
BATCH_FILES = sorted(DATA.glob("batch-*.json"))


def _place(text: str, folder_of: Any = batches.batch_dir) -> str:
    """Put a state file where santa looks for it (a batch's, or with
    `store.run_dir` a run's); returns its id."""
    found = json.loads(text)["id"]
    folder = folder_of(found)
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(text, encoding="utf-8")
    return found


def test_the_fixtures_cover_what_a_batch_state_holds():
    states = [BatchState.from_json(json.loads(p.read_text())) for p in BATCH_FILES]
    assert len(states) == 4
    assert {s.mode for s in states} == {"headless", "claude-code"}
    assert any(w.running for s in states for w in s.waves)
    assert any(w.plan.strata for s in states for w in s.waves)
    assert any(i.record for s in states for i in s.items)
    assert any(w.screening for s in states for w in s.waves)
    assert any(
        e.fix and e.fix.path
        for s in states
        for w in s.waves
        for c in w.screens.values()
        for e in c.values()
    )
    assert any(
        e.run_id for s in states for w in s.waves for c in w.screens.values() for e in c.values()
    )
    assert {s.status for s in states} >= {"open", "accepted"}


@pytest.mark.parametrize("path", BATCH_FILES, ids=lambda p: p.stem)
def test_a_batch_state_written_before_typing_loads_and_saves_byte_for_byte(user_files, path):
    text = path.read_text(encoding="utf-8")
    batch_id = _place(text)
    state = batches.load(batch_id)
    assert isinstance(state, BatchState) and state.id == batch_id
    batches.save(state)
    assert (batches.batch_dir(batch_id) / "state.json").read_text(encoding="utf-8") == text


def test_typed_fields_read_what_the_file_says():
    data = json.loads((DATA / "batch-headless-screened.json").read_text())
    state = BatchState.from_json(data)
    first = state.waves[0]
    assert first.plan.population == data["waves"][0]["plan"]["population"]
    assert first.items == data["waves"][0]["items"]
    assert first.decision == Decision(
        **{
            k: tuple(v) if isinstance(v, list) else v
            for k, v in data["waves"][0]["decision"].items()
        }
    )
    for item, outcome in first.outcomes.items():
        assert isinstance(outcome, ItemOutcome) and outcome.item == item
        assert outcome.to_json() == data["waves"][0]["outcomes"][item]
    assert state.options.backend == data["options"]["backend"]
    assert state.options.criterion_ids == {c["id"] for c in data["options"]["rubric"]["criteria"]}
    assert state.changed == data["changed"] and state.tokens == data["tokens"]


def test_a_state_of_the_first_release_still_loads(user_files):
    """The first release wrote no `drawn` time and no item hashes."""
    data = json.loads((DATA / "batch-interrupted.json").read_text())
    for wave in data["waves"]:
        del wave["drawn"]
    for item in data["items"]:
        del item["sha256"]
    batch_id = _place(json.dumps(data))
    state = batches.load(batch_id)
    assert state.waves[0].drawn is None and all(i.sha256 is None for i in state.items)
    assert state.waves[0].running  # what it needs to resume is all there
    batches.save(state)
    again = json.loads((batches.batch_dir(batch_id) / "state.json").read_text())
    assert "drawn" not in again["waves"][0]


def _broken(change: Any) -> dict[str, Any]:
    data = json.loads((DATA / "batch-headless-screened.json").read_text())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["waves"][0].pop("plan"), "state.waves[0].plan is missing"),
        (lambda d: d.update(seed="7"), "state.seed is not a whole number"),
        (lambda d: d["items"].append(3), "state.items[20] is not an object"),
        (
            lambda d: d["waves"][0]["outcomes"]["item-0010"].update(status="maybe"),
            "state.waves[0].outcomes['item-0010'].status is not passed, fixed or escalated",
        ),
        (
            lambda d: d["waves"][0]["screens"]["completeness"]["item-0011"].update(result=None),
            "state.waves[0].screens['completeness']['item-0011'].result is not a string",
        ),
        (lambda d: d["options"].pop("rubric"), "state.options.rubric is missing"),
        (lambda d: d.update(version=BATCH_STATE_VERSION + 1), "written by a newer santa"),
    ],
)
def test_a_state_this_version_cannot_read_says_which_key(user_files, change, message):
    data = _broken(change)
    with pytest.raises(StateError, match=re.escape(message)):
        BatchState.from_json(data)
    batch_id = _place(json.dumps(data))
    with pytest.raises(InputError, match=f"the state of batch '{batch_id}' cannot be read"):
        batches.load(batch_id)


def test_the_cli_names_an_unreadable_batch_state_in_one_sentence(user_files, capsys):
    data = json.loads((DATA / "batch-claude-code-screened.json").read_text())
    data["waves"][1]["decision"] = {"step": "celebrate"}
    batch_id = _place(json.dumps(data))
    assert main(["batch", "status", batch_id]) == 2
    err = capsys.readouterr().err
    assert "state.waves[1].decision.step is not accept, screen, resample or escalate" in err
    assert "Traceback" not in err
    with pytest.raises(StateError, match="not hold a JSON object"):
        BatchState.from_json([data])


@pytest.mark.parametrize(
    ("entry", "keys"),
    [
        # As the three writers of a screen wrote it (santa batch; santa batch record).
        (
            ScreenRecord(result="unusable", fixed=False, cost_usd=0.001, errors=["no JSON"]),
            ["cost_usd", "fixed", "result", "errors"],
        ),
        (
            ScreenRecord(
                result="flagged",
                fixed=True,
                cost_usd=0.001,
                fix=ScreenFix(cost_usd=None, flags=2, notes="1. fixed", path="/w/1.txt"),
            ),
            ["cost_usd", "fixed", "result", "fix_cost_usd", "flags", "notes", "path"],
        ),
        (
            ScreenRecord(result="clean", fixed=False, cost_usd=None, run_id="r-1"),
            ["run_id", "result", "fixed", "cost_usd"],
        ),
    ],
)
def test_a_screen_keeps_its_keys_in_order_through_a_round_trip(entry, keys):
    data = entry.to_json()
    assert list(data) == keys
    again = ScreenRecord.from_json(json.loads(json.dumps(data)), "screen")
    assert again == entry and list(again.to_json()) == keys


# ---------------------------------------------------------------- a run

RUN_FILES = sorted(DATA.glob("run-*.json"))


def test_the_run_fixtures_cover_what_a_run_state_holds():
    states = [RunState.from_json(json.loads(p.read_text())) for p in RUN_FILES]
    assert {s.source for s in states} == {"hook", "files", "api"}
    assert {s.target.kind for s in states} == {"file", "diff"}
    assert {s.status for s in states} == {"open", "shipped", "escalated"}
    assert any(s.target.original for s in states)
    assert any(s.budget_usd is not None and s.models and s.pre_check for s in states)
    assert any(s.fixer for s in states) and any(s.fixes for s in states)
    assert any(s.escalation and s.escalation.questions for s in states)
    assert any(r.spawn_ids for s in states for r in s.rounds)
    assert any(sp.agent_id for s in states for r in s.rounds for sp in r.spawns or [])
    openings = {sp.opening for s in states for r in s.rounds for sp in r.spawns or [] if sp.id}
    assert openings == {0, 1}
    extras = [x for s in states for r in s.rounds for x in r.extras.values()]
    assert {x.verdict for x in extras} == {"PASS", "FAIL"} and all(x.why_extra for x in extras)
    assert any(r.spawns is None for s in states for r in s.rounds)  # rounds from before
    slots = [x for s in states for r in s.rounds for x in r.slots.values() if x is not None]
    assert any(x.file for x in slots) and any(x.agent_id for x in slots)
    assert any(x.gated_valid is False for x in slots)
    issues = [i for s in states for r in s.rounds for g in r.gates for i in g.issues]
    assert any(i.quote for i in issues) and any(i.missing for i in issues)


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda p: p.stem)
def test_a_run_state_written_before_typing_loads_and_saves_byte_for_byte(user_files, path):
    text = path.read_text(encoding="utf-8")
    run_id = _place(text, store.run_dir)
    state = store.load_state(run_id)
    assert isinstance(state, RunState) and state.id == run_id
    store.save_state(state)
    assert (store.run_dir(run_id) / "state.json").read_text(encoding="utf-8") == text
    with store.locked_state(run_id) as again:
        assert again == state
    assert (store.run_dir(run_id) / "state.json").read_text(encoding="utf-8") == text


def test_a_run_state_reads_into_its_records():
    data = json.loads((DATA / "run-hook-fixed.json").read_text())
    state = RunState.from_json(data)
    first = state.rounds[0]
    assert first.canary == data["rounds"][0]["canary"]
    assert set(first.slots) == set(data["rounds"][0]["slots"])
    gate = first.gates[-1]
    assert [i.to_json() for i in gate.issues] == data["rounds"][0]["gates"][-1]["issues"]
    assert state.fixes[0].after_round == data["fixes"][0]["after_round"]
    assert state.last_gate is not None and state.last_gate.verdict == data["last_gate"]["verdict"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("rounds"), "state.rounds is missing"),
        (lambda d: d["rounds"][0].update(open="yes"), "state.rounds[0].open is not true or false"),
        (
            lambda d: d["rounds"][0]["slots"].update(B=[]),
            "state.rounds[0].slots['B'] is not an object or null",
        ),
        (lambda d: d["target"].pop("kind"), "state.target.kind is missing"),
        (lambda d: d.update(version=RUN_STATE_VERSION + 1), "written by a newer santa"),
        (
            lambda d: d["rounds"][0]["slots"]["B"].update(token_detail={"input": "x"}),
            "state.rounds[0].slots['B'].token_detail holds a count that is not a whole number",
        ),
        (
            lambda d: d["rounds"][0]["slots"]["B"].update(token_detail={"input": [1]}),
            "token_detail holds a count that is not a whole number",
        ),
        (
            lambda d: d["rounds"][0]["slots"]["B"].update(token_detail={"input": 1.5}),
            "token_detail holds a count that is not a whole number",
        ),
        (
            lambda d: d["rounds"][0].update(extras={"D": "a reply"}),
            "state.rounds[0].extras['D'] is not an object",
        ),
        (
            lambda d: d["rounds"][0].update(spawns=[{"opening": 0}]),
            "state.rounds[0].spawns[0].at is missing",
        ),
        (lambda d: d["rounds"][0].update(spawns={}), "state.rounds[0].spawns is not a list"),
    ],
)
def test_a_run_state_this_version_cannot_read_says_which_key(user_files, change, message):
    data = json.loads((DATA / "run-hook-fixed.json").read_text())
    change(data)
    with pytest.raises(StateError, match=re.escape(message)):
        RunState.from_json(data)
    run_id = _place(json.dumps(data), store.run_dir)
    with pytest.raises(InputError, match=f"the state of run '{run_id}' cannot be read"):
        store.load_state(run_id)
