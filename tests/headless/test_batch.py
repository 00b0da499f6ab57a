"""`santa batch` headless: the anthropic backend (real SDK) against the scripted model.

The scripted model (batch_helpers.py) flags exactly the planted markers, so
every expectation below comes from which items the test planted, not from
the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import hypergeom

from e2e.stub_server import FIXER, REVIEWER, Error
from santa_method.cli import main
from santa_method.core.errors import BackendError, InputError
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.headless.batch import BatchOptions, verify_batch_sync
from santa_method.state import batches
from santa_method.state.batches import BatchItem

from .batch_helpers import MARK, SCRIPT, jsonl, texts

SPEC = "Each summary has all its parts."


def backend(server: Any) -> AnthropicBackend:
    return AnthropicBackend(base_url=server.base_url, api_key="test", max_retries=0)


def items_of(values: list[str], **fields: list[Any]) -> list[BatchItem]:
    return [
        BatchItem(
            id=f"item-{i:04d}",
            text=t,
            record={"id": f"item-{i:04d}", "output": t},
            stratum=fields["kind"][i] if "kind" in fields else None,
        )
        for i, t in enumerate(values)
    ]


def run_batch(server: Any, items: list[BatchItem], **options: Any) -> Any:
    options.setdefault("seed", 7)
    return verify_batch_sync(items, SPEC, options=BatchOptions(backend=backend(server), **options))


def reviewed_items(server: Any) -> list[str]:
    """Every item a reviewer saw, read from the traffic (Summary N. lines)."""
    import re

    seen = []
    for request in server.requests_for(REVIEWER):
        found = re.search(r"Summary (\d+)\.", request.text)
        if found:
            seen.append(f"item-{int(found.group(1)):04d}")
    return seen


@pytest.mark.parametrize("size", [1, 3, 5])
def test_small_batches_are_verified_whole(stub_server, project, size):
    server = stub_server(SCRIPT)
    result = run_batch(server, items_of(texts(size, set())))
    data = result.to_json()
    assert result.verdict == "ACCEPTED"
    assert data["reviewed"] == size  # the flat plan's minimum of 5 covers the whole batch
    assert data["guarantee"] == f"every one of the {size} items was verified"
    assert sorted(set(reviewed_items(server))) == [f"item-{i:04d}" for i in range(size)]
    assert len(server.requests_for(REVIEWER)) == 2 * size


def test_a_defect_in_a_small_batch_is_fixed_in_a_copy(stub_server, project):
    server = stub_server(SCRIPT)
    files = []
    for i, text in enumerate(texts(3, {1})):
        path = project / f"out-{i}.md"
        path.write_text(text, encoding="utf-8")
        files.append(path)
    result = verify_batch_sync(files, SPEC, options=BatchOptions(backend=backend(server), seed=3))
    data = result.to_json()
    assert result.verdict == "ACCEPTED"
    assert data["failures_by_criterion"] == {"completeness": [str(files[1])]}
    assert data["systemic"] == []  # one item is not a pattern
    assert "BAD-" in files[1].read_text()  # the user's file is untouched
    fixed = Path(data["changed"][str(files[1])])
    assert fixed.is_file() and "BAD-" not in fixed.read_text()
    kinds = {o.item: o.status for o in result.outcomes}
    assert kinds[str(files[1])] == "fixed" and kinds[str(files[0])] == "passed"


def test_in_place_edits_the_files(stub_server, project):
    server = stub_server(SCRIPT)
    path = project / "only.md"
    path.write_text(texts(1, {0})[0], encoding="utf-8")
    result = verify_batch_sync(
        [path], SPEC, options=BatchOptions(backend=backend(server), seed=1, in_place=True)
    )
    assert result.verdict == "ACCEPTED"
    assert "BAD-" not in path.read_text()


def test_an_in_place_batch_meets_a_run_at_the_files_lock(stub_server, project, monkeypatch):
    from santa_method.state import locks

    server = stub_server(SCRIPT)
    path = project / "only.md"
    original = texts(1, {0})[0]
    path.write_text(original, encoding="utf-8")
    # Held as a `santa run --in-place` on the file would hold it.
    with locks.fixing(path), pytest.raises(InputError, match="being fixed in place"):
        verify_batch_sync(
            [path], SPEC, options=BatchOptions(backend=backend(server), seed=1, in_place=True)
        )
    assert path.read_text(encoding="utf-8") == original
    assert server.requests == []  # refused before anything was spent
    # A fixed item is written under the file's lock: a run holding it stops the write.
    from santa_method.state import batch_files

    taken: list[bool] = []
    real_replace = batch_files.replace_text

    def spy(target, text):  # type: ignore[no-untyped-def]
        taken.append(locks.held(locks.target_lock_path(target)))
        real_replace(target, text)

    monkeypatch.setattr(batch_files, "replace_text", spy)
    result = verify_batch_sync(
        [path], SPEC, options=BatchOptions(backend=backend(server), seed=1, in_place=True)
    )
    assert result.verdict == "ACCEPTED" and "BAD-" not in path.read_text(encoding="utf-8")
    assert True in taken


@pytest.mark.slow
def test_a_thousand_items_with_a_guarantee_plan(stub_server, project):
    server = stub_server(SCRIPT)
    result = run_batch(server, items_of(texts(1000, set())), prevalence=0.05, confidence=0.95)
    data = result.to_json()
    n = data["reviewed"]
    # Independent check: the smallest n whose hypergeometric miss chance is <= 5 %
    # when 50 of the 1000 items are defective.
    expected = next(k for k in range(1, 1001) if hypergeom(1000, 50, k).pmf(0) <= 0.05)
    assert n == expected
    assert result.verdict == "ACCEPTED"
    assert len(set(reviewed_items(server))) == n
    assert data["guarantee"].startswith(f"{n} of 1000 items: a defect in 5 % of items is seen")
    assert data["estimate"]["defects"] == 0 and data["estimate"]["interval"][0] == 0.0
    assert 0 < data["cost_relative_to_all"] < 0.1


def test_a_systemic_pattern_is_found_screened_fixed_and_resampled(stub_server, project):
    defective = set(range(0, 40, 2))  # half the batch carries the same defect
    server = stub_server(SCRIPT)
    result = run_batch(server, items_of(texts(40, defective)), rate=0.2)
    data = result.to_json()
    first = data["waves"][0]
    assert len(first["failures_by_criterion"]["completeness"]) >= 2
    assert first["decision"]["step"] == "resample"
    assert first["decision"]["criteria"] == ["completeness"]
    screen = first["screens"]["completeness"]
    verified_first = {o["item"] for o in data["items"] if o["item"] in set(_wave_items(result, 1))}
    unverified = {f"item-{i:04d}" for i in range(40)} - verified_first
    planted = {f"item-{i:04d}" for i in defective} & unverified
    assert screen["flagged"] == screen["fixed"] == len(planted)
    assert screen["clean"] == len(unverified) - len(planted)
    events = batches.events(result.batch_id)
    fixed_by_screen = {e["item"] for e in events if e["event"] == "fix" and e["via"] == "screen"}
    assert fixed_by_screen == planted  # never blindly to all: exactly the flagged ones
    # The fresh sample excludes verified items and, after the fixes, passes.
    second = data["waves"][1]
    assert not set(_wave_items(result, 2)) & verified_first
    assert second["failed"] == 0
    assert result.verdict == "ACCEPTED"
    assert data["systemic"] == ["completeness"]
    # Two samples drawn: the guarantee counts both chances to miss (union bound).
    miss = sum(
        1 - (w.plan.detection_probability or 0.0) for w in batches.load(result.batch_id).waves
    )
    assert "over the 2 samples drawn" in data["guarantee"]
    assert f"at least {int(max(0.0, 1 - miss) * 1000 + 1e-9) / 10:g} %" in data["guarantee"]
    # Every JSONL item comes back fixed in fixed.jsonl.
    lines = Path(data["fixed_jsonl"]).read_text().splitlines()
    assert len(lines) == 40 and not any(MARK.search(json.loads(line)["output"]) for line in lines)


def _wave_items(result: Any, number: int) -> list[str]:
    state = batches.load(result.batch_id)
    return state.waves[number - 1].items


def test_isolated_failures_without_resamples_escalate(stub_server, project):
    server = stub_server(SCRIPT)
    values = texts(30, set(range(30)))  # every item is defective
    result = run_batch(server, items_of(values), max_resamples=0)
    data = result.to_json()
    assert result.verdict == "ESCALATED"
    assert data["guarantee"].startswith("none")
    assert any("no re-sample is left" in r for r in data["reasons"])
    assert data["estimate"]["defects"] == data["reviewed"]


def test_an_item_that_cannot_be_fixed_stops_the_batch_at_once(stub_server, project):
    server = stub_server(SCRIPT)
    result = run_batch(server, items_of(texts(30, set(range(30)))), max_fixes=0)
    data = result.to_json()
    assert result.verdict == "ESCALATED" and len(data["waves"]) == 1
    assert data["waves"][0]["screens"] == {}  # no money spent on screens that cannot help
    assert any("did not ship" in r for r in data["reasons"])


def test_strata_put_every_stratum_in_the_sample(stub_server, project):
    server = stub_server(SCRIPT)
    kinds = ["rare"] + ["common"] * 59
    result = run_batch(
        server, items_of(texts(60, set()), kind=kinds), stratified=True, rate=0.1, minimum=2
    )
    wave = _wave_items(result, 1)
    assert "item-0000" in wave  # the one-item stratum is always drawn
    assert result.to_json()["waves"][0]["statement"].count("strata") == 1


def test_seeds_reproduce_the_sample_and_differ_between_seeds(stub_server, project):
    server = stub_server(SCRIPT)
    values = items_of(texts(100, set()))
    a = _wave_items(run_batch(server, values, seed=11), 1)
    b = _wave_items(run_batch(server, values, seed=11), 1)
    c = _wave_items(run_batch(server, values, seed=12), 1)
    assert a == b and a != c


def test_excluded_items_are_never_verified_nor_screened(stub_server, project):
    server = stub_server(SCRIPT)
    values = texts(20, set(range(20)))
    excluded = [f"item-{i:04d}" for i in range(10)]
    result = run_batch(server, items_of(values), exclude=excluded, max_resamples=1)
    seen = set(reviewed_items(server))
    assert seen and not seen & set(excluded)
    assert result.to_json()["population"] == 10


@pytest.mark.parametrize("concurrency", [None, 1])
def test_budget_stop_escalates_before_spending_more(stub_server, project, concurrency):
    server = stub_server(SCRIPT)
    # Stub usage: 100 in / 20 out per call at sonnet list price = $0.0004 a review,
    # $0.0008 an item. The first item runs alone to learn that; then items start
    # only while what is spent and reserved leaves room for one more.
    result = run_batch(
        server, items_of(texts(50, set())), budget_usd=0.002, concurrency=concurrency
    )
    data = result.to_json()
    assert result.verdict == "ESCALATED"
    assert any("budget" in r for r in data["reasons"])
    # After the first item ($0.0008), the next may cost up to 4 rounds' worth
    # (max_fixes 3): $0.0032 does not fit in what is left, so the batch stops.
    assert data["cost_usd"] == pytest.approx(0.0008)
    assert data["reviewed"] == 1 and data["waves"][0]["skipped"]


def test_a_backend_failure_leaves_the_batch_and_its_runs_resumable(stub_server, project):
    from santa_method.state import log as runlog

    failing = stub_server({REVIEWER: [Error(401, message="bad key")] * 10})
    values = items_of(texts(5, set()))
    with pytest.raises(BackendError, match="401"):
        run_batch(failing, values, concurrency=5)
    (batch_id,) = batches.list_ids()
    state = batches.load(batch_id)
    assert state.status == "open"
    running = set(state.waves[0].running.values())
    assert running  # runs were opened and are left open, not escalated
    server = stub_server(SCRIPT)
    result = run_batch(server, values, resume=True, concurrency=5)
    assert result.batch_id == batch_id and result.verdict == "ACCEPTED"
    assert running <= {o.run_id for o in result.outcomes}  # continued, not started afresh
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] == "escalate"]
    with pytest.raises(InputError, match="no unfinished batch"):
        run_batch(server, values, resume=True)


def test_cli_batch_json_and_exit_codes(stub_server, project, monkeypatch, capsys):
    server = stub_server(SCRIPT)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    items = jsonl(project / "items.jsonl", texts(8, set()))
    code = main(["batch", str(items), "--spec-text", SPEC, "--seed", "5", "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"] == "ACCEPTED"
    for key in ("items", "failures_by_criterion", "estimate", "guarantee", "cost_usd", "report"):
        assert key in out
    assert Path(out["report"]).read_text().startswith(f"# santa-method batch {out['batch_id']}")

    bad = jsonl(project / "bad.jsonl", texts(8, set(range(8))))
    code = main(
        [
            "batch",
            str(bad),
            "--spec-text",
            SPEC,
            "--max-resamples",
            "0",
            "--max-fixes",
            "0",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("ESCALATED")

    assert main(["batch", str(items), "--spec-text", SPEC, "--in-place"]) == 2
    assert "--in-place edits files" in capsys.readouterr().err
    assert main(["batch", str(items), "--spec-text", SPEC, "--systemic-min", "1"]) == 2
    assert main(["batch", str(items), "--spec-text", SPEC, "--field", "nope"]) == 2
    assert "no string field 'nope'" in capsys.readouterr().err


def test_cli_backend_failure_is_exit_3_with_the_resume_hint(
    stub_server, project, monkeypatch, capsys
):
    server = stub_server({REVIEWER: [Error(401, message="bad key")] * 4, FIXER: []})
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    items = jsonl(project / "items.jsonl", texts(3, set()))
    assert main(["batch", str(items), "--spec-text", SPEC, "--quiet"]) == 3
    assert "--resume" in capsys.readouterr().err


# ---------------------------------------------------------------- anthropic-batch


def _batch_creates(server: Any) -> list[Any]:
    return [r for r in server.requests if r.method == "POST" and r.path == "/v1/messages/batches"]


def test_anthropic_batch_sends_each_round_as_one_message_batch(stub_server, project):
    server = stub_server(SCRIPT)
    values = items_of(texts(5, set()))
    result = verify_batch_sync(
        values,
        SPEC,
        options=BatchOptions(
            backend="anthropic-batch",
            backend_options={
                "base_url": server.base_url,
                "api_key": "test",
                "poll_interval": 0.01,
                "gather_window": 0.2,
            },
            seed=1,
        ),
    )
    assert result.verdict == "ACCEPTED"
    creates = _batch_creates(server)
    assert len(creates) == 1 and len(creates[0].body["requests"]) == 10
    direct = [r for r in server.requests_for(REVIEWER) if r.batch_id is None]
    assert direct == []
    # Half of list price: 10 reviews of 100 in / 20 out at sonnet's 2 / 10 per million.
    assert result.cost_usd == pytest.approx(10 * (100 * 2 + 20 * 10) / 1e6 / 2)


def test_anthropic_batch_resumes_the_same_message_batch_after_an_interruption(stub_server, project):
    import asyncio

    from santa_method.headless.batch import verify_batch

    server = stub_server(SCRIPT, batch_polls=2)
    values = items_of(texts(4, set()))
    options = {"base_url": server.base_url, "api_key": "test", "gather_window": 0.2}

    async def interrupted() -> str:
        task = asyncio.create_task(
            verify_batch(
                values,
                SPEC,
                options=BatchOptions(
                    backend="anthropic-batch",
                    seed=9,
                    backend_options={**options, "poll_interval": 60},
                ),
            )
        )
        for _ in range(500):
            await asyncio.sleep(0.02)
            if _batch_creates(server):
                break
        await asyncio.sleep(0.2)  # the state file is written before polling
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        (batch_id,) = batches.list_ids()
        return batch_id

    batch_id = asyncio.run(interrupted())
    state = batches.load(batch_id)
    assert state.status == "open"
    running = dict(state.waves[0].running)
    assert len(running) == 4  # every item's run is open, mid-round
    kept = json.loads((batches.batch_dir(batch_id) / "message-batches.json").read_text())
    (message_batch,) = kept["batches"]

    result = verify_batch_sync(
        values,
        SPEC,
        options=BatchOptions(
            backend="anthropic-batch",
            seed=9,
            resume=True,
            backend_options={**options, "poll_interval": 0.01},
        ),
    )
    assert result.batch_id == batch_id and result.verdict == "ACCEPTED"
    assert len(_batch_creates(server)) == 1  # never paid twice
    polled = {r.path for r in server.requests if r.method == "GET" and "batches/" in r.path}
    assert f"/v1/messages/batches/{message_batch}" in polled
    # The runs that were open are the ones that finished.
    assert {o.run_id for o in result.outcomes} == set(running.values())


def test_an_empty_item_is_refused_before_any_batch(stub_server, project):
    server = stub_server(SCRIPT)
    values = items_of(["  \n", *texts(3, set())[1:]])
    with pytest.raises(InputError, match="'item-0000' is empty"):
        run_batch(server, values)
    assert batches.list_ids() == [] and server.requests == []
    result = run_batch(server, values, exclude=["item-0000"])
    assert result.verdict == "ACCEPTED" and result.to_json()["population"] == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reviewers": 1}, "reviewers must be a whole number from 2"),
        ({"max_fixes": -1}, "max_fixes"),
        ({"budget_usd": 1.0, "models": ["no-such-model"]}, "no list price"),
        ({"systemic_share": 0}, "systemic_share"),
        ({"max_resamples": -1}, "max_resamples"),
    ],
)
def test_bad_arguments_fail_before_any_batch_exists(stub_server, project, options, message):
    server = stub_server(SCRIPT)
    with pytest.raises(InputError, match=message):
        run_batch(server, items_of(texts(3, set())), **options)
    assert batches.list_ids() == [] and server.requests == []


def test_an_interruption_before_the_verdict_keeps_the_decision(stub_server, project, monkeypatch):
    server = stub_server(SCRIPT)
    values = items_of(texts(20, set(range(20))))
    finish = batches.Book.finish
    calls = {"n": 0}

    def interrupted_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return finish(self, *args, **kwargs)

    monkeypatch.setattr(batches.Book, "finish", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        run_batch(server, values, max_resamples=0)
    result = run_batch(server, values, max_resamples=0, resume=True)
    data = result.to_json()
    assert result.verdict == "ESCALATED" and len(data["waves"]) == 1  # no extra sample
    assert any("no re-sample is left" in r for r in data["reasons"])


def test_screen_flags_the_fixer_leaves_unchanged_block_acceptance(stub_server, project):
    from e2e.stub_server import Json, first_user_text

    from .batch_helpers import fix, review

    def stubborn(body: dict[str, Any]) -> Json:
        if "Run batch " in first_user_text(body):  # a screen's fixer declines to change anything
            return Json({"output": "", "report": ["1. not an issue"]})
        return fix(body)

    server = stub_server({REVIEWER: review, FIXER: stubborn})
    result = run_batch(server, items_of(texts(40, set(range(0, 40, 2)))), rate=0.2)
    data = result.to_json()
    first = data["waves"][0]["screens"]["completeness"]
    assert first["flagged"] > 0 and first["fixed"] == 0
    assert result.verdict == "ESCALATED"  # core/batch_rules.decide: unfixed flags never accept


def test_estimates_as_generated_and_after_fixes(stub_server, project):
    server = stub_server(SCRIPT)
    result = run_batch(server, items_of(texts(40, set(range(0, 40, 2)))), rate=0.2)
    data = result.to_json()
    first = data["waves"][0]
    assert data["estimate"]["defects"] == first["failed"]
    assert data["estimate"]["sampled"] == first["n"] and data["estimate"]["population"] == 40
    assert data["estimate_after_fixes"]["defects"] == 0
    assert data["estimate_statement"].startswith("as generated: ")


def test_one_process_drives_a_batch_at_a_time(stub_server, project):
    server = stub_server(SCRIPT)
    result = run_batch(server, items_of(texts(2, set())))
    with (
        batches.held(result.batch_id),
        pytest.raises(InputError, match="another process"),
        batches.held(result.batch_id),
    ):
        pass


def test_cli_progress_lines_on_a_non_terminal(stub_server, project, monkeypatch, capsys):
    server = stub_server(SCRIPT)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    items = jsonl(project / "items.jsonl", texts(40, set(range(0, 40, 2))))
    assert main(["batch", str(items), "--spec-text", SPEC, "--seed", "7", "--rate", "0.2"]) == 0
    err = capsys.readouterr().err
    assert "sample 1: 8 of 40 items" in err
    assert "item-0000: fixed (completeness), 2 round(s)" in err or "passed" in err
    assert "screening " in err and "for completeness" in err
    assert "decision after sample 1: resample" in err


def test_anthropic_batch_resume_mid_round_two_keeps_first_round_failures(stub_server, project):
    """A run interrupted while its round 2 waits in a Message Batch still
    counts the failure of its round 1 (read from the run, not the process)."""
    import asyncio

    from santa_method.headless.batch import verify_batch

    # Every batch stays in progress until the test lets it end, so the run is
    # cut while round 2 waits however slow the machine is.
    server = stub_server(SCRIPT, batch_polls=10**9)
    values = items_of(texts(10, set(range(10))))
    options = {"base_url": server.base_url, "api_key": "test", "gather_window": 0.2}
    common = {"backend": "anthropic-batch", "seed": 3, "max_resamples": 0}

    def end_batches() -> None:
        with server._lock:
            for batch in server._batches.values():
                batch.polls_left = 0

    async def interrupted() -> None:
        task = asyncio.create_task(
            verify_batch(
                values,
                SPEC,
                options=BatchOptions(backend_options={**options, "poll_interval": 0.05}, **common),
            )
        )
        for _ in range(3000):
            await asyncio.sleep(0.02)
            if len(_batch_creates(server)) == 1:
                end_batches()  # round 1 ends; round 2's batch will wait
            if len(_batch_creates(server)) >= 2:
                break
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    assert len(_batch_creates(server)) == 2
    end_batches()
    server.batch_polls = 2  # the resumed run's own batches end as usual
    result = verify_batch_sync(
        values,
        SPEC,
        options=BatchOptions(
            resume=True, backend_options={**options, "poll_interval": 0.01}, **common
        ),
    )
    data = result.to_json()
    assert result.verdict == "ESCALATED"
    assert set(data["failures_by_criterion"]) == {"completeness"}
    assert all(o.status == "fixed" and o.criteria == ("completeness",) for o in result.outcomes)
    # Round 1, its fixes and round 2 are all in the cost: 5 items x (4 reviews + 1 fix).
    assert data["cost_usd"] > 5 * 4 * 0.0004 / 2


def test_unreadable_items_and_impossible_plans_fail_before_any_batch(
    stub_server, project, monkeypatch, capsys
):
    server = stub_server(SCRIPT)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    folder = project / "outs"
    folder.mkdir()
    for i, text in enumerate(texts(3, set())):
        (folder / f"s{i}.md").write_text(text, encoding="utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    assert main(["batch", str(folder), "--spec-text", SPEC, "--quiet"]) == 2
    assert "not UTF-8 text; leave it out with --exclude" in capsys.readouterr().err
    everything = project / "all.txt"
    everything.write_text("\n".join(str(p) for p in sorted(folder.iterdir())), encoding="utf-8")
    assert main(["batch", str(folder), "--spec-text", SPEC, "--exclude", str(everything)]) == 2
    assert batches.list_ids() == [] and server.requests == []
    # Leaving the binary out works, and the seed is printed.
    skip = project / "skip.txt"
    skip.write_text(str(folder / "logo.png"), encoding="utf-8")
    args = ["batch", str(folder), "--spec-text", SPEC, "--exclude", str(skip), "--seed", "42"]
    assert main([*args, "--quiet"]) == 0
    assert "seed: 42" in capsys.readouterr().out


def test_an_earlier_batch_json_excludes_its_items(stub_server, project, monkeypatch, capsys):
    server = stub_server(SCRIPT)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    items = jsonl(project / "items.jsonl", texts(40, set()))
    assert main(["batch", str(items), "--spec-text", SPEC, "--json", "--quiet"]) == 0
    earlier = project / "earlier.json"
    earlier.write_text(capsys.readouterr().out, encoding="utf-8")
    done = {o["item"] for o in json.loads(earlier.read_text())["items"]}
    args = ["batch", str(items), "--spec-text", SPEC, "--exclude", str(earlier), "--json"]
    assert main([*args, "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["population"] == 40 - len(done)
    assert not done & {o["item"] for o in again["items"]}


def test_progress_bar_on_a_terminal_counts_items_and_screens(monkeypatch):
    from rich.console import Console

    from santa_method.cli.batch_cmd import _Progress

    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    progress = _Progress(quiet=False)
    assert progress.bar is not None
    bar = progress.bar
    progress("batch_start", {"batch_id": "b", "population": 10, "backend": "x", "resumed": False})
    progress("wave_start", {"number": 1, "statement": "3 of 10", "n": 3, "done": 1})
    for name in ("a", "b"):
        progress("item_done", {"item": name, "status": "passed", "criteria": [], "rounds": 1})
    progress("screen_start", {"criterion": "completeness", "items": 7, "done": 0})
    progress("screened", {"item": "c", "criterion": "completeness", "result": "clean"})
    sample, screen = bar.tasks
    assert (sample.completed, sample.total) == (3, 3)
    assert (screen.completed, screen.total) == (1, 7)
    progress("batch_done", {"verdict": "ACCEPTED", "report": "r"})
    assert progress.bar is None


class _NoCost(AnthropicBackend):
    """A backend that cannot tell what a call cost (like some custom ones)."""

    name = "no-cost"

    def _cost(self, model: Any, tokens: Any) -> None:
        return None


@pytest.mark.timeout(120)
def test_a_budget_with_unknown_costs_stops_instead_of_hanging(stub_server, project):
    server = stub_server(SCRIPT)
    result = verify_batch_sync(
        items_of(texts(12, set())),
        SPEC,
        options=BatchOptions(
            backend=_NoCost(base_url=server.base_url, api_key="test"), budget_usd=1.0, seed=1
        ),
    )
    assert result.verdict == "ESCALATED"
    assert any("unknown" in r for r in result.to_json()["reasons"])


@pytest.mark.timeout(120)
def test_a_budget_that_runs_out_while_screening_stops_instead_of_hanging(stub_server, project):
    server = stub_server(SCRIPT)
    # 8 sampled items with a defect in half, then screens of the 32 others
    # (and fixes of the flagged ones) that the budget cannot all pay for.
    result = run_batch(
        server, items_of(texts(40, set(range(0, 40, 2)))), rate=0.2, budget_usd=0.025
    )
    data = result.to_json()
    assert result.verdict == "ESCALATED"
    assert any("cannot pay for more screens" in r for r in data["reasons"])
    screens = data["waves"][0]["screens"]["completeness"]
    assert 0 < screens["clean"] + screens["flagged"] < 32
    assert data["cost_usd"] <= 0.025


def test_a_lone_surrogate_in_a_jsonl_item_is_refused_up_front(project, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    items = project / "items.jsonl"
    items.write_text('{"id": "a", "output": "bad \\ud800 text"}\n', encoding="utf-8")
    assert main(["batch", str(items), "--spec-text", SPEC, "--quiet"]) == 2
    assert "lone surrogate" in capsys.readouterr().err
    assert batches.list_ids() == []


def test_a_stratified_sample_states_no_interval(stub_server, project):
    server = stub_server(SCRIPT)
    kinds = ["rare"] * 3 + ["common"] * 57
    result = run_batch(
        server, items_of(texts(60, set()), kind=kinds), stratified=True, rate=0.1, minimum=2
    )
    data = result.to_json()
    assert data["estimate"]["interval"] is None
    assert "no interval is given" in data["estimate_statement"]


def test_a_fixer_that_can_never_answer_escalates_its_item_not_the_batch(stub_server, project):
    from e2e.stub_server import Reply

    from .batch_helpers import review

    cut = lambda body: Reply('{"output": "Summ', stop_reason="max_tokens")  # noqa: E731
    server = stub_server({REVIEWER: review, FIXER: cut})
    values = items_of(texts(3, {1}))
    result = run_batch(server, values)  # no BackendError: the item escalates, the batch ends
    kinds = {o.item: o.status for o in result.outcomes}
    assert kinds == {"item-0000": "passed", "item-0001": "escalated", "item-0002": "passed"}
    assert result.verdict == "ESCALATED"
    assert any("cut off at max_tokens" in w for w in result.to_json()["warnings"])
    assert len(server.requests_for(FIXER)) == 1  # and it is not paid for again


def test_a_permanent_fixer_error_on_resume_escalates_instead_of_stranding(stub_server, project):
    """The fix a resumed run still owes fails for good: the run is escalated,
    the batch records it and ends, and the fixer is not paid again."""
    from e2e.stub_server import Reply

    from .batch_helpers import review

    values = items_of(texts(3, {1}))
    flaky = stub_server({REVIEWER: review, FIXER: [Error(500)] * 3})
    with pytest.raises(BackendError):
        run_batch(flaky, values, concurrency=1)
    cut = lambda body: Reply('{"output": "Summ', stop_reason="max_tokens")  # noqa: E731
    server = stub_server({REVIEWER: review, FIXER: cut})
    result = run_batch(server, values, concurrency=1, resume=True)
    assert result.verdict == "ESCALATED"
    assert {o.item: o.status for o in result.outcomes}["item-0001"] == "escalated"
    assert len(server.requests_for(FIXER)) == 1


def test_a_fixer_answering_prose_is_asked_once_more_then_its_item_escalates(stub_server, project):
    from e2e.stub_server import Text

    from .batch_helpers import fix, review

    # First item: prose, then JSON (fixed). Second: prose twice (escalated, no resume needed).
    replies = [Text("I fixed it."), fix, Text("Done, trust me."), Text("Still prose.")]
    server = stub_server({REVIEWER: review, FIXER: replies})
    result = run_batch(server, items_of(texts(3, {0, 2})), concurrency=1)
    kinds = {o.item: o.status for o in result.outcomes}
    assert kinds == {"item-0000": "fixed", "item-0001": "passed", "item-0002": "escalated"}
    assert len(server.requests_for(FIXER)) == 4
    assert result.verdict == "ESCALATED"


def test_an_in_place_batch_does_not_write_over_a_file_changed_since_it_read_it(project):
    from .scripted import Scripted

    path = project / "README.md"
    path.write_text("# Tool\n\nReleased in 1999.\n\n## License\nMIT\n", encoding="utf-8")
    shipped = "# Tool\n\nReleased in 2030.\n\n## License\nMIT\n"

    class Meanwhile(Scripted):
        async def fix(self, request):  # type: ignore[no-untyped-def]
            # Another run fixes the file and ships while the batch's fixer works.
            path.write_text(shipped, encoding="utf-8")
            return await super().fix(request)

    with pytest.raises(InputError, match="was changed since the batch read it"):
        verify_batch_sync(
            [path], SPEC, options=BatchOptions(backend=Meanwhile(), in_place=True, rate=1.0)
        )
    assert path.read_text(encoding="utf-8") == shipped
