"""The wheel carries what a regular install needs: rubrics, schemas and the
plugin files `santa init` vendors, found without the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_works_without_the_source_tree(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("santa_method-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "santa_method/_data/rubrics/base.yaml",
        "santa_method/_data/rubrics/regulated.yaml",
        "santa_method/_data/schemas/review.schema.json",
        "santa_method/_data/plugin/SKILL.md",
        "santa_method/_data/plugin/agents/reviewer.md",
        "santa_method/_data/plugin/commands/verify.md",
        "santa_method/claude_code/santa-hook.sh",
        "santa_method/py.typed",  # the package's type hints are for its users too
        "santa_method/view/assets/app.js",
        "santa_method/view/assets/style.css",
        "santa_method/_data/examples/output.md",  # santa demo's example and replies
        "santa_method/_data/examples/spec.md",
        "santa_method/_data/examples/demo/replies/manifest.json",
    ):
        assert expected in names, expected
    # A pure-Python wheel installs by unpacking; put it first on the path so
    # the editable install of the source tree cannot answer instead.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site), "SANTA_HOME": str(tmp_path / ".santa")}
    where = subprocess.run(
        [sys.executable, "-c", "import santa_method, sys; print(santa_method.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(str(site))
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "santa_method",
            "rubric",
            "show",
            "code+regulated",
            "--format",
            "json",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    assert '"no-outcome-guarantees"' in shown.stdout and '"type-safety"' in shown.stdout
    gated = subprocess.run(
        [
            sys.executable,
            "-m",
            "santa_method",
            "gate",
            str(ROOT / "examples/review-b.json"),
            str(ROOT / "examples/review-c.json"),
            "--rubric",
            "base",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert gated.returncode == 1 and '"next": "fix"' in gated.stdout
    target = tmp_path / "repo"
    target.mkdir()
    init = subprocess.run(
        [sys.executable, "-m", "santa_method", "init", str(target)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert init.returncode == 0, init.stderr
    assert (
        (target / ".claude/agents/santa-reviewer.md")
        .read_text()
        .startswith("---\nname: santa-reviewer")
    )
    demo = subprocess.run(
        [sys.executable, "-m", "santa_method", "demo", "--dir", str(tmp_path / "demo"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert demo.returncode == 0, demo.stderr
    assert '"verdict": "NICE"' in demo.stdout
    assert f'"replayed": "{site}' in demo.stdout  # the wheel's own copy of the replies
