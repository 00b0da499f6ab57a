"""Locks a process holds while it lives, and asking whether one is held.

Why `flock` on a lock file: the kernel drops the lock when its process
ends, however it ends (kill -9 included), so a crash never leaves a stale
lock behind and nothing has to guess from a pid whether its owner lives.
The file keeps the holder's pid, only so that a refusal can name it.

Two kinds:
- a target's lock (`target-<digest>.lock`, the digest of the file's real
  path): one run at a time may fix a given file in place; a second is
  refused with a sentence saying so. It lives in the user's cache
  (`${XDG_CACHE_HOME:-~/.cache}/santa-method/locks/`), not in a project:
  runs of two projects (or two `SANTA_HOME`s) fixing one file must meet
  at the same lock. Where the cache cannot be written, the project's
  `.santa/locks/` is the fallback;
- a run's lock (`run-<id>.lock`, under `.santa/locks/`): a headless run is
  owned by the process that drives it; once no one holds it, the run was
  interrupted.

Lock files are left in place when released: removing one while another
process opens it would let two processes hold "the same" lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from santa_method.core.errors import InputError
from santa_method.state.atomic import replace_text, temporaries
from santa_method.state.paths import santa_dir

_MINE: set[Path] = set()
"""The locks this process holds (its own may be asked about from inside)."""


def locks_dir() -> Path:
    """The lock folder (not created here: asking about a lock changes nothing)."""
    return santa_dir() / "locks"


def _ensure(folder: Path) -> None:
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        if folder == locks_dir():
            replace_text(folder / ".gitignore", "*\n")


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode("ascii").strip() or "0")
        if pid > 0:
            return f"process {pid}"
    return "another process"


@contextlib.contextmanager
def hold(path: Path, refusal: str) -> Iterator[None]:
    """Hold the lock at `path` for the block, or raise InputError with
    `refusal` (its `{holder}` names the process holding it) at once."""
    _ensure(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(refusal.format(holder=_holder(fd))) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        _MINE.add(path)
        try:
            yield
        finally:
            _MINE.discard(path)
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def held(path: Path) -> bool:
    """Whether a living process holds the lock at `path` (this one included)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def user_locks_dir() -> Path:
    """The user's lock folder for targets, shared by all projects; the
    project's lock folder when the user's cache cannot be written."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(cache) / "santa-method" / "locks"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return locks_dir()
    return folder if os.access(folder, os.W_OK) else locks_dir()


def target_lock_path(target: str | os.PathLike[str]) -> Path:
    """One lock per file, whatever path or project names it (a symlink, a
    relative path, a second project sharing the file)."""
    real = os.path.realpath(target)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return user_locks_dir() / f"target-{digest}.lock"


@contextlib.contextmanager
def fixing(target: str | os.PathLike[str]) -> Iterator[None]:
    """One run at a time fixes `target` in place."""
    refusal = (
        f"'{target}' is being fixed in place by another santa run ({{holder}}); wait for it "
        "to end, or verify a working copy (without --in-place)"
    )
    with hold(target_lock_path(target), refusal):
        _remove_stale_temporaries(Path(os.path.realpath(target)))
        yield


def fixing_here(target: str | os.PathLike[str]) -> bool:
    """Whether this process holds `target`'s lock (a run it drives fixes the file)."""
    return target_lock_path(target) in _MINE


def _remove_stale_temporaries(real: Path) -> None:
    """A run killed while it replaced the file left its temporary beside it;
    with the target's lock held, no living run is writing one."""
    for stale in temporaries(real):
        with contextlib.suppress(OSError):
            stale.unlink()


def run_lock_path(run_id: str) -> Path:
    return locks_dir() / f"run-{run_id}.lock"


def owning(run_id: str) -> contextlib.AbstractContextManager[None]:
    """This process drives the headless run `run_id` for the block."""
    refusal = f"run {run_id} is being driven by another process ({{holder}}) right now"
    return hold(run_lock_path(run_id), refusal)


def owner_alive(run_id: str) -> bool:
    """Whether a living process (this one included) drives the run."""
    return held(run_lock_path(run_id))


def driven_elsewhere(run_id: str) -> str | None:
    """Who drives the run, when it is another living process; else None."""
    path = run_lock_path(run_id)
    if path in _MINE or not held(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return "another process"
    try:
        return _holder(fd)
    finally:
        os.close(fd)
