"""Property: whatever bytes a user's file holds, every command that reads it
ends in a verdict or a usage error, never a crash or a hang (issue 11).

Each reader of `_readers` (rubric lint and show, gate, validate, round start,
run, sample, batch and batch plan, init's settings.json, the config, `log
generate --data`, the commands that read or append to a log named with
--log, and those that go on with an open run whose log changed) is fed arbitrary bytes, arbitrary text, JSON and
YAML of any shape, deep nesting (up to 200,000 levels) and valid files with
bytes broken into them. The invariant, stated without the code under test:
exit 0, 1 or 2; nothing on stderr but santa's own sentences (no traceback,
no "internal error"); done within a bound. `santa run` and `santa batch` go
on to the model once their inputs are accepted; no credentials are set, so
accepted input ends there, in the backend error that names the missing key
(exit 3): that is the one exit 3 allowed, and it is only reached after
every file was read and checked.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from _readers import LOG_READERS, READERS, place
from _reviews import pass_review
from santa_method.cli import main

#: Seconds one call may take; far above any real answer (milliseconds), far
#: below a hang.
BOUND = 60
SETTINGS = settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_GOOD = {
    "review": json.dumps(pass_review()).encode(),
    "rubric": (Path(__file__).parents[1] / "rubrics" / "base.yaml").read_bytes(),
    "items": b'{"id": "1", "output": "x"}\n{"id": "2", "output": "y"}\n',
    "log": (b'{"run_id": "r1", "event": "start", "iteration": 0, "ts": "2026-01-01T00:00:00Z"}\n'),
}

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_PAIRS = st.sampled_from(["[]", "{}", '{"a": }', "{a: }", "- ", "  "])


@st.composite
def _nested(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(1, 200_000))
    pair = draw(_PAIRS)
    opener, closer = (pair[:-1], pair[-1]) if pair.strip() not in ("-", "") else (pair, "")
    inner = draw(st.sampled_from(["", "1", '"x"', "null"]))
    closed = draw(st.booleans())
    if pair == "  ":  # block YAML, one indent deeper each line
        depth = min(depth, 800)  # about 640 kB: the indents grow with depth
        text = "".join("  " * i + "- a:\n" for i in range(depth))
    else:
        text = opener * depth + inner + (closer * depth if closed else "")
    return text.encode()


@st.composite
def _broken(draw: st.DrawFn) -> bytes:
    good = bytearray(draw(st.sampled_from(sorted(_GOOD.values()))))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(good)))
        action = draw(st.sampled_from(["insert", "delete", "truncate"]))
        if action == "insert":
            good[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del good[at : at + draw(st.integers(1, 8))]
        else:
            del good[at:]
    return bytes(good)


CONTENT = st.one_of(
    st.binary(max_size=4096),
    st.text(max_size=2000).map(lambda t: t.encode("utf-8", "surrogatepass")),
    _JSON.map(lambda v: json.dumps(v).encode()),
    _JSON.map(lambda v: yaml.safe_dump(v).encode()),
    _JSON.map(
        lambda v: "\n".join(json.dumps(x) for x in v).encode() if isinstance(v, list) else b""
    ),
    _nested(),
    _broken(),
    st.sampled_from(sorted(_GOOD.values())),
)


#: Always tried, whatever else is drawn: the shapes that crashed before (issue 11).
DEEP = 100_000
SEEN = (
    b"[" * DEEP + b"]" * DEEP,
    b'{"a": ' * DEEP + b"1" + b"}" * DEEP,
    b"[" * DEEP + b"]" * DEEP + b"\n",
)


def _seen(test):  # type: ignore[no-untyped-def]
    for content in SEEN:
        test = example(content=content)(test)
    return test


def _call(args: list[str]) -> int:
    """main() in a thread, so that a hang fails the test instead of the run."""
    done: list[BaseException | int] = []

    def call() -> None:
        try:
            done.append(main(args))
        except BaseException as exc:  # main() must not raise: the test shows what did
            done.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=BOUND)
    assert not worker.is_alive(), f"santa {' '.join(args)[:200]} did not end in {BOUND} s"
    assert isinstance(done[0], int), f"main() raised {done[0]!r}"
    return done[0]


def _answers(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """santa ARGS ends in time, in an answer (the invariant above)."""
    code = _call(args)
    _out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 3:  # only for run and batch, and only once every file was accepted
        assert args[0] in ("run", "batch") and "no credentials" in err, err
        return
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert "santa" in err, err


@pytest.mark.parametrize("name", sorted(READERS | LOG_READERS))
def test_any_bytes_in_a_users_file_end_in_an_answer(user_files: Path, capsys, name: str) -> None:
    args_of = (READERS | LOG_READERS)[name]
    target = place(user_files, name, "input.file")
    args = [str(target) if a == "{}" else a for a in args_of]

    @SETTINGS
    @given(content=CONTENT)
    @_seen
    def check(content: bytes) -> None:
        target.write_bytes(content)
        _answers(args, capsys)

    check()


def test_any_bytes_in_the_config_end_in_an_answer(user_files: Path, capsys) -> None:
    config = user_files / ".santa" / "config.yaml"
    commands = (["gate", "b.json", "c.json"], ["run", "--against", "out.md", "--spec-text", "x"])

    @SETTINGS
    @given(content=CONTENT, args=st.sampled_from(commands))
    @example(content=SEEN[0], args=commands[0])
    @example(content=SEEN[1], args=commands[1])
    def check(content: bytes, args: list[str]) -> None:
        config.write_bytes(content)
        _answers(args, capsys)

    check()


def test_any_text_as_log_data_ends_in_an_answer(user_files: Path, capsys) -> None:
    @SETTINGS
    @given(
        data=st.one_of(
            st.text(max_size=2000),
            _JSON.map(json.dumps),
            _nested().map(lambda b: b.decode()),
        ),
        event=st.sampled_from(["generate", "fix", "escape", "waive"]),
    )
    @example(data=SEEN[0].decode(), event="generate")
    @example(data=SEEN[1].decode(), event="waive")
    def check(data: str, event: str) -> None:
        _answers(["log", event, "--run", "r1", f"--data={data}"], capsys)

    check()


#: Commands that go on with an open run, which reads or appends to the run's
#: own log (`{}`: the run's id; `--log` names the same file, as it may).
_WITH_A_RUN = (
    ["gate", "--run", "{}"],
    ["gate", "--run", "{}", "--log", "run-log.jsonl"],
    ["log", "generate", "--run", "{}", "--data", '{"tokens": 1}'],
    ["log", "fix", "--run", "{}", "--data", '{"notes": "x"}'],
    ["log", "ship", "--run", "{}"],
    ["log", "escalate", "--run", "{}", "--log", "run-log.jsonl"],
    ["round", "start", "--run", "{}", "--log", "run-log.jsonl"],
    ["runs", "show", "{}"],
)


def test_any_bytes_in_an_open_runs_log_end_in_an_answer(user_files: Path, capsys) -> None:
    """A run's log changed under it (an editor, a bad merge) between its steps."""
    log = user_files / "run-log.jsonl"

    @SETTINGS
    @given(content=CONTENT, args=st.sampled_from(_WITH_A_RUN))
    @example(content=SEEN[0], args=_WITH_A_RUN[0])
    @example(content=SEEN[1], args=_WITH_A_RUN[2])
    @example(content=SEEN[2], args=_WITH_A_RUN[5])
    def check(content: bytes, args: list[str]) -> None:
        log.unlink(missing_ok=True)
        opened = ["round", "start", "--against", "out.md", "--spec-text", "x"]
        assert _call([*opened, "--log", str(log), "--json"]) == 0
        run_id = json.loads(capsys.readouterr().out)["run_id"]
        log.write_bytes(content)
        _answers([run_id if a == "{}" else a for a in args], capsys)

    check()
