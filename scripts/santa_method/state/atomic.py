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
new inode (docs/limits.md, "Your files").

Where a user names the file (`--out`, the Action's report and SARIF files),
`write_out` decides how: a regular file (or a new one) is replaced as
above; a FIFO, a character device (`/dev/null`, a terminal), `-` or a
descriptor santa inherited (`/dev/stdout`, `/dev/fd/3`) is written to as
the stream it is, since replacing it would destroy it (a `>> ci.log`
behind `/dev/stdout` would lose its earlier lines, a FIFO or `/dev/full`
would become a regular file); anything else is refused.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Literal

from santa_method.core.errors import InputError

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


# --------------------------------------------------------------------------- what a user names

#: How `write_out` writes a path: replaced atomically, written as a stream,
#: or written to a descriptor santa inherited.
OutKind = Literal["file", "stream", "descriptor"]

_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|(\d+))/fd)/(\d+)")
_MAX_LINKS = 40


def inherited_descriptor(path: str | os.PathLike[str]) -> int | None:
    """The descriptor a path names: `-`, `/dev/stdout`, `/dev/fd/N`,
    `/proc/self/fd/N`, or a symlink to one. Such a path is written to through
    the descriptor santa holds, never opened again: reopened, a `>> ci.log`
    behind it would be written from its start, and a pipe has no path to
    replace."""
    current = os.fspath(path)
    if current == "-":
        return 1
    current = os.path.abspath(current)
    for _ in range(_MAX_LINKS):
        if current in _STANDARD:
            return _STANDARD[current]
        found = _FD_PATH.fullmatch(current)
        if found and found.group(1) in (None, str(os.getpid())):
            return int(found.group(2))
        try:
            link = os.readlink(current)
        except OSError:
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return None


def out_kind(path: str | os.PathLike[str]) -> OutKind:
    """How `write_out` will write `path`, or an InputError naming why santa
    must not write it at all: checked before any work, and again at the write."""
    if inherited_descriptor(path) is not None:
        return "descriptor"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        folder = Path(os.path.realpath(path)).parent
        if not folder.is_dir():
            raise InputError(f"cannot write {path}: the folder {folder} does not exist") from None
        return "file"
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    what = (
        "a folder; name a file"
        if stat.S_ISDIR(mode)
        else f"{_special(mode)}, which santa does not write: name a regular file, a FIFO, "
        "a character device or - (stdout)"
    )
    raise InputError(f"cannot write {path}: it is {what}")


def _special(mode: int) -> str:
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a block device" if stat.S_ISBLK(mode) else "a special file"


def write_out(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` where a user pointed santa (see the module's docstring).
    Raises InputError for what must not be written, OSError if writing fails."""
    kind = out_kind(path)
    if kind == "file":
        replace_bytes(path, data)
        return
    if kind == "descriptor":
        fd = inherited_descriptor(path)
        assert fd is not None
        if fd in (1, 2):
            (sys.stdout if fd == 1 else sys.stderr).flush()  # what santa printed comes first
        _write_all(fd, data)
        return
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def write_out_text(path: str | os.PathLike[str], text: str) -> None:
    """`write_out` of `text` as UTF-8, encoded before anything is written."""
    write_out(path, text.encode("utf-8"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
