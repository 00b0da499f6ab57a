"""`santa hook NAME`: Claude Code hook handlers (they speak the hook protocol).

Unlike every other command, a hook always exits 0: refusals are JSON on
stdout, because Claude Code treats a non-zero exit as a non-blocking error
and would let the call or the reply through. What a failing hook answers is
decided in one place, `claude_code.protocol.fail_closed`.
"""

from __future__ import annotations

from santa_method.claude_code.entry import run
from santa_method.claude_code.protocol import HOOK_EVENTS, read_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping


def register(subparsers: argparse._SubParsersAction) -> None:
    import argparse

    try:
        from santa_method.claude_code.hooks import HANDLERS
    except Exception:  # a broken hooks module must still end in the hook protocol's refusal
        HANDLERS = {}

    p = subparsers.add_parser(
        "hook",
        help="Claude Code hook handlers (read hook JSON on stdin, answer in the hook protocol)",
        description="Hook handlers for Claude Code: each reads the hook's JSON on stdin and\n"
        "answers in the hook protocol. Always exits 0; refusals are JSON on stdout.",
        epilog=hooks_listing({name: HANDLERS.get(name) for name in HOOK_EVENTS}),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "name", choices=tuple(HOOK_EVENTS), metavar="NAME", help="which hook (see below)"
    )
    p.set_defaults(func=_run)


def hooks_listing(handlers: Mapping[str, Callable[..., object] | None]) -> str:
    """The hooks and what each does, from the registry (each handler's docstring)."""
    import textwrap

    width = max(len(name) for name in handlers) + 2
    lines = ["hooks:"]
    for name, handler in handlers.items():
        summary = " ".join(((handler and handler.__doc__) or "").split()) or "(no description)"
        wrapped = textwrap.wrap(summary, 78 - width - 2) or [""]
        lines.append(f"  {name:<{width}}{wrapped[0]}")
        lines += [f"  {'':<{width}}{more}" for more in wrapped[1:]]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    out = run(args.name, read_input())
    if out:
        print(out)
    return 0
