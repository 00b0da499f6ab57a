"""`santa round start` / `santa round status`: open a run's round, or say where it stands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from santa_method.cli._io import (
    add_budget_option,
    echo,
    number_arg,
    print_json,
    read_text,
)
from santa_method.core import numbers
from santa_method.core.errors import InputError, RefusedError

_NEW_RUN_ONLY = (
    ("--against", "against"),
    ("--against-diff", "against_diff"),
    ("--spec", "spec"),
    ("--spec-text", "spec_text"),
    ("--rubric", "rubric"),
    ("--reviewers", "reviewers"),
    ("--models", "models"),
    ("--max-fixes", "max_fixes"),
    ("--budget-usd", "budget_usd"),
    ("--source", "source"),
    ("--pre-check", "pre_check"),
    ("--log", "log"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "round",
        help="open a review round (a new run, the next round, or a re-review)",
        description="Open a review round. 'santa round start' with a target and a spec opens a new "
        "run and its round 1; with --run it opens what the last gate asked for: the next round "
        "after a logged fix, or the same round again for its failed or missing reviewers. "
        "'santa round status --run ID' says where a run stands and what to run next.",
    )
    sub = p.add_subparsers(dest="round_action", metavar="ACTION", required=True)
    s = sub.add_parser(
        "start",
        help="open a round and print the reviewer instruction",
        description="Run the configured pre-check, write the round's assignment file (spec, rubric, "
        "the fenced output, a canary line) under .santa/runs/ID/round-N/, and print the run id, "
        "round, assignment path and the exact instruction to give each reviewer. Refuses (exit 1) a "
        "failing pre-check, a round past max_fixes + 1, a round on a shipped or escalated run, a "
        "round before the current one is gated, and any round the last gate did not ask for. "
        "Defaults come from .santa/config.yaml; flags override them.",
    )
    target = s.add_mutually_exclusive_group()
    target.add_argument("--against", metavar="FILE", help="the output under review")
    target.add_argument(
        "--against-diff",
        metavar="REV",
        help="review the working tree's diff against REV (recomputed each round)",
    )
    spec = s.add_mutually_exclusive_group()
    spec.add_argument("--spec", metavar="FILE", help="the task spec ('-' for stdin)")
    spec.add_argument("--spec-text", metavar="TEXT", help="the task spec as text")
    s.add_argument("--rubric", metavar="R", help="rubric name or path (default: config, else base)")
    s.add_argument(
        "--reviewers",
        type=number_arg(numbers.REVIEWERS),
        metavar="N",
        help="independent reviewers, at least 2 (default 2)",
    )
    s.add_argument(
        "--models",
        metavar="M[,M...]",
        help="reviewer models, in reviewer order (inside Claude Code: haiku, sonnet, opus or "
        "fable, each the model of its slot's reviewer)",
    )
    s.add_argument(
        "--max-fixes",
        type=number_arg(numbers.MAX_FIXES),
        metavar="N",
        help="fix rounds allowed (default 3)",
    )
    add_budget_option(s, "escalate once this is spent")
    s.add_argument(
        "--source",
        choices=("hook", "files"),
        help="where reviews come from: the Claude Code hook's store (the default, and the only "
        "choice, inside Claude Code) or review files given to 'santa gate --run'",
    )
    s.add_argument("--pre-check", metavar="CMD", help="deterministic check that must pass first")
    s.add_argument("--run", metavar="ID", help="continue this run instead of opening a new one")
    s.add_argument("--log", metavar="PATH", help="the iteration log (default .santa/log.jsonl)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.set_defaults(func=run)
    st = sub.add_parser(
        "status",
        help="where a run stands and the next command",
        description="Print a run's status, current round, open slots, last gate and the one "
        "command that moves it on (useful after a session lost track of its run).",
    )
    st.add_argument("--run", required=True, metavar="ID", help="the run")
    st.add_argument("--json", action="store_true", help="print as JSON")
    st.set_defaults(func=status)


def run(args: argparse.Namespace) -> int:
    from santa_method.state.rounds import next_round

    if args.run:
        given = [flag for flag, name in _NEW_RUN_ONLY if getattr(args, name) is not None]
        if given:
            raise InputError(
                f"{', '.join(given)} cannot change an existing run; drop them or omit --run"
            )
        opened = next_round(args.run)
        rubric = None
    else:
        rubric = _rubric_choice(args)
        opened = _start(args)
    if args.json:
        data = opened.to_json()
        if rubric is not None:
            data["rubric"] = rubric
        print_json(data)
    else:
        kind = "re-review of" if opened.rereview else "opened"
        echo(f"run {opened.run_id}: {kind} round {opened.round}")
        if rubric is not None:
            echo(f"rubric: {rubric['name']} ({rubric['why']})")
        echo(f"assignment: {opened.assignment}")
        echo(f"reviewers to spawn now: {len(opened.open_slots)} ({', '.join(opened.open_slots)})")
        if any(opened.models.values()):
            echo("each reviewer's model (the Agent call's `model`; none: leave it out):")
            for label in opened.open_slots:
                echo(f"  {label}: {opened.models.get(label) or 'none'}")
        echo("give each reviewer exactly this instruction:")
        echo(opened.instruction)
    return 0


def _rubric_choice(args: argparse.Namespace) -> dict[str, str]:
    """Which rubric a new run uses and why: the flag, the config, or the default.

    Printed so whoever reads the output (a model, above all) sees the choice
    was made, not guessed.
    """
    from santa_method.state.config import config_keys, config_path, load_config

    if args.rubric is not None:
        return {"name": args.rubric, "chosen_by": "flag", "why": "--rubric"}
    configured = load_config()
    path = config_path()
    if "rubric" in config_keys():
        return {"name": configured.rubric, "chosen_by": "config", "why": f"rubric in {path}"}
    return {
        "name": configured.rubric,
        "chosen_by": "default",
        "why": "the default: no --rubric, and no rubric in .santa/config.yaml",
    }


def _batch_screen(args: argparse.Namespace) -> bool:
    """A batch's one-criterion screen rubric is narrower than the config's
    on purpose, and allowed only while that batch screens one of its items
    for it, with its spec."""
    from santa_method.claude_code.batch import screen_rubric_allowed

    if args.spec == "-":  # stdin is read once, by the run itself
        return False
    spec = read_text(args.spec, "spec") if args.spec is not None else args.spec_text
    return screen_rubric_allowed(args.rubric, args.against, spec)


def _refuse_loosening(config: Any, args: argparse.Namespace) -> None:
    """Inside Claude Code the model runs this command: it may tighten the
    project's settings, never loosen them (more fixes, fewer reviewers, a
    different pre-check)."""
    looser = []
    if args.max_fixes is not None and args.max_fixes > config.max_fixes:
        looser.append(f"--max-fixes {args.max_fixes} (config: {config.max_fixes})")
    if args.reviewers is not None and args.reviewers < config.reviewers:
        looser.append(f"--reviewers {args.reviewers} (config: {config.reviewers})")
    # A models list of two or more entries is a reviewer count too (core/reviewers.py).
    named = len(args.models.split(",")) if args.models is not None else 0
    if args.reviewers is None and 2 <= named < config.reviewers:
        looser.append(f"--models names {named} reviewers (config: {config.reviewers})")
    if args.pre_check is not None and config.pre_check and args.pre_check != config.pre_check:
        looser.append("--pre-check (the config names its own)")
    if (
        args.models is not None
        and config.models is not None
        and config.override(models=args.models).models != config.models
    ):
        looser.append("--models (the config names its own)")
    if (
        args.budget_usd is not None
        and config.budget_usd is not None
        and args.budget_usd > config.budget_usd
    ):
        looser.append(f"--budget-usd {args.budget_usd} (config: {config.budget_usd})")
    if args.rubric is not None and args.rubric != config.rubric and not _batch_screen(args):
        from santa_method.core.rubric import load_rubric
        from santa_method.state.paths import project_rubrics_dir

        dirs = (project_rubrics_dir(),)
        wanted = set(load_rubric(config.rubric, search_dirs=dirs).ids)
        given = set(load_rubric(args.rubric, search_dirs=dirs).ids)
        if not wanted <= given:
            looser.append(
                f"--rubric {args.rubric} (it lacks {', '.join(sorted(wanted - given))} "
                f"of the configured {config.rubric})"
            )
    if looser:
        raise RefusedError(
            f"inside Claude Code these flags would loosen .santa/config.yaml: {', '.join(looser)}; "
            "a person changes the config, not the run"
        )


def _start(args: argparse.Namespace) -> Any:
    from santa_method.core.rubric import load_rubric, render_markdown, rubric_hash
    from santa_method.state.config import load_config, resolve_log_path
    from santa_method.state.model.run import Target
    from santa_method.state.paths import project_root, project_rubrics_dir
    from santa_method.state.rounds import start_run
    from santa_method.state.target import check_rev

    if not (args.against or args.against_diff):
        raise InputError("say what to review: --against FILE or --against-diff REV")
    if args.spec is None and args.spec_text is None:
        raise InputError("say what the output must do: --spec FILE or --spec-text TEXT")
    # Any of Claude Code's own variables counts: unsetting one is not enough
    # to switch a run inside Claude Code to review files.
    inside_claude_code = any(
        os.environ.get(name)
        for name in ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT")
    )
    if inside_claude_code and args.source == "files":
        raise RefusedError(
            "inside Claude Code a run takes reviews only from the reviewer hook "
            "(--source hook), so every review is checked against its reviewer's transcript"
        )
    root = project_root()
    configured = load_config()
    if inside_claude_code:
        _refuse_loosening(configured, args)
    config = configured.override(
        rubric=args.rubric,
        reviewers=args.reviewers,
        models=args.models,
        max_fixes=args.max_fixes,
        budget_usd=args.budget_usd,
        pre_check=args.pre_check,
    )
    spec = read_text(args.spec, "spec") if args.spec is not None else args.spec_text
    if args.against:
        read_text(args.against, "output")  # refused up front, like every file a user names
        path = Path(args.against).resolve()
        target = Target(kind="file", path=str(path))
    else:
        check_rev(args.against_diff, str(root))
        target = Target(kind="diff", rev=args.against_diff, cwd=str(root))
    rubric = load_rubric(config.rubric, search_dirs=(project_rubrics_dir(),))
    source = args.source or ("hook" if inside_claude_code else "files")
    slot_models = None
    if source == "hook":
        # Each slot's reviewer runs on its configured model, which the Agent
        # tool must take; with a budget, each needs a list price first.
        from santa_method.claude_code import models
        from santa_method.core.gate import default_labels
        from santa_method.headless.backends.prices import custom_prices
        from santa_method.state.config import config_path

        where = "--models" if args.models is not None else f"models in {config_path()}"
        slot_models = models.slot_models(config, default_labels(config.reviewers), where)
        if config.budget_usd is not None:
            models.require_prices(slot_models, custom_prices(config.prices))
    return start_run(
        target=target,
        spec=spec,
        rubric=rubric,
        rubric_name=config.rubric,
        rubric_markdown=render_markdown(rubric),
        rubric_hash=rubric_hash(rubric),
        reviewers=config.reviewers,
        max_fixes=config.max_fixes,
        source=source,
        models=config.to_json()["models"],
        budget_usd=config.budget_usd,
        pre_check=config.pre_check,
        log_path=resolve_log_path(args.log),
        cwd=str(root),
        slot_models=slot_models,
    )


def status(args: argparse.Namespace) -> int:
    from santa_method.state.rounds import describe
    from santa_method.state.waiting import wait_step

    info = describe(args.run)
    if args.json:
        print_json(info)
        return 0
    echo(f"run {info['run_id']}: {info['status']}, round {info['round']}, target {info['target']}")
    last = info["last_gate"]
    if info["round_open"]:
        filled = ", ".join(info["filled_slots"]) or "none"
        echo(
            f"round {info['round']} is open: replies in {filled}; open {', '.join(info['open_slots'])}"
        )
    for line in info["waiting_for"]:
        echo(line)
    if info["waiting_for"]:
        echo(f"({wait_step(args.run)})")
    if last:
        echo(f"last gate: round {last['round']}, {last['verdict']}, next {last['next']}")
    if info["stale_gate"]:
        echo(info["stale_gate"])
    if info["next_step"]:
        echo(f"next: {info['next_step']}")
    return 0
