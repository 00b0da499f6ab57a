"""The `openai` backend against a scripted Chat Completions API on loopback
(`openai_stub.py`): what it sends, what it counts, and every fault it meets
(429, 5xx, timeouts, cut streams, garbage) ends retried or in exit 3, never
in a verdict."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from _reviews import output_of
from santa_method.cli import main
from santa_method.core.errors import BackendError, InputError, StartError
from santa_method.core.schema import strict_schema
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends import openai as openai_backend
from santa_method.headless.backends.base import FixRequest, ReviewReply, ReviewRequest, Tokens
from santa_method.headless.backends.calls import FIX_SCHEMA, REVIEWER_SYSTEM
from santa_method.headless.backends.openai import OpenAIBackend
from santa_method.state import log as runlog

from .conftest import CRITERIA, failing, passing
from .openai_stub import (
    FIXER,
    REVIEWER,
    Cut,
    Disconnect,
    EndEarly,
    Error,
    Json,
    Raw,
    Reply,
    Text,
    Usage,
    first_user_text,
)

pytestmark = pytest.mark.timeout(120)

SPEC = "A README with the release year and a License section."
# gpt-5.1's list price: 1.25 in, 10 out, 0.125 a cached token, per million.
STUB_COST = (100 * 1.25 + 20 * 10) / 1e6


@pytest.fixture(autouse=True)
def _no_wait_between_cut_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_backend, "CUT_RETRY_DELAY", 0.0)


def request(**changes: Any) -> ReviewRequest:
    fields: dict[str, Any] = {
        "prefix": "Instructions, the rubric and the spec.\n",
        "round_part": "The output.\nsanta-canary: abc123",
        "schema": strict_schema(CRITERIA),
        "model": "gpt-5.1",
        "label": "B",
    }
    fields.update(changes)
    return ReviewRequest(**fields)


def review(backend: OpenAIBackend, *requests: ReviewRequest) -> list[ReviewReply]:
    async def call() -> list[ReviewReply]:
        try:
            return [await backend.review(r) for r in requests or (request(),)]
        finally:
            await backend.aclose()

    return asyncio.run(call())


def backend_for(server: Any, **options: Any) -> OpenAIBackend:
    return OpenAIBackend(base_url=server.base_url, api_key="test", **options)


# -- what it sends and counts ---------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_a_review_is_one_chat_completion_with_the_strict_schema(openai_stub, stream: bool) -> None:
    server = openai_stub({REVIEWER: [Json({"verdict": "PASS"})]})
    (reply,) = review(backend_for(server, stream=stream))
    assert json.loads(reply.text) == {"verdict": "PASS"}
    assert reply.tokens == Tokens(input=100, output=20)
    assert reply.cost_usd == pytest.approx(STUB_COST)
    assert reply.model == "gpt-5.1-2025-11-13"  # what answered, a dated snapshot of gpt-5.1
    (sent,) = server.requests_for(REVIEWER)
    body = sent.body
    assert sent.headers["authorization"] == "Bearer test"
    assert body["model"] == "gpt-5.1"
    system, user = body["messages"]
    # The shared prefix first, byte for byte; the output and canary last.
    assert system == {
        "role": "system",
        "content": REVIEWER_SYSTEM + "\n\nInstructions, the rubric and the spec.\n",
    }
    assert user == {"role": "user", "content": "The output.\nsanta-canary: abc123"}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "santa_review", "schema": strict_schema(CRITERIA), "strict": True},
    }
    assert body["max_completion_tokens"] == 16000
    if stream:
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    else:
        assert not body.get("stream") and "stream_options" not in body


def test_cached_prompt_tokens_are_cache_reads_at_their_price(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Reply(Json({}), usage=Usage(1000, 10, 600))]})
    (reply,) = review(backend_for(server))
    assert reply.tokens == Tokens(input=400, output=10, cache_read=600)
    assert reply.cost_usd == pytest.approx((400 * 1.25 + 600 * 0.125 + 10 * 10) / 1e6)


def test_a_price_the_project_gives_is_used_and_an_unknown_one_is_none(openai_stub) -> None:
    script = {REVIEWER: [Reply(Json({}), model="llama3.1:8b")] * 3}
    server = openai_stub(script)
    free = backend_for(server, prices={"llama3.1:8b": openai_backend.prices.Price(0, 0)})
    (reply,) = review(free, request(model="llama3.1:8b"))
    assert reply.cost_usd == 0.0
    (reply,) = review(backend_for(server), request(model="llama3.1:8b"))
    assert reply.cost_usd is None  # no price: with a budget, the loop stops before it spends
    (reply,) = review(backend_for(server), request(model="gpt-5.1"))
    assert reply.cost_usd == pytest.approx(STUB_COST)  # priced as asked for, whoever answered


def test_a_reply_without_usage_has_no_cost_unless_the_model_is_free(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Reply(Json({}), usage=None)] * 2})
    (priced,) = review(backend_for(server))
    assert priced.tokens == Tokens() and priced.cost_usd is None
    free = backend_for(server, prices={"gpt-5.1": openai_backend.prices.Price(0, 0)})
    (local,) = review(free)
    assert local.cost_usd == 0.0


@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        (Reply(refusal="I cannot help with that."), "refused"),
        (Reply(Text('{"verdict": "PA'), finish_reason="length"), "cut off at its token limit"),
        (Reply(Text(""), finish_reason="content_filter"), "content filter"),
    ],
)
def test_a_reply_that_is_no_review_is_a_failure_not_a_verdict(
    openai_stub, reply: Reply, failure: str
) -> None:
    server = openai_stub({REVIEWER: [reply]})
    (answer,) = review(backend_for(server))
    assert answer.failure is not None and failure in answer.failure


# -- endpoints that lack a feature ------------------------------------------------


def test_an_endpoint_without_structured_output_is_asked_again_once_and_remembered(
    openai_stub,
) -> None:
    server = openai_stub({REVIEWER: [Json({"verdict": "PASS"})] * 2}, structured=False)
    backend = backend_for(server)
    first, second = review(backend, request(), request(label="C"))
    assert json.loads(first.text) == json.loads(second.text) == {"verdict": "PASS"}
    statuses = [(r.status, "response_format" in r.body) for r in server.requests_for(REVIEWER)]
    # One refusal, then every call without the format: the reply is validated all the same.
    assert statuses == [(400, True), (200, False), (200, False)]
    assert backend.structured_output is False


def test_an_endpoint_that_knows_only_max_tokens_gets_it(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Json({})] * 2}, legacy_tokens=True)
    review(backend_for(server), request(), request())
    limits = [
        ("max_completion_tokens" in r.body, r.body.get("max_tokens"))
        for r in server.requests_for(REVIEWER)
    ]
    assert limits == [(True, None), (False, 16000), (False, 16000)]


def test_another_bad_request_is_not_retried(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Error(400, "messages: too many")]})
    with pytest.raises(BackendError, match=r"failed \(400\): messages: too many"):
        review(backend_for(server))
    assert len(server.requests_for(REVIEWER)) == 1


# -- faults ----------------------------------------------------------------------


def test_429_and_5xx_are_retried_by_the_sdk(openai_stub) -> None:
    server = openai_stub(
        {REVIEWER: [Error(429, "slow down", retry_after=0.01), Error(503), Json({"ok": 1})]}
    )
    (reply,) = review(backend_for(server))
    assert json.loads(reply.text) == {"ok": 1}
    assert [r.status for r in server.requests_for(REVIEWER)] == [429, 503, 200]


FAULTS = {
    "429": (
        Error(429, "quota", retry_after=0.01),
        r"rate limiting \(429\) after 2 retries: quota",
        3,
    ),
    "500": (Error(500, "oops"), r"failed \(500\): oops", 3),
    "401": (Error(401), r"refused the credentials \(401\): check OPENAI_API_KEY", 1),
    "404": (Error(404, "model 'x' not found"), r"failed \(404\): model 'x' not found", 1),
    "disconnect": (
        Disconnect(),
        r"^cannot reach the OpenAI-compatible API at http://127\.0\.0\.1",
        3,
    ),
    "cut": (Cut(2), r"broke before its reply ended .*, on each of 3 tries$", 3),
    "ends-early": (EndEarly(), r"stream ended before its reply did, on each of 3 tries$", 3),
    "not-json": (Raw(b"data: {not json\n\n"), r"cannot be read \(JSONDecodeError", 1),
    "html": (
        Raw(b"<html>502 Bad Gateway</html>", "text/html"),
        r"cannot be read \(a body of type text/html, not an event stream",
        1,
    ),
    "error-event": (
        Raw(b'data: {"error": {"message": "overloaded"}}\n\n'),
        r"reported an error in its reply: overloaded",
        1,
    ),
    "negative-usage": (
        Reply(Json({}), usage=Usage(-5)),
        r"cannot be read: usage prompt_tokens must be",
        1,
    ),
    "fractional-usage": (
        Reply(Json({}), usage=Usage(10, 1.5)),
        r"cannot be read: usage completion_tokens must be",
        1,
    ),
    "null-usage": (
        Reply(Json({}), usage=Usage(10, None)),
        r"cannot be read: usage completion_tokens must be",
        1,
    ),
    "text-usage": (
        Reply(Json({}), usage=Usage(10, "lots")),
        r"cannot be read: usage completion_tokens must be",
        1,
    ),
    "huge-usage": (
        Reply(Json({}), usage=Usage(10, 10**20)),
        r"cannot be read: usage completion_tokens must be",
        1,
    ),
    "cached-over-prompt": (
        Reply(Json({}), usage=Usage(10, 1, 11)),
        r"more cached tokens \(11\) than prompt tokens",
        1,
    ),
}
# A call that is not streamed meets some faults differently: a body that
# stops is the SDK's to retry (it never began for santa), and a body that is
# no completion cannot be read.
WHOLE = {
    "cut": (r"^cannot reach the OpenAI-compatible API at .*RemoteProtocolError", 3),
    "ends-early": (r"cannot be read \(", 1),
    "not-json": (r"cannot be read \(", 1),
    "html": (r"cannot be read \(AttributeError", 1),
    "error-event": (r"cannot be read \(", 1),
}


@pytest.mark.parametrize("case", FAULTS)
@pytest.mark.parametrize("stream", [True, False])
def test_every_fault_is_a_backend_error_after_the_retries_it_deserves(
    openai_stub, case: str, stream: bool
) -> None:
    fault, message, tries = FAULTS[case]
    if not stream and case in WHOLE:
        message, tries = WHOLE[case]
    server = openai_stub({REVIEWER: lambda body: fault})
    with pytest.raises(BackendError, match=message):
        review(backend_for(server, stream=stream))
    assert len(server.requests_for(REVIEWER)) == tries


def test_a_cut_stream_is_sent_again_and_counted_as_a_whole_call(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Cut(2), Json({"ok": 1})]})
    (reply,) = review(backend_for(server))
    assert json.loads(reply.text) == {"ok": 1}
    assert len(server.requests_for(REVIEWER)) == 2
    # The cut try reported no usage (it comes last): it is counted as what the
    # answered try cost, which never under-counts a budget.
    assert reply.tokens == Tokens(input=200, output=40)
    assert reply.cost_usd == pytest.approx(2 * STUB_COST)


def test_a_slow_reply_times_out(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Reply(Json({}), delay=3)] * 2})
    with pytest.raises(BackendError, match=r"timed out \(after 0\.5s per call\)"):
        review(backend_for(server, max_retries=1), request(timeout=0.5))
    assert len(server.requests_for(REVIEWER)) == 2  # the SDK retries a timeout


def test_no_key_for_a_remote_endpoint_is_named_before_anything_runs(project, target) -> None:
    backend = OpenAIBackend(base_url="https://api.example.test/v1")
    with pytest.raises(
        StartError, match=r"no credentials for https://api\.example\.test/v1.*OPENAI_API_KEY"
    ):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend, models=["gpt-5.1"]))


def test_a_server_on_this_machine_needs_no_key(openai_stub) -> None:
    server = openai_stub({REVIEWER: [Json({})]})
    review(OpenAIBackend(base_url=server.base_url))
    (sent,) = server.requests_for(REVIEWER)
    assert sent.headers["authorization"] == "Bearer local"


def test_a_backend_without_a_model_is_refused_before_any_call(openai_stub, project, target) -> None:
    server = openai_stub({REVIEWER: [Json({})]})
    with pytest.raises(
        InputError, match="reviewer B uses the openai backend, which has no default model"
    ):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend_for(server)))
    assert server.requests == []


# -- runs ----------------------------------------------------------------------------


def year_reviewer(body: dict[str, Any]) -> Json:
    if "1999" in output_of(first_user_text(body)):
        return Json(failing(body, "Released in 1999."))
    return Json(passing(body))


def test_a_run_reviews_re_asks_and_fixes_through_the_endpoint(openai_stub, project, target) -> None:
    fixed = target.read_text().replace("1999", "2024")
    asked: list[int] = []

    def reviewer(body: dict[str, Any]) -> Any:
        asked.append(len(body["messages"]))
        if len(body["messages"]) == 2 and len(asked) == 1:
            return Text("I think it is fine.")  # no review: handed back with the errors
        return year_reviewer(body)

    server = openai_stub(
        {REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": ["1. fixed: year"]})]}
    )
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(backend=backend_for(server), models=["gpt-5.1", "gpt-5-mini"]),
    )
    assert result.verdict == "NICE" and result.rounds == 2
    assert result.output == fixed
    re_asked = [r.body for r in server.requests_for(REVIEWER) if len(r.body["messages"]) == 4]
    (turns,) = re_asked
    assert [m["role"] for m in turns["messages"]] == ["system", "user", "assistant", "user"]
    assert turns["messages"][2]["content"] == "I think it is fine."
    assert "not valid and was not counted" in turns["messages"][3]["content"]
    (fix,) = server.requests_for(FIXER)
    assert fix.body["model"] == "gpt-5.1"  # the first reviewer's model fixes
    assert fix.body["response_format"]["json_schema"] == {
        "name": "santa_fix",
        "schema": FIX_SCHEMA,
        "strict": True,
    }
    assert "Released in 1999." in first_user_text(fix.body)
    models = {r.body["model"] for r in server.requests_for(REVIEWER)}
    assert models == {"gpt-5.1", "gpt-5-mini"}
    assert result.cost_usd is not None and result.cost_usd > 0


def test_a_fixer_reply_that_is_no_json_twice_is_exit_3(openai_stub) -> None:
    server = openai_stub({FIXER: [Text("here you go"), Text("still prose")]})
    backend = backend_for(server)

    async def call() -> None:
        try:
            await backend.fix(
                FixRequest(assignment="Fix it.", target_path="x", output="y", model="gpt-5.1")
            )
        finally:
            await backend.aclose()

    with pytest.raises(BackendError, match="did not return the corrected output as JSON"):
        asyncio.run(call())
    assert len(server.requests_for(FIXER)) == 2


@pytest.mark.parametrize("fault", [Error(500), Cut(1), Raw(b"data: {broken\n\n")])
def test_santa_run_on_a_failing_endpoint_is_exit_3_and_never_ships(
    openai_stub, project: Path, target: Path, monkeypatch, capsys, fault: Any
) -> None:
    server = openai_stub({REVIEWER: lambda body: fault})
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    code = main(
        [
            "run",
            "--against",
            str(target),
            "--spec-text",
            SPEC,
            "--backend",
            "openai",
            "--models",
            "gpt-5.1,gpt-5-mini",
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "OpenAI-compatible API" in err and "Traceback" not in err
    assert "NICE" not in out
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert [r["event"] for r in records] == ["run", "escalate"]


def test_santa_run_with_the_openai_backend_ships_a_clean_file(
    openai_stub, project: Path, target: Path, monkeypatch, capsys
) -> None:
    target.write_text(target.read_text().replace("1999", "2024"))
    server = openai_stub({REVIEWER: year_reviewer})
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    code = main(
        [
            "run",
            "--against",
            str(target),
            "--spec-text",
            SPEC,
            "--backend",
            "openai",
            "--models",
            "gpt-5.1,gpt-5-mini",
            "--budget-usd",
            "1",
            "--json",
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["verdict"] == "NICE" and result["backend"] == "openai"
    assert result["cost_usd"] == pytest.approx(STUB_COST + (100 * 0.25 + 20 * 2) / 1e6)
