"""Reviewers on different backends in one run (issue 31, items 2 and 3):
`--models anthropic:claude-sonnet-4-5,openai:gpt-5.1` calls the Messages
API for one slot and a Chat Completions endpoint for the other, both on
loopback, and gates both: either one's FAIL or failure blocks the ship.
The entries set the slots, and a name santa cannot route is refused before
any call, as the CLI, the config and the Python options all read the list
through one rule (`core/reviewers.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import REVIEWER, Error
from e2e.stub_server import Json as AnthropicJson
from santa_method.cli import main
from santa_method.core.errors import InputError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends import openai as openai_backend
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.headless.backends.openai import OpenAIBackend
from santa_method.headless.batch import BatchOptions, verify_batch_sync
from santa_method.state import log as runlog
from santa_method.state.store import load_state

from . import openai_stub as oa
from .conftest import failing, passing

pytestmark = pytest.mark.timeout(120)

SPEC = "A README with the release year and a License section."
MIXED = "anthropic:claude-sonnet-4-5,openai:gpt-5.1"


@pytest.fixture(autouse=True)
def _no_wait_between_cut_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_backend, "CUT_RETRY_DELAY", 0.0)


@pytest.fixture
def clean(target: Path) -> Path:
    target.write_text(target.read_text().replace("1999", "2024"), encoding="utf-8")
    return target


def endpoints(monkeypatch: pytest.MonkeyPatch, anthropic: Any, openai: Any) -> None:
    """Point santa's two backends at the stubs, as a user's environment would."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")


def run(*args: str) -> list[str]:
    return ["run", "--spec-text", SPEC, "--quiet", *args]


def logged(project: Path) -> list[dict[str, Any]]:
    path = project / ".santa" / "log.jsonl"
    return runlog.read(path).records if path.exists() else []


def test_a_claude_and_an_openai_reviewer_are_both_called_and_gated(
    stub_server, openai_stub, project: Path, clean: Path, monkeypatch, capsys
) -> None:
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(passing(body))})
    endpoints(monkeypatch, claude, other)
    code = main(run("--against", str(clean), "--models", MIXED, "--json"))
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["verdict"] == "NICE"
    # Each slot went to its own backend, under the model it named.
    assert [r.body["model"] for r in claude.requests_for(REVIEWER)] == ["claude-sonnet-4-5"]
    assert [r.body["model"] for r in other.requests_for(oa.REVIEWER)] == ["gpt-5.1"]
    (gate,) = result["history"]
    assert [(r["label"], r["backend"], r["valid"], r["verdict"]) for r in gate["reviewers"]] == [
        ("B", "anthropic", True, "PASS"),
        ("C", "openai", True, "PASS"),
    ]
    # Both slots' costs count, each at its own list price.
    assert result["cost_usd"] == pytest.approx((100 * 3 + 20 * 15 + 100 * 1.25 + 20 * 10) / 1e6)
    state = load_state(result["run_id"])
    assert state.models == ["anthropic:claude-sonnet-4-5", "openai:gpt-5.1"]
    assert state.reviewers == 2
    assert not any("same model" in w for w in result["warnings"])


@pytest.mark.parametrize("who", ["claude", "openai"])
def test_either_reviewers_fail_blocks_the_ship(
    stub_server, openai_stub, project: Path, target: Path, monkeypatch, capsys, who: str
) -> None:
    def verdict(body: dict[str, Any], mine: str) -> dict[str, Any]:
        return failing(body, "Released in 1999.") if who == mine else passing(body)

    claude = stub_server({REVIEWER: lambda body: AnthropicJson(verdict(body, "claude"))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(verdict(body, "openai"))})
    endpoints(monkeypatch, claude, other)
    code = main(run("--against", str(target), "--models", MIXED, "--max-fixes", "0", "--json"))
    out, err = capsys.readouterr()
    assert code == 1, err
    result = json.loads(out)
    assert (result["verdict"], result["outcome"]) == ("NAUGHTY", "reported")
    assert result["issues"][0]["flagged_by"] == (["B"] if who == "claude" else ["C"])
    assert not [r for r in logged(project) if r["event"] == "ship"]


@pytest.mark.parametrize(
    ("broken", "fault"),
    [
        ("openai", oa.Error(503, "down")),
        ("openai", oa.Cut(1)),
        ("openai", oa.Raw(b"data: {garbage\n\n")),
        ("claude", Error(500)),
    ],
)
def test_either_reviewers_failure_is_exit_3_and_never_ships(
    stub_server,
    openai_stub,
    project: Path,
    clean: Path,
    monkeypatch,
    capsys,
    broken: str,
    fault: Any,
) -> None:
    fine_claude = lambda body: AnthropicJson(passing(body))  # noqa: E731
    claude = stub_server({REVIEWER: (lambda body: fault) if broken == "claude" else fine_claude})
    other = openai_stub(
        {
            oa.REVIEWER: (lambda body: fault)
            if broken == "openai"
            else (lambda b: oa.Json(passing(b)))
        }
    )
    endpoints(monkeypatch, claude, other)
    code = main(run("--against", str(clean), "--models", MIXED))
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "Traceback" not in err and "NICE" not in out
    events = [r["event"] for r in logged(project)]
    assert events[0] == "run" and "ship" not in events and events[-1] == "escalate"


