"""The iteration log: many writers, no lost or torn lines, damage reported not fatal."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from santa_method.core.errors import InputError
from santa_method.state import fastjson, log

ANTHROPIC = "sk-ant-api03-" + "Xy7Qp2Lk9Rt4Vb6Nm1Zc8Wd3Fg5Hj0Ks2Lq7Pw4Er9Ty6Ui1Op3As5Df8Gh2Jk4"
SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_append_stamps_orders_and_writes_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "log.jsonl"  # parents are created
    moment = datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
    written = log.append(
        path,
        {"event": "gate", "iteration": 1, "run_id": "r1", "verdict": "NICE", "ts": "ignored"},
        ts=moment,
    )
    assert list(written)[:4] == ["ts", "run_id", "event", "iteration"]
    assert written["ts"] == "2025-03-01T12:30:00.000000Z"
    assert lines(path) == [written]
    assert path.read_bytes().endswith(b"}\n") and path.read_bytes().count(b"\n") == 1


def test_append_uses_the_current_utc_time(tmp_path: Path) -> None:
    before = datetime.now(UTC)
    written = log.append(tmp_path / "log.jsonl", {"run_id": "r", "event": "ship", "iteration": 1})
    stamped = log.parse_ts(written["ts"])
    assert stamped is not None and before <= stamped <= datetime.now(UTC)
    assert written["ts"].endswith("Z")


@pytest.mark.parametrize(
    ("record", "words"),
    [
        ({"run_id": "r", "event": "shipped", "iteration": 1}, "unknown event"),
        ({"run_id": "r", "iteration": 1}, "unknown event"),
        ({"event": "ship", "iteration": 1}, "run_id"),
        ({"run_id": "  ", "event": "ship"}, "run_id"),
        ({"run_id": "r", "event": "gate"}, "iteration"),
        ({"run_id": "r", "event": "review", "iteration": 0}, "iteration"),
        ({"run_id": "r", "event": "fix", "iteration": True}, "iteration"),
        ({"run_id": "r", "event": "fix", "iteration": 1, "cost_usd": float("nan")}, "JSON"),
        ({"run_id": "r", "event": "fix", "iteration": 1, "x": object()}, "JSON"),
    ],
)
def test_bad_records_raise_before_touching_the_file(
    tmp_path: Path, record: dict, words: str
) -> None:
    path = tmp_path / "log.jsonl"
    with pytest.raises(ValueError, match=words):
        log.append(path, record)
    assert not path.exists()


def test_free_form_iteration_for_events_outside_rounds(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log.append(
        path, {"run_id": "r", "event": "escape", "iteration": "after release", "description": "d"}
    )
    log.append(path, {"run_id": "r", "event": "generate", "tokens": 10})
    read = log.read(path)
    assert [r["iteration"] for r in read.records] == ["after release", None]
    assert read.damaged == ()


def test_secrets_are_redacted_but_ids_and_hashes_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    quote = f'API_KEY = "{ANTHROPIC}"'
    key = f"compliance|quote:{quote.casefold()}"
    log.append(
        path,
        {
            "run_id": "run-1",
            "event": "run",
            "iteration": 0,
            "target_sha256": SHA,
            "spec_sha256": SHA,
        },
    )
    log.append(
        path,
        {
            "run_id": "run-1",
            "event": "gate",
            "iteration": 1,
            "verdict": "NAUGHTY",
            "next": "fix",
            "issues": [
                {
                    "criterion": "compliance",
                    "issue": "a key is committed",
                    "quote": quote,
                    "key": key,
                    "flagged_by": ["B", "C"],
                },
                {
                    "criterion": "completeness",
                    "issue": "no tests",
                    "missing": "tests",
                    "key": "completeness|missing:tests",
                    "flagged_by": ["B"],
                },
            ],
        },
    )
    text = path.read_text(encoding="utf-8")
    assert ANTHROPIC not in text
    assert ANTHROPIC.casefold() not in text  # the merged key, case-folded, too
    run, gate = lines(path)
    assert run["target_sha256"] == SHA and run["spec_sha256"] == SHA
    leaked, clean = gate["issues"]
    assert leaked["quote"] == 'API_KEY = "[REDACTED:Anthropic API Key]"'
    assert leaked["key"].startswith("compliance|redacted:")
    assert clean["key"] == "completeness|missing:tests"  # untouched where nothing was redacted
    # Same flag next round -> same protected key, so recurrence is still detectable.
    again = log.append(
        path,
        {
            "run_id": "run-1",
            "event": "gate",
            "iteration": 2,
            "issues": [{"criterion": "compliance", "quote": quote, "key": key}],
        },
    )
    assert again["issues"][0]["key"] == leaked["key"]


def test_odd_text_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    notes = ["法律条文 ✓", "lone \ud800 surrogate", "line\nbreak\u2028sep\x85\u2029", "\x00nul"]
    for note in notes:
        log.append(path, {"run_id": "r", "event": "fix", "iteration": 1, "notes": note})
    read = log.read(path)
    assert read.damaged == ()
    assert [r["notes"] for r in read.records] == notes
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(notes)


def test_missing_log_is_empty(tmp_path: Path) -> None:
    read = log.read(tmp_path / "nope.jsonl")
    assert read.records == () and read.damaged == () and read.warnings() == []


def test_unreadable_log_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="directory"):
        log.read(tmp_path)


def test_damaged_lines_are_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    good = log.append(path, {"run_id": "r", "event": "ship", "iteration": 1, "reason": "NICE"})
    with open(path, "ab") as handle:
        handle.write(b'{"run_id": "r", "event": "fix", "iter\n')  # 2: torn
        handle.write(b"[1, 2]\n")  # 3: not an object
        handle.write(b'{"ts": "2025-01-01T00:00:00Z", "run_id": "r", "event": "party"}\n')  # 4
        handle.write(b"\xff\xfe garbage\n")  # 5: not UTF-8
        handle.write(b"\n   \n")  # 6, 7: blank, ignored
        handle.write(b'{"run_id": "r", "event": "ship", "iteration": 1}\n')  # 8: no ts
        handle.write(b'{"ts": "yesterday", "run_id": "r", "event": "ship"}\n')  # 9: bad ts
    last = log.append(path, {"run_id": "r", "event": "escape", "description": "found later"})  # 10
    read = log.read(path)
    assert read.records == (good, last)
    assert [d.line for d in read.damaged] == [2, 3, 4, 5, 8, 9]
    reasons = [d.reason for d in read.damaged]
    assert "not valid JSON" in reasons[0]
    assert reasons[1] == "not a JSON object"
    assert "unknown event 'party'" in reasons[2]
    assert reasons[3] == "not UTF-8 text"
    assert "ts" in reasons[4] and "ts" in reasons[5]
    assert read.warnings()[0] == f"{path} line 2: {reasons[0]}; skipped"


def test_an_exact_copy_of_a_line_is_read_once(tmp_path: Path) -> None:
    """What git's union merge of a committed log makes (test_init shows it
    with a real merge): a record both branches hold, twice."""
    path = tmp_path / "log.jsonl"
    first = log.append(path, {"run_id": "r", "event": "escape", "description": "late"})
    line = path.read_bytes()
    second = log.append(path, {"run_id": "r", "event": "escape", "description": "late"})
    with open(path, "ab") as handle:
        handle.write(line)
        handle.write(line.rstrip(b"\n") + b"\r\n")  # as a checkout with CRLF endings has it
    read = log.read(path)
    assert read.records == (first, second) and read.damaged == ()
    assert read.duplicates == 2 and read.warnings() == []


ODD_LINES = [
    b'{"ts": "2025-01-01T00:00:00Z", "run_id": "r", "event": "fix", "iteration": 1, '
    b'"notes": "lone \\ud800", "tokens": 123456789012345678901234567890}',
    b'{"ts": "2025-01-01T00:00:00Z", "run_id": "r", "event": "fix", "iteration": 1, '
    b'"cost_usd": NaN, "tokens": 1e400}',
    b'{"ts": "2025-01-01T00:00:00Z", "run_id": "r", "event": "fix", "iteration": 1, '
    b'"notes": "a", "notes": "b", "n": -0.0, "x": 18446744073709551616}',
    b"\xef\xbb\xbf{}",
    b'{"notes": "\xed\xa0\x80"}',
    b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"ts": "2025-01-01T00:00:00Z", "run_id": "r", "event": "ship"} {"b": 2}',
    b"[1, 2]",
]


def test_the_fast_parser_reads_every_line_as_json_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """orjson (the `view` extra) reads a large log faster; a line it would read
    otherwise (a lone surrogate, NaN, an integer past 64 bits, a BOM) goes to
    json, so the records and the reasons are json's either way."""
    pytest.importorskip("orjson")
    path = tmp_path / "log.jsonl"
    log.append(path, {"run_id": "r", "event": "run", "iteration": 0, "target": "a.md"})
    with open(path, "ab") as handle:
        handle.write(b"\n".join(ODD_LINES) + b"\n")
    fast = log.read(path)
    assert fastjson.fast_loads() is not None
    monkeypatch.setattr(fastjson, "fast_loads", lambda: None)
    plain = log.read(path)
    assert repr(fast.records) == repr(plain.records)
    assert fast.damaged == plain.damaged
    assert fast.records[1]["tokens"] == 123456789012345678901234567890
    assert fast.records[3]["x"] == 18446744073709551616 and fast.records[3]["notes"] == "b"
    assert [d.line for d in fast.damaged] == [5, 6, 7, 8, 9]


