"""A run whose state cannot be read can still be closed (issue 29, item 4).

An older santa wrote negative or NaN token counts into a run's state; this
one refuses such a state, so the run could be neither resumed nor closed:
`santa runs` called it interrupted with "its run folder is gone" (it is
there), and `santa log escalate` and `santa report` exited 2. Now the run
is listed with why its state cannot be read, a person can escalate it,
and its report is built from the log and the run folder, in every format
(each checked by its real reader).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from santa_method.cli import main
from santa_method.core.errors import BackendError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import FixReply, FixRequest
from santa_method.state import log as runlog
from santa_method.state.open_runs import open_run_ids
from santa_method.state.store import list_run_ids, load_state, run_dir

from .scripted import Scripted
from .test_ci_formats import CODE_QUALITY_SCHEMA, sarif_of

SPEC = "The README names the current year."


class StopsAtTheFix(Scripted):
    """Round 1 flags the year; the fixer's call fails as an overloaded API would."""

    async def fix(self, request: FixRequest) -> FixReply:
        raise BackendError("overloaded", transient=True)


def _interrupted(target: Path) -> str:
    """An open headless run no process drives (a resumable run whose backend failed)."""
    with pytest.raises(BackendError):
        verify_sync(SPEC, target, options=VerifyOptions(backend=StopsAtTheFix(), resumable=True))
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "open"
    return run_id


def _counts(bad: Any) -> Callable[[Path], None]:
    """A state as an older santa wrote it: a reviewer's token counts spoiled."""

    def damage(state_file: Path) -> None:
        data = json.loads(state_file.read_text(encoding="utf-8"))
        slot = next(s for s in data["rounds"][0]["slots"].values() if s is not None)
        slot["tokens"] = -4
        slot["token_detail"] = {"input": bad, "output": 1, "cache_read": 0, "cache_write": 0}
        state_file.write_text(json.dumps(data), encoding="utf-8")  # NaN as Python writes it

    return damage


def _wrong_type(state_file: Path) -> None:
    data = json.loads(state_file.read_text(encoding="utf-8"))
    data["max_fixes"] = "two"
    state_file.write_text(json.dumps(data), encoding="utf-8")


def _cut(state_file: Path) -> None:
    text = state_file.read_text(encoding="utf-8")
    state_file.write_text(text[: len(text) // 2], encoding="utf-8")


DAMAGE: dict[str, tuple[Callable[[Path], None], str, bool]] = {
    # how, the words naming it, whether the file is still a JSON object
    "negative counts": (_counts(-5), "token_detail holds a count", True),
    "NaN counts": (_counts(float("nan")), "token_detail holds a count", True),
    "a wrong type": (_wrong_type, "state.max_fixes is not a whole number", True),
    "cut short": (_cut, "it is not JSON text", False),
    "not an object": (
        lambda f: f.write_text("[]", encoding="utf-8"),
        "not hold a JSON object",
        False,
    ),
}


def _rows(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    assert main(["runs", "--json"]) == 0
    return {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_run_whose_state_cannot_be_read_is_listed_closed_and_reported(
    how: str, project: Path, target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, words, still_json = DAMAGE[how]
    run_id = _interrupted(target)
    state_file = run_dir(run_id) / "state.json"
    damage(state_file)
    capsys.readouterr()

    # Listed as it is: interrupted, its state there but unreadable, and how to close it.
    row = _rows(capsys)[run_id]
    assert row["outcome"] == "interrupted" and row["resume"] is None
    assert words in row["unreadable"]
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert "its run folder is gone" not in listing
    assert f"its state cannot be read ({row['unreadable']})" in listing
    assert f"close it with 'santa log escalate --run {run_id}'" in listing
    assert main(["runs", "show", run_id]) == 0
    assert f"run {run_id}'s state cannot be read" in capsys.readouterr().out

    # A report before it is closed: open, saying why.
    assert main(["report", run_id, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "OPEN" and words in report["state_unreadable"]

    # A person closes it.
    assert main(["log", "escalate", "--run", run_id, "--data", '{"reason": "state lost"}']) == 0
    capsys.readouterr()
    records = [
        r for r in runlog.read(project / ".santa" / "log.jsonl").records if r["run_id"] == run_id
    ]
    escalation = records[-1]
    assert escalation["event"] == "escalate" and escalation["reason"] == "state lost"
    assert words in escalation["state_unreadable"] and escalation["iteration"] == 1
    assert _rows(capsys)[run_id]["outcome"] == "escalated"
    # Nothing counts it open any more (the guard reads the bare status).
    assert run_id not in open_run_ids(str(run_dir(run_id).parent))
    if still_json:
        assert json.loads(state_file.read_text(encoding="utf-8"))["status"] == "escalated"
    markdown = (run_dir(run_id) / "report.md").read_text(encoding="utf-8")
    assert "## The run's state cannot be read" in markdown and "state lost" in markdown
    assert "old year" in markdown  # the last gate's flag, read from the log
    # Closed once: a second escalation is refused.
    assert main(["log", "escalate", "--run", run_id]) == 1
    assert "cannot escalate now" in capsys.readouterr().err

    # Its report, in every format, each read by its consumer.
    assert main(["report", run_id, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "ESCALATED" and report["status"] == "escalated"
    assert report["escalation_reasons"] == ["state lost"]
    assert words in report["state_unreadable"]
    assert main(["report", run_id]) == 0
    assert "ESCALATED" in capsys.readouterr().out
    assert main(["report", run_id, "--format", "sarif"]) == 0
    sarif_of(capsys.readouterr().out)
    out = project / "santa.xml"
    assert main(["report", run_id, "--format", "junit", "--out", str(out)]) == 0
    suites = list(JUnitXml.fromfile(str(out)))
    assert suites and any(case.result for suite in suites for case in suite)
    assert main(["report", run_id, "--format", "codeclimate"]) == 0
    import jsonschema

    jsonschema.validate(json.loads(capsys.readouterr().out), CODE_QUALITY_SCHEMA)


def test_a_shipped_run_whose_state_cannot_be_read_is_not_escalated(
    project: Path, target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=Scripted()))
    assert result.verdict == "NICE"
    _counts(-1)(run_dir(result.run_id) / "state.json")
    assert main(["log", "escalate", "--run", result.run_id]) == 1
    assert "is shipped; it cannot escalate now" in capsys.readouterr().err
    assert main(["report", result.run_id, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "NICE"


def test_a_run_whose_state_breaks_midway_is_escalated_by_its_own_loop(
    project: Path, target: Path
) -> None:
    """The loop closes a run it stops on an error even when its state can
    no longer be read (damaged while the fixer worked)."""

    class Damages(Scripted):
        async def fix(self, request: FixRequest) -> FixReply:
            (run_id,) = list_run_ids()
            _cut(run_dir(run_id) / "state.json")
            raise BackendError("overloaded", transient=True)

    with pytest.raises(BackendError):
        verify_sync(SPEC, target, options=VerifyOptions(backend=Damages()))
    (run_id,) = list_run_ids()
    records = runlog.read(project / ".santa" / "log.jsonl").records
    (escalation,) = [r for r in records if r["event"] == "escalate"]
    assert escalation["run_id"] == run_id
    assert escalation["reason"] == "the run stopped on an error: overloaded"
    assert "it is not JSON text" in escalation["state_unreadable"]
