"""`santa batch plan/record/status`: the batch's books when subagents review.

Each item's run is a real run (verify() with the anthropic backend against
the scripted model, on the item's own file, as `santa round start` would
open it); only the bookkeeping commands are under test here, through the
CLI a Claude Code session calls.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from santa_method.cli import main
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.state import batches
from santa_method.state.store import load_state

from .batch_helpers import MARK, SCRIPT, jsonl, texts

SPEC = "Each summary has all its parts."


def santa(capsys: Any, *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {"err": captured.err}


def run_item(server: Any, item: dict[str, Any]) -> str:
    """Verify an item the way its printed command says (its file, spec, rubric)."""
    words = shlex.split(item["command"])
    spec = Path(words[words.index("--spec") + 1]).read_text(encoding="utf-8")
    rubric = words[words.index("--rubric") + 1]
    result = verify_sync(
        spec,
        Path(item["against"]),
        options=VerifyOptions(
            rubric=rubric,
            in_place=True,
            backend=AnthropicBackend(base_url=server.base_url, api_key="test", max_retries=0),
        ),
    )
    return result.run_id


def drive(server: Any, capsys: Any, view: dict[str, Any], limit: int = 200) -> dict[str, Any]:
    """Do what `next` says until the batch is done, recording every run."""
    for _ in range(limit):
        step = view["next"]
        if step["step"] == "done":
            return view
        item = step["items"][0]
        run_id = run_item(server, item)
        code, view = santa(
            capsys, "batch", "record", view["batch_id"], "--item", item["id"], "--run", run_id
        )
        assert code in (0, 1), view
    raise AssertionError("the batch never finished")


def test_plan_then_record_each_item_until_accepted(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    files = []
    for i, text in enumerate(texts(3, set())):
        path = project / f"out-{i}.md"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    code, view = santa(capsys, "batch", "plan", *files, "--spec-text", SPEC, "--seed", "2")
    assert code == 0
    step = view["next"]
    assert step["step"] == "verify" and len(step["items"]) == 3
    assert all(i["command"].startswith("santa round start --against ") for i in step["items"])
    done = drive(server, capsys, view)
    assert done["next"]["step"] == "done" and done["next"]["verdict"] == "ACCEPTED"
    code, status = santa(capsys, "batch", "status", done["batch_id"])
    assert code == 0 and status["next"]["verdict"] == "ACCEPTED"
    report = Path(done["next"]["report"]).read_text()
    assert "ACCEPTED" in report and "every one of the 3 items was verified" in report


@pytest.mark.slow
def test_a_systemic_pattern_is_screened_with_a_narrow_rubric(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    items = jsonl(project / "items.jsonl", texts(16, set(range(0, 16, 2))))
    code, view = santa(
        capsys, "batch", "plan", str(items), "--spec-text", SPEC, "--seed", "4", "--rate", "0.3"
    )
    assert code == 0
    done = drive(server, capsys, view)
    state = batches.load(done["batch_id"])
    first = state.waves[0]
    assert first.screening == ["completeness"]
    screens = first.screens["completeness"]
    assert screens and all(s.result in ("clean", "flagged") for s in screens.values())
    assert {i for i, s in screens.items() if s.fixed} == {
        i for i in screens if int(i.rsplit("-", 1)[1]) % 2 == 0
    }
    assert state.screen_rubrics is not None
    rubric = Path(state.screen_rubrics["completeness"].path).read_text()
    assert "id: completeness" in rubric and "factual-accuracy" not in rubric
    assert done["next"]["verdict"] == "ACCEPTED"
    fixed = Path(done["next"]["report"]).parent
    lines = (fixed / "fixed.jsonl").read_text().splitlines()
    assert len(lines) == 16 and not any(MARK.search(json.loads(x)["output"]) for x in lines)
    assert MARK.search(items.read_text())  # the user's JSONL is untouched


def test_record_refuses_runs_that_are_not_the_items(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    paths = []
    for i, text in enumerate(texts(2, set())):
        path = project / f"out-{i}.md"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    code, view = santa(capsys, "batch", "plan", *paths, "--spec-text", SPEC)
    batch_id = view["batch_id"]
    first, second = view["next"]["items"]
    run_a = run_item(server, first)
    # Another item's run.
    code, answer = santa(
        capsys, "batch", "record", batch_id, "--item", second["id"], "--run", run_a
    )
    assert code == 1 and "did not verify item" in answer["err"]
    # A run with another spec.
    other = verify_sync(
        "Another spec.",
        Path(second["against"]),
        options=VerifyOptions(
            in_place=True, backend=AnthropicBackend(base_url=server.base_url, api_key="test")
        ),
    )
    code, answer = santa(
        capsys, "batch", "record", batch_id, "--item", second["id"], "--run", other.run_id
    )
    assert code == 1 and "another spec" in answer["err"]
    # The right run, then the same run again.
    code, _ = santa(capsys, "batch", "record", batch_id, "--item", first["id"], "--run", run_a)
    assert code == 0
    code, answer = santa(capsys, "batch", "record", batch_id, "--item", first["id"], "--run", run_a)
    assert code == 1 and "already recorded" in answer["err"]
    code, answer = santa(capsys, "batch", "record", batch_id, "--item", "nope", "--run", run_a)
    assert code == 2 and "no item 'nope'" in answer["err"]


def test_round_start_takes_the_screen_rubric_only_while_screening(
    stub_server, project, capsys, monkeypatch
):
    server = stub_server(SCRIPT)
    items = jsonl(project / "items.jsonl", texts(12, set(range(12))))
    code, view = santa(
        capsys, "batch", "plan", str(items), "--spec-text", SPEC, "--seed", "1", "--rate", "0.4"
    )
    for item in view["next"]["items"]:
        run_id = run_item(server, item)
        code, view = santa(
            capsys, "batch", "record", view["batch_id"], "--item", item["id"], "--run", run_id
        )
        assert code == 0
    step = view["next"]
    assert step["step"] == "screen"
    target = step["items"][0]
    words = shlex.split(target["command"])
    monkeypatch.setenv("CLAUDECODE", "1")
    assert main(words[1:]) == 0  # inside Claude Code, the narrow rubric is accepted now
    opened = json.loads(capsys.readouterr().out)
    assert opened["run_id"]
    # A copy of the same rubric elsewhere is a loosening, refused.
    rubric = Path(words[words.index("--rubric") + 1])
    copy = project / "narrow.yaml"
    copy.write_text(rubric.read_text())
    words[words.index("--rubric") + 1] = str(copy)
    assert main(words[1:]) == 1
    assert "loosen" in capsys.readouterr().err


def test_guard_keeps_the_model_out_of_batch_state(project):
    from santa_method.claude_code import hooks

    event = {
        "tool_name": "Write",
        "tool_input": {"file_path": str(project / ".santa" / "batches" / "b-1" / "state.json")},
        "cwd": str(project),
    }
    decision = hooks.pretooluse_guard(event)
    assert decision is not None and "batch state" in json.dumps(decision)
    bash = {
        "tool_name": "Bash",
        "tool_input": {"command": "sed -i s/escalated/accepted/ .santa/batches/x/report.json"},
        "cwd": str(project),
    }
    assert "batch state" in json.dumps(hooks.pretooluse_guard(bash))
    for sneaky in (
        "cd .santa/batches/b-1; f=state; cat /tmp/s > $f.json",
        'python3 -c \'import shutil; shutil.copy("/tmp/x", ".santa/batches/b/report.json")\'',
        "santa batch status b-1 && cp /tmp/x .santa/batches/b-1/report.json",
    ):
        assert "batch state" in (hooks.shell_problem(sneaky) or ""), sneaky
    # The helper's own printed commands name batch files and stay allowed.
    assert (
        hooks.shell_problem(
            "santa round start --against /p/out.md --spec /p/.santa/batches/b-1/spec.md "
            "--rubric /p/.santa/batches/b-1/screen-completeness.yaml --json"
        )
        is None
    )


@pytest.mark.parametrize(
    "args", [["status"], ["record", "b-20260101-000000-abcdef", "--item", "x", "--run", "y"]]
)
def test_status_and_record_without_a_batch_are_input_errors(project, capsys, args):
    assert main(["batch", *args]) == 2
    assert capsys.readouterr().err.startswith("santa: ")


def _one_item_plan(project: Path, capsys: Any, text: str) -> tuple[str, dict[str, Any], Path]:
    path = project / "out.md"
    path.write_text(text, encoding="utf-8")
    code, view = santa(capsys, "batch", "plan", str(path), "--spec-text", SPEC)
    assert code == 0
    (item,) = view["next"]["items"]
    return view["batch_id"], item, path


def test_record_refuses_a_run_of_content_the_batch_did_not_plan(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    planted = texts(1, {0})[0]
    batch_id, item, path = _one_item_plan(project, capsys, planted)
    # Reviewed clean text in place of the item, then put the item back.
    path.write_text(texts(1, set())[0], encoding="utf-8")
    swapped = run_item(server, item)
    path.write_text(planted, encoding="utf-8")
    code, answer = santa(
        capsys, "batch", "record", batch_id, "--item", item["id"], "--run", swapped
    )
    assert code == 1 and "as the batch knows it" in answer["err"]
    # The honest run (it fails round 1, fixes the file in place, ships) ...
    first = run_item(server, item)
    # ... and a second run of the already fixed file, which would hide that failure.
    second = run_item(server, item)
    code, answer = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", second)
    assert code == 1 and "as the batch knows it" in answer["err"]
    code, view = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", first)
    assert code == 0
    assert view["recorded"]["status"] == "fixed" and view["recorded"]["criteria"] == [
        "completeness"
    ]


def test_inside_claude_code_record_counts_only_hook_reviews(
    stub_server, project, capsys, monkeypatch
):
    server = stub_server(SCRIPT)
    batch_id, item, _ = _one_item_plan(project, capsys, texts(1, set())[0])
    run_id = run_item(server, item)  # reviews from a backend, not from subagents
    monkeypatch.setenv("CLAUDECODE", "1")
    code, answer = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", run_id)
    assert code == 1 and "through the hook" in answer["err"]


def test_the_screen_rubric_opens_runs_only_for_waiting_items(
    stub_server, project, capsys, monkeypatch
):
    server = stub_server(SCRIPT)
    view = _to_screening(server, project, capsys)
    words = shlex.split(view["next"]["items"][0]["command"])
    monkeypatch.setenv("CLAUDECODE", "1")
    unrelated = project / "unrelated.md"
    unrelated.write_text("Anything at all.\n", encoding="utf-8")
    other = list(words)
    other[other.index("--against") + 1] = str(unrelated)
    assert main(other[1:]) == 1
    assert "loosen" in capsys.readouterr().err
    other = list(words)
    spec_at = other.index("--spec")
    other[spec_at : spec_at + 2] = ["--spec-text", "Another spec."]
    assert main(other[1:]) == 1
    assert "loosen" in capsys.readouterr().err


def test_the_first_run_of_an_item_counts_not_a_later_retry(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    batch_id, item, _ = _one_item_plan(project, capsys, texts(1, set())[0])
    first = run_item(server, item)
    retry = run_item(server, item)  # same content: a rerun hoping for another verdict
    code, answer = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", retry)
    assert code == 1 and f"run {first} of item" in answer["err"]
    code, view = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", first)
    assert code == 0 and view["next"]["verdict"] == "ACCEPTED"


def test_a_hand_edited_verdict_does_not_hold_up(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    batch_id, item, _ = _one_item_plan(project, capsys, texts(1, {0})[0])
    state_file = batches.batch_dir(batch_id) / "state.json"
    forged = json.loads(state_file.read_text())
    forged.update(status="accepted", verdict="ACCEPTED")
    state_file.write_text(json.dumps(forged))
    code, view = santa(capsys, "batch", "status", batch_id)
    assert code == 1 and view["next"]["verdict"] == "ESCALATED"
    assert "never verified" in " ".join(view["next"]["problems"])
    # A recorded outcome its run contradicts does not hold up either.
    forged.update(status="open", verdict=None)
    state_file.write_text(json.dumps(forged))
    run_id = run_item(server, item)  # the item fails round 1, is fixed, ships
    code, view = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", run_id)
    assert code == 0 and view["next"]["verdict"] == "ACCEPTED"
    forged = json.loads(state_file.read_text())
    forged["waves"][0]["outcomes"][item["id"]]["criteria"] = []
    state_file.write_text(json.dumps(forged))
    code, view = santa(capsys, "batch", "status", batch_id)
    assert code == 1 and "says otherwise" in " ".join(view["next"]["problems"])


def test_a_stray_run_with_another_spec_does_not_block_the_item(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    batch_id, item, path = _one_item_plan(project, capsys, texts(1, set())[0])
    verify_sync(
        "Another spec.",
        path,
        options=VerifyOptions(
            in_place=True, backend=AnthropicBackend(base_url=server.base_url, api_key="test")
        ),
    )
    run_id = run_item(server, item)
    code, view = santa(capsys, "batch", "record", batch_id, "--item", item["id"], "--run", run_id)
    assert code == 0 and view["next"]["verdict"] == "ACCEPTED"


@pytest.mark.slow
def test_two_systemic_criteria_are_screened_one_after_the_other(stub_server, project, capsys):
    server = stub_server(SCRIPT)
    both = [
        f"Summary {i}.\n"
        + ("BAD-completeness gap.\nBAD-compliance breach.\n" if i % 2 == 0 else "Fine.\n")
        for i in range(14)
    ]
    items = jsonl(project / "items.jsonl", both)
    code, view = santa(
        capsys, "batch", "plan", str(items), "--spec-text", SPEC, "--seed", "3", "--rate", "0.4"
    )
    assert code == 0
    done = drive(server, capsys, view)
    state = batches.load(done["batch_id"])
    assert state.waves[0].screening == ["completeness", "compliance"]
    assert set(state.waves[0].screens) == {"completeness", "compliance"}
    assert done["next"]["step"] == "done"


def test_an_interruption_before_the_verdict_is_recovered_by_status(
    stub_server, project, capsys, monkeypatch
):
    server = stub_server(SCRIPT)
    batch_id, item, _ = _one_item_plan(project, capsys, texts(1, set())[0])
    run_id = run_item(server, item)
    finish = batches.Book.finish
    monkeypatch.setattr(
        batches.Book, "finish", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    assert main(["batch", "record", batch_id, "--item", item["id"], "--run", run_id]) == 130
    assert batches.load(batch_id).status == "open"  # decided, verdict never written
    capsys.readouterr()
    monkeypatch.setattr(batches.Book, "finish", finish)
    code, view = santa(capsys, "batch", "status", batch_id)
    assert code == 0 and view["next"]["verdict"] == "ACCEPTED"


def _to_screening(server: Any, project: Path, capsys: Any) -> dict[str, Any]:
    items = jsonl(project / "items.jsonl", texts(12, set(range(12))))
    code, view = santa(
        capsys, "batch", "plan", str(items), "--spec-text", SPEC, "--seed", "1", "--rate", "0.4"
    )
    assert code == 0
    for item in view["next"]["items"]:
        code, view = santa(
            capsys,
            "batch",
            "record",
            view["batch_id"],
            "--item",
            item["id"],
            "--run",
            run_item(server, item),
        )
        assert code == 0
    assert view["next"]["step"] == "screen"
    return view


def test_a_screen_counts_the_first_run_since_its_own_screening_began(stub_server, project, capsys):
    from santa_method.claude_code import batch as cc

    server = stub_server(SCRIPT)
    view = _to_screening(server, project, capsys)
    item = view["next"]["items"][0]
    state = batches.load(view["batch_id"])
    assert state.screen_rubrics is not None and state.waves[0].screening_since is not None
    rubric = state.screen_rubrics["completeness"].hash
    since = state.waves[0].screening_since

    def unfixed_run() -> str:  # reviews the item and leaves it as it is
        words = shlex.split(item["command"])
        return verify_sync(
            SPEC,
            Path(item["against"]),
            options=VerifyOptions(
                rubric=words[words.index("--rubric") + 1],
                in_place=True,
                max_fixes=0,
                backend=AnthropicBackend(base_url=server.base_url, api_key="test"),
            ),
        ).run_id

    earlier, later = unfixed_run(), unfixed_run()
    assert cc._first_run(state, item["id"], rubric, since) == earlier
    # A later screening of the same criterion (a later wave) starts afresh.
    assert cc._first_run(state, item["id"], rubric, load_state(later).created) == later


@pytest.mark.slow
def test_an_interruption_between_a_resample_and_its_draw_is_recovered(
    stub_server, project, capsys, monkeypatch
):
    server = stub_server(SCRIPT)
    view = _to_screening(server, project, capsys)
    draw = batches.Book.draw
    monkeypatch.setattr(
        batches.Book, "draw", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    batch_id = view["batch_id"]
    while view["next"]["step"] == "screen":
        item = view["next"]["items"][0]
        run_id = run_item(server, item)
        code = main(["batch", "record", batch_id, "--item", item["id"], "--run", run_id, "--json"])
        out = capsys.readouterr().out
        if code == 130:
            break
        view = json.loads(out)
    state = batches.load(batch_id)
    decision = state.waves[-1].decision
    assert decision is not None and decision.step == "resample" and len(state.waves) == 1
    monkeypatch.setattr(batches.Book, "draw", draw)
    code, view = santa(capsys, "batch", "status", batch_id)
    assert code == 0 and view["next"]["step"] == "verify" and len(view["waves"]) == 2
