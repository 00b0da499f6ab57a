"""Where the project's `.santa/` folder lives.

It belongs at the project root, not wherever a shell happens to stand:
`CLAUDE_PROJECT_DIR` (set by Claude Code), else the git top level, else the
current directory. `SANTA_HOME` overrides all three (tests, unusual setups).

The PreToolUse guard asks this on every tool call of a Claude Code session,
so nothing but `os` is imported up front (`pathlib` and `subprocess` cost
more than the guard's whole budget); `santa_home` answers as a plain string.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Every folder santa writes under `.santa/`: runs, working copies and batches
# hold the unredacted text under review, so none of them may be committed by
# accident. (Each also gets its own `*` .gitignore where it is created, for
# projects whose `.santa/.gitignore` an older santa wrote.)
GITIGNORE = (
    "# santa-method keeps run state here; the log may be committed.\n"
    "runs/\ninputs/\nview/\nwork/\nbatches/\nlocks/\n"
)


def _root(cwd: Path | str | None) -> str:
    here = os.fspath(cwd) if cwd is not None else os.getcwd()
    env = os.environ.get("CLAUDE_PROJECT_DIR")
    if env:
        return env
    import subprocess

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
        return top.stdout.strip()
    return here


def project_root(cwd: Path | None = None) -> Path:
    from pathlib import Path

    return Path(_root(cwd))


def santa_home(cwd: Path | str | None = None) -> str:
    """The `.santa/` folder as a string (not created here)."""
    env = os.environ.get("SANTA_HOME")
    if env:
        return env
    return os.path.join(_root(cwd), ".santa")


def santa_dir(cwd: Path | None = None) -> Path:
    """The `.santa/` folder (not created here)."""
    from pathlib import Path

    return Path(santa_home(cwd))


def ensure_santa_dir(cwd: Path | None = None) -> Path:
    """Create `.santa/` with its own `.gitignore` so run folders stay out of git."""
    path = santa_dir(cwd)
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        from santa_method.state.atomic import replace_text

        replace_text(ignore, GITIGNORE)
    return path


def project_rubrics_dir(cwd: Path | None = None) -> Path:
    return santa_dir(cwd) / "rubrics"


def default_log_path(cwd: Path | None = None) -> Path:
    from pathlib import Path

    env = os.environ.get("SANTA_LOG")
    if env:
        return Path(env)
    return santa_dir(cwd) / "log.jsonl"
