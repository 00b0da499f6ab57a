"""Edges where a verdict could fail open (issue 11, items 4 to 6): a gate
without a rubric, a reply holding two reviews that disagree, and numbers that
turn limits off (NaN, infinity, negative costs)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from _reviews import BASE_IDS, fail_review, issue, pass_review, reply
from santa_method.cli import build_parser, main
from santa_method.core.errors import InputError
from santa_method.core.numbers import BUDGET_USD, REVIEWERS, TIMEOUT_S, check_usage

# `project` (conftest.py) holding a good file of each kind: its own `.santa/`,
# no credentials, no log override.
pytestmark = pytest.mark.usefixtures("user_files")


def _reviews(project: Path, b: dict, c: dict) -> list[str]:
    paths = []
    for name, review in (("b", b), ("c", c)):
        path = project / f"{name}.json"
        path.write_text(reply(review), encoding="utf-8")
        paths.append(str(path))
    return paths


def _gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["gate", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


# --- 4. the gate always judges against a rubric ---------------------------------


def test_a_gate_without_rubric_refuses_invented_criteria(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    invented = pass_review(("looks-good", "vibes"))
    code, result = _gate(capsys, *_reviews(project, invented, invented | {"suggestions": ["x"]}))
    assert code == 1 and result["verdict"] == "NAUGHTY"
    errors = [e for r in result["reviews"] for e in r["errors"]]
    assert any("unknown criterion 'vibes'" in e for e in errors)
    assert any("no result for factual-accuracy" in e for e in errors)


def test_a_gate_without_rubric_uses_the_configured_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_only = _reviews(project, pass_review(), pass_review(suggestions=["c"]))
    assert _gate(capsys, *base_only)[0] == 0  # no config: base
    (project / ".santa" / "config.yaml").write_text("rubric: code\n", encoding="utf-8")
    code, result = _gate(capsys, *base_only)
    assert code == 1
    assert all(not r["valid"] for r in result["reviews"])
    assert any("no result for" in e for e in result["reviews"][0]["errors"])
    # An explicit --rubric still wins over the config.
    assert _gate(capsys, *base_only, "--rubric", "base")[0] == 0


def _validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["validate", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_validate_without_rubric_refuses_invented_criteria(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Validate answers "may the gate count this reply": the gate's answer.
    invented = _reviews(project, pass_review(("looks-good", "vibes")), pass_review())[0]
    code, result = _validate(capsys, invented)
    assert code == 1 and result["valid"] is False
    assert any("unknown criterion 'vibes'" in e for e in result["errors"])
    assert any("no result for factual-accuracy" in e for e in result["errors"])
    main(["validate", invented])
    assert "unknown criterion 'looks-good'" in capsys.readouterr().out


def test_validate_without_rubric_uses_the_configured_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_only = _reviews(project, pass_review(), pass_review(suggestions=["c"]))[0]
    assert _validate(capsys, base_only)[0] == 0  # no config: base
    (project / ".santa" / "config.yaml").write_text("rubric: code\n", encoding="utf-8")
    code, result = _validate(capsys, base_only)
    assert code == 1 and any("no result for" in e for e in result["errors"])
    assert _validate(capsys, base_only, "--rubric", "base")[0] == 0  # the flag wins


def test_validate_without_rubric_uses_a_project_rubric_named_base(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A project's own `base` shadows the packaged one, with or without a config.
    rubrics = project / ".santa" / "rubrics"
    rubrics.mkdir()
    (rubrics / "base.yaml").write_text(
        "name: base\ncriteria:\n  - id: page-count\n    name: Page count\n"
        "    pass: The output has exactly 3 pages.\n"
        "    fail_signals: [More or fewer than 3 pages.]\n",
        encoding="utf-8",
    )
    base_only = _reviews(project, pass_review(), pass_review(suggestions=["c"]))[0]
    code, result = _validate(capsys, base_only)
    assert code == 1 and any("no result for page-count" in e for e in result["errors"])


def test_the_base_rubric_validate_holds_as_data_is_the_packaged_one() -> None:
    """core/base_rubric.py must say what rubrics/base.yaml says (regenerate it if not)."""
    from santa_method.core.base_rubric import base
    from santa_method.core.rubric import load_rubric

    assert base() == load_rubric("base")


# --- 5. two reviews that disagree are ambiguous ---------------------------------


def test_a_fail_then_a_pass_in_one_reply_is_not_nice(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = fail_review(
        ["completeness"], [issue("completeness", "no License", missing="License")]
    )
    two = f"{json.dumps(failing)}\n<!-- corrected: -->\n{json.dumps(pass_review())}"
    b = project / "b.json"
    b.write_text(two, encoding="utf-8")
    c = project / "c.json"
    c.write_text(json.dumps(pass_review(suggestions=["c"])), encoding="utf-8")
    code, result = _gate(capsys, str(b), str(c))
    assert code == 1 and result["next"] == "rereview"  # handed back, like any invalid reply
    assert "ambiguous" in result["reviews"][0]["errors"][0]


@pytest.mark.parametrize(
    "draft",
    [
        'verdict: "FAIL"',
        "{'verdict': \"FAIL\"}",
        '{verdict: "FAIL"}',
        'verdict = "FAIL"',
        '[{"verdict": "F\\u0041IL"}]',
        '{"draft": {"verd\\u0069ct": "FAIL"}}',
        "verdict: |\n  FAIL",
        "**verdict**: REJECT",
        'verdict: "F\u200bAIL"',
        '{"note": "{\\"verdict\\": \\"FAIL\\"}"}',
        '[{"verdict": "PASS", "checks": [{"criterion": "completeness", "result": "FAIL"}]}]',
    ],
    ids=[
        "yaml-quoted",
        "python-dict",
        "unquoted-key",
        "toml",
        "escaped-in-array",
        "escaped-key",
        "yaml-block",
        "markdown-other-word",
        "zero-width",
        "json-in-a-string",
        "same-verdict-failing-check",
    ],
)
def test_a_fail_drafted_in_any_notation_then_a_pass_is_not_nice(
    project: Path, capsys: pytest.CaptureFixture[str], draft: str
) -> None:
    b = project / "b.json"
    b.write_text(f"Draft:\n{draft}\nFinal:\n{json.dumps(pass_review())}\n", encoding="utf-8")
    c = project / "c.json"
    c.write_text(json.dumps(pass_review(suggestions=["c"])), encoding="utf-8")
    code, result = _gate(capsys, str(b), str(c))
    assert code == 1 and result["next"] == "rereview"
    assert not result["reviews"][0]["valid"]
    assert "ambiguous" in result["reviews"][0]["errors"][0]


# --- 6. numbers: finite and in range, or a usage error ---------------------------


def _numeric_actions() -> list[tuple[str, argparse.Action]]:
    """Every option of every sub-command (and sub-sub-command) with a type."""
    found: list[tuple[str, argparse.Action]] = []

    def walk(parser: argparse.ArgumentParser, prog: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{prog} {name}")
            elif action.type is not None:
                found.append((prog, action))
        for name, sub in getattr(parser, "subparsers", {}).items():  # santa batch plan|record
            walk(sub, f"{prog} {name}")

    walk(build_parser(), "santa")
    return found


def test_every_numeric_flag_uses_the_one_number_type() -> None:
    actions = _numeric_actions()
    assert len(actions) >= 20  # the walk does reach the sub-commands
    plain = [f"{prog} {a.option_strings[0]}" for prog, a in actions if a.type in (int, float)]
    assert plain == []
    assert {a.type.__name__ for _, a in actions} == {"number"}


NUMERIC_FLAGS = sorted({(prog, action.option_strings[0]) for prog, action in _numeric_actions()})
BAD_NUMBERS = ["nan", "inf", "-inf", "1e400", "-1", "1" * 5000]


@pytest.mark.parametrize(
    ("prog", "flag", "value"),
    [
        (prog, flag, value)
        for prog, flag in NUMERIC_FLAGS
        for value in BAD_NUMBERS
        if not (flag == "--seed" and value == "-1")  # a negative seed is a seed
    ],
    ids=lambda v: str(v)[:8],
)
def test_a_bad_number_is_a_usage_error_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str], prog: str, flag: str, value: str
) -> None:
    words = prog.split()[1:]
    needed = {
        "gate": ["b.json", "c.json"],
        "run": ["--against", "out.md", "--spec-text", "x"],
        "batch": ["out.md", "--spec-text", "x"],
        "batch plan": ["out.md", "--spec-text", "x"],
        "round start": ["--against", "out.md", "--spec-text", "x"],
        "sample": ["out.md"],
    }[" ".join(words)]
    code = main([*words, *needed, f"{flag}={value}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"argument {flag}:" in err and "expected" in err and "Traceback" not in err
    assert not (project / ".santa" / "runs").exists()
    assert not (project / ".santa" / "log.jsonl").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--against", "out.md", "--spec-text", "x", "--max-cost-usd", "nan"],
        ["run", "--against", "out.md", "--spec-text", "x", "--timeout", "nan"],
        ["batch", "out.md", "--spec-text", "x", "--max-cost-usd", "inf"],
        ["run", "--against", "out.md", "--spec-text", "x", "--reviewers", "100000"],
    ],
)
def test_a_bad_number_beats_missing_credentials(
    project: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    # No ANTHROPIC_API_KEY: a backend error (3) would come first if the number
    # were checked late.
    assert main(args) == 2
    assert "expected" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("budget_usd: .nan\n", "budget_usd"),
        ("budget_usd: .inf\n", "budget_usd"),
        ("budget_usd: 1e400\n", "budget_usd"),
        ("reviewers: 100000\n", "reviewers"),
        ("max_fixes: 100000\n", "max_fixes"),
    ],
)
def test_a_bad_number_in_the_config_is_a_usage_error_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str], text: str, key: str
) -> None:
    (project / ".santa" / "config.yaml").write_text(text, encoding="utf-8")
    for args in (
        ["run", "--against", "out.md", "--spec-text", "x"],
        ["round", "start", "--against", "out.md", "--spec-text", "x", "--source", "files"],
    ):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert f"'{key}' must be" in err, err
    assert not (project / ".santa" / "runs").exists()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ('{"tokens": -5}', "'tokens' must be"),
        ('{"cost_usd": -0.01}', "'cost_usd' must be"),
        ('{"cost_usd": NaN}', "NaN"),
        ('{"cost_usd": Infinity}', "Infinity"),
        ('{"cost_usd": 1e400}', "'cost_usd' must be"),
        ('{"tokens": {"input": -1, "output": 3}}', "'tokens.input' must be"),
        ('{"tokens": 1.5}', "'tokens' must be"),
        ('{"note": -Infinity}', "-Infinity"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_numbers_in_log_data_are_refused(
    project: Path, capsys: pytest.CaptureFixture[str], data: str, said: str
) -> None:
    code = main(["log", "generate", "--run", "r-1", "--data", data])
    err = capsys.readouterr().err
    assert code == 2, err
    assert said in err and "Traceback" not in err
    assert not (project / ".santa" / "log.jsonl").exists()


def test_good_usage_in_log_data_is_recorded(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["round", "start", "--against", "out.md", "--spec-text", "x", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    code = main(["log", "generate", "--run", run_id, "--data", '{"tokens": 10, "cost_usd": 0}'])
    assert code == 0, capsys.readouterr().err
    record = json.loads((project / ".santa" / "log.jsonl").read_text().splitlines()[-1])
    assert record["tokens"] == 10 and record["cost_usd"] == 0


def test_the_python_api_refuses_the_same_numbers(project: Path) -> None:
    from santa_method.headless import verify_sync
    from santa_method.headless.api import VerifyOptions

    for options in ({"budget_usd": math.nan}, {"timeout": math.inf}, {"reviewers": True}):
        with pytest.raises(InputError):
            verify_sync(
                "spec", project / "out.md", options=VerifyOptions(backend="anthropic", **options)
            )
    assert not (project / ".santa" / "runs").exists()
    with pytest.raises(InputError, match="cost_usd"):
        check_usage({"cost_usd": -1}, "data")


@pytest.mark.parametrize(
    ("allowed", "good", "bad"),
    [
        (REVIEWERS, [2, 50], [1, 51, 2.0, True, math.nan, "2"]),
        (BUDGET_USD, [0.01, 5, 1_000_000], [0, -1, math.nan, math.inf, 1e7]),
        (TIMEOUT_S, [0.5, 86_400], [0, math.nan, -math.inf, 1e9]),
    ],
)
def test_ranges_accept_and_refuse(allowed, good, bad) -> None:
    for value in good:
        assert allowed.check(value, "x") == value
    for value in bad:
        with pytest.raises(InputError, match="x must be"):
            allowed.check(value, "x")


def test_base_ids_are_the_packaged_base_rubric() -> None:
    """The gate tests above rely on `_reviews.BASE_IDS` being base's criteria."""
    from santa_method.core.rubric import load_rubric

    assert tuple(load_rubric("base").ids) == BASE_IDS
