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
    p.add_argument(
        "--rubric",
        metavar="R",
        help="rubric name (base, code+regulated) or path (default: the config's rubric, else base)",
    )
    p.add_argument("--against", metavar="FILE", help="the output under review, to check quotes")
    p.add_argument("--canary", metavar="TOKEN", help="the canary the review must echo")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def load_rubric_arg(value: str | None) -> Rubric:
    """The rubric a review is judged by: `--rubric`, else the project's
    (`rubric:` in `.santa/config.yaml`), else `base`, for `santa validate` and
    `santa gate` alike. Judging against none would let a PASS review of
    invented criteria count: validate would call it valid, and two of them
    would be NICE.

    The common case (no flag, no config, no project rubric named `base`) is
    answered without reading YAML (core/base_rubric.py): PyYAML alone would
    double a cold `santa validate`.
    """
    import os

    from santa_method.state.paths import santa_home

    if value is None:
        home = santa_home()
        if not os.path.lexists(os.path.join(home, "config.yaml")):
            shadowed = any(
                os.path.lexists(os.path.join(home, "rubrics", f"base{suffix}"))
                for suffix in (".yaml", ".yml")
            )
            if not shadowed:
                from santa_method.core.base_rubric import base

                return base()
            value = "base"
        else:
            from santa_method.state.config import load_config

            value = load_config().rubric
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
