"""`santa run`: verify a file headlessly, reviewers and fixer driven by a model backend."""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

from santa_method.cli._io import (
    add_budget_option,
    number_arg,
    print_json,
    read_text,
    reviewers_option,
    say,
)
from santa_method.core import numbers
from santa_method.core.errors import InputError

DESCRIPTION = """\
Verify FILE (--against), or the working tree's change against a git
revision (--against-diff REV), against a spec without Claude Code in the
loop: independent reviewers (concurrent, each a fresh session) review it
against the rubric, the gate decides by code, a fixer changes only what was
flagged in a working copy, and fresh reviewers review again, up to
--max-fixes; then the run ships (NICE) or is escalated with a report. With
--max-fixes 0 it is a check: problems found end it NAUGHTY with a report
(outcome reported, not an escalation). Same run state, log and reports as
inside Claude Code.

Backends and credentials:
  --backend anthropic  the Messages API; needs ANTHROPIC_API_KEY
                       (pip install anthropic)
  --backend claude     Claude Code through claude-agent-sdk; uses your
                       Claude Code login (pip install claude-agent-sdk);
                       reviewers may read (never change) the project's files
  --backend openai     any Chat Completions endpoint (OpenAI, Gemini,
                       OpenRouter, Ollama, vLLM, llama.cpp, LM Studio):
                       OPENAI_BASE_URL and OPENAI_API_KEY (pip install openai)
  --backend replay:DIR the replies a run recorded with --record DIR, with no
                       model and no network; a request DIR holds no reply
                       for is refused (exit 2)

--models gives one entry per reviewer, MODEL (answered by --backend) or
BACKEND:MODEL, e.g. anthropic:claude-sonnet-4-5,openai:gpt-5.1: a run may
mix backends; the number of entries is the number of reviewers.

No key yet? 'santa demo' runs the whole loop offline on a bundled example.

One run at a time may fix a file in place: a second --in-place run on the
same file is refused. A run whose process died is listed by 'santa runs' as
interrupted; --resume RUN continues it where it stopped.

Exit codes: 0 NICE (shipped), 1 NAUGHTY (a check's problems reported),
escalated or pre-check failed, 2 bad input,
3 the backend failed (no credentials, auth refused, overloaded, timed out).
The live view goes to stderr, the result to stdout (--json for machines).
Defaults come from .santa/config.yaml, flags override them.
"""

EXAMPLES = """\
examples:
  santa run --against README.md --spec-text "Has Install, Usage and License sections"
  santa run --against out.md --spec spec.md --models opus,sonnet --budget-usd 0.50 --json
  santa run --against out.md --spec spec.md --models anthropic:sonnet,openai:gpt-5.1
  santa run --against app.py --spec task.md --rubric code --pre-check "pytest -q" --in-place
  santa run --resume 20250101-120000-abc123     # a run 'santa runs' lists as interrupted
  santa run --against-diff origin/main --spec task.md --max-fixes 0 --json
  santa run --against out.md --spec spec.md --record tests/replies    # keep every reply
  santa run --against out.md --spec spec.md --backend replay:tests/replies   # offline, again
  santa report RUN --format sarif --out santa.sarif
"""


