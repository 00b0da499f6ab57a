"""A Message Batch result whose usage cannot be read is a backend error
(issue 11, item 8), like a negative one: a count that is NaN, infinite,
null, text or missing would be counted as 0 tokens and under-count the
cost a budget is held to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER, StubServer
from santa_method.core.errors import BackendError

from .conftest import pass_reply
from .test_anthropic_batch import make, review_request, run_reviews

pytestmark = [
    pytest.mark.timeout(60),
    # The SDK warns as it serializes the bad counts these tests send on purpose.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]

MISSING = object()


def usage_set_to(monkeypatch: pytest.MonkeyPatch, key: str, value: Any) -> None:
    real = StubServer._batch_results

    def results(self: StubServer, batch: Any) -> bytes:
        lines = [json.loads(line) for line in real(self, batch).decode().splitlines()]
        for line in lines:
            message = line["result"]["message"]
            if key == "usage":
                del message["usage"]
            elif value is MISSING:
                del message["usage"][key]
            else:
                message["usage"][key] = value
        return "".join(json.dumps(line) + "\n" for line in lines).encode()

    monkeypatch.setattr(StubServer, "_batch_results", results)


@pytest.mark.parametrize("key", ["output_tokens", "input_tokens"])
@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), None, MISSING, "lots", 1.5],
    ids=["nan", "infinity", "null", "missing", "text", "fraction"],
)
def test_a_result_whose_usage_cannot_be_read_is_a_backend_error(
    stub_server, tmp_path: Path, monkeypatch, key: str, value: Any
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    usage_set_to(monkeypatch, key, value)
    with pytest.raises(BackendError, match=rf"cannot be read.*{key}"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))


def test_a_result_without_usage_is_a_backend_error(
    stub_server, tmp_path: Path, monkeypatch
) -> None:
    server = stub_server({REVIEWER: pass_reply()})
    usage_set_to(monkeypatch, "usage", None)
    with pytest.raises(BackendError, match=r"cannot be read.*usage"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))


@pytest.mark.parametrize("key", ["cache_read_input_tokens", "cache_creation_input_tokens"])
def test_cache_counts_may_be_absent(stub_server, tmp_path: Path, monkeypatch, key: str) -> None:
    # Nothing cached: the API leaves these out or null, and that is 0.
    server = stub_server({REVIEWER: pass_reply()})
    usage_set_to(monkeypatch, key, None)
    (reply,) = run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc"))
    assert reply.tokens.input == 100 and reply.tokens.output == 20


def test_a_stored_result_that_cannot_be_read_stops_the_batch_not_shipped(
    stub_server, project: Path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its tokens cannot be read, so the batch cannot count them against the
    # budget: it stops (exit 3) with the reason, and nothing is accepted.
    from santa_method.cli import main

    items = project / "items"
    items.mkdir()
    (items / "note.md").write_text("Release note.\n", encoding="utf-8")
    server = stub_server({REVIEWER: pass_reply()})
    usage_set_to(monkeypatch, "output_tokens", "lots")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    argv = ["batch", str(items), "--spec-text", "A release note.", "--quiet"]
    argv += ["--backend", "anthropic-batch"]

    for run in (argv, [*argv, "--resume"]):
        code = main(run)
        out, err = capsys.readouterr()
        assert code == 3, out + err
        assert "cannot be read" in out + err and "ACCEPTED" not in out
        assert "Traceback" not in err and "internal error" not in err
