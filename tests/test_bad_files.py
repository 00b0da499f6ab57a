"""Bad input files are usage errors, never crashes or hangs (issue 11, items 9
and 10): deep nesting, symlink loops, unreadable files, directories, FIFOs
and files too big, each exit 2 with one sentence naming the file and what
is wrong. Every command is called in-process through the CLI's main()."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from _readers import LOG_READERS, READERS, place
from santa_method.cli import main
from santa_method.core import files

DEEP = 100_000
EVERY = READERS | LOG_READERS


# `project` (conftest.py) holding a good file of each kind, which each test spoils.
pytestmark = pytest.mark.usefixtures("user_files")


def one_sentence(capsys: pytest.CaptureFixture[str], code: int) -> str:
    _out, err = capsys.readouterr()
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("santa: "), err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0]


def _call(name: str, path: Path | str) -> int:
    return main([str(path) if a == "{}" else a for a in EVERY[name]])


@pytest.mark.parametrize("name", sorted(EVERY))
def test_a_symlink_loop_is_named(project: Path, capsys, name: str) -> None:
    loop = place(project, name, "loop.yaml")
    loop.symlink_to(loop)
    assert "symlink loop" in one_sentence(capsys, _call(name, loop))


# A folder of items is valid ITEMS, so the item readers are left out here.
@pytest.mark.parametrize("name", sorted(n for n in EVERY if not n.endswith(" items")))
def test_a_directory_is_a_directory(project: Path, capsys, name: str) -> None:
    folder = place(project, name, "folder.yaml")
    folder.mkdir()
    sentence = one_sentence(capsys, _call(name, folder))
    assert "directory" in sentence and "no such file" not in sentence


@pytest.mark.parametrize("name", sorted(EVERY))
def test_a_fifo_with_no_writer_is_refused_without_blocking(
    project: Path, capsys, name: str
) -> None:
    fifo = place(project, name, "pipe.yaml")
    os.mkfifo(fifo)
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(_call(name, fifo)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # unblock the reader so the test run can end, then fail
        with open(fifo, "w"):
            pass
        worker.join(timeout=5)
        pytest.fail(f"{name} blocked on a FIFO with no writer")
    sentence = one_sentence(capsys, result[0])
    assert "FIFO" in sentence or "neither a file nor a folder" in sentence


# `santa sample` lists file items without reading them: an unreadable one is no error there.
@pytest.mark.parametrize("name", sorted(n for n in READERS if n != "sample items"))
def test_an_unreadable_file_is_permission_denied(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # Tests run as root, for whom chmod 000 changes nothing: the read itself
    # is made to fail the way it does for an ordinary user.
    target = place(project, name, "secret.yaml")
    target.write_text("name: x\n", encoding="utf-8")
    real_open = open

    def guarded(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(path) == str(target) or Path(os.fspath(path)).name == target.name:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    real_os_open = os.open

    def guarded_os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(os.fspath(path)).name == target.name:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(files, "open", guarded, raising=False)
    monkeypatch.setattr("builtins.open", guarded)
    monkeypatch.setattr(os, "open", guarded_os_open)
    assert "permission denied" in one_sentence(capsys, _call(name, target))


def test_a_200_mb_rubric_fails_fast_before_it_is_read(project: Path, capsys) -> None:
    big = project / "big.yaml"
    with open(big, "wb") as handle:  # sparse: 200 MB long, nothing written
        handle.truncate(200 * 1024 * 1024)
    for args in (["rubric", "lint", str(big)], ["gate", "b.json", "c.json", "--rubric", str(big)]):
        sentence = one_sentence(capsys, main(args))
        assert "200 MB" in sentence and "more than" in sentence


DEEP_YAML = "[" * DEEP + "]" * DEEP
DEEP_JSON = '{"a": ' * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize(
    ("where", "args", "text"),
    [
        ("gate", ["gate", "b.json", "c.json", "--rubric", "deep.yaml"], DEEP_YAML),
        (
            "round start",
            ["round", "start", "--against", "out.md", "--spec-text", "x", "--rubric", "deep.yaml"],
            DEEP_YAML,
        ),
        (
            "run",
            ["run", "--against", "out.md", "--spec-text", "x", "--rubric", "deep.yaml"],
            DEEP_YAML,
        ),
        ("sample", ["sample", "deep.jsonl"], DEEP_JSON + "\n"),
        ("sample exclude", ["sample", "items.jsonl", "--exclude", "deep.json"], DEEP_JSON),
        ("batch", ["batch", "deep.jsonl", "--spec-text", "x"], DEEP_JSON + "\n"),
    ],
)
def test_deep_nesting_is_a_usage_error(
    project: Path, capsys, where: str, args: list[str], text: str
) -> None:
    for name in ("deep.yaml", "deep.jsonl", "deep.json"):
        (project / name).write_text(text, encoding="utf-8")
    assert "nested too deeply" in one_sentence(capsys, main(args))


@pytest.mark.parametrize(
    ("args", "name", "said"),
    [
        (["rubric", "lint", "deep.yaml"], "deep.yaml", DEEP_YAML),
        (["validate", "deep.json"], "deep.json", DEEP_JSON),
        (["validate", "deep.json", "--json"], "deep.json", DEEP_JSON),
    ],
)
def test_a_file_too_deep_to_read_is_bad_input_not_a_finding(
    project: Path, capsys, args: list[str], name: str, said: str
) -> None:
    """Lint and validate judge what they can read: a rubric or a review nested
    past what a parser follows is not a rubric that fails its lint nor a
    review that fails its contract, but a file that cannot be read (exit 2)."""
    (project / name).write_text(said, encoding="utf-8")
    kind = "rubric" if name.endswith(".yaml") else "review"
    sentence = one_sentence(capsys, main(args))
    assert sentence.startswith(f"santa: cannot read {kind} '{name}': ")
    assert "nested too deeply" in sentence


def test_a_rubric_extending_one_too_deep_to_read_fails_its_lint(project: Path, capsys) -> None:
    """The linted file was read: its parent's problem is its finding (exit 1)."""
    (project / "deep.yaml").write_text(DEEP_YAML, encoding="utf-8")
    (project / "child.yaml").write_text("extend: ./deep.yaml\ncriteria: []\n", encoding="utf-8")
    assert main(["rubric", "lint", "child.yaml"]) == 1
    out, _err = capsys.readouterr()
    assert "extend './deep.yaml'" in out and "nested too deeply" in out


