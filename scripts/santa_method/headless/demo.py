"""`santa demo`: the real loop on the bundled example, offline, in a folder of its own.

Why: a newcomer without a key should still see a whole run (reviewers who
fail the output, a fix, fresh reviewers who pass it, and the page `santa
view` writes) before setting anything up. Nothing here is a mock of the
loop: it is `verify` on the example's README and spec, answered by the
`replay` backend from a recording that ships with santa
(`examples/demo/replies`, made by `examples/demo/make.py`). Each reply in it
says what it is: recorded from a model, or written for the demo.

The demo works in a new folder (a temporary one unless a new or empty
folder is named), with its own `.santa/` and log, set for the length of
the run only: the user's project, its runs and its metrics are never
touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core.data import data_dir
from santa_method.core.errors import InputError
from santa_method.headless.options import EventHook, VerifyOptions
from santa_method.headless.results import VerifyResult

#: The demo's files, in its folder.
OUTPUT = "README.md"
SPEC = "spec.md"


@dataclass(frozen=True)
class Demo:
    """What the demo did: its folder, the run, the page, where each reply came from."""

    folder: Path
    result: VerifyResult
    page: Path
    replies: list[tuple[str, str, str | None]]
    """(the request in words, its origin, the model that wrote it), in order."""

    def to_json(self) -> dict[str, Any]:
        from santa_method.headless.backends.replay import with_origin

        return {
            "folder": str(self.folder),
            "page": str(self.page),
            "result": self.result.to_json(),
            "replies": [
                {"reply": what, "origin": with_origin(origin), "model": model}
                for what, origin, model in self.replies
            ],
        }


def example(name: str) -> Path:
    """A file of the bundled example (a clone's `examples/`, or the wheel's copy)."""
    return data_dir("examples") / name


def recording_dir() -> Path:
    return example("demo") / "replies"


def new_folder(chosen: str | os.PathLike[str] | None) -> Path:
    """The demo's own folder: `chosen` if it is new or empty, else a new temporary one."""
    if chosen is None:
        return Path(tempfile.mkdtemp(prefix="santa-demo-")).resolve()
    folder = Path(chosen)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InputError(
            f"{folder} is not an empty folder; santa demo works in a folder of its own "
            "(name a new one, or leave out --dir for a temporary one)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()


@contextlib.contextmanager
def own_santa(folder: Path) -> Iterator[Path]:
    """The folder's `.santa/` and log for santa, for the block only: the
    user's project (whatever the current folder or CLAUDE_PROJECT_DIR say)
    is out of reach."""
    home = folder / ".santa"
    saved = {k: os.environ.get(k) for k in ("SANTA_HOME", "SANTA_LOG")}
    os.environ["SANTA_HOME"] = str(home)
    os.environ["SANTA_LOG"] = str(home / "log.jsonl")
    try:
        yield home
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def loop(folder: Path, backend: Any, on_event: EventHook | None = None) -> VerifyResult:
    """The example's README and spec copied into `folder`, verified there
    with `backend`: the demo's run (and the one `make.py` records)."""
    from santa_method.headless.loop import verify_sync

    for name, source in ((OUTPUT, "output.md"), (SPEC, "spec.md")):
        shutil.copyfile(example(source), folder / name)
    with own_santa(folder) as home:
        return verify_sync(
            (folder / SPEC).read_text(encoding="utf-8"),
            folder / OUTPUT,
            options=VerifyOptions(
                rubric="base",
                reviewers=2,
                max_fixes=3,
                backend=backend,
                log=home / "log.jsonl",
                project_dir=folder,
                on_event=on_event,
            ),
        )


def run_demo(
    chosen: str | os.PathLike[str] | None = None, on_event: EventHook | None = None
) -> Demo:
    """The demo: the loop replayed from the shipped recording, then its page."""
    from santa_method.headless.backends.replay import NotRecorded, ReplayBackend
    from santa_method.view import write_view

    replay = ReplayBackend(recording_dir())
    folder = new_folder(chosen)

    def labelled(kind: str, data: dict[str, Any]) -> None:
        """Each reply's event says what the reply is (`origin`)."""
        if kind in ("reviewer_done", "fix_done"):
            data = {**data, "origin": replay.origins.get(data.get("label") or "fixer")}
        if on_event is not None:
            on_event(kind, data)

    try:
        result = loop(folder, replay, labelled)
    except NotRecorded as exc:
        raise InputError(
            f"{exc}. The demo's replies were recorded for the texts of another santa: "
            "python examples/demo/make.py records them again"
        ) from None
    with own_santa(folder) as home:
        page = write_view(log_path=home / "log.jsonl", home=home).path
    return Demo(folder, result, page, list(replay.answered))
