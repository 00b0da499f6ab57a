"""`santa report ID`: a run's or a batch's report, in the formats CI tools read."""

from __future__ import annotations

import argparse
import sys

from santa_method.core.errors import InputError

FORMATS = ("markdown", "json", "sarif", "junit", "codeclimate")

DESCRIPTION = """\
Print the report of a run or a batch (ID is either; a batch id starts with
b-). Secrets are redacted, as in the log. An escalation also writes the full
report to .santa/runs/RUN/report.md by itself.

Formats:
  markdown     a pull-request comment: verdict and next step first, the
               fixer's questions, the problems as a table; the rest (rounds,
               reasons, suggestions, the full report) in <details>
  json         the report as data: the run's (or batch's) report fields plus
               verdict, next, problems (criteria, quotes, places, fingerprint),
               suggestions, questions
  sarif        SARIF 2.1.0 for GitHub code scanning (upload-sarif)
  junit        JUnit XML: a suite per run (per item for a batch), a case per
               rubric criterion, and a `verdict` case
  codeclimate  Code Climate JSON, GitLab's Code Quality report
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="a run's or a batch's report: markdown, json, sarif, junit, codeclimate",
        description=DESCRIPTION,
        epilog="examples:\n  santa report RUN\n  santa report RUN --format sarif --out santa.sarif\n"
        "  santa report b-20260101-120000-abcdef --format junit --out santa.xml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_id", metavar="ID", help="a run id or a batch id")
    p.add_argument("--format", choices=FORMATS, default="markdown", help="default markdown")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE instead of stdout: a regular file is replaced atomically (a "
        "temporary file renamed into place); a FIFO, a device, /dev/stdout or - is written "
        "to as a stream",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from santa_method.cli._io import out_file
    from santa_method.state import formats
    from santa_method.state.atomic import write_out_text

    fmt = "json" if args.json else args.format
    out = out_file(args.out) if args.out is not None else None
    text = formats.render(formats.build(args.run_id), fmt)
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        write_out_text(out, text)
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    return 0
