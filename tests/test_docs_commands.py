"""Every `santa ...` line in the markdown is a real command.

The skill, the slash commands, the agents and the README tell a model (and
people) which helper commands to run. A renamed sub-command or flag would
make the model run something that fails, so this test extracts every
command line (in fenced code blocks, and inline code spans that start with
`santa `) and checks it against the CLI itself:

- the sub-command path exists: `santa PATH --help` exits 0;
- every option it uses is one that sub-command accepts;
- a complete command line in a code block parses with the real parser
  (placeholders such as RUN_ID or FILE are just strings to it);
- README and docs/ lines that use `examples/` are run for real.

The files are read when the tests are collected, so the test follows
whatever the markdown holds at that moment.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from santa_method.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
SANTA = str(Path(sys.executable).parent / "santa")
DOCS = ("SKILL.md", "README.md", "commands/*.md", "agents/*.md", "docs/*.md")


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    source: str  # the file, relative to the repository
    text: str  # as written (one alternative, if the doc wrote a|b)
    tokens: tuple[str, ...]  # tokens after `santa`
    fenced: bool  # from a code block (a full command line), not an inline span

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _doc_files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        files.extend(sorted(root.glob(pattern)))
    return [f for f in files if f.is_file()]


_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_SHELL_OPS = {"|", "||", "&", "&&", ";", ";;"}


def _is_santa(token: str) -> bool:
    return token == "santa" or token.endswith("/santa")


def _fenced_commands(rel: str, number: int, line: str) -> list[list[str]]:
    """Each `santa ...` command in a code-block line (split at shell operators)."""
    line = line.strip()
    if line.startswith("$ "):
        line = line[2:]
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:  # unbalanced quotes
        if line.startswith("santa "):
            pytest.fail(f"{rel}:{number}: cannot split the santa line {line!r}: {exc}")
        return []
    commands, current = [], []
    for token in [*tokens, ";"]:
        if token in _SHELL_OPS:
            if current and _is_santa(current[0]):
                commands.append(current)
            current = []
        else:
            current.append(token)
    return commands


def _expand(tokens: list[str]) -> list[list[str]]:
    """`santa rubric list|show|lint` stands for three commands."""
    choices = [t.split("|") if "|" in t and not t.startswith("-") else [t] for t in tokens]
    return [list(combo) for combo in itertools.product(*choices)]


def extract(root: Path = REPO, patterns: tuple[str, ...] = DOCS) -> list[Command]:
    found: list[Command] = []
    for path in _doc_files(root, patterns):
        rel = str(path.relative_to(root))
        lines = path.read_text(encoding="utf-8").splitlines()
        prose: list[tuple[int, str]] = []
        fence = ""  # the marker that opened the current code block
        pending = ""
        for number, line in enumerate(lines, 1):
            marker = _FENCE.match(line)
            if marker and (not fence or marker.group(1) == fence):
                fence = "" if fence else marker.group(1)
                pending = ""
                continue
            if not fence:
                prose.append((number, line))
                continue
            if line.rstrip().endswith("\\"):  # shell line continuation
                pending += line.rstrip()[:-1] + " "
                continue
            full, pending = pending + line, ""
            # No a|b expansion here: outside quotes `|` is a pipe, inside it is data.
            for tokens in _fenced_commands(rel, number, full):
                found.append(
                    Command(f"{rel}:{number}", rel, shlex.join(tokens), tuple(tokens[1:]), True)
                )
        # Inline spans may wrap across lines within a paragraph.
        text = "\n".join(line for _, line in prose)
        starts = list(itertools.accumulate(len(line) + 1 for _, line in prose))
        for match in _SPAN.finditer(text):
            span = match.group(1)
            if "\n\n" in span:
                continue
            span = " ".join(span.replace("\\|", "|").split())
            if not span.startswith("santa "):
                continue
            index = next(i for i, end in enumerate(starts) if end > match.start())
            number = prose[index][0]
            for variant in _expand(span.split()):
                found.append(
                    Command(f"{rel}:{number}", rel, " ".join(variant), tuple(variant[1:]), False)
                )
    return found


COMMANDS = extract()
PARSER = build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def resolve(tokens: tuple[str, ...]) -> tuple[list[str], argparse.ArgumentParser]:
    """The sub-command path the tokens name, and its parser; fails on an unknown one."""
    parser, path = PARSER, []
    for token in tokens:
        if token.startswith("-"):
            break
        named = getattr(parser, "subparsers", None)  # `santa batch plan|record|status`
        if isinstance(named, dict) and token in named:
            path.append(token)
            parser = named[token]
            continue
        sub = _subparsers(parser)
        if sub is None:
            break
        if token not in sub.choices:
            raise LookupError(
                f"'{' '.join(['santa', *path, token])}': '{token}' is not a sub-command "
                f"(choices: {', '.join(sub.choices)})"
            )
        path.append(token)
        parser = sub.choices[token]
    return path, parser


def _options(tokens: tuple[str, ...]) -> list[str]:
    """Option names used, with synopsis brackets and `=value` removed."""
    names = []
    for token in tokens:
        bare = token.strip("[]().,")
        if bare.startswith("-") and bare != "-" and not re.fullmatch(r"-\d+(\.\d+)?", bare):
            names.append(bare.split("=", 1)[0])
    return names


def _is_synopsis(tokens: tuple[str, ...]) -> bool:
    return any("[" in t or "]" in t or "..." in t or t in {"…"} or t.endswith("…") for t in tokens)


def structure_problem(command: Command) -> str | None:
    """Why the command's sub-command path or one of its options does not exist."""
    try:
        path, parser = resolve(command.tokens)
    except LookupError as exc:
        return f"{command}: {exc}"
    if not path:
        return f"{command}: names no sub-command"
    accepted = set(parser._option_string_actions)
    unknown = [o for o in _options(command.tokens) if o not in accepted]
    if unknown:
        return (
            f"{command}: 'santa {' '.join(path)}' has no option {', '.join(unknown)} "
            f"(it has {', '.join(sorted(accepted))})"
        )
    return None


