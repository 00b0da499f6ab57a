"""`santa gate`: the verdict of a round, from review files or from a run's store."""

from __future__ import annotations

import argparse
from pathlib import Path

from santa_method.cli._io import number_arg, print_json, read_text, say, split_labels
from santa_method.core import numbers
from santa_method.core.errors import InputError
from santa_method.core.files import MAX_REVIEW_BYTES, check_file


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "gate",
        help="merge reviews into one verdict: NICE (ship) or NAUGHTY",
        description=(
            "Validate every review, merge their flags and decide the round: NICE (exit 0) "
            "only if at least two reviews are given and every one is valid and PASS; "
            "otherwise NAUGHTY (exit 1) with the next step (rereview, fix or escalate). "
            "With --run inside Claude Code, while a reviewer started for the round may still "
            "reply, it does not judge: 'next: wait' (exit 1) names the reviewers it waits for. "
            "With --run, the rubric, output and canary come from the run, and reviews from "
            "the run's store (or from files, for runs whose source is 'files')."
        ),
    )
    p.add_argument("reviews", nargs="*", metavar="REVIEW", help="reply files ('-' for stdin)")
    p.add_argument("--run", metavar="ID", help="gate a round of this run")
    p.add_argument(
        "--iteration",
        type=number_arg(numbers.ROUND),
        metavar="N",
        help="the round to gate (default: current)",
    )
    p.add_argument(
        "--rubric",
        metavar="R",
        help="rubric name or path (files form; default: the config's rubric, else base)",
    )
    p.add_argument("--against", metavar="FILE", help="the output under review (files form)")
    p.add_argument("--canary", metavar="TOKEN", help="the canary every review must echo")
    p.add_argument("--labels", metavar="B,C,...", help="reviewer labels (default B, C, D, ...)")
    p.add_argument("--log", metavar="PATH", help="the iteration log (with --run)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def run(args: argparse.Namespace) -> int:
    from santa_method.cli._render import gate_text, wait_text

    if args.run:
        from santa_method.claude_code.provenance import CHECKS
        from santa_method.state.gating import gate_run

        ignored = [
            flag
            for flag, value in (
                ("--rubric", args.rubric),
                ("--against", args.against),
                ("--canary", args.canary),
            )
            if value is not None
        ]
        if ignored:
            raise InputError(
                f"{', '.join(ignored)} cannot be given with --run: the run fixed its rubric, "
                "output and canary when it opened"
            )

        from santa_method.state.waiting import StillReviewing

        try:
            result = gate_run(
                args.run,
                checks=CHECKS,
                iteration=args.iteration,
                review_files=args.reviews,
                labels=split_labels(args.labels),
                log_path=args.log,
            )
        except StillReviewing as waiting:
            # Not a verdict: reviewers started for the round may still reply.
            if args.json:
                print_json(waiting.to_json())
            else:
                say(wait_text(waiting.to_json()) + "\n")
            return 1
    else:
        from santa_method.cli.validate_cmd import load_rubric_arg
        from santa_method.core.gate import gate_replies

        if args.iteration is not None:
            raise InputError("--iteration needs --run")
        if not args.reviews:
            raise InputError("give the review files to gate (at least two), or --run ID")
        labels = split_labels(args.labels)
        if labels is not None and len(labels) != len(args.reviews):
            raise InputError(
                f"--labels names {_count(len(labels), 'reviewer')} "
                f"for {_count(len(args.reviews), 'review')}"
            )
        for review in args.reviews:
            if review != "-":  # refused up front: a loop cannot be resolved, a FIFO blocks
                check_file(review, "review", MAX_REVIEW_BYTES)
        if len({str(Path(r).resolve()) for r in args.reviews if r != "-"}) < sum(
            1 for r in args.reviews if r != "-"
        ):
            raise InputError("the same review file is given twice; each reviewer needs its own")
        if sum(1 for r in args.reviews if r == "-") > 1:
            raise InputError("only one review can come from stdin")
        output = read_text(args.against, "output") if args.against else None
        rubric = load_rubric_arg(args.rubric)  # the flag, else the config's, else base
        replies = [read_text(path, "review", MAX_REVIEW_BYTES) for path in args.reviews]
        if len({r.strip() for r in replies}) < len(replies):
            raise InputError(
                "two of the review files are identical; each reviewer needs its own review"
            )
        result = gate_replies(replies, labels, rubric=rubric, output=output, canary=args.canary)
        # One file alone can never be NICE: the second reviewer's slot stays empty.
    if args.json:
        print_json(result.to_json())
    else:
        say(gate_text(result, quotes_checked=bool(args.run) or args.against is not None) + "\n")
    return 0 if result.verdict == "NICE" else 1