@pytest.mark.parametrize(
    ("models", "named"),
    [
        ("anthropic:sonnet,gemini:gemini-2.5-pro", "gemini:gemini-2.5-pro"),
        ("sonnet,llama3.1:8b", "llama3.1:8b"),  # a tag's colon needs its backend first
        ("openai:gpt-5.1,openai:", None),
    ],
)
def test_a_name_santa_cannot_route_is_refused_before_any_call(
    stub_server, openai_stub, project: Path, target: Path, monkeypatch, capsys, models, named
) -> None:
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(passing(body))})
    endpoints(monkeypatch, claude, other)
    code = main(run("--against", str(target), "--models", models))
    _, err = capsys.readouterr()
    assert code == 2, err
    if named is not None:
        assert f"cannot route '{named}'" in err
        assert "anthropic, claude, openai, anthropic-batch" in err
    else:
        assert "names the openai backend but no model" in err
    assert claude.requests == [] and other.requests == []
    assert logged(project) == []  # no run was opened


def test_the_entries_set_the_slots_and_a_count_that_disagrees_is_refused(
    stub_server, openai_stub, project: Path, clean: Path, monkeypatch, capsys
) -> None:
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(passing(body))})
    endpoints(monkeypatch, claude, other)
    assert main(run("--against", str(clean), "--models", MIXED, "--reviewers", "3")) == 2
    assert "--models names 2 reviewers (one per entry) but --reviewers asks for 3" in (
        capsys.readouterr().err
    )
    (project / ".santa").mkdir(exist_ok=True)
    (project / ".santa" / "config.yaml").write_text(
        "models: [sonnet, 'openai:gpt-5.1', 'openai:gpt-5-mini']\n", encoding="utf-8"
    )
    assert main(run("--against", str(clean), "--reviewers", "2")) == 2
    assert "the config's models names 3 reviewers" in capsys.readouterr().err
    assert claude.requests == [] and other.requests == []
    # Three entries, three reviewers: the config's list is the count.
    assert main(run("--against", str(clean), "--json")) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in result["history"][0]["reviewers"]] == ["B", "C", "D"]
    assert len(claude.requests_for(REVIEWER)) == 1
    assert sorted(r.body["model"] for r in other.requests_for(oa.REVIEWER)) == [
        "gpt-5-mini",
        "gpt-5.1",
    ]


def test_python_options_route_the_same_list_and_the_fixer_its_own(
    stub_server, openai_stub, project: Path, target: Path
) -> None:
    fixed = target.read_text().replace("1999", "2024")

    def year(body: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(body)
        return failing(body, "Released in 1999.") if "1999" in text else passing(body)

    claude = stub_server({REVIEWER: lambda body: AnthropicJson(year(body))})
    other = openai_stub(
        {
            oa.REVIEWER: lambda body: oa.Json(year(body)),
            oa.FIXER: [oa.Json({"output": fixed, "report": ["1. fixed: year"]})],
        }
    )
    result = verify_sync(
        SPEC,
        target,
        options=VerifyOptions(
            backend=AnthropicBackend(base_url=claude.base_url, api_key="test"),
            backends={"openai": OpenAIBackend(base_url=other.base_url, api_key="test")},
            models=["sonnet", "openai:gpt-5-mini"],
            fixer_model="openai:gpt-5.1",
        ),
    )
    assert result.verdict == "NICE" and result.rounds == 2
    assert [r.body["model"] for r in other.requests_for(oa.FIXER)] == ["gpt-5.1"]
    assert len(claude.requests_for(REVIEWER)) == 2  # B, in both rounds
    assert len(other.requests_for(oa.REVIEWER)) == 2  # C, in both rounds
    fix = [r for r in runlog.read(project / ".santa" / "log.jsonl").records if r["event"] == "fix"]
    assert fix[0]["backend"] == "openai" and fix[0]["model"] == "gpt-5.1-2025-11-13"


def test_python_options_refuse_what_the_cli_refuses(project: Path, target: Path) -> None:
    with pytest.raises(InputError, match=r"names 2 reviewers .* but reviewers asks for 3"):
        verify_sync(SPEC, target, options=VerifyOptions(models=MIXED.split(","), reviewers=3))
    with pytest.raises(InputError, match="cannot route 'mistral:large'"):
        verify_sync(SPEC, target, options=VerifyOptions(models=["sonnet", "mistral:large"]))


def test_a_batch_routes_its_reviewers_the_same_way(
    stub_server, openai_stub, project: Path, monkeypatch
) -> None:
    items = []
    for n in range(3):
        path = project / f"item{n}.md"
        path.write_text(f"# Item {n}\n\nReleased in 2024.\n\n## License\nMIT\n", encoding="utf-8")
        items.append(path)
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(passing(body))})
    endpoints(monkeypatch, claude, other)
    result = verify_batch_sync(
        items,
        SPEC,
        options=BatchOptions(models=MIXED.split(","), minimum=3, max_fixes=0, seed=1),
    )
    data = result.to_json()
    assert data["verdict"] == "ACCEPTED", data
    assert len(claude.requests_for(REVIEWER)) == 3
    assert len(other.requests_for(oa.REVIEWER)) == 3
    with pytest.raises(InputError, match="cannot route 'ollama:llama3'"):
        verify_batch_sync(items, SPEC, options=BatchOptions(models=["sonnet", "ollama:llama3"]))


