"""`santa run --against-diff REV` and `verify(against_diff=...)`: a change reviewed headless.

A real git repository with two changed files (one tracked and edited, one
new and untracked); the scripted reviewers quote one line of each (one as
the diff shows it, with its `+`, one over two lines without the `+`), and
every quote must come back on its file and its line in the new version,
counted here from the files themselves.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sarif_pydantic import Sarif

from _reviews import review_of
from e2e.stub_server import REVIEWER, Json, first_user_text
from santa_method.cli import main
from santa_method.core.errors import InputError
from santa_method.core.locate import locate_in_diff, parse_diff, quote_lines
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

from .conftest import CRITERIA, canary_of
from .test_ci_formats import github_upload_problems

SPEC = "The docs give the current release year; the code prints a greeting."
README_OLD = "# Tool\n\nIt counts words.\n\n## License\nMIT\n"
README_NEW = "# Tool\n\nIt counts words.\nReleased in 1999.\n\n## License\nMIT\n"
APP_NEW = 'import sys\n\n\ndef main():\n    print("helo")\n    return 0\n'


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "t")
    (project / "docs").mkdir()
    (project / "docs" / "README.md").write_text(README_OLD, encoding="utf-8")
    git(project, "add", "docs/README.md")
    git(project, "commit", "-q", "-m", "base")
    (project / "docs" / "README.md").write_text(README_NEW, encoding="utf-8")
    (project / "app.py").write_text(APP_NEW, encoding="utf-8")  # new, untracked
    return project


def line_of(path: Path, text: str) -> int:
    return path.read_text(encoding="utf-8").split("\n").index(text) + 1


def issues_for(text: str) -> list[dict[str, Any]]:
    found = []
    if "Released in 1999." in text:
        found.append(
            {"criterion": "factual-accuracy", "issue": "wrong year", "quote": "+Released in 1999."}
        )
    if '"helo"' in text:
        # Two lines, quoted as the file has them (no `+`).
        found.append(
            {
                "criterion": "technical-correctness",
                "issue": "typo in the greeting",
                "quote": 'def main():\n    print("helo")',
            }
        )
    return found


class ChangeReviewer:
    """Flags the planted year and typo; the fixer mends what it is shown."""

    name = "scripted"

    def __init__(self) -> None:
        self.fixes: list[FixRequest] = []

    async def review(self, request: ReviewRequest) -> ReviewReply:
        canary = request.round_part.rstrip().rsplit("santa-canary: ", 1)[1]
        body = review_of(CRITERIA, issues_for(request.round_part), detail="x", canary=canary)
        return ReviewReply(text=json.dumps(body), tokens=Tokens(10, 5), cost_usd=0.001)

    async def fix(self, request: FixRequest) -> FixReply:
        self.fixes.append(request)
        fixed = request.output.replace("1999", "2024").replace('"helo"', '"hello"')
        return FixReply(output=fixed, notes="1. fixed", cost_usd=0.001)


def test_every_quote_is_placed_on_its_file_and_new_line(repo):
    result = verify_sync(
        SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
    )
    assert result.verdict == "NAUGHTY"  # a check only: its problems reported
    places = {i["criterion"]: i["places"] for i in result.issues}
    assert places["factual-accuracy"] == [
        {
            "path": "docs/README.md",
            "start_line": line_of(repo / "docs" / "README.md", "Released in 1999."),
            "end_line": line_of(repo / "docs" / "README.md", "Released in 1999."),
        }
    ]
    assert places["technical-correctness"] == [
        {
            "path": "app.py",
            "start_line": line_of(repo / "app.py", "def main():"),
            "end_line": line_of(repo / "app.py", '    print("helo")'),
        }
    ]
    # Nothing was changed: a review without --in-place only reports.
    assert (repo / "docs" / "README.md").read_text() == README_NEW
    assert (repo / "app.py").read_text() == APP_NEW


def test_the_reports_place_them_too(repo, capsys):
    result = verify_sync(
        SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=0)
    )
    assert main(["report", result.run_id, "--format", "sarif"]) == 0
    data = json.loads(capsys.readouterr().out)
    Sarif.model_validate(data)
    assert github_upload_problems(data) == []
    spots = {
        r["ruleId"]: (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in data["runs"][0]["results"]
    }
    assert spots == {
        "factual-accuracy": ("docs/README.md", 4),
        "technical-correctness": ("app.py", 4),
    }
    assert main(["report", result.run_id, "--format", "codeclimate"]) == 0
    paths = {i["location"]["path"] for i in json.loads(capsys.readouterr().out)}
    assert paths == {"docs/README.md", "app.py"}


def test_fixes_need_in_place_and_then_edit_each_file_with_its_own_problems(repo):
    with pytest.raises(InputError, match="--in-place"):
        verify_sync(
            SPEC, options=VerifyOptions(against_diff="HEAD", backend=ChangeReviewer(), max_fixes=1)
        )
    assert not (repo / ".santa" / "runs").exists()  # refused before any run opened

    backend = ChangeReviewer()
    mode = (repo / "app.py").stat().st_mode
    result = verify_sync(
        SPEC,
        options=VerifyOptions(against_diff="HEAD", backend=backend, max_fixes=1, in_place=True),
    )
    assert result.verdict == "NICE" and result.rounds == 2
    assert "Released in 2024." in (repo / "docs" / "README.md").read_text()
    assert '"hello"' in (repo / "app.py").read_text()
    assert (repo / "app.py").stat().st_mode == mode  # the user's file keeps its permissions
    # One fixer call per changed file, each with that file alone and its own problem.
    calls = {Path(f.target_path).name: f for f in backend.fixes}
    assert set(calls) == {"README.md", "app.py"}
    assert calls["app.py"].output == APP_NEW
    assert "typo in the greeting" in calls["app.py"].assignment
    assert "wrong year" not in calls["app.py"].assignment
    assert "wrong year" in calls["README.md"].assignment


def test_cli_against_diff_json(stub_server, repo, monkeypatch, capsys):
    def reviewer(body: dict[str, Any]) -> Json:
        return Json(
            review_of(
                CRITERIA, issues_for(first_user_text(body)), detail="x", canary=canary_of(body)
            )
        )

    server = stub_server({REVIEWER: reviewer})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    code = main(
        [
            "run",
            "--against-diff",
            "HEAD",
            "--spec-text",
            SPEC,
            "--max-fixes",
            "0",
            "--json",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    data = json.loads(out)
    assert (data["verdict"], data["outcome"]) == ("NAUGHTY", "reported")
    assert {(i["criterion"], i["places"][0]["path"]) for i in data["issues"]} == {
        ("factual-accuracy", "docs/README.md"),
        ("technical-correctness", "app.py"),
    }
    assert data["target"] == "diff:HEAD"


def test_cli_refusals(repo, capsys):
    assert main(["run", "--against-diff", "HEAD", "--spec-text", SPEC]) == 2
    assert "--in-place" in capsys.readouterr().err
    assert main(["run", "--against-diff", "nope", "--spec-text", SPEC, "--max-fixes", "0"]) == 2
    assert "not a commit" in capsys.readouterr().err
    assert main(["run", "--against-diff", "HEAD", "--against", "x.md", "--spec-text", SPEC]) == 2
    assert "not allowed with argument --against-diff" in capsys.readouterr().err


def test_a_folder_that_is_not_a_git_repository_is_named_as_such(project, capsys, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(project.parent))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    args = ["run", "--against-diff", "HEAD", "--spec-text", SPEC, "--max-fixes", "0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"santa: {project} is not a git repository, so it has no change to review against "
        "HEAD: run this in a git checkout, or review a file with --against FILE"
    )
    assert not (project / ".santa" / "runs").exists()


# --- the placing itself, on diffs git wrote ---------------------------------------


def test_a_removed_line_points_where_it_was_and_a_deleted_file_at_the_file(repo):
    (repo / "docs" / "README.md").write_text("# Tool\n\n## License\nMIT\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    (repo / "docs" / "README.md").write_text("# Tool\n\n## License\nApache\n", encoding="utf-8")
    (repo / "app.py").unlink()
    diff = git(repo, "diff", "HEAD")
    assert {f.path: f.deleted for f in parse_diff(diff)} == {
        "app.py": True,
        "docs/README.md": False,
    }
    assert locate_in_diff("-MIT", diff).to_json() == {
        "path": "docs/README.md",
        "start_line": 4,
        "end_line": 4,
    }
    assert locate_in_diff('print("helo")', diff).to_json() == {
        "path": "app.py",
        "start_line": None,
        "end_line": None,
    }
    assert locate_in_diff("not in the diff at all", diff) is None


def test_quote_lines_ignores_case_typography_and_wrapping():
    text = "alpha\n\n“Quoted” text\nwrapped here\nomega\n"
    assert quote_lines('"quoted" TEXT wrapped', text) == (3, 4)
    assert quote_lines("omega", text) == (5, 5)
    assert quote_lines("absent", text) is None
    assert quote_lines("", text) is None
