"""Per-slot models inside Claude Code: each slot's reviewer runs on the model
the user configured for it, and what it spent is read from its transcript.

Runs are opened with the real `santa round start` inside "Claude Code" and
driven through the real hook commands (tests/_hooked.py), so what is
checked is what Claude Code would see: the guard's answers, the state, the
log, and what `santa metrics` makes of it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from _hooked import SANTA, Project, open_hook_round, review
from _transcripts import reply_record, usage, write_transcript
from santa_method.claude_code import models
from santa_method.headless.backends import prices
from santa_method.headless.backends.base import Tokens

TWO_MODELS = "models: [haiku, sonnet]\n"
HAIKU, SONNET = "claude-haiku-5-5", "claude-sonnet-5-5"  # what Claude Code sends for each


def _records(project: Project) -> list[dict[str, Any]]:
    path = Path(project.env["SANTA_LOG"])
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _start(tmp_path: Path, *more: str, config: str | None = None) -> subprocess.CompletedProcess:
    """`santa round start` inside Claude Code in a fresh project, as it ran."""
    from _hooked import OUTPUT, SPEC, hook_env

    root = tmp_path / "proj"
    root.mkdir(parents=True)
    (root / "README.md").write_text(OUTPUT, encoding="utf-8")
    (root / "spec.md").write_text(SPEC, encoding="utf-8")
    if config is not None:
        (root / ".santa").mkdir()
        (root / ".santa" / "config.yaml").write_text(config, encoding="utf-8")
    return subprocess.run(
        [SANTA, "round", "start", "--against", "README.md", "--spec", "spec.md", *more],
        capture_output=True,
        text=True,
        env=hook_env(root),
        cwd=root,
        timeout=60,
    )


# --- santa round start -------------------------------------------------------


def test_round_start_prints_each_slots_model_in_text_and_json(tmp_path: Path) -> None:
    done = _start(tmp_path / "json", "--json", config=TWO_MODELS)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["models"] == {"B": "haiku", "C": "sonnet"}

    text = _start(tmp_path / "text", config=TWO_MODELS)
    assert text.returncode == 0, text.stderr
    assert "  B: haiku\n  C: sonnet\n" in text.stdout
    assert "`model`" in text.stdout


def test_a_label_map_gives_models_to_some_slots_only(tmp_path: Path) -> None:
    done = _start(tmp_path, "--json", config="models: {C: opus}\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["models"] == {"B": None, "C": "opus"}


def test_claude_prefixed_models_given_by_the_user_are_plain_claude_models(tmp_path: Path) -> None:
    done = _start(tmp_path, "--json", "--models", "anthropic:haiku,claude:sonnet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["models"] == {"B": "haiku", "C": "sonnet"}


@pytest.mark.parametrize(
    ("models_arg", "said"),
    [
        ("claude-haiku-4-5,sonnet", "'claude-haiku-4-5' is not a model Claude Code's Agent tool"),
        ("inherit", "'inherit' is not a model"),
        ("anthropic:haiku,openai:gpt-5.1", "names the backend 'openai'"),
    ],
)
def test_models_the_agent_tool_cannot_take_are_refused_before_any_run(
    tmp_path: Path, models_arg: str, said: str
) -> None:
    done = _start(tmp_path, "--models", models_arg)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr
    assert "haiku, sonnet, opus, fable" in done.stderr
    assert not (tmp_path / "proj" / ".santa" / "runs").exists()


def test_a_config_model_the_agent_tool_cannot_take_is_refused_naming_the_config(
    tmp_path: Path,
) -> None:
    done = _start(tmp_path, config="models: [claude-sonnet-4-5]\n")
    assert done.returncode == 2
    assert "models in " in done.stderr and "config.yaml" in done.stderr


def test_inside_claude_code_models_of_the_config_cannot_be_swapped(tmp_path: Path) -> None:
    done = _start(tmp_path, "--models", "haiku", config=TWO_MODELS)
    assert done.returncode == 1
    assert "--models (the config names its own)" in done.stderr


def test_with_a_budget_an_unpriced_model_is_refused_before_the_run(tmp_path: Path) -> None:
    # `fable` is a model the Agent tool takes, with no list price in the table.
    assert prices.price("fable") is None
    done = _start(tmp_path, "--models", "haiku,fable", "--budget-usd", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no list price is known for fable" in done.stderr
    assert not (tmp_path / "proj" / ".santa" / "runs").exists()
    # Without a budget there is nothing to keep: the run opens.
    assert _start(tmp_path / "free", "--models", "haiku,fable").returncode == 0


# --- the Agent guard ---------------------------------------------------------


@pytest.fixture
def two_models(tmp_path: Path) -> Project:
    return open_hook_round(tmp_path, config=TWO_MODELS)


def test_each_slots_model_passes_and_binds_its_reviewer_to_the_slot(two_models: Project) -> None:
    two_models.spawn(model="sonnet")
    two_models.spawn(model="haiku")
    spawns = two_models.state().rounds[-1].spawns or []
    assert [(s.slot, s.id) for s in spawns] == [("C", "toolu_01"), ("B", "toolu_02")]


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (None, "this call gives no model"),
        ("opus", "this call gives model opus"),
    ],
)
def test_a_missing_or_wrong_model_is_refused_and_takes_no_slot(
    two_models: Project, model: str | None, said: str
) -> None:
    reason = two_models.agent_call(
        "santa-method:reviewer", two_models.instruction, model=model
    ).denied()
    assert said in reason
    assert "B model haiku, C model sonnet" in reason
    assert two_models.state().rounds[-1].spawned == 0


def test_a_slots_model_is_refused_once_that_slot_has_its_reviewer(two_models: Project) -> None:
    two_models.spawn(model="haiku")
    reason = two_models.agent_call(
        "santa-method:reviewer", two_models.instruction, model="haiku"
    ).denied()
    assert "C model sonnet" in reason and "B model" not in reason
    two_models.spawn(model="sonnet")
    assert two_models.state().rounds[-1].spawned == 2


def test_a_model_is_refused_when_the_run_configures_none(tmp_path: Path) -> None:
    project = open_hook_round(tmp_path)
    reason = project.agent_call(
        "santa-method:reviewer", project.instruction, model="haiku"
    ).denied()
    assert "Do not choose model" in reason and "configures no reviewer model" in reason
    project.spawn()  # without a model, as ever
    assert project.state().rounds[-1].spawned == 1


def test_a_slot_without_a_model_takes_a_call_without_one(tmp_path: Path) -> None:
    project = open_hook_round(tmp_path, config="models: {C: opus}\n")
    denied = project.agent_call("santa-method:reviewer", project.instruction, model="haiku")
    assert "B model (none), C model opus" in denied.denied()
    project.spawn()
    project.spawn(model="opus")
    spawns = project.state().rounds[-1].spawns or []
    assert [s.slot for s in spawns] == ["B", "C"]


def test_the_fixer_and_effort_are_still_refused_a_choice(two_models: Project) -> None:
    reason = two_models.hook(
        "pretooluse-agent",
        {
            "tool_name": "Agent",
            "tool_input": {
                "subagent_type": "santa-method:reviewer",
                "prompt": two_models.instruction,
                "model": "haiku",
                "effort": "low",
            },
        },
    ).denied()
    assert "Do not choose effort" in reason
    fixer = two_models.agent_call("santa-method:fixer", "anything", model="haiku").denied()
    assert "Do not choose model" in fixer


# --- replies: the model that answered, its tokens and cost ---------------------


def _stop(project: Project, agent: str, model: str, tokens: dict[str, int]) -> None:
    project.stop(agent, review(project.canary), model=model, usage=tokens).allowed()


def test_replies_fill_their_own_slots_and_the_log_has_their_models_tokens_and_cost(
    two_models: Project,
) -> None:
    two_models.spawn(model="haiku")
    two_models.spawn(model="sonnet")
    # The sonnet reviewer answers first: it still fills C, its own slot.
    _stop(two_models, "r-sonnet", SONNET, usage(1000, 200, cache_read=50))
    _stop(two_models, "r-haiku", HAIKU, usage(3000, 100, cache_write=10))
    slots = two_models.slots()
    assert slots["B"] is not None and slots["B"].agent_id == "r-haiku"
    assert slots["C"] is not None and slots["C"].agent_id == "r-sonnet"

    rc, gate = two_models.gate()
    assert (rc, gate["next"]) == (0, "ship"), gate
    reviews = {r["label"]: r for r in _records(two_models) if r["event"] == "review"}
    # Each reviewer made two calls (its Read, then its reply), each with that usage.
    haiku, sonnet = Tokens(6000, 200, cache_write=20), Tokens(2000, 400, cache_read=100)
    for label, model, tokens in (("B", HAIKU, haiku), ("C", SONNET, sonnet)):
        assert reviews[label]["model"] == model
        assert reviews[label]["tokens"] == tokens.total
        assert reviews[label]["token_detail"] == tokens.to_json()
        assert reviews[label]["cost_usd"] == pytest.approx(prices.cost(model, tokens))

    metrics = subprocess.run(
        [SANTA, "metrics", "--json"],
        capture_output=True,
        text=True,
        env=two_models.env,
        cwd=two_models.root,
        timeout=60,
    )
    assert metrics.returncode == 0, metrics.stderr
    cost = json.loads(metrics.stdout)["cost"]
    expected = (prices.cost(HAIKU, haiku) or 0.0) + (prices.cost(SONNET, sonnet) or 0.0)
    assert cost["cost_usd_total"] == pytest.approx(expected)
    assert cost["tokens_total"] == haiku.total + sonnet.total


def test_a_reply_from_another_model_than_its_slots_is_a_failed_review(
    two_models: Project,
) -> None:
    two_models.spawn(model="haiku")
    two_models.spawn(model="sonnet")
    _stop(two_models, "r1", HAIKU, usage(10, 10))
    _stop(two_models, "r2", "claude-opus-5-5", usage(10, 10))
    slot = two_models.slots()["C"]
    assert slot is not None and slot.failed
    assert "slot C is configured for model sonnet, but claude-opus-5-5 wrote" in slot.errors[-1]
    _, gate = two_models.gate()
    assert gate["next"] == "rereview"


# --- the budget inside Claude Code ------------------------------------------


def _fail_both(project: Project, *tokens: dict[str, int] | None) -> dict[str, Any]:
    from _hooked import QUOTE

    project.spawn(model="haiku")
    project.spawn(model="sonnet")
    for agent, model, spent in zip(("r1", "r2"), (HAIKU, SONNET), tokens, strict=True):
        reply = review(project.canary, quote=QUOTE)
        project.stop(agent, reply, model=model, usage=spent).allowed()
    rc, gate = project.gate()
    assert rc == 1
    return gate


def test_a_budget_the_next_round_cannot_be_paid_from_ends_the_run(tmp_path: Path) -> None:
    project = open_hook_round(tmp_path, "--budget-usd", "0.15", config=TWO_MODELS)
    gate = _fail_both(project, usage(20_000, 1_000), usage(20_000, 1_000))
    assert gate["next"] == "escalate"
    assert any("cannot pay for another fix and round" in r for r in gate["reasons"]), gate
    assert project.state().status == "escalated"
    refused = project.santa("round", "start", "--run", project.run_id)
    assert refused.returncode == 1 and "escalated" in refused.stderr


def test_a_budget_with_room_left_goes_on_to_the_fix(tmp_path: Path) -> None:
    project = open_hook_round(tmp_path, "--budget-usd", "5", config=TWO_MODELS)
    gate = _fail_both(project, usage(2_000, 100), usage(2_000, 100))
    assert gate["next"] == "fix"


def test_a_reply_whose_cost_is_unknown_stops_a_run_with_a_budget(tmp_path: Path) -> None:
    project = open_hook_round(tmp_path, "--budget-usd", "5", config=TWO_MODELS)
    gate = _fail_both(project, usage(2_000, 100), None)  # no usage in the second transcript
    assert gate["next"] == "escalate"
    assert any("cost of a call is unknown" in r for r in gate["reasons"]), gate["reasons"]


def _session(project: Project, model: str) -> None:
    write_transcript(project.root / "main.jsonl", [reply_record("ok", model=model)])


def test_with_a_budget_a_reviewer_on_an_unpriced_session_model_is_refused(
    tmp_path: Path,
) -> None:
    project = open_hook_round(tmp_path, "--budget-usd", "5")
    _session(project, "claude-fable-5-2")
    reason = project.agent_call("santa-method:reviewer", project.instruction).denied()
    assert "claude-fable-5-2" in reason and "no list price" in reason
    assert project.state().rounds[-1].spawned == 0
    _session(project, "claude-opus-5-5")
    project.spawn()


# --- reading a transcript ------------------------------------------------------


def _block_records(msg_id: str, model: str, spent: dict[str, int], blocks: int) -> list[dict]:
    """One message as Claude Code writes it: a record per content block, all
    with the message's id and usage."""
    return [
        {"type": "assistant", "message": {"id": msg_id, "model": model, "usage": spent}}
        for _ in range(blocks)
    ]


