"""Replacing a file so that it holds the old content or the new, never a mix.

Why every write goes through here: santa rewrites a user's file in place
(`santa run --in-place`, a batch's in-place fixes) and keeps its state in
files other processes read at any moment. Writing over a file truncates it
first, so a process killed half-way (kill -9, a crash, a full disk) leaves
it empty or cut short. Instead the new content goes to a temporary file in
the same folder (the same file system, so the rename is atomic), is flushed
and fsynced, takes the old file's permission bits, and is renamed over the
target; the folder is fsynced too, so the rename itself survives a crash.

A symlinked target is written through its link (the link stays a link). A
hard link to the old file keeps the old content: a rename gives the name a
new inode (README, Limits).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

_NEW_FILE_MODE = 0o666
_SUFFIX = ".santa-tmp"


def _umask() -> int:
    """The process's umask, read without changing it where the OS allows
    (os.umask alone sets it, a race with other threads creating files)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    """The old file's permission bits, or what a new file would get."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return _NEW_FILE_MODE & ~_umask()


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot open a folder
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data`: the old bytes or the new ones at any moment."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def temporaries(target: Path) -> list[Path]:
    """Temporary files of replacements of `target` that never finished."""
    prefix = f".{target.name}."
    try:
        return [
            Path(e.path)
            for e in os.scandir(target.parent)
            if e.name.startswith(prefix) and e.name.endswith(_SUFFIX)
        ]
    except OSError:
        return []


def is_temporary(name: str) -> bool:
    """Whether `name` (a file name or a path) is a temporary of a replacement."""
    base = os.path.basename(name)
    return base.startswith(".") and base.endswith(_SUFFIX)


def replace_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace `path` with `text` as UTF-8. Encoded before anything is
    written, so text that cannot be encoded leaves the file as it was."""
    replace_bytes(path, text.encode("utf-8"))
