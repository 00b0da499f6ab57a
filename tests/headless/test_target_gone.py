"""A target deleted, or replaced by a folder, while the fixer works (issue
33, item 2): one sentence and exit 2, never "internal error"; the run is
escalated with the reason, and the fix is kept in the run folder."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from _reviews import output_of
from e2e.stub_server import FIXER, REVIEWER, Json, first_user_text
from santa_method.cli import main
from santa_method.core.errors import InputError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import FixReply, FixRequest
from santa_method.state import log as runlog
from santa_method.state.store import load_state, run_dir

from .conftest import failing, passing
from .scripted import Scripted
from .test_diff_review import SPEC as CHANGE_SPEC
from .test_diff_review import ChangeReviewer, repo

__all__ = ["repo"]

SPEC = "A README with the release year and a License section."
WHAT = {"folder": "was replaced by a folder", "deleted": "was deleted"}


def _take_away(path: Path, how: str) -> None:
    path.unlink()
    if how == "folder":
        path.mkdir()
        (path / "notes.md").write_text("a person's folder\n", encoding="utf-8")


def _escalation(project: Path) -> dict[str, Any]:
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] in ("ship", "fix")]
    (escalation,) = [r for r in records if r["event"] == "escalate"]
    return escalation


@pytest.mark.parametrize("how", sorted(WHAT))
def test_santa_run_names_a_target_taken_away_during_the_fix(
    how: str,
    stub_server: Any,
    project: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fixed = target.read_text(encoding="utf-8").replace("1999", "2024")

    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999."))
        return Json(passing(body))

    def fixer(body: dict[str, Any]) -> Json:
        _take_away(target, how)  # while the fixer works
        return Json({"output": fixed, "report": ["1. fixed: the year"]})

    server = stub_server({REVIEWER: reviewer, FIXER: fixer})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(["run", "--against", str(target), "--spec-text", SPEC, "--in-place", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "internal error" not in err and "Traceback" not in err and "NICE" not in out
    (line,) = err.strip().splitlines()
    escalation = _escalation(project)
    run_id = escalation["run_id"]
    assert line.startswith(f"santa: run {run_id} is escalated: {target} {WHAT[how]}")
    assert escalation["reason"].startswith(f"{target} {WHAT[how]} while round 1")
    assert load_state(run_id).status == "escalated"
    kept = run_dir(run_id) / "round-1" / "fix.txt"
    assert kept.read_text(encoding="utf-8") == fixed
    # The person's folder is left as it is.
    assert (target / "notes.md").exists() if how == "folder" else not target.exists()


class EditsThenLoses(Scripted):
    """A fixer that edits its copy in place (answers None), while someone
    takes the target away."""

    def __init__(self, how: str, target: Path) -> None:
        super().__init__()
        self.how, self.target = how, target

    async def fix(self, request: FixRequest) -> FixReply:
        reply = await super().fix(request)
        Path(request.target_path).write_text(reply.output or "", encoding="utf-8")
        _take_away(self.target, self.how)
        return dataclasses.replace(reply, output=None)


@pytest.mark.parametrize("how", sorted(WHAT))
def test_the_api_raises_the_packages_error(how: str, project: Path, target: Path) -> None:
    with pytest.raises(InputError, match=f"is escalated: {target} {WHAT[how]}") as caught:
        verify_sync(
            SPEC, target, options=VerifyOptions(backend=EditsThenLoses(how, target), in_place=True)
        )
    assert caught.value.exit_code == 2
    assert _escalation(project)["reason"].startswith(f"{target} {WHAT[how]}")
    if how == "folder":
        shutil.rmtree(target)


@pytest.mark.parametrize("how", sorted(WHAT))
def test_a_changed_file_taken_away_during_the_fix_is_named(how: str, repo: Path) -> None:
    """In a change, the others files are still reviewed text: the run is
    escalated (exit 1) with the file named, its fix kept."""
    app = repo / "app.py"

    class Loses(ChangeReviewer):
        async def fix(self, request: FixRequest) -> FixReply:
            reply = await super().fix(request)
            if app.is_file():
                _take_away(app, how)
            return reply

    result = verify_sync(
        CHANGE_SPEC,
        options=VerifyOptions(against_diff="HEAD", backend=Loses(), max_fixes=1, in_place=True),
    )
    assert result.verdict == "ESCALATED"
    (reason,) = result.reasons
    assert reason.startswith(f"{app} {WHAT[how]} while round 1")
