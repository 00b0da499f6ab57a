"""A headless run is found by the file the user named, not by its working copy.

`santa run --against docs/x.md` reviews and fixes a copy under
`.santa/work/`; the run must still be recorded as a run of `docs/x.md`, so
`santa runs --target docs/x.md` (and an escape filed weeks later) finds it.
Run folders and logs written before `original` existed keep reading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER, Json
from santa_method.cli import main
from santa_method.state.model.run import Target
from santa_method.state.report import build, to_markdown
from santa_method.state.rounds import describe
from santa_method.state.store import load_state, run_dir
from santa_method.state.target import target_name

from .conftest import failing, pass_reply

SPEC = "A README with the release year and a License section."


@pytest.fixture
def doc(project: Path) -> Path:
    (project / "docs").mkdir()
    path = project / "docs" / "x.md"
    path.write_text("# Tool\n\nReleased in 1999.\n\n## License\nMIT\n", encoding="utf-8")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(list(args))
    out = capsys.readouterr().out
    return code, json.loads(out) if "--json" in args else out


def serve(stub_server: Any, monkeypatch: pytest.MonkeyPatch, script: Any) -> None:
    server = stub_server({REVIEWER: script})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


def reported_run(stub_server: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Any:
    """`santa run --against docs/x.md` that ends with a report (a wrong year, a check only)."""
    serve(stub_server, monkeypatch, lambda body: Json(failing(body, "Released in 1999.")))
    code, result = cli(
        capsys, "run", "--against", "docs/x.md", "--spec-text", SPEC, "--max-fixes", "0", "--json"
    )
    assert code == 1 and (result["verdict"], result["outcome"]) == ("NAUGHTY", "reported")
    return result


def test_runs_target_finds_the_run_of_the_named_file(
    stub_server: Any, project: Path, doc: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    serve(stub_server, monkeypatch, [pass_reply(), pass_reply()])
    code, result = cli(capsys, "run", "--against", "docs/x.md", "--spec-text", SPEC, "--json")
    assert code == 0 and result["verdict"] == "NICE"
    working = Path(result["output_path"])
    assert working != doc and (project / ".santa" / "work") in working.parents

    code, rows = cli(capsys, "runs", "--target", "docs/x.md", "--json")
    assert code == 0
    assert [r["run_id"] for r in rows] == [result["run_id"]]
    assert rows[0]["target"] == str(doc) and rows[0]["outcome"] == "shipped"
    # Named any other way, it is the same file.
    assert cli(capsys, "runs", "--target", str(doc), "--json")[1] == rows
    assert cli(capsys, "runs", "--target", "docs/other.md", "--json")[1] == []

    events = cli(capsys, "runs", "show", result["run_id"], "--json")[1]
    (start,) = [e for e in events if e["event"] == "run"]
    assert start["target"] == str(doc) and start["working_copy"] == str(working)
    state = load_state(result["run_id"])
    assert state.target == Target(kind="file", path=str(working), original=str(doc))
    assert describe(result["run_id"])["target"] == str(doc)


def test_ci_reports_and_the_viewer_show_the_named_file(
    stub_server: Any, project: Path, doc: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    # `santa report` (which the GitHub Action runs) and `santa view` read the
    # same record: the user's file, never the working copy.
    from santa_method.view.model import page_data
    from santa_method.view.sources import collect

    result = reported_run(stub_server, monkeypatch, capsys)
    code, out = cli(capsys, "report", result["run_id"], "--format", "json")
    assert code == 0 and json.loads(out)["target"] == str(doc)
    code, out = cli(capsys, "report", result["run_id"], "--format", "sarif")
    assert code == 0
    (sarif_run,) = json.loads(out)["runs"]
    places = {
        place["physicalLocation"]["artifactLocation"]["uri"]
        for found in sarif_run["results"]
        for place in found["locations"]
    }
    assert places == {"docs/x.md"}
    home = project / ".santa"
    data = page_data(collect(home / "log.jsonl", home, None), generated="x", since=None)
    (row,) = [r for r in data["runs"] if r["id"] == result["run_id"]]
    assert row["target"] == str(doc)


def test_the_report_names_the_file_and_its_copy(
    stub_server: Any, project: Path, doc: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    result = reported_run(stub_server, monkeypatch, capsys)
    report = build(result["run_id"])
    assert report["target"] == str(doc)
    assert report["working_copy"] == result["output_path"]
    text = to_markdown(report)
    assert f"- target: `{doc}`" in text and "- working copy: `" in text


def test_in_place_runs_have_no_copy(
    stub_server: Any, project: Path, doc: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    serve(stub_server, monkeypatch, [pass_reply(), pass_reply()])
    code, result = cli(
        capsys, "run", "--against", "docs/x.md", "--spec-text", SPEC, "--in-place", "--json"
    )
    assert code == 0 and result["output_path"] == str(doc)
    (row,) = cli(capsys, "runs", "--target", "docs/x.md", "--json")[1]
    assert row["target"] == str(doc)
    events = cli(capsys, "runs", "show", result["run_id"], "--json")[1]
    start = next(e for e in events if e["event"] == "run")
    assert "working_copy" not in start
    assert load_state(result["run_id"]).target == Target(kind="file", path=str(doc))


def test_an_old_run_folder_still_reads(
    stub_server: Any, project: Path, doc: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    # Runs recorded before `original` existed name their working copy.
    serve(stub_server, monkeypatch, lambda body: Json(failing(body, "Released in 1999.")))
    code, result = cli(
        capsys, "run", "--against", "docs/x.md", "--spec-text", SPEC, "--max-fixes", "0", "--json"
    )
    assert code == 1
    folder = run_dir(result["run_id"])
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    del state["target"]["original"]
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    assert target_name(load_state(result["run_id"]).target) == result["output_path"]
    report = build(result["run_id"])
    assert report["target"] == result["output_path"] and report["working_copy"] is None
    assert cli(capsys, "report", result["run_id"])[0] == 0
    assert main(["round", "status", "--run", result["run_id"]]) == 0
