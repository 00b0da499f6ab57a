"""Nothing lost: a run killed at any moment leaves the user's file whole.

The hard way, as the promise is made: a real process runs `verify` with
`in_place` on a file of a few MB, and is killed with SIGKILL the moment the
file changes (its size, inode or mtime), or the moment santa's temporary
file appears beside it. Every time, the file holds exactly the old text or
exactly the fixer's text.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

ATTEMPTS = 4


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _temp_beside(path: Path) -> bool:
    prefix = f".{path.name}."
    return any(e.name.startswith(prefix) for e in os.scandir(path.parent))


def _kill_when(proc: subprocess.Popen[bytes], changed: object) -> bool:
    """SIGKILL `proc` as soon as `changed()` is true; False if it ended first."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if changed():  # type: ignore[operator]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.0002)  # leave the child the CPU (two cores, shared)
    proc.kill()
    proc.wait()
    return False


@pytest.mark.slow
def test_a_killed_in_place_run_leaves_the_old_text_or_the_new(project: Path) -> None:
    from .scripted import child_command

    line = "Released in 1999, " + "x" * 80 + "\n"
    old = line * (3_000_000 // len(line))
    new = old.replace("1999", "2024!")
    env = {**os.environ, "SANTA_HOME": str(project / ".santa")}
    kills = 0
    tries = 0
    attempt = 0
    # A run that finished before the poll saw it write (a loaded machine) is
    # not a kill: it is tried again, up to twice as many times in all.
    while kills < ATTEMPTS and tries < 2 * ATTEMPTS:
        attempt = kills
        tries += 1
        target = project / f"big-{tries}.md"
        target.write_text(old, encoding="utf-8")
        target.chmod(0o640)
        before = _signature(target)
        proc = subprocess.Popen(
            child_command(project.parent, target, new_year="2024!"),
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if attempt % 2 == 0:  # the moment the file itself changes
            killed = _kill_when(proc, lambda t=target, b=before: _signature(t) != b)
        else:  # the moment santa begins writing its replacement
            killed = _kill_when(proc, lambda t=target: _temp_beside(t))
        kills += killed
        text = target.read_text(encoding="utf-8")
        assert text in (old, new), (
            f"attempt {attempt}: the file holds {len(text)} characters, neither the old "
            f"({len(old)}) nor the new ({len(new)}) text"
        )
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert kills == ATTEMPTS  # every run was caught while it wrote


BATCH_CHILD = """
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from headless.scripted import Scripted
from santa_method.headless.batch import verify_batch_sync
from santa_method.headless.options import BatchOptions

items = [Path(p) for p in sys.argv[2:]]
options = BatchOptions(backend=Scripted(), in_place=True, rate=1.0, minimum=len(items))
print(verify_batch_sync(items, "The README names the current year.", options=options).verdict)
"""


@pytest.mark.slow
def test_a_killed_in_place_batch_leaves_each_item_old_or_new(project: Path) -> None:
    """A batch fixes its items in place one after another: killed the moment
    any of them changes, each holds exactly its old text or its fixed one."""
    import sys

    line = "Released in 1999, " + "x" * 80 + "\n"
    old = line * (2_000_000 // len(line))
    new = old.replace("1999", "2024")
    script = project.parent / "batch_child.py"
    script.write_text(BATCH_CHILD, encoding="utf-8")
    tests = Path(__file__).resolve().parent.parent
    env = {**os.environ, "SANTA_HOME": str(project / ".santa")}
    kills = 0
    tries = 0
    while kills < 2 and tries < 4:  # a batch that finished unseen is tried again
        attempt = kills
        tries += 1
        items = [project / f"batch-{tries}" / f"item-{i}.md" for i in range(3)]
        items[0].parent.mkdir()
        for item in items:
            item.write_text(old, encoding="utf-8")
        before = [_signature(i) for i in items]
        proc = subprocess.Popen(
            [sys.executable, str(script), str(tests), *map(str, items)],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if attempt == 0:
            killed = _kill_when(
                proc,
                lambda items=items, before=before: any(
                    _signature(i) != b for i, b in zip(items, before, strict=True)
                ),
            )
        else:
            killed = _kill_when(proc, lambda items=items: any(_temp_beside(i) for i in items))
        kills += killed
        for item in items:
            text = item.read_text(encoding="utf-8")
            assert text in (old, new), f"attempt {attempt}: {item.name} holds neither text"
    assert kills == 2  # every batch was caught while it wrote


def test_replace_keeps_the_mode_and_the_symlink(tmp_path: Path) -> None:
    from santa_method.state.atomic import replace_text

    real = tmp_path / "real.md"
    real.write_text("old\n", encoding="utf-8")
    real.chmod(0o751)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    replace_text(link, "new\n")
    assert link.is_symlink() and real.read_text(encoding="utf-8") == "new\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o751


def test_a_failed_replace_leaves_the_file_and_no_temporary(tmp_path: Path) -> None:
    from santa_method.state.atomic import replace_text

    target = tmp_path / "out.md"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        replace_text(target, "lone \ud800 surrogate")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.md"]


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    from santa_method.state.atomic import replace_text

    old = os.umask(0o027)
    try:
        replace_text(tmp_path / "new.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640
