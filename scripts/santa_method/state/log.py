"""The iteration log: append-only JSON Lines, one record per event.

Metrics, `santa runs`, escalation reports and outside eval harnesses all
read this file, so it must survive many writers (parallel reviewers, hooks,
batch workers) and partial damage. Every writer takes an exclusive `flock`
on the file and emits the whole line with one `os.write` on an `O_APPEND`
descriptor, so lines never interleave and none is lost; readers take a
shared lock, and a damaged line is reported and skipped, never fatal.
Strings are redacted (`core.redact`) before they reach the disk; the
structural fields in `STRUCTURAL_FIELDS` are written verbatim so ids and
hashes stay joinable. An issue's `key` is built so that redaction leaves
it as it is (`core.merge.issue_key`), so the log's keys are the run
state's; a `key` that redaction would still change (one an older santa
wrote, or one given by hand with a waive) is sealed whole,
`<criterion>|redacted:<sha256 prefix>` (`core.merge.seal_key`), not cut.

Every record has `ts` (UTC ISO-8601, set by `append`), `run_id`, `event`
and `iteration` (the round, from 1; `null` or free-form for events not tied
to a round), then the event's own fields, flat:

- `run` (iteration 0 or null): `target` (the file the user named, or
  `diff:REV`), `target_sha256`, `spec_sha256`, `rubric`, `rubric_hash`,
  `models` (list or map, or null), `reviewers` (expected count), `source`
  (`hook` | `files` | `api`); `working_copy` when a headless run reviews and
  fixes a copy of the target.
- `review`: `label`, `valid`, `verdict` (`PASS` | `FAIL` | null), `errors`
  (list of str), `checks` (`[{criterion, result}]`), `issues` (the review's
  critical issues as `Issue.to_json()`), optional `agent_id`, `tokens`,
  `cost_usd`, `model` (what wrote the reply) and `duration_s` (how long the
  reviewer took). One record per reviewer slot per gate.
- `gate`: `verdict` (`NICE` | `NAUGHTY`), `next` (`ship` | `rereview` |
  `fix` | `escalate`), `issues` (merged, each with at least `criterion`,
  `key`, `flagged_by`, `evidence`), `agreement` (float or null), `reviewers`
  (labels of the round's slots), `valid_reviewers` (labels of the slots
  whose reply was valid). A re-review gates the same iteration again; the
  round's verdict is its last gate.
- `fix`: `changed` and/or `notes`, optional `tokens`, `cost_usd`, `model`,
  `duration_s`.
- `generate`: `tokens`, `cost_usd` (what generating the output cost).
- `escape`: `description` (a defect found after shipping).
- `waive`: `key` or `issue` (the flag a person overrides), `reason`.
- `ship`, `escalate`: `reason`.

`tokens` is an integer total (a map of integer parts is tolerated by
`metrics`); `cost_usd` a number.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError
from santa_method.core.files import check_file, path_kind
from santa_method.core.merge import seal_key
from santa_method.core.redact import redact
from santa_method.state import fastjson

EVENTS = frozenset(
    {"run", "review", "gate", "fix", "ship", "escalate", "escape", "waive", "generate"}
)
#: Events whose iteration must be a round number (>= 1).
ROUND_EVENTS = frozenset({"review", "gate", "fix"})
#: Written verbatim, never redacted: identity and integrity fields.
STRUCTURAL_FIELDS = frozenset(
    {"ts", "run_id", "event", "iteration", "target_sha256", "spec_sha256", "rubric_hash"}
)

_LINE_BREAKS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


#: Every decimal digit as "1", any other byte as "0": a run of 19 digits, the
#: only way to write an integer past 64 bits, is then a plain substring search.
_DIGITS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))
_LONG_NUMBER = b"1" * 19


def _has_long_number(data: bytes) -> bool:
    return _LONG_NUMBER in data.translate(_DIGITS)


@dataclass(frozen=True)
class DamagedLine:
    """A line the reader skipped, 1-based, with the reason in words."""

    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


@dataclass(frozen=True)
class LogRead:
    """The readable records, in file order, and the lines that were not."""

    path: Path
    records: tuple[dict[str, Any], ...] = ()
    damaged: tuple[DamagedLine, ...] = ()
    duplicates: int = 0
    """Lines dropped as exact copies of an earlier line (see `read`)."""

    def warnings(self) -> list[str]:
        """One sentence per damaged line, for stderr."""
        return [f"{self.path} line {d.line}: {d.reason}; skipped" for d in self.damaged]


def now_iso(moment: datetime | None = None) -> str:
    """UTC ISO-8601 with microseconds and a `Z`, sortable as text."""
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_ts(value: Any) -> datetime | None:
    """A record's `ts` as an aware datetime, or None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def validate_record(record: Mapping[str, Any]) -> str | None:
    """Why `record` is not a log record, or None if it is. Shared by writer and reader."""
    if not isinstance(record, Mapping):
        return "not a JSON object"
    event = record.get("event")
    if event not in EVENTS:
        return f"unknown event {event!r}; expected one of {', '.join(sorted(EVENTS))}"
    run_id = record.get("run_id")
    if not isinstance(run_id, str) or not run_id.strip():
        return "run_id is missing or not a non-empty string"
    iteration = record.get("iteration")
    if event in ROUND_EVENTS and (
        isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 1
    ):
        return f"a {event} record needs an integer iteration of at least 1, not {iteration!r}"
    return None


