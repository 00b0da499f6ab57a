"""`santa batch`: verify a batch by sampling; `plan`, `record`, `status` keep its
books when Claude Code's subagents do the reviewing."""

from __future__ import annotations

import argparse
import io
import os
from typing import Any

from santa_method.cli import _Parser
from santa_method.cli._io import (
    add_budget_option,
    number_arg,
    print_json,
    read_text,
    reviewers_option,
    say,
)
from santa_method.cli.sample_cmd import add_sampling_arguments, check_sampling_arguments
from santa_method.core import numbers
from santa_method.core.errors import BackendError, InputError, StartError

DESCRIPTION = """\
Verify a batch of outputs by sampling (Pattern C). A sample is drawn (the
plan options of `santa sample`), each sampled item is verified with the
full loop of `santa run`, and failures are classified by criterion (the
criteria flagged at an item's first round). A criterion failing in at least
--systemic-min sampled items (or --systemic-share of them) is a systemic
pattern: every item not yet verified is screened for that one criterion by
one reviewer, the fixer changes the items the screen flags (each change is
logged), and a fresh sample that excludes verified items is verified, up to
--max-resamples. Failures in no pattern escalate: without a fix, a fresh
sample would only retry the draw.

ACCEPTED: the last sample had no failure (or every item was verified),
every verified item shipped, every screen gave a usable answer and every
item it flagged was fixed; the plan's guarantee is stated with it.
Otherwise ESCALATED. The report gives items reviewed, failures by
criterion, the defect rate as generated (first sample) and after fixes
(last sample) with exact 95 % intervals, the guarantee, the seed, the cost
and its share of verifying every item.

--budget-usd: the first item (and the first screen) runs alone to learn
what one costs; after that one starts only while the money left covers what
it may cost (the dearest seen, or the mean times 1 + --max-fixes, whichever
is more) besides those in flight. A batch that ends over budget is not
accepted.

Backends: anthropic (ANTHROPIC_API_KEY), claude (your Claude Code login),
anthropic-batch (Message Batches: every review of a round in one batch,
half price; a batch can take minutes to hours).

Inside Claude Code (no backend needed), the reviewers are subagents and the
helper keeps the books:
  santa batch plan ITEMS... --spec FILE     open a batch, draw its sample
  santa batch record BATCH --item ID --run RUN_ID
                                            record a finished run of an item
  santa batch status [BATCH]                where the batch stands, next step

Files are read as given; fixes go to the batch's work folder unless
--in-place. JSONL items: the field --field (default "output") is verified,
and the fixed records are written to the batch's fixed.jsonl.

Exit codes: 0 ACCEPTED, 1 ESCALATED, 2 bad input, 3 the backend failed
(the batch stays open: run the same command with --resume), 130 interrupted
(resumable the same way). State and report: .santa/batches/<id>/.
"""

EXAMPLES = """\
examples:
  santa batch outputs/ --spec-text "Each summary names its source" --prevalence 0.05 --confidence 0.95
  santa batch items.jsonl --field answer --spec spec.md --backend anthropic-batch --json
  santa batch items.jsonl --field answer --spec spec.md --backend anthropic-batch --resume
"""

SUBCOMMANDS = ("plan", "record", "status")


class _BatchParser(_Parser):
    """`santa batch ITEMS...` and `santa batch plan|record|status ...` share a
    name: a first word naming a sub-command goes to its parser (a file named
    like one is written `./plan`)."""

    subparsers: dict[str, argparse.ArgumentParser]

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if args and args[0] in getattr(self, "subparsers", {}):
            return self.subparsers[args[0]].parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)


