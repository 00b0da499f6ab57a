"""What a backend answers is checked where the loop receives it (issue 29,
items 3 and 4; issue 33, item 1).

A backend is any object with `review` and `fix`, so its answer is
untrusted: a negative cost must not buy a run more rounds than its budget,
a NaN token count must not reach the run's state, and a reply that is no
ReviewReply (or an output that is bytes) must end in the package's own
BackendError naming the backend and the fault, never in an AttributeError.
Nothing is shipped, and nothing the backend said about its cost is logged.
The same check holds for every face: a custom backend, the shipped
`anthropic` and `claude` backends, and a batch (its items and its screens).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e.stub_server import FIXER, REVIEWER, Json, first_user_text
from santa_method.cli import main
from santa_method.core.errors import BackendError
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.anthropic import AnthropicBackend
from santa_method.headless.backends.anthropic_batch import AnthropicBatchBackend
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.headless.batch import BatchOptions, verify_batch_sync
from santa_method.state import batches
from santa_method.state import log as runlog
from santa_method.state.batches import BatchItem
from santa_method.state.store import list_run_ids, load_state

from .batch_helpers import SCRIPT, notes_batch, texts
from .conftest import failing
from .scripted import year_review
from .test_diff_review import SPEC as CHANGE_SPEC
from .test_diff_review import ChangeReviewer, repo

__all__ = ["repo"]

SPEC = "The README names the current year."
NAN, INF = float("nan"), float("inf")


def _spoil(**fields: Any) -> Callable[[Any], Any]:
    return lambda good: dataclasses.replace(good, **fields)


# What a reviewer answers instead of a good ReviewReply, and the words naming the fault.
BAD_REVIEWS: dict[str, tuple[Callable[[ReviewReply], Any], str]] = {
    "None": (lambda good: None, "it returned None, not a ReviewReply"),
    "a str": (lambda good: good.text, "type str, not a ReviewReply"),
    "a dict": (lambda good: json.loads(good.text), "type dict, not a ReviewReply"),
    "tokens None": (_spoil(tokens=None), "tokens must be a Tokens, not None"),
    "tokens as a dict": (_spoil(tokens={"input": 1}), "tokens must be a Tokens"),
    "cost as a string": (_spoil(cost_usd="0.01"), "cost_usd must be a number"),
    "a negative cost": (_spoil(cost_usd=-1.0), "cost_usd must be a number"),
    "a NaN cost": (_spoil(cost_usd=NAN), "cost_usd must be a number"),
    "an infinite cost": (_spoil(cost_usd=INF), "cost_usd must be a number"),
    "a boolean cost": (_spoil(cost_usd=True), "cost_usd must be a number"),
    "negative tokens": (_spoil(tokens=Tokens(-5, 1)), "tokens.input must be a whole number"),
    "NaN tokens": (_spoil(tokens=Tokens(1, NAN)), "tokens.output must be a whole number"),  # type: ignore[arg-type]
    "fractional tokens": (_spoil(tokens=Tokens(0, 0, 1.5)), "tokens.cache_read must be"),  # type: ignore[arg-type]
    "text as bytes": (
        lambda good: dataclasses.replace(good, text=good.text.encode()),
        "text must be a string",
    ),
    "text None": (_spoil(text=None), "text must be a string, not None"),
    "a lone surrogate": (
        lambda good: dataclasses.replace(good, text=good.text + "\ud800"),
        "text holds '\\ud800'",
    ),
    "obj a list": (_spoil(obj=[1]), "obj must be a dict or None"),
    "obj with a set": (_spoil(obj={"verdict": {1}}), "obj is not a JSON object"),
    "obj with a NaN": (_spoil(obj={"verdict": NAN}), "obj is not a JSON object"),
    "model an int": (_spoil(model=5), "model must be a string or None"),
    "failure an int": (_spoil(failure=1), "failure must be a string or None"),
}

# What a fixer answers instead of a good FixReply.
BAD_FIXES: dict[str, tuple[Callable[[FixReply], Any], str]] = {
    "None": (lambda good: None, "it returned None, not a FixReply"),
    "a str": (lambda good: good.output, "type str, not a FixReply"),
    "output as bytes": (
        lambda good: dataclasses.replace(good, output=(good.output or "").encode()),
        "output must be a string or None, not a value of type bytes",
    ),
    "output an int": (_spoil(output=2024), "output must be a string or None"),
    "output with a lone surrogate": (
        lambda good: dataclasses.replace(good, output=(good.output or "") + "\udc80"),
        "output holds '\\udc80'",
    ),
    "notes None": (_spoil(notes=None), "notes must be a string, not None"),
    "tokens None": (_spoil(tokens=None), "tokens must be a Tokens"),
    "a negative cost": (_spoil(cost_usd=-0.5), "cost_usd must be a number"),
    "negative tokens": (_spoil(tokens=Tokens(0, -1)), "tokens.output must be a whole number"),
}


class Spoiling:
    """A custom backend whose reviewers flag the year 1999 and whose fixer
    writes 2024, as a user's would, but with one answer spoiled."""

    name = "homemade"

    def __init__(
        self,
        review: Callable[[ReviewReply], Any] | None = None,
        fix: Callable[[FixReply], Any] | None = None,
    ) -> None:
        self.spoil_review = review
        self.spoil_fix = fix
        self.reviews = 0

    async def review(self, request: ReviewRequest) -> Any:
        self.reviews += 1
        good = ReviewReply(
            text=json.dumps(year_review(request)), tokens=Tokens(100, 20), cost_usd=0.004
        )
        return good if self.spoil_review is None else self.spoil_review(good)

    async def fix(self, request: FixRequest) -> Any:
        good = FixReply(
            output=request.output.replace("1999", "2024"),
            notes="1. fixed: the year",
            tokens=Tokens(50, 10),
            cost_usd=0.002,
        )
        return good if self.spoil_fix is None else self.spoil_fix(good)