def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log.append(path, {"run_id": "r", "event": "ship", "iteration": 1})
    with open(path, "ab") as handle:
        handle.write(b'{"run_id": "r", "eve')  # a writer killed mid-line, no newline
    after = log.append(path, {"run_id": "r", "event": "escape", "description": "x"})
    read = log.read(path)
    assert read.records[-1] == after
    assert [d.line for d in read.damaged] == [2]


# -- many processes at once ----------------------------------------------------

WRITERS = 8
PER_WRITER = 100


def _writer(path: str, writer: int, barrier) -> None:
    barrier.wait()
    for n in range(PER_WRITER):
        # Sizes straddle PIPE_BUF (4096) and typical page sizes, where torn writes would show.
        size = (n * 397 + writer * 1013) % 6000 + 10
        log.append(
            path,
            {
                "run_id": f"w{writer}",
                "event": "fix",
                "iteration": n + 1,
                "notes": f"{writer}:{n}:" + "z" * size,
            },
        )


def test_concurrent_appends_from_many_processes(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_writer, args=(str(path), w, barrier)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)

    raw = path.read_bytes().split(b"\n")
    assert raw[-1] == b""
    parsed = [json.loads(line) for line in raw[:-1]]  # every line is valid JSON
    assert len(parsed) == WRITERS * PER_WRITER
    seen = [tuple(r["notes"].split(":")[:2]) for r in parsed]
    assert sorted(seen) == sorted(
        (str(w), str(n)) for w in range(WRITERS) for n in range(PER_WRITER)
    )
    for r in parsed:
        w, n = r["notes"].split(":")[:2]
        assert r["run_id"] == f"w{w}" and r["iteration"] == int(n) + 1
    # Each writer's own records stay in its order.
    for w in range(WRITERS):
        mine = [r["iteration"] for r in parsed if r["run_id"] == f"w{w}"]
        assert mine == sorted(mine)
    read = log.read(path)
    assert len(read.records) == WRITERS * PER_WRITER and read.damaged == ()


def test_the_file_is_created_with_ordinary_permissions(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    old = os.umask(0o022)
    try:
        log.append(path, {"run_id": "r", "event": "ship"})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
