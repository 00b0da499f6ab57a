#!/usr/bin/env python3
"""Give the plugin's helper a Python environment: the SessionStart bootstrap.

Claude Code installs a plugin by copying files; it never pip-installs
anything. So this script, run as a SessionStart hook before any dependency
exists, uses the standard library only (and syntax old Pythons can parse, so
an old `python3` can at least say what is wrong). It makes a venv under
`${CLAUDE_PLUGIN_DATA}/venv` holding the pinned core requirements, and tells
later Bash tool calls where it is through `$CLAUDE_ENV_FILE`; `libexec/santa`
finds it there or by its path. The package itself is never installed: the
launcher puts the plugin's `scripts/` on PYTHONPATH, so the code that runs is
always the plugin's own copy.

Work is skipped whenever it is not needed: `SANTA_SKIP_BOOTSTRAP=1`, an
interpreter that already has the package at this version and its
dependencies, or a venv whose stamp matches the requirements file's hash.
It also tells the user, once, when Claude Code copied local files (a
`.venv`, a `.env`, `.santa/`) into the plugin's installed copy
(install_check.py). A SessionStart hook must never break the session, so every failure ends in
one clear message (stderr, and the hook's JSON for the user and model) and
exit code 0.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "libexec" / "santa"
STAMP_NAME = ".santa-requirements.sha256"
MIN_PYTHON = (3, 11)
# Modules `libexec/santa` needs; `santa_method` itself comes from the plugin.
DEPENDENCY_MODULES = ("jsonschema", "fastjsonschema", "yaml", "rapidfuzz", "rich", "detect_secrets")
# The hook's timeout is 300 s: leave room to report a pip that hangs.
PIP_TIMEOUT_S = 240
VENV_TIMEOUT_S = 120
CHECK_TIMEOUT_S = 30
# All steps together stay inside the hook's 300 s, so a hang is reported by
# us, not cut off by Claude Code.
TOTAL_BUDGET_S = 270
_DEADLINE = time.monotonic() + TOTAL_BUDGET_S


class BootstrapError(Exception):
    """A step failed; the message says what and how to fix it."""


def plugin_version(root: Path) -> str | None:
    """The version of the plugin's own package copy, read without importing it."""
    init = root / "scripts" / "santa_method" / "__init__.py"
    try:
        text = init.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match.group(1) if match else None


def requirements_hash(requirements: Path) -> str:
    return hashlib.sha256(requirements.read_bytes()).hexdigest()


def venv_python(venv: Path) -> Path:
    if os.name == "nt":  # pragma: no cover - Linux and macOS are supported
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def read_stamp(venv: Path) -> str | None:
    try:
        return (venv / STAMP_NAME).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def write_stamp(venv: Path, digest: str) -> None:
    (venv / STAMP_NAME).write_text(digest + "\n", encoding="utf-8")


def needs_install(stamp: str | None, digest: str, python_exists: bool) -> bool:
    """Install only for a missing venv or requirements that changed since the last install."""
    return not python_exists or stamp != digest


