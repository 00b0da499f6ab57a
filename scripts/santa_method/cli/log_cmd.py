"""`santa log EVENT --run ID`: record fix, ship, escalate, escape, waive, generate."""

from __future__ import annotations

import argparse
import json
from typing import Any

from santa_method.cli._io import echo, print_json
from santa_method.core.errors import InputError

EVENTS = ("fix", "ship", "escalate", "escape", "waive", "generate")
FREE_FORM = ("generate", "escape")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "log",
        help="record an event of a run (fix, ship, escalate, escape, waive, generate)",
        description="Append an event to the iteration log. 'ship' is refused unless the run's last "
        "gate said NICE and the target is still what was reviewed; 'fix' unless the last gate said "
        "fix; 'escape' (a defect found after shipping, --data with description) only for a run that "
        "shipped; 'waive' records a person overriding a flag (--data with key and reason; it never "
        "changes a verdict); 'generate' records what generating the output cost (tokens, cost_usd); "
        "'escalate' hands the run to a person and writes its report. 'fix' reads the fixer's "
        'report (--data \'{"notes": "..."}\', else the reply the stop hook kept): a fix that '
        "changed nothing is refused unless every flag was answered 'not an issue', and any "
        "'needs input' line escalates the run (exit 1) and prints the questions instead.",
    )
    p.add_argument("event", choices=EVENTS, metavar="EVENT", help=", ".join(EVENTS))
    p.add_argument("--run", required=True, metavar="ID", help="the run")
    p.add_argument(
        "--iteration",
        metavar="N",
        help="the round (default: the current one; free-form for generate and escape)",
    )
    p.add_argument(
        "--data",
        metavar="JSON",
        help='the event\'s data as a JSON object, e.g. \'{"changed": "..."}\'',
    )
    p.add_argument(
        "--log",
        metavar="PATH",
        help="the iteration log (default: the run's own; SANTA_LOG, else .santa/log.jsonl)",
    )
    p.add_argument("--json", action="store_true", help="print the written record as JSON")
    p.set_defaults(func=run)


def _iteration(value: str | None, event: str) -> object:
    if value is None:
        return None
    if event in FREE_FORM:  # a round number, or any label a person chooses
        try:
            return int(value)
        except ValueError:
            return value
    from santa_method.core.numbers import ROUND

    return ROUND.parse(value, f"--iteration (the round, for {event})")


def _no_constant(name: str) -> object:
    """NaN and Infinity are not JSON (Python reads them by default): a cost of
    NaN would poison every sum `santa metrics` makes."""
    raise InputError(f"--data holds {name}, which is not a number JSON allows")


def run(args: argparse.Namespace) -> int:
    from santa_method.core.numbers import check_usage
    from santa_method.state.events import log_event

    data = {}
    if args.data:
        try:
            data = json.loads(args.data, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise InputError(f"--data is not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise InputError("--data is nested too deeply to be an event's data") from None
        if not isinstance(data, dict):
            raise InputError("--data must be a JSON object")
        check_usage(data, "--data")
    record = log_event(
        args.run,
        args.event,
        iteration=_iteration(args.iteration, args.event),
        data=data,
        log_path=args.log,
    )
    if args.event == "fix" and record.get("event") == "escalate":
        # The fixer asked instead of guessing: no fix, the run is escalated.
        if args.json:
            print_json(record)
        else:
            echo(needs_input_text(args.run, record))
        return 1
    if args.json:
        print_json(record)
    else:
        echo(f"logged {args.event} for run {args.run}")
    return 0


def needs_input_text(run_id: str, record: dict[str, Any]) -> str:
    """What the main agent shows the user when the fixer needs input."""
    from santa_method.state.store import run_dir

    lines = [
        f"run {run_id} escalated (needs-input): the fixer needs facts the spec does not give, "
        "so no fix was logged and nothing ships.",
        "Ask the user:",
    ]
    lines += [f"  {q.get('n')}. {q.get('question')}" for q in record.get("questions") or []]
    if record.get("restored"):
        lines.append("The target was put back to the text the reviewers saw.")
    lines.append(
        "With the answers, add the facts to the spec and start a new run. "
        f"Report: {run_dir(run_id) / 'report.md'}"
    )
    return "\n".join(lines)
