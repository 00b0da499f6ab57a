"""`.santa/config.yaml`: defaults, strict checking, and flags that override."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest
import yaml

from santa_method.core.errors import InputError
from santa_method.state.config import (
    Config,
    config_path,
    load_config,
    parse_config,
    resolve_log_path,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "config.yaml"


def write(root: Path, text: str) -> Path:
    path = root / ".santa" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_or_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path) == Config()
    write(tmp_path, "# nothing set yet\n")
    assert load_config(tmp_path) == Config()
    c = Config()
    assert (c.rubric, c.reviewers, c.models, c.max_fixes, c.budget_usd, c.pre_check, c.log) == (
        "base",
        2,
        None,
        3,
        None,
        None,
        None,
    )


def test_a_full_config_is_read_and_typed(tmp_path: Path) -> None:
    write(
        tmp_path,
        "rubric: code+regulated\nreviewers: 3\nmodels: [opus, sonnet, openai:gpt-5.1]\n"
        "max_fixes: 0\nbudget_usd: 2\npre_check: make test\nlog: logs/santa.jsonl\n"
        "prices: {gpt-5.1: {input: 1.25, output: 10}, 'llama3.1:8b': {input: 0, output: 0}}\n",
    )
    c = load_config(tmp_path)
    assert c.rubric == "code+regulated"
    assert c.reviewers == 3
    assert c.models == ("opus", "sonnet", "openai:gpt-5.1")
    assert c.prices == {
        "gpt-5.1": {"input": 1.25, "output": 10.0},
        "llama3.1:8b": {"input": 0.0, "output": 0.0},
    }
    assert c.max_fixes == 0
    assert c.budget_usd == 2.0 and isinstance(c.budget_usd, float)
    assert c.pre_check == "make test"
    assert c.log == tmp_path / "logs" / "santa.jsonl"  # relative to the project root
    with pytest.raises(FrozenInstanceError):
        c.reviewers = 5  # type: ignore[misc]


def test_explicit_nulls_are_the_defaults(tmp_path: Path) -> None:
    write(tmp_path, "models: null\nbudget_usd: null\npre_check: null\nlog: null\n")
    assert load_config(tmp_path) == Config()


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("reviewers: 1\n", "reviewers"),
        ("reviewers: '2'\n", "reviewers"),
        ("reviewers: true\n", "reviewers"),
        ("reviewers: 2.5\n", "reviewers"),
        ("reviewers:\n", "reviewers"),
        ("max_fixes: -1\n", "max_fixes"),
        ("max_fixes: 1.0\n", "max_fixes"),
        ("budget_usd: 0\n", "budget_usd"),
        ("budget_usd: ten\n", "budget_usd"),
        ("budget_usd: .inf\n", "budget_usd"),
        ("pre_check: 5\n", "pre_check"),
        ("pre_check: '  '\n", "pre_check"),
        ("rubric: ''\n", "rubric"),
        ("rubric: [base]\n", "rubric"),
        ("models: []\n", "models"),
        ("models: 7\n", "models"),
        ("models: {B: 3}\n", "models"),
        ("models: [sonnet, 'llama3.1:8b']\n", "models"),  # a colon needs its backend first
        ("models: [sonnet, 'mystery:gpt-5.1']\n", "models"),
        ("models: [sonnet, 'openai:']\n", "models"),
        ("models: {B: 'mystery:x'}\n", "models"),
        ("models: [opus, sonnet]\nreviewers: 3\n", "reviewers"),
        ("prices: 3\n", "prices"),
        ("prices: {m: {input: 1}}\n", "prices"),
        ("prices: {m: {input: 1, output: -1}}\n", "prices"),
        ("prices: {m: {input: .nan, output: 1}}\n", "prices"),
        ("prices: {m: {input: .inf, output: 1}}\n", "prices"),
        ("prices: {m: {input: '1', output: 1}}\n", "prices"),
        ("prices: {m: {input: 1, output: 1, cache: 1}}\n", "prices"),
        ("prices: {m: 2}\n", "prices"),
        ("log: 12\n", "log"),
        ("max_fix: 1\n", "max_fix"),
        ("reviewer: 2\n", "reviewer"),
    ],
)
def test_wrong_values_and_unknown_keys_name_the_key(tmp_path: Path, text: str, key: str) -> None:
    write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert f"'{key}'" in message
    assert message.count(".") <= 3 and "\n" not in message  # one sentence


def test_unknown_key_lists_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path, "max_fix: 1\n")
    with pytest.raises(InputError, match="unknown key 'max_fix'; known keys: rubric, reviewers"):
        load_config(tmp_path)


@pytest.mark.parametrize("text", ["rubric: [unclosed\n", "a: b: c\n", "\tbad: indent\n"])
def test_invalid_yaml_is_an_input_error(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=f"the config '{path}' is not valid YAML"):
        load_config(tmp_path)


@pytest.mark.parametrize("text", ["- base\n- code\n", "just a string\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    write(tmp_path, text)
    with pytest.raises(InputError, match="must be a mapping"):
        load_config(tmp_path)


def test_unreadable_config_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / ".santa" / "config.yaml").mkdir(parents=True)
    with pytest.raises(InputError, match="cannot read the config"):
        load_config(tmp_path)


def test_models_forms() -> None:
    one = parse_config("models: sonnet\n")
    assert one.models == ("sonnet",)
    assert [one.model_for(i, label) for i, label in enumerate("BCD")] == ["sonnet"] * 3
    listed = parse_config("models: [opus, sonnet]\n")
    assert listed.reviewers == 2  # one reviewer per entry
    assert [listed.model_for(i, label) for i, label in enumerate("BC")] == ["opus", "sonnet"]
    three = parse_config("models: [opus, sonnet, openai:gpt-5.1]\n")
    assert three.reviewers == 3
    assert three.model_for(2, "D") == "openai:gpt-5.1"
    mapped = parse_config("models: {B: opus, default: haiku}\n")
    assert mapped.model_for(0, "B") == "opus"
    assert mapped.model_for(1, "C") == "haiku"
    only = parse_config("models: {B: opus}\n")
    assert only.model_for(1, "C") is None
    assert Config().model_for(0, "B") is None
    assert mapped.to_json()["models"] == {"B": "opus", "default": "haiku"}
    assert listed.to_json()["models"] == ["opus", "sonnet"]


def test_override_none_keeps_and_values_replace(tmp_path: Path) -> None:
    base = parse_config("rubric: code\nreviewers: 3\nmax_fixes: 2\n")
    same = base.override(rubric=None, reviewers=None, models=None, max_fixes=None)
    assert same == base
    changed = base.override(reviewers=4, models="sonnet", budget_usd=1, log="x.jsonl")
    assert changed.reviewers == 4
    assert changed.models == ("sonnet",)
    assert changed.budget_usd == 1.0
    assert changed.log == Path("x.jsonl")  # relative to where the command runs
    assert changed.rubric == "code" and changed.max_fixes == 2
    assert base.reviewers == 3  # the original is untouched


def test_a_models_list_sets_the_count_and_a_count_that_disagrees_is_refused() -> None:
    """One rule for flags and the file (core/reviewers.py): entries are slots."""
    base = parse_config("reviewers: 3\n")
    assert base.override(models="opus,openai:gpt-5.1").reviewers == 2  # the flag's list wins
    with pytest.raises(InputError, match=r"names 2 reviewers .* asks for 4"):
        base.override(models="opus,sonnet", reviewers=4)
    listed = parse_config("models: [opus, sonnet]\n")
    with pytest.raises(InputError, match=r"config's 'models' names 2 reviewers .* asks for 3"):
        listed.override(reviewers=3)
    assert listed.override(reviewers=2).reviewers == 2
    with pytest.raises(InputError, match=r"cannot route 'x:y'.*anthropic, claude, openai"):
        base.override(models="x:y,sonnet")


def test_override_checks_values_like_the_file() -> None:
    with pytest.raises(
        InputError, match=r"'reviewers' must be .*, not 1: a run needs at least 2 reviewers"
    ):
        Config().override(reviewers=1)
    with pytest.raises(InputError, match="'reviewers' must be a whole number from 2 to 50"):
        Config().override(reviewers=2.5)
    with pytest.raises(InputError, match="the command line"):
        Config().override(max_fixes=-2)
    with pytest.raises(TypeError, match="unknown settings: reviewer"):
        Config().override(reviewer=3)


def test_config_path_honours_santa_home_without_a_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANTA_HOME", str(tmp_path / "home"))
    assert config_path() == tmp_path / "home" / "config.yaml"
    assert config_path(tmp_path) == tmp_path / ".santa" / "config.yaml"


def test_resolve_log_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANTA_LOG", raising=False)
    assert resolve_log_path(None, tmp_path) == tmp_path / ".santa" / "log.jsonl"
    write(tmp_path, "log: custom/log.jsonl\n")
    assert resolve_log_path(None, tmp_path) == tmp_path / "custom" / "log.jsonl"
    monkeypatch.setenv("SANTA_LOG", str(tmp_path / "env.jsonl"))
    assert resolve_log_path(None, tmp_path) == tmp_path / "env.jsonl"
    assert resolve_log_path(str(tmp_path / "flag.jsonl"), tmp_path) == tmp_path / "flag.jsonl"


def test_the_example_documents_every_key_and_is_valid() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert set(data) == {f.name for f in fields(Config)}
    config = parse_config(text)
    assert config.reviewers >= 2
    for name in data:  # each key is introduced by a comment
        before = text.split(f"\n{name}:")[0]
        assert before.rstrip().splitlines()[-1].startswith("#"), name


# --- inside Claude Code, flags cannot loosen the config ----------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-fixes", "9"],
        ["--pre-check", "true"],
        ["--reviewers", "2"],
        ["--models", "opus,sonnet"],  # two entries are two reviewers
    ],
)
def test_inside_claude_code_flags_cannot_loosen_the_config(
    tmp_path: Path, flags: list[str]
) -> None:
    santa = tmp_path / ".santa"
    santa.mkdir()
    (santa / "config.yaml").write_text(
        "max_fixes: 1\nreviewers: 3\npre_check: test -f out.md\n", encoding="utf-8"
    )
    (tmp_path / "out.md").write_text("hello\n", encoding="utf-8")
    base = [sys.executable, "-m", "santa_method", "round", "start", "--against", "out.md"]
    env = {**os.environ, "SANTA_HOME": str(santa), "CLAUDECODE": "1"}
    done = subprocess.run(
        [*base, "--spec-text", "Say hello.", *flags],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 1 and ".santa/config.yaml" in done.stderr
    outside = {k: v for k, v in env.items() if k != "CLAUDECODE"}
    allowed = subprocess.run(
        [*base, "--spec-text", "Say hello.", *flags],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=outside,
    )
    assert allowed.returncode == 0, allowed.stderr


def test_a_rubric_missing_configured_criteria_is_refused_inside_claude_code(tmp_path: Path) -> None:
    santa = tmp_path / ".santa"
    (santa / "rubrics").mkdir(parents=True)
    (santa / "config.yaml").write_text("rubric: code\n", encoding="utf-8")
    (santa / "rubrics" / "easy.yaml").write_text(
        "name: easy\ncriteria:\n  - id: has-a-line\n    name: Has a line\n"
        "    pass: The output contains at least one line of text.\n"
        "    fail_signals: [The output is empty.]\n",
        encoding="utf-8",
    )
    (tmp_path / "out.md").write_text("hello\n", encoding="utf-8")
    base = [
        sys.executable,
        "-m",
        "santa_method",
        "round",
        "start",
        "--against",
        "out.md",
        "--spec-text",
        "Say hello.",
    ]
    env = {**os.environ, "SANTA_HOME": str(santa), "CLAUDECODE": "1"}
    easy = subprocess.run(
        [*base, "--rubric", "easy"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert easy.returncode == 1 and "--rubric easy" in easy.stderr
    stricter = subprocess.run(
        [*base, "--rubric", "code+regulated"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert stricter.returncode == 0, stricter.stderr
