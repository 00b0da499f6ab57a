"""`santa validate`: is one reviewer reply a review the gate may count?"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from santa_method.cli._io import print_json, read_text, say
from santa_method.core.files import MAX_REVIEW_BYTES

if TYPE_CHECKING:
    from santa_method.core.types import Rubric


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check one reviewer reply against the review contract",
        description=(
            "Check one reviewer reply (raw text: prose and code fences are fine) against the "
            "review contract: schema, consistency, rubric coverage, canary and evidence. "
            "Exit 0 for a valid review (PASS or FAIL), 1 for an invalid one, 2 for bad input."
        ),
    )
    p.add_argument("review", metavar="REVIEW", help="the reply file ('-' for stdin)")
    p.add_argument("--rubric", metavar="R", help="rubric name (base, code+regulated) or path")
    p.add_argument("--against", metavar="FILE", help="the output under review, to check quotes")
    p.add_argument("--canary", metavar="TOKEN", help="the canary the review must echo")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def load_rubric_arg(value: str | None) -> Rubric | None:
    if value is None:
        return None
    from santa_method.core.rubric import load_rubric
    from santa_method.state.paths import project_rubrics_dir

    return load_rubric(value, search_dirs=(project_rubrics_dir(),))


def run(args: argparse.Namespace) -> int:
    from santa_method.cli._render import validation_text
    from santa_method.core.review import validate_reply

    reply = read_text(args.review, "review", MAX_REVIEW_BYTES)
    output = read_text(args.against, "output") if args.against else None
    rubric = load_rubric_arg(args.rubric)
    result = validate_reply(reply, rubric=rubric, output=output, canary=args.canary)
    if not result.valid:
        from santa_method.core.extract import extract_verdict_object

        if extract_verdict_object(reply).too_deep:  # no reply to judge: a file to name
            from santa_method.core.files import too_deep

            raise too_deep("review", args.review)
    if args.json:
        print_json(result.to_json())
    else:
        say(validation_text(result) + "\n")
    return 0 if result.valid else 1