def test_with_a_budget_an_unpriced_model_stops_the_run_before_it_spends_unless_the_config_prices_it(
    stub_server, openai_stub, project: Path, clean: Path, monkeypatch, capsys
) -> None:
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub(
        {oa.REVIEWER: lambda body: oa.Reply(oa.Json(passing(body)), model="llama3.1:8b")}
    )
    endpoints(monkeypatch, claude, other)
    local = "anthropic:sonnet,openai:llama3.1:8b"
    code = main(run("--against", str(clean), "--models", local, "--budget-usd", "1"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "no list price is known for openai:llama3.1:8b" in err
    assert claude.requests == [] and other.requests == []
    (project / ".santa").mkdir(exist_ok=True)
    (project / ".santa" / "config.yaml").write_text(
        "prices:\n  'llama3.1:8b': {input: 0, output: 0}\n", encoding="utf-8"
    )
    code = main(run("--against", str(clean), "--models", local, "--budget-usd", "1", "--json"))
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    # The local model costs nothing; sonnet's list price is the whole cost.
    assert result["cost_usd"] == pytest.approx((100 * 2 + 20 * 10) / 1e6)


def test_a_mixed_run_is_recorded_from_both_backends_and_replayed_without_either(
    stub_server, openai_stub, project: Path, clean: Path, monkeypatch, capsys
) -> None:
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(passing(body))})
    endpoints(monkeypatch, claude, other)
    folder = project / "replies"
    code = main(run("--against", str(clean), "--models", MIXED, "--record", str(folder), "--json"))
    out, err = capsys.readouterr()
    assert code == 0, err
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["backends"] == ["anthropic", "openai"]
    asked = len(claude.requests) + len(other.requests)
    # The replay answers both slots from the one folder and calls neither backend.
    replay = f"replay:{folder}"
    code = main(run("--against", str(clean), "--models", MIXED, "--backend", replay, "--json"))
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["verdict"] == "NICE" and result["replayed"]
    assert len(claude.requests) + len(other.requests) == asked


def test_santa_run_and_the_report_name_each_reviewer_and_warn_once_of_one_mind(
    stub_server, openai_stub, project: Path, clean: Path, monkeypatch, capsys
) -> None:
    claude = stub_server({REVIEWER: lambda body: AnthropicJson(passing(body))})
    other = openai_stub({oa.REVIEWER: lambda body: oa.Json(passing(body))})
    endpoints(monkeypatch, claude, other)
    claudes = "anthropic:claude-sonnet-4-5,anthropic:claude-haiku-4-5"
    args = ["run", "--spec-text", SPEC, "--against", str(clean), "--json"]
    code = main([*args, "--models", claudes, "--author-model", "claude-opus-4-5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # The live view names each reviewer's model and family before the round.
    assert "reviewer B: claude-sonnet-4-5 (claude, on anthropic)" in err
    assert "reviewer C: claude-haiku-4-5 (claude, on anthropic)" in err
    result = json.loads(out)
    assert [r["family"] for r in result["history"][0]["reviewers"]] == ["claude", "claude"]
    (warning,) = [w for w in result["warnings"] if "which wrote the output" in w]
    assert warning.startswith("every reviewer is a claude model, as is claude-opus-4-5")
    line = "--models anthropic:claude-sonnet-4-5,openai:gpt-5.1"
    assert warning.endswith(line)
    # The report says the same, from the run's state and replies.
    assert main(["report", result["run_id"], "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(j["label"], j["model"], j["family"]) for j in report["jury"]] == [
        ("B", "claude-sonnet-4-5", "claude"),
        ("C", "claude-haiku-4-5", "claude"),
    ]
    assert report["warnings"] == [warning]
    assert main(["report", result["run_id"]]) == 0
    comment = capsys.readouterr().out
    assert "- reviewers: B claude-sonnet-4-5 (claude), C claude-haiku-4-5 (claude)" in comment
    assert comment.count(line) == 2  # under the verdict, and in the full report
    # The line it gives adds another family: no warning then, and the report names both.
    code = main([*args, *line.split(" "), "--author-model", "claude-opus-4-5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    mixed = json.loads(out)
    assert not [w for w in mixed["warnings"] if "which wrote the output" in w]
    assert main(["report", mixed["run_id"], "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(j["backend"], j["family"]) for j in report["jury"]] == [
        ("anthropic", "claude"),
        ("openai", "gpt"),
    ]
    assert report["warnings"] == []
