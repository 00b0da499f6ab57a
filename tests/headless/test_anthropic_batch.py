"""The anthropic-batch backend against the scripted Message Batches endpoints.

Why these tests: the backend's promises are about what happens on the wire
(one batch per round, the same parameters as the anthropic backend, no
second batch after an interruption, no request at all for a stored
result), so each test counts the requests the stub recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from _reviews import output_of
from e2e.stub_server import FIXER, REVIEWER, Error, Json, StubServer, first_user_text
from santa_method.core.errors import BackendError, InputError
from santa_method.core.schema import strict_schema
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends import prices
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.headless.backends.anthropic_batch import AnthropicBatchBackend
from santa_method.headless.backends.base import ReviewReply, ReviewRequest, Tokens

from .conftest import CRITERIA, failing, pass_reply, passing

pytestmark = pytest.mark.timeout(60)

SPEC = "A README with the release year and a License section."
SCHEMA = strict_schema(CRITERIA)
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Stub usage: 100 input and 20 output tokens per reply, sonnet at 2 / 10 USD per million.
HALF_PRICE = prices.cost("claude-sonnet-5-5", Tokens(input=100, output=20)) * 0.5


def make(server: StubServer, state: Path, **options: Any) -> AnthropicBatchBackend:
    options.setdefault("poll_interval", 0.01)
    options.setdefault("gather_window", 0.05)
    return AnthropicBatchBackend(
        state_path=state, base_url=server.base_url, api_key="test", **options
    )


def review_request(item: str, label: str, canary: str, **extra: Any) -> ReviewRequest:
    return ReviewRequest(
        prefix="Instructions, the rubric and the spec, shared by every reviewer.\n",
        round_part=f"The output of item {item}.\nsanta-canary: {canary}",
        schema=SCHEMA,
        model="sonnet",
        label=label,
        **extra,
    )


def batch_creates(server: StubServer) -> list[Any]:
    return [r for r in server.requests if r.method == "POST" and r.path == "/v1/messages/batches"]


def retrieves(server: StubServer) -> list[Any]:
    return [
        r
        for r in server.requests
        if r.method == "GET" and re.fullmatch(r"/v1/messages/batches/[^/]+", r.path)
    ]


def direct_messages(server: StubServer) -> list[Any]:
    return [
        r
        for r in server.requests
        if r.method == "POST" and r.path == "/v1/messages" and r.batch_id is None
    ]


def run_reviews(backend: AnthropicBatchBackend, *requests: ReviewRequest) -> list[ReviewReply]:
    async def main() -> list[ReviewReply]:
        try:
            return list(await asyncio.gather(*(backend.review(r) for r in requests)))
        finally:
            await backend.aclose()

    return asyncio.run(main())


def canary_in(reply: ReviewReply) -> str:
    return json.loads(reply.text)["canary"]


def test_concurrent_reviews_of_two_items_go_out_as_one_batch(stub_server, tmp_path):
    server = stub_server({REVIEWER: pass_reply()})
    progress: list[dict[str, Any]] = []
    started: list[str] = []
    backend = make(server, tmp_path / "state.json", gather_window=0.2, on_progress=progress.append)
    requests = [
        review_request(
            item, label, canary, on_started=lambda i=item, lb=label: started.append(i + lb)
        )
        for item, canary in (("a", "aa01"), ("b", "bb02"))
        for label in ("B", "C")
    ]

    async def main() -> list[ReviewReply]:
        first = [asyncio.create_task(backend.review(r)) for r in requests[:2]]
        await asyncio.sleep(0.03)  # the other item's reviewers arrive a little later
        rest = [asyncio.create_task(backend.review(r)) for r in requests[2:]]
        try:
            return list(await asyncio.gather(*first, *rest))
        finally:
            await backend.aclose()

    replies = asyncio.run(main())

    creates = batch_creates(server)
    assert len(creates) == 1
    sent = creates[0].body["requests"]
    assert len(sent) == 4
    ids = [item["custom_id"] for item in sent]
    assert len(set(ids)) == 4 and all(CUSTOM_ID.match(i) for i in ids)
    # Exactly what the anthropic backend would send, minus streaming.
    plain = AnthropicBackend(api_key="test")
    assert [item["params"] for item in sent] == [plain._review_params(r) for r in requests]
    assert all("stream" not in item["params"] for item in sent)
    assert sent[0]["params"]["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert not direct_messages(server)
    for request, reply in zip(requests, replies, strict=True):
        review = json.loads(reply.text)
        assert review["verdict"] == "PASS"
        assert request.round_part.endswith(review["canary"])  # each result went to its request
        assert reply.tokens == Tokens(input=100, output=20)
        assert reply.cost_usd == pytest.approx(HALF_PRICE)
        assert reply.model == "claude-sonnet-5-5"
        assert reply.failure is None
    assert sorted(started) == ["aB", "aC", "bB", "bC"]
    assert progress and {e["batch_id"] for e in progress} == {
        server.requests_for(REVIEWER)[0].batch_id
    }
    assert progress[-1]["status"] == "ended" and progress[-1]["succeeded"] == 4
    assert {"processing", "succeeded", "errored", "requests"} <= progress[-1].keys()


def test_verify_reaches_nice_with_every_review_in_a_batch(stub_server, project, target):
    fixed = target.read_text().replace("1999", "2024")

    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999."))
        return Json(passing(body))

    server = stub_server(
        {REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": ["1. fixed: year"]})]}
    )
    backend = make(server, project / ".santa" / "batch-state.json")
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend, models=["sonnet", "haiku"])
    )

    assert result.verdict == "NICE" and result.rounds == 2
    assert result.backend == "anthropic-batch"
    reviews = server.requests_for(REVIEWER)
    assert len(reviews) == 4 and all(r.batch_id for r in reviews)
    creates = batch_creates(server)
    assert [len(c.body["requests"]) for c in creates] == [2, 2]  # one batch per round
    assert [r.role for r in direct_messages(server)] == [FIXER]  # the fixer is not batched
    haiku_half = prices.cost("claude-haiku-5-5", Tokens(input=100, output=20)) * 0.5
    fix_full = prices.cost("claude-sonnet-5-5", Tokens(input=100, output=20))
    assert result.cost_usd == pytest.approx(2 * (HALF_PRICE + haiku_half) + fix_full)


def test_resume_after_interruption_polls_the_same_batch(stub_server, tmp_path):
    server = stub_server({REVIEWER: pass_reply()}, batch_polls=4)
    state = tmp_path / "state.json"
    request = review_request("a", "B", "c0ffee")

    async def interrupted() -> None:
        backend = make(server, state)
        task = asyncio.create_task(backend.review(request))
        while not state.exists():
            await asyncio.sleep(0.005)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    saved = json.loads(state.read_text())
    [(batch_id, record)] = saved["batches"].items()
    assert record["status"] == "in_progress"
    [entry] = saved["requests"].values()
    assert entry["batches"] == [batch_id] and entry["result"] is None
    polls_before = len(retrieves(server))

    [reply] = run_reviews(make(server, state), request)

    assert canary_in(reply) == "c0ffee"
    assert len(batch_creates(server)) == 1  # not paid twice
    later = retrieves(server)[polls_before:]
    assert later and {r.path.rsplit("/", 1)[1] for r in later} == {batch_id}
    assert len(server.requests_for(REVIEWER)) == 1
    saved = json.loads(state.read_text())
    assert saved["batches"][batch_id]["status"] == "collected"
    assert next(iter(saved["requests"].values()))["result"]["content"]


def test_a_review_cancelled_before_its_batch_went_out_costs_nothing(stub_server, tmp_path):
    server = stub_server({REVIEWER: pass_reply()})
    backend = make(server, tmp_path / "state.json")

    async def main() -> None:
        task = asyncio.create_task(backend.review(review_request("a", "B", "abc123")))
        await asyncio.sleep(0.01)  # queued, inside the gather window
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.15)  # past the window: nothing left to send
        await backend.aclose()

    asyncio.run(main())
    assert not server.requests
    assert not (tmp_path / "state.json").exists()


def test_closing_a_shared_backend_waits_for_reviews_still_running(stub_server, tmp_path):
    # Runs of several items share one backend; the end of one must not break another.
    server = stub_server({REVIEWER: pass_reply()}, batch_polls=5)
    backend = make(server, tmp_path / "state.json")

    async def main() -> ReviewReply:
        task = asyncio.create_task(backend.review(review_request("a", "B", "abc123")))
        while not batch_creates(server):
            await asyncio.sleep(0.005)
        await backend.aclose()  # another run ended meanwhile
        reply = await task
        assert backend._client is None  # closed once the last review finished
        return reply

    assert canary_in(asyncio.run(main())) == "abc123"


def test_a_stored_result_is_answered_without_any_request(stub_server, tmp_path):
    server = stub_server({REVIEWER: pass_reply()})
    state = tmp_path / "state.json"
    request = review_request("a", "B", "abcdef")
    [first] = run_reviews(make(server, state), request)
    seen = len(server.requests)

    [again] = run_reviews(make(server, state), request)

    assert len(server.requests) == seen
    assert again == first
    assert again.cost_usd == pytest.approx(HALF_PRICE)


def test_the_same_request_twice_in_one_process_is_two_samples(stub_server, tmp_path):
    # A re-review of the same round sends identical parameters; it must not get
    # the old answer, while a resumed process replays both from the file.
    server = stub_server({REVIEWER: [pass_reply("first"), pass_reply("second")]})
    state = tmp_path / "state.json"
    request = review_request("a", "B", "abc123")
    backend = make(server, state)
    first = run_reviews(backend, request)[0]
    second = run_reviews(backend, request)[0]
    assert json.loads(first.text)["suggestions"] == ["first"]
    assert json.loads(second.text)["suggestions"] == ["second"]
    assert len(batch_creates(server)) == 2
    seen = len(server.requests)

    replay = make(server, state)
    assert [run_reviews(replay, request)[0], run_reviews(replay, request)[0]] == [first, second]
    assert len(server.requests) == seen


def test_same_parameters_from_two_reviewers_stay_two_reviews(stub_server, tmp_path):
    # Two reviewers on one model send byte-identical parameters: still two
    # requests, and a resumed process asking only C gets C's answer back.
    server = stub_server({REVIEWER: [pass_reply("one"), pass_reply("two")]})
    state = tmp_path / "state.json"
    b, c = review_request("a", "B", "abc123"), review_request("a", "C", "abc123")
    replies = run_reviews(make(server, state), b, c)
    [create] = batch_creates(server)
    assert len({item["custom_id"] for item in create.body["requests"]}) == 2
    assert sorted(json.loads(r.text)["suggestions"][0] for r in replies) == ["one", "two"]
    seen = len(server.requests)

    assert run_reviews(make(server, state), c) == [replies[1]]
    assert len(server.requests) == seen


def test_an_errored_result_is_sent_once_more(stub_server, tmp_path):
    server = stub_server({REVIEWER: [Error(500), pass_reply()]})
    state = tmp_path / "state.json"
    [reply] = run_reviews(make(server, state), review_request("a", "B", "abc123"))
    assert canary_in(reply) == "abc123"
    creates = batch_creates(server)
    assert len(creates) == 2
    assert (
        creates[0].body["requests"][0]["custom_id"] == creates[1].body["requests"][0]["custom_id"]
    )
    [entry] = json.loads(state.read_text())["requests"].values()
    assert [f["type"] for f in entry["failures"]] == ["errored"]
    assert entry["failures"][0]["error_type"] == "api_error"


def test_errored_twice_is_a_backend_error(stub_server, tmp_path):
    server = stub_server({REVIEWER: [Error(500), Error(529)]})
    with pytest.raises(BackendError, match=r"reviewer B failed twice.*overloaded_error"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))
    assert len(batch_creates(server)) == 2


def test_a_resumed_process_tries_a_twice_errored_request_again(stub_server, tmp_path):
    """Failures stored by an earlier process do not make --resume fail forever."""
    server = stub_server({REVIEWER: [Error(500), Error(529), pass_reply()]})
    state = tmp_path / "state.json"
    with pytest.raises(BackendError, match="failed twice"):
        run_reviews(make(server, state), review_request("a", "B", "abc123"))
    [reply] = run_reviews(make(server, state), review_request("a", "B", "abc123"))
    assert canary_in(reply) == "abc123"
    assert len(batch_creates(server)) == 3


def test_an_invalid_request_is_not_sent_again(stub_server, tmp_path):
    server = stub_server({REVIEWER: [Error(400, message="schema too complex"), pass_reply()]})
    with pytest.raises(BackendError, match="schema too complex"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))
    assert len(batch_creates(server)) == 1


class _RefusingStub(StubServer):
    """A stub whose batch endpoints refuse the key (the scripted one checks no key)."""

    def _route(self, handler: Any, record: Any) -> None:
        if record.path.startswith("/v1/messages/batches"):
            return self._send_error(handler, record, Error(401))
        return super()._route(handler, record)


def test_401_is_a_backend_error_naming_the_credentials(tmp_path):
    with _RefusingStub({REVIEWER: pass_reply()}) as server:
        with pytest.raises(BackendError, match=r"credentials.*ANTHROPIC_API_KEY"):
            run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc"))
        assert len(batch_creates(server)) == 1  # 401 is not retried
    assert not (tmp_path / "state.json").exists()


def test_a_damaged_state_file_is_an_input_error(tmp_path):
    state = tmp_path / "state.json"
    state.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="damaged"):
        AnthropicBatchBackend(state_path=state, api_key="test")


@pytest.mark.parametrize(
    "body",
    [
        b"{not json\n",
        b"[1, 2, 3]\n",
        b'"a string"\n',
        None,  # the request's own id, and no result
    ],
    ids=["broken-json", "an-array", "a-string", "no-result"],
)
def test_a_results_stream_that_cannot_be_read_is_a_backend_error(
    stub_server, tmp_path, monkeypatch, body
):
    server = stub_server({REVIEWER: pass_reply()})

    def results(self: StubServer, batch: Any) -> bytes:
        return body or json.dumps({"custom_id": batch.results[0]["custom_id"]}).encode() + b"\n"

    monkeypatch.setattr(StubServer, "_batch_results", results)
    with pytest.raises(BackendError, match="cannot be read"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))


def test_a_fault_in_santas_own_bookkeeping_is_not_blamed_on_the_api(
    stub_server, tmp_path, monkeypatch
):
    # Only the SDK's parsing of the stream is the API's to fail (exit 3): a bug
    # in how santa records a result must stay an internal error, seen as one.
    server = stub_server({REVIEWER: pass_reply()})

    def broken(self: AnthropicBatchBackend, *args: Any) -> None:
        raise KeyError("requests")

    monkeypatch.setattr(AnthropicBatchBackend, "_outcome", broken)
    with pytest.raises(KeyError, match="requests"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))


def test_a_result_with_a_negative_usage_is_a_backend_error(stub_server, tmp_path, monkeypatch):
    server = stub_server({REVIEWER: pass_reply()})
    real = StubServer._batch_results

    def negative(self: StubServer, batch: Any) -> bytes:
        lines = [json.loads(line) for line in real(self, batch).decode().splitlines()]
        for line in lines:
            line["result"]["message"]["usage"]["output_tokens"] = -10_000_000
        return "".join(json.dumps(line) + "\n" for line in lines).encode()

    monkeypatch.setattr(StubServer, "_batch_results", negative)
    with pytest.raises(BackendError, match=r"cannot be read.*output_tokens"):
        run_reviews(make(server, tmp_path / "state.json"), review_request("a", "B", "abc123"))
