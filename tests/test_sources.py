"""One provenance check per source of reviews (state/sources.py)."""

from __future__ import annotations

import pytest

from santa_method.claude_code import provenance
from santa_method.state import sources


def _state(source: str) -> dict:
    return {"source": source, "rounds": [{"instruction": "i", "assignment": "/nowhere"}]}


def test_each_source_has_its_check() -> None:
    assert sources.provenance_problem(_state("api"), {"agent_id": "a", "reply": "r"}) is None
    assert sources.provenance_problem(_state("files"), {"file": "f", "reply": "r"}) is None
    assert (
        sources.provenance_problem(_state("hook"), {"file": "f", "reply": "r"})
        == "the reply did not come through the reviewer hook"
    )
    # A hook-stored reply is checked against its transcript, in hook and files runs alike.
    for source in ("hook", "files"):
        assert sources.provenance_problem(_state(source), {"agent_id": "a", "reply": "r"}) == (
            "no transcript was recorded for this reply"
        )


def test_a_source_without_a_check_lets_no_reply_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sources._CHECKS, "hook")
    problem = sources.provenance_problem(_state("hook"), {"agent_id": "a", "reply": "r"})
    assert problem is not None and "no check" in problem


def test_only_known_sources_take_a_check() -> None:
    with pytest.raises(ValueError, match="not a source"):
        sources.register("email", provenance.hook_provenance)
