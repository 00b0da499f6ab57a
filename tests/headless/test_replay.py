"""Record a run's replies, and replay them offline to the same end.

The recording is made by the real anthropic backend against the scripted
Messages API on loopback (the model is the only thing faked); the replay
runs with that server stopped and no key, as a CI job would. A request the
recording has no reply for is refused, never answered with a guess.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from _reviews import output_of, review_of
from e2e.stub_server import FIXER, REVIEWER, Json, first_user_text
from santa_method.cli import main
from santa_method.core import assignments
from santa_method.core.errors import InputError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends import recording
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    FollowUp,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.state import log as runlog
from santa_method.state.store import load_state

from .conftest import failing, passing
from .scripted import CRITERIA

SPEC = "A README with the release year and a License section."
KEY = "sk-ant-api03-" + "Qx7vT2mK9pL4wZ8rN3sB6yH1cF5jD0gA" + "-eU2iO9aS7dR4tY6uI"


# --- the one normalisation -------------------------------------------------------------


def review_request(run_id: str, canary: str, boundary: str, output: str, **more: Any):
    rubric, spec = "### `factual-accuracy`\nThe facts are right.\n", "Say the year.\n"
    whole = assignments.reviewer_assignment(
        run_id=run_id,
        round_number=2,
        reviewers=2,
        rubric_markdown=rubric,
        spec=spec,
        output=output,
        boundary=boundary,
        canary=canary,
    )
    prefix = assignments.reviewer_prefix(rubric, spec, boundary)
    assert whole.startswith(prefix)
    return ReviewRequest(prefix=prefix, round_part=whole[len(prefix) :], schema={}, **more)


def fix_request(run_id: str, boundary: str, target: str, output: str) -> FixRequest:
    from santa_method.core.types import MergedIssue

    flag = MergedIssue("factual-accuracy", "the year is wrong", "verified", ("B", "C"))
    text = assignments.fixer_assignment(
        run_id=run_id,
        round_number=1,
        target=target,
        output=output,
        flags=[flag],
        boundary=boundary,
        spec="Say the year.\n",
    )
    return FixRequest(assignment=text, target_path=target + ".copy", output=output)


def test_two_runs_of_the_same_request_normalise_alike() -> None:
    one = review_request(
        "20260101-000000-aaaaaa", "a" * 24, "SANTA-" + "A" * 16, "Released in 1999.\n",
        label="B", followups=(FollowUp(f'{{"canary": "{"a" * 24}"}}', "wrong canary"),),
    )  # fmt: skip
    two = review_request(
        "20261231-235959-bbbbbb", "b" * 24, "SANTA-" + "B" * 16, "Released in 1999.\n",
        label="B", followups=(FollowUp(f'{{"canary": "{"b" * 24}"}}', "wrong canary"),),
        timeout=9.0, project_dir="/elsewhere", session="opaque",
    )  # fmt: skip
    assert one.assignment != two.assignment
    assert recording.normalise(one) == recording.normalise(two)
    assert recording.digest(one) == recording.digest(two)
    form = recording.normalise(one)
    for random in ("a" * 24, "SANTA-" + "A" * 16, "20260101-000000-aaaaaa"):
        assert random not in json.dumps(form)
    assert "santa-canary: <canary>" in form["round_part"]
    assert "<<<OUTPUT <fence>" in form["round_part"] and "run <run>, round 2" in form["round_part"]
    # What could change an answer changes the digest.
    other_output = review_request(
        "20260101-000000-aaaaaa", "a" * 24, "SANTA-" + "A" * 16, "Released in 1998.\n", label="B"
    )
    other_label = review_request(
        "20260101-000000-aaaaaa", "a" * 24, "SANTA-" + "A" * 16, "Released in 1999.\n", label="C"
    )
    other_model = review_request(
        "20260101-000000-aaaaaa", "a" * 24, "SANTA-" + "A" * 16, "Released in 1999.\n",
        label="B", model="opus",
    )  # fmt: skip
    digests = {recording.digest(r) for r in (one, other_output, other_label, other_model)}
    assert len(digests) == 4
    assert recording.describe(one) == "reviewer B's review in round 2, ask 2"


def test_fix_requests_normalise_their_run_fence_and_target() -> None:
    one = fix_request("20260101-000000-aaaaaa", "SANTA-" + "C" * 16, "/a/.santa/work/1/R.md", "x\n")
    two = fix_request("20260102-000000-cccccc", "SANTA-" + "D" * 16, "/b/.santa/work/2/R.md", "x\n")
    assert recording.digest(one) == recording.digest(two)
    assert recording.normalise(one)["assignment"].count("<target>") == 1
    three = fix_request("20260101-000000-aaaaaa", "SANTA-" + "C" * 16, "/a/R.md", "y\n")
    assert recording.digest(three) != recording.digest(one)
    assert recording.describe(one) == "the fixer's fix after round 1"


# --- a recorded loop, replayed ----------------------------------------------------------


def scripted_api(stub_server: Any, fixed: str) -> Any:
    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999."))
        return Json(passing(body))

    return stub_server(
        {REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": ["1. fixed: the year"]})]}
    )


def run_cli(capsys: Any, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    code = main(["run", "--against", "README.md", "--spec-text", SPEC, "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def problems(result: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    return [
        [(i["criterion"], i.get("quote"), tuple(i["flagged_by"])) for i in r["issues"]]
        for r in result["history"]
    ]


@pytest.fixture
def recorded(stub_server, project, target, capsys, monkeypatch) -> dict[str, Any]:
    """A loop recorded through the anthropic backend: FAIL, a fix, PASS."""
    server = scripted_api(stub_server, target.read_text().replace("1999", "2024"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    folder = project / "replies"
    code, result, err = run_cli(
        capsys, "--quiet", "--record", str(folder), "--models", "sonnet,haiku"
    )
    assert code == 0, err
    assert result is not None and result["replayed"] is None
    assert [r["verdict"] for r in result["history"]] == ["NAUGHTY", "NICE"]
    asked = len(server.messages())
    assert asked == 5  # two reviewers, the fixer, two fresh reviewers
    server.stop()
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    return {"folder": folder, "result": result, "server": server, "asked": asked}


def test_a_recorded_loop_replays_offline_to_the_same_end(recorded, project, target, capsys):
    folder = recorded["folder"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == recording.FORMAT and manifest["backends"] == ["anthropic"]
    assert manifest["requests"] == 5 and "not redacted" in manifest["note"]
    assert set(manifest["models"]) == {"claude-sonnet-5-5", "claude-haiku-5-5"}
    assert not [p for p in folder.iterdir() if p.name.endswith(".santa-tmp")]

    code, replay, err = run_cli(capsys, "--backend", f"replay:{folder}", "--models", "sonnet,haiku")
    assert code == 0, err
    original = recorded["result"]
    assert replay["verdict"] == original["verdict"] == "NICE"
    assert replay["rounds"] == original["rounds"] == 2
    assert problems(replay) == problems(original)
    assert problems(replay)[0] == [("factual-accuracy", "Released in 1999.", ("B", "C"))]
    assert replay["replayed"] == str(folder) and replay["backend"] == "replay"
    assert replay["cost_usd"] == original["cost_usd"]  # what the recorded calls cost
    assert len(recorded["server"].messages()) == recorded["asked"]  # no model was asked
    # The run says it was replayed: its log, its state, its report.
    run_id = replay["run_id"]
    records = [
        r for r in runlog.read(project / ".santa" / "log.jsonl").records if r["run_id"] == run_id
    ]
    assert records[0]["event"] == "run" and records[0]["replayed"] == str(folder)
    assert {r.get("backend") for r in records if r["event"] in ("fix", "ship")} == {"replay"}
    assert load_state(run_id).replayed == str(folder)
    assert main(["report", run_id, "--format", "markdown"]) == 0
    assert f"replayed: from the recording `{folder}`" in capsys.readouterr().out
    assert main(["report", run_id, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["replayed"] == str(folder)


def test_the_replayed_reply_carries_this_round_s_canary(recorded, project, capsys):
    folder = recorded["folder"]
    recorded_canaries = {
        reply["canary"]
        for entry in recording.Recording(folder).entries()
        for reply in entry["replies"]
        if entry["kind"] == "review"
    }
    assert len(recorded_canaries) == 2  # one per round
    code, replay, err = run_cli(capsys, "--backend", f"replay:{folder}", "--models", "sonnet,haiku")
    assert code == 0, err
    state = load_state(replay["run_id"])
    now = {r.canary for r in state.rounds}
    assert now.isdisjoint(recorded_canaries)
    for r in state.rounds:
        for slot in r.slots.values():
            assert slot is not None and f'"canary": "{r.canary}"' in slot.reply


def test_a_request_the_recording_has_no_reply_for_is_refused(recorded, project, target, capsys):
    target.write_text(target.read_text().replace("1999", "1998"))  # not what was recorded
    folder = recorded["folder"]
    code, result, err = run_cli(capsys, "--backend", f"replay:{folder}", "--models", "sonnet,haiku")
    assert code == 2 and result is None
    assert f"santa: the recording in {folder} has no reply for reviewer " in err
    assert "review in round 1 (request " in err and "never with a guess" in err
    assert len(recorded["server"].messages()) == recorded["asked"]
    # The run it opened is not shipped: it is escalated with that reason.
    (row,) = [
        r
        for r in runlog.read(project / ".santa" / "log.jsonl").records
        if r["event"] == "escalate" and "no reply for" in str(r.get("reason"))
    ]
    assert load_state(row["run_id"]).status == "escalated"
    # Other models were not recorded either.
    code, _, err = run_cli(capsys, "--backend", f"replay:{folder}")
    assert code == 2 and "no reply for" in err


def test_replay_refuses_a_folder_that_holds_no_recording(project, target, capsys):
    code, _, err = run_cli(capsys, "--backend", f"replay:{project / 'nothing'}")
    assert code == 2 and "there is no recording at" in err
    (project / "empty").mkdir()
    code, _, err = run_cli(capsys, "--backend", f"replay:{project / 'empty'}")
    assert code == 2 and "holds no santa recording (no manifest.json)" in err
    assert not (project / ".santa" / "runs").exists()  # refused before any run opened
    assert main(["run", "--against", "README.md", "--spec-text", "x", "--backend", "replay:"]) == 2
    assert main(["run", "--against", "README.md", "--spec-text", "x", "--backend", "bogus"]) == 2
    assert (
        "--backend must be anthropic, claude, openai or replay:DIR, not 'bogus'"
        in capsys.readouterr().err
    )


def test_recording_something_that_looks_like_a_secret_warns_once(
    stub_server, project, target, capsys, monkeypatch
):
    target.write_text(target.read_text() + f"\nThe key is {KEY}\n")
    server = scripted_api(stub_server, target.read_text().replace("1999", "2024"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    folder = project / "replies"
    code, result, err = run_cli(capsys, "--quiet", "--record", str(folder))
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("santa: warning: ")]
    assert warnings == [
        f"santa: warning: the recording in {folder} holds what looks like a secret "
        "(Anthropic API Key, in a request); recordings are not redacted: keep the folder out "
        "of git and out of CI artifacts"
    ]
    assert KEY not in err and any("looks like a secret" in w for w in result["warnings"])
    # The recording itself keeps the text as the reviewers saw it.
    assert any(KEY in p.read_text() for p in folder.glob("*.json"))


class Flaky:
    """Reviewer C gives no review at first: the round is reviewed again, so
    the same request is asked twice and gets two different replies."""

    name = "flaky"

    def __init__(self) -> None:
        self.c_asks = 0

    async def review(self, request: ReviewRequest) -> ReviewReply:
        canary = request.round_part.rstrip().rsplit("santa-canary: ", 1)[1]
        if request.label == "C":
            self.c_asks += 1
            if self.c_asks <= 3:
                return ReviewReply(text="I could not finish.", tokens=Tokens(3, 1), cost_usd=0.0)
        review = review_of(CRITERIA, canary=canary)
        return ReviewReply(text=json.dumps(review), tokens=Tokens(3, 1), cost_usd=0.0, model="m")

    async def fix(self, request: FixRequest) -> FixReply:
        raise AssertionError("nothing to fix")


def test_a_request_asked_twice_replays_its_replies_in_order(project, target):
    folder = project / "replies"
    first = verify_sync(SPEC, target, options=VerifyOptions(backend=Flaky(), record=folder))
    assert first.verdict == "NICE" and [r.next for r in first.history] == ["rereview", "ship"]
    entries = list(recording.Recording(folder).entries())
    twice = [e for e in entries if len(e["replies"]) == 2]
    assert [e["label"] for e in twice] == ["C"]  # C's first ask, in the round and its re-review
    kept = sum(len(e["replies"]) for e in entries)
    again = verify_sync(SPEC, target, options=VerifyOptions(backend=f"replay:{folder}"))
    assert [r.next for r in again.history] == ["rereview", "ship"]
    assert again.replayed == str(folder)
    # Recording the run again replaces what it recorded, rather than adding to it.
    verify_sync(SPEC, target, options=VerifyOptions(backend=Flaky(), record=folder))
    assert sum(len(e["replies"]) for e in recording.Recording(folder).entries()) == kept


def test_a_replayed_run_is_neither_recorded_nor_resumed(recorded, project, target):
    folder = recorded["folder"]
    with pytest.raises(InputError, match="nothing to record"):
        verify_sync(
            SPEC,
            target,
            options=VerifyOptions(backend=f"replay:{folder}", record=project / "again"),
        )
    with pytest.raises(InputError, match="never resumed"):
        verify_sync(
            SPEC,
            target,
            options=VerifyOptions(backend=f"replay:{folder}", resume_run="20260101-000000-aaaaaa"),
        )
