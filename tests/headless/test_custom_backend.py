"""A user's own backend plugs in through the protocol alone (no SDK, no server)."""

from __future__ import annotations

import json

from santa_method.headless import verify_sync
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
    result = verify_sync("The README names the current year.", target, backend=backend)
    assert result.verdict == "NICE"
    assert result.rounds == 2
    assert "2024" in result.output and "1999" in target.read_text()
    assert result.cost_usd is None  # unknown cost is reported as unknown, never as 0
    assert any("budget cannot be enforced" in w for w in result.warnings)
    assert len({r.prefix for r in backend.requests}) == 1