def test_a_reviewers_reply_too_deep_is_handed_back_not_bad_input() -> None:
    """Only a file a person names is bad input: a reviewer's reply is invalid."""
    from santa_method.core.review import validate_reply

    result = validate_reply(DEEP_JSON)
    assert not result.valid and "nested too deeply" in result.errors[0]


def test_deep_nesting_in_the_config_is_a_usage_error(project: Path, capsys) -> None:
    (project / ".santa" / "config.yaml").write_text(DEEP_YAML, encoding="utf-8")
    for args in (["gate", "b.json", "c.json"], ["run", "--against", "out.md", "--spec-text", "x"]):
        assert "nested too deeply" in one_sentence(capsys, main(args))


def test_deep_nesting_in_log_data_is_a_usage_error(project: Path, capsys) -> None:
    data = "[" * DEEP + "]" * DEEP
    assert "nested too deeply" in one_sentence(
        capsys, main(["log", "generate", "--run", "r", "--data", data])
    )


def test_init_refuses_bad_settings_and_a_looping_folder_before_writing(
    project: Path, capsys
) -> None:
    settings = place(project, "init settings", "")
    settings.write_text(DEEP_YAML, encoding="utf-8")
    sentence = one_sentence(capsys, main(["init", "."]))
    assert "'.claude/settings.json'" in sentence and "nested too deeply" in sentence
    with open(settings, "wb") as handle:  # sparse: 200 MB long, nothing written
        handle.truncate(200 * 1024 * 1024)
    sentence = one_sentence(capsys, main(["init", "."]))
    assert "200 MB" in sentence and "more than" in sentence
    assert [p.name for p in settings.parent.iterdir()] == ["settings.json"]
    (project / "loop").symlink_to(project / "loop")
    assert "'loop': it is a symlink loop" in one_sentence(capsys, main(["init", "loop"]))
    (project / "plain").mkdir()
    (project / "plain" / ".claude").write_text("", encoding="utf-8")  # a file, not a folder
    sentence = one_sentence(capsys, main(["init", "plain"]))
    assert sentence.startswith("santa: cannot write file 'plain/.claude/") and (
        "not a directory" in sentence
    )
    # A vendored file that is a FIFO is not read (it would block): it is kept, or replaced.
    settings.unlink()
    fifo = project / ".claude" / "agents" / "santa-fixer.md"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert main(["init", "."]) == 0
    assert "kept       .claude/agents/santa-fixer.md" in capsys.readouterr().out
    assert main(["init", ".", "--force"]) == 0 and fifo.is_file()