def _log(project: Path) -> list[dict[str, Any]]:
    return runlog.read(project / ".santa" / "log.jsonl").records


def _usage_numbers(records: list[dict[str, Any]]) -> list[float]:
    """Every cost and token count the log holds."""
    found: list[float] = []
    for record in records:
        for key in ("cost_usd", "tokens"):
            if isinstance(record.get(key), int | float):
                found.append(record[key])
        for value in (record.get("token_detail") or {}).values():
            if isinstance(value, int | float):
                found.append(value)
    return found


def _refused(project: Path, target: Path, before: str, message: str, fault: str) -> None:
    """The run ended escalated, naming the backend and the fault; nothing shipped,
    no number the backend spoiled was kept, and the run's state reads."""
    assert "the homemade backend's" in message and fault in message, message
    records = _log(project)
    assert not [r for r in records if r["event"] == "ship"]
    (escalation,) = [r for r in records if r["event"] == "escalate"]
    assert "the homemade backend's" in escalation["reason"]
    assert all(math.isfinite(n) and n >= 0 for n in _usage_numbers(records))
    state = load_state(escalation["run_id"])
    assert state.status == "escalated"
    assert target.read_text(encoding="utf-8") == before


@pytest.mark.parametrize("case", sorted(BAD_REVIEWS))
def test_a_malformed_review_is_a_backend_error(case: str, project: Path, target: Path) -> None:
    spoil, fault = BAD_REVIEWS[case]
    before = target.read_text(encoding="utf-8")
    with pytest.raises(BackendError) as caught:
        verify_sync(SPEC, target, options=VerifyOptions(backend=Spoiling(review=spoil)))
    assert caught.value.exit_code == 3
    _refused(project, target, before, str(caught.value), fault)


@pytest.mark.parametrize("case", sorted(BAD_FIXES))
def test_a_malformed_fix_is_a_backend_error(case: str, project: Path, target: Path) -> None:
    spoil, fault = BAD_FIXES[case]
    before = target.read_text(encoding="utf-8")
    with pytest.raises(BackendError) as caught:
        verify_sync(SPEC, target, options=VerifyOptions(backend=Spoiling(fix=spoil), in_place=True))
    _refused(project, target, before, str(caught.value), fault)


