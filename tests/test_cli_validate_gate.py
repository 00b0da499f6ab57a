"""`santa validate` and `santa gate` through a real subprocess: exit codes and output shapes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _reviews import BASE_IDS, OUTPUT, fail_review, issue, pass_review, reply

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
MODULE = [sys.executable, "-m", "santa_method"]
_SCRIPT = Path(sys.executable).with_name("santa")
SCRIPT = [str(_SCRIPT)] if _SCRIPT.exists() else [shutil.which("santa") or "santa"]


@pytest.fixture
def run(tmp_path: Path):
    """Run the CLI in an empty folder with its own `.santa/`, so no project
    rubric or log of the surrounding checkout can change the answer."""
    env = dict(os.environ, SANTA_HOME=str(tmp_path / ".santa"), CLAUDE_PROJECT_DIR=str(tmp_path))
    env.pop("SANTA_LOG", None)

    def _run(*args: str, stdin: str | None = None, via: list[str] = MODULE):
        return subprocess.run(
            [*via, *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )

    return _run


@pytest.fixture
def files(tmp_path: Path):
    def _write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return _write


# --- validate -----------------------------------------------------------------


@pytest.mark.parametrize("via", [MODULE, SCRIPT], ids=["module", "script"])
def test_validate_valid_review_exits_0(run, files, via) -> None:
    path = files("r.json", reply(pass_review(), "fenced"))
    proc = run("validate", path, via=via)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("valid review, verdict PASS")


def test_validate_json_shape(run, files) -> None:
    obj = fail_review(
        {"no-hallucination": "invented flag"},
        [
            issue("no-hallucination", "Invents --chars", quote="tally --chars notes.txt"),
            "seed form",
        ],
    )
    obj["mood"] = "grumpy"
    path = files("r.json", reply(obj, "prose"))
    against = files("out.md", OUTPUT)
    proc = run("validate", path, "--against", against, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"valid", "verdict", "errors", "warnings", "review"}
    assert (data["valid"], data["verdict"], data["errors"]) == (True, "FAIL", [])
    assert "$.mood: unknown field ignored" in data["warnings"]
    issues = data["review"]["critical_issues"]
    assert issues[0]["evidence"] == "verified"
    assert issues[1] == {"criterion": "no-hallucination", "issue": "seed form", "evidence": "none"}


def test_validate_invalid_review_exits_1_with_errors(run, files) -> None:
    obj = pass_review()
    obj["checks"][0]["result"] = "FAIL"
    proc = run("validate", files("r.json", reply(obj)), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["valid"] is False
    assert data["verdict"] == "PASS"
    assert any("$.checks[0]" in e for e in data["errors"])
    readable = run("validate", files("r2.json", reply(obj)))
    assert readable.returncode == 1
    assert readable.stdout.startswith("INVALID review")


@pytest.mark.parametrize("text", ["", "  \n"])
def test_validate_empty_file_is_an_invalid_review_not_an_input_error(run, files, text) -> None:
    proc = run("validate", files("empty.json", text), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["valid"] is False
    assert data["review"] is None
    assert "empty" in data["errors"][0]


def test_validate_reads_stdin(run) -> None:
    proc = run("validate", "-", "--json", stdin=reply(pass_review()))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["verdict"] == "PASS"


def test_validate_with_the_base_rubric(run, files) -> None:
    complete = files("ok.json", reply(pass_review()))
    assert run("validate", complete, "--rubric", "base").returncode == 0
    partial = files("partial.json", reply(pass_review(ids=BASE_IDS[:4])))
    proc = run("validate", partial, "--rubric", "base", "--json")
    assert proc.returncode == 1
    errors = json.loads(proc.stdout)["errors"]
    assert any("internal-consistency" in e and "technical-correctness" in e for e in errors)


def test_validate_canary(run, files) -> None:
    path = files("r.json", reply(pass_review(canary="tok-123")))
    assert run("validate", path, "--canary", "tok-123").returncode == 0
    proc = run("validate", path, "--canary", "tok-456", "--json")
    assert proc.returncode == 1
    assert "tok-456" not in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "does-not-exist.json"],
        ["validate", "."],
        ["validate", "binary.bin"],
        ["validate", "ok.json", "--against", "missing.md"],
        ["validate", "ok.json", "--rubric", "no-such-rubric"],
        ["validate", "ok.json", "--no-such-flag"],
        ["validate"],
    ],
)
def test_validate_input_errors_exit_2(run, files, tmp_path, args) -> None:
    files("ok.json", reply(pass_review()))
    (tmp_path / "binary.bin").write_bytes(b"\xff\xfe\x00\x80{}")
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "santa" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- gate ---------------------------------------------------------------------


@pytest.mark.parametrize("via", [MODULE, SCRIPT], ids=["module", "script"])
def test_gate_two_passes_are_nice(run, files, via) -> None:
    a = files("b.json", reply(pass_review(), "fenced"))
    b = files("c.json", reply(pass_review()))
    proc = run("gate", a, b, via=via)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["NICE", "next:", "ship"]


def test_gate_one_review_alone_is_naughty(run, files) -> None:
    proc = run("gate", files("b.json", reply(pass_review())), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert (data["verdict"], data["next"]) == ("NAUGHTY", "rereview")
    assert [r["label"] for r in data["reviews"]] == ["B", "C"]
    assert data["reviews"][1]["valid"] is False


def test_gate_invalid_and_pass_means_rereview(run, files) -> None:
    proc = run("gate", files("b.json", reply(pass_review())), files("c.json", "I approve!"))
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].split() == ["NAUGHTY", "next:", "rereview"]
    assert "reviewer C: invalid" in proc.stdout


def test_gate_json_shape(run, files) -> None:
    b = files("b.json", reply(pass_review(suggestions=["Add an example"])))
    c = files(
        "c.json",
        reply(
            fail_review(
                {"factual-accuracy": ""},
                [issue("factual-accuracy", "Wrong version", quote="Current version: 2.0.")],
                suggestions=["add an example"],
            )
        ),
    )
    proc = run("gate", b, c, "--against", files("out.md", OUTPUT), "--labels", "x,y", "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert {"verdict", "reviews", "issues", "suggestions", "agreement", "next"} <= set(data)
    assert (data["verdict"], data["next"]) == ("NAUGHTY", "fix")
    for review in data["reviews"]:
        assert {"label", "valid", "verdict", "errors"} <= set(review)
    assert [(r["label"], r["verdict"]) for r in data["reviews"]] == [("x", "PASS"), ("y", "FAIL")]
    (flag,) = data["issues"]
    assert {"criterion", "issue", "evidence", "flagged_by"} <= set(flag)
    assert flag["quote"] == "Current version: 2.0."
    assert (flag["evidence"], flag["flagged_by"]) == ("verified", ["y"])
    assert data["suggestions"] == ["Add an example"]
    assert data["agreement"] == 0.0  # two valid reviewers, the one flag is y's alone


def test_gate_examples_give_the_merged_flags(run) -> None:
    proc = run(
        "gate",
        str(EXAMPLES / "review-b.json"),
        str(EXAMPLES / "review-c.json"),
        "--against",
        str(EXAMPLES / "output.md"),
        "--rubric",
        "base",
        "--json",
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["verdict"], data["next"]) == ("NAUGHTY", "fix")
    assert all(r["valid"] and r["verdict"] == "FAIL" for r in data["reviews"])
    issues = data["issues"]
    assert len(issues) == 6  # the forbidden --chars flag is one problem under two criteria

    def find(criterion: str, needle: str) -> dict:
        (hit,) = [
            i
            for i in issues
            if i["criterion"] == criterion and needle in (i.get("quote") or i.get("missing") or "")
        ]
        return hit

    version = find("factual-accuracy", "2.0")
    assert (version["flagged_by"], version["evidence"]) == (["B", "C"], "verified")
    chars = find("no-hallucination", "--chars")
    assert chars["flagged_by"] == ["B", "C"]
    assert chars["criteria"] == ["no-hallucination", "compliance"]
    assert "tally --chars notes.txt" in chars["quotes"] and len(chars["quotes"]) >= 2
    license_ = find("completeness", "License")
    assert (license_["flagged_by"], license_["evidence"]) == (["B", "C"], "none")
    assert find("completeness", "--bytes")["flagged_by"] == ["C"]
    assert data["agreement"] == pytest.approx(3 / 6)
    assert data["suggestions"] == ["Show one example of reading standard input."]


def test_gate_examples_readable_form(run) -> None:
    proc = run(
        "gate",
        str(EXAMPLES / "review-b.json"),
        str(EXAMPLES / "review-c.json"),
        "--against",
        str(EXAMPLES / "output.md"),
    )
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAUGHTY", "next:", "fix"]
    assert "problems (6 merged, agreement 50%):" in lines
    assert "   also breaks: compliance" in lines
    assert "   flagged by B, C" in lines
    assert any("quote found in the output" in line for line in lines)


def test_gate_without_against_says_quotes_were_not_checked(run) -> None:
    # Nothing was looked up: no quote may read as "not found, a false positive".
    proc = run("gate", str(EXAMPLES / "review-b.json"), str(EXAMPLES / "review-c.json"))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert "  warning: quotes were not checked: no output was given (--against)" in lines
    assert "   quote: 'Current version: 2.0.' (not checked)" in lines
    assert "NOT found" not in proc.stdout and "false positive" not in proc.stdout
    # validate says the same sentence for the same situation.
    single = run("validate", str(EXAMPLES / "review-b.json"))
    assert "quotes were not checked: no output was given (--against)" in single.stdout


def test_gate_with_against_still_names_quotes_not_found(run, files) -> None:
    out = files("out.md", OUTPUT)
    b = fail_review(
        ["factual-accuracy"], [issue("factual-accuracy", "made up", quote="text that is nowhere")]
    )
    c = pass_review()
    proc = run("gate", files("b.json", reply(b)), files("c.json", reply(c)), "--against", out)
    assert "quote NOT found in the output: suspected false positive" in proc.stdout
    assert "not checked" not in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gate"], "review files"),
        (["gate", "b.json", "c.json", "--iteration", "2"], "--run"),
        (["gate", "b.json", "missing.json"], "no such file"),
        (["gate", "b.json", "c.json", "--against", "missing.md"], "no such file"),
        (["gate", "b.json", "c.json", "--labels", "x"], "--labels"),
        (["gate", "b.json", "c.json", "--labels", "x,x"], "--labels"),
        (["gate", "b.json", "c.json", "--rubric", "no-such-rubric"], "rubric"),
        (["gate", "b.json", "c.json", "--iteration", "two"], "expected a whole number"),
        (["gate", "b.json", "c.json", "--bogus"], "unrecognized"),
        (["gate", "-", "-"], "stdin"),
    ],
)
def test_gate_input_errors_exit_2(run, files, args, message) -> None:
    files("b.json", reply(pass_review()))
    files("c.json", reply(pass_review()))
    proc = run(*args, stdin="")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_texts(run) -> None:
    for command in ("validate", "gate"):
        proc = run(command, "--help")
        assert proc.returncode == 0
        assert "--json" in proc.stdout
        assert "--rubric" in proc.stdout


# --- the gate refuses what it cannot count, and an answer nobody received ------


def test_the_same_review_file_twice_is_an_input_error(tmp_path: Path) -> None:
    review = tmp_path / "b.json"
    review.write_text(json.dumps(pass_review()), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "santa_method", "gate", str(review), str(review)],
        capture_output=True,
        text=True,
        env={**os.environ, "SANTA_HOME": str(tmp_path / ".santa")},
    )
    assert done.returncode == 2 and "twice" in done.stderr


def test_gate_of_a_run_refuses_options_the_run_fixed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "santa_method", "gate", "--run", "x", "--rubric", "code"],
        capture_output=True,
        text=True,
        env={**os.environ, "SANTA_HOME": str(tmp_path / ".santa")},
    )
    assert done.returncode == 2 and "--rubric cannot be given with --run" in done.stderr


def test_an_answer_nobody_received_is_not_a_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from santa_method.cli import main

    class GoneReader:
        """stdout whose reader hung up: every write fails as a closed pipe does."""

        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self) -> int:
            return sys.__stdout__.fileno()

    reviews = []
    for name in ("b", "c"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(pass_review(suggestions=[name])), encoding="utf-8")
        reviews.append(str(path))
    saved = os.dup(sys.__stdout__.fileno())
    monkeypatch.setattr(sys, "stdout", GoneReader())
    try:
        # A NICE verdict that could not be printed is not a success.
        assert main(["gate", *reviews, "--json"]) == 1
    finally:
        os.dup2(saved, sys.__stdout__.fileno())
        os.close(saved)


@pytest.mark.parametrize("blank", ["", " \n\t\n"], ids=["empty", "whitespace"])
def test_an_empty_output_is_refused_alike_by_the_gate_and_a_run(run, files, blank) -> None:
    # One rule (core/gate.py, require_output): two PASSes of nothing are not NICE.
    files("b.json", reply(pass_review()))
    files("c.json", reply(pass_review(suggestions=["c"])))
    files("out.md", blank)
    gated = run("gate", "b.json", "c.json", "--against", "out.md")
    opened = run("round", "start", "--against", "out.md", "--spec-text", "A title.")
    for proc in (gated, opened):
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        assert proc.stdout == ""
    assert gated.stderr == opened.stderr == (
        "santa: the output under review is empty; there is nothing to verify\n"
    )
