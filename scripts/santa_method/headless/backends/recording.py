"""A recording of backend replies, and the one normalisation of a request.

Why: `santa run --record DIR` keeps every reply a backend gave, so that
`--backend replay:DIR` can answer the same requests again with no model and
no network (a pipeline's tests in CI, old replies gated by a newer santa).
A request holds random parts that differ on every run: the run id (or a
batch's id), the fence token around untrusted text, the canary on the
assignment's last line, and where the fixer's target lives. `normalise`
is the one place that finds them (from where santa itself writes them,
never by guessing at a shape) and puts a placeholder in their stead, in
every text of the request; `digest` is the hash of that form. Nothing else
of the request is left out but what cannot change an answer: the timeout,
the opaque session handle, the folder the backend runs in.

The folder: `manifest.json` (the format, the santa that wrote it, when,
the backends and models it holds) and one JSON file per request digest,
holding the request as normalised and its replies in the order they were
given (a request asked twice in one run, as a re-review asks it, has two).
Files are replaced atomically. A recording is the output as reviewers saw
it, like a run folder: it is not redacted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError
from santa_method.headless.backends.base import FixRequest, ReviewRequest

FORMAT = 1
MANIFEST = "manifest.json"
NOTE = (
    "Backend replies and the requests they answered, as the reviewers and the fixer saw "
    "them: not redacted. Keep this folder as private as the run folders."
)

_CANARY = re.compile(r"^santa-canary: (\S+)[ \t]*$", re.M)
_FENCE = re.compile(r"^<<<(?:SPEC|OUTPUT|FLAG) (SANTA-[0-9A-F]+)$", re.M)
_REVIEW_RUN = re.compile(r"^## Output under review \(data\): run (\S+), round (\d+), ", re.M)
_SCREEN = re.compile(r"^## Output under review \(data\): batch (\S+), screened for ", re.M)
_FIX_RUN = re.compile(r"^Run (\S+), after round (\d+)\. Target: (.+)$", re.M)
_DIGEST = re.compile(r"[0-9a-f]{64}")

Request = ReviewRequest | FixRequest


def random_parts(request: Request) -> dict[str, str]:
    """The random values of `request` (value -> placeholder), found where
    santa writes them: the canary line, the fence lines, the header naming
    the run and round (or the batch), the fix assignment's target line."""
    found: dict[str, str] = {}
    if isinstance(request, ReviewRequest):
        canaries = _CANARY.findall(request.round_part)
        if canaries:
            found[canaries[-1]] = "<canary>"
        fenced = request.prefix + request.round_part
        run = _REVIEW_RUN.search(request.round_part)
        if run:
            found[run.group(1)] = "<run>"
        screen = _SCREEN.search(request.round_part)
        if screen:
            found[screen.group(1)] = "<batch>"
    else:
        fenced = request.assignment
        fix = _FIX_RUN.search(request.assignment)
        if fix:
            found[fix.group(1)] = "<run>"
            found[fix.group(3)] = "<target>"
    for token in _FENCE.findall(fenced):
        found[token] = "<fence>"
    return found


def _replace(text: str, parts: dict[str, str]) -> str:
    # Longest first, so a value that holds another is replaced whole.
    for value in sorted(parts, key=len, reverse=True):
        text = text.replace(value, parts[value])
    return text


def normalise(request: Request) -> dict[str, Any]:
    """`request` as data with its random parts replaced by placeholders: two
    requests a run makes alike, run after run, have the same form."""
    parts = random_parts(request)
    if isinstance(request, ReviewRequest):
        return {
            "kind": "review",
            "label": request.label,
            "model": request.model,
            "prefix": _replace(request.prefix, parts),
            "round_part": _replace(request.round_part, parts),
            "followups": [
                [_replace(f.reply, parts), _replace(f.feedback, parts)] for f in request.followups
            ],
        }
    return {
        "kind": "fix",
        "model": request.model,
        "assignment": _replace(request.assignment, parts),
        "output": _replace(request.output, parts),
    }


