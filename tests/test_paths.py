"""`.santa/`'s own .gitignore keeps every folder of unredacted text out of git.

Checked by git itself: a repository with a file in each folder santa writes,
created without the `*` .gitignore each folder also gets (a run killed
between creating a folder and writing that file leaves it so), and with
what may be committed (the log, the config, project rubrics) beside them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from santa_method.state.paths import ensure_santa_dir

PRIVATE = [
    "runs/20250101-000000-abcdef/state.json",
    "work/0a1b2c3d4e5f/output.md",
    "batches/b-20250101-000000-abcdef/state.json",
    "locks/fix-0a1b2c.lock",
    "inputs/batch-b-1/item.md",
    "view/index.html",
]
SHARED = ["log.jsonl", "config.yaml", "rubrics/house.yaml", ".gitignore"]


def test_only_what_may_be_committed_is_left_for_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SANTA_HOME", raising=False)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    santa = ensure_santa_dir()
    assert santa == tmp_path / ".santa"
    for name in PRIVATE + SHARED[:-1]:
        path = santa / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the text under review, secrets and all\n", encoding="utf-8")
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert sorted(line[3:] for line in listed) == sorted(f".santa/{n}" for n in SHARED)
