"""A scripted backend for runs in this process or a child one: reviewers
fail the year 1999, the fixer writes 2024 (or `new_year`). Importable by a
child process's script (the tests folder on its path), so a run killed in
a real process answers exactly as one in this process does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _reviews import output_of, review_of
from santa_method.core.errors import BackendError
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

CRITERIA = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)


def year_review(request: ReviewRequest) -> dict[str, Any]:
    """FAIL (completeness, quoting 1999) while the output holds 1999, else PASS."""
    canary = request.round_part.rstrip().rsplit("santa-canary: ", 1)[1]
    bad = "1999" in output_of(request.round_part)
    flags = [{"criterion": "completeness", "issue": "old year", "quote": "1999"}] if bad else []
    # Suggestions differ, as real reviews do.
    return review_of(CRITERIA, flags, detail=None, suggestions=[request.label], canary=canary)


class Scripted:
    """`fail_after_fix` is raised by reviewers of the fixed text; with
    `stop` (a marker path) a reviewer of round `stop_at` ("round-1" or
    "after-fix") writes the marker and waits to be killed."""

    name = "scripted"

    def __init__(
        self,
        fail_after_fix: BackendError | None = None,
        *,
        new_year: str = "2024",
        stop: Path | None = None,
        stop_at: str = "round-1",
    ) -> None:
        self.fail_after_fix = fail_after_fix
        self.new_year = new_year
        self.stop = stop
        self.stop_at = stop_at

    async def review(self, request: ReviewRequest) -> ReviewReply:
        fixed = "1999" not in output_of(request.round_part)
        if self.stop is not None and (self.stop_at == "round-1" or fixed):
            self.stop.write_text("reviewing", encoding="utf-8")
            await asyncio.sleep(3600)  # killed here
        if self.fail_after_fix is not None and fixed:
            raise self.fail_after_fix
        return ReviewReply(text=json.dumps(year_review(request)), tokens=Tokens(10, 5))

    async def fix(self, request: FixRequest) -> FixReply:
        return FixReply(output=request.output.replace("1999", self.new_year), notes="1. year")


CHILD = """
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from headless.scripted import Scripted
from santa_method.headless.api import VerifyOptions, verify_sync

target, new_year, stop, stop_at = sys.argv[2:6]
backend = Scripted(new_year=new_year, stop=Path(stop) if stop else None, stop_at=stop_at)
options = VerifyOptions(backend=backend, in_place=True, max_fixes=1)
print(verify_sync("The README names the current year.", Path(target), options=options).verdict)
"""


def child_command(
    folder: Path,
    target: Path,
    *,
    new_year: str = "2024",
    stop: Path | None = None,
    stop_at: str = "round-1",
) -> list[str]:
    """The command of a child process that runs `verify` in place on `target`."""
    import sys

    script = folder / "scripted_child.py"
    script.write_text(CHILD, encoding="utf-8")
    tests = Path(__file__).resolve().parent.parent
    return [
        sys.executable,
        str(script),
        str(tests),
        str(target),
        new_year,
        str(stop or ""),
        stop_at,
    ]