def backend_named(args: argparse.Namespace) -> str:
    """The backend --backend (else SANTA_BACKEND, else anthropic) names:
    `anthropic`, `claude`, `openai` or `replay:DIR`; anything else is refused (exit 2)."""
    name = args.backend or os.environ.get("SANTA_BACKEND") or "anthropic"
    if name in ("anthropic", "claude", "openai") or (
        name.startswith("replay:") and len(name) > 7
    ):
        return name
    said = "--backend" if args.backend else "SANTA_BACKEND"
    raise InputError(f"{said} must be anthropic, claude, openai or replay:DIR, not {name!r}")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="verify a file end to end with a model backend (CI, scripts)",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--against", metavar="FILE", help="the output under review")
    what.add_argument(
        "--against-diff",
        metavar="REV",
        help="review the working tree's change against git revision REV (tracked changes and "
        "new untracked files), recomputed each round; quotes are placed on the changed file "
        "and its new line. Fixes edit the checkout, so they need --in-place; --max-fixes 0 "
        "reports only",
    )
    spec = p.add_mutually_exclusive_group()
    spec.add_argument("--spec", metavar="FILE", help="what the output must do ('-' for stdin)")
    spec.add_argument("--spec-text", metavar="TEXT", help="the spec as text")
    p.add_argument(
        "--rubric", metavar="R", help="rubric name, a+b, or path (default: config, else base)"
    )
    p.add_argument(
        "--backend",
        default=None,
        metavar="{anthropic,claude,openai,replay:DIR}",
        help="who reviews and fixes where --models names no backend (default: anthropic; "
        "env SANTA_BACKEND); replay:DIR answers from a recording",
    )
    p.add_argument(
        "--record",
        metavar="DIR",
        help="keep every backend reply, with a digest of its request, in DIR, for "
        "--backend replay:DIR (not redacted: keep DIR private)",
    )
    p.add_argument(
        "--reviewers",
        type=number_arg(numbers.REVIEWERS),
        metavar="N",
        help="independent reviewers, at least 2 (default 2, or one per --models entry)",
    )
    p.add_argument(
        "--models",
        metavar="M1,M2",
        help="one entry per reviewer, MODEL or BACKEND:MODEL (anthropic:sonnet,openai:gpt-5.1); "
        "one entry alone is every reviewer's; the first also fixes",
    )
    p.add_argument(
        "--author-model",
        metavar="MODEL",
        help="the model that wrote the output: santa warns when every reviewer is of its family",
    )
    p.add_argument(
        "--max-fixes",
        type=number_arg(numbers.MAX_FIXES),
        metavar="N",
        help="fix rounds allowed (default 3)",
    )
    add_budget_option(
        p,
        "escalate instead of starting a fix and round the budget cannot pay for "
        "(and stop when a model's price is unknown)",
    )
    p.add_argument(
        "--timeout",
        type=number_arg(numbers.TIMEOUT_S),
        metavar="S",
        help="seconds per model call (default: none)",
    )
    p.add_argument(
        "--cache-warm",
        action="store_true",
        help="start the other reviewers once the first one's answer begins (prompt-cache reads)",
    )
    p.add_argument(
        "--pre-check",
        metavar="CMD",
        help="deterministic check that must pass before any reviewer; it checks the project's "
        "files, so with fixes allowed it needs --in-place",
    )
    p.add_argument(
        "--in-place",
        action="store_true",
        help="let the fixer edit FILE itself (default: a working copy); with --against-diff, "
        "the changed files",
    )
    p.add_argument(
        "--resume",
        metavar="RUN",
        help="continue an interrupted run (see 'santa runs') with its own target, spec, rubric "
        "and limits; only --backend, --timeout and --cache-warm may be given with it",
    )
    p.add_argument("--log", metavar="PATH", help="the iteration log (default .santa/log.jsonl)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no live view on stderr")
    p.set_defaults(func=run)


_RUN_SETTINGS = (
    "against",
    "against_diff",
    "spec",
    "spec_text",
    "rubric",
    "reviewers",
    "models",
    "author_model",
    "max_fixes",
    "budget_usd",
    "pre_check",
    "log",
)


