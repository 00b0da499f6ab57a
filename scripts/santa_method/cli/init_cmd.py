"""`santa init [DIR]`: vendor the skill, commands, agents and hooks into DIR/.claude/."""

from __future__ import annotations

import argparse

from santa_method import INSTALL_HINT
from santa_method.cli._io import echo, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "init",
        help="set up the method in a repository without the plugin (writes DIR/.claude/)",
        description="Copy the santa skill, the commands (as /santa-verify, /santa-batch, /santa-metrics, "
        "/santa-escape), the agents (santa-reviewer, santa-fixer) and the hooks into DIR/.claude/, "
        "merging .claude/settings.json without losing what is there, and set merge=union for the "
        "log (.santa/log.jsonl) in .gitattributes so that a team's committed log merges. The hooks "
        "need the helper in "
        f"the repository's environment: {INSTALL_HINT}. Safe to run "
        "again; files you changed are kept unless --force.",
    )
    p.add_argument(
        "directory", nargs="?", default=".", metavar="DIR", help="the repository (default .)"
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite vendored files that were changed"
    )
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from santa_method.claude_code.vendor import init

    result = init(args.directory, force=args.force)
    if args.json:
        print_json(result.to_json())
        return 0
    for rel in result.written:
        echo(f"wrote      {rel}")
    for rel in result.kept:
        echo(f"kept       {rel} (changed locally; --force to replace)")
    echo(f"settings   .claude/settings.json {result.settings}")
    attributes = {
        "kept": "kept (it sets its own merge for .santa/log.jsonl)",
        "created": "created: .santa/log.jsonl merges with merge=union",
        "updated": "updated: .santa/log.jsonl merges with merge=union",
    }
    echo(f"attributes .gitattributes {attributes.get(result.attributes, result.attributes)}")
    if not result.written and not result.kept and result.attributes in ("unchanged", "kept"):
        echo("already up to date")
    echo(
        f"the hooks need the helper in this repository's environment; if it is missing, {INSTALL_HINT}"
    )
    return 0
