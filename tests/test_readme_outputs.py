"""The `console` blocks of README and docs/ print what they say they print.

A block is `$ santa ...` lines, each followed by the output it shows; `| head
-n N` keeps the first N lines. Every command runs for real in a copy of
`examples/` with its own `.santa/`, and the output must match line for line
once the two things that change per machine are put aside: the project's
path (the docs write /path/to/project) and a batch's id.

The example batch itself is held to its generator, so the numbers the docs
show (docs/batches.md) belong to the file that ships.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SANTA = str(Path(sys.executable).parent / "santa")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_BATCH_ID = re.compile(r"\bb-\d{8}-\d{6}-[0-9a-f]+\b")
_HEAD = re.compile(r"^(?P<cmd>.*?)\s*\|\s*head -n (?P<n>\d+)$")


def console_examples(text: str) -> list[tuple[int, str, list[str]]]:
    """(line number, command, shown output) for each `$ ` line of a console block."""
    found: list[tuple[int, str, list[str]]] = []
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            inside = line.strip() == "```console"
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            found.append((number, line[2:], []))
        elif found:
            found[-1][2].append(line)
    return found


EXAMPLES = [
    (f"{page.relative_to(REPO)}:{number}", command, shown)
    for page in PAGES
    for number, command, shown in console_examples(page.read_text(encoding="utf-8"))
]


def test_the_batches_page_shows_sample_and_batch_plan_output() -> None:
    batches = [e for e in EXAMPLES if e[0].startswith("docs/batches.md:")]
    shown = " ".join(command for _, command, _ in batches)
    assert "santa sample examples/batch/" in shown and "santa batch plan examples/batch/" in shown
    assert all(output for _, _, output in EXAMPLES)


def _normalise(lines: list[str], root: Path) -> list[str]:
    return [_BATCH_ID.sub("b-ID", line.replace(str(root), "/path/to/project")) for line in lines]


@pytest.mark.parametrize(("where", "command", "shown"), EXAMPLES, ids=lambda x: str(x)[:60])
def test_console_output_is_what_the_command_prints(
    where: str, command: str, shown: list[str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(REPO / "examples", project / "examples")
    head = _HEAD.match(command)
    tokens = shlex.split(head.group("cmd") if head else command)
    assert tokens[0] == "santa", f"{where}: only santa commands are run"
    env = {
        "PATH": f"{Path(SANTA).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CLAUDE_PROJECT_DIR": str(project),
        "SANTA_HOME": str(project / ".santa"),
        "SANTA_LOG": str(project / ".santa" / "log.jsonl"),
    }
    done = subprocess.run(
        [SANTA, *tokens[1:]], capture_output=True, text=True, cwd=project, env=env, timeout=120
    )
    assert done.returncode == 0, f"{where}: exit {done.returncode}: {done.stderr}"
    printed = done.stdout.splitlines()
    if head:
        printed = printed[: int(head.group("n"))]
    assert _normalise(printed, project) == _normalise(shown, project), where


def test_the_example_batch_is_what_its_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("generate", REPO / "examples/batch/generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    shipped = (REPO / "examples/batch/answers.jsonl").read_text(encoding="utf-8")
    assert shipped == generate.render()
    assert shipped.count("\n") == 300
    assert len(shipped.encode()) < 50_000  # small in bytes
    assert shipped.count("--chars") == 15  # one in twenty: 5 %
