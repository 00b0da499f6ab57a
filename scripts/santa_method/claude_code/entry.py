"""Where `santa hook NAME` enters: the handler for NAME, and an answer even when it fails.

Kept apart from the handlers so that a helper whose hook code cannot even be
imported still answers in the hook protocol (`protocol.fail_closed`).
"""

from __future__ import annotations

from santa_method.claude_code.protocol import answer, answer_text, fail_closed, read_event


def run(hook: str, raw: str | None) -> str:
    """Run hook `hook` on Claude Code's input (None: stdin could not be read)
    and return what to print; never raises.

    The handlers are imported here, not at the top, so that a helper whose
    hook code cannot even be imported still answers in the protocol. The
    guard has a module of its own, which imports only what its checks use.
    """
    try:
        if hook == "pretooluse-guard":
            from santa_method.claude_code.guard import pretooluse_guard

            return answer(hook, pretooluse_guard, raw)
        from santa_method.claude_code.hooks import run_hook

        return run_hook(hook, raw)
    except Exception as exc:
        reason = f"santa-method hook failed ({type(exc).__name__}: {exc})"
        return answer_text(fail_closed(hook, read_event(raw), reason))
