"""`--out` writes where it points without destroying it (state/atomic.py,
`write_out`): a regular file is replaced atomically, a FIFO, a character
device, `/dev/stdout` or `-` is written to as a stream, anything else is
refused in one sentence. Every output path of the CLI goes through it."""

from __future__ import annotations

import json
import os
import shlex
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from santa_method.cli import main
from santa_method.state.atomic import inherited_descriptor, out_kind

SANTA = [sys.executable, "-m", "santa_method"]


@pytest.fixture
def run_id(santa_project: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """An escalated run of the project, whose report the tests write."""
    (santa_project / "out.md").write_text("# Tool\n\nReleased in 1999.\n", encoding="utf-8")
    start = ["round", "start", "--against", "out.md", "--spec-text", "A title.", "--json"]
    assert main(start) == 0
    opened = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["log", "escalate", "--run", opened, "--data", '{"reason": "a test"}']) == 0
    capsys.readouterr()
    return opened


def _report(*args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*SANTA, "report", *args], capture_output=True, timeout=60, **kwargs)  # type: ignore[call-overload, no-any-return]


def _expected(run_id: str) -> bytes:
    done = _report(run_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"### santa-method run")
    return done.stdout


def test_dev_stdout_appended_to_a_log_keeps_its_earlier_lines(
    santa_project: Path, run_id: str
) -> None:
    log = santa_project / "ci.log"
    log.write_text("earlier line 1\nearlier line 2\n", encoding="utf-8")
    command = " ".join(shlex.quote(a) for a in [*SANTA, "report", run_id, "--out", "/dev/stdout"])
    done = subprocess.run(f"{command} >> ci.log", shell=True, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == b"earlier line 1\nearlier line 2\n" + _expected(run_id)


@pytest.mark.parametrize("out", ["/dev/stdout", "-", "/dev/fd/1"])
def test_dev_stdout_on_a_pipe_is_written_to(run_id: str, out: str) -> None:
    done = _report(run_id, "--out", out)  # capture_output: stdout is a pipe
    assert done.returncode == 0, done.stderr
    assert done.stdout == _expected(run_id)


def test_a_symlink_to_dev_stdout_is_the_stream_too(santa_project: Path, run_id: str) -> None:
    (santa_project / "link").symlink_to("/dev/stdout")
    assert inherited_descriptor(santa_project / "link") == 1
    done = _report(run_id, "--out", "link")
    assert done.returncode == 0, done.stderr
    assert done.stdout == _expected(run_id)
    assert (santa_project / "link").is_symlink()


def test_a_fifo_is_written_to_and_stays_a_fifo(santa_project: Path, run_id: str) -> None:
    fifo = santa_project / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:  # blocks until santa opens it to write
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done = _report(run_id, "--out", str(fifo))
    if done.returncode != 0:  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert received == [_expected(run_id)]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _device(folder: Path, name: str, minor: int, fallback: str) -> Path:
    """A character device of the test's own (1, 3 is null; 1, 7 full), so a
    regression run as root replaces it, not the machine's /dev/null; where
    nodes cannot be made (not root), the real device, which then no
    regression can replace either."""
    path = folder / name
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    except PermissionError:
        return Path(fallback)
    return path


def test_dev_null_is_written_to_and_stays_a_device(santa_project: Path, run_id: str) -> None:
    null = _device(santa_project, "null", 3, "/dev/null")
    done = _report(run_id, "--out", str(null))
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert not [p for p in null.parent.iterdir() if p.name.startswith(".null.")]


def test_a_full_device_is_an_error_and_stays_a_device(santa_project: Path, run_id: str) -> None:
    full = _device(santa_project, "full", 7, "/dev/full")
    done = _report(run_id, "--out", str(full))
    assert done.returncode == 2
    assert done.stderr.decode() == f"santa: cannot write {full}: No space left on device\n"
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_a_regular_file_is_replaced_through_its_symlink(santa_project: Path, run_id: str) -> None:
    (santa_project / "real.md").write_text("old\n", encoding="utf-8")
    (santa_project / "link.md").symlink_to("real.md")
    done = _report(run_id, "--out", "link.md")
    assert done.returncode == 0, done.stderr
    assert (santa_project / "link.md").is_symlink()
    assert (santa_project / "real.md").read_bytes() == _expected(run_id)


def test_what_santa_must_not_replace_is_refused_in_one_sentence(
    santa_project: Path, run_id: str
) -> None:
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind("sock")
        done = _report(run_id, "--out", "sock")
        assert stat.S_ISSOCK(os.lstat("sock").st_mode)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "santa: cannot write sock: it is a socket, which santa does not write: name a "
        "regular file, a FIFO, a character device or - (stdout)\n"
    )
    done = _report(run_id, "--out", ".")
    assert (done.returncode, done.stderr) == (
        2,
        b"santa: cannot write .: it is a folder; name a file\n",
    )


def test_the_page_goes_to_stdout_and_its_summary_beside_it(
    santa_project: Path, run_id: str
) -> None:
    done = subprocess.run([*SANTA, "view", "--out", "-"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"<!doctype html>") or done.stdout.startswith(b"<!DOCTYPE html>")
    assert done.stderr.decode().startswith("wrote - (")
    refused = subprocess.run(
        [*SANTA, "view", "--out", "-", "--open"], capture_output=True, timeout=120
    )
    assert refused.returncode == 2
    assert b"--open needs a page in a file" in refused.stderr


def test_the_kind_of_every_path() -> None:
    assert out_kind("-") == "descriptor"
    assert out_kind("/dev/stderr") == "descriptor"
    assert out_kind(f"/proc/{os.getpid()}/fd/1") == "descriptor"
    assert out_kind("/dev/null") == "stream"
