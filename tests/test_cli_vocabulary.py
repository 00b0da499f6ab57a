"""One vocabulary across the CLI: the same flag names, the same sentences.

A newcomer who learns `--budget-usd` in one command, or why one reviewer is
not enough, must meet the same words in every other; a mistyped flag must
show the usage of the command that was mistyped.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import pytest

from santa_method.claude_code.hooks import HANDLERS
from santa_method.claude_code.protocol import HOOK_EVENTS
from santa_method.cli import build_parser, main
from santa_method.core.errors import InputError
from santa_method.core.types import TOO_FEW_REVIEWERS
from santa_method.headless.api import VerifyOptions
from santa_method.headless.batch import BatchOptions
from santa_method.state.config import Config, parse_config

SENTENCE = "a run needs at least 2 reviewers: one is a second opinion, not a verification"


@pytest.fixture
def project(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared project (conftest.py) with a key, an output, a spec and three items:
    every refusal here must come before any of them is used."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    (project / "out.md").write_text("# out\n", encoding="utf-8")
    (project / "spec.md").write_text("a title\n", encoding="utf-8")
    (project / "items").mkdir()
    for n in range(3):
        (project / "items" / f"{n}.md").write_text(f"item {n}\n", encoding="utf-8")
    return project


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_the_sentence_is_defined_once() -> None:
    assert TOO_FEW_REVIEWERS == SENTENCE


@pytest.mark.parametrize(
    "command",
    [
        ("round", "start", "--against", "out.md", "--spec", "spec.md"),
        ("run", "--against", "out.md", "--spec", "spec.md"),
        ("batch", "items", "--spec", "spec.md"),
    ],
    ids=["round-start", "run", "batch"],
)
def test_one_reviewer_gets_the_same_sentence_on_every_command(
    project: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    err = usage_error(capsys, *command, "--reviewers", "1")
    assert "argument --reviewers: " in err and SENTENCE in " ".join(err.split())
    usage = "usage: santa " + " ".join(c for c in command[:2] if not c.startswith("-"))
    assert err.startswith(usage.replace(" items", "")), err
    assert not (project / ".santa" / "runs").exists()
    assert not (project / ".santa" / "batches").exists()


def test_one_reviewer_from_the_config_or_the_api_gets_the_sentence_too(project: Path) -> None:
    with pytest.raises(InputError, match=SENTENCE):
        parse_config("reviewers: 1\n")
    with pytest.raises(InputError, match=SENTENCE):
        Config().override(reviewers=1)
    from santa_method.headless import verify_sync
    from santa_method.headless.batch import verify_batch_sync

    with pytest.raises(InputError, match=SENTENCE):
        verify_sync("spec", project / "out.md", options=VerifyOptions(reviewers=1))
    with pytest.raises(InputError, match=SENTENCE):
        verify_batch_sync(
            sorted((project / "items").iterdir()), "spec", options=BatchOptions(reviewers=1)
        )


def test_a_config_of_one_reviewer_refuses_round_start(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".santa").mkdir()
    (project / ".santa" / "config.yaml").write_text("reviewers: 1\n", encoding="utf-8")
    assert main(["round", "start", "--against", "out.md", "--spec", "spec.md"]) == 2
    assert SENTENCE in capsys.readouterr().err


@pytest.mark.parametrize(
    ("labels", "reviews", "said"),
    [
        ("B", 2, "--labels names 1 reviewer for 2 reviews"),
        ("B,C,D", 2, "--labels names 3 reviewers for 2 reviews"),
    ],
)
def test_labels_count_in_words(
    project: Path, capsys: pytest.CaptureFixture[str], labels: str, reviews: int, said: str
) -> None:
    files = []
    for n in range(reviews):
        path = project / f"r{n}.json"
        path.write_text(f'{{"n": {n}}}', encoding="utf-8")
        files.append(str(path))
    assert main(["gate", *files, "--labels", labels]) == 2
    assert said in capsys.readouterr().err


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every sub-command path, nested ones too (`round start`, `batch plan`)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*path, name))
                found += _commands(sub, (*path, name))
    for name, sub in (getattr(parser, "subparsers", None) or {}).items():
        found.append((*path, name))
        found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(build_parser())


def test_every_command_is_found() -> None:
    assert {("validate",), ("round", "start"), ("batch", "plan"), ("log",)} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_a_mistyped_flag_shows_the_sub_commands_usage(
    project: Path, capsys: pytest.CaptureFixture[str], path: tuple[str, ...]
) -> None:
    err = usage_error(capsys, *path, "--no-such-flag")
    first = err.splitlines()[0]
    assert first.startswith(f"usage: santa {' '.join(path)} "), err
    assert "COMMAND ..." not in first


def test_the_top_level_keeps_its_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, "--no-such-flag")
    assert err.startswith("usage: santa [-h]")


def test_hook_help_lists_every_registered_hook(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hook", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert len(HANDLERS) >= 3
    for name, handler in HANDLERS.items():
        summary = " ".join((handler.__doc__ or "").split())
        assert summary, f"hook {name} has no description"
        assert f"{name} {summary}" in text


def test_hook_help_follows_the_registry(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def teammate_hook(payload: object) -> None:
        """SubagentStop: a hook added later."""

    # A new hook is named in the protocol's registry and given a handler.
    monkeypatch.setitem(HOOK_EVENTS, "subagent-stop-later", "SubagentStop")
    monkeypatch.setitem(HANDLERS, "subagent-stop-later", teammate_hook)
    assert main(["hook", "--help"]) == 0
    assert "subagent-stop-later SubagentStop: a hook added later." in " ".join(
        capsys.readouterr().out.split()
    )


@pytest.mark.parametrize("command", [("run",), ("batch",), ("round", "start")], ids=" ".join)
def test_one_name_for_the_budget(command: tuple[str, ...], capsys) -> None:
    assert main([*command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "--budget-usd USD" in text
    assert "--max-cost-usd is the old spelling" in " ".join(text.split())
    assert "--max-cost-usd X" not in text and "--max-cost-usd USD" not in text
    parser = build_parser(command[0])
    base = ["--against", "a", "--spec", "s"] if command[0] != "batch" else ["i", "--spec", "s"]
    for flag in ("--budget-usd", "--max-cost-usd"):
        args = parser.parse_args([*command, *base, flag, "0.5"])
        assert args.budget_usd == 0.5


@pytest.mark.parametrize("command", [("run",), ("batch",), ("round", "start")], ids=" ".join)
@pytest.mark.parametrize("flag", ["--budget-usd", "--max-cost-usd"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "much"])
def test_a_budget_is_a_finite_positive_amount(
    command: tuple[str, ...], flag: str, value: str, capsys
) -> None:
    err = usage_error(capsys, *command, f"{flag}={value}")
    assert f"argument {flag}: " in err and repr(value) in err


def _stray_breaks(text: str) -> list[str]:
    """Lines of prose broken far before their paragraph's width (under half
    of it) although the paragraph goes on: a line break left in by an edit.
    Indented lines (lists, flag tables) and the line that introduces one are
    laid out by hand."""
    width = max(len(line) for line in text.splitlines())
    lines = text.splitlines()
    return [
        line
        for line, after in itertools.pairwise(lines)
        if line.strip()
        and after.strip()
        and not line.startswith(" ")
        and not after.startswith(" ")
        and not line.rstrip().endswith(":")
        and len(line) < width / 2
    ]


@pytest.mark.parametrize("name", ["run", "batch", "report"])
def test_help_descriptions_have_no_stray_line_break(name: str) -> None:
    import importlib

    description = importlib.import_module(f"santa_method.cli.{name}_cmd").DESCRIPTION
    assert _stray_breaks(description) == []
