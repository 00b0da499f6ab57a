"""A batch's files: its state, its event log, its items' texts.

Why files, like runs: a batch of a thousand items outlives one process (an
interruption, a Message Batch that takes an hour, a Claude Code session
that records one item at a time), so everything it decided is on disk
before it acts on it, and `--resume` or `santa batch record` pick it up.

Layout, under `.santa/batches/<id>/`: `state.json` (the plan, the waves,
outcomes, screens, changes: `BatchState` of `state/model.py`), `events.jsonl` (one line per thing that
happened, every change to an item among them), `work/` (changed item texts
when the originals are not edited in place), `fixed.jsonl` (JSONL items,
with the fixes applied), `report.md` and `report.json`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError
from santa_method.core.files import read_exact
from santa_method.core.redact import redact
from santa_method.state import locks
from santa_method.state import log as runlog
from santa_method.state import store as run_store
from santa_method.state.atomic import replace_text
from santa_method.state.jsonfile import write_atomic
from santa_method.state.model.batch import (
    BATCH_STATE_VERSION,
    BatchOptionsRecord,
    BatchState,
    ItemRecord,
)
from santa_method.state.model.reading import StateError
from santa_method.state.paths import ensure_santa_dir, santa_dir

STATE_VERSION = BATCH_STATE_VERSION
_BATCH_ID = re.compile(r"b-\d{8}-\d{6}-[0-9a-f]{6}")


@dataclass(frozen=True)
class BatchItem:
    """One item of a batch. A file item has `path`; a JSONL item has `text`
    (the field under review) and its whole `record`."""

    id: str
    stratum: str | None = None
    path: str | None = None
    text: str | None = None
    record: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "stratum": self.stratum, "path": self.path}


def batches_dir() -> Path:
    return santa_dir() / "batches"


def batch_dir(batch_id: str) -> Path:
    """The batch's folder; the id is checked so it can never name a path elsewhere."""
    if not isinstance(batch_id, str) or not _BATCH_ID.fullmatch(batch_id):
        raise InputError(f"'{batch_id}' is not a batch id")
    return batches_dir() / batch_id


def new_batch_id() -> str:
    return "b-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def create(state: BatchState) -> Path:
    """Write a new batch's folder and first state; returns the folder."""
    base = ensure_santa_dir() / "batches"
    base.mkdir(exist_ok=True)
    if not (base / ".gitignore").exists():
        replace_text(base / ".gitignore", "*\n")
    folder = batch_dir(state.id)
    folder.mkdir(parents=True)
    (folder / "work").mkdir()
    if not state.created:
        state.created = runlog.now_iso()
    save(state)
    return folder


def open_batch(
    *,
    items: Sequence[BatchItem],
    spec: str,
    options: BatchOptionsRecord,
    seed: int,
    mode: str,
    fingerprint_: str,
) -> BatchState:
    """A new batch's state, saved with its spec; no wave drawn yet."""
    if not spec.strip():
        raise InputError("the spec is empty; say what the outputs must do")
    excluded = set(options.exclude)
    state = BatchState(
        id=new_batch_id(),
        status="open",
        mode=mode,
        fingerprint=fingerprint_,
        seed=seed,
        options=options,
        # What each item holds now: a run counts only for this content, and an
        # item changed behind the batch's back blocks acceptance.
        items=[
            ItemRecord(
                id=i.id,
                stratum=i.stratum,
                path=i.path,
                sha256=None if i.id in excluded else run_store.sha256(item_text(i)),
            )
            for i in items
        ],
        spec_sha256=run_store.sha256(spec),
    )
    folder = create(state)
    replace_text(folder / "spec.md", spec)
    return state


def save(state: BatchState) -> None:
    write_atomic(batch_dir(state.id) / "state.json", state.to_json(), indent=1)