def append(
    path: str | os.PathLike[str], record: Mapping[str, Any], *, ts: datetime | None = None
) -> dict[str, Any]:
    """Redact `record`, stamp it with `ts` (now, UTC) and append it as one line.

    Returns the record exactly as written. Raises ValueError for a record
    that is not one (unknown event, no run_id, a round event without a round,
    or a value JSON cannot hold), before anything touches the file.
    """
    problem = validate_record(record)
    if problem:
        raise ValueError(problem)
    body = {k: v for k, v in record.items() if k not in ("ts", "run_id", "event", "iteration")}
    stamped: dict[str, Any] = {
        "ts": now_iso(ts),
        "run_id": record["run_id"],
        "event": record["event"],
        "iteration": record.get("iteration"),
        **_protect_keys(body, redact(body, skip_keys=STRUCTURAL_FIELDS)),
    }
    try:
        line = json.dumps(stamped, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the {record['event']} record cannot be written as JSON: {exc}") from None
    # Characters that str.splitlines() treats as line ends only occur inside
    # JSON strings here; escaping them keeps "one record per line" true for
    # every reader, not just ours.
    for char, escape in _LINE_BREAKS:
        line = line.replace(char, escape)
    try:
        data = (line + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's \u escape keeps the line valid UTF-8
        data = (json.dumps(stamped, allow_nan=False, separators=(",", ":")) + "\n").encode("ascii")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            # A writer killed mid-line leaves no newline; start on a fresh line
            # so that only the damaged line is lost, not ours as well.
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            _write_all(fd, data)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return stamped


def _protect_keys(original: Any, redacted: Any) -> Any:
    if isinstance(original, dict) and isinstance(redacted, dict):
        out = {k: _protect_keys(original[k], v) for k, v in redacted.items()}
        key = original.get("key")
        if isinstance(key, str) and isinstance(out.get("key"), str) and out["key"] != key:
            criterion = original.get("criterion")
            prefix = criterion if isinstance(criterion, str) else key.split("|", 1)[0]
            out["key"] = seal_key(prefix, out["key"])  # sealed from its redacted form
        return out
    if isinstance(original, list | tuple) and isinstance(redacted, list | tuple):
        return type(redacted)(_protect_keys(o, r) for o, r in zip(original, redacted, strict=True))
    return redacted


def _write_all(fd: int, data: bytes) -> None:
    # One write covers any realistic record; the loop only guards the rare
    # short write, and the lock is still held, so no other line can intrude.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read(path: str | os.PathLike[str]) -> LogRead:
    """Every readable record in file order; a missing log is an empty log.

    A line that is an exact copy of an earlier one is read once. A log
    committed by a team is merged with git's `union` driver (`santa init`
    sets it in `.gitattributes`), which keeps both sides' lines and so
    doubles a record both branches hold (one cherry-picked, then merged).
    No writer makes such a copy: every record carries its time to the
    microsecond.

    Raises InputError only when the file exists but cannot be read at all
    (a directory, no permission).
    """
    target = Path(path)
    kind = path_kind(target)
    if kind == "missing":
        return LogRead(target)
    if kind != "file":  # a FIFO would block the open for ever; a loop or a folder is named
        check_file(target, "the log")
    try:
        with open(target, "rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            try:
                raw = handle.read()
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    except FileNotFoundError:
        return LogRead(target)
    except IsADirectoryError:
        raise InputError(f"cannot read the log '{target}': it is a directory") from None
    except OSError as exc:
        raise InputError(f"cannot read the log '{target}': {exc.strerror or exc}") from None
    records: list[dict[str, Any]] = []
    damaged: list[DamagedLine] = []
    seen: set[bytes] = set()
    duplicates = 0
    fast = fastjson.fast_loads()
    check_each = fast is not None and _has_long_number(raw)
    with gc_paused():
        for number, chunk in enumerate(raw.split(b"\n"), start=1):
            line = chunk.strip()
            if not line:
                continue
            if line in seen:
                duplicates += 1
                continue
            seen.add(line)
            record, reason = _parse_line(
                chunk, None if check_each and _has_long_number(chunk) else fast
            )
            if reason is not None:
                damaged.append(DamagedLine(number, reason))
            else:
                records.append(record)
    return LogRead(target, tuple(records), tuple(damaged), duplicates)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a large log becomes objects.

    Why: the collector runs after every few hundred new containers and walks
    every object still alive, so parsing a log of 10,000 runs (60,000
    records) spent a third of its time in it. Records hold no cycles, so
    nothing is kept that the collector would have freed; it runs again
    (if it was on) at the end.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _parse_line(
    chunk: bytes, fast: Callable[[bytes], Any] | None = None
) -> tuple[dict[str, Any], str | None]:
    record: Any = None
    if fast is not None:
        # A line the fast parser refuses (a lone surrogate escape, NaN, invalid
        # UTF-8) is judged by json below, which words the reason. A line with
        # an integer past 64 bits, which orjson would make a float, never
        # reaches it (`read`).
        with contextlib.suppress(ValueError):
            record = fast(chunk)
    if isinstance(record, dict):
        return _checked(record)
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return {}, "not UTF-8 text"
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return {}, "not valid JSON (nested too deeply)"
    if not isinstance(record, dict):
        return {}, "not a JSON object"
    return _checked(record)


def _checked(record: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    problem = validate_record(record)
    if problem:
        return {}, problem
    if parse_ts(record.get("ts")) is None:
        return {}, "ts is missing or not an ISO-8601 time"
    return record, None


def as_number(value: Any) -> float | None:
    """A logged cost as a number, or None: one below zero, NaN or infinite is
    not a cost (it would lift a budget), so it counts as unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def logged_cost(records: Sequence[dict[str, Any]], run_id: str) -> float | None:
    """What verifying the run has cost so far, from its review and fix records."""
    costs = [
        as_number(r.get("cost_usd"))
        for r in records
        if r.get("run_id") == run_id and r.get("event") in ("review", "fix")
    ]
    known = [c for c in costs if c is not None]
    return sum(known) if known else None
