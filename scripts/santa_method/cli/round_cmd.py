"""`santa round start`: open a run's round and write the reviewers' assignment."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from santa_method.cli._io import print_json, read_text
from santa_method.core.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "round",
        help="open a review round (a new run, the next round, or a re-review)",
        description="Open a review round. 'santa round start' with a target and a spec opens a new run "
        "and its round 1; with --run it opens what the last gate asked for: the next round after a "
        "logged fix, or the same round again for its failed or missing reviewers.",
    )
    sub = p.add_subparsers(dest="round_action", metavar="ACTION", required=True)
    s = sub.add_parser(
        "start",
        help="open a round and print the reviewer instruction",
        description="Run the configured pre-check, write the round's assignment file (spec, rubric, "
        "the fenced output, a canary line) under .santa/runs/ID/round-N/, and print the run id, round, "
        "assignment path and the exact instruction to give each reviewer. Refuses (exit 1) a round past "
        "the cap, a round on a closed run, and any round the last gate did not ask for. Defaults come "
        "from .santa/config.yaml.",
    )
    target = s.add_mutually_exclusive_group()
    target.add_argument("--against", metavar="FILE", help="the output under review")
    target.add_argument("--against-diff", metavar="REV", help="review the working tree's diff against REV")
    spec = s.add_mutually_exclusive_group()
    spec.add_argument("--spec", metavar="FILE", help="the task spec ('-' for stdin)")
    spec.add_argument("--spec-text", metavar="TEXT", help="the task spec as text")
    s.add_argument("--rubric", metavar="R", help="rubric name or path (default: config, else base)")
    s.add_argument("--reviewers", type=int, metavar="N", help="independent reviewers (default 2)")
    s.add_argument("--max-fixes", type=int, metavar="N", help="fix rounds allowed (default 3)")
    s.add_argument(
        "--source",
        choices=("hook", "files"),
        help="where reviews come from: the Claude Code hook's store (default inside Claude Code) or files",
    )
    s.add_argument("--pre-check", metavar="CMD", help="deterministic check that must pass first")
    s.add_argument("--run", metavar="ID", help="continue this run instead of opening a new one")
    s.add_argument("--log", metavar="PATH", help="the iteration log (default .santa/log.jsonl)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from santa_method.state import runs

    if args.run:
        given = [
            flag
            for flag, value in (
                ("--against", args.against),
                ("--against-diff", args.against_diff),
                ("--spec", args.spec),
                ("--spec-text", args.spec_text),
                ("--rubric", args.rubric),
                ("--reviewers", args.reviewers),
                ("--max-fixes", args.max_fixes),
                ("--source", args.source),
                ("--pre-check", args.pre_check),
            )
            if value is not None
        ]
        if given:
            raise InputError(f"{', '.join(given)} cannot change an existing run; drop them or omit --run")
        opened = runs.next_round(args.run)
    else:
        opened = _start(args)
    if args.json:
        print_json(opened.to_json())
    else:
        kind = "re-review of" if opened.rereview else "opened"
        print(f"run {opened.run_id}: {kind} round {opened.round}")
        print(f"assignment: {opened.assignment}")
        print(f"reviewers to spawn now: {len(opened.open_slots)} ({', '.join(opened.open_slots)})")
        print("give each reviewer exactly this instruction:")
        print(opened.instruction)
    return 0


def _start(args: argparse.Namespace):  # noqa: ANN202 - RoundOpened, imported lazily
    from santa_method.core.rubric import load_rubric, render_markdown, rubric_hash
    from santa_method.state import runs
    from santa_method.state.config import load_config
    from santa_method.state.paths import project_root, project_rubrics_dir

    if not (args.against or args.against_diff):
        raise InputError("say what to review: --against FILE or --against-diff REV")
    if args.spec is None and args.spec_text is None:
        raise InputError("say what the output must do: --spec FILE or --spec-text TEXT")
    root = project_root()
    config = load_config(root)
    spec = read_text(args.spec, "spec") if args.spec is not None else args.spec_text
    if args.against:
        path = Path(args.against).resolve()
        if not path.is_file():
            raise InputError(f"cannot read output '{args.against}': no such file")
        target = {"kind": "file", "path": str(path)}
    else:
        target = {"kind": "diff", "rev": args.against_diff, "cwd": str(root)}
    rubric_name = args.rubric or config.rubric
    rubric = load_rubric(rubric_name, search_dirs=(project_rubrics_dir(),))
    source = args.source or ("hook" if os.environ.get("CLAUDECODE") else "files")
    log_path = args.log or os.environ.get("SANTA_LOG") or (str(config.log) if config.log else None)
    return runs.start_run(
        target=target,
        spec=spec,
        rubric=rubric,
        rubric_name=rubric_name,
        rubric_markdown=render_markdown(rubric),
        rubric_hash=rubric_hash(rubric),
        reviewers=args.reviewers if args.reviewers is not None else config.reviewers,
        max_fixes=args.max_fixes if args.max_fixes is not None else config.max_fixes,
        source=source,
        models=config.models,
        budget_usd=config.budget_usd,
        pre_check=args.pre_check if args.pre_check is not None else config.pre_check,
        log_path=log_path,
        cwd=str(root),
    )