def load(batch_id: str) -> BatchState:
    path = batch_dir(batch_id) / "state.json"
    if not path.exists():
        raise InputError(f"no batch '{batch_id}' under {batches_dir()}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"the state of batch '{batch_id}' is unreadable: {exc}") from None
    try:
        return BatchState.from_json(data)
    except StateError as exc:
        raise InputError(
            f"the state of batch '{batch_id}' cannot be read by this santa: {exc}"
        ) from None


@contextlib.contextmanager
def locked(batch_id: str) -> Iterator[BatchState]:
    """The state under an exclusive lock, saved on a clean exit only (two
    `santa batch record` calls at once must not lose each other's item)."""
    folder = batch_dir(batch_id)
    load(batch_id)
    with open(folder / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load(batch_id)
        yield state
        save(state)


@contextlib.contextmanager
def held(batch_id: str) -> Iterator[None]:
    """One process drives a batch at a time (two would pay for the same
    reviews twice and overwrite each other's state)."""
    refusal = f"batch {batch_id} is being run by another process ({{holder}}) right now"
    with locks.hold(batch_dir(batch_id) / ".running", refusal):
        yield


def event(batch_id: str, kind: str, **data: Any) -> None:
    """One line in the batch's own event log (its items are not runs, so
    this is not the project's iteration log)."""
    record = {"ts": runlog.now_iso(), "batch_id": batch_id, "event": kind, **data}
    # A record like the iteration log: redacted, its ids and hashes verbatim.
    record = redact(record, skip_keys=runlog.STRUCTURAL_FIELDS | {"batch_id", "item"})
    line = json.dumps(record, ensure_ascii=True, separators=(",", ":"))
    with open(batch_dir(batch_id) / "events.jsonl", "a", encoding="utf-8") as out:
        out.write(line + "\n")


def events(batch_id: str) -> list[dict[str, Any]]:
    path = batch_dir(batch_id) / "events.jsonl"
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return found


def list_ids() -> list[str]:
    base = batches_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if _BATCH_ID.fullmatch(p.name))


def fingerprint(items: Sequence[BatchItem], spec: str, options: BatchOptionsRecord) -> str:
    """What makes two invocations the same batch (for --resume)."""
    body = json.dumps(
        {
            "items": [i.id for i in items],
            "spec": run_store.sha256(spec),
            "options": options.to_json(),
        },
        sort_keys=True,
    )
    return run_store.sha256(body)


def find_resumable(fingerprint_: str) -> str | None:
    """The newest open batch started with the same items, spec and options."""
    for batch_id in reversed(list_ids()):
        with contextlib.suppress(InputError):
            state = load(batch_id)
            if state.status == "open" and state.fingerprint == fingerprint_:
                return batch_id
    return None


# ---------------------------------------------------------------- item texts


class ItemStore:
    """Reads and writes item texts, so a fix never loses the original.

    Files are edited only with `in_place`; otherwise a changed item's text
    lives in the batch's `work/` folder and every later read sees it.
    JSONL items are never edited in place: `export()` writes `fixed.jsonl`.

    An in-place batch meets `santa run --in-place` at the file's lock
    (`state/locks.py`): it does not start while a run fixes one of its
    files, and it holds a file's lock while it writes the file (holding
    every item's lock for a whole batch would need a file descriptor each).
    """

    def __init__(self, state: BatchState, items: Sequence[BatchItem], field: str) -> None:
        self.state = state
        self.items = {i.id: i for i in items}
        self.order = [i.id for i in items]
        self.field = field
        self.in_place = state.options.in_place
        if self.in_place:
            for item in items:
                if item.path is not None and locks.held(locks.target_lock_path(item.path)):
                    raise InputError(
                        f"'{item.path}' is being fixed in place by another santa run; wait "
                        "for it to end, or run the batch without --in-place"
                    )

    @property
    def folder(self) -> Path:
        return batch_dir(self.state.id)

    def text(self, item_id: str) -> str:
        changed = self.state.changed.get(item_id)
        if changed:
            return read_exact(changed)
        item = self.items[item_id]
        if item.path is not None:
            try:
                return read_exact(item.path)
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read item '{item_id}': {exc}") from None
        assert item.text is not None
        return item.text

    def write(self, item_id: str, text: str) -> str:
        """Store a new text for the item; returns where it is."""
        item = self.items[item_id]
        if item.path is not None and self.in_place:
            with locks.fixing(item.path):
                # Written only over the text the batch knows: a run that shipped
                # a fix of the file meanwhile (or an editor) must not be undone.
                expected = self.state.item(item_id).sha256
                try:
                    now = run_store.sha256(read_exact(item.path))
                except (OSError, UnicodeDecodeError):
                    now = None
                if expected is not None and now != expected:
                    raise InputError(
                        f"'{item.path}' was changed since the batch read it (by another run "
                        "or an editor); the batch does not write over it: check the file, then "
                        "run the batch again"
                    )
                replace_text(Path(item.path), text)
            self.known(item_id, text)
            return item.path
        self.known(item_id, text)
        index = self.order.index(item_id)
        name = Path(item.path).name if item.path else "item.txt"
        path = self.folder / "work" / f"{index:06d}-{name}"
        replace_text(path, text)
        self.state.changed[item_id] = str(path)
        return str(path)

    def known(self, item_id: str, text: str) -> None:
        """The batch changed the item itself: this is its content now."""
        for entry in self.state.items:
            if entry.id == item_id:
                entry.sha256 = run_store.sha256(text)

    def drifted(self, ids: Sequence[str]) -> list[str]:
        """Items whose content is not what the batch last knew (edited behind its back)."""
        found = []
        known = {e.id: e.sha256 for e in self.state.items}
        for item_id in ids:
            try:
                now = run_store.sha256(self.text(item_id))
            except InputError:
                now = None
            if known.get(item_id) is not None and now != known[item_id]:
                found.append(item_id)
        return found

    def export(self) -> str | None:
        """`fixed.jsonl`: every JSONL item, with the changed ones' field replaced."""
        jsonl = [i for i in self.order if self.items[i].record is not None]
        changed = {i for i in jsonl if self.text(i) != (self.items[i].record or {}).get(self.field)}
        if not changed:
            return None
        lines = []
        for item_id in jsonl:
            record = dict(self.items[item_id].record or {})
            if item_id in changed:
                record[self.field] = self.text(item_id)
            lines.append(json.dumps(record, ensure_ascii=False))
        path = self.folder / "fixed.jsonl"
        replace_text(path, "\n".join(lines) + "\n")
        return str(path)


def item_text(item: BatchItem) -> str:
    """An item's text, which must be non-empty UTF-8: said before any money
    is spent (an item no run can review would strand the batch later)."""
    if item.path is None:
        text = item.text or ""
    else:
        from santa_method.core.files import read_text

        try:
            text = read_text(item.path, "item")
        except InputError as exc:
            raise InputError(f"{exc}; leave it out with --exclude") from None
    if not text.strip():
        raise InputError(
            f"item '{item.id}' is empty: there is nothing to verify; leave it out with --exclude"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"item '{item.id}' holds a lone surrogate (\\ud800-\\udfff), which is not text; "
            "fix it or leave it out with --exclude"
        ) from None
    return text


def check_readable(item: BatchItem) -> None:
    item_text(item)


def jsonl_text(record: Mapping[str, Any], field: str, item_id: str) -> str:
    """The text under review of a JSONL item: its `field`, which must be a string."""
    value = record.get(field)
    if not isinstance(value, str):
        raise InputError(
            f"item '{item_id}' has no string field '{field}' to verify; name it with --field"
        )
    return value
