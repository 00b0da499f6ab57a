"""The scripted model server, against the real clients that will talk to it.

Why real clients: the stub is only useful if the ``anthropic`` SDK and the
Claude Code CLI accept what it sends, retry when the real API would make
them retry, and send what the module docstring of ``stub_server`` claims
(roles, subagent requests, notifications). Each CLI test takes about a
second.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest

from .stub_server import (
    FIXER,
    MAIN,
    OTHER,
    REVIEWER,
    SIDE,
    Classifier,
    Disconnect,
    Error,
    Json,
    PerAgent,
    Reply,
    ScriptError,
    StubServer,
    Text,
    ToolUse,
    Usage,
    WaitUntil,
    all_text,
    first_user_text,
    is_task_notification,
    iter_sse,
    last_tool_result_text,
    last_user_text,
    notified,
    system_text,
    task_notifications,
    tool_calls,
    tool_names,
)

MODEL = "claude-sonnet-5-5"
USER = [{"role": "user", "content": "hello"}]


def client(server: StubServer, **options: Any) -> anthropic.Anthropic:
    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=server.base_url, api_key="test", **options)


def post(server: StubServer, path: str, payload: Any, headers: dict[str, str] | None = None):
    """A raw request, to see the wire format the SDKs hide."""
    request = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


# --------------------------------------------------------------------------
# anthropic SDK


def test_text_reply_and_recorded_request(stub_server):
    server = stub_server({MAIN: [Text("scripted hello")]})
    message = client(server).messages.create(
        model=MODEL, max_tokens=1000, system="be brief", messages=USER
    )
    assert message.content[0].text == "scripted hello"
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    (request,) = server.requests
    assert (request.method, request.path, request.role, request.status) == (
        "POST",
        "/v1/messages",
        MAIN,
        200,
    )
    assert (
        request.headers["authorization"] == "Bearer test"
    )  # anthropic 2.x; the CLI sends x-api-key
    assert request.body["system"] == "be brief"
    assert last_user_text(request.body) == "hello"
    assert request.arrived <= request.finished
    assert server.remaining() == {}


def test_usage_is_configurable_per_server_and_per_reply(stub_server):
    server = stub_server(
        {MAIN: ["a", Reply("b", usage=Usage(7, 3, cache_read_input_tokens=50))]},
        usage=Usage(input_tokens=11, output_tokens=2, cache_creation_input_tokens=5),
    )
    api = client(server)
    first = api.messages.create(model=MODEL, max_tokens=1000, messages=USER).usage
    second = api.messages.create(model=MODEL, max_tokens=1000, messages=USER).usage
    assert (first.input_tokens, first.output_tokens, first.cache_creation_input_tokens) == (
        11,
        2,
        5,
    )
    assert (second.input_tokens, second.output_tokens, second.cache_read_input_tokens) == (7, 3, 50)


def test_usage_can_depend_on_the_request(stub_server):
    def usage(body: dict[str, Any]) -> Usage:
        return Usage(input_tokens=len(system_text(body)), output_tokens=1)

    server = stub_server({MAIN: ["a"]}, usage=usage)
    message = client(server).messages.create(
        model=MODEL, max_tokens=1000, system="12345", messages=USER
    )
    assert message.usage.input_tokens == 5


def test_streaming_text_and_several_tool_uses(stub_server):
    server = stub_server(
        {
            MAIN: [
                [
                    Text("two calls"),
                    ToolUse("Agent", {"prompt": "B"}, id="toolu_b"),
                    ToolUse("Agent", {"prompt": "C"}),
                ]
            ]
        },
        usage=Usage(input_tokens=40, output_tokens=9),
    )
    with client(server).messages.stream(model=MODEL, max_tokens=1000, messages=USER) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["text", "tool_use", "tool_use"]
    assert message.content[1].id == "toolu_b"
    assert message.content[2].input == {"prompt": "C"}
    assert message.content[1].id != message.content[2].id
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (40, 9)


def test_stream_delay_holds_the_stream_open_after_message_start(stub_server):
    server = stub_server({MAIN: [Reply([Text("a"), ToolUse("X")], stream_delay=0.3)]})
    with client(server).messages.stream(model=MODEL, max_tokens=1000, messages=USER) as stream:
        times = [(event.type, time.monotonic()) for event in stream]
        message = stream.get_final_message()
    assert times[0][0] == "message_start"
    assert times[-1][1] - times[0][1] >= 0.2  # ~0 without stream_delay
    assert [b.type for b in message.content] == ["text", "tool_use"]


def test_sse_wire_format(stub_server):
    server = stub_server({MAIN: [[Text("hi"), ToolUse("Bash", {"command": "ls"})]]})
    status, headers, raw = post(
        server, "/v1/messages", {"model": MODEL, "max_tokens": 10, "stream": True, "messages": USER}
    )
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = list(iter_sse(raw))
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0][1]["message"]["usage"]["input_tokens"] == 100
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "hi"}
    tool_start = events[4][1]["content_block"]
    assert (tool_start["type"], tool_start["name"], tool_start["input"]) == ("tool_use", "Bash", {})
    assert events[5][1]["delta"] == {
        "type": "input_json_delta",
        "partial_json": '{"command": "ls"}',
    }
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    assert events[7][1]["usage"]["output_tokens"] == 20


def test_structured_output_reply_is_json_text(stub_server):
    review = {"verdict": "PASS", "checks": []}
    server = stub_server({REVIEWER: [Json(review)]}, markers={REVIEWER: "You review."})
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    message = client(server).messages.create(
        model=MODEL,
        max_tokens=1000,
        system="You review.",
        messages=USER,
        output_config={"format": {"type": "json_schema", "schema": schema}},
    )
    assert json.loads(message.content[0].text) == review
    assert server.requests[0].body["output_config"]["format"]["schema"] == schema


def test_overloaded_then_success_is_retried(stub_server):
    server = stub_server({MAIN: [Error(529, retry_after=0.01), Text("after retry")]})
    message = client(server, max_retries=2).messages.create(
        model=MODEL, max_tokens=1000, messages=USER
    )
    assert message.content[0].text == "after retry"
    assert [r.status for r in server.requests] == [529, 200]
    assert server.requests[1].headers["x-stainless-retry-count"] == "1"


def test_authentication_error_is_not_retried(stub_server):
    server = stub_server({MAIN: [Error(401), Text("never sent")]})
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client(server, max_retries=3).messages.create(model=MODEL, max_tokens=1000, messages=USER)
    assert caught.value.status_code == 401
    assert len(server.requests) == 1
    assert server.remaining() == {MAIN: 1}


def test_error_wire_format_and_retry_after(stub_server):
    server = stub_server(
        {MAIN: [Error(429, message="slow down", retry_after=2.5, should_retry=False)]}
    )
    status, headers, raw = post(
        server, "/v1/messages", {"model": MODEL, "max_tokens": 10, "messages": USER}
    )
    assert status == 429
    assert headers["retry-after"] == "2.5"
    assert headers["x-should-retry"] == "false"
    assert json.loads(raw) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }


def test_delay_makes_the_client_time_out(stub_server):
    server = stub_server({MAIN: [Reply("too late", delay=3)]})
    started = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        client(server, timeout=0.3).messages.create(model=MODEL, max_tokens=1000, messages=USER)
    assert time.monotonic() - started < 2


def test_server_delay_applies_to_every_reply_and_requests_overlap(stub_server):
    import concurrent.futures

    server = stub_server({MAIN: ["one", "two"]}, delay=0.4)
    api = client(server)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        calls = [
            pool.submit(api.messages.create, model=MODEL, max_tokens=1000, messages=USER)
            for _ in range(2)
        ]
        texts = sorted(c.result().content[0].text for c in calls)
    elapsed = time.monotonic() - started
    assert texts == ["one", "two"]
    assert elapsed >= 0.4  # the delay was applied
    # Served side by side, not one after the other: proven by the records, not
    # by a wall-clock bound a loaded machine can break.
    first, second = server.requests
    assert first.overlaps(second)


def test_disconnect_is_a_connection_error(stub_server):
    server = stub_server({MAIN: [Disconnect()]})
    with pytest.raises(anthropic.APIConnectionError):
        client(server).messages.create(model=MODEL, max_tokens=1000, messages=USER)


def test_exhausted_script_ends_the_turn(stub_server):
    server = stub_server({MAIN: ["only"]}, exhausted_text="no more")
    api = client(server)
    texts = [
        api.messages.create(model=MODEL, max_tokens=1000, messages=USER).content[0].text
        for _ in range(2)
    ]
    assert texts == ["only", "no more"]
    assert [r.exhausted for r in server.requests] == [False, True]


def test_failing_reply_function_is_reported(tmp_path):
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("no such thing")

    with StubServer({MAIN: [broken]}) as server, pytest.raises(anthropic.InternalServerError):
        client(server).messages.create(model=MODEL, max_tokens=1000, messages=USER)
    with pytest.raises(ScriptError, match="no such thing"):
        server.check()


def test_reply_functions_read_the_request(stub_server):
    server = stub_server(
        {MAIN: [lambda body: Text("you said " + last_user_text(body))]},
    )
    message = client(server).messages.create(model=MODEL, max_tokens=1000, messages=USER)
    assert message.content[0].text == "you said hello"


def test_per_agent_scripts_by_order_of_first_appearance(stub_server):
    server = stub_server(
        {REVIEWER: PerAgent(["B1", "B2"], ["C1"], rest=["later"])},
        markers={REVIEWER: "reviewer-marker"},
    )
    api = client(server)

    def ask(agent: str) -> str:
        message = api.messages.create(
            model=MODEL,
            max_tokens=1000,
            system="reviewer-marker",
            messages=USER,
            extra_headers={"x-claude-code-agent-id": agent},
        )
        return message.content[0].text

    assert [ask("b"), ask("c"), ask("b"), ask("d"), ask("c")] == [
        "B1",
        "C1",
        "B2",
        "later",
        "Done.",
    ]
    assert server.conversations(REVIEWER) == ["b", "c", "d"]
    assert [r.agent_id for r in server.requests_for(REVIEWER, "b")] == ["b", "b"]
    assert server.remaining() == {}


def test_remaining_counts_unused_per_agent_scripts(stub_server):
    server = stub_server({REVIEWER: PerAgent(["x", "y"], ["z"])}, markers={REVIEWER: "m"})
    client(server).messages.create(model=MODEL, max_tokens=1000, system="m", messages=USER)
    assert server.remaining() == {"reviewer#1": 1, "reviewer#2": 1}


def test_batches_create_retrieve_results(stub_server):
    server = stub_server(
        {MAIN: [Text("first"), Error(529)], REVIEWER: [Json({"verdict": "PASS"})]},
        markers={REVIEWER: "review it"},
        batch_polls=1,
    )
    api = client(server)
    params = {"model": MODEL, "max_tokens": 100, "messages": USER}
    batch = api.messages.batches.create(
        requests=[
            {"custom_id": "a", "params": params},
            {"custom_id": "b", "params": {**params, "system": "review it"}},
            {"custom_id": "c", "params": params},
        ]
    )
    assert batch.processing_status == "in_progress"
    assert api.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    ended = api.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert ended.results_url == f"{server.base_url}/v1/messages/batches/{batch.id}/results"
    assert (ended.request_counts.succeeded, ended.request_counts.errored) == (2, 1)
    results = {r.custom_id: r.result for r in api.messages.batches.results(batch.id)}
    assert results["a"].type == "succeeded"
    assert results["a"].message.content[0].text == "first"
    assert json.loads(results["b"].message.content[0].text) == {"verdict": "PASS"}
    assert results["c"].type == "errored"
    assert results["c"].error.error.type == "overloaded_error"
    items = [r for r in server.messages() if r.batch_id == batch.id]
    assert [(r.custom_id, r.role) for r in items] == [("a", MAIN), ("b", REVIEWER), ("c", MAIN)]
    assert [b.id for b in api.messages.batches.list()] == [batch.id]


def test_unknown_route_is_an_api_error(stub_server):
    server = stub_server()
    status, _, raw = post(server, "/v1/complete", {})
    assert status == 404
    assert json.loads(raw)["error"]["type"] == "not_found_error"


# --------------------------------------------------------------------------
# Classification and request helpers


def body(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 32000, "messages": USER, **fields}


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "input_schema": {"type": "object"}} for n in names]


CLI_HEADERS = {"x-app": "cli", "x-claude-code-session-id": "s1"}


@pytest.mark.parametrize(
    ("request_body", "headers", "role"),
    [
        (body(system="You are the santa-method reviewer."), {}, REVIEWER),
        (body(system=[{"type": "text", "text": "santa-method fixer here"}]), {}, FIXER),
        (
            body(system="The santa-method fixer fixes what the santa-method reviewer found"),
            {},
            FIXER,
        ),
        (body(tools=tools("Read", "Grep", "Glob")), {}, REVIEWER),
        (
            body(tools=tools("Read", "Glob", "DeferredToolPlaceholder", "StructuredOutput")),
            {},
            REVIEWER,
        ),
        (body(tools=tools("Read", "Edit")), {"x-claude-code-agent-id": "a1"}, OTHER),
        (body(tools=tools("Agent", "Bash", "Read")), CLI_HEADERS, MAIN),
        (body(max_tokens=50), CLI_HEADERS, SIDE),
        (body(system="Write a short title for this session"), CLI_HEADERS, SIDE),
        (body(max_tokens=50), {}, MAIN),  # SDK calls are never side calls
        (body(), {}, MAIN),
    ],
)
def test_default_classifier(request_body, headers, role):
    assert Classifier()(request_body, headers) == role


def test_markers_are_chosen_by_the_test():
    classify = Classifier({"judge": ["JUDGE-1", "JUDGE-2"]})
    assert classify(body(system="I am JUDGE-2"), {}) == "judge"
    assert classify(body(system="santa-method reviewer"), {}) == MAIN


def test_custom_classifier_and_side_calls_do_not_consume(stub_server):
    server = stub_server(
        {MAIN: ["main reply"]},
        classify=lambda b, h: SIDE if "title" in last_user_text(b) else MAIN,
        side_text="A title",
    )
    api = client(server)
    side = api.messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "title please"}]
    )
    main = api.messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert (side.content[0].text, main.content[0].text) == ("A title", "main reply")


NOTIFICATION = (
    "<system-reminder>\n<task-notification>\n<task-id>a1</task-id>\n"
    "<tool-use-id>toolu_1</tool-use-id>\n<status>completed</status>\n"
    '<summary>Agent "review B" finished</summary>\n<result>REVIEW B</result>\n'
    "</task-notification>\n</system-reminder>"
)
CONVERSATION = {
    "system": [{"type": "text", "text": "sys one"}, {"type": "text", "text": "sys two"}],
    "tools": tools("Bash", "Agent"),
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "start"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "santa x"}},
                {"type": "tool_use", "id": "t2", "name": "Agent", "input": {"prompt": "P"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "printed"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "launched"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Waiting."}]},
        {"role": "user", "content": [{"type": "text", "text": NOTIFICATION}]},
        {"role": "system", "content": "# Environment"},
    ],
}


def test_request_helpers():
    assert system_text(CONVERSATION) == "sys one\nsys two"
    assert tool_names(CONVERSATION) == ["Bash", "Agent"]
    assert first_user_text(CONVERSATION) == "start"
    assert NOTIFICATION in last_user_text(CONVERSATION)
    assert last_tool_result_text(CONVERSATION) == "launched"
    assert last_tool_result_text(CONVERSATION, "Bash") == "printed"
    calls = tool_calls(CONVERSATION)
    assert [(c.name, c.result, c.is_error) for c in calls] == [
        ("Bash", "printed", False),
        ("Agent", "launched", True),
    ]
    assert calls[0].input == {"command": "santa x"}
    assert is_task_notification(CONVERSATION)
    (note,) = task_notifications(CONVERSATION)
    assert (note["task_id"], note["status"], note["result"]) == ("a1", "completed", "REVIEW B")
    assert notified(1)(CONVERSATION) and not notified(2)(CONVERSATION)
    assert "santa x" in all_text(CONVERSATION) and "# Environment" in all_text(CONVERSATION)


def test_notifications_auto_answered_unless_the_script_waits(stub_server):
    waiting = stub_server({MAIN: [WaitUntil(notified(1), Text("gate now"))]})
    auto = stub_server({MAIN: [Text("scripted")]})
    payload = {**CONVERSATION, "model": MODEL, "max_tokens": 1000}
    for server, expected in ((auto, "Noted."), (waiting, "gate now")):
        message = client(server).messages.create(**payload)
        assert message.content[0].text == expected
    assert auto.remaining() == {MAIN: 1}
    assert waiting.remaining() == {}


def test_wait_until_holds_the_step(stub_server):
    server = stub_server({MAIN: [WaitUntil(notified(2), "both done", meanwhile="wait")]})
    payload = {**CONVERSATION, "model": MODEL, "max_tokens": 1000}
    text = client(server).messages.create(**payload).content[0].text
    assert text == "wait"
    assert server.remaining() == {MAIN: 1}


# --------------------------------------------------------------------------
# The real Claude Code CLI

REVIEWER_MARKER = "stub-test-reviewer-marker"


def make_plugin(root: Path) -> Path:
    """A one-agent plugin whose agent body holds a marker the stub looks for."""
    plugin = root / "stubplug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "agents").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        '{"name": "stubplug", "version": "0.0.1"}'
    )
    (plugin / "agents" / "rev.md").write_text(
        "---\nname: rev\ndescription: Reviews things for the stub test.\n"
        f"tools: Read, Grep, Glob\nmodel: haiku\n---\nYou are the {REVIEWER_MARKER}.\n"
    )
    return plugin


def agent_call(prompt: str, background: bool | None) -> ToolUse:
    spec = {"description": prompt[:20], "prompt": prompt, "subagent_type": "stubplug:rev"}
    if background is not None:
        spec["run_in_background"] = background
    return ToolUse("Agent", spec)


@pytest.mark.e2e
def test_cli_prints_the_scripted_text(stub_server, run_claude):
    server = stub_server({MAIN: [Text("scripted hello")]})
    run = run_claude(server, "-p", "hello", "--output-format", "json", timeout=30)
    assert run.returncode == 0, run.stderr
    assert run.json["result"] == "scripted hello"
    assert run.json["usage"]["output_tokens"] == 20
    (request,) = server.messages()
    assert (request.path, request.query, request.role) == ("/v1/messages", {"beta": ["true"]}, MAIN)
    assert request.body["stream"] is True
    assert request.headers["x-claude-code-session-id"] == run.json["session_id"]
    assert "hello" in last_user_text(request.body)


@pytest.mark.e2e
def test_cli_bash_tool_round_trip(stub_server, run_claude):
    server = stub_server(
        {
            MAIN: [
                ToolUse("Bash", {"command": "echo hi-from-bash", "description": "say hi"}),
                lambda body: Text("the tool said: " + last_tool_result_text(body, "Bash")),
            ]
        }
    )
    run = run_claude(
        server, "-p", "run it", "--output-format", "json", "--allowedTools", "Bash", timeout=30
    )
    assert run.returncode == 0, run.stderr
    assert run.json["result"] == "the tool said: hi-from-bash"
    assert run.json["permission_denials"] == []
    assert server.remaining() == {}


@pytest.mark.e2e
def test_cli_structured_output(stub_server, run_claude):
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
    server = stub_server({REVIEWER: [Json({"verdict": "PASS"})]})
    run = run_claude(
        server,
        "-p",
        "review",
        "--output-format",
        "json",
        "--tools",
        "Read,Grep,Glob",
        "--json-schema",
        json.dumps(schema),
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    assert run.json["structured_output"] == {"verdict": "PASS"}
    (request,) = server.messages()
    assert request.role == REVIEWER  # read-only tools, no marker needed
    assert "StructuredOutput" in request.tools


@pytest.mark.e2e
def test_cli_foreground_subagent_is_classified_and_isolated(stub_server, run_claude, tmp_path):
    plugin = make_plugin(tmp_path)
    server = stub_server(
        {
            MAIN: [
                agent_call("PROMPT-B review this", background=False),
                lambda body: Text("main saw: " + last_tool_result_text(body, "Agent")),
            ],
            REVIEWER: ["REVIEW-B-VERDICT"],
        },
        markers={REVIEWER: REVIEWER_MARKER},
    )
    run = run_claude(
        server, "-p", "spawn", "--output-format", "json", "--plugin-dir", str(plugin), timeout=30
    )
    assert run.returncode == 0, run.stderr
    assert "REVIEW-B-VERDICT" in run.json["result"]
    (review,) = server.requests_for(REVIEWER)
    assert review.agent_id and review.conversation == review.agent_id
    assert sorted(review.tools) == ["Glob", "Grep", "Read"]
    assert REVIEWER_MARKER in review.system
    assert review.body["model"] == "claude-haiku-5-5"
    assert first_user_text(review.body) == "PROMPT-B review this"
    assert [r.role for r in server.messages()] == [MAIN, REVIEWER, MAIN]
    assert "Agent" in server.requests_for(MAIN)[0].tools
    assert server.remaining() == {}


@pytest.mark.e2e
def test_cli_background_subagents_run_concurrently_and_notify(stub_server, run_claude, tmp_path):
    plugin = make_plugin(tmp_path)
    server = stub_server(
        {
            MAIN: [
                [agent_call("PROMPT-B", background=None), agent_call("PROMPT-C", background=None)],
                WaitUntil(notified(2), ToolUse("Bash", {"command": "echo gate-ran"})),
                lambda body: Text("final: " + last_tool_result_text(body, "Bash")),
            ],
            # Each reviewer first reads a file, then answers; delays make them overlap.
            REVIEWER: PerAgent(
                [Reply(ToolUse("Glob", {"pattern": "*.md"}), delay=0.3), "FIRST-REVIEW"],
                [Reply(ToolUse("Glob", {"pattern": "*.md"}), delay=0.3), "SECOND-REVIEW"],
            ),
        },
        markers={REVIEWER: REVIEWER_MARKER},
    )
    run = run_claude(
        server, "-p", "spawn", "--output-format", "json", "--plugin-dir", str(plugin), timeout=30
    )
    assert run.returncode == 0, run.stderr
    assert run.json["result"] == "final: gate-ran"
    assert server.remaining() == {}

    first, second = server.conversations(REVIEWER)
    a, b = server.requests_for(REVIEWER, first), server.requests_for(REVIEWER, second)
    assert len(a) == len(b) == 2
    assert a[0].overlaps(b[0])
    # Isolation: each reviewer sees only its own prompt and its own replies.
    prompts = {first_user_text(a[0].body), first_user_text(b[0].body)}
    assert prompts == {"PROMPT-B", "PROMPT-C"}
    other_prompt = first_user_text(b[0].body)
    assert all(other_prompt not in r.text and "SECOND-REVIEW" not in r.text for r in a)

    # The gate ran only once both notifications had arrived; earlier turns waited.
    mains = server.requests_for(MAIN)
    (gate,) = [r for r in mains if ToolUse("Bash", {"command": "echo gate-ran"}) in r.reply.content]
    assert notified(2)(gate.body)
    assert any(r.reply.content == (Text("Waiting."),) for r in mains[: mains.index(gate)])
    last_main = mains[-1].body
    results = sorted(n["result"] for n in task_notifications(last_main))
    assert results == ["FIRST-REVIEW", "SECOND-REVIEW"]


@pytest.mark.e2e
def test_cli_background_notifications_do_not_loop(stub_server, run_claude, tmp_path):
    plugin = make_plugin(tmp_path)
    server = stub_server(
        {MAIN: [[agent_call("PROMPT-B", background=True)], "launched"], REVIEWER: ["R"]},
        markers={REVIEWER: REVIEWER_MARKER},
    )
    run = run_claude(
        server, "-p", "spawn", "--output-format", "json", "--plugin-dir", str(plugin), timeout=30
    )
    assert run.returncode == 0, run.stderr
    mains = server.requests_for(MAIN)
    assert len(mains) == 3
    assert is_task_notification(mains[-1].body)
    assert mains[-1].reply.content == (Text("Noted."),)
    assert not any(r.exhausted for r in server.messages())
