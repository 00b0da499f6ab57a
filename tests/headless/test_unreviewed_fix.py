"""A run that ends before its fix was reviewed leaves the user's file as a
round reviewed it, and keeps the fix in the run folder, named in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _reviews import output_of
from santa_method.core.errors import BackendError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.state.store import list_run_ids, load_state, run_dir

from .scripted import Scripted

SPEC = "The README names the current year."
FIXED = "# Tool\n\nReleased in 2024.\n\n## License\nMIT\n"


def _report(run_id: str) -> dict:
    return json.loads((run_dir(run_id) / "report.json").read_text(encoding="utf-8"))


def test_a_pre_check_that_fails_after_the_fix_puts_the_file_back(project, target):
    original = target.read_text(encoding="utf-8")
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(
            backend=Scripted(), in_place=True, pre_check="! grep -q 2024 README.md"
        ),
    )
    assert result.verdict == "ESCALATED"
    assert target.read_text(encoding="utf-8") == original
    kept = run_dir(result.run_id) / "round-1" / "fix.txt"
    assert kept.read_text(encoding="utf-8") == FIXED
    found = _report(result.run_id)["unreviewed_fix"]
    assert found["path"] == str(kept) and found["round"] == 1
    assert found["target_holds"] == "reviewed"
    markdown = Path(result.report or "").read_text(encoding="utf-8")
    assert "## Unreviewed fix" in markdown and str(kept) in markdown
    assert any(str(kept) in w for w in result.warnings)
    assert result.output == original


def test_a_backend_that_fails_on_the_fixed_text_puts_the_file_back(project, target):
    original = target.read_text(encoding="utf-8")
    backend = Scripted(BackendError("overloaded", transient=True))
    with pytest.raises(BackendError):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend, in_place=True))
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"
    assert target.read_text(encoding="utf-8") == original
    assert _report(run_id)["unreviewed_fix"]["target_holds"] == "reviewed"


def test_a_resumable_run_keeps_its_fix_in_place_until_it_is_closed(project, target, capsys):
    from santa_method.cli import main

    original = target.read_text(encoding="utf-8")
    backend = Scripted(BackendError("overloaded", transient=True))
    with pytest.raises(BackendError):
        verify_sync(
            SPEC, target, options=VerifyOptions(backend=backend, in_place=True, resumable=True)
        )
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "open"
    assert target.read_text(encoding="utf-8") == FIXED  # resumable: its review is owed
    assert main(["log", "escalate", "--run", run_id]) == 0
    assert target.read_text(encoding="utf-8") == original
    assert _report(run_id)["unreviewed_fix"]["round"] == 1


def test_a_file_changed_by_someone_else_is_left_alone(project, target):
    from santa_method.state.unreviewed import restore_reviewed

    backend = Scripted(BackendError("overloaded", transient=True))
    with pytest.raises(BackendError):
        verify_sync(
            SPEC, target, options=VerifyOptions(backend=backend, in_place=True, resumable=True)
        )
    (run_id,) = list_run_ids()
    target.write_text("a person's own edit\n", encoding="utf-8")
    assert restore_reviewed(run_id) is None
    assert target.read_text(encoding="utf-8") == "a person's own edit\n"


def test_a_shipped_run_names_no_unreviewed_fix(project, target):
    from santa_method.state.unreviewed import restore_reviewed

    result = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    assert result.verdict == "NICE" and target.read_text(encoding="utf-8") == FIXED
    assert restore_reviewed(result.run_id) is None


def test_a_crlf_file_is_verified_fixed_and_put_back_byte_for_byte(project, target):
    crlf = target.read_bytes().replace(b"\n", b"\r\n")
    target.write_bytes(crlf)
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    assert result.verdict == "NICE"
    assert target.read_bytes() == FIXED.replace("\n", "\r\n").encode("utf-8")
    assert result.output == FIXED.replace("\n", "\r\n")
    target.write_bytes(crlf)
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(
            backend=Scripted(), in_place=True, pre_check="! grep -q 2024 README.md"
        ),
    )
    assert result.verdict == "ESCALATED"
    assert target.read_bytes() == crlf
    kept = run_dir(result.run_id) / "round-1" / "fix.txt"
    assert kept.read_bytes() == FIXED.replace("\n", "\r\n").encode("utf-8")


def test_a_crlf_spec_is_reviewed_and_fixed_as_written(project, target):
    spec = "The README names the current year.\r\nIt says MIT.\r\n"
    result = verify_sync(spec, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    assert result.verdict == "NICE", result.reasons
    assert (run_dir(result.run_id) / "spec.md").read_bytes() == spec.encode("utf-8")
    assert target.read_text(encoding="utf-8") == FIXED


class InvalidAfterFix(Scripted):
    """Reviews round 1 as Scripted does; every reply about the fixed text is no review."""

    async def review(self, request: ReviewRequest) -> ReviewReply:
        if "1999" not in output_of(request.round_part):
            return ReviewReply(text="I cannot review this.", tokens=Tokens(10, 5))
        return await super().review(request)


def test_a_fix_no_valid_reply_judged_is_put_back(project, target):
    # Round 2 is gated, but with no valid review: the fix is still unreviewed.
    original = target.read_text(encoding="utf-8")
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=InvalidAfterFix(), in_place=True)
    )
    assert result.verdict == "ESCALATED"
    assert target.read_text(encoding="utf-8") == original
    found = _report(result.run_id)["unreviewed_fix"]
    assert found["round"] == 1 and found["target_holds"] == "reviewed"
    kept = run_dir(result.run_id) / "round-1" / "fix.txt"
    assert kept.read_text(encoding="utf-8") == FIXED


def _interrupted_after_fix(target: Path) -> str:
    """A resumable run stopped by the backend once its fix is in the file."""
    backend = Scripted(BackendError("overloaded", transient=True))
    with pytest.raises(BackendError):
        verify_sync(
            SPEC, target, options=VerifyOptions(backend=backend, in_place=True, resumable=True)
        )
    (run_id,) = list_run_ids()
    assert target.read_text(encoding="utf-8") == FIXED
    return run_id


def test_a_later_run_that_reviewed_nothing_does_not_vouch_for_a_fix(project, target):
    from santa_method.cli import main

    original = target.read_text(encoding="utf-8")
    stale = _interrupted_after_fix(target)
    # A second run on the file opens a round on the fix, but no reply is a review.
    other = verify_sync(
        SPEC, target, options=VerifyOptions(backend=InvalidAfterFix(), in_place=True)
    )
    assert other.verdict == "ESCALATED" and target.read_text(encoding="utf-8") == FIXED
    assert main(["log", "escalate", "--run", stale]) == 0
    assert target.read_text(encoding="utf-8") == original
    assert _report(stale)["unreviewed_fix"]["target_holds"] == "reviewed"


class EditedDuringReview(Scripted):
    """A person saves their own edit of the file while round 1 is reviewed."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    async def review(self, request: ReviewRequest) -> ReviewReply:
        self.path.write_text("a person's own edit\n", encoding="utf-8")
        return await super().review(request)


