"""A reply the Messages API backend cannot parse is a backend failure (issue
11, item 8): exit 3 with the reason, never "internal error", never NICE.

The scripted model server speaks the API correctly, so these replies come
from a small local HTTP stub (the `broken_api` fixture, conftest.py) that
answers every request with one broken event stream (or a body that is no
event stream at all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from santa_method.cli import main
from santa_method.state import log as runlog

from .broken_streams import BROKEN


@pytest.mark.parametrize("broken_api", sorted(BROKEN), indirect=True)
def test_a_reply_that_cannot_be_read_is_a_backend_error(
    project: Path, target: Path, broken_api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--against", str(target), "--spec-text", "Has a License.", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "cannot be read" in err and "internal error" not in err and "Traceback" not in err
    assert "NICE" not in out
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] == "ship"]


def test_a_batch_results_stream_that_cannot_be_read_is_exit_3(
    project: Path, stub_server, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same through `santa batch --backend anthropic-batch`: the results
    line of a Message Batch is JSON but no result."""
    from e2e.stub_server import REVIEWER, StubServer

    from .conftest import pass_reply

    items = project / "items"
    items.mkdir()
    for n in range(3):
        (items / f"note-{n}.md").write_text(f"Release note {n}.\n", encoding="utf-8")
    server = stub_server({REVIEWER: pass_reply()})
    monkeypatch.setattr(StubServer, "_batch_results", lambda self, batch: b"[1, 2, 3]\n")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    argv = ["batch", str(items), "--spec-text", "A release note.", "--quiet"]
    code = main([*argv, "--backend", "anthropic-batch"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "cannot be read" in err and "internal error" not in err and "Traceback" not in err
    assert "NICE" not in out
