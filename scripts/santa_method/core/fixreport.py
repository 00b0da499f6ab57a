"""Read the fixer's report: one line per problem, in the assignment's numbering.

The fixer ends its reply with one line per problem it was given:

    <n>. fixed: <what changed>
    <n>. not an issue: <why>
    <n>. needs input: <the question a person must answer>

Why the third form: a fixer asked to restore something whose facts exist
nowhere (a missing row's price, a link, a name) either asks or invents, and
fresh reviewers cannot tell an invented figure from a real one. A question
stops the run for a person instead; any `needs input` line escalates it.
Parsing is pure and forgiving about markup (bullets, bold, backticks) but
never guesses an answer it cannot read: a problem with no line is
`unanswered`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from santa_method.core.types import MergedIssue

Answer = Literal["fixed", "not an issue", "needs input", "unanswered"]
ANSWERS: tuple[Answer, ...] = ("fixed", "not an issue", "needs input")
NEEDS_INPUT = "needs-input"
"""The escalation reason of a run stopped by a fixer's question."""

_LINE = re.compile(
    r"^[\s>*_`#-]*(\d+)\s*[.):]\s*[*_`]*\s*(fixed|not an issue|needs input)\b\s*[*_`]*"
    r"\s*(?:[:\-\u2013\u2014]\s*(.*))?$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FlagAnswer:
    number: int
    answer: Answer
    text: str
    key: str = ""
    criterion: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.number,
            "answer": self.answer,
            "text": self.text,
            "key": self.key,
            "criterion": self.criterion,
        }


@dataclass(frozen=True)
class FixReport:
    answers: tuple[FlagAnswer, ...]
    extra: tuple[int, ...] = ()
    """Numbers the report answers beyond the problems it was given."""

    @property
    def questions(self) -> tuple[FlagAnswer, ...]:
        return tuple(a for a in self.answers if a.answer == "needs input")

    @property
    def all_not_an_issue(self) -> bool:
        """Every problem answered "not an issue" (a fix that rightly changes nothing)."""
        return bool(self.answers) and all(a.answer == "not an issue" for a in self.answers)

    def to_json(self) -> list[dict[str, Any]]:
        return [a.to_json() for a in self.answers]


def fixer_order(flags: Sequence[MergedIssue]) -> list[MergedIssue]:
    """The problems in the order the fix assignment numbers them: suspected
    false positives (unverified quotes) first, then the rest."""
    return [f for f in flags if f.evidence == "unverified"] + [
        f for f in flags if f.evidence != "unverified"
    ]


def parse_report(notes: str, flags: Sequence[MergedIssue]) -> FixReport:
    """Each problem's answer, by its number in the assignment. The last line
    for a number wins (a fixer may restate its report at the end)."""
    found: dict[int, tuple[Answer, str]] = {}
    for line in (notes or "").splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            continue
        number = int(match.group(1))
        answer = match.group(2).lower()
        text = (match.group(3) or "").strip().strip("*_`").strip()
        found[number] = (answer, text)  # type: ignore[assignment]
    ordered = fixer_order(flags)
    answers = []
    for n, flag in enumerate(ordered, 1):
        answer, text = found.get(n, ("unanswered", ""))
        answers.append(FlagAnswer(n, answer, text, flag.key, flag.criterion))
    # A question about a number beyond the list still stops the run.
    for n in sorted(found):
        if n > len(ordered) and found[n][0] == "needs input":
            answers.append(FlagAnswer(n, "needs input", found[n][1]))
    extra = tuple(n for n in sorted(found) if n < 1 or n > len(ordered))
    return FixReport(tuple(answers), extra)


def extra_answers_problem(report: FixReport, given: int) -> str | None:
    """Why a report that answers more problems than it was given is no
    answer to them, or None. Such a fixer worked from another list (a stale
    assignment, flags of its own), so what it changed answers nothing the
    reviewers raised."""
    if not report.extra:
        return None
    numbers = [str(n) for n in report.extra]
    named = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
    return (
        f"the fixer's report answers problem{'s' if len(numbers) > 1 else ''} {named}, but its "
        f"assignment lists {given}: it answered some other list, so its fix is not accepted. Run "
        "the fixer again on its assignment (one line per problem listed there)"
    )
