"""A run that ends before its fix was reviewed leaves the user's file as a
round reviewed it, and keeps the fix in the run folder, named in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from santa_method.core.errors import BackendError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.state import runs

from .scripted import Scripted

SPEC = "The README names the current year."
FIXED = "# Tool\n\nReleased in 2024.\n\n## License\nMIT\n"


def _report(run_id: str) -> dict:
    return json.loads((runs.run_dir(run_id) / "report.json").read_text(encoding="utf-8"))


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
    kept = runs.run_dir(result.run_id) / "round-1" / "fix.txt"
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
    (run_id,) = runs.list_run_ids()
    assert runs.load(run_id)["status"] == "escalated"
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
    (run_id,) = runs.list_run_ids()
    assert runs.load(run_id)["status"] == "open"
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
    (run_id,) = runs.list_run_ids()
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
    kept = runs.run_dir(result.run_id) / "round-1" / "fix.txt"
    assert kept.read_bytes() == FIXED.replace("\n", "\r\n").encode("utf-8")


def test_a_crlf_spec_is_reviewed_and_fixed_as_written(project, target):
    spec = "The README names the current year.\r\nIt says MIT.\r\n"
    result = verify_sync(spec, target, options=VerifyOptions(backend=Scripted(), in_place=True))
    assert result.verdict == "NICE", result.reasons
    assert (runs.run_dir(result.run_id) / "spec.md").read_bytes() == spec.encode("utf-8")
    assert target.read_text(encoding="utf-8") == FIXED
