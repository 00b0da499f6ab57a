"""The one builder of reviewer replies (`review_of`, `review_reply`) and its
shorthands, for every test that scripts a reviewer.

Kept apart from conftest.py so the tests that need them import them by name
and nothing else changes under them. Everything here builds plain dicts and
text, never calls the code under test, so a test's expectation cannot come
from the code it checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from santa_method.core.types import Criterion, Rubric

BASE_IDS: tuple[str, ...] = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)

# A small output in the spirit of examples/output.md, used to verify quotes.
OUTPUT = """# tally

tally counts lines, words and bytes in your files. Current version: 2.0.

## Usage

    tally --lines notes.txt      # prints the number of lines
    tally --chars notes.txt      # prints the number of characters

tally reads standard input when no file is given, and
it is the fastest counter available on any platform.
"""


def rubric(ids: Iterable[str] = BASE_IDS, name: str = "base") -> Rubric:
    """A rubric built from ids alone (the loader is not under test here)."""
    return Rubric(
        name,
        tuple(
            Criterion(cid, cid.replace("-", " "), f"{cid} holds", (f"{cid} broken",)) for cid in ids
        ),
    )


def check(criterion: str, result: str = "PASS", detail: str = "") -> dict[str, Any]:
    return {"criterion": criterion, "result": result, "detail": detail}


Detail = str | Callable[[str, str], str] | None


def review_of(
    criteria: Iterable[str] = BASE_IDS,
    issues: Iterable[Any] = (),
    *,
    failing: Iterable[str] | None = None,
    verdict: str | None = None,
    detail: Detail = "ok",
    suggestions: Iterable[str] | None = (),
    canary: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The one builder of a review: a check per criterion, then the issues.

    A check fails when its criterion is in `failing`, which defaults to the
    criteria the issues name, and the verdict defaults to FAIL when a check
    fails or an issue is given. `detail` is every check's detail, or a
    function of (criterion, result), or None for checks without one. A
    `suggestions` or `canary` of None leaves the field out, as some
    reviewers do; `extra` fields follow the canary.
    """
    found = list(issues)
    if failing is None:
        failed = {i["criterion"] for i in found if isinstance(i, Mapping) and "criterion" in i}
    else:
        failed = set(failing)
    checks: list[dict[str, Any]] = []
    for cid in criteria:
        result = "FAIL" if cid in failed else "PASS"
        entry: dict[str, Any] = {"criterion": cid, "result": result}
        if detail is not None:
            entry["detail"] = detail if isinstance(detail, str) else detail(cid, result)
        checks.append(entry)
    review: dict[str, Any] = {
        "verdict": verdict or ("FAIL" if failed or found else "PASS"),
        "checks": checks,
        "critical_issues": found,
    }
    if suggestions is not None:
        review["suggestions"] = list(suggestions)
    if canary is not None:
        review["canary"] = canary
    review.update(extra)
    return review


def review_reply(*args: Any, **kwargs: Any) -> str:
    """`review_of(...)` as the bare JSON text a reviewer replies with."""
    return json.dumps(review_of(*args, **kwargs))


def pass_review(
    ids: Iterable[str] = BASE_IDS,
    *,
    canary: str | None = None,
    suggestions: Iterable[str] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A PASS review: every check passes, no critical issue."""
    return review_of(
        ids,
        failing=(),
        detail=lambda cid, _: f"{cid} is fine",
        suggestions=suggestions,
        canary=canary,
        **extra,
    )


def fail_review(
    failing: Mapping[str, str] | Iterable[str],
    issues: Iterable[Any] = (),
    *,
    ids: Iterable[str] = BASE_IDS,
    canary: str | None = None,
    suggestions: Iterable[str] = (),
) -> dict[str, Any]:
    """A FAIL review whose `failing` criteria fail (with the given details)."""
    details = dict(failing) if isinstance(failing, Mapping) else dict.fromkeys(failing, "")
    return review_of(
        ids,
        issues,
        failing=details,
        verdict="FAIL",
        detail=lambda cid, _: details.get(cid, ""),
        suggestions=suggestions,
        canary=canary,
    )


def issue(
    criterion: str | None,
    text: str,
    *,
    quote: str | None = None,
    missing: str | None = None,
    location: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"issue": text}
    if criterion is not None:
        out["criterion"] = criterion
    if quote is not None:
        out["quote"] = quote
    if missing is not None:
        out["missing"] = missing
    if location is not None:
        out["location"] = location
    return out


def reply(obj: Any, style: str = "plain") -> str:
    """A raw reply the way reviewers write them: bare, fenced, or in prose."""
    body = json.dumps(obj, indent=2, ensure_ascii=False)
    if style == "plain":
        return body
    if style == "fenced":
        return f"Here is my review.\n\n```json\n{body}\n```\n"
    if style == "prose":
        return f"I read the assignment to the end.\n{body}\nThat is all."
    raise ValueError(style)


_FENCE = re.compile(r"<<<OUTPUT (\S+)\n(.*?)OUTPUT \1>>>", re.S)


def output_of(assignment: str) -> str:
    """The output a reviewer's assignment fences, as a scripted reviewer
    should read it: the assignment's run id, fence token and canary are
    random hex, which can hold any four digits ('1999') by chance."""
    found = _FENCE.search(assignment)
    assert found, "a reviewer's assignment fences the output under review"
    return found.group(2)
