"""`santa metrics`: what the iteration log says about verification so far."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "metrics",
        help="first-pass rate, pass@k, rounds, escalations, escapes, agreement, cost",
        description=(
            "Compute the method's metrics from the iteration log: first-pass rate, pass@k, "
            "mean rounds to NICE, escalation and escape rates, issues by criterion, reviewer "
            "agreement (Fleiss' kappa per criterion), recurring failures and cost, each against "
            "the method's targets where it has one. Damaged log lines are skipped with a warning. "
            "Exit 0, or 2 for a bad date, an unreadable log, or a --log that does not exist "
            "(the default log may be absent: no runs yet)."
        ),
    )
    p.add_argument(
        "--log",
        metavar="PATH",
        help="the log to read (default: $SANTA_LOG, else the config's log, else .santa/log.jsonl)",
    )
    p.add_argument(
        "--since",
        metavar="DATE",
        help="only runs started at or after DATE (YYYY-MM-DD, or an ISO-8601 time; UTC if no zone)",
    )
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.set_defaults(func=run)


def parse_since(text: str | None) -> Any:
    """A date or an aware datetime from `--since`; a bad one is an input error (exit 2)."""
    from datetime import UTC, date, datetime

    from santa_method.core.errors import InputError

    if text is None:
        return None
    value = text.strip()
    try:
        return date.fromisoformat(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            f"--since '{text}' is not a date; use YYYY-MM-DD or an ISO-8601 time"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def run(args: argparse.Namespace) -> int:
    from santa_method.cli._io import echo, print_json, require_named_log
    from santa_method.state import log
    from santa_method.state.config import resolve_log_path
    from santa_method.state.metrics import compute

    since = parse_since(args.since)
    path = resolve_log_path(args.log)
    require_named_log(args.log, path)
    read = log.read(path)
    for warning in read.warnings():
        echo(f"santa: warning: {warning}", file=sys.stderr)
    result = compute(read.records, since=since)
    if args.json:
        print_json(
            {
                **result,
                "log": str(path),
                "since": args.since,
                "damaged_lines": [d.to_json() for d in read.damaged],
            }
        )
    else:
        from santa_method.core.redact import redact_json

        # Rich wraps a long cell over lines, which no redaction of the
        # printed text could see whole: the values are redacted first.
        _print_tables(redact_json(result), path, args.since)
    return 0


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f} %"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def _met(flag: bool | None) -> str:
    return {True: "[green]yes[/green]", False: "[red]no[/red]", None: "n/a"}[flag]


def _print_tables(result: dict[str, Any], path: Any, since: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from santa_method.cli._io import count

    console = Console()
    runs = result["runs"]
    scope = f" since {since}" if since else ""
    console.print(
        f"{path}{scope}: {count(runs['total'], 'run')}: {runs['shipped']} shipped, "
        f"{runs['escalated']} escalated, "
        + (f"{runs['reported']} reported (checks only), " if runs["reported"] else "")
        + f"{runs['open']} open",
        highlight=False,
        soft_wrap=True,
    )

    targets = result["targets"]
    table = Table(title="Santa metrics", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    table.add_column("met", justify="center")

    def target_row(name: str, label: str, value: str) -> None:
        t = targets[name]
        table.add_row(label, value, t["target"], _met(t["met"]))

    target_row("first_pass_rate", "first-pass rate", _pct(result["first_pass_rate"]))
    for k, value in result["pass_at_k"].items():
        table.add_row(f"pass@{k}", _pct(value), "", "")
    target_row("mean_rounds_to_nice", "mean rounds to NICE", _num(result["mean_rounds_to_nice"]))
    table.add_row("escalation rate", _pct(result["escalation_rate"]), "", "")
    target_row("escape_rate", "escape rate", _pct(result["escape_rate"]))
    table.add_row("problem agreement (2+ reviewers)", _pct(result["agreement"]["issues"]), "", "")
    cost = result["cost"]
    table.add_row("tokens per run (mean)", _num(cost["mean_tokens_per_run"], 0), "", "")
    table.add_row("cost per run (mean)", _money(cost["mean_cost_usd_per_run"]), "", "")
    multiple = cost["mean_multiple"]
    table.add_row(
        "verification / generation cost",
        "n/a" if multiple is None else f"{multiple:.2f}x",
        "2-3x claimed",
        "",
    )
    console.print(table)

    kappa = result["agreement"]["kappa"]
    taxonomy = result["taxonomy"]
    secondary = result.get("taxonomy_secondary", {})
    recurring = {r["criterion"]: r["runs"] for r in result["recurring"]}
    criteria = list(taxonomy) + sorted(c for c in {*kappa, *secondary} if c not in taxonomy)
    if criteria:
        by = Table(title="By criterion", title_justify="left")
        by.add_column("criterion")
        by.add_column("problems", justify="right")
        by.add_column("also named", justify="right")
        by.add_column("Fleiss' kappa", justify="right")
        by.add_column("recurring (runs)", justify="right")
        for c in criteria:
            by.add_row(
                c,
                str(taxonomy.get(c, 0)),
                str(secondary.get(c, 0)),
                _num(kappa.get(c)),
                str(recurring[c]) if c in recurring else "",
            )
        console.print(by)
    _print_reviewers(console, result)


def _print_reviewers(console: Any, result: dict[str, Any]) -> None:
    """Does each reviewer pay for itself: what it alone raised, and what the fixer made of it."""
    from rich.table import Table

    for key, title in (("by_slot", "reviewer slot"), ("by_model", "reviewer model")):
        rows = (result.get("reviewers") or {}).get(key) or {}
        if not rows:
            continue
        table = Table(title=f"Problems only one reviewer raised, by {title}", title_justify="left")
        for column in (
            title,
            "problems",
            "only it",
            "confirmed (fixed)",
            "withdrawn (not an issue)",
        ):
            table.add_column(column, justify="left" if column == title else "right")
        for name, row in rows.items():
            table.add_row(
                name,
                str(row["problems"]),
                str(row["only"]),
                str(row["confirmed"]),
                str(row["withdrawn"]),
            )
        console.print(table)
    asked = result.get("needs_input") or {}
    if asked.get("questions"):
        from santa_method.core.redact import redact_text

        console.print(f"runs stopped for input: {asked['runs']}", highlight=False)
        for q in asked["questions"]:
            console.print(
                f"  - run {q['run_id']}: {redact_text(str(q['question']))}",
                highlight=False,
                markup=False,
            )
