"""The `claude` backend: Claude Code through claude-agent-sdk (extra `[claude]`).

Why it looks like this: one `query()` per reviewer is one CLI process with
its own fresh session (`setting_sources=[]`: no user or project settings,
no memory of other reviewers), so reviewers are isolated by construction
and run concurrently. Reviewers get read-only tools (Read, Grep, Glob, set
as both the offered and the auto-approved tools, `dontAsk` for the rest)
so they can check claims against the project's files. The review comes
back through structured output (`ResultMessage.structured_output`); a run
that ends without it is a failed review. It uses the user's Claude Code
login; the cost is the CLI's own list-price estimate (`total_cost_usd`).
A follow-up (a reply handed back with its errors) resumes the same session.
A resumed session reports tokens and cost summed over the whole session
(the CLI restores them from the transcript), so the backend remembers what
each session reported last and returns only the new part: a hand-back is
never counted twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import BackendError, InputError
from santa_method.core.files import read_exact
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.state.atomic import replace_text

REVIEWER_SYSTEM = (
    "You are a santa-method reviewer: independent and context-isolated. You may read the "
    "project's files to check claims, but never change anything. Your final answer is the "
    "review object, given through the structured output tool."
)
FIXER_SYSTEM = (
    "You are the santa-method fixer. Edit only the file named in the task, only to resolve "
    "the flags listed, then end with one line per flag."
)
READ_ONLY = ["Read", "Grep", "Glob"]
# Reviewers may read the project, never santa's own folder: it holds other
# reviewers' replies and earlier rounds (each review must be independent).
PRIVATE = [f"{tool}(./.santa/**)" for tool in READ_ONLY]
EDIT = ["Read", "Grep", "Glob", "Edit", "Write"]


def _sdk() -> Any:
    try:
        import claude_agent_sdk
    except ImportError:
        raise BackendError(
            "the claude backend needs claude-agent-sdk: pip install claude-agent-sdk"
        ) from None
    return claude_agent_sdk


def _count(value: Any, what: str) -> int:
    """A token count the CLI reported: a whole number in range, or a backend error."""
    if value is None:
        return 0
    try:
        return int(numbers.TOKENS.check(value, what))
    except InputError as exc:
        raise BackendError(f"Claude Code's result cannot be read: {exc}") from None


def _tokens(result: Any) -> Tokens:
    usage_by_model = getattr(result, "model_usage", None) or {}
    if not isinstance(usage_by_model, Mapping):
        raise BackendError("Claude Code's result cannot be read: modelUsage is not an object")
    if usage_by_model:
        total = Tokens()
        for model, usage in usage_by_model.items():
            if not isinstance(usage, Mapping):
                raise BackendError(
                    f"Claude Code's result cannot be read: the usage of {model!r} is not an object"
                )
            total = total + Tokens(
                *(
                    _count(usage.get(key), f"{model} {key}")
                    for key in (
                        "inputTokens",
                        "outputTokens",
                        "cacheReadInputTokens",
                        "cacheCreationInputTokens",
                    )
                )
            )
        return total
    usage = getattr(result, "usage", None) or {}
    if not isinstance(usage, Mapping):
        raise BackendError("Claude Code's result cannot be read: usage is not an object")
    return Tokens(
        *(
            _count(usage.get(key), key)
            for key in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            )
        )
    )


def _cost(result: Any) -> float | None:
    """The CLI's cost estimate: None, or a finite, non-negative number of dollars."""
    cost = getattr(result, "total_cost_usd", None)
    if cost is None:
        return None
    try:
        return float(numbers.COST_USD.check(cost, "total_cost_usd"))
    except InputError as exc:
        raise BackendError(f"Claude Code's result cannot be read: {exc}") from None


def _answer(result: Any) -> str:
    """The session's final text ('' when it gave none)."""
    text = getattr(result, "result", None)
    if text is None:
        return ""
    if not isinstance(text, str):
        raise BackendError("Claude Code's result cannot be read: its answer is not text")
    return text


def _new_part(
    total: Tokens, cost: float | None, before: tuple[Tokens, float | None] | None
) -> tuple[Tokens, float | None]:
    """What a resumed session spent in this call, given what it had reported before.

    A figure smaller than the earlier one means the CLI did not carry the
    session's totals over: then the whole figure is this call's.
    """
    if before is None:
        return total, cost
    old, old_cost = before
    parts = (
        (total.input, old.input),
        (total.output, old.output),
        (total.cache_read, old.cache_read),
        (total.cache_write, old.cache_write),
    )
    if any(now < then for now, then in parts):
        return total, cost
    tokens = Tokens(*(now - then for now, then in parts))
    if cost is None or old_cost is None or cost < old_cost:
        return tokens, cost
    return tokens, round(cost - old_cost, 10)