def test_each_message_counts_once_and_is_priced_by_its_own_model() -> None:
    records = [
        {"type": "user", "message": {"role": "user", "content": "go"}},
        *_block_records("m1", HAIKU, usage(100, 20), blocks=3),
        {"type": "assistant", "message": {"model": "<synthetic>", "usage": usage(9, 9)}},
        *_block_records("m2", SONNET, usage(50, 5, cache_read=7), blocks=2),
    ]
    found = models.spent(records)
    assert found.model == SONNET
    assert found.tokens == Tokens(150, 25, cache_read=7)
    expected = prices.cost(HAIKU, Tokens(100, 20)) + prices.cost(SONNET, Tokens(50, 5, 7))
    assert found.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize(
    ("records", "tokens"),
    [
        ([reply_record("x", model="claude-fable-5-2", usage=usage(5, 5))], Tokens(5, 5)),
        ([reply_record("x", model=HAIKU, usage={"input_tokens": -1})], None),
        ([reply_record("x", model=HAIKU, usage={"input_tokens": "5"})], None),
        ([reply_record("x", model=HAIKU)], None),
        ([reply_record("x", usage=usage(5, 5))], Tokens(5, 5)),
    ],
    ids=["unpriced", "negative", "not-a-number", "no-usage", "no-model"],
)
def test_a_cost_that_cannot_be_known_is_none(
    records: list[dict[str, Any]], tokens: Tokens | None
) -> None:
    found = models.spent(records)
    assert found.cost_usd is None
    assert found.tokens == tokens