def _spec_arguments(p: argparse.ArgumentParser) -> None:
    spec = p.add_mutually_exclusive_group(required=True)
    spec.add_argument("--spec", metavar="FILE", help="what every output must do ('-' for stdin)")
    spec.add_argument("--spec-text", metavar="TEXT", help="the spec as text")
    p.add_argument(
        "--rubric", metavar="R", help="rubric name, a+b, or path (default: config, else base)"
    )
    p.add_argument(
        "--field",
        default="output",
        metavar="NAME",
        help="JSONL items: the field holding the text to verify (default: output)",
    )
    p.add_argument(
        "--max-resamples",
        type=number_arg(numbers.RESAMPLES),
        default=2,
        metavar="N",
        help="fresh samples after the first one (default 2)",
    )
    p.add_argument(
        "--systemic-min",
        type=number_arg(numbers.SYSTEMIC_MIN),
        default=2,
        metavar="N",
        help="a criterion failing in this many sampled items is systemic (default 2, at least 2)",
    )
    p.add_argument(
        "--systemic-share",
        type=number_arg(numbers.SHARE),
        metavar="S",
        help="...or in this share of a sample (at least 2 items)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    saved = subparsers._parser_class
    subparsers._parser_class = _BatchParser
    try:
        p = subparsers.add_parser(
            "batch",
            help="verify a batch by sampling, with a stated guarantee (Pattern C)",
            description=DESCRIPTION,
            epilog=EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    finally:
        subparsers._parser_class = saved
    p.add_argument("items", nargs="+", metavar="ITEMS", help="files, folders or JSONL files")
    _spec_arguments(p)
    add_sampling_arguments(p)
    p.add_argument(
        "--backend",
        choices=("anthropic", "claude", "openai", "anthropic-batch"),
        help="who reviews and fixes where --models names no backend (default: anthropic; "
        "env SANTA_BACKEND)",
    )
    p.add_argument(
        "--reviewers",
        type=number_arg(numbers.REVIEWERS),
        metavar="N",
        help="reviewers per item, at least 2 (default 2, or one per --models entry)",
    )
    p.add_argument(
        "--models",
        metavar="M1,M2",
        help="one entry per reviewer, MODEL or BACKEND:MODEL (anthropic:sonnet,openai:gpt-5.1); "
        "the first also fixes",
    )
    p.add_argument(
        "--screen-model", metavar="M", help="model of the screens (default: the first of --models)"
    )
    p.add_argument(
        "--max-fixes",
        type=number_arg(numbers.MAX_FIXES),
        metavar="N",
        help="fix rounds per item (default 3)",
    )
    add_budget_option(p, "stop (ESCALATED) before an item or screen the budget cannot pay for")
    p.add_argument(
        "--timeout",
        type=number_arg(numbers.TIMEOUT_S),
        metavar="S",
        help="seconds per model call",
    )
    p.add_argument(
        "--concurrency",
        type=number_arg(numbers.CONCURRENCY),
        metavar="N",
        help="items verified at once (default 4; claude 2; anthropic-batch: the whole sample)",
    )
    p.add_argument(
        "--poll-interval",
        type=number_arg(numbers.POLL_INTERVAL_S),
        metavar="S",
        help="anthropic-batch: seconds between status checks (default 30)",
    )
    p.add_argument(
        "--in-place", action="store_true", help="let fixes edit the item files themselves"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the unfinished batch started with exactly these arguments",
    )
    p.add_argument("--log", metavar="PATH", help="the iteration log (default .santa/log.jsonl)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)

    plan = _Parser(
        prog="santa batch plan",
        description="Open a batch whose items Claude Code's reviewer subagents verify: draw "
        "the sample and print, per item, the command that opens its run. After each run "
        "ends, record it with `santa batch record`.",
    )
    plan.add_argument("items", nargs="+", metavar="ITEMS", help="files, folders or JSONL files")
    _spec_arguments(plan)
    add_sampling_arguments(plan)
    plan.add_argument("--json", action="store_true", help="print as JSON")
    plan.set_defaults(func=run_plan)

    record = _Parser(
        prog="santa batch record",
        description="Record a finished run (shipped or escalated) as an item's outcome. The "
        "helper reads the outcome from the run's state and checks that the run verified this "
        "item with the batch's spec and rubric. When the sample (or screen) is complete it "
        "applies the batch rules and prints the next step.",
    )
    record.add_argument("batch", metavar="BATCH", help="the batch id")
    record.add_argument("--item", required=True, metavar="ID", help="the item's id")
    record.add_argument("--run", required=True, metavar="RUN_ID", help="the item's run")
    record.add_argument("--json", action="store_true", help="print as JSON")
    record.set_defaults(func=run_record)

    status = _Parser(
        prog="santa batch status",
        description="Where a batch stands and the exact next commands (the newest batch "
        "opened with `santa batch plan` when BATCH is left out).",
    )
    status.add_argument("batch", nargs="?", metavar="BATCH", help="the batch id")
    status.add_argument("--json", action="store_true", help="print as JSON")
    status.set_defaults(func=run_status)
    p.subparsers = {"plan": plan, "record": record, "status": status}


# ---------------------------------------------------------------- shared


def _items(args: argparse.Namespace) -> list[Any]:
    from santa_method.cli.sample_cmd import read_items
    from santa_method.state.batches import BatchItem, check_readable, jsonl_text

    found = []
    for item in read_items(args.items, args.strata):
        if item.record is not None:
            text = jsonl_text(item.record, args.field, item.id)
            found.append(BatchItem(item.id, item.stratum, text=text, record=item.record))
        else:
            found.append(BatchItem(item.id, item.stratum, path=item.path))
    if not found:
        raise InputError("the batch is empty: the ITEMS hold no item")
    from santa_method.cli.sample_cmd import warn_unknown_exclusions

    warn_unknown_exclusions(_exclusions(args), found)
    skip = set(_exclusions(args))
    for batch_item in found:
        if batch_item.id not in skip:
            check_readable(batch_item)
    return found


def _spec(args: argparse.Namespace) -> str:
    return read_text(args.spec, "spec") if args.spec is not None else args.spec_text


def _exclusions(args: argparse.Namespace) -> list[str]:
    from santa_method.cli.sample_cmd import read_exclusions

    return read_exclusions(args.exclude) if args.exclude else []


def _check(args: argparse.Namespace) -> None:
    check_sampling_arguments(args)


# ---------------------------------------------------------------- santa batch ITEMS


class _Progress:
    """Progress on stderr: a bar on a terminal, one line per item elsewhere (CI logs)."""

    def __init__(self, quiet: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, quiet=quiet)
        self.bar: Any = None
        self.task: Any = None
        if self.console.is_terminal and not quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=self.console,
            )

    def _task(self, description: str, total: int, done: int) -> None:
        if self.bar is not None:
            self.task = self.bar.add_task(description, total=total, completed=done)

    def _step(self) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.advance(self.task)

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        from santa_method.core.redact import redact_text

        def say(text: str) -> None:  # CI keeps stderr: redacted like every other output
            self.console.print(redact_text(text))

        if kind == "batch_start":
            what = "resuming batch" if data["resumed"] else "batch"
            say(
                f"[bold]{what} {data['batch_id']}[/]: {data['population']} items, {data['backend']}"
            )
            if self.bar is not None:
                self.bar.start()
        elif kind == "wave_start":
            say(f"sample {data['number']}: {data['statement']}")
            self._task(f"sample {data['number']}", data["n"], data["done"])
        elif kind == "item_done":
            self._step()
            if self.bar is None:
                crit = f" ({', '.join(data['criteria'])})" if data["criteria"] else ""
                say(f"  {data['item']}: {data['status']}{crit}, {data['rounds']} round(s)")
        elif kind == "item_skipped":
            say(f"  {data['item']}: not verified ({data['reason']})")
        elif kind == "screen_start":
            say(f"screening {data['items']} items for {data['criterion']}")
            self._task(f"screen {data['criterion']}", data["items"], data["done"])
        elif kind == "screened":
            self._step()
            if self.bar is None and data["result"] != "clean":
                fixed = ", fixed" if data.get("fixed") else ""
                say(f"  {data['item']}: {data['result']}{fixed}")
        elif kind == "message_batch":
            if self.bar is None:
                done = data.get("succeeded", 0) + data.get("errored", 0)
                say(
                    f"  message batch {data.get('batch_id')}: {data.get('status')}, "
                    f"{done} of {data.get('requests', '?')} answered"
                )
        elif kind == "decision":
            say(
                f"decision after sample {data['wave']}: {data['step']} ({'; '.join(data['reasons'])})"
            )
        elif kind == "batch_done":
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def run(args: argparse.Namespace) -> int:
    from santa_method.headless.batch import BatchOptions, verify_batch_sync
    from santa_method.state.config import load_config, resolve_log_path
    from santa_method.state.paths import project_root

    _check(args)
    config = load_config(project_root())
    models, reviewers = reviewers_option(args.models, args.reviewers, config)
    backend = args.backend or os.environ.get("SANTA_BACKEND") or "anthropic"
    options: dict[str, Any] = {}
    if args.poll_interval is not None:
        if backend != "anthropic-batch":
            raise InputError("--poll-interval is for --backend anthropic-batch")
        options["poll_interval"] = args.poll_interval
    progress = _Progress(args.quiet)
    try:
        result = verify_batch_sync(
            _items(args),
            _spec(args),
            options=BatchOptions(
                rubric=args.rubric or config.rubric,
                reviewers=reviewers,
                models=models,
                backend=backend,
                prices=config.prices,
                backend_options=options,
                rate=args.rate,
                minimum=args.minimum,
                prevalence=args.prevalence,
                confidence=args.confidence,
                stratified=args.strata is not None,
                seed=args.seed,
                exclude=_exclusions(args),
                max_fixes=args.max_fixes if args.max_fixes is not None else config.max_fixes,
                max_resamples=args.max_resamples,
                budget_usd=args.budget_usd if args.budget_usd is not None else config.budget_usd,
                timeout=args.timeout,
                in_place=args.in_place,
                resume=args.resume,
                log=str(resolve_log_path(args.log)),
                field_name=args.field,
                systemic_min=args.systemic_min,
                systemic_share=args.systemic_share,
                screen_model=args.screen_model,
                concurrency=args.concurrency,
                on_event=progress,
            ),
        )
    except StartError:
        raise  # nothing was opened: there is no batch to resume
    except BackendError as exc:
        progress.close()
        raise BackendError(
            f"{exc}; the batch is saved: run the same command with --resume"
        ) from None
    finally:
        progress.close()
    data = result.to_json()
    if args.json:
        print_json(data)
    else:
        _print_readable(data)
    return 0 if result.verdict == "ACCEPTED" else 1


def _print_readable(data: dict[str, Any]) -> None:
    out = io.StringIO()
    cost = f"${data['cost_usd']:.4f}" if data["cost_usd"] is not None else "unknown cost"
    share = data.get("cost_relative_to_all")
    if isinstance(share, float):
        cost += f" ({share:.0%} of verifying every item)"
    out.write(
        f"{data['verdict']}: batch {data['batch_id']}, {data['reviewed']} of "
        f"{data['population']} items verified, {cost}\n"
    )
    out.write(f"guarantee: {data['guarantee']}\n")
    out.write(f"seed: {data['seed']}\n")
    out.write(f"estimate: {data['estimate_statement']}\n")
    for criterion, items in data["failures_by_criterion"].items():
        systemic = " (systemic)" if criterion in data["systemic"] else ""
        out.write(f"- {criterion}{systemic}: {len(items)} item(s)\n")
    for reason in data["reasons"]:
        out.write(f"reason: {reason}\n")
    if data["changed"]:
        out.write(f"changed items: {len(data['changed'])} (see the report)\n")
    if data.get("fixed_jsonl"):
        out.write(f"fixed JSONL: {data['fixed_jsonl']}\n")
    out.write(f"report: {data['report']}\n")
    for warning in data["warnings"]:
        out.write(f"warning: {warning}\n")
    say(out.getvalue())


# ---------------------------------------------------------------- inside Claude Code


def run_plan(args: argparse.Namespace) -> int:
    import random

    from santa_method.claude_code import batch as cc
    from santa_method.core.rubric import load_rubric
    from santa_method.state.config import load_config
    from santa_method.state.model.batch import BatchOptionsRecord
    from santa_method.state.paths import project_root, project_rubrics_dir

    _check(args)
    config = load_config(project_root())
    ref = args.rubric or config.rubric
    rubric = load_rubric(ref, search_dirs=(project_rubrics_dir(),))
    configured = load_rubric(config.rubric, search_dirs=(project_rubrics_dir(),))
    assert rubric is not None and configured is not None
    lacking = sorted(set(configured.ids) - set(rubric.ids))
    if lacking:
        # The runs would refuse it inside Claude Code anyway; say so before any work.
        raise InputError(
            f"--rubric {ref} lacks {', '.join(lacking)} of the configured rubric {config.rubric}"
        )
    items = _items(args)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    options = BatchOptionsRecord(
        rate=args.rate,
        minimum=args.minimum,
        prevalence=args.prevalence,
        confidence=args.confidence,
        stratified=args.strata is not None,
        exclude=sorted(_exclusions(args)),
        max_resamples=args.max_resamples,
        rubric=rubric.to_json(),
        field=args.field,
        systemic_min=args.systemic_min,
        systemic_share=args.systemic_share,
        in_place=True,
    )
    view = cc.plan(items, _spec(args), rubric_ref=ref, rubric=rubric, options=options, seed=seed)
    _print_view(view, args.json)
    return 0


def run_record(args: argparse.Namespace) -> int:
    from santa_method.claude_code import batch as cc

    view = cc.record(args.batch, args.item, args.run)
    _print_view(view, args.json)
    return _view_code(view)


def run_status(args: argparse.Namespace) -> int:
    from santa_method.claude_code import batch as cc

    view = cc.status(args.batch)
    _print_view(view, args.json)
    return _view_code(view)


def _view_code(view: dict[str, Any]) -> int:
    step = view["next"]
    return 1 if step["step"] == "done" and step.get("verdict") != "ACCEPTED" else 0


def _print_view(view: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(view)
        return
    out = io.StringIO()
    if "recorded" in view:
        r = view["recorded"]
        what = r.get("status") or r.get("result")
        out.write(f"recorded {r.get('item')}: {what}\n")
    out.write(
        f"batch {view['batch_id']} ({view['status']}), {view['population']} items, "
        f"seed {view['seed']}\n"
    )
    for wave in view["waves"]:
        out.write(
            f"sample {wave['number']}: {wave['statement']}; verified {wave['verified']} of "
            f"{wave['n']}, failed {wave['failed']}\n"
        )
    step = view["next"]
    if step["step"] == "done":
        out.write(f"{step['verdict']}: report {step['report']}\n")
        say(out.getvalue())
        return
    if step["step"] == "verify":
        out.write(f"next: verify these {len(step['items'])} item(s), each with the full loop:\n")
    else:
        out.write(
            f"next: screen these {len(step['items'])} item(s) for {step['criterion']} "
            "(a run each, with the screen rubric):\n"
        )
    for item in step["items"]:
        out.write(f"  {item['id']}: {item['command']}\n")
    out.write(f"then: {view['record']}\n")
    say(out.getvalue())
