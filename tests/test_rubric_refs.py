"""Which `--rubric` values are files and which are names: one rule
(`core.rubric.names_a_file`) for every command that reads a rubric. A bare
`myr.json` that lints is a rubric the gate can use; a bare folder name is
"a directory"; a name that is neither lists the rubrics there are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _readers import READERS
from _reviews import pass_review, reply
from santa_method.cli import main

RUBRIC_READERS = sorted(n for n in READERS if "rubric" in n)

MYR = {
    "name": "myr",
    "criteria": [
        {
            "id": "page-count",
            "name": "Page count",
            "pass": "The output has exactly 3 pages.",
            "fail_signals": ["More or fewer than 3 pages."],
        }
    ],
}


@pytest.fixture
def project(project: Path, user_files: Path) -> Path:
    """The shared project's files (conftest.py) and a rubric of its own, with two reviews of it."""
    (project / "myr.json").write_text(json.dumps(MYR), encoding="utf-8")
    for name, extra in (("b", {}), ("c", {"suggestions": ["c"]})):
        review = pass_review(("page-count",), **extra)
        (project / f"{name}-myr.json").write_text(reply(review), encoding="utf-8")
    return project


def _call(name: str, value: str) -> int:
    return main([value if a == "{}" else a for a in READERS[name]])


def test_a_json_rubric_in_the_current_folder_is_read_by_name_of_its_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rubric", "lint", "myr.json"]) == 0
    assert "ok (1 criteria)" in capsys.readouterr().out
    assert main(["gate", "b-myr.json", "c-myr.json", "--rubric", "myr.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "NICE"
    assert main(["validate", "b-myr.json", "--rubric", "myr.json"]) == 0
    assert main(["rubric", "show", "myr.json"]) == 0
    assert "page-count" in capsys.readouterr().out


@pytest.mark.parametrize("name", RUBRIC_READERS)
def test_no_reader_calls_a_json_rubric_file_unknown(
    project: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    _call(name, "myr.json")
    _out, err = capsys.readouterr()
    assert "unknown rubric" not in err and "Traceback" not in err


@pytest.mark.parametrize("name", RUBRIC_READERS)
def test_a_bare_folder_name_is_a_directory(
    project: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (project / "adir").mkdir()
    code = _call(name, "adir")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "'adir'" in err and "a directory" in err and "unknown rubric" not in err


@pytest.mark.parametrize("name", RUBRIC_READERS)
def test_a_value_that_is_neither_lists_the_rubrics_there_are(
    project: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code = _call(name, "nosuch")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "nosuch" in err and "Traceback" not in err
    if name != "rubric lint":  # lint names a file; the others list the names
        assert "unknown rubric 'nosuch'" in err and "base, code" in err


def test_a_rubric_name_is_not_hidden_by_a_folder_of_that_name(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "code").mkdir()  # a project's source folder
    assert main(["validate", "b.json", "--rubric", "code", "--json"]) == 1
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert any("no result for" in e and "type-safety" in e for e in errors)
