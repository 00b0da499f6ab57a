"""The hook protocol's answers, santa's agent names, and the one fail-closed answer.

Claude Code lets a tool call or a subagent's reply through when a hook
exits non-zero, so every way a hook can fail must still print a refusal.
That answer is decided here, once: by each handler when it raises, by
`answer` for input it cannot read, by `santa hook` (claude_code/entry.py)
when the handler module cannot even be imported, and (mirrored in shell, tested against
`fail_closed`) by the launchers `libexec/santa` and the vendored `santa-hook`
when the helper crashes or no interpreter can run it.

The rule, per hook, for "the hook could not decide":

- `pretooluse-agent`: refuse the call unless it names an agent type that is
  not one of santa's (santa's own agents cannot work without their checks).
- `pretooluse-guard`: refuse the call.
- `subagent-stop`: block a santa reviewer once (it replies again); when it
  is already continuing because of a block, let it stop: nothing was
  stored, so the gate counts its review as missing. Other agents stop.

Nothing but `hook_json` is imported (not even `json`, see there): the
PreToolUse guard runs on every tool call of a session.
"""

from __future__ import annotations

from santa_method.claude_code.hook_json import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    Handler = Callable[[Mapping[str, Any]], dict[str, Any] | None]

PLUGIN = "santa-method"
ROLES = ("reviewer", "fixer")


def plugin_agent(role: str) -> str:
    """The agent's name when santa runs as a Claude Code plugin."""
    return f"{PLUGIN}:{role}"


def vendored_agent(role: str) -> str:
    """The agent's name when `santa init` copied it into a repository."""
    return f"santa-{role}"


REVIEWER_AGENTS = frozenset({plugin_agent("reviewer"), vendored_agent("reviewer")})
FIXER_AGENTS = frozenset({plugin_agent("fixer"), vendored_agent("fixer")})
SANTA_AGENTS = REVIEWER_AGENTS | FIXER_AGENTS

# Hook name -> the Claude Code event it answers.
HOOK_EVENTS = {
    "pretooluse-agent": "PreToolUse",
    "pretooluse-guard": "PreToolUse",
    "subagent-stop": "SubagentStop",
}
HOOK_NAMES = frozenset(HOOK_EVENTS)


def with_dependencies() -> None:
    """Add the site directories (where the dependencies live) if the
    interpreter started without them: `libexec/santa` runs hooks with `-S`,
    because the guard's usual path needs none (see santa_method/launch.py)."""
    import sys

    if sys.flags.no_site:
        import site

        site.main()


def deny(reason: str) -> dict[str, Any]:
    """A PreToolUse refusal: the tool call does not happen; the model reads why."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def block(reason: str) -> dict[str, Any]:
    """A SubagentStop refusal: the agent takes another turn with `reason`."""
    return {"decision": "block", "reason": reason}


def note(text: str) -> dict[str, Any]:
    """Let the call or the reply through, and tell the user `text` (`systemMessage`)."""
    return {"systemMessage": text}


def read_input() -> str | None:
    """The hook input on stdin, or None when stdin cannot be read (closed,
    or not text): input that cannot be read is answered like input that is
    not JSON, never with a crash that would let the call through."""
    import sys

    try:
        return sys.stdin.read()
    except Exception:
        return None


def read_event(raw: str | None) -> dict[str, Any] | None:
    """Claude Code's hook input as an object, or None when it is not one
    (nor JSON, nor readable: nested too deep for the parser, say)."""
    if raw is None:
        return None
    try:
        event = loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def fail_closed(hook: str, event: Mapping[str, Any] | None, reason: str) -> dict[str, Any] | None:
    """The answer of a hook that could not decide (None: let it through).

    `event` is the hook input, or None when it could not be read.
    """
    if HOOK_EVENTS.get(hook) == "PreToolUse":
        if hook == "pretooluse-agent" and event is not None:
            tool_input = event.get("tool_input")
            kind = tool_input.get("subagent_type") if isinstance(tool_input, dict) else None
            if isinstance(kind, str) and kind not in SANTA_AGENTS:
                return None
        return deny(reason)
    if hook == "subagent-stop":
        if (
            event is not None
            and event.get("agent_type") in REVIEWER_AGENTS
            and event.get("stop_hook_active") is not True
        ):
            return block(reason)
        return None
    return deny(reason)  # a hook this helper does not know: refuse


def answer_text(answer: Mapping[str, Any] | None) -> str:
    """What the hook prints: the answer's JSON, or nothing to let the call through."""
    return dumps(answer) if answer is not None else ""


def answer(hook: str, handler: Handler, raw: str | None) -> str:
    """What hook `hook` prints for Claude Code's input `raw`, decided by `handler`."""
    event = read_event(raw)
    if event is None:
        return answer_text(fail_closed(hook, None, "santa-method could not read the hook input"))
    return answer_text(handler(event))