def test_a_fix_is_never_written_over_an_edit_made_during_the_round(project, target):
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=EditedDuringReview(target), in_place=True)
    )
    assert result.verdict == "ESCALATED"
    assert target.read_text(encoding="utf-8") == "a person's own edit\n"
    assert any("was changed while round 1" in r for r in result.reasons), result.reasons
    kept = run_dir(result.run_id) / "round-1" / "fix.txt"
    assert kept.read_text(encoding="utf-8") == FIXED  # the fix is not lost either
    found = _report(result.run_id)["unreviewed_fix"]
    assert found["path"] == str(kept) and found["target_holds"] == "other"
    assert result.cost_usd is None or result.cost_usd >= 0


class EditsInPlaceThenFails(Scripted):
    """A backend that edits the file it is given itself (output None), then fails."""

    def __init__(self, user_file: Path) -> None:
        super().__init__()
        self.user_file = user_file
        self.given: list[str] = []

    async def fix(self, request: FixRequest) -> FixReply:
        self.given.append(request.target_path)
        edited = Path(request.target_path)
        edited.write_text(request.output.replace("1999", "2024"), encoding="utf-8")
        raise BackendError("the fixer crashed after editing", transient=False)


def test_a_backend_editing_in_place_edits_a_copy_kept_before_the_file(project, target):
    original = target.read_text(encoding="utf-8")
    backend = EditsInPlaceThenFails(target)
    with pytest.raises(BackendError):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend, in_place=True))
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"
    # The user's file was never the one edited: it holds what round 1 reviewed.
    assert target.read_text(encoding="utf-8") == original
    (given,) = backend.given
    assert Path(given).resolve().is_relative_to(run_dir(run_id).resolve())


class EditsInPlace(Scripted):
    async def fix(self, request: FixRequest) -> FixReply:
        Path(request.target_path).write_text(
            request.output.replace("1999", "2024"), encoding="utf-8"
        )
        return FixReply(output=None, notes="1. year")


