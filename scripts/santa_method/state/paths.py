"""Where the project's `.santa/` folder lives.

It belongs at the project root, not wherever a shell happens to stand:
`CLAUDE_PROJECT_DIR` (set by Claude Code), else the git top level, else the
current directory. `SANTA_HOME` overrides all three (tests, unusual setups).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from santa_method.state.atomic import replace_text

GITIGNORE = "# santa-method keeps run state here; the log may be committed.\nruns/\ninputs/\n"


def project_root(cwd: Path | None = None) -> Path:
    here = Path(cwd) if cwd is not None else Path.cwd()
    env = os.environ.get("CLAUDE_PROJECT_DIR")
    if env:
        return Path(env)
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return here
    if top.returncode == 0 and top.stdout.strip():
        return Path(top.stdout.strip())
    return here


def santa_dir(cwd: Path | None = None) -> Path:
    """The `.santa/` folder (not created here)."""
    env = os.environ.get("SANTA_HOME")
    if env:
        return Path(env)
    return project_root(cwd) / ".santa"


def ensure_santa_dir(cwd: Path | None = None) -> Path:
    """Create `.santa/` with its own `.gitignore` so run folders stay out of git."""
    path = santa_dir(cwd)
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        replace_text(ignore, GITIGNORE)
    return path


def project_rubrics_dir(cwd: Path | None = None) -> Path:
    return santa_dir(cwd) / "rubrics"


def default_log_path(cwd: Path | None = None) -> Path:
    env = os.environ.get("SANTA_LOG")
    if env:
        return Path(env)
    return santa_dir(cwd) / "log.jsonl"
