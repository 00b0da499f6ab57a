"""The headless loop with the anthropic backend, against the scripted Messages API."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from _reviews import output_of
from e2e.stub_server import FIXER, REVIEWER, Error, Json, Reply, Text, Usage, first_user_text
from santa_method.cli import main
from santa_method.core.errors import BackendError, InputError, RefusedError
from santa_method.core.schema import strict_subset_violations
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.state import log as runlog
from santa_method.state.store import list_run_ids, load_state

from .conftest import failing, pass_reply, passing

SPEC = "A README with the release year and a License section."


def backend(server: Any, **options: Any) -> AnthropicBackend:
    return AnthropicBackend(base_url=server.base_url, api_key="test", **options)


def records(project: Path, run_id: str, event: str | None = None) -> list[dict[str, Any]]:
    found = runlog.read(project / ".santa" / "log.jsonl").records
    return [r for r in found if r["run_id"] == run_id and (event is None or r["event"] == event)]


def test_nice_at_round_1(stub_server, project, target):
    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.verdict == "NICE"
    assert result.rounds == 1
    assert len(server.requests_for(REVIEWER)) == 2
    assert result.tokens.input == 200 and result.tokens.output == 40
    # Stub usage 100 in / 20 out at sonnet list price (2 / 10 per million), twice.
    assert result.cost_usd == pytest.approx(2 * (100 * 2 + 20 * 10) / 1e6)
    assert "all reviewers use the same model" in " ".join(result.warnings)
    assert records(project, result.run_id, "ship")
    assert load_state(result.run_id).status == "shipped"


def test_fix_then_nice_edits_a_working_copy(stub_server, project, target):
    original = target.read_text()

    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999."))
        return Json(passing(body))

    fixed = original.replace("1999", "2024")
    server = stub_server(
        {REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": ["1. fixed: year"]})]}
    )
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server), models=["sonnet", "haiku"])
    )
    assert result.verdict == "NICE"
    assert result.rounds == 2
    assert result.output == fixed
    assert target.read_text() == original  # the user's file changes only with in_place
    assert Path(result.output_path) != target
    assert [r.next for r in result.history] == ["fix", "ship"]
    fixer_request = server.requests_for(FIXER)[0]
    assert "Released in 1999." in first_user_text(fixer_request.body)
    fix_records = records(project, result.run_id, "fix")
    assert len(fix_records) == 1 and fix_records[0]["cost_usd"] > 0
    assert not any("same model" in w for w in result.warnings)
    models = {r.body["model"] for r in server.requests_for(REVIEWER)}
    assert models == {"claude-sonnet-5-5", "claude-haiku-5-5"}


def test_in_place_edits_the_file(stub_server, project, target):
    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999."))
        return Json(passing(body))

    fixed = target.read_text().replace("1999", "2024")
    server = stub_server({REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": []})]})
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server), in_place=True)
    )
    assert result.verdict == "NICE"
    assert target.read_text() == fixed


def test_escalation_at_the_cap(stub_server, project, target):
    server = stub_server(
        {
            REVIEWER: lambda body: Json(failing(body, "Released in 1999.")),
            FIXER: lambda body: Json({"output": target.read_text(), "report": ["1. not an issue"]}),
        }
    )
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server), max_fixes=1))
    assert result.verdict == "ESCALATED"
    assert result.rounds == 2
    assert len(server.requests_for(FIXER)) == 1
    assert result.report and Path(result.report).is_file()
    assert any("fixes exhausted" in r for r in result.reasons)
    assert result.issues and result.issues[0]["criterion"] == "factual-accuracy"
    assert load_state(result.run_id).status == "escalated"


def test_budget_stops_before_a_round_it_cannot_afford(stub_server, project, target):
    server = stub_server({REVIEWER: lambda body: Json(failing(body, "Released in 1999."))})
    # Round 1 costs 0.0008; another fix and round would need about as much again.
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server), budget_usd=0.001)
    )
    assert result.verdict == "ESCALATED"
    assert server.requests_for(FIXER) == []
    assert any("budget" in r for r in result.reasons)
    assert records(project, result.run_id, "escalate")


def test_pre_check_failure_spends_no_reviewer(stub_server, project, target):
    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    with pytest.raises(RefusedError, match="pre-check"):
        verify_sync(
            SPEC,
            target,
            options=VerifyOptions(
                backend=backend(server), pre_check="echo broken; exit 4", in_place=True
            ),
        )
    assert server.messages() == []


def test_pre_check_needs_in_place_when_fixes_are_allowed(stub_server, project, target):
    # Without in_place the fixes go to a working copy the pre-check never sees:
    # a fixed output could ship failing its own check.
    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    with pytest.raises(InputError, match="in_place"):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server), pre_check="true"))
    assert server.messages() == []
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server), pre_check="true", max_fixes=0)
    )
    assert result.verdict == "NICE"


def test_unknown_price_with_a_budget_is_refused_before_spending(stub_server, project, target):
    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    with pytest.raises(InputError, match="no list price"):
        verify_sync(
            SPEC,
            target,
            options=VerifyOptions(
                backend=backend(server), models=["claude-mystery-9"], budget_usd=1.0
            ),
        )
    assert server.messages() == []


def test_a_backend_that_reports_no_cost_cannot_spend_a_budget(stub_server, project, target):
    class NoCost:
        """Any backend whose calls come back without a price."""

        name = "no-cost"

        def __init__(self, inner: AnthropicBackend) -> None:
            self.inner = inner

        async def review(self, request):  # type: ignore[no-untyped-def]
            reply = await self.inner.review(request)
            return dataclasses.replace(reply, cost_usd=None)

        async def fix(self, request):  # type: ignore[no-untyped-def]
            reply = await self.inner.fix(request)
            return dataclasses.replace(reply, cost_usd=None)

    def fail_reply(body: dict[str, Any]) -> Json:
        return Json(failing(body, "Released in 1999."))

    server = stub_server({REVIEWER: [fail_reply, fail_reply]})
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=NoCost(backend(server)), budget_usd=1.0)
    )
    assert result.verdict == "ESCALATED"
    assert any("budget" in r and "unknown" in r for r in result.reasons)
    assert server.requests_for(FIXER) == []


def test_invalid_reply_is_handed_back_then_accepted(stub_server, project, target):
    def reviewer(body: dict[str, Any]) -> Any:
        if len(body["messages"]) == 1:
            return Text("I think it is fine.")
        return Json(passing(body))

    server = stub_server({REVIEWER: reviewer})
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.verdict == "NICE"
    requests = server.requests_for(REVIEWER)
    assert len(requests) == 4
    followups = [r for r in requests if len(r.body["messages"]) == 3]
    assert len(followups) == 2
    for request in followups:
        assert request.body["messages"][1]["content"][0]["text"] == "I think it is fine."
        assert "not valid and was not counted" in request.body["messages"][2]["content"][0]["text"]
    assert all(r.asks == 2 for r in result.history[0].reviewers)


def test_unverified_quote_is_handed_back_once(stub_server, project, target):
    def reviewer(body: dict[str, Any]) -> Json:
        return Json(failing(body, "Released in 1887."))  # never in the output

    server = stub_server({REVIEWER: reviewer})
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server), max_fixes=0))
    assert len(server.requests_for(REVIEWER)) == 4  # each reviewer: first ask + one hand-back
    assert result.verdict == "NAUGHTY"  # a check only: its problems reported
    assert result.issues[0]["evidence"] == "unverified"  # the flag stands, marked


def test_a_reply_never_valid_fails_closed(stub_server, project, target):
    server = stub_server({REVIEWER: lambda body: Text("no review here")})
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.verdict == "ESCALATED"
    # 2 reviewers x (1 ask + 2 hand-backs) in the round and each of its 2 re-reviews.
    assert len(server.requests_for(REVIEWER)) == 18
    assert [r.next for r in result.history] == ["rereview", "rereview", "escalate"]
    assert all(not rv.valid for r in result.history for rv in r.reviewers)


def test_429_and_529_are_retried_then_succeed(stub_server, project, target):
    server = stub_server(
        {
            REVIEWER: [
                Error(429, retry_after=0.05),
                Error(529, retry_after=0.05),
                pass_reply(),
                pass_reply(),
            ]
        }
    )
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.verdict == "NICE"
    assert [r.status for r in server.requests_for(REVIEWER)].count(200) == 2
    assert len(server.requests_for(REVIEWER)) == 4


def test_overloaded_after_retries_is_a_backend_error(stub_server, project, target):
    server = stub_server({REVIEWER: lambda body: Error(529, retry_after=0.01)})
    with pytest.raises(BackendError, match="overloaded"):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server, max_retries=1)))
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"  # never shipped


def test_401_fails_fast_with_exit_3(stub_server, project, target, monkeypatch, capsys):
    server = stub_server({REVIEWER: lambda body: Error(401)})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(["run", "--against", str(target), "--spec-text", SPEC, "--quiet"])
    assert code == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "401" in err[0] and "ANTHROPIC_API_KEY" in err[0]
    assert len(server.requests_for(REVIEWER)) <= 2  # not retried


def test_no_credentials_is_exit_3(project, target, capsys):
    code = main(["run", "--against", str(target), "--spec-text", SPEC, "--quiet"])
    assert code == 3
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_a_timeout_is_a_backend_error(stub_server, project, target):
    server = stub_server({REVIEWER: lambda body: Reply(Json(passing(body)), delay=3)})
    # The reply would come (a valid PASS) after 3 s: only the 0.5 s timeout
    # can turn it into an error. No wall-clock assertion: machines are noisy.
    with pytest.raises(BackendError, match="timed out"):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server), timeout=0.5))


def test_reviewers_are_isolated(stub_server, project, target):
    count = {"n": 0}

    def reviewer(body: dict[str, Any]) -> Any:
        count["n"] += 1
        mark = f"marker-{count['n']}"
        if len(body["messages"]) == 1 and count["n"] <= 2:
            return Text(f"not json {mark}")
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999.", mark))
        return Json(passing(body, mark))

    fixed = target.read_text().replace("1999", "2024")
    server = stub_server({REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": []})]})
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.verdict == "NICE"
    requests = server.requests_for(REVIEWER)
    for request in requests:
        # A request carries at most one reviewer reply: this reviewer's own
        # earlier turn (a hand-back), never another reviewer's or a round's.
        found = set(re.findall(r"marker-\d+", json.dumps(request.body)))
        assert len(found) <= 1
        if found:
            assert len(request.body["messages"]) == 3
            assert found.pop() in request.body["messages"][1]["content"][0]["text"]
    fresh = [r for r in requests if len(r.body["messages"]) == 1]
    assert len(fresh) == 4  # every round starts each reviewer with no history


def test_reviewers_run_concurrently(stub_server, project, target):
    server = stub_server({REVIEWER: lambda body: Json(passing(body))}, delay=0.4)
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server), reviewers=3))
    assert result.verdict == "NICE"
    first, second, third = server.requests_for(REVIEWER)
    # Overlap of the recorded requests proves concurrency; wall time belongs
    # in bench/parallel.py.
    assert first.overlaps(second) and first.overlaps(third) and second.overlaps(third)


def test_cache_warm_starts_the_others_once_the_first_streams(stub_server, project, target):
    server = stub_server(
        {REVIEWER: lambda body: Reply(Json(passing(body)), delay=0.3, stream_delay=0.3)}
    )
    result = verify_sync(
        SPEC, target, options=VerifyOptions(backend=backend(server), cache_warm=True)
    )
    assert result.verdict == "NICE"
    first, second = server.requests_for(REVIEWER)
    assert second.arrived - first.arrived >= 0.25  # waited for the first stream to begin
    assert second.arrived < first.finished  # but not for it to end


def test_prefix_is_cached_and_identical_across_reviewers_and_rounds(stub_server, project, target):
    def reviewer(body: dict[str, Any]) -> Json:
        if "1999" in output_of(first_user_text(body)):
            return Json(failing(body, "Released in 1999."))
        return Json(passing(body))

    fixed = target.read_text().replace("1999", "2024")
    server = stub_server({REVIEWER: reviewer, FIXER: [Json({"output": fixed, "report": []})]})
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.rounds == 2
    requests = server.requests_for(REVIEWER)
    assert len(requests) == 4
    prefixes = {json.dumps(r.body["system"][-1], sort_keys=True) for r in requests}
    assert len(prefixes) == 1
    block = requests[0].body["system"][-1]
    assert block["cache_control"] == {"type": "ephemeral"}
    assert SPEC in block["text"] and "factual-accuracy" in block["text"]
    # Neither round's output is in the cached prefix (its fence token is
    # random hex, so a bare "1999" could be in it by chance).
    assert "Released in" not in block["text"]
    rounds = {first_user_text(r.body) for r in requests}
    assert len(rounds) == 2  # the round part (output, canary) differs by round
    assert all(t.rstrip().splitlines()[-1].startswith("santa-canary: ") for t in rounds)


def test_review_records_carry_the_cache_split(stub_server, project, target):
    from santa_method.state.metrics import compute

    # One reviewer writes the cached prefix, the other reads it.
    writes = Usage(input_tokens=40, output_tokens=20, cache_creation_input_tokens=300)
    reads = Usage(input_tokens=40, output_tokens=20, cache_read_input_tokens=300)
    server = stub_server(
        {
            REVIEWER: [
                lambda body: Reply(Json(passing(body)), usage=writes),
                lambda body: Reply(Json(passing(body)), usage=reads),
            ]
        }
    )
    result = verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    assert result.verdict == "NICE"
    reviews = records(project, result.run_id, "review")
    assert len(reviews) == 2
    splits = sorted(
        (r["token_detail"]["cache_read"], r["token_detail"]["cache_write"]) for r in reviews
    )
    assert splits == [(0, 300), (300, 0)]  # each record its own reviewer's numbers
    for review in reviews:
        assert review["token_detail"]["input"] == 40 and review["token_detail"]["output"] == 20
        assert review["tokens"] == review["token_detail"]["total"] == 360
    # Metrics report the split and count each token once.
    run = compute(runlog.read(project / ".santa" / "log.jsonl").records)["cost"]["per_run"]
    assert run[result.run_id]["tokens"] == 720
    assert run[result.run_id]["cache_read_tokens"] == 300
    assert run[result.run_id]["cache_write_tokens"] == 300


def test_strict_schema_in_requests_stays_in_the_api_subset(stub_server, project, target):
    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    verify_sync(SPEC, target, options=VerifyOptions(backend=backend(server)))
    for request in server.requests_for(REVIEWER):
        fmt = request.body["output_config"]["format"]
        assert fmt["type"] == "json_schema"
        assert strict_subset_violations(fmt["schema"]) == []
        criterion = fmt["schema"]["properties"]["checks"]["items"]["properties"]["criterion"]
        assert "factual-accuracy" in criterion["enum"]


def test_cli_json_result(stub_server, project, target, monkeypatch, capsys):
    server = stub_server({REVIEWER: [pass_reply(), pass_reply()]})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(
        ["run", "--against", str(target), "--spec-text", SPEC, "--json", "--models", "opus,sonnet"]
    )
    captured = capsys.readouterr()
    assert code == 0
    data = json.loads(captured.out)
    assert data["verdict"] == "NICE" and data["rounds"] == 1 and data["issues"] == []
    assert data["tokens"]["total"] == 240 and data["cost_usd"] > 0
    assert data["run_id"] and data["report"] is None
    assert "round 1" in captured.err  # the live view is on stderr


def test_cli_check_only_with_problems_exits_1(stub_server, project, target, monkeypatch, capsys):
    server = stub_server({REVIEWER: lambda body: Json(failing(body, "Released in 1999."))})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(["run", "--against", str(target), "--spec-text", SPEC, "--max-fixes", "0"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("NAUGHTY") and "report:" in out and "1999" in out
    code = main(
        ["run", "--against", str(target), "--spec-text", SPEC, "--max-fixes", "0", "--json"]
    )
    answer = json.loads(capsys.readouterr().out)
    assert code == 1 and (answer["verdict"], answer["outcome"]) == ("NAUGHTY", "reported")


def test_cli_input_errors_exit_2(project, target, capsys):
    assert main(["run", "--against", "missing.md", "--spec-text", SPEC]) == 2
    capsys.readouterr()
    # Refused by the parser, with the run's own usage.
    assert main(["run", "--against", str(target), "--spec-text", SPEC, "--reviewers", "1"]) == 2
    err = capsys.readouterr().err
    assert "usage: santa run" in err and "at least 2 reviewers" in err