def test_the_session_model_is_the_main_agents_last() -> None:
    records = [reply_record("a", model=SONNET), reply_record("b", model="claude-opus-5-5")]
    assert models.session_model(records) == "claude-opus-5-5"
    assert models.session_model([]) is None


def test_the_skill_and_verify_tell_the_main_agent_to_pass_each_slots_model() -> None:
    root = Path(__file__).resolve().parent.parent
    for name in ("SKILL.md", "commands/verify.md"):
        text = " ".join((root / name).read_text(encoding="utf-8").split())
        assert "`models`" in text or "in models" in text, name
        assert "leave `model` out where it is null" in text or (
            "leave model out where it is null" in text
        ), name


def test_a_state_with_slot_models_loads_and_saves_as_it_was(two_models: Project) -> None:
    from santa_method.state.model.reading import StateError
    from santa_method.state.model.run import RunState

    two_models.spawn(model="haiku")
    path = two_models.root / ".santa" / "runs" / two_models.run_id / "state.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["slot_models"] == {"B": "haiku", "C": "sonnet"}
    assert data["rounds"][0]["spawns"][0]["slot"] == "B"
    assert RunState.from_json(data).to_json() == data
    with pytest.raises(StateError, match="slot_models"):
        RunState.from_json({**data, "slot_models": {"B": 3}})


def test_runs_show_prints_the_open_slots_models_again(two_models: Project) -> None:
    two_models.spawn(model="haiku")
    shown = two_models.santa("runs", "show", two_models.run_id)
    assert shown.returncode == 0, shown.stderr
    assert two_models.instruction in shown.stdout
    assert "  B: haiku\n  C: sonnet\n" in shown.stdout