def _bad_entry(path: Path, kind: str) -> None:
    if kind == "loop":
        path.symlink_to(path.name)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "dangling":
        path.symlink_to("nowhere.md")
    else:
        path.symlink_to(path.parent / "sub")


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("loop", "it is a symlink loop"),
        ("fifo", "it is a FIFO (named pipe), not a regular file"),
        ("device", "it is a device, not a regular file"),
        ("dangling", "it is a broken symlink"),
        ("folder link", "it is a symlink to a directory"),
    ],
)
@pytest.mark.parametrize("command", [["sample", "items", "--rate", "1"], ["batch", "items"]])
def test_a_folder_entry_that_is_not_a_file_is_refused_not_skipped(
    project: Path, capsys, kind: str, said: str, command: list[str]
) -> None:
    items = project / "items"
    (items / "sub").mkdir(parents=True)
    (items / "a.md").write_text("a\n", encoding="utf-8")
    (items / "sub" / "b.md").write_text("b\n", encoding="utf-8")
    _bad_entry(items / "c.md", kind)
    args = [*command, "--spec-text", "x"] if command[0] == "batch" else command
    sentence = one_sentence(capsys, main(args))
    assert sentence.startswith(f"santa: cannot read item 'items/c.md': {said}"), sentence


def test_hidden_entries_of_a_folder_stay_skipped_whatever_they_are(project: Path, capsys) -> None:
    items = project / "items"
    (items / ".cache").mkdir(parents=True)
    (items / "a.md").write_text("a\n", encoding="utf-8")
    (items / "b.md").write_text("b\n", encoding="utf-8")
    os.mkfifo(items / ".cache" / "pipe")
    (items / ".link").symlink_to(items / ".link")
    (items / "c.md").symlink_to("a.md")  # a link to a file is an item, as before
    assert main(["sample", "items", "--rate", "1"]) == 0
    out, _err = capsys.readouterr()
    assert out.splitlines()[0].startswith("3 of 3 items")
    assert out.splitlines()[1:] == ["items/a.md", "items/b.md", "items/c.md"]


def test_stdin_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "santa_method", "rubric", "lint", "-"],
        input=b"\xff\xfe{ criteria",
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert b"not UTF-8 text" in done.stderr and b"Traceback" not in done.stderr


