"""`santa hook NAME`: Claude Code hook handlers (they speak the hook protocol).

Unlike every other command, a hook always exits 0: refusals are JSON on
stdout, because Claude Code treats a non-zero exit as a non-blocking error
and would let the call or the reply through.
"""

from __future__ import annotations

import argparse
import json
import re
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "hook",
        help="Claude Code hook handlers (read hook JSON on stdin, answer in the hook protocol)",
        description="Hook handlers for Claude Code. 'pretooluse-agent' (PreToolUse on Agent) refuses "
        "reviewer and fixer subagents that are not given the helper's exact instruction, and extra "
        "reviewers; 'subagent-stop' (SubagentStop) validates a reviewer's reply, hands errors back, and "
        "stores the reply for the gate. Always exits 0; refusals are JSON on stdout.",
    )
    p.add_argument(
        "name",
        choices=("pretooluse-agent", "pretooluse-guard", "subagent-stop"),
        help="which hook",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raw = sys.stdin.read()
    try:
        from santa_method.claude_code.hooks import run_hook

        out = run_hook(args.name, raw)
    except Exception as exc:  # the protocol, not an exit code, must carry the refusal
        reason = f"santa-method hook failed ({type(exc).__name__}: {exc})"
        if args.name.startswith("pretooluse"):
            out = json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": reason,
                    }
                }
            )
        elif not re.search(
            r'"agent_type"\s*:\s*"(?:santa-method:reviewer|santa-reviewer)"', raw
        ) or re.search(r'"stop_hook_active"\s*:\s*true', raw):
            # Not a santa reviewer, or already continuing after a block: let
            # it stop. Nothing was stored, so the gate counts a reviewer as missing.
            out = ""
        else:
            out = json.dumps({"decision": "block", "reason": reason + "; reply again"})
    if out:
        print(out)
    return 0
