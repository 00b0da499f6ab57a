"""The run's steps read the state as typed records (state/model/run.py).

Gating, the fix and the logged events load the run with `store.locked_state`:
a state this version cannot read is refused in one sentence naming its key,
before anything is judged, written or logged, and the file is left as it
was. The provenance checks receive the round's instruction and assignment
and the slot as records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from santa_method.cli import main
from santa_method.state import sources, store
from santa_method.state.model.run import RunState, Slot

DATA = Path(__file__).parent / "data" / "state"


def _place(data: dict) -> tuple[str, str]:
    """Put a run's state where santa looks for it; returns its id and text."""
    text = json.dumps(data, indent=2)
    folder = store.run_dir(data["id"])
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(text, encoding="utf-8")
    return data["id"], text


@pytest.mark.parametrize(
    "argv",
    [
        ["gate"],
        ["log", "ship"],
        ["log", "fix"],
    ],
    ids=" ".join,
)
def test_a_step_on_a_state_it_cannot_read_names_the_key(user_files, capsys, argv):
    """Closing such a run is the one step left to a person, and it works:
    tests/headless/test_unreadable_state.py."""
    data = json.loads((DATA / "run-hook-spawned.json").read_text(encoding="utf-8"))
    data["max_fixes"] = "two"
    run_id, text = _place(data)
    assert main([*argv, "--run", run_id]) == 2
    err = capsys.readouterr().err
    assert f"the state of run '{run_id}' cannot be read" in err
    assert "state.max_fixes is not a whole number" in err
    assert "Traceback" not in err
    assert (store.run_dir(run_id) / "state.json").read_text(encoding="utf-8") == text


def test_a_provenance_check_gets_what_the_round_asked_and_the_slot(monkeypatch):
    state = RunState.from_json(json.loads((DATA / "run-hook-fixed.json").read_text()))
    seen: list[tuple[sources.Asked, Slot]] = []

    def check(asked: sources.Asked, slot: Slot) -> str | None:
        seen.append((asked, slot))
        return "checked"

    slot = Slot(reply="r", stored="now", agent_id="a")
    assert sources.provenance_problem(state, slot, {state.source: check}) == "checked"
    current = state.rounds[-1]
    assert seen == [(sources.Asked(current.instruction, current.assignment), slot)]


def test_a_run_older_than_in_place_keeps_saying_nothing_about_it(user_files):
    # `santa run --resume` decides where the fixes of such a run go from
    # where its target is; saving the run again must not decide for it.
    data = json.loads((DATA / "run-api-working-copy.json").read_text(encoding="utf-8"))
    del data["in_place"]
    run_id, text = _place(data)
    state = store.load_state(run_id)
    assert state.in_place is None
    store.save_state(state)
    assert (store.run_dir(run_id) / "state.json").read_text(encoding="utf-8") == text


def test_a_step_on_a_state_that_is_not_json_says_so(user_files, capsys):
    data = json.loads((DATA / "run-hook-spawned.json").read_text(encoding="utf-8"))
    run_id, _ = _place(data)
    (store.run_dir(run_id) / "state.json").write_text("{not json", encoding="utf-8")
    assert main(["gate", "--run", run_id]) == 2
    err = capsys.readouterr().err
    assert f"the state of run '{run_id}' is unreadable" in err and "Traceback" not in err
    assert (store.run_dir(run_id) / "state.json").read_text(encoding="utf-8") == "{not json"
