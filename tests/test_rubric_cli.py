"""`santa rubric list | show | lint` through a real subprocess: exit codes, output shapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from santa_method.core.rubric import load_rubric, render_markdown

GOOD = """\
name: house
description: House rules for release notes.
criteria:
  - id: release-date
    name: Release date
    pass: The release date in the notes equals the date given in the spec.
    fail_signals:
      - A date that differs from the spec's.
"""

BAD = """\
name: bad
criteria:
  - id: Bad_Id
    name: Vague
    pass: Appropriate and of high quality.
  - id: ok-one
    name: Fine
    pass: Each heading is followed by at least one paragraph.
    fail_signals: [A heading with no text under it.]
    weight: 2
"""


@pytest.fixture
def project(project: Path) -> Path:
    """The shared project (conftest.py) whose `.santa/rubrics/` holds a house rubric."""
    rubrics = project / ".santa" / "rubrics"
    rubrics.mkdir(parents=True)
    (rubrics / "house.yaml").write_text(GOOD, encoding="utf-8")
    return project


def santa(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_PROJECT_DIR", "SANTA_LOG")}
    env["SANTA_HOME"] = str(project / ".santa")
    return subprocess.run(
        [sys.executable, "-m", "santa_method", "rubric", *args],
        cwd=project,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_list_json(project: Path) -> None:
    done = santa(project, "list", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    by_name = {d["name"]: d for d in data}
    assert sorted(by_name) == ["base", "code", "content", "house", "regulated"]
    assert by_name["house"]["source"] == "project"
    assert by_name["house"]["description"] == "House rules for release notes."
    assert by_name["base"]["source"] == "packaged"
    assert set(by_name["code"]) == {"name", "source", "path", "description", "shadows", "error"}


def test_list_readable(project: Path) -> None:
    done = santa(project, "list")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) == 5
    assert any(line.startswith("house") and "[project]" in line for line in lines)


def test_show_markdown_is_render_markdown(project: Path) -> None:
    done = santa(project, "show", "code+regulated")
    assert done.returncode == 0, done.stderr
    assert done.stdout == render_markdown(load_rubric("code+regulated"))  # type: ignore[arg-type]


@pytest.mark.parametrize("flags", [["--format", "json"], ["--json"]])
def test_show_json_shape(project: Path, flags: list[str]) -> None:
    done = santa(project, "show", "house+code", *flags)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"name", "criteria"}
    assert data["name"] == "house+code"
    assert data["criteria"][0] == {
        "id": "release-date",
        "name": "Release date",
        "pass": "The release date in the notes equals the date given in the spec.",
        "fail_signals": ["A date that differs from the spec's."],
    }
    assert [c["id"] for c in data["criteria"]][1:7] == list(load_rubric("base").ids)  # type: ignore[union-attr]
    for crit in data["criteria"]:
        assert set(crit) == {"id", "name", "pass", "fail_signals"}


def test_show_unknown_rubric_exits_2(project: Path) -> None:
    done = santa(project, "show", "nope")
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("santa: ") and "unknown rubric 'nope'" in line
    assert "base, code, content, house, regulated" in line


def test_show_invalid_project_rubric_exits_2(project: Path) -> None:
    (project / ".santa" / "rubrics" / "bad.yaml").write_text(BAD, encoding="utf-8")
    done = santa(project, "show", "bad")
    assert done.returncode == 2
    assert "is invalid" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_lint_clean_exits_0(project: Path) -> None:
    done = santa(project, "lint", ".santa/rubrics/house.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == ".santa/rubrics/house.yaml: ok (1 criteria)"


def test_lint_by_name(project: Path) -> None:
    done = santa(project, "lint", "house", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["valid"] is True


def test_lint_errors_exit_1(project: Path) -> None:
    (project / "bad.yaml").write_text(BAD, encoding="utf-8")
    done = santa(project, "lint", "bad.yaml")
    assert done.returncode == 1
    out = done.stdout
    assert "bad.yaml: error: criteria[0]: id 'Bad_Id' is not kebab-case" in out
    assert "only of vague words" in out
    assert "no fail_signals" in out
    assert "bad.yaml: warning: criterion 'ok-one': unknown key 'weight' is ignored" in out


def test_lint_json_shape(project: Path) -> None:
    (project / "bad.yaml").write_text(BAD, encoding="utf-8")
    done = santa(project, "lint", "bad.yaml", "--json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert set(data) == {"file", "valid", "errors", "warnings", "criteria"}
    assert data["valid"] is False and data["file"] == "bad.yaml"
    assert len(data["errors"]) == 3 and len(data["warnings"]) == 1


def test_lint_warnings_alone_exit_0(project: Path) -> None:
    (project / "warn.yaml").write_text(GOOD + "owner: docs team\n", encoding="utf-8")
    done = santa(project, "lint", "warn.yaml", "--json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["valid"] is True and data["warnings"] == [
        "unknown top-level key 'owner' is ignored"
    ]


def test_lint_stdin(project: Path) -> None:
    assert santa(project, "lint", "-", stdin=GOOD).returncode == 0
    done = santa(project, "lint", "-", "--json", stdin="criteria: [\n")
    assert done.returncode == 1
    assert json.loads(done.stdout)["errors"][0].startswith("invalid YAML")


@pytest.mark.parametrize("target", ["missing.yaml", "dir/missing.yml", "nosuchname"])
def test_lint_unreadable_exits_2(project: Path, target: str) -> None:
    done = santa(project, "lint", target)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("santa: cannot read rubric")


def test_lint_binary_file_exits_2(project: Path) -> None:
    (project / "bin.yaml").write_bytes(b"\xff\xfe\x00\x01")
    done = santa(project, "lint", "bin.yaml")
    assert done.returncode == 2 and "not UTF-8" in done.stderr


def test_no_action_and_bad_flags_exit_2(project: Path) -> None:
    assert santa(project).returncode == 2
    assert santa(project, "show", "base", "--format", "yaml").returncode == 2
    assert santa(project, "lint").returncode == 2


@pytest.mark.parametrize("args", [[], ["list"], ["show"], ["lint"]])
def test_help(project: Path, args: list[str]) -> None:
    done = santa(project, *args, "--help")
    assert done.returncode == 0
    assert "usage: santa rubric" in done.stdout
    assert ".santa/rubrics" in done.stdout or "Exit 0" in done.stdout
