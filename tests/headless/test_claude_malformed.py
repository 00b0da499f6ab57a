"""A reply the claude backend cannot read is a backend error (issue 11): exit 3
with the reason, never NICE and never "internal error".

Two boundaries. The Messages API: the real Claude Code CLI (bundled in
claude-agent-sdk) is pointed at a server that answers with a broken event
stream, and `santa run --backend claude` must end in exit 3 naming what the
CLI said. The SDK's message stream: the real SDK starts `fake_claude.py` in
place of the CLI, which writes exactly the lines a test scripts (broken
JSON, missing fields, numbers of the wrong type, NaN costs, a working copy
the fixer deleted), so every shape the CLI could hand the SDK is tried.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _reviews import review_of
from e2e.conftest import make_claude_env
from santa_method.cli import main
from santa_method.core.errors import BackendError
from santa_method.core.schema import strict_schema
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import FixRequest, ReviewRequest
from santa_method.headless.backends.claude import ClaudeBackend
from santa_method.state import log as runlog

from .scripted import CRITERIA

pytestmark = pytest.mark.slow

FAKE = Path(__file__).with_name("fake_claude.py")


@dataclass
class _Base:
    """What make_claude_env needs of a server: its address."""

    base_url: str


def _result(**fields: Any) -> dict[str, Any]:
    """A result message as the CLI writes it, with `fields` changed."""
    base: dict[str, Any] = {
        "type": "result",
        "subtype": "success",
        "duration_ms": 10,
        "duration_api_ms": 5,
        "is_error": False,
        "num_turns": 1,
        "session_id": "s-1",
        "total_cost_usd": 0.001,
        "usage": {"input_tokens": 10, "output_tokens": 2},
        "modelUsage": {"claude-x": {"inputTokens": 10, "outputTokens": 2}},
        "result": "done",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def _review(verdict: str = "PASS") -> str:
    failing = CRITERIA if verdict == "FAIL" else ()
    return json.dumps(_result(structured_output=review_of(CRITERIA, failing=failing, canary="@canary@")))


# Each scene: what the "CLI" writes, and a word the backend error must hold.
SCENES: dict[str, tuple[dict[str, Any], str]] = {
    "not JSON": ({"lines": ["{this is not json"]}, "Claude Code"),
    "no result": ({"lines": []}, "without a result"),
    "result without its fields": ({"lines": [{"type": "result", "subtype": "success"}]}, "result"),
    "exit 1": ({"lines": [], "exit": 1, "stderr": "boom\n"}, "Claude Code"),
    "initialize refused": ({"init": "error", "lines": []}, "init refused"),
    "tokens as text": (
        {"lines": [_result(modelUsage={"claude-x": {"inputTokens": "lots"}})]},
        "inputTokens",
    ),
    "negative tokens": (
        {"lines": [_result(modelUsage=..., usage={"input_tokens": -5})]},
        "input_tokens",
    ),
    "usage a list": ({"lines": [_result(modelUsage=..., usage=[1, 2])]}, "usage"),
    "model usage a list": ({"lines": [_result(modelUsage=[1])]}, "modelUsage"),
    "cost as text": ({"lines": [_result(total_cost_usd="free")]}, "total_cost_usd"),
    "cost NaN": ({"lines": [_review().replace("0.001", "NaN")]}, "total_cost_usd"),
    "answer a number": ({"lines": [_result(result=5)]}, "not text"),
    "subtype missing": ({"lines": [_result(subtype=None)]}, "subtype"),
    "an error result": (
        {"lines": [_result(is_error=True, result="API Error: the stream broke")]},
        "the stream broke",
    ),
}


@pytest.fixture
def fake_cli(tmp_path: Path) -> Any:
    """`cli_path` of the fake CLI and a function that sets its scene."""
    launcher = tmp_path / "claude"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n', encoding="utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
    scene = tmp_path / "scene.json"

    def backend(**play: Any) -> ClaudeBackend:
        scene.write_text(json.dumps(play), encoding="utf-8")
        env = {"FAKE_CLAUDE_SCENE": str(scene), "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1"}
        return ClaudeBackend(env=env, max_retries=0, cli_path=str(launcher))

    return backend


def _request(project: Path) -> ReviewRequest:
    return ReviewRequest(
        prefix="# santa-method review assignment\n",
        round_part="output\nsanta-canary: 0123abcd\n",
        schema=strict_schema(CRITERIA),
        project_dir=str(project),
    )


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_a_stream_the_sdk_hands_over_broken_is_a_backend_error(
    fake_cli: Any, project: Path, scene: str
) -> None:
    play, says = SCENES[scene]
    with pytest.raises(BackendError) as caught:
        asyncio.run(fake_cli(**play).review(_request(project)))
    assert says in str(caught.value), str(caught.value)


def test_a_valid_review_with_a_nan_cost_is_not_nice(fake_cli: Any, project: Path, target) -> None:
    """A PASS review the gate would take, but its cost would switch the budget off."""
    backend = fake_cli(lines=[_review().replace("0.001", "NaN")])
    with pytest.raises(BackendError, match="total_cost_usd"):
        verify_sync(
            "Has a License section.",
            target,
            options=VerifyOptions(backend=backend, budget_usd=1.0),
        )
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] == "ship"]


def test_the_same_review_with_a_readable_cost_is_nice(fake_cli: Any, project: Path, target) -> None:
    """The control: the fake CLI's review is a valid one, so only the cost decided above."""
    result = verify_sync(
        "Has a License section.", target, options=VerifyOptions(backend=fake_cli(lines=[_review()]))
    )
    assert result.verdict == "NICE", result.to_json()


@pytest.mark.parametrize(("spoil", "says"), [("delete", "gone"), ("fffe00", "not UTF-8")])
def test_a_fixer_that_spoils_its_working_copy_is_a_backend_error(
    fake_cli: Any, project: Path, spoil: str, says: str
) -> None:
    backend = fake_cli(lines=[_result()], copy=spoil)
    request = FixRequest(
        assignment="# santa-method fix assignment\n",
        target_path=str(project / "README.md"),
        output="# Tool\n",
        model=None,
        timeout=None,
        project_dir=str(project),
    )
    with pytest.raises(BackendError, match=says):
        asyncio.run(backend.fix(request))


@pytest.mark.parametrize("broken_api", ["not-json", "html"], indirect=True)
def test_santa_run_with_the_claude_backend_on_a_broken_api_exits_3(
    project: Path,
    target: Path,
    broken_api: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = project.parent / "home"
    for name, value in make_claude_env(home, _Base(os.environ["ANTHROPIC_BASE_URL"])).items():
        monkeypatch.setenv(name, value)
    args = ["run", "--against", str(target), "--spec-text", "Has a License."]
    code = main([*args, "--backend", "claude", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "internal error" not in err and "Traceback" not in err
    assert "NICE" not in out
    # The reason is what the CLI said about the reply, not a status word.
    assert "success" not in err.split("santa: ", 1)[1][:40], err
    records = runlog.read(project / ".santa" / "log.jsonl").records
    assert not [r for r in records if r["event"] == "ship"]
