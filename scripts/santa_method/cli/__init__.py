"""The `santa` command: a thin layer that parses arguments, calls the API, prints.

Each sub-command lives in its own module with a `register(subparsers)`
function; this file only wires them together and maps errors to exit codes.
Sub-command modules import their heavy dependencies inside their handlers so
that `santa --help` and the hook path stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from santa_method import __version__
from santa_method.core.errors import SantaError

# Order is the order shown in `santa --help`; each is a module `NAME_cmd`.
_COMMANDS = (
    "validate",
    "gate",
    "round",
    "log",
    "runs",
    "metrics",
    "view",
    "rubric",
    "report",
    "hook",
    "init",
    "run",
    "batch",
    "sample",
    "demo",
)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its message to one line.

    Abbreviated options are off: `--sour files` must not mean `--source
    files` to the helper while a guard reading the command sees neither.
    Each parser refuses arguments it does not know itself: argparse would
    pass a sub-command's unknown flag up to the top-level parser, whose
    usage line says nothing about the sub-command that was mistyped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _say_error(f"santa: error: {message}")
        raise SystemExit(2)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every option added, and a formatter
        # given no width imports shutil for the terminal's (shutil imports
        # the compression modules): the same width, without that import.
        return self.formatter_class(prog=self.prog, width=_columns() - 2)  # type: ignore[call-arg]


def _columns() -> int:
    """`shutil.get_terminal_size().columns`: COLUMNS if a positive number,
    else the width of the terminal on standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, closed, detached, not a terminal
        return 80
    return size.columns or 80


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with `only` just that sub-command's (the cold
    start of `santa validate` in a hook should not import every command)."""
    parser = _Parser(
        prog="santa",
        description="Verify AI output with independent reviewers and a verdict gate enforced by code.",
    )
    parser.add_argument("--version", action="version", version=f"santa-method {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only in _COMMANDS else _COMMANDS:
        importlib.import_module(f"santa_method.cli.{name}_cmd").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (2) or --help/--version (0): a code, as below
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except SantaError as exc:
        _say_error(f"santa: {exc}")
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away before the verdict was fully printed: never
        # report success for an answer nobody received. Silence the second
        # error Python would raise flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("santa: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # fail closed: a crash is never a success
        if os.environ.get("SANTA_DEBUG"):
            raise
        _say_error(
            f"santa: internal error: {type(exc).__name__}: {exc} (set SANTA_DEBUG=1 for details)"
        )
        return 1


def _say_error(message: str) -> None:
    """Errors go to stderr, which CI keeps: redacted like every other output."""
    from santa_method.cli._io import say

    say(message + "\n", sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
