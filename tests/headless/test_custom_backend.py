"""A user's own backend plugs in through the protocol alone (no SDK, no server)."""

from __future__ import annotations

import json
from pathlib import Path

from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import (
    Backend,
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

from .scripted import year_review


class Scripted:
    """Fails the first round on the year, passes once the fixer changed it."""

    name = "scripted"

    def __init__(self) -> None:
        self.requests: list[ReviewRequest] = []

    async def review(self, request: ReviewRequest) -> ReviewReply:
        self.requests.append(request)
        review = year_review(request)
        return ReviewReply(text="Here it is:\n" + json.dumps(review), tokens=Tokens(10, 5))

    async def fix(self, request: FixRequest) -> FixReply:
        return FixReply(output=request.output.replace("1999", "2024"), notes="1. fixed: year")


def test_a_custom_backend_runs_the_loop(project, target):
    backend = Scripted()
    assert isinstance(backend, Backend)
    result = verify_sync(
        "The README names the current year.", target, options=VerifyOptions(backend=backend)
    )
    assert result.verdict == "NICE"
    assert result.rounds == 2
    assert "2024" in result.output and "1999" in target.read_text()
    assert result.cost_usd is None  # unknown cost is reported as unknown, never as 0
    assert any("budget cannot be enforced" in w for w in result.warnings)
    assert len({r.prefix for r in backend.requests}) == 1


class Asking(Scripted):
    """The fixer cannot know the right year: it asks, and (wrongly) also puts in a guess."""

    name = "asking"

    def __init__(self, notes: str, change: bool = True) -> None:
        super().__init__()
        self.notes = notes
        self.change = change

    async def fix(self, request: FixRequest) -> FixReply:
        output = request.output.replace("1999", "20XX") if self.change else request.output
        return FixReply(output=output, notes=self.notes)


QUESTION = "1. needs input: Which year was the tool released? The spec does not say."


def test_a_fixer_question_escalates_without_another_review(project, target):
    backend = Asking(QUESTION)
    result = verify_sync(
        "The README names the release year.", target, options=VerifyOptions(backend=backend)
    )
    assert result.verdict == "ESCALATED"
    assert result.reasons == ["needs-input"]
    (question,) = result.questions
    assert question["question"] == "Which year was the tool released? The spec does not say."
    assert question["criterion"] == "completeness"
    assert result.to_json()["questions"] == result.questions
    assert len(backend.requests) == 2  # round 1 only: a guessed fix is never reviewed
    assert result.rounds == 1
    assert "1999" in result.output and "20XX" not in result.output  # the guess does not stand
    report = Path(result.report).read_text(encoding="utf-8")
    assert "needs-input" in report and "Which year was the tool released?" in report
    records = [json.loads(line) for line in (project / ".santa" / "log.jsonl").open()]
    assert not [r for r in records if r["event"] == "fix"]
    (escalation,) = [r for r in records if r["event"] == "escalate"]
    assert escalation["reason"] == "needs-input" and escalation["questions"][0]["n"] == 1


def test_a_fixer_question_in_place_puts_the_reviewed_text_back(project, target):
    before = target.read_text(encoding="utf-8")
    result = verify_sync(
        "The README names the release year.",
        target,
        options=VerifyOptions(backend=Asking(QUESTION), in_place=True),
    )
    assert result.verdict == "ESCALATED" and result.reasons == ["needs-input"]
    assert target.read_text(encoding="utf-8") == before


def test_a_fix_that_changes_nothing_is_refused_before_another_round(project, target):
    backend = Asking("1. fixed: corrected the year", change=False)
    result = verify_sync(
        "The README names the current year.", target, options=VerifyOptions(backend=backend)
    )
    assert result.verdict == "ESCALATED"
    assert "unchanged, so it is not a fix" in result.reasons[0]
    assert len(backend.requests) == 2  # no review round of identical output


def test_the_fixer_report_reaches_the_report_and_the_log(project, target):
    result = verify_sync(
        "The README names the current year.",
        target,
        options=VerifyOptions(backend=Scripted(), max_fixes=1),
    )
    assert result.verdict == "NICE"
    records = [json.loads(line) for line in (project / ".santa" / "log.jsonl").open()]
    (fix,) = [r for r in records if r["event"] == "fix"]
    assert fix["notes"] == "1. fixed: year"
    assert fix["report"] == [
        {
            "n": 1,
            "answer": "fixed",
            "text": "year",
            "key": result.history[0].issues[0]["key"],
            "criterion": "completeness",
        }
    ]


class Named(Scripted):
    """A custom backend that names its model and takes a moment to answer."""

    name = "named"

    async def review(self, request: ReviewRequest) -> ReviewReply:
        import asyncio
        import dataclasses

        await asyncio.sleep(0.05)
        return dataclasses.replace(await super().review(request), model="acme-reviewer-7b")

    async def fix(self, request: FixRequest) -> FixReply:
        return FixReply(
            output=request.output.replace("1999", "2024"), notes="1. fixed: year", model="acme-fix"
        )


def test_a_custom_backend_s_model_and_time_are_logged(project, target, capsys):
    from santa_method.cli import main
    from santa_method.state import log as runlog

    result = verify_sync(
        "The README names the current year.", target, options=VerifyOptions(backend=Named())
    )
    assert result.verdict == "NICE"
    assert {r.model for r in result.history[0].reviewers} == {"acme-reviewer-7b"}
    assert all(
        r.duration_s is not None and r.duration_s >= 0.05 for r in result.history[0].reviewers
    )
    records = runlog.read(project / ".santa" / "log.jsonl").records
    reviews = [r for r in records if r["event"] == "review"]
    assert len(reviews) == 4 and {r["model"] for r in reviews} == {"acme-reviewer-7b"}
    assert all(r["duration_s"] >= 0.05 for r in reviews)
    (fix,) = [r for r in records if r["event"] == "fix"]
    assert fix["model"] == "acme-fix" and fix["duration_s"] >= 0
    assert main(["metrics", "--json"]) == 0
    by_model = json.loads(capsys.readouterr().out)["reviewers"]["by_model"]
    assert set(by_model) == {"acme-reviewer-7b"}
