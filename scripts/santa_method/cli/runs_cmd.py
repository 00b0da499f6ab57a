"""`santa runs`: find a run again (e.g. to file an escape weeks later)."""

from __future__ import annotations

import argparse
import sys

from santa_method.cli._io import print_json
from santa_method.core.errors import InputError

_BRIEF_FIELDS = ("verdict", "next", "label", "valid", "reason", "target", "description", "key")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "runs",
        help="list runs, or show one run's history ('santa runs show ID')",
        description="List the runs recorded in the iteration log (id, started, rounds, outcome, "
        "target), or with 'show ID' print one run's history, event by event. Outcomes: shipped "
        "(ship logged), nice (NICE gate, ship not logged yet), escalated, open. Reads the log only, "
        "so runs whose .santa/runs/ folder is gone are still listed.",
    )
    p.add_argument(
        "action", nargs="?", choices=("list", "show"), default="list", help="list (default) or show"
    )
    p.add_argument("run_id", nargs="?", metavar="ID", help="the run to show")
    p.add_argument(
        "--target", metavar="FILE", help="only runs of this target (file path or diff:REV)"
    )
    p.add_argument(
        "--log",
        metavar="PATH",
        help="the iteration log (default: SANTA_LOG, else .santa/log.jsonl)",
    )
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=run)


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        print(f"santa: warning: {w}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from santa_method.state.config import resolve_log_path
    from santa_method.state.history import run_history, summarise_runs

    path = resolve_log_path(args.log)
    if args.action == "show":
        if not args.run_id:
            raise InputError("say which run: santa runs show ID")
        if args.target:
            raise InputError("--target filters the list; it does not go with 'show'")
        events, warnings = run_history(path, args.run_id)
        _warn(warnings)
        if not events:
            raise InputError(f"the log {path} has no run '{args.run_id}'")
        if args.json:
            print_json(events)
            return 0
        for e in events:
            brief = ", ".join(f"{k}={e[k]}" for k in _BRIEF_FIELDS if k in e)
            print(f"{e.get('ts', '')}  round {e.get('iteration')}  {e['event']:<9} {brief}")
        return 0
    if args.run_id:
        raise InputError("a run id goes with 'show': santa runs show ID")
    rows, warnings = summarise_runs(path, target=args.target)
    _warn(warnings)
    if args.json:
        print_json(rows)
    elif not rows:
        print("no runs recorded")
    else:
        for r in rows:
            print(
                f"{r['run_id']}  {r['started'][:19]}  rounds {r['rounds']}  "
                f"{r['outcome']:<9} {r['target']}"
            )
    return 0