def test_a_negative_cost_cannot_stretch_a_budget(
    project: Path, target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29, item 3: cost_usd=-1 with a $0.01 budget went three rounds
    and left a negative mean cost in `santa metrics`."""
    backend = Spoiling(review=_spoil(cost_usd=-1.0))
    with pytest.raises(BackendError, match="cost_usd must be a number"):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend, budget_usd=0.01))
    assert backend.reviews <= 2  # round 1 only, not one more
    assert main(["metrics", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    assert cost["mean_cost_usd_per_run"] is None or cost["mean_cost_usd_per_run"] >= 0


def test_bad_token_counts_never_reach_the_state(project: Path, target: Path) -> None:
    """Issue 29, item 4: negative or NaN counts made the run's state
    unreadable, so the run could not be closed."""
    for tokens in (Tokens(-5, 1), Tokens(NAN, 1)):  # type: ignore[arg-type]
        with pytest.raises(BackendError):
            verify_sync(
                SPEC, target, options=VerifyOptions(backend=Spoiling(review=_spoil(tokens=tokens)))
            )
    ended = [r for r in _log(project) if r["event"] == "escalate"]
    assert len(ended) == 2
    for record in ended:
        assert load_state(record["run_id"]).status == "escalated"


def _spoiled(cls: type, method: str, monkeypatch: pytest.MonkeyPatch, **fields: Any) -> None:
    """`cls.method` answers as it does, with `fields` replaced."""
    original = getattr(cls, method)

    async def spoiled(self: Any, request: Any) -> Any:
        return dataclasses.replace(await original(self, request), **fields)

    monkeypatch.setattr(cls, method, spoiled)


def test_the_anthropic_backend_goes_through_the_same_check(
    stub_server: Any,
    project: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = stub_server(
        {
            REVIEWER: lambda body: Json(failing(body, "Released in 1999.")),
            FIXER: lambda body: Json({"output": "# Tool\n\nReleased in 2024.\n", "report": []}),
        }
    )
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    _spoiled(AnthropicBackend, "fix", monkeypatch, cost_usd=-1.0)
    code = main(["run", "--against", str(target), "--spec-text", SPEC, "--quiet"])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "the anthropic backend's fix answer cannot be used: cost_usd" in err
    assert "internal error" not in err and "NICE" not in out
    records = _log(project)
    assert not [r for r in records if r["event"] in ("ship", "fix")]
    assert all(n >= 0 for n in _usage_numbers(records))


@pytest.mark.slow
def test_the_claude_backend_goes_through_the_same_check(
    stub_server: Any,
    claude_env: Any,
    claude_cli: str,
    project: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from santa_method.headless.backends.claude import ClaudeBackend

    server = stub_server({REVIEWER: lambda body: Json(failing(body, "Released in 1999."))})
    env = claude_env(server, CLAUDE_CODE_MAX_RETRIES="1")
    _spoiled(ClaudeBackend, "review", monkeypatch, tokens=Tokens(-1, 0))
    backend = ClaudeBackend(env=env, max_retries=1, cli_path=claude_cli)
    with pytest.raises(BackendError, match="the claude backend's review answer cannot be used"):
        verify_sync(SPEC, target, options=VerifyOptions(backend=backend))
    assert not [r for r in _log(project) if r["event"] == "ship"]


def test_a_batch_stops_at_a_malformed_review(
    stub_server: Any,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`santa batch --backend anthropic-batch`: exit 3, nothing accepted."""
    server = stub_server(SCRIPT)
    _spoiled(AnthropicBatchBackend, "review", monkeypatch, cost_usd=NAN)
    code = main(notes_batch(project, server.base_url, monkeypatch, n=3))
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "the anthropic-batch backend's review answer cannot be used: cost_usd" in err
    assert "ACCEPTED" not in out and "internal error" not in err
    assert not [r for r in _log(project) if r["event"] == "ship"]


def test_a_batch_screen_fixer_goes_through_the_same_check(
    stub_server: Any, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A screen's fixer is called by the batch itself, not by a run's loop."""
    server = stub_server(SCRIPT)
    original = AnthropicBackend.fix

    async def fix(self: AnthropicBackend, request: FixRequest) -> Any:
        reply = await original(self, request)
        if "Run batch " in request.assignment:  # a screen's fix, not an item run's
            return dataclasses.replace(reply, output=(reply.output or "").encode())
        return reply

    monkeypatch.setattr(AnthropicBackend, "fix", fix)
    values = texts(40, set(range(0, 40, 2)))  # a systemic defect: screens follow
    items = [
        BatchItem(id=f"item-{i:04d}", text=t, record={"id": f"item-{i:04d}", "output": t})
        for i, t in enumerate(values)
    ]
    backend = AnthropicBackend(base_url=server.base_url, api_key="test", max_retries=0)
    with pytest.raises(BackendError, match="the anthropic backend's fix answer cannot be used"):
        verify_batch_sync(
            items,
            "Each summary has all its parts.",
            options=BatchOptions(backend=backend, seed=7, rate=0.2),
        )
    assert any("Run batch " in first_user_text(r.body) for r in server.requests_for(FIXER))
    (batch_id,) = [p.name for p in (project / ".santa" / "batches").iterdir() if p.is_dir()]
    assert not [
        e for e in batches.events(batch_id) if e["event"] == "fix" and e.get("via") == "screen"
    ]
    assert batches.load(batch_id).verdict is None  # stopped, resumable, never accepted


def test_a_change_fixer_goes_through_the_same_check(repo: Path) -> None:
    """`--against-diff`: the fixer is called once per changed file."""
    files = (repo / "docs" / "README.md", repo / "app.py")
    before = {p: p.read_bytes() for p in files}

    class Bytes(ChangeReviewer):
        async def fix(self, request: FixRequest) -> FixReply:
            reply = await super().fix(request)
            return dataclasses.replace(reply, output=(reply.output or "").encode())

    with pytest.raises(BackendError, match="the scripted backend's fix answer cannot be used"):
        verify_sync(
            CHANGE_SPEC,
            options=VerifyOptions(against_diff="HEAD", backend=Bytes(), max_fixes=1, in_place=True),
        )
    assert {p: p.read_bytes() for p in files} == before
    (run_id,) = list_run_ids()
    assert load_state(run_id).status == "escalated"