def parse_problem(command: Command) -> str | None:
    """Why the real parser refuses the complete command line, if it does."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            PARSER.parse_args(list(command.tokens))
        except SystemExit as exc:
            if exc.code == 0 and {"--help", "-h"} & set(command.tokens):
                return None
            return f"{command}: the parser refuses it: {err.getvalue().strip()}"
    return None


def test_the_docs_hold_santa_commands() -> None:
    """The extraction works on the real pages the loop depends on."""
    sources = {c.source for c in COMMANDS}
    assert {"SKILL.md", "commands/verify.md"} <= sources
    assert "santa gate --run RUN_ID --json" in {c.text for c in COMMANDS}


def test_extraction_handles_the_forms_used_in_markdown(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text(
        "Run `santa round start --against FILE\n"
        "--spec SPEC --json` first, then `santa-method:reviewer`.\n"
        "\n"
        "| `santa rubric list\\|show` | x |\n"
        "\n"
        "1. Step:\n"
        "\n"
        "   ```bash\n"
        "   . .venv/bin/activate && santa gate --run ID --json  # a comment\n"
        "   $ santa log escape --run ID \\\n"
        '       --data \'{"description": "a b"}\'\n'
        "   fix -> the gate's instruction; santa log fix\n"
        "   ```\n",
        encoding="utf-8",
    )
    found = extract(tmp_path, ("*.md",))
    assert [(c.where, c.text, c.fenced) for c in found] == [
        ("doc.md:9", "santa gate --run ID --json", True),
        ("doc.md:11", 'santa log escape --run ID --data \'{"description": "a b"}\'', True),
        ("doc.md:1", "santa round start --against FILE --spec SPEC --json", False),
        ("doc.md:4", "santa rubric list", False),
        ("doc.md:4", "santa rubric show", False),
    ]
    assert found[1].tokens[-1] == '{"description": "a b"}'


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("santa frobnicate --json", "'frobnicate' is not a sub-command"),
        ("santa round begin --json", "'begin' is not a sub-command"),
        ("santa gate --runs RUN_ID", "has no option --runs"),
        ("santa round start [--reviewer N]", "has no option --reviewer"),
        ("santa --json", "names no sub-command"),
    ],
)
def test_the_checks_catch_drift(text: str, needle: str) -> None:
    tokens = tuple(text.split()[1:])
    problem = structure_problem(Command("x.md:1", "x.md", text, tokens, True))
    assert problem is not None and needle in problem


def test_the_parse_check_catches_a_broken_line() -> None:
    bad = Command("x.md:1", "x.md", "", ("gate", "--run"), True)
    assert "expected one argument" in (parse_problem(bad) or "")
    bad = Command(
        "x.md:1", "x.md", "", ("round", "start", "--against", "A", "--against-diff", "B"), True
    )
    assert "not allowed with" in (parse_problem(bad) or "")
    good = Command("x.md:1", "x.md", "", ("round", "start", "--help"), True)
    assert parse_problem(good) is None


def _id(command: Command) -> str:
    return str(command)


@pytest.mark.parametrize("command", COMMANDS, ids=_id)
def test_command_path_and_options_exist(command: Command) -> None:
    problem = structure_problem(command)
    assert problem is None, problem


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if c.fenced and not _is_synopsis(c.tokens)], ids=_id
)
def test_code_block_command_lines_parse(command: Command) -> None:
    problem = parse_problem(command)
    assert problem is None, problem


def _paths() -> list[tuple[str, ...]]:
    paths: set[tuple[str, ...]] = set()
    for command in COMMANDS:
        with contextlib.suppress(LookupError):
            path, _ = resolve(command.tokens)
            for n in range(1, len(path) + 1):
                paths.add(tuple(path[:n]))
    return sorted(paths)


@pytest.mark.parametrize("path", _paths(), ids=" ".join)
def test_help_of_every_documented_sub_command(path: tuple[str, ...]) -> None:
    done = subprocess.run([SANTA, *path, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: santa {' '.join(path)}")


# The pages for people: README and docs/ (the skill, commands and agents are
# the model's, and name no bundled example).
PAGES = ("README.md", "docs/*.md")
EXAMPLES = [
    c for c in extract(REPO, PAGES) if c.fenced and any(t.startswith("examples/") for t in c.tokens)
]


@pytest.mark.parametrize("command", EXAMPLES, ids=_id)
def test_example_lines_run(command: Command, tmp_path: Path) -> None:
    """Run as written, in a copy of the repository's examples (nothing can
    write into the tree), with the state and log in tmp."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {
        "PATH": f"{Path(SANTA).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SANTA_HOME": str(tmp_path / ".santa"),
        "SANTA_LOG": str(tmp_path / "log.jsonl"),
    }
    done = subprocess.run(
        [SANTA, *command.tokens],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    # 0 or 1 are answers (valid/NICE, invalid/NAUGHTY); 2 is a usage or
    # input error, 3 a backend failure: the page would be wrong.
    assert done.returncode in (0, 1), f"{command}: exit {done.returncode}: {done.stderr}"
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.strip(), f"{command}: printed nothing"


def test_every_page_with_example_lines_has_them_run() -> None:
    """A page that shows the bundled examples in a code block has its lines
    found to run (the gate on the example: docs/review-contract.md)."""
    run = {c.source for c in EXAMPLES}
    for page in _doc_files(REPO, PAGES):
        text = page.read_text(encoding="utf-8")
        if re.search(r"^\s*(\$ )?santa .*examples/", text, flags=re.MULTILINE):
            assert str(page.relative_to(REPO)) in run, page
    assert "docs/review-contract.md" in run


_REPO_PATH = re.compile(r"`((?:[A-Za-z0-9_.\-]+/)+[A-Za-z0-9_.\-]+\.[a-z]+)`")


def test_the_pages_name_files_where_they_are() -> None:
    """A file README or a docs/ page names by its path in the repository (or
    in the package, as `santa_method/...`) is there: a reader who opens it
    finds it."""
    tops = {p.name for p in REPO.iterdir() if p.is_dir()} | {"santa_method"}
    named = {
        (str(page.relative_to(REPO)), m.group(1))
        for page in _doc_files(REPO, PAGES)
        for m in _REPO_PATH.finditer(page.read_text(encoding="utf-8"))
        if m.group(1).split("/", 1)[0] in tops
    }
    assert ("docs/headless.md", "scripts/santa_method/headless/backends/base.py") in named
    assert ("README.md", "examples/config.yaml") in named
    assert sorted((page, p) for page, p in named if not (REPO / p).exists()) == []
