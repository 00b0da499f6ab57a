"""`santa runs`: find a run again (e.g. to file an escape weeks later)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from santa_method.cli._io import echo, print_json, require_named_log
from santa_method.core.errors import InputError

_BRIEF_FIELDS = ("verdict", "next", "label", "valid", "reason", "target", "description", "key")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "runs",
        help="list runs, or show one run's history ('santa runs show ID')",
        description="List the runs recorded in the iteration log (id, started, rounds, outcome, "
        "target), or with 'show ID' print one run's history, event by event. Outcomes: shipped "
        "(ship logged), nice (NICE gate, ship not logged yet), escalated, reported (a check with "
        "--max-fixes 0 that found problems), open, interrupted (a "
        "headless run whose process is gone: resume it with 'santa run --resume ID' or close it "
        "with 'santa log escalate --run ID'). Reads the log (and, for open runs, their locks and "
        "folders), so runs whose .santa/runs/ folder is gone are still listed.",
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
        echo(f"santa: warning: {w}", file=sys.stderr)


def _print_open_round(run_id: str, events: list[dict[str, Any]]) -> None:
    """The open round's instruction, again: a reviewer refused for a changed
    prompt is spawned again with exactly this text. A headless run whose
    process is gone has no reviewer waiting: what to do with it instead."""
    from santa_method.core.errors import SantaError
    from santa_method.state.history import outcome
    from santa_method.state.rounds import describe
    from santa_method.state.standing import annotate
    from santa_method.state.store import StateUnreadable, load_state
    from santa_method.state.target import target_name

    try:
        info = describe(run_id)
        state = load_state(run_id)
    except StateUnreadable as exc:
        text = f"run {run_id}'s state cannot be read ({exc.reason})"
        if outcome(events) in ("open", "nice"):
            text += f": close it with 'santa log escalate --run {run_id}'"
        echo(text)
        return
    except (SantaError, OSError, KeyError, ValueError):
        return  # the run's folder is gone or unreadable: the log is all there is
    row = {
        "run_id": run_id,
        "outcome": state.status,
        "source": state.source,
        "target": target_name(state.target),
    }
    if (standing := annotate(row))["outcome"] == "interrupted":
        # No reviewer is waiting for an instruction: its process is gone.
        echo(_interrupted_line(standing))
        return
    if state.status != "open":  # no reviewer is waiting: say how it ended instead
        echo(_closed_line(run_id, state))
        return
    if info["instruction"]:
        echo(f"round {info['round']} is open; give each reviewer exactly this instruction:")
        echo(info["instruction"])
        models = info.get("models") or {}
        if any(models.values()):
            echo("on each open slot's model (the Agent call's `model`; none: leave it out):")
            for label, model in models.items():
                echo(f"  {label}: {model or 'none'}")


def run(args: argparse.Namespace) -> int:
    from santa_method.state.config import resolve_log_path
    from santa_method.state.history import run_history, summarise_runs
    from santa_method.state.standing import annotate

    path = resolve_log_path(args.log)
    require_named_log(args.log, path)
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
            echo(f"{e.get('ts', '')}  round {e.get('iteration')}  {e['event']:<9} {brief}")
        _print_open_round(args.run_id, events)
        return 0
    if args.run_id:
        raise InputError("a run id goes with 'show': santa runs show ID")
    rows, warnings = summarise_runs(path, target=args.target)
    rows = [annotate(r) for r in rows]
    _warn(warnings)
    if args.json:
        print_json(rows)
    elif not rows:
        echo("no runs recorded")
    else:
        for r in rows:
            echo(
                f"{r['run_id']}  {r['started'][:19]}  rounds {r['rounds']}  "
                f"{r['outcome']:<11} {r['target']}"
            )
        for r in rows:
            if r["outcome"] == "interrupted":
                echo(_interrupted_line(r))
    return 0


def _closed_line(run_id: str, state: Any) -> str:
    """How a shipped or escalated run ended: nothing is handed out for it any more."""
    if state.status == "escalated":
        esc = state.escalation
        why = f" in round {esc.round}: {'; '.join(esc.reasons)}" if esc is not None else ""
        return (
            f"run {run_id} is closed: escalated{why}; no round is open "
            f"(the report: santa report {run_id})"
        )
    if state.status == "reported":
        return (
            f"run {run_id} is closed: a check only, its problems reported after round "
            f"{state.rounds[-1].round} (the report: santa report {run_id})"
        )
    return f"run {run_id} is closed: {state.status} after round {state.rounds[-1].round}"


def _interrupted_line(row: dict[str, Any]) -> str:
    """What a person does with a run whose process is gone."""
    text = f"run {row['run_id']} was interrupted (its process is gone)"
    if row.get("unreviewed_fix"):
        text += (
            f"; {row['target']} holds a fix no round reviewed yet (kept in {row['unreviewed_fix']})"
        )
    if row.get("resume"):
        text += f": resume it with '{row['resume']}', or close it with '{row['close']}'"
    elif row.get("again"):
        text += (
            f": a change is reviewed again, not resumed: run '{row['again']}' (with its "
            f"options), or close it with '{row['close']}'"
        )
    elif row.get("unreadable"):
        text += (
            f" and its state cannot be read ({row['unreadable']}), so there is nothing to resume: "
            f"close it with '{row['close']}'"
        )
    elif row.get("no_state"):
        text += (
            " before its state was first saved, so there is nothing to resume: "
            f"close it with '{row['close']}'"
        )
    else:
        text += f" and its run folder is gone: close it with '{row['close']}'"
    return text
