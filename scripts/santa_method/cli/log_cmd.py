"""`santa log EVENT --run ID`: record fix, ship, escalate, escape, waive, generate."""

from __future__ import annotations

import argparse
import json

from santa_method.cli._io import print_json
from santa_method.core.errors import InputError

EVENTS = ("fix", "ship", "escalate", "escape", "waive", "generate")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "log",
        help="record an event of a run (fix, ship, escalate, escape, waive, generate)",
        description="Append an event to the iteration log. 'ship' is refused unless the run's last gate "
        "said NICE; 'fix' unless it said fix; 'escape' (a defect found after shipping) only for a run "
        "that shipped; 'waive' records a person overriding a flag (--data with key and reason); "
        "'generate' records what generating the output cost (tokens, cost_usd).",
    )
    p.add_argument("event", choices=EVENTS, metavar="EVENT", help=", ".join(EVENTS))
    p.add_argument("--run", required=True, metavar="ID", help="the run")
    p.add_argument("--iteration", metavar="N", help="the round (free-form for generate and escape)")
    p.add_argument("--data", metavar="JSON", help="the event's data as a JSON object")
    p.add_argument("--json", action="store_true", help="print the written record as JSON")
    p.set_defaults(func=run)


def _iteration(value: str | None, event: str) -> object:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        if event in ("generate", "escape"):
            return value
        raise InputError(f"--iteration must be a round number for {event}") from None


def run(args: argparse.Namespace) -> int:
    from santa_method.state.runs import log_event

    data = {}
    if args.data:
        try:
            data = json.loads(args.data)
        except json.JSONDecodeError as exc:
            raise InputError(f"--data is not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise InputError("--data must be a JSON object")
    record = log_event(args.run, args.event, iteration=_iteration(args.iteration, args.event), data=data)
    if args.json:
        print_json(record)
    else:
        print(f"logged {args.event} for run {args.run}")
    return 0
