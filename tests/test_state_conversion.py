"""state/model/reading.py: one conversion reads and writes every state record.

Any run and any batch santa can hold is saved and loaded back as itself
(and saved again as the same bytes); a file with a wrong type or a missing
key anywhere is refused with a sentence naming its path, never a KeyError
or a TypeError; a field added to a record needs nothing but its declaration.
The records are built by hypothesis from their own type hints, so a field
added later is covered too.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from santa_method.core.sampling import Stratum
from santa_method.core.types import MergedIssue
from santa_method.state import batches, store
from santa_method.state.model.batch import BATCH_STATE_VERSION, BatchState
from santa_method.state.model.reading import Refusal, StateError
from santa_method.state.model.run import RUN_STATE_VERSION, RunState, Slot

DATA = Path(__file__).parent / "data" / "state"
RUN_ID = "20990101-000000-abcdef"
BATCH_ID = "b-20990101-000000-abcdef"

# ---------------------------------------------------------------- records from their types

FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# Lone surrogates too: a reply may hold them, and the state keeps them.
TEXT = st.text(st.characters(exclude_categories=()), max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | FLOATS | TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(TEXT, inner, max_size=2),
    max_leaves=6,
)


def _issue(criterion: str, others: list[str], quote: str | None, quotes: list[str], **rest: Any):
    # As the merge makes one: every criterion and quote once, the face's first.
    return MergedIssue(
        criterion=criterion,
        quote=quote,
        criteria=tuple(dict.fromkeys([criterion, *others])),
        quotes=tuple(dict.fromkeys([*([quote] if quote is not None else []), *quotes])),
        **rest,
    )


ISSUES = st.builds(
    _issue,
    criterion=TEXT,
    others=st.lists(TEXT, max_size=2),
    quote=st.none() | TEXT,
    quotes=st.lists(TEXT, max_size=2),
    issue=TEXT,
    evidence=st.sampled_from(["verified", "unverified", "none"]),
    flagged_by=st.lists(TEXT, max_size=2).map(tuple),
    missing=st.none() | TEXT,
    location=st.none() | TEXT,
    source=st.sampled_from(["issue", "check"]),
    key=TEXT,
    criteria_by=st.dictionaries(TEXT, st.lists(TEXT, max_size=2).map(tuple), max_size=2).map(
        lambda d: tuple(d.items())
    ),
)
# A plan's strata are written as `Plan.to_json` rounds them.
STRATA = st.builds(
    Stratum,
    name=TEXT,
    size=st.integers(0),
    quota=FLOATS.map(lambda q: round(q, 6)),
    allocated=st.integers(0),
)
SPECIAL: dict[Any, st.SearchStrategy[Any]] = {MergedIssue: ISSUES, Stratum: STRATA}


def of(tp: Any) -> st.SearchStrategy[Any]:
    """Any value of the type `tp`, as a state record declares it."""
    origin, args = get_origin(tp), get_args(tp)
    simple = {Any: JSON, str: TEXT, int: st.integers(), float: FLOATS, bool: st.booleans()}
    if tp in simple:
        return simple[tp]
    if tp is type(None):
        return st.none()
    if tp in SPECIAL:
        return SPECIAL[tp]
    if origin in (Union, types.UnionType):
        return st.one_of(*(of(a) for a in args))
    if origin is Annotated:
        refusal = next((a for a in args[1:] if isinstance(a, Refusal)), None)
        return of(args[0]).filter(refusal.check) if refusal else of(args[0])
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (list, tuple):
        found = st.lists(of(args[0]), max_size=2)
        return found if origin is list else found.map(tuple)
    if origin is dict:
        return st.dictionaries(TEXT, of(args[1]), max_size=2)
    hints = typing.get_type_hints(tp, include_extras=True)
    made = {f.name: of(hints[f.name]) for f in dataclasses.fields(tp)}
    if "version" in made:  # a newer version is refused, rightly
        newest = {RunState: RUN_STATE_VERSION, BatchState: BATCH_STATE_VERSION}[tp]
        made["version"] = st.integers(max_value=newest)
    return st.builds(tp, **made).map(_as_a_file_holds_it)


def _as_a_file_holds_it(record: Any) -> Any:
    """The record with the keys written `along` an unset key at their
    defaults: a file holds none of them, so no file can say otherwise."""
    unset = {}
    for f in dataclasses.fields(record):
        anchor = next((m["along"] for m in f.metadata.values() if "along" in m), None)
        if anchor is not None and getattr(record, anchor) is None:
            unset[f.name] = f.default if f.default_factory is dataclasses.MISSING else []
    return dataclasses.replace(record, **unset) if unset else record


SLOW = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SLOW
@given(state=of(RunState))
def test_any_run_state_is_saved_and_loaded_back_as_itself(user_files, state):
    state.id = RUN_ID
    store.run_dir(RUN_ID).mkdir(parents=True, exist_ok=True)
    store.save_state(state)
    saved = (store.run_dir(RUN_ID) / "state.json").read_text(encoding="utf-8")
    loaded = store.load_state(RUN_ID)
    assert loaded == state
    store.save_state(loaded)
    assert (store.run_dir(RUN_ID) / "state.json").read_text(encoding="utf-8") == saved


@SLOW
@given(state=of(BatchState))
def test_any_batch_state_is_saved_and_loaded_back_as_itself(user_files, state):
    state.id = BATCH_ID
    batches.batch_dir(BATCH_ID).mkdir(parents=True, exist_ok=True)
    batches.save(state)
    saved = (batches.batch_dir(BATCH_ID) / "state.json").read_text(encoding="utf-8")
    loaded = batches.load(BATCH_ID)
    assert loaded == state
    batches.save(loaded)
    assert (batches.batch_dir(BATCH_ID) / "state.json").read_text(encoding="utf-8") == saved


# ---------------------------------------------------------------- refusals, by path


def _run() -> dict[str, Any]:
    return json.loads((DATA / "run-hook-fixed.json").read_text(encoding="utf-8"))


def _batch() -> dict[str, Any]:
    return json.loads((DATA / "batch-headless-screened.json").read_text(encoding="utf-8"))


def _fixed_screen(data: dict[str, Any]) -> dict[str, Any]:
    """A headless screen the fixer answered (its fix's keys sit in the screen's object)."""
    return next(
        e for w in data["waves"] for c in w["screens"].values() for e in c.values() if "flags" in e
    )


RUN_REFUSALS = [
    (
        lambda d: d["rounds"][0]["slots"]["B"].update(tokens="12"),
        "state.rounds[0].slots['B'].tokens is not a whole number or null",
    ),
    (
        lambda d: d["rounds"][0]["slots"]["B"].update(failed="no"),
        "state.rounds[0].slots['B'].failed is not true or false",
    ),
    (
        lambda d: d["rounds"][0]["slots"]["B"].update(errors=["x", 1]),
        "state.rounds[0].slots['B'].errors is not a list of strings",
    ),
    (
        lambda d: d["rounds"][0]["slots"]["B"].update(duration_s=-1),
        "state.rounds[0].slots['B'].duration_s is not a finite number of seconds of at least 0",
    ),
    (
        lambda d: d["rounds"][0]["gates"][0]["issues"][0].update(criterion=3),
        "state.rounds[0].gates[0].issues[0].criterion is not a string",
    ),
    (
        lambda d: d["rounds"][0]["gates"][0]["issues"][0].pop("issue"),
        "state.rounds[0].gates[0].issues[0].issue is missing",
    ),
    (
        lambda d: d["rounds"][0]["gates"][0].pop("verdict"),
        "state.rounds[0].gates[0].verdict is missing",
    ),
    (lambda d: d["rounds"][0].pop("capacity"), "state.rounds[0].capacity is missing"),
    (lambda d: d["fixes"][0].pop("after_round"), "state.fixes[0].after_round is missing"),
    (lambda d: d["last_gate"].update(verdict=None), "state.last_gate.verdict is not a string"),
    (lambda d: d["target"].update(path=["a"]), "state.target.path is not a string or null"),
    (lambda d: d.update(budget_usd=True), "state.budget_usd is not a number or null"),
]


@pytest.mark.parametrize(("change", "message"), RUN_REFUSALS)
def test_a_run_state_with_a_wrong_or_missing_key_is_refused_by_its_path(
    user_files, change, message
):
    data = _run()
    change(data)
    with pytest.raises(StateError, match=f"^{re.escape(message)}$"):
        RunState.from_json(data)
    folder = store.run_dir(data["id"])
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(store.StateUnreadable, match=re.escape(message)) as refused:
        store.load_state(data["id"])
    assert refused.value.reason == message and refused.value.refused


BATCH_REFUSALS = [
    (lambda d: d["items"][0].pop("id"), "state.items[0].id is missing"),
    (lambda d: d["options"].update(exclude=[3]), "state.options.exclude is not a list of strings"),
    (lambda d: d.update(tokens={"input": "x"}), "state.tokens['input'] is not a whole number"),
    (
        lambda d: d["waves"][0].update(running={"a": 3}),
        "state.waves[0].running['a'] is not a string",
    ),
    (lambda d: d["waves"][0]["plan"].pop("n"), "state.waves[0].plan.n is missing"),
    (
        lambda d: d["waves"][0]["outcomes"]["item-0010"].pop("item"),
        "state.waves[0].outcomes['item-0010'].item is missing",
    ),
    (
        lambda d: d["waves"][0]["decision"].update(criteria="x"),
        "state.waves[0].decision.criteria is not a list of strings",
    ),
    (
        lambda d: _fixed_screen(d).update(flags="2"),
        re.compile(
            r"state\.waves\[\d\]\.screens\['\w+'\]\['item-\d+'\]\.flags is not a whole number"
        ),
    ),
    (
        lambda d: _fixed_screen(d).update(fix_cost_usd="cheap"),
        re.compile(r"\['item-\d+'\]\.fix_cost_usd is not a number or null"),
    ),
]


@pytest.mark.parametrize(("change", "message"), BATCH_REFUSALS)
def test_a_batch_state_with_a_wrong_or_missing_key_is_refused_by_its_path(change, message):
    data = _batch()
    change(data)
    pattern = message if isinstance(message, re.Pattern) else f"^{re.escape(message)}$"
    with pytest.raises(StateError, match=pattern):
        BatchState.from_json(data)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at] if at else []
    if isinstance(value, dict):
        found += [p for k, v in value.items() for p in _paths(v, (*at, k))]
    elif isinstance(value, list):
        found += [p for n, v in enumerate(value) for p in _paths(v, (*at, n))]
    return found


FILES = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(DATA.glob("*.json"))}


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(FILES)), data=st.data())
def test_a_state_spoiled_anywhere_is_read_or_refused_in_words(name, data):
    """Any key deleted or any value replaced, at any depth: never a crash."""
    spoiled = copy.deepcopy(FILES[name])
    path = data.draw(st.sampled_from(_paths(spoiled)))
    parent = spoiled
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON)
    record = RunState if name.startswith("run-") else BatchState
    try:
        record.from_json(spoiled)
    except StateError as exc:
        assert re.match(r"^(state[.\[]|the file|it was written)", str(exc)), exc


def test_a_time_too_big_for_a_float_is_read_and_an_infinite_one_refused():
    # Checked as a float, 10**400 seconds crashed the reader (OverflowError).
    data = _run()
    data["rounds"][0]["slots"]["B"]["duration_s"] = 10**400
    assert RunState.from_json(data).rounds[0].slots["B"].duration_s == 10**400
    data["rounds"][0]["slots"]["B"]["duration_s"] = float("inf")
    with pytest.raises(StateError, match=r"duration_s is not a finite number of seconds"):
        RunState.from_json(json.loads(json.dumps(data)))


# ---------------------------------------------------------------- what older files lack


def test_keys_an_older_file_lacks_take_the_records_defaults():
    data = _run()
    first = data["rounds"][0]
    for key in ("opened", "instruction", "rereviews", "spawned", "gates"):
        del first[key]
    slot = first["slots"]["B"]
    for key in ("reply", "stored", "transcript_path", "failed", "errors", "token_detail"):
        del slot[key]
    for key in ("created", "fixes", "last_gate", "cwd", "spec_sha256"):
        del data[key]
    state = RunState.from_json(data)
    r, s = state.rounds[0], state.rounds[0].slots["B"]
    assert (r.opened, r.instruction, r.rereviews, r.spawned, r.gates) == ("", "", 0, 0, [])
    assert s is not None and (s.reply, s.stored, s.transcript_path, s.failed, s.errors) == (
        "",
        "",
        "",
        False,
        [],
    )
    assert s.token_detail is None and s.agent_id == data["rounds"][0]["slots"]["B"]["agent_id"]
    assert (state.created, state.fixes, state.last_gate, state.cwd, state.spec_sha256) == (
        "",
        [],
        None,
        "",
        None,
    )
    # Saved again, it says what it knows now: the keys today's files hold.
    again = state.to_json()
    assert again["fixes"] == [] and again["rounds"][0]["gates"] == []


@dataclasses.dataclass(kw_only=True)
class SlotWithABackend(Slot):
    """A field added to a record, as the next release may add one."""

    backend: str | None = None


def test_a_field_added_to_a_record_needs_nothing_but_its_declaration():
    written = _run()["rounds"][0]["slots"]["B"]
    slot = SlotWithABackend.from_json(written, "slot")
    assert slot.backend is None
    assert json.dumps(slot.to_json()) == json.dumps(written)  # an older file: the same bytes
    slot.backend = "api"
    assert list(slot.to_json())[-1] == "backend"
    assert SlotWithABackend.from_json(slot.to_json(), "slot") == slot
    with pytest.raises(StateError, match=r"^slot\.backend is not a string or null$"):
        SlotWithABackend.from_json({**written, "backend": 3}, "slot")
