"""Reading the text files a user names (outputs, specs, reviews, rubrics, items),
and reading any text file exactly as its bytes say (`read_exact`).

One place decides what an unreadable file looks like: an input error
(exit 2) with one sentence naming the file and what is true about it (no
such file, a directory, a symlink loop, permission denied, a FIFO, too big,
not UTF-8). What is not a regular file is refused before it is opened (a
FIFO with no writer would block for ever), and the size is checked before
anything is read (a 200 MB rubric must fail at once, not after parsing).
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from santa_method.core.errors import InputError

MB = 1024 * 1024
#: The default ceiling of a file santa reads: outputs, specs, items.
MAX_BYTES = 64 * MB
#: Rubrics and review replies are small by nature; anything this big is a mistake.
MAX_RUBRIC_BYTES = 1 * MB
MAX_REVIEW_BYTES = 8 * MB


def check_file(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_BYTES) -> int:
    """The size of `path` if it is a regular file santa may read; else an InputError.

    `stat` follows symlinks and never opens the file, so neither a FIFO nor
    a device is touched.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {_reason(path, exc)}") from None
    return _readable(info, path, what, max_bytes)


def _readable(info: os.stat_result, path: str | os.PathLike[str], what: str, max_bytes: int) -> int:
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"cannot read {what} '{path}': it is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"cannot read {what} '{path}': {_kind(info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        raise InputError(
            f"cannot read {what} '{path}': it is {_size(info.st_size)}, more than the "
            f"{_size(max_bytes)} santa reads as {_a(what)}"
        )
    return info.st_size


def _a(what: str) -> str:
    """`what` with its article: "a review", "an output", "the config" as it is."""
    if what.startswith(("the ", "a ", "an ")):
        return what
    return ("an " if what[:1] in "aeiou" else "a ") + what


def read_text(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_BYTES) -> str:
    """Read a UTF-8 text file, or stdin for '-' (at most `max_bytes` either way)."""
    if str(path) == "-":
        raw = sys.stdin.buffer.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise InputError(f"cannot read {what} from stdin: more than {_size(max_bytes)}")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"cannot read {what} from stdin: it is not UTF-8 text") from None
    # Opened without blocking (a FIFO with no writer opens at once), then
    # judged by what was opened: the file that is read is the file checked,
    # even if the name is swapped in between.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {_reason(path, exc)}") from None
    try:
        _readable(os.fstat(fd), path, what, max_bytes)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        try:
            raw = handle.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read {what} '{path}': {_reason(path, exc)}") from None
    if len(raw) > max_bytes:  # it grew after the check
        raise InputError(f"cannot read {what} '{path}': more than {_size(max_bytes)}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"cannot read {what} '{path}': it is not UTF-8 text") from None


def read_exact(path: str | os.PathLike[str], errors: str = "strict") -> str:
    """A text file as its bytes say: UTF-8, line endings untouched.

    Why not `Path.read_text`: it turns CRLF into LF, so a CRLF output read
    back would no longer match its hash (the run would look tampered with),
    and a file written back from it would lose its line endings. For the
    files santa wrote itself and the files it compares.
    """
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors)


def check_folder(path: str | os.PathLike[str], what: str = "folder") -> None:
    """Nothing if `path` is a directory (or a link to one); else an InputError."""
    try:
        info = os.stat(path)
    except OSError as exc:
        reason = _reason(path, exc)
        raise InputError(
            f"cannot read {what} '{path}': "
            + ("no such directory" if reason == "no such file" else reason)
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        kind = "it is a file" if stat.S_ISREG(info.st_mode) else _kind(info.st_mode)
        raise InputError(f"cannot read {what} '{path}': {kind}, not a directory")


def list_files(folder: str | os.PathLike[str], what: str = "item") -> list[str]:
    """Every file under `folder`, recursively, sorted by path components;
    names starting with '.' are skipped, and everything under them.

    Why refuse instead of skipping what is not a regular file (a FIFO, a
    device, a broken symlink, a symlink loop, a link to a folder): each is
    something the user handed over, and a batch that quietly leaves one
    out reviews less than it was given. Links to folders are not followed
    (a link to an ancestor would never end); the folder can be named
    itself. Nothing is opened: `stat` alone judges each entry.
    """
    found: list[tuple[str, ...]] = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parts = pending.pop()
        here = os.path.join(folder, *parts)
        try:
            with os.scandir(here) as entries:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        except OSError as exc:
            raise os_error(f"{what} folder", here, exc) from None
        for name, is_dir in names:
            if name.startswith("."):
                continue
            if is_dir:
                pending.append((*parts, name))
                continue
            path = os.path.join(here, name)
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                raise os_error(what, path, exc) from None
            if stat.S_ISDIR(mode):
                raise InputError(
                    f"cannot read {what} '{path}': it is a symlink to a directory, which santa "
                    "does not follow (name that directory itself)"
                )
            if not stat.S_ISREG(mode):
                raise InputError(f"cannot read {what} '{path}': {_kind(mode)}, not a regular file")
            found.append((*parts, name))
    return [os.path.join(folder, *parts) for parts in sorted(found)]


def os_error(
    what: str, path: str | os.PathLike[str], exc: OSError, verb: str = "read"
) -> InputError:
    """The one sentence for an OSError on a file the user's command names."""
    return InputError(f"cannot {verb} {what} '{path}': {_reason(path, exc)}")


def path_kind(path: str | os.PathLike[str]) -> str:
    """'file', 'dir', 'missing', 'loop' or 'other', without opening anything."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return "loop" if exc.errno == errno.ELOOP else "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def too_deep(what: str, path: str | os.PathLike[str] | None = None) -> InputError:
    """The one sentence for YAML or JSON nested deeper than a parser can follow."""
    where = f" '{path}'" if path is not None else ""
    return InputError(f"cannot read {what}{where}: it is nested too deeply to be a {what}")


def _reason(path: str | os.PathLike[str], exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "it is a broken symlink" if os.path.islink(path) else "no such file"
    if exc.errno == errno.ELOOP:
        return "it is a symlink loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EISDIR:
        return "it is a directory"
    if exc.errno == errno.ENOTDIR:
        return "a part of its path is not a directory"
    if exc.errno == errno.ENAMETOOLONG:
        return "the name is too long"
    return exc.strerror or str(exc)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "it is a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "it is a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device"
    return "it is a special file"


def _size(n: int) -> str:
    return f"{n / MB:.0f} MB" if n >= MB else f"{n:,} bytes"