class LiveView:
    """Rounds and reviewers as they happen, on stderr (people watch CI logs)."""

    def __init__(self, quiet: bool, *, stderr: bool = True) -> None:
        from rich.console import Console

        # A line is a line: CI logs and pipes wrap it themselves.
        self.console = Console(stderr=stderr, highlight=False, quiet=quiet, soft_wrap=True)

    def who(self, data: dict[str, Any]) -> str:
        """What wrote a reply, as the view names it."""
        return str(data.get("model") or "default model")

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        from santa_method.core.redact import redact_text

        def say(text: str) -> None:  # CI keeps stderr: redacted like every other output
            self.console.print(redact_text(text))

        if kind == "run_start":
            say(
                f"[bold]run {data['run_id']}[/]: {data['reviewers']} reviewers, backend {data['backend']}"
            )
            if data.get("replayed"):
                say(f"  replayed from the recording {data['replayed']}: no model is called")
            for line in data.get("jury") or []:
                say(f"  reviewer {line}")
        elif kind == "round_start":
            what = "re-review of round" if data.get("rereview") else "round"
            say(f"{what} {data['round']}: reviewers {', '.join(data['reviewers'])} ...")
        elif kind == "reviewer_reask":
            say(f"  reviewer {data['label']}: handed back ({len(data['errors'])} problem(s))")
        elif kind == "reviewer_done":
            verdict = data["verdict"] if data["valid"] else "invalid"
            color = {"PASS": "green", "FAIL": "red"}.get(verdict, "yellow")
            cost = f", ${data['cost_usd']:.4f}" if data.get("cost_usd") is not None else ""
            say(f"  reviewer {data['label']} ({self.who(data)}): [{color}]{verdict}[/]{cost}")
        elif kind == "gate":
            color = "green" if data["verdict"] == "NICE" else "red"
            say(
                f"  gate: [{color}]{data['verdict']}[/] -> {data['next']} ({len(data['issues'])} problem(s))"
            )
        elif kind == "fix_start":
            say(f"  fixer: {data['flags']} flag(s) ...")
        elif kind == "fix_done":
            say(f"  fixer ({self.who(data)}): done")
        elif kind == "warning":  # even with --quiet: one line on stderr
            from santa_method.cli._io import say as say_plain

            say_plain(f"santa: warning: {data['text']}\n", sys.stderr)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from santa_method.headless.loop import verify_sync
    from santa_method.headless.options import VerifyOptions
    from santa_method.state.config import load_config, resolve_log_path
    from santa_method.state.paths import project_root

    if args.resume is not None:
        return _resume(args)
    if args.against is None and args.against_diff is None:
        raise InputError(
            "say what to verify: --against FILE or --against-diff REV (or --resume RUN)"
        )
    if args.spec is None and args.spec_text is None:
        raise InputError("say what the output must do: --spec FILE or --spec-text TEXT")
    path = None
    if args.against is not None:
        path = Path(args.against)
        read_text(path, "output")  # unreadable, not a file, too big: exit 2 before anything runs
    spec = read_text(args.spec, "spec") if args.spec is not None else args.spec_text
    config = load_config(project_root())
    log = resolve_log_path(args.log)  # a log that is not a file: exit 2 before the backend
    models, reviewers = reviewers_option(args.models, args.reviewers, config)
    view = LiveView(args.quiet)
    result = verify_sync(
        spec,
        path,
        options=VerifyOptions(
            against_diff=args.against_diff,
            rubric=args.rubric or config.rubric,
            reviewers=reviewers,
            models=models,
            backend=backend_named(args),
            prices=config.prices,
            max_fixes=args.max_fixes if args.max_fixes is not None else config.max_fixes,
            budget_usd=args.budget_usd if args.budget_usd is not None else config.budget_usd,
            timeout=args.timeout,
            cache_warm=args.cache_warm,
            pre_check=args.pre_check if args.pre_check is not None else config.pre_check,
            in_place=args.in_place,
            log=str(log),
            on_event=view,
            record=args.record,
            author_model=args.author_model,
        ),
    )
    if args.json:
        print_json(result.to_json())
    else:
        _print_readable(result)
    return 0 if result.verdict == "NICE" else 1


def _resume(args: argparse.Namespace) -> int:
    from santa_method.headless.resume import resume_sync
    from santa_method.state.config import load_config
    from santa_method.state.paths import project_root

    given = [name for name in _RUN_SETTINGS if getattr(args, name) is not None]
    given += ["in_place"] if args.in_place else []
    given += ["record"] if args.record is not None else []
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise InputError(f"--resume continues the run with its own settings; drop {flags}")
    if args.timeout is not None and args.timeout <= 0:
        raise InputError("--timeout must be positive")
    result = resume_sync(
        args.resume,
        backend=backend_named(args),
        prices=load_config(project_root()).prices,
        timeout=args.timeout,
        cache_warm=args.cache_warm,
        on_event=LiveView(args.quiet),
    )
    if args.json:
        print_json(result.to_json())
    else:
        _print_readable(result)
    return 0 if result.verdict == "NICE" else 1


def _print_readable(result: Any) -> None:
    out = io.StringIO()
    cost = f"${result.cost_usd:.4f}" if result.cost_usd is not None else "unknown cost"
    out.write(
        f"{result.verdict}: run {result.run_id}, {result.rounds} round(s), "
        f"{result.tokens.total} tokens, {cost}\n"
    )
    if result.replayed:
        out.write(f"replayed from the recording {result.replayed}: no model was called\n")
    for issue in result.issues:
        evidence = issue.get("quote") or issue.get("missing") or ""
        spots = [
            f"{p['path']}:{p['start_line']}" if p.get("start_line") else p["path"]
            for p in issue.get("places") or []
        ]
        if spots:
            evidence = f"{evidence} at {', '.join(spots)}" if evidence else f"at {spots[0]}"
        out.write(
            f"- [{issue['criterion']}] {issue['issue']}"
            + (f" ({evidence})" if evidence else "")
            + "\n"
        )
    for reason in result.reasons:
        out.write(f"reason: {reason}\n")
    if result.questions:
        out.write("the fixer needs input (add the answers to the spec and start a new run):\n")
        for q in result.questions:
            out.write(f"  {q.get('n')}. {q.get('question')}\n")
    if result.verdict == "NICE":
        out.write(f"verified output: {result.output_path}\n")
    if result.report:
        out.write(f"report: {result.report}\n")
    for warning in result.warnings:
        out.write(f"warning: {warning}\n")
    say(out.getvalue())