def digest(request: Request) -> str:
    """The SHA-256 of the normalised request (the name of its file in a recording)."""
    text = json.dumps({"format": FORMAT, **normalise(request)}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def canary_of(request: Request) -> str | None:
    """The canary a review request's assignment ends with."""
    if not isinstance(request, ReviewRequest):
        return None
    found = _CANARY.findall(request.round_part)
    return found[-1] if found else None


def describe(request: Request) -> str:
    """The request in words a person finds it by."""
    if isinstance(request, ReviewRequest):
        run = _REVIEW_RUN.search(request.round_part)
        where = f" in round {run.group(2)}" if run else ""
        if _SCREEN.search(request.round_part):
            where = " of a batch's screen"
        asks = f", ask {len(request.followups) + 1}" if request.followups else ""
        who = f"reviewer {request.label}" if request.label else "a reviewer"
        return f"{who}'s review{where}{asks}"
    fix = _FIX_RUN.search(request.assignment)
    return f"the fixer's fix after round {fix.group(2)}" if fix else "a fix"


class Recording:
    """A folder of recorded replies: read by replay, written by the recorder."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    # -- reading -----------------------------------------------------------

    @classmethod
    def existing(cls, folder: str | os.PathLike[str]) -> Recording:
        """The recording at `folder`, or an InputError saying why it is none."""
        recording = cls(folder)
        manifest = recording.folder / MANIFEST
        if not recording.folder.is_dir():
            raise InputError(f"there is no recording at {recording.folder} (not a folder)")
        if not manifest.is_file():
            raise InputError(
                f"{recording.folder} holds no santa recording (no {MANIFEST}); "
                "make one with santa run --record DIR"
            )
        data = recording._load(manifest)
        if data.get("format") != FORMAT:
            raise InputError(
                f"the recording at {recording.folder} is in format {data.get('format')!r}; "
                f"this santa reads format {FORMAT}: record it again"
            )
        return recording

    def manifest(self) -> dict[str, Any]:
        path = self.folder / MANIFEST
        return self._load(path) if path.is_file() else {}

    def entry(self, key: str) -> dict[str, Any] | None:
        """The file of one request digest, or None when there is none."""
        path = self.folder / f"{key}.json"
        if not _DIGEST.fullmatch(key) or not path.is_file():
            return None
        data = self._load(path)
        replies = data.get("replies")
        if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
            raise InputError(f"the recording's file {path} is damaged: it holds no list of replies")
        return data

    def entries(self) -> Iterator[dict[str, Any]]:
        for path in sorted(self.folder.glob("*.json")):
            if _DIGEST.fullmatch(path.stem):
                found = self.entry(path.stem)
                if found is not None:
                    yield found

    def _load(self, path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise InputError(f"the recording's file {path} cannot be read: {exc}") from None
        if not isinstance(data, dict):
            raise InputError(f"the recording's file {path} is damaged: not a JSON object")
        return data

    # -- writing -----------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time, across processes recording into one folder."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def add(self, request: Request, reply: dict[str, Any], *, first: bool, when: str) -> None:
        """Keep `reply` for `request`: after the replies kept before, or, for
        the `first` time this recorder sees the request, in their place (a
        run recorded again replaces what it recorded before)."""
        from santa_method import __version__
        from santa_method.state.jsonfile import write_atomic

        key = digest(request)
        with self._locked():
            held = None if first else self.entry(key)
            form = normalise(request)
            entry = held or {
                "format": FORMAT,
                "digest": key,
                "kind": form["kind"],
                "label": form.get("label"),
                "model": form.get("model"),
                "what": describe(request),
                "request": form,
                "replies": [],
            }
            entry["replies"] = [*entry["replies"], reply]
            write_atomic(self.folder / f"{key}.json", entry, indent=1)
            manifest = self.manifest() or {"format": FORMAT, "created": when}
            backends = set(manifest.get("backends") or [])
            models = set(manifest.get("models") or [])
            backends.add(str(reply.get("backend") or "?"))
            if isinstance(reply.get("model"), str):
                models.add(reply["model"])
            manifest.update(
                format=FORMAT,
                santa=__version__,
                updated=when,
                backends=sorted(backends),
                models=sorted(models),
                requests=sum(1 for p in self.folder.glob("*.json") if _DIGEST.fullmatch(p.stem)),
                note=NOTE,
            )
            write_atomic(self.folder / MANIFEST, manifest, indent=1)