def test_a_backend_editing_in_place_ships_its_reviewed_fix(project, target):
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=EditsInPlace(), in_place=True))
    assert result.verdict == "NICE", result.reasons
    assert target.read_text(encoding="utf-8") == FIXED


def test_the_file_is_back_before_an_escalation_is_saved_or_logged(project, target, monkeypatch):
    # Whatever kills the process once the escalation is first written, the
    # user's file already holds reviewed text.
    from santa_method.cli import main
    from santa_method.state import events, store

    original = target.read_text(encoding="utf-8")
    stale = _interrupted_after_fix(target)
    seen: list[str] = []
    real_append, real_save = events.runlog.append, store.save

    def append(path, record):
        if record.get("event") == "escalate":
            seen.append(target.read_text(encoding="utf-8"))
        return real_append(path, record)

    def save(folder, state):
        if state["status"] == "escalated":
            seen.append(target.read_text(encoding="utf-8"))
        return real_save(folder, state)

    monkeypatch.setattr(events.runlog, "append", append)
    monkeypatch.setattr(store, "save", save)
    assert main(["log", "escalate", "--run", stale]) == 0
    assert seen and all(text == original for text in seen)


def test_a_gate_that_escalates_puts_the_file_back_before_it_saves(project, target, monkeypatch):
    from santa_method.state import gating

    original = target.read_text(encoding="utf-8")
    seen: list[str] = []
    real_save = gating.save_state

    def save_state(state):
        if state.status == "escalated":
            seen.append(target.read_text(encoding="utf-8"))
        return real_save(state)

    monkeypatch.setattr(gating, "save_state", save_state)
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=InvalidAfterFix(), in_place=True)
    )
    assert result.verdict == "ESCALATED"
    assert seen == [original]


class Killed(BaseException):
    """Stands for kill -9: nothing after it runs in the process."""


def _killed_after_fix_written(target: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run whose process dies once its fix is in the file, before `log fix`."""
    from santa_method.headless import loop

    real = loop.log_event

    def log_event(run_id, event, **kw):
        if event == "fix":
            raise Killed()
        return real(run_id, event, **kw)

    with monkeypatch.context() as m:
        m.setattr(loop, "log_event", log_event)
        m.setattr(loop, "_escalate_quietly", lambda *a, **k: None)  # a dead process does nothing
        with pytest.raises(Killed):
            verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "open"
    assert target.read_text(encoding="utf-8") == FIXED
    return run_id


@pytest.mark.parametrize("year", ["2024", "2025"])
def test_a_run_killed_after_writing_its_fix_resumes_over_its_own_fix(
    project, target, monkeypatch, year
):
    # The resumed fixer may answer as before or not: the file holds the run's
    # own fix, not someone else's edit, and the new fix is reviewed.
    from santa_method.headless.resume import resume_sync

    run_id = _killed_after_fix_written(target, monkeypatch)
    result = resume_sync(run_id, backend=Scripted(new_year=year))
    assert result.verdict == "NICE", result.reasons
    assert target.read_text(encoding="utf-8") == FIXED.replace("2024", year)


class EditsTheNamedTarget(Scripted):
    """A fixer that edits the file its assignment names (the user's) itself."""

    async def fix(self, request: FixRequest) -> FixReply:
        line = next(x for x in request.assignment.splitlines() if "Target: " in x)
        named = Path(line.split("Target: ", 1)[1].strip())
        named.write_text(named.read_text(encoding="utf-8").replace("1999", "2024"), "utf-8")
        return FixReply(output=None, notes="1. year")


def test_a_fixer_editing_the_users_file_itself_has_its_fix_reviewed(project, target):
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=EditsTheNamedTarget(), in_place=True)
    )
    assert result.verdict == "NICE", result.reasons
    assert target.read_text(encoding="utf-8") == FIXED
    kept = run_dir(result.run_id) / "round-1" / "fix.txt"
    assert kept.read_text(encoding="utf-8") == FIXED


def test_a_pre_check_that_rewrites_the_file_runs_before_round_one_reads_it(project, target):
    # A formatter as the pre-check: round 1 reviews what it left.
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(
            backend=Scripted(),
            in_place=True,
            pre_check="sed -i 's/^## License$/## Licence/' README.md",
        ),
    )
    assert result.verdict == "NICE", result.reasons
    assert target.read_text(encoding="utf-8") == FIXED.replace("## License", "## Licence")
