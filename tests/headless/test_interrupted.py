"""Runs whose process dies: one run at a time fixes a file, a killed run is
shown as interrupted (with what to do), resumes with `santa run --resume`
or closes with `santa log escalate`, and no run folder is without its log
entry.

The first run is a real process (a scripted backend that stops inside a
review), killed with SIGKILL as a crash or `kill -9` would end it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER
from santa_method.cli import main
from santa_method.core.errors import BackendError, InputError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.state import log as runlog
from santa_method.state.store import list_run_ids, load_state, run_dir

from .conftest import pass_reply
from .scripted import child_command
from .test_unreviewed_fix import FIXED, SPEC, Scripted


def _start(project: Path, target: Path, mode: str) -> subprocess.Popen[bytes]:
    """A run in its own process, stopped inside a review (`mode` says which)."""
    marker = project.parent / f"marker-{mode}"
    marker.unlink(missing_ok=True)
    proc = subprocess.Popen(
        child_command(project.parent, target, stop=marker, stop_at=mode),
        cwd=project,
        env={**os.environ, "SANTA_HOME": str(project / ".santa")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the run never reached its review: {proc.communicate()[1]!r}")
        time.sleep(0.02)
    return proc


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _rows(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    assert main(["runs", "--json"]) == 0
    return {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}


def test_one_run_at_a_time_fixes_a_file_and_a_crash_frees_it(project, target, capsys):
    first = _start(project, target, "round-1")
    try:
        with pytest.raises(InputError) as refused:
            verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
        # What the refusal must say: which file, which process holds it, and the way out.
        said = str(refused.value)
        assert f"'{target}'" in said and f"process {first.pid}" in said
        assert "--in-place" in said
        # A working copy of the same file is no conflict.
        assert (
            verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted())).verdict == "NICE"
        )
        (live,) = [r for r in _rows(capsys).values() if r["outcome"] == "open"]
        assert "resume" not in live  # its process lives: not interrupted
    finally:
        _kill(first)
    # The kernel dropped the dead process's lock: the file may be fixed again.
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    assert result.verdict == "NICE" and target.read_text(encoding="utf-8") == FIXED


def test_a_run_of_another_project_on_the_same_file_is_refused(
    project, target, tmp_path, monkeypatch
):
    first = _start(project, target, "round-1")
    try:
        other = tmp_path / "other-project"
        other.mkdir()
        monkeypatch.chdir(other)
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(other))
        monkeypatch.setenv("SANTA_HOME", str(other / ".santa"))
        with pytest.raises(InputError, match=f"process {first.pid}"):
            verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
        assert not (other / ".santa" / "runs").exists()
    finally:
        _kill(first)


def test_a_killed_run_is_interrupted_and_resumes(stub_server, project, target, capsys, monkeypatch):
    proc = _start(project, target, "round-1")
    _kill(proc)
    (run_id,) = list_run_ids()
    assert load_state(run_id).in_place is True
    row = _rows(capsys)[run_id]
    assert row["outcome"] == "interrupted"
    assert row["resume"] == f"santa run --resume {run_id}"
    assert row["close"] == f"santa log escalate --run {run_id}"
    assert row["unreviewed_fix"] is None
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert f"run {run_id} was interrupted (its process is gone): resume it with " in listing

    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(["run", "--resume", run_id, "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"] == "NICE" and out["run_id"] == run_id
    assert load_state(run_id).status == "shipped"
    assert _rows(capsys)[run_id]["outcome"] == "shipped"
    # Shipped: nothing is left to resume.
    assert main(["run", "--resume", run_id, "--quiet"]) == 1
    assert "is shipped; only an open run resumes" in capsys.readouterr().err


def test_a_run_killed_after_its_fix_holds_an_unreviewed_fix(project, target, capsys):
    original = target.read_text(encoding="utf-8")
    proc = _start(project, target, "after-fix")
    _kill(proc)
    (run_id,) = list_run_ids()
    assert target.read_text(encoding="utf-8") == FIXED
    kept = run_dir(run_id) / "round-1" / "fix.txt"
    row = _rows(capsys)[run_id]
    assert row["outcome"] == "interrupted" and row["unreviewed_fix"] == str(kept)
    assert main(["runs"]) == 0
    assert "holds a fix no round reviewed yet" in capsys.readouterr().out
    assert main(["runs", "show", run_id]) == 0  # what to do, not a reviewer's instruction
    shown = capsys.readouterr().out
    assert f"santa run --resume {run_id}" in shown and "give each reviewer" not in shown
    # Closing it puts the file back to what round 1 reviewed.
    assert main(["log", "escalate", "--run", run_id]) == 0
    capsys.readouterr()
    assert target.read_text(encoding="utf-8") == original
    assert _rows(capsys)[run_id]["outcome"] == "escalated"


def test_closing_a_stale_run_keeps_the_text_a_later_run_verified(project, target, capsys):
    proc = _start(project, target, "after-fix")
    _kill(proc)
    (old,) = list_run_ids()
    assert target.read_text(encoding="utf-8") == FIXED  # no reviewer saw it yet
    # A new run on the file reviews that text and ships it.
    shipped = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    assert shipped.verdict == "NICE" and target.read_text(encoding="utf-8") == FIXED
    row = _rows(capsys)[old]
    assert row["outcome"] == "interrupted" and row["unreviewed_fix"] is None
    assert main(["log", "escalate", "--run", old]) == 0
    capsys.readouterr()
    assert target.read_text(encoding="utf-8") == FIXED  # what the later run verified stays
    report = json.loads((run_dir(old) / "report.json").read_text(encoding="utf-8"))
    assert report["unreviewed_fix"]["target_holds"] == "reviewed-since"
    assert "reviewed since by another run" in report["unreviewed_fix"]["sentence"]


def test_a_live_run_cannot_be_resumed_or_closed_by_another_process(project, target, capsys):
    proc = _start(project, target, "round-1")
    try:
        (run_id,) = list_run_ids()
        assert main(["run", "--resume", run_id, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"run {run_id} is being driven by another process (process {proc.pid})" in err
        assert main(["log", "escalate", "--run", run_id]) == 1
        assert f"being driven by process {proc.pid} right now" in capsys.readouterr().err
    finally:
        _kill(proc)


def test_resume_takes_the_run_settings_only(project, capsys):
    assert main(["run", "--resume", "x", "--in-place", "--rubric", "code"]) == 2
    err = capsys.readouterr().err
    assert "drop --rubric, --in-place" in err
    assert main(["run", "--quiet"]) == 2
    assert "--against FILE or --against-diff REV (or --resume RUN)" in capsys.readouterr().err


def test_a_step_by_step_run_is_not_resumed_by_santa_run(project, target, capsys):
    assert main(["round", "start", "--against", str(target), "--spec-text", SPEC]) == 0
    capsys.readouterr()
    (run_id,) = list_run_ids()
    assert _rows(capsys)[run_id]["outcome"] == "open"  # no owning process: open as today
    assert main(["run", "--resume", run_id, "--quiet"]) == 2
    assert "is driven step by step" in capsys.readouterr().err


def test_every_run_folder_has_its_log_entry(project, target):
    """Killed the moment its run folder appears, a run is already in the log."""
    line = "Released in 1999, " + "x" * 80 + "\n"
    target.write_text(line * 30_000, encoding="utf-8")  # a few MB: writing it takes a while
    base = project / ".santa" / "runs"
    proc = subprocess.Popen(
        child_command(project.parent, target, stop=project.parent / "m"),
        cwd=project,
        env={**os.environ, "SANTA_HOME": str(project / ".santa")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if base.is_dir() and any(p.name[0].isdigit() for p in base.iterdir()):
            break
        time.sleep(0.0005)
    _kill(proc)
    (folder,) = [p for p in base.iterdir() if p.name[0].isdigit()]
    logged = runlog.read(project / ".santa" / "log.jsonl").records
    assert any(r["run_id"] == folder.name and r["event"] == "run" for r in logged)


def test_a_logged_run_without_a_folder_is_closed_by_escalate(project, capsys):
    runlog.append(
        project / ".santa" / "log.jsonl",
        {"run_id": "20250101-000000-abcdef", "event": "run", "iteration": 0, "source": "api"},
    )
    row = _rows(capsys)["20250101-000000-abcdef"]
    assert row["outcome"] == "interrupted" and row["resume"] is None
    assert not (project / ".santa" / "locks").exists()  # asking changes nothing
    assert main(["runs"]) == 0
    assert "its run folder is gone: close it with" in capsys.readouterr().out
    assert main(["run", "--resume", "20250101-000000-abcdef", "--quiet"]) == 2
    capsys.readouterr()
    assert main(["log", "escalate", "--run", "20250101-000000-abcdef"]) == 0
    capsys.readouterr()
    assert _rows(capsys)["20250101-000000-abcdef"]["outcome"] == "escalated"


def _logged_without_state(project: Path, run_id: str) -> Path:
    """A headless run in the log whose folder was made but no state saved."""
    runlog.append(
        project / ".santa" / "log.jsonl",
        {"run_id": run_id, "event": "run", "iteration": 0, "source": "api"},
    )
    folder = project / ".santa" / "runs" / run_id
    folder.mkdir(parents=True)
    return folder


def test_a_run_killed_before_its_state_was_saved_has_no_state_yet(project, capsys):
    """Killed while `spec.md` was being written: the folder holds only that
    write's temporary. It is said as it is (not "its folder is gone"), and
    closing the run removes the temporary nothing will finish."""
    run_id = "20250101-000000-abcdef"
    folder = _logged_without_state(project, run_id)
    half = folder / ".spec.md.k2j3h4.santa-tmp"
    half.write_text("Write a rel", encoding="utf-8")
    row = _rows(capsys)[run_id]
    assert row["outcome"] == "interrupted" and row["resume"] is None and row["no_state"] is True
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert f"run {run_id} was interrupted (its process is gone) before its state" in listing
    assert "folder is gone" not in listing
    assert main(["log", "escalate", "--run", run_id]) == 0
    capsys.readouterr()
    assert not half.exists() and not folder.exists()
    assert _rows(capsys)[run_id]["outcome"] == "escalated"


def test_closing_a_run_without_state_keeps_what_is_not_a_temporary(project, capsys):
    folder = _logged_without_state(project, run_id := "20250101-000000-abcdee")
    (folder / "spec.md").write_text("Write a release note.\n", encoding="utf-8")
    (folder / ".rubric.md.x1.santa-tmp").write_text("# ba", encoding="utf-8")
    assert main(["log", "escalate", "--run", run_id]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in folder.iterdir()) == ["spec.md"]


def test_a_run_escalated_by_the_api_in_round_2_hands_out_no_instruction(project, target, capsys):
    # Round 1 fails the year, the fixer fixes it, round 2's reviewers fail
    # for good: the run ends escalated with round 2 never gated.
    broken = BackendError("the API refused the request", transient=False)
    with pytest.raises(BackendError):
        verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(fail_after_fix=broken)))
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"
    capsys.readouterr()
    assert main(["runs", "show", run_id]) == 0
    shown = capsys.readouterr().out
    assert "give each reviewer" not in shown and "round 2 is open" not in shown
    assert "escalated in round 2" in shown and "the API refused" in shown
    assert main(["round", "status", "--run", run_id, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["instruction"] is None and status["round_open"] is False
