"""`santa rubric list | show | lint`: find, read and check the rubrics reviewers judge by."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from santa_method.cli._io import echo

_RESOLUTION = (
    "Rubric names resolve in the project's .santa/rubrics/NAME.yaml first, then among the "
    "packaged rubrics (base, code, content, regulated); a value with a '/' or a .yaml, .yml "
    "or .json ending is a path, and so is any other that is not a rubric name but names a "
    "file or folder that exists. Join names with '+' to combine rubrics in order (code+regulated); "
    "criteria inherited twice, such as base, appear once."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rubric",
        help="list, show and lint rubrics",
        description="Find, show and check rubrics: the objective criteria reviewers judge by. "
        + _RESOLUTION,
    )
    sub = parser.add_subparsers(dest="rubric_command", metavar="ACTION")

    p_list = sub.add_parser(
        "list",
        help="list the rubrics that names resolve to",
        description="List every rubric name with its source (project or packaged), "
        "its description, and whether a project rubric shadows a packaged one. " + _RESOLUTION,
    )
    p_list.add_argument("--json", action="store_true", help="print JSON for machines")
    p_list.set_defaults(func=_list)

    p_show = sub.add_parser(
        "show",
        help="print a resolved rubric exactly as reviewers receive it",
        description="Resolve a rubric (extends flattened, combinations merged) and print it. "
        "The Markdown form is byte for byte what reviewers receive in their assignment. "
        + _RESOLUTION,
    )
    p_show.add_argument("rubric", metavar="NAME[+NAME...]", help="a rubric name, path, or a+b")
    p_show.add_argument(
        "--format",
        choices=("markdown", "json"),
        default="markdown",
        help='markdown (default) or json: {"name", "criteria": [{"id", "name", "pass", '
        '"fail_signals"}]}',
    )
    p_show.add_argument("--json", action="store_true", help="same as --format json")
    p_show.set_defaults(func=_show)

    p_lint = sub.add_parser(
        "lint",
        help="check a rubric file against the rules",
        description="Check a rubric file: every criterion needs a kebab-case id (unique, "
        "also across extends), a name, a non-empty objective pass condition (not only "
        "vague words such as 'good' or 'appropriate') and at least one fail signal; "
        "extends must resolve without cycles; unknown keys are warnings. "
        "Exit 0 when clean (warnings allowed), 1 with errors, 2 when the file cannot be read.",
    )
    p_lint.add_argument(
        "file", metavar="FILE", help="the rubric file ('-' for stdin; a rubric name also works)"
    )
    p_lint.add_argument("--json", action="store_true", help="print JSON for machines")
    p_lint.set_defaults(func=_lint)

    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _search_dirs() -> list[str]:
    from santa_method.state.paths import project_rubrics_dir

    return [str(project_rubrics_dir())]


def _list(args: argparse.Namespace) -> int:
    from santa_method.core.rubric import list_rubrics

    infos = list_rubrics(_search_dirs())
    if args.json:
        from santa_method.cli._io import print_json

        print_json([info.to_json() for info in infos])
        return 0
    width = max((len(i.name) for i in infos), default=4)
    for info in infos:
        source = f"{info.source}, shadows packaged" if info.shadows else info.source
        text = f"INVALID: {info.error}" if info.error else info.description
        echo(f"{info.name:<{width}}  [{source}]  {text}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from santa_method.core.rubric import load_rubric, render_markdown

    rubric = load_rubric(args.rubric, _search_dirs())
    assert rubric is not None  # a name was given
    if args.json or args.format == "json":
        from santa_method.cli._io import print_json

        print_json(rubric.to_json())
    else:
        from santa_method.cli._io import say

        say(render_markdown(rubric))
    return 0


def _lint(args: argparse.Namespace) -> int:
    from santa_method.core.rubric import lint_report, names_a_file

    target: str | Path
    if args.file == "-":
        from santa_method.cli._io import read_text
        from santa_method.core.files import MAX_RUBRIC_BYTES

        target = read_text("-", "rubric", MAX_RUBRIC_BYTES)
        if "\n" not in target:
            target += "\n"  # one-line YAML must not be taken for a path
    elif names_a_file(args.file, _search_dirs()):  # the rule --rubric follows
        target = Path(args.file)
    else:
        target = _named_file(args.file)
    report = lint_report(target, _search_dirs())
    if args.json:
        from santa_method.cli._io import print_json

        out = report.to_json()
        if args.file == "-":
            out["file"] = "-"
        print_json(out)
    else:
        name = "-" if args.file == "-" else str(target)
        for error in report.errors:
            echo(f"{name}: error: {error}")
        for warning in report.warnings:
            echo(f"{name}: warning: {warning}")
        if report.ok:
            echo(f"{name}: ok ({report.criteria} criteria)")
    return 0 if report.ok else 1


def _named_file(name: str) -> Path:
    """`santa rubric lint code`: lint the file the name resolves to."""
    from santa_method.core.errors import InputError
    from santa_method.core.rubric import list_rubrics

    for info in list_rubrics(_search_dirs()):
        if info.name == name:
            return info.path
    from santa_method.core.files import MAX_RUBRIC_BYTES, check_file
    from santa_method.core.rubric import SUFFIXES

    for folder in _search_dirs():  # there, but not a file: say what it is
        for suffix in SUFFIXES:
            if os.path.lexists(candidate := os.path.join(folder, name + suffix)):
                check_file(candidate, "rubric", MAX_RUBRIC_BYTES)
    raise InputError(f"cannot read rubric '{name}': no such file or rubric name")
