"""`santa runs`: find a run again (e.g. to file an escape weeks later)."""

from __future__ import annotations

import argparse
import sys

from santa_method.cli._io import print_json
from santa_method.core.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "runs",
        help="list runs, or show one run's history ('santa runs show ID')",
        description="List the runs recorded in the iteration log (id, target, started, rounds, outcome), "
        "or with 'show ID' print one run's history, event by event.",
    )
    p.add_argument("action", nargs="?", choices=("list", "show"), default="list", help="list (default) or show")
    p.add_argument("run_id", nargs="?", metavar="ID", help="the run to show")
    p.add_argument("--target", metavar="FILE", help="only runs of this target")
    p.add_argument("--log", metavar="PATH", help="the iteration log (default .santa/log.jsonl)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from santa_method.state.history import run_history, summarise_runs
    from santa_method.state.paths import default_log_path

    path = args.log or str(default_log_path())
    if args.action == "show":
        if not args.run_id:
            raise InputError("say which run: santa runs show ID")
        events, warnings = run_history(path, args.run_id)
        for w in warnings:
            print(f"santa: warning: {w}", file=sys.stderr)
        if not events:
            raise InputError(f"the log {path} has no run '{args.run_id}'")
        if args.json:
            print_json(events)
        else:
            for e in events:
                data = {k: v for k, v in e.items() if k not in ("ts", "run_id", "event", "iteration")}
                brief = ", ".join(f"{k}={v}" for k, v in data.items() if k in ("verdict", "next", "label", "valid", "reason", "target", "description"))
                print(f"{e.get('ts', '')}  round {e.get('iteration')}  {e['event']:<9} {brief}")
        return 0
    if args.run_id:
        raise InputError("a run id goes with 'show': santa runs show ID")
    rows, warnings = summarise_runs(path, target=args.target)
    for w in warnings:
        print(f"santa: warning: {w}", file=sys.stderr)
    if args.json:
        print_json(rows)
    elif not rows:
        print("no runs recorded")
    else:
        for r in rows:
            print(f"{r['run_id']}  {r['started'][:19]}  rounds {r['rounds']}  {r['outcome']:<9} {r['target']}")
    return 0
