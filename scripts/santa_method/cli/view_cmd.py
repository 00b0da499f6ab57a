"""`santa view`: write the project's runs, batches and metrics as one HTML page."""

from __future__ import annotations

import argparse

from santa_method.cli._io import count, echo


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "view",
        help="write one HTML page of runs, batches and metrics to look at",
        description=(
            "Write one self-contained HTML page (default .santa/view/index.html, git-ignored) "
            "from the iteration log and the run and batch folders: the metrics as charts, a "
            "sortable, filterable table of runs and batches, and a page for each run (the "
            "reviewers' checks side by side, the merged problems with their quotes marked in "
            "the output, the fixer's report, what changed between rounds, the escalation) and "
            "each batch (samples, strata, failures, screens, guarantee). It works offline from "
            "file:// and loads nothing from anywhere; secrets are redacted. Runs whose folder "
            "is gone are shown from the log alone. Exit 0, or 2 for a bad date or path."
        ),
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the page: a regular file is replaced atomically (a temporary "
        "file renamed into place); a FIFO, a device, /dev/stdout or - is written to as a stream",
    )
    p.add_argument(
        "--since",
        metavar="DATE",
        help="only runs and batches started at or after DATE (YYYY-MM-DD or ISO-8601; UTC)",
    )
    p.add_argument("--open", action="store_true", help="open the page in a browser afterwards")
    p.add_argument(
        "--log",
        metavar="PATH",
        help="the log to read (default: $SANTA_LOG, else the config's log, else .santa/log.jsonl)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from santa_method.cli._io import out_file, require_named_log
    from santa_method.cli.metrics_cmd import parse_since
    from santa_method.core.errors import InputError
    from santa_method.state.atomic import out_kind
    from santa_method.state.config import resolve_log_path
    from santa_method.state.paths import santa_dir
    from santa_method.view import write_view

    since = parse_since(args.since)
    out = out_file(args.out) if args.out else None
    to_file = out is None or out_kind(out) == "file"
    if args.open and not to_file:
        raise InputError(f"--open needs a page in a file, and --out {args.out} is a stream")
    log_path = resolve_log_path(args.log)
    require_named_log(args.log, log_path)  # a typo is no empty page
    try:
        written = write_view(
            log_path=log_path,
            home=santa_dir(),
            out=out,
            since=since,
            since_text=args.since,
        )
    except OSError as exc:
        raise InputError(f"cannot write the page: {exc.strerror or exc}") from None
    summary = (
        f"wrote {written.path} ({written.bytes / 1_000_000:.1f} MB): "
        f"{count(written.runs, 'run')}, {count(written.batches, 'batch')}"
    )
    if not to_file:  # stdout may be the page itself: the summary goes beside it
        import sys

        echo(summary, sys.stderr)
        return 0
    echo(summary)
    echo(f"open {written.path.resolve().as_uri()}")
    if args.open:
        import webbrowser

        webbrowser.open(written.path.resolve().as_uri())
    return 0
