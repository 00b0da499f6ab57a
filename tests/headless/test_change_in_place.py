"""`--against-diff --in-place`: fixes of a change are written to the user's
files, so they follow the same rules as a single file's fix: kept in the
run folder before they are written, put back when the run escalates, and
written by one run at a time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from santa_method.core.errors import BackendError, InputError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import FixReply, FixRequest, ReviewReply, ReviewRequest
from santa_method.state import locks
from santa_method.state.store import list_run_ids, load_state, run_dir

from .test_diff_review import APP_NEW, README_NEW, SPEC, ChangeReviewer, repo

__all__ = ["repo"]


class FailsOnTheFix(ChangeReviewer):
    """Reviews the change, fixes it, then cannot review the fixed change."""

    async def review(self, request: ReviewRequest) -> ReviewReply:
        if self.fixes:
            raise BackendError("overloaded", transient=True)
        return await super().review(request)


def _report(run_id: str) -> dict:
    return json.loads((run_dir(run_id) / "report.json").read_text(encoding="utf-8"))


def test_an_escalated_change_puts_every_fixed_file_back(repo: Path) -> None:
    readme, app = repo / "docs" / "README.md", repo / "app.py"
    readme.write_bytes(README_NEW.replace("\n", "\r\n").encode("utf-8"))  # CRLF, as written
    before = {readme: readme.read_bytes(), app: app.read_bytes()}
    backend = FailsOnTheFix()
    with pytest.raises(BackendError):
        verify_sync(
            SPEC,
            options=VerifyOptions(against_diff="HEAD", backend=backend, max_fixes=1, in_place=True),
        )
    assert len(backend.fixes) == 2  # both files were fixed, then the review failed
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"
    assert {p: p.read_bytes() for p in before} == before
    found = _report(run_id)["unreviewed_fix"]
    assert found["round"] == 1 and found["target_holds"] == "reviewed"
    kept = {Path(f["target"]).name: Path(f["path"]) for f in found["files"]}
    assert set(kept) == {"README.md", "app.py"}
    assert b"2024" in kept["README.md"].read_bytes() and b"\r\n" in kept["README.md"].read_bytes()
    assert '"hello"' in kept["app.py"].read_text(encoding="utf-8")
    assert all(f["target_holds"] == "reviewed" for f in found["files"])
    markdown = (run_dir(run_id) / "report.md").read_text(encoding="utf-8")
    assert "## Unreviewed fix" in markdown and str(kept["app.py"]) not in markdown
    assert f"{app} holds the text round 1 reviewed" in markdown


def test_a_file_someone_changed_since_is_left_alone(repo: Path) -> None:
    from santa_method.state.unreviewed import restore_reviewed, unreviewed_fix

    backend = FailsOnTheFix()
    with pytest.raises(BackendError):
        verify_sync(
            SPEC,
            options=VerifyOptions(against_diff="HEAD", backend=backend, max_fixes=1, in_place=True),
        )
    (run_id,) = list_run_ids()
    app = repo / "app.py"
    # Put one fix back in place, and have a person edit the other file.
    found = unreviewed_fix(load_state(run_id))
    assert found is not None
    fixes = {Path(f.target).name: f for f in found.files}
    app.write_bytes(fixes["app.py"].fix.read_bytes())
    (repo / "docs" / "README.md").write_text("a person's own edit\n", encoding="utf-8")
    restored = restore_reviewed(run_id)
    assert restored is not None
    assert {Path(f.target).name: f.holds for f in restored.files} == {
        "app.py": "reviewed",
        "README.md": "other",
    }
    assert app.read_text(encoding="utf-8") == APP_NEW
    assert (repo / "docs" / "README.md").read_text(encoding="utf-8") == "a person's own edit\n"


def test_a_change_whose_file_another_run_fixes_is_refused_before_anything_runs(
    repo: Path,
) -> None:
    backend = ChangeReviewer()
    with locks.fixing(repo / "app.py"), pytest.raises(InputError, match=r"app\.py"):
        verify_sync(
            SPEC,
            options=VerifyOptions(against_diff="HEAD", backend=backend, max_fixes=1, in_place=True),
        )
    assert list_run_ids() == [] and backend.fixes == []


def test_two_runs_fixing_one_checkout_are_refused(repo: Path) -> None:
    with locks.fixing(repo), pytest.raises(InputError, match="being fixed in place"):
        verify_sync(
            SPEC,
            options=VerifyOptions(
                against_diff="HEAD", backend=ChangeReviewer(), max_fixes=1, in_place=True
            ),
        )
    # Reviewing only fixes nothing, so it needs no lock.
    with locks.fixing(repo):
        result = verify_sync(
            SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
        )
    assert result.verdict == "NAUGHTY" and result.outcome == "reported"


def test_a_file_the_change_adds_later_is_locked_before_it_is_fixed(repo: Path) -> None:
    # The run starts while app.py is not part of the change; it appears while
    # round 1's fix is made (so round 2 flags it), and another run holds its lock.
    app = repo / "app.py"
    app.unlink()

    class AddsTheFile(ChangeReviewer):
        async def fix(self, request: FixRequest) -> FixReply:
            if not app.exists():
                app.write_text(APP_NEW, encoding="utf-8")
                self.held = locks.fixing(app)
                self.held.__enter__()
            return await super().fix(request)

    backend = AddsTheFile()
    readme = repo / "docs" / "README.md"
    try:
        with pytest.raises(InputError, match=re.escape(f"'{app}' is being fixed in place")):
            verify_sync(
                SPEC,
                options=VerifyOptions(
                    against_diff="HEAD", backend=backend, max_fixes=2, in_place=True
                ),
            )
    finally:
        backend.held.__exit__(None, None, None)
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"
    assert app.read_text(encoding="utf-8") == APP_NEW  # never written by this run
    # Round 1's fix of the README was reviewed by round 2, so it stays.
    assert "Released in 2024." in readme.read_text(encoding="utf-8")


def _interrupted_change() -> None:
    """A resumable change whose fixes are written and whose review then fails:
    it stays open, its process gone, its files holding unreviewed fixes."""
    with pytest.raises(BackendError):
        verify_sync(
            SPEC,
            options=VerifyOptions(
                against_diff="HEAD",
                backend=FailsOnTheFix(),
                max_fixes=1,
                in_place=True,
                resumable=True,
            ),
        )


def test_an_interrupted_change_is_listed_to_be_reviewed_again(repo: Path, capsys) -> None:
    from santa_method.cli import main

    _interrupted_change()
    (run_id,) = list_run_ids()
    assert main(["runs", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["outcome"] == "interrupted" and row["resume"] is None
    assert row["again"] == "santa run --against-diff HEAD"
    assert main(["runs"]) == 0
    text = capsys.readouterr().out
    assert "reviewed again, not resumed: run 'santa run --against-diff HEAD'" in text
    assert "run folder is gone" not in text
    assert main(["run", "--resume", run_id]) == 2  # and resuming says why not
    assert "review it again with 'santa run --against-diff HEAD'" in capsys.readouterr().err


def test_a_changed_file_that_is_not_utf8_is_a_usage_error(repo: Path) -> None:
    (repo / "docs" / "README.md").write_bytes(b"caf\xe9 Released in 1999.\n")
    with pytest.raises(InputError, match=r"docs/README\.md is not UTF-8 text"):
        verify_sync(
            SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
        )
    (repo / "docs" / "README.md").write_text(README_NEW, encoding="utf-8")
    (repo / "notes.txt").write_bytes(b"\xff\xfe untracked\n")
    with pytest.raises(InputError, match=r"notes\.txt is not UTF-8 text"):
        verify_sync(
            SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
        )


def test_a_write_cut_short_is_not_part_of_the_change(repo: Path) -> None:
    from santa_method.state.model.run import Target
    from santa_method.state.target import read_target

    (repo / ".app.py.x1y2z3.santa-tmp").write_text("half a fix", encoding="utf-8")
    diff = read_target(Target(kind="diff", rev="HEAD", cwd=str(repo)))
    assert "app.py" in diff and "santa-tmp" not in diff and "half a fix" not in diff


def test_closing_a_stale_change_keeps_what_a_later_run_reviewed(repo: Path, capsys) -> None:
    from santa_method.cli import main

    _interrupted_change()
    (old,) = list_run_ids()
    fixed = {p: p.read_bytes() for p in (repo / "app.py", repo / "docs" / "README.md")}
    assert b"hello" in fixed[repo / "app.py"]  # the unreviewed fixes are in place
    later = verify_sync(
        SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
    )
    assert later.verdict == "NICE"  # a later run reviewed the fixed checkout
    assert main(["log", "escalate", "--run", old]) == 0
    capsys.readouterr()
    assert {p: p.read_bytes() for p in fixed} == fixed


def test_a_change_edited_during_its_round_gets_no_fix(repo: Path) -> None:
    readme = repo / "docs" / "README.md"

    class EditedDuringReview(ChangeReviewer):
        async def review(self, request: ReviewRequest) -> ReviewReply:
            readme.write_text(README_NEW + "A person's own line.\n", encoding="utf-8")
            return await super().review(request)

    backend = EditedDuringReview()
    result = verify_sync(
        SPEC,
        options=VerifyOptions(against_diff="HEAD", backend=backend, max_fixes=1, in_place=True),
    )
    assert result.verdict == "ESCALATED"
    assert any("was edited while round 1" in r for r in result.reasons), result.reasons
    assert backend.fixes == []  # nothing paid for, nothing written
    assert readme.read_text(encoding="utf-8") == README_NEW + "A person's own line.\n"
    assert (repo / "app.py").read_text(encoding="utf-8") == APP_NEW


def test_a_change_that_does_not_show_a_file_does_not_vouch_for_its_fix(repo: Path) -> None:
    # A file run fixes a git-ignored file and is interrupted; a change
    # reviewed later in the same checkout never showed that file.
    from santa_method.cli import main

    from .scripted import Scripted

    notes = repo / "notes.md"
    (repo / ".git" / "info" / "exclude").write_text("notes.md\n", encoding="utf-8")
    notes.write_text("# Notes\n\nReleased in 1999.\n", encoding="utf-8")
    with pytest.raises(BackendError):
        verify_sync(
            SPEC,
            notes,
            options=VerifyOptions(
                backend=Scripted(BackendError("overloaded", transient=True)),
                in_place=True,
                resumable=True,
            ),
        )
    (stale,) = list_run_ids()
    assert "2024" in notes.read_text(encoding="utf-8")
    change = verify_sync(
        SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
    )
    assert change.verdict == "NAUGHTY" and change.rounds == 1  # a check only: reported
    assert main(["log", "escalate", "--run", stale]) == 0
    assert notes.read_text(encoding="utf-8") == "# Notes\n\nReleased in 1999.\n"


def test_a_file_edited_while_another_is_fixed_is_not_sent_to_the_fixer(repo: Path) -> None:
    app = repo / "app.py"
    edited = APP_NEW + "# a person's own line\n"

    class EditsAppDuringFirstFix(ChangeReviewer):
        async def fix(self, request: FixRequest) -> FixReply:
            if not self.fixes:
                app.write_text(edited, encoding="utf-8")
            return await super().fix(request)

    backend = EditsAppDuringFirstFix()
    result = verify_sync(
        SPEC,
        options=VerifyOptions(against_diff="HEAD", backend=backend, max_fixes=1, in_place=True),
    )
    assert result.verdict == "ESCALATED"
    assert [Path(r.target_path).name for r in backend.fixes] == ["README.md"]
    assert app.read_text(encoding="utf-8") == edited
    # The README's fix was written, then put back: no round reviewed it.
    assert (repo / "docs" / "README.md").read_text(encoding="utf-8") == README_NEW
