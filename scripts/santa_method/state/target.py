"""What a run reviews: a file, or a git diff recomputed each time, and the pre-check.

The target is read again wherever it matters (opening a round, shipping,
logging a fix), never trusted from an earlier copy: what ships must be what
was reviewed. The pre-check (a command the user names, e.g. the tests) runs
before any reviewer is spent.
"""

from __future__ import annotations

import subprocess

from santa_method.core.errors import InputError, RefusedError
from santa_method.core.files import read_text
from santa_method.state.atomic import is_temporary
from santa_method.state.model.run import Target

PRE_CHECK_TIMEOUT = 900


def check_rev(rev: str, cwd: str) -> None:
    """A revision for `--against-diff` must be one git knows, never an option."""
    if not rev or rev.startswith("-") or any(ch.isspace() for ch in rev):
        raise InputError(f"'{rev}' is not a git revision")
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        inside = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            raise InputError(
                f"{cwd} is not a git repository, so it has no change to review against {rev}: "
                "run this in a git checkout, or review a file with --against FILE"
            )
        raise InputError(f"'{rev}' is not a commit of the git repository at {cwd}")


def read_target(target: Target) -> str:
    """The current content under review: the file, or the diff recomputed now."""
    if target.kind == "file":
        return read_text(str(target.path), "target")
    rev = str(target.rev)
    if rev.startswith("-"):
        raise InputError(f"'{rev}' is not a git revision")
    result = subprocess.run(
        ["git", "diff", "--no-color", "--no-ext-diff", "--no-textconv", rev, "--"],
        cwd=target.cwd,
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip()
        raise InputError(f"git diff {rev} failed: {said or 'unknown error'}")
    return _diff_text(result.stdout) + _untracked_diff(str(target.cwd))


def _diff_text(raw: bytes) -> str:
    """A diff as text, or an InputError naming the changed file that is not
    UTF-8 (santa reviews text; a strict decode would end in a traceback).
    Line ends as text mode reads them (CRLF as LF), as before."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw.rfind(b"diff --git ", 0, exc.start)
        line = raw[head : raw.find(b"\n", head)] if head >= 0 else b""
        name = line.decode("utf-8", "replace").rsplit(" b/", 1)[-1] if line else "a changed file"
        raise InputError(
            f"cannot review the change: {name} is not UTF-8 text (santa reviews UTF-8 text)"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def working_copy(target: Target) -> str | None:
    """The run's own copy of the user's file, when it reviewed one (headless runs)."""
    return str(target.path) if target.kind == "file" and target.original else None


def reviewed_name(target: Target) -> str:
    """The file whose content was reviewed (a working copy, for a headless run)."""
    return str(target.path) if target.kind == "file" else target_name(target)


def _untracked_diff(cwd: str) -> str:
    """New files git does not track yet are part of the change under review:
    `git diff REV` alone would leave them out of the reviewers' sight."""
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=cwd,
        capture_output=True,
        encoding="utf-8",
        errors="surrogateescape",  # any file name, passed back to git as it was
        check=False,
    )
    parts = []
    for name in sorted(n for n in listed.stdout.split("\0") if n):
        if name == ".santa" or name.startswith(".santa/") or is_temporary(name):
            continue  # santa's own files, and a write a kill cut short
        shown = subprocess.run(
            ["git", "diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", name],
            cwd=cwd,
            capture_output=True,
            check=False,
        )
        parts.append(_diff_text(shown.stdout))
    return "".join(parts)


def target_name(target: Target) -> str:
    """The name a person knows the target by: the file they named (a headless
    run reviews a working copy of it, kept as `path`, and names the file as
    `original`; older runs have no `original`), or diff:REV."""
    if target.kind == "file":
        return str(target.original or target.path)
    return f"diff:{target.rev}"


def run_pre_check(command: str | None, cwd: str) -> None:
    if not command:
        return
    try:
        result = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=PRE_CHECK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RefusedError(f"the pre-check '{command}' timed out; no reviewer was spent") from None
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
        detail = (": " + " | ".join(tail)) if tail else ""
        raise RefusedError(
            f"the pre-check '{command}' failed (exit {result.returncode}){detail}; "
            "fix it before spending reviewers"
        )
