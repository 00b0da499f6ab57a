"""The results of a Message Batch whose connection breaks before they end
(issue 11, item 8).

The server declares a longer JSONL body than it sends and closes the
connection while the results stream in (reported by each generation of
the SDK in its own way, `sdk_cut_errors`). The download is started again; when every try
is cut, `santa batch` ends with exit 3 and the reason, never "internal
error", and the batch stays resumable: `--resume` collects the same
Message Batch, never paying for it twice.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER, StubServer, hang_up
from santa_method.cli import main
from santa_method.core.errors import BackendError
from santa_method.headless.backends import anthropic as anthropic_backend

from .batch_helpers import notes_batch
from .conftest import pass_reply
from .test_anthropic_batch import batch_creates, make, review_request, run_reviews

pytestmark = pytest.mark.timeout(60)

JSONL = "application/x-jsonl"


class Cuts:
    """Cut the next `count` results downloads (every one while `count` is None)
    after their first line, on a body that declared itself longer."""

    def __init__(self, count: int | None) -> None:
        self.count = count
        self.made = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            cut = self.count is None or self.count > 0
            if cut:
                self.made += 1
                if self.count is not None:
                    self.count -= 1
            return cut


def cut_results(monkeypatch: pytest.MonkeyPatch, count: int | None = None) -> Cuts:
    monkeypatch.setattr(anthropic_backend, "CUT_RETRY_DELAY", 0.0)
    cuts = Cuts(count)
    real = StubServer._send_bytes

    def send(
        self: StubServer,
        handler: Any,
        record: Any,
        status: int,
        data: bytes,
        content_type: str,
        extra: Any = None,
    ) -> None:
        if content_type != JSONL or not cuts.take():
            return real(self, handler, record, status, data, content_type, extra)
        first = data.split(b"\n", 1)[0] + b"\n"
        record.status = status
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data) + 1000))
        handler.end_headers()
        handler.wfile.write(first)
        handler.wfile.flush()
        hang_up(handler)
        return None

    monkeypatch.setattr(StubServer, "_send_bytes", send)
    return cuts


def result_downloads(server: StubServer) -> list[Any]:
    return [r for r in server.requests if r.method == "GET" and r.path.endswith("/results")]


def test_santa_batch_with_its_results_cut_is_exit_3_and_resumes_the_same_batch(
    stub_server,
    project: Path,
    monkeypatch,
    capsys: pytest.CaptureFixture[str],
    sdk_cut_errors: str,
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    cuts = cut_results(monkeypatch)
    argv = notes_batch(project, server.base_url, monkeypatch, 3)

    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "broke before its reply ended" in err and "on each of 3 tries" in err
    assert "--resume" in err
    assert "internal error" not in err and "Traceback" not in err
    assert "NICE" not in out and "ACCEPTED" not in out
    assert cuts.made == 3 and len(result_downloads(server)) == 3

    cuts.count = 0  # the connection holds from now on
    code = main([*argv, "--resume"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("ACCEPTED")
    assert len(batch_creates(server)) == 1  # the same Message Batch, never paid twice


def test_results_cut_once_are_downloaded_again(
    stub_server, tmp_path: Path, monkeypatch, sdk_cut_errors: str
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    cuts = cut_results(monkeypatch, count=1)
    backend = make(server, tmp_path / "state.json")
    requests = [review_request(item, label, "abc123") for item in "ab" for label in "BC"]
    replies = run_reviews(backend, *requests)
    assert len(replies) == 4 and all(reply.failure is None for reply in replies)
    assert cuts.made == 1 and len(result_downloads(server)) == 2
    assert len(batch_creates(server)) == 1


def test_results_cut_on_every_try_leave_the_batch_to_collect_again(
    stub_server, tmp_path: Path, monkeypatch, sdk_cut_errors: str
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    cut_results(monkeypatch)
    state = tmp_path / "state.json"
    requests = [review_request(item, "B", "abc123") for item in "ab"]
    with pytest.raises(BackendError, match=r"broke before its reply ended.*Message Batch"):
        run_reviews(make(server, state, max_retries=0), *requests)
    kept = json.loads(state.read_text(encoding="utf-8"))
    (record,) = kept["batches"].values()
    assert record["status"] != "collected"  # a resume collects it again
    assert len(result_downloads(server)) == 1
