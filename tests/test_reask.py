"""One re-ask policy (core/reask.py), and both faces follow it alike.

Why both faces in one test: the headless loop sends feedback as follow-up
turns, the SubagentStop hook blocks the reviewer's stop; they used to count
differently (the hook allowed two asks in all, the loop two for an invalid
reply and one more for quotes), so one reviewer got a different run in
Claude Code than in CI. Each sequence of replies below goes through the real
hook commands and through the headless loop with a scripted backend, and
both must hand the reviewer the same feedback and keep the same reply.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _hooked import OUTPUT, QUOTE, SPEC, open_hook_round, review
from santa_method.core import reask
from santa_method.core.review import validate_reply
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

NOT_JSON = "I think it is fine."
BAD_QUOTE = "Current version: 9.9."  # not in the output

# Each reply of reviewer B in turn: "invalid", "bad quote" (a FAIL quoting
# text the output lacks), "good" (a FAIL with a quote found in the output).
# With the asks the reviewer gets before its reply stands.
SEQUENCES = {
    "invalid every time": (["invalid", "invalid", "invalid"], 2),
    "an unverified quote, twice": (["bad quote", "bad quote"], 1),
    "invalid, then a quote, then good": (["invalid", "bad quote", "good"], 2),
    # The case the faces disagreed on: two invalid replies used up the hook's
    # two blocks, so it never asked about the quote; the loop did.
    "invalid twice, then a quote": (["invalid", "invalid", "bad quote", "bad quote"], 3),
}


def reply(kind: str, canary: str) -> str:
    if kind == "invalid":
        return NOT_JSON
    return review(canary, quote=BAD_QUOTE if kind == "bad quote" else QUOTE)


# --- the policy ------------------------------------------------------------------


def test_an_invalid_reply_is_asked_again_twice_then_stands() -> None:
    bad = validate_reply(NOT_JSON)
    first = reask.next_ask(bad, reask.Asks())
    assert first is not None and first.asks == reask.Asks(invalid=1)
    assert "not valid and was not counted" in first.feedback and first.reasons == bad.errors
    second = reask.next_ask(bad, first.asks)
    assert second is not None and second.asks == reask.Asks(invalid=2)
    assert reask.next_ask(bad, second.asks) is None


def test_an_unverified_quote_is_asked_about_once_whatever_came_before() -> None:
    checked = validate_reply(review("c0ffee", quote=BAD_QUOTE), output=OUTPUT, canary="c0ffee")
    assert checked.valid
    ask = reask.next_ask(checked, reask.Asks(invalid=2))
    assert ask is not None and ask.asks == reask.Asks(invalid=2, quotes=1)
    assert BAD_QUOTE in ask.feedback
    assert reask.next_ask(checked, ask.asks) is None
    assert reask.next_ask(checked, reask.SPENT) is None
    good = validate_reply(review("c0ffee", quote=QUOTE), output=OUTPUT, canary="c0ffee")
    assert reask.next_ask(good, reask.Asks()) is None


# --- the two faces -------------------------------------------------------------------


def through_the_hook(tmp_path: Path, kinds: list[str]) -> tuple[list[str], bool, str]:
    """B's replies through `santa hook subagent-stop` in turn: the feedback
    it was handed, and whether the reply kept in its slot is valid, and it."""
    p = open_hook_round(tmp_path)
    p.spawn()
    p.spawn()
    feedback: list[str] = []
    said: list[str] = []
    for kind in kinds:
        text = reply(kind, p.canary)
        answer = p.stop("agent-b", text, active=bool(feedback), earlier=tuple(said))
        said.append(text)
        if not answer.out.strip():
            break
        feedback.append(answer.blocked())
    else:
        pytest.fail("the hook was still asking after the last scripted reply")
    p.stop("agent-c", review(p.canary)).allowed()
    slot = p.slots()["B"]
    assert slot is not None
    return feedback, not slot.failed, slot.reply


class Reviewers:
    """B answers from its script, one reply per request; C passes."""

    name = "scripted-reask"

    def __init__(self, kinds: list[str]) -> None:
        self.kinds = kinds
        self.last_b: ReviewRequest | None = None

    async def review(self, request: ReviewRequest) -> ReviewReply:
        canary = re.search(r"santa-canary: ([0-9a-f]+)", request.round_part)
        assert canary
        if request.label != "B":
            return ReviewReply(text=review(canary.group(1)), tokens=Tokens(10, 5))
        self.last_b = request
        kind = self.kinds[len(request.followups)]
        return ReviewReply(text=reply(kind, canary.group(1)), tokens=Tokens(10, 5))

    async def fix(self, request: FixRequest) -> FixReply:
        raise AssertionError("a check-only run asks no fixer")


def through_the_loop(project: Path, kinds: list[str]) -> tuple[list[str], bool, str]:
    """B's replies through the headless loop: the same three answers."""
    target = project / "README.md"
    target.write_text(OUTPUT, encoding="utf-8")
    backend = Reviewers(kinds)
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend, max_fixes=0))
    assert backend.last_b is not None
    (b,) = [r for r in result.history[0].reviewers if r.label == "B"]
    feedback = [turn.feedback for turn in backend.last_b.followups]
    kept = reply(kinds[len(feedback)], "")
    return feedback, b.valid, kept


def without_canary(text: str) -> str:
    return re.sub(r'"canary": "[0-9a-f]*"', '"canary": ""', text)


@pytest.mark.parametrize(("kinds", "asks"), list(SEQUENCES.values()), ids=list(SEQUENCES))
def test_both_faces_ask_a_reviewer_the_same_things(
    kinds: list[str], asks: int, tmp_path: Path, project: Path
) -> None:
    hook_feedback, hook_valid, hook_kept = through_the_hook(tmp_path, kinds)
    loop_feedback, loop_valid, loop_kept = through_the_loop(project, kinds)
    assert len(hook_feedback) == asks
    assert hook_feedback == loop_feedback
    assert hook_valid == loop_valid == (kinds[asks] != "invalid")
    assert without_canary(hook_kept) == without_canary(loop_kept)