def _clean_env() -> dict[str, str]:
    """The environment for checks: no PYTHONPATH, so nothing of the plugin leaks in."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    return env


def interpreter_has_package(python: str, version: str | None) -> bool:
    """Whether `python` can import santa_method at `version` and its dependencies.

    Run in a child process from a neutral directory so that the plugin's own
    `scripts/` (this file's folder, first on our own sys.path) cannot make
    the answer yes.
    """
    if version is None:
        return False
    modules = ", ".join(("santa_method", *DEPENDENCY_MODULES))
    code = f"import {modules}; print(santa_method.__version__)"
    try:
        done = subprocess.run(
            [python, "-c", code],
            cwd=tempfile.gettempdir(),
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def base_python() -> str | None:
    """An interpreter new enough to build the venv: this one, else one on PATH."""
    if sys.version_info >= MIN_PYTHON:
        return sys.executable
    for minor in (14, 13, 12, 11):
        found = shutil.which(f"python3.{minor}")
        if found:
            return found
    return None


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) or "no output"


def _run(cmd: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=tempfile.gettempdir(),
        env=_clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=max(1.0, min(timeout, _DEADLINE - time.monotonic())),
        check=False,
    )


def has_pip(python: Path) -> bool:
    try:
        return _run([str(python), "-m", "pip", "--version"], CHECK_TIMEOUT_S).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def create_venv(base: str, venv: Path) -> None:
    try:
        done = _run([base, "-m", "venv", "--clear", str(venv)], VENV_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BootstrapError(f"could not create the venv {venv} with {base}: {exc}") from exc
    if done.returncode != 0:
        raise BootstrapError(
            f"could not create the venv {venv} with {base} ({_tail(done.stderr + done.stdout)}). "
            "Make sure Python's venv and ensurepip modules are installed "
            "(on Debian or Ubuntu: apt-get install python3-venv), then start a new session."
        )


def pip_install(python: Path, requirements: Path) -> None:
    cmd = [
        str(python),
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "-r",
        str(requirements),
    ]
    fix = (
        "Check your network, proxy or package index settings (pip's PIP_INDEX_URL), then "
        f"start a new Claude Code session, or run: {shlex.quote(str(python))} -m pip install "
        f"-r {shlex.quote(str(requirements))}"
    )
    try:
        done = _run(cmd, PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise BootstrapError(
            f"installing the helper's packages took longer than {PIP_TIMEOUT_S} s; "
            f"the package index may be unreachable. {fix}"
        ) from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise BootstrapError(f"could not run pip in {python}: {exc}. {fix}") from exc
    if done.returncode != 0:
        raise BootstrapError(
            f"could not install the helper's packages (pip exited {done.returncode}: "
            f"{_tail(done.stderr + done.stdout)}); the package index may be unreachable. {fix}"
        )


def venv_is_current(venv: Path, requirements: Path) -> bool:
    python = venv_python(venv)
    return not needs_install(read_stamp(venv), requirements_hash(requirements), python.exists())


def ensure_venv(venv: Path, requirements: Path) -> Path:
    """Make the venv current and return its interpreter; raise BootstrapError if it cannot.

    Checked again under the lock: another session may have just finished.
    """
    digest = requirements_hash(requirements)
    python = venv_python(venv)
    if not needs_install(read_stamp(venv), digest, python.exists()):
        return python
    if not python.exists() or not has_pip(python):
        base = base_python()
        if base is None:
            raise BootstrapError(
                "santa-method needs Python 3.11 or newer and found only "
                f"{sys.version.split()[0]}; install a newer Python 3 and start a new session."
            )
        create_venv(base, venv)
    # A stamp is written only after a complete install, so a failure is retried next time.
    (venv / STAMP_NAME).unlink(missing_ok=True)
    pip_install(python, requirements)
    write_stamp(venv, digest)
    return python


@contextlib.contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Serialise bootstraps of sessions that start at the same time."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def export_python(python: str | Path) -> None:
    """Tell later Bash tool calls which interpreter `libexec/santa` should use."""
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if not env_file:
        return
    with open(env_file, "a", encoding="utf-8") as handle:
        handle.write(f"export SANTA_PYTHON={shlex.quote(str(python))}\n")


# What the session start tells the user, in one message at its end.
_NOTICES: list[str] = []


def _tell(text: str) -> None:
    """One hook answer on stdout: the user sees it, and so does the model."""
    if os.environ.get("CLAUDECODE") or os.environ.get("CLAUDE_PLUGIN_ROOT"):
        hook_output = {
            "systemMessage": text,
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text},
        }
        print(json.dumps(hook_output))


def report_failure(message: str) -> int:
    """Queue a failure for the session start's one message; exit 0 keeps the
    session going, and the message makes sure someone sees why."""
    text = f"santa-method: {message}"
    print(text, file=sys.stderr)
    _NOTICES.append(text)
    return 0


def install_notice() -> None:
    """Queue the notice about local files copied into this installed copy.

    Never breaks the session: any error here means no notice.
    """
    try:
        here = str(Path(__file__).resolve().parent)
        if here not in sys.path:
            sys.path.insert(0, here)
        from install_check import notice

        text = notice(ROOT, os.environ.get("CLAUDE_PLUGIN_DATA"))
    except Exception:
        return
    if text:
        print(text, file=sys.stderr)
        _NOTICES.append(text)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Prepare the santa-method helper's Python environment (run by Claude Code at session start).",
    )
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("CLAUDE_PLUGIN_DATA"),
        help="where the venv lives (default: $CLAUDE_PLUGIN_DATA)",
    )
    parser.add_argument(
        "--requirements",
        default=str(ROOT / "scripts" / "requirements.txt"),
        help="the pinned requirements to install (default: the plugin's scripts/requirements.txt)",
    )
    return parser.parse_args(argv)


def export_session() -> None:
    """What later Bash tool calls need, written to `$CLAUDE_ENV_FILE` even
    when the bootstrap is skipped: the launcher's folder on PATH, so the
    skill's and commands' bare `santa` runs it (a plugin's bin/ would be on
    PATH by itself, but claude.ai refuses a published plugin that has one);
    and CLAUDE_PROJECT_DIR, which hooks see and the Bash tool does not:
    without it, `santa` in a subfolder of a git repository would keep its
    `.santa/` at the git top level while the hooks look in the project
    folder."""
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if not env_file:
        return
    folder = shlex.quote(str(LAUNCHER.parent))
    lines = [
        f'case ":$PATH:" in *:{folder}:*) ;; *) export PATH={folder}"${{PATH:+:$PATH}}" ;; esac'
    ]
    project = os.environ.get("CLAUDE_PROJECT_DIR")
    if project:
        lines.append(f"export CLAUDE_PROJECT_DIR={shlex.quote(project)}")
    with open(env_file, "a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


#: A harmless call for the guard: what every Bash call of the session runs through.
_PROBE = {
    "session_id": "santa-launcher-check",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "true"},
}


def launcher_problem() -> str | None:
    """Why the hooks' launcher does not answer a harmless call, or None.

    Both PreToolUse hooks block their call when the launcher fails
    ("onFailure": "block"), and the guard refuses when the helper behind it
    is broken: either way a half-removed or damaged install would refuse
    every Bash, Write, Edit and Agent call of the session, so the user is
    told at its start, once, with the way out."""
    env = _clean_env()
    env.pop("CLAUDE_PROJECT_DIR", None)
    with tempfile.TemporaryDirectory(prefix="santa-check-") as where:
        probe = dict(_PROBE, cwd=where)
        try:
            done = subprocess.run(
                [str(LAUNCHER), "hook", "pretooluse-guard"],
                input=json.dumps(probe),
                cwd=where,
                env=env,
                capture_output=True,
                text=True,
                timeout=CHECK_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"it did not answer within {CHECK_TIMEOUT_S} s"
        except OSError as exc:
            return exc.strerror or type(exc).__name__
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"it exited with status {done.returncode}: {last}"
    if '"deny"' in done.stdout:
        try:
            reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
        except (ValueError, KeyError, TypeError):
            reason = done.stdout.strip()
        return f"it refused a harmless command: {reason}"
    return None


def check_launcher() -> None:
    """Queue the notice for a launcher that does not answer (see launcher_problem)."""
    problem = launcher_problem()
    if problem is None:
        return
    text = (
        f"santa-method: its hook launcher {LAUNCHER} does not work ({problem}). Until it "
        "does, Claude Code refuses every Bash, Write, Edit and Agent call of this session, "
        "because santa's hooks fail closed. To repair it, reinstall the plugin "
        "(`claude plugin install santa-method@santa-method`, or /plugin); to go on without "
        "it, run `claude plugin disable santa-method@santa-method` and start a new session."
    )
    print(text, file=sys.stderr)
    _NOTICES.append(text)


def main(argv: list[str] | None = None) -> int:
    install_notice()
    code = _bootstrap(argv)
    try:
        check_launcher()
    except Exception as exc:  # the session must start whatever went wrong here
        report_failure(f"its hook launcher could not be checked ({exc}).")
    if _NOTICES:
        _tell("\n\n".join(_NOTICES))
    return code


def _bootstrap(argv: list[str] | None) -> int:
    with contextlib.suppress(OSError):
        export_session()
    if os.environ.get("SANTA_SKIP_BOOTSTRAP") == "1":
        return 0
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        requirements = Path(args.requirements)
        if not requirements.is_file():
            return report_failure(
                f"the requirements file {requirements} is missing; reinstall the plugin."
            )
        venv = Path(args.data_dir) / "venv" if args.data_dir else None
        # Cheapest first: a current venv costs two file reads, the import check a process.
        if venv is not None and venv_is_current(venv, requirements):
            export_python(venv_python(venv))
            return 0
        if interpreter_has_package(sys.executable, plugin_version(ROOT)):
            export_python(sys.executable)
            return 0
        if venv is None:
            return report_failure(
                "CLAUDE_PLUGIN_DATA is not set, so there is nowhere to put the helper's venv; "
                "run this from Claude Code's SessionStart hook or pass --data-dir DIR."
            )
        with exclusive(venv.parent / "bootstrap.lock"):
            python = ensure_venv(venv, requirements)
        export_python(python)
        return 0
    except BootstrapError as exc:
        return report_failure(str(exc))
    except Exception as exc:  # the session must start whatever went wrong here
        return report_failure(f"the bootstrap failed unexpectedly ({type(exc).__name__}: {exc}).")


if __name__ == "__main__":
    sys.exit(main())