def test_a_name_swapped_for_a_fifo_after_any_check_is_refused_not_read(tmp_path: Path) -> None:
    # What is read is judged, not what a name pointed at earlier: a child
    # whose os.stat still sees the regular file that the name held (as a
    # check before opening would) must refuse the FIFO now there, at once.
    fifo, regular = tmp_path / "pipe.md", tmp_path / "regular.md"
    regular.write_text("text\n", encoding="utf-8")
    os.mkfifo(fifo)
    script = (
        "import os, sys\n"
        "real_stat = os.stat\n"
        f"os.stat = lambda p, *a, **k: real_stat({str(regular)!r}) if str(p) == {str(fifo)!r} "
        "else real_stat(p, *a, **k)\n"
        "from santa_method.core import files\n"
        "from santa_method.core.errors import InputError\n"
        "try:\n"
        f"    files.read_text({str(fifo)!r}, 'spec')\n"
        "except InputError as exc:\n"
        "    print(exc)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        with open(fifo, "w"):
            pass
        pytest.fail("read_text opened the FIFO it had not checked, and blocked")
    assert "it is a FIFO (named pipe), not a regular file" in done.stdout, done.stderr


@pytest.mark.parametrize("kind", ["loop", "broken"])
def test_rubric_lint_names_a_bad_link_without_an_extension(project: Path, capsys, kind) -> None:
    link = project / "myrubric"
    link.symlink_to(link if kind == "loop" else project / "gone")
    sentence = one_sentence(capsys, main(["rubric", "lint", "myrubric"]))
    expected = "symlink loop" if kind == "loop" else "broken symlink"
    assert expected in sentence and "rubric name" not in sentence


def test_a_project_rubric_that_is_not_a_file_is_named_as_such(project: Path, capsys) -> None:
    folder = project / ".santa" / "rubrics"
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "mine.yaml")
    sentence = one_sentence(capsys, main(["gate", "b.json", "c.json", "--rubric", "mine"]))
    assert "FIFO" in sentence and "unknown rubric" not in sentence


def test_rubric_lint_by_name_names_a_project_rubric_that_is_not_a_file(
    project: Path, capsys
) -> None:
    folder = project / ".santa" / "rubrics"
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "mine.yaml")
    sentence = one_sentence(capsys, main(["rubric", "lint", "mine"]))
    assert "FIFO" in sentence and "no such file" not in sentence


def test_rubric_show_names_a_symlink_loop_given_by_a_bare_name(project: Path, capsys) -> None:
    (project / "loopy").symlink_to(project / "loopy")
    sentence = one_sentence(capsys, main(["rubric", "show", "loopy"]))
    assert "symlink loop" in sentence and "unknown rubric" not in sentence
    # A plain typo still lists the rubrics there are.
    assert "known rubrics" in one_sentence(capsys, main(["rubric", "show", "nosuch"]))


@pytest.mark.parametrize("kind", ["fifo", "dir", "loop"])
def test_a_log_to_write_that_is_not_a_file_is_refused_before_anything_runs(
    project: Path, capsys, kind: str
) -> None:
    log = project / "log.jsonl"
    if kind == "fifo":
        os.mkfifo(log)
    elif kind == "dir":
        log.mkdir()
    else:
        log.symlink_to(log)
    code = main(["round", "start", "--against", "out.md", "--spec-text", "x", "--log", str(log)])
    assert "log" in one_sentence(capsys, code)
    assert not (project / ".santa" / "runs").exists()


def _sparse(path: Path, mb: int) -> None:
    with open(path, "wb") as handle:  # sparse: that long, nothing written
        handle.truncate(mb * 1024 * 1024)


def test_a_config_too_big_is_named_in_a_sentence(project: Path, capsys) -> None:
    _sparse(project / ".santa" / "config.yaml", 286)
    sentence = one_sentence(capsys, main(["gate", "b.json", "c.json"]))
    assert "config.yaml" in sentence and "286 MB" in sentence and "1 MB" in sentence
    assert "reads as the config" in sentence and "a the" not in sentence


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["gate", "b.json", "c.json", "--against", "big"], "an output"),
        (["gate", "big", "c.json"], "a review"),
        (["rubric", "lint", "big"], "a rubric"),
    ],
)
def test_a_file_too_big_says_what_it_was_read_as(project: Path, capsys, args, what) -> None:
    _sparse(project / "big", 65)
    sentence = one_sentence(capsys, main(args))
    assert "65 MB" in sentence and f"santa reads as {what}" in sentence
