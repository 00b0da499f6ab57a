"""`santa demo`, run as a newcomer runs it: from inside their own project,
with no key, no network and no set-up.

It must tell the loop's whole story (two reviewers fail the example, the
fixer fixes, fresh reviewers pass it), write the page, label every reply
for what it is, and leave the user's project and its metrics untouched.
If this fails after a change to what reviewers or the fixer receive, the
shipped recording no longer answers the demo's requests: run
`python examples/demo/make.py` and commit what it writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from santa_method.state import log as runlog

SANTA = str(Path(sys.executable).parent / "santa")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def users_project(tmp_path: Path) -> Path:
    """A project of the user's, with its own log and config, where they run the demo."""
    root = tmp_path / "mine"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".santa").mkdir()
    (root / ".santa" / "config.yaml").write_text("reviewers: 3\nmax_fixes: 0\n")
    runlog.append(
        root / ".santa" / "log.jsonl",
        {"run_id": "20260101-000000-abcdef", "event": "run", "iteration": 0, "target": "x.md"},
    )
    (root / "draft.md").write_text("# Mine\n")
    return root


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def demo(cwd: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "SANTA_", "CLAUDE"))
    }
    # As inside Claude Code: the user's project is named, and still untouched.
    env.update(
        CLAUDE_PROJECT_DIR=str(cwd), TMPDIR=str(tmp), ANTHROPIC_BASE_URL="http://127.0.0.1:9"
    )
    return subprocess.run(
        [SANTA, "demo", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def story(log: Path) -> list[tuple[Any, ...]]:
    told: list[tuple[Any, ...]] = []
    for r in runlog.read(log).records:
        if r["event"] == "review":
            told.append(("review", r["label"], r["verdict"]))
        elif r["event"] == "gate":
            told.append(("gate", r["verdict"], r["next"], len(r["issues"])))
        else:
            told.append((r["event"],))
    return told


def test_the_demo_runs_the_loop_offline_in_a_folder_of_its_own(users_project, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    before = snapshot(users_project)
    done = demo(users_project, tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    out = done.stdout
    (folder,) = tmp.iterdir()  # a new temporary folder, nothing else
    log = folder / ".santa" / "log.jsonl"
    assert story(log) == [
        ("run",),
        ("review", "B", "FAIL"),
        ("review", "C", "FAIL"),
        ("gate", "NAUGHTY", "fix", 6),
        ("fix",),
        ("review", "B", "PASS"),
        ("review", "C", "PASS"),
        ("gate", "NICE", "ship", 0),
        ("ship",),
    ]
    records = runlog.read(log).records
    assert records[0]["replayed"].endswith(os.path.join("examples", "demo", "replies"))
    assert records[0]["reviewers"] == 2  # the demo's settings, not the user's config
    # Every reply is labelled, in the story and in the log.
    for line in (
        "reviewer B (written for the demo): FAIL",
        "reviewer C (written for the demo): PASS",
    ):
        assert line in out
    assert "fixer (written for the demo): done" in out
    assert {r["model"] for r in records if r["event"] in ("review", "fix")} == {
        "written for the demo"
    }
    # The page, and the fixed output.
    page = folder / ".santa" / "view" / "index.html"
    assert f"the run's page:  {page}" in out and page.is_file()
    assert records[0]["run_id"] in page.read_text(encoding="utf-8")
    verified = Path(out.split("verified output: ", 1)[1].split("\n", 1)[0])
    assert "Current version: 2.1." in verified.read_text() and "--chars" not in verified.read_text()
    assert (folder / "README.md").read_text() == (REPO / "examples" / "output.md").read_text()
    # The user's project: not a byte changed, and its metrics count only its own run.
    assert snapshot(users_project) == before
    metrics = subprocess.run(
        [SANTA, "metrics", "--json"],
        cwd=users_project,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(users_project)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(metrics.stdout)["runs"]["total"] == 1


def test_the_demo_says_what_it_did_as_json(users_project, tmp_path):
    chosen = tmp_path / "demo"
    done = demo(users_project, tmp_path, "--dir", str(chosen), "--json")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["folder"] == str(chosen.resolve())
    assert said["result"]["verdict"] == "NICE" and said["result"]["rounds"] == 2
    assert said["result"]["replayed"].endswith(os.path.join("examples", "demo", "replies"))
    # Reviewers answer concurrently: the order within a round may vary.
    assert sorted(r["reply"] for r in said["replies"]) == [
        "reviewer B's review in round 1",
        "reviewer B's review in round 2",
        "reviewer C's review in round 1",
        "reviewer C's review in round 2",
        "the fixer's fix after round 1",
    ]
    assert {r["origin"] for r in said["replies"]} == {"written for the demo"}
    assert Path(said["page"]).is_file()


def test_the_demo_never_works_in_a_folder_that_holds_anything(users_project, tmp_path):
    before = snapshot(users_project)
    done = demo(users_project, tmp_path, "--dir", str(users_project))
    assert done.returncode == 2
    assert "is not an empty folder; santa demo works in a folder of its own" in done.stderr
    assert done.stdout == ""
    assert snapshot(users_project) == before


def test_a_demo_whose_replies_are_out_of_date_says_how_to_record_them_again(
    tmp_path, monkeypatch
):
    """What a contributor meets after changing what reviewers receive."""
    from santa_method.core.errors import InputError
    from santa_method.headless import demo as demo_module

    stale = tmp_path / "replies"
    shutil.copytree(demo_module.recording_dir(), stale)
    for entry in stale.glob("*.json"):
        if entry.name != "manifest.json" and '"label": "B"' in entry.read_text():
            entry.unlink()
    monkeypatch.setattr(demo_module, "recording_dir", lambda: stale)
    with pytest.raises(InputError) as refused:
        demo_module.run_demo(tmp_path / "demo")
    said = str(refused.value)
    assert "has no reply for reviewer B's review in round 1" in said
    assert said.endswith("python examples/demo/make.py records them again")
