"""`santa hook NAME`: Claude Code hook handlers (they speak the hook protocol).

Unlike every other command, a hook always exits 0: refusals are JSON on
stdout, because Claude Code treats a non-zero exit as a non-blocking error
and would let the call or the reply through. What a failing hook answers is
decided in one place, `claude_code.protocol.fail_closed`.
"""

from __future__ import annotations

import sys

from santa_method.claude_code.protocol import HOOK_EVENTS, run

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "hook",
        help="Claude Code hook handlers (read hook JSON on stdin, answer in the hook protocol)",
        description="Hook handlers for Claude Code. 'pretooluse-agent' (PreToolUse on Agent) refuses "
        "reviewer and fixer subagents that are not given the helper's exact instruction, and extra "
        "reviewers; 'subagent-stop' (SubagentStop) validates a reviewer's reply, hands errors back, and "
        "stores the reply for the gate. Always exits 0; refusals are JSON on stdout.",
    )
    p.add_argument("name", choices=tuple(HOOK_EVENTS), help="which hook")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    out = run(args.name, sys.stdin.read())
    if out:
        print(out)
    return 0
