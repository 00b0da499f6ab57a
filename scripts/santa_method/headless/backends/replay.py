"""Record a backend's replies, and answer the same requests again from them.

`Recorder` wraps the backend a run uses (`santa run --record DIR`): every
review and fix goes to that backend through `checked.ask_review` and
`ask_fix`, so only an answer a run may use is kept, with the request it
answered (`recording.py`). `ReplayBackend` (`--backend replay:DIR`) is a
backend like any other: it answers a request from the recording, with the
current canary in place of the recorded one, and refuses (InputError, exit
2, naming the request) one the recording has no reply for. It never
guesses an answer, and it calls no model: the run says it was replayed
(its state, the log's `run` record, every report, the result).

A recording is not redacted (it is what reviewers saw), so the recorder
warns, once, when something it keeps looks like a secret.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from santa_method.core.errors import BackendError, InputError
from santa_method.headless.backends import recording
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.headless.backends.checked import (
    ask_fix,
    ask_review,
    backend_name,
    check_fix,
    check_review,
)

PREFIX = "replay:"


class NotRecorded(InputError):
    """A request the recording holds no reply for (exit 2, naming it)."""
ORIGINS = {"recorded": "recorded from a model", "written": "written for the demo"}


def replay_folder(name: str) -> str | None:
    """DIR of a backend named `replay:DIR`, else None."""
    if not name.startswith(PREFIX):
        return None
    folder = name[len(PREFIX) :]
    if not folder:
        raise InputError("name the recording to replay: --backend replay:DIR")
    return folder


def _now() -> str:
    from santa_method.state.log import now_iso

    return now_iso()


def _tokens(tokens: Tokens) -> dict[str, int]:
    return {
        "input": tokens.input,
        "output": tokens.output,
        "cache_read": tokens.cache_read,
        "cache_write": tokens.cache_write,
    }


class Recorder:
    """A backend that asks `inner` and keeps every answer in `folder`.

    `origin` says what the replies are (`recorded`, from a model; the
    demo's are `written`); `on_warning` gets the one warning a recording
    that holds something like a secret gives.
    """

    def __init__(
        self,
        inner: Any,
        folder: str | os.PathLike[str],
        *,
        origin: str = "recorded",
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.name = backend_name(inner)
        self.queued = bool(getattr(inner, "queued", False))
        self.recording = recording.Recording(folder)
        self.origin = origin
        self.on_warning = on_warning
        self.warnings: list[str] = []
        self._seen: set[str] = set()
        self._scanned: set[str] = set()

    async def preflight(self) -> list[str]:
        from santa_method.headless.backends.base import missing_prerequisites

        return await missing_prerequisites(self.inner)

    async def aclose(self) -> None:
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()

    async def review(self, request: ReviewRequest) -> ReviewReply:
        reply = await ask_review(self.inner, request)
        self._keep(
            request,
            {
                "kind": "review",
                "text": reply.text,
                "obj": reply.obj,
                "failure": reply.failure,
                "canary": recording.canary_of(request),
                **self._common(reply),
            },
            [request.prefix, request.round_part, *(f.reply for f in request.followups)],
            [reply.text, json.dumps(reply.obj) if reply.obj is not None else ""],
        )
        return reply

    async def fix(self, request: FixRequest) -> FixReply:
        reply = await ask_fix(self.inner, request)
        output = reply.output
        if output is None:  # the backend edited its working copy: keep what it left there
            try:
                output = Path(request.target_path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise BackendError(
                    f"the fixer's edit of {request.target_path} cannot be recorded: {exc}"
                ) from None
        self._keep(
            request,
            {"kind": "fix", "output": output, "notes": reply.notes, **self._common(reply)},
            [request.assignment],
            [output, reply.notes],
        )
        return reply

    def _common(self, reply: ReviewReply | FixReply) -> dict[str, Any]:
        return {
            "tokens": _tokens(reply.tokens),
            "cost_usd": reply.cost_usd,
            "model": reply.model,
            "backend": self.name,
            "origin": self.origin,
            "recorded": _now(),
        }

    def _keep(self, request: Any, reply: dict[str, Any], asked: list[str], said: list[str]) -> None:
        key = recording.digest(request)
        first = key not in self._seen
        self._seen.add(key)
        self.recording.add(request, reply, first=first, when=reply["recorded"])
        self._warn_of_secrets(asked, said)

    def _warn_of_secrets(self, asked: list[str], said: list[str]) -> None:
        """One warning for the whole recording; each text is scanned once
        (every reviewer of a run shares the same long prefix)."""
        if self.warnings:
            return
        from santa_method.core.redact import find_secrets

        for where, texts in (("a request", asked), ("a reply", said)):
            for text in texts:
                if not text or text in self._scanned:
                    continue
                self._scanned.add(text)
                found = find_secrets(text)
                if found:
                    message = (
                        f"the recording in {self.recording.folder} holds what looks like a secret "
                        f"({found[0].type}, in {where}); recordings are not redacted: keep the "
                        "folder out of git and out of CI artifacts"
                    )
                    self.warnings.append(message)
                    if self.on_warning is not None:
                        self.on_warning(message)
                    return


class ReplayBackend:
    """Answers each request from a recording, never from a model."""

    name = "replay"

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.recording = recording.Recording.existing(folder)
        self.replayed = str(self.recording.folder)
        self._asked: Counter[str] = Counter()
        #: What each reply given was: (request in words, origin, model).
        self.answered: list[tuple[str, str, str | None]] = []
        #: The origin of the last reply each reviewer (by label) and the fixer got.
        self.origins: dict[str, str] = {}

    async def preflight(self) -> list[str]:
        return []

    def _reply(self, request: Any) -> dict[str, Any]:
        key = recording.digest(request)
        entry = self.recording.entry(key)
        n = self._asked[key]
        what = recording.describe(request)
        if entry is None or n >= len(entry["replies"]):
            held = "no reply" if entry is None else f"only {len(entry['replies'])} replies"
            raise NotRecorded(
                f"the recording in {self.replayed} has {held} for {what} (request "
                f"{key[:12]}): this run asks something no recorded run asked (another output, "
                "spec, rubric, model, or the texts of another santa), and a recording answers "
                "only the requests it recorded, never with a guess; record this run with "
                "--record DIR"
            )
        self._asked[key] += 1
        reply = entry["replies"][n]
        if reply.get("kind") != ("review" if isinstance(request, ReviewRequest) else "fix"):
            raise InputError(
                f"the recording's file {key}.json in {self.replayed} is damaged: "
                f"reply {n + 1} is not a {('review', 'fix')[isinstance(request, FixRequest)]}"
            )
        origin = str(reply.get("origin"))
        self.answered.append((what, origin, _str(reply.get("model"))))
        self.origins[request.label if isinstance(request, ReviewRequest) else "fixer"] = origin
        return reply

    async def review(self, request: ReviewRequest) -> ReviewReply:
        reply = self._reply(request)
        if request.on_started is not None:
            request.on_started()
        recorded, current = reply.get("canary"), recording.canary_of(request)

        def now(value: Any) -> Any:
            """The recorded canary becomes the one this round asks for."""
            if isinstance(value, str) and isinstance(recorded, str) and current:
                return value.replace(recorded, current)
            if isinstance(value, dict):
                return {k: now(v) for k, v in value.items()}
            if isinstance(value, list):
                return [now(v) for v in value]
            return value

        return self._checked(
            check_review,
            request,
            lambda: ReviewReply(
                text=now(reply.get("text", "")),
                obj=now(reply.get("obj")),
                tokens=Tokens(**_token_parts(reply)),
                cost_usd=reply.get("cost_usd"),
                model=reply.get("model"),
                failure=reply.get("failure"),
            ),
        )

    async def fix(self, request: FixRequest) -> FixReply:
        reply = self._reply(request)
        return self._checked(
            check_fix,
            request,
            lambda: FixReply(
                output=reply.get("output"),
                notes=reply.get("notes", ""),
                tokens=Tokens(**_token_parts(reply)),
                cost_usd=reply.get("cost_usd"),
                model=reply.get("model"),
            ),
        )

    def _checked(self, check: Callable[[Any, Any], Any], request: Any, build: Any) -> Any:
        """A reply a run may use, or an InputError naming the recording's file."""
        try:
            return check(self, build())
        except (BackendError, TypeError) as exc:
            raise InputError(
                f"the recording in {self.replayed} holds a reply for "
                f"{recording.describe(request)} that cannot be used: {exc}"
            ) from None


def _token_parts(reply: dict[str, Any]) -> dict[str, Any]:
    tokens = reply.get("tokens")
    if not isinstance(tokens, dict):
        return {}
    return {k: tokens[k] for k in ("input", "output", "cache_read", "cache_write") if k in tokens}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def with_origin(label: str) -> str:
    """An origin as people read it."""
    return ORIGINS.get(label, label)


__all__ = ["PREFIX", "NotRecorded", "Recorder", "ReplayBackend", "replay_folder", "with_origin"]