def _model(result: Any, fallback: str | None) -> str | None:
    usage_by_model = getattr(result, "model_usage", None) or {}
    return next((m for m in usage_by_model if isinstance(m, str)), fallback)


def _said(result: Any) -> str:
    """The first line of what an error result says ('API Error: ...'), or ''."""
    text = getattr(result, "result", None) if getattr(result, "is_error", False) else None
    return _first_line(text) if isinstance(text, str) else ""


def _first_line(text: object) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:200] if lines else ""


def _find_cli(cli_path: str | None) -> str | None:
    """The CLI the SDK would run: the given path, its bundled copy, else `claude` on PATH."""
    import importlib.util
    import shutil
    from pathlib import Path

    if cli_path:
        return cli_path
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "_bundled" / "claude"
        if bundled.is_file():
            return str(bundled)
    return shutil.which("claude")


async def _logged_out(cli: str, env: Mapping[str, str]) -> bool:
    """True only when `claude auth status` answers that nobody is logged in.

    Anything else (an older CLI without the command, a timeout, another API
    provider) is not a refusal: the run starts and a real failure still
    surfaces, in the CLI's own words.
    """
    import asyncio
    import json
    import os

    try:
        proc = await asyncio.create_subprocess_exec(
            cli,
            "auth",
            "status",
            "--json",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return False
        status = json.loads(out)
    except (OSError, ValueError):
        return False
    return (
        isinstance(status, dict)
        and status.get("loggedIn") is False
        and status.get("apiProvider", "firstParty") == "firstParty"
    )


def _error_sentence(status: int | None, detail: str) -> str:
    if status == 401:
        return "Claude Code's credentials were refused (401): run 'claude' and log in again"
    if status == 403:
        return "Claude Code's account may not use this model (403)"
    if status == 429:
        return "the Claude API is rate limiting (429) after retries"
    if status == 529:
        return "the Claude API is overloaded (529) after retries"
    if status:
        return f"the Claude API failed ({status}) after retries"
    return f"Claude Code failed: {detail}"


class ClaudeBackend:
    """Reviewer and fixer through the Claude Code CLI bundled in claude-agent-sdk."""

    name = "claude"

    def __init__(
        self,
        *,
        max_retries: int = 2,
        env: Mapping[str, str] | None = None,
        cli_path: str | None = None,
        max_turns: int = 30,
        max_budget_usd: float | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.env = dict(env or {})
        self.cli_path = cli_path
        self.max_turns = max_turns
        self.max_budget_usd = max_budget_usd
        # Session id -> the totals its last call reported (see _new_part).
        self._reported: dict[str, tuple[Tokens, float | None]] = {}
        self._preflight: list[str] | None = None

    async def preflight(self) -> list[str]:
        """The SDK, its CLI and a login, checked once per backend (a batch shares one)."""
        if self._preflight is None:
            import importlib.util

            missing = []
            if importlib.util.find_spec("claude_agent_sdk") is None:
                missing.append("claude-agent-sdk is not installed (pip install claude-agent-sdk)")
            cli = _find_cli(self.cli_path)
            if cli is None:
                if not missing:
                    missing.append(
                        "the Claude Code CLI was not found (pip install --force-reinstall claude-agent-sdk)"
                    )
            elif await _logged_out(cli, self._env()):
                missing.append(
                    "Claude Code is not logged in (run 'claude' and log in with /login, "
                    "or set ANTHROPIC_API_KEY)"
                )
            self._preflight = missing
        return list(self._preflight)

    def _env(self) -> dict[str, str]:
        return {"CLAUDE_CODE_MAX_RETRIES": str(self.max_retries), **self.env}

    async def _run(self, prompt: str, options: Any, on_started: Any = None) -> Any:
        """The session's ResultMessage; every failure becomes one BackendError sentence."""
        sdk = _sdk()
        result = None
        try:
            async with contextlib.aclosing(sdk.query(prompt=prompt, options=options)) as messages:
                async for message in messages:
                    if on_started is not None and isinstance(
                        message, sdk.StreamEvent | sdk.AssistantMessage
                    ):
                        on_started()
                        on_started = None
                    if isinstance(message, sdk.ResultMessage):
                        result = message
        except sdk.CLINotFoundError:
            raise BackendError(
                "the Claude Code CLI was not found: reinstall claude-agent-sdk (it bundles the CLI) or pass cli_path"
            ) from None
        except sdk.ProcessError as exc:
            if result is not None and result.subtype == "error_max_structured_output_retries":
                return result
            status = getattr(exc, "api_error_status", None) or getattr(
                result, "api_error_status", None
            )
            detail = _said(result) or getattr(exc, "subtype", None) or _first_line(exc)
            raise BackendError(_error_sentence(status, str(detail))) from None
        except sdk.ClaudeSDKError as exc:
            raise BackendError(_error_sentence(None, _first_line(exc))) from None
        except Exception as exc:  # anything else the SDK raises reading the CLI: not a verdict
            raise BackendError(
                f"Claude Code's reply cannot be read: {type(exc).__name__}: {_first_line(exc)}"
            ) from None
        if result is None:
            raise BackendError("Claude Code ended without a result")
        if not isinstance(result.subtype, str) or not isinstance(result.is_error, bool):
            raise BackendError("Claude Code's result cannot be read: no subtype or is_error")
        if result.is_error and result.subtype != "error_max_structured_output_retries":
            status = result.api_error_status if isinstance(result.api_error_status, int) else None
            raise BackendError(_error_sentence(status, _said(result) or result.subtype))
        if result.session_id is not None and not isinstance(result.session_id, str):
            raise BackendError("Claude Code's result cannot be read: the session id is not text")
        return result

    async def review(self, request: ReviewRequest) -> ReviewReply:
        sdk = _sdk()
        tools = READ_ONLY if request.read_only_tools else []
        options = sdk.ClaudeAgentOptions(
            system_prompt=REVIEWER_SYSTEM,
            tools=tools,
            allowed_tools=tools,
            disallowed_tools=PRIVATE,
            permission_mode="dontAsk",
            setting_sources=[],
            cwd=request.project_dir,
            model=request.model,
            max_turns=self.max_turns,
            max_budget_usd=self.max_budget_usd,
            output_format={"type": "json_schema", "schema": request.schema},
            env=self._env(),
            cli_path=self.cli_path,
            resume=request.session if request.followups else None,
            # Stream events only to learn when the answer begins (--cache-warm).
            include_partial_messages=request.on_started is not None,
        )
        prompt = (
            request.followups[-1].feedback
            if request.followups and request.session
            else request.assignment
        )
        result = await self._run(prompt, options, request.on_started)
        resumed = options.resume
        tokens, cost = _new_part(
            _tokens(result),
            _cost(result),
            self._reported.pop(resumed, None) if resumed else None,
        )
        if result.session_id:
            self._reported[result.session_id] = (_tokens(result), _cost(result))
        obj = result.structured_output
        failure = None
        if result.subtype == "error_max_structured_output_retries":
            failure = "the reviewer's structured output never matched the review schema"
        elif not isinstance(obj, dict):
            failure = "the reviewer ended without a structured review (structured_output missing)"
            obj = None
        return ReviewReply(
            text=_answer(result),
            obj=obj,
            tokens=tokens,
            cost_usd=cost,
            model=_model(result, request.model),
            session=result.session_id,
            failure=failure,
        )

    async def fix(self, request: FixRequest) -> FixReply:
        import shutil
        import tempfile
        from pathlib import Path

        sdk = _sdk()
        # The fixer edits a copy alone in a fresh folder (edits are approved
        # only there) and the loop takes its text back: with --in-place too,
        # no other file of the project can change unreviewed.
        scratch = Path(tempfile.mkdtemp(prefix="santa-fix-"))
        try:
            copy = scratch / (Path(request.target_path).name or "output.txt")
            replace_text(copy, request.output)
            options = sdk.ClaudeAgentOptions(
                system_prompt=FIXER_SYSTEM,
                tools=EDIT,
                allowed_tools=EDIT,
                permission_mode="acceptEdits",
                setting_sources=[],
                cwd=str(scratch),
                model=request.model,
                max_turns=self.max_turns,
                max_budget_usd=self.max_budget_usd,
                env=self._env(),
                cli_path=self.cli_path,
            )
            prompt = (
                request.assignment
                + f"\n\nThe file to edit is {copy} (a working copy). Edit it in place with the "
                "Edit or Write tool; do not print the whole output."
            )
            result = await self._run(prompt, options)
            try:
                output = read_exact(copy)
            except (OSError, UnicodeDecodeError) as exc:
                reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "gone"
                raise BackendError(
                    f"the claude fixer left its working copy unreadable ({reason})"
                ) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return FixReply(
            output=output,
            notes=_answer(result),
            tokens=_tokens(result),
            cost_usd=_cost(result),
            model=_model(result, request.model),
        )
