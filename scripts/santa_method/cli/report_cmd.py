"""`santa report RUN`: the escalation report of a run."""

from __future__ import annotations

import argparse

from santa_method.cli._io import print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="print a run's report (written automatically on escalation)",
        description="Print a run's report for a person: target, spec, unresolved flags with evidence "
        "and who flagged them, suspected false positives, the history of rounds and fixes, cost. "
        "Secrets are redacted. An escalation writes it to .santa/runs/RUN/report.md by itself.",
    )
    p.add_argument("run_id", metavar="RUN", help="the run id")
    p.add_argument(
        "--format", choices=("markdown", "json"), default="markdown", help="default markdown"
    )
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from santa_method.state.report import build, to_markdown

    report = build(args.run_id)
    if args.json or args.format == "json":
        print_json(report)
    else:
        print(to_markdown(report), end="")
    return 0
