"""`last` is checked: the copy of the main agent's previous reply must be that reply.

To verify "your last reply", the main agent writes it to
`.santa/inputs/last-output.md` itself, and a model copying a long reply can
leave a sentence out (a real one dropped exactly the false sentence, and the
run shipped). Claude Code gives every hook the session's own transcript, so
the PreToolUse guard compares the copy with the reply as the transcript
holds it before `santa round start` may open a run on it, and refuses a copy
that differs, saying what differs. With no transcript to read, nothing can
be compared and the run is refused: fail closed.

Pure functions find the previous reply in transcript records and describe a
difference; `check_command` is the I/O edge the hook calls.
"""

from __future__ import annotations

import difflib
import re
import shlex
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from santa_method.core.files import read_exact

LAST_PARTS = (".santa", "inputs", "last-output.md")
_SHELL_OPS = frozenset({";", "&&", "||", "|", "&"})
# After . ! ? and a space, after the CJK full stop, ! and ? (no space follows), or a newline.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])|\n+")
_SHOWN = 3  # differences named in a refusal; the rest are counted


def _content(record: Mapping[str, Any]) -> Any:
    message = record.get("message")
    return message.get("content") if isinstance(message, Mapping) else None


def _is_prompt(record: Mapping[str, Any]) -> bool:
    """A user turn: what the user (or Claude Code on their behalf) said, not a tool result."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary"):
        return False
    content = _content(record)
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        kinds = {b.get("type") for b in content if isinstance(b, Mapping)}
        return "text" in kinds and "tool_result" not in kinds
    return False


def _texts(record: Mapping[str, Any]) -> list[str]:
    content = _content(record)
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(b.get("text") or "")
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and str(b.get("text") or "").strip()
    ]


def _readings(turn: list[tuple[str, str]]) -> list[str]:
    """A turn's text read as a reply: each message (records sharing a message
    id are one message, as Claude Code may store one message in parts), and
    all of the turn's text in order."""
    ids = list(dict.fromkeys(ident for ident, _ in turn))
    messages = ["\n\n".join(text for ident, text in turn if ident == i) for i in ids]
    return [*messages, "\n\n".join(text for _, text in turn)]


def previous_reply(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The main agent's previous reply as the transcript holds it, as candidates.

    The previous reply is the assistant text of the last turn before the
    current one (the current turn starts at the last user prompt, the one
    that asked for the verification): its last message, or all its text.
    Text the agent wrote in the current turn counts as well ("write it, then
    verify it"). Empty when the agent has replied nothing yet.
    """
    turns: list[list[tuple[str, str]]] = [[]]  # per turn: (message id, text)
    for record in records:
        if _is_prompt(record):
            turns.append([])
        elif record.get("type") == "assistant" and not record.get("isSidechain"):
            message = record.get("message")
            ident = str(message.get("id") or id(record)) if isinstance(message, Mapping) else ""
            turns[-1] += [(ident, text) for text in _texts(record)]
    earlier = [turn for turn in turns[:-1] if turn]
    found: list[str] = []
    if earlier:
        readings = _readings(earlier[-1])
        found += [readings[-2], readings[-1]]  # the last message, the whole turn
    if turns[-1]:
        found += _readings(turns[-1])
    return list(dict.fromkeys(found))


def normalise(text: str) -> str:
    """What a faithful copy keeps: the text, up to line endings, trailing
    spaces, surrounding blank lines and Unicode normal form."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return f'"{text[: limit - 3]}..."' if len(text) > limit else f'"{text}"'


def difference(copy: str, candidates: list[str]) -> str | None:
    """None if the copy is one of the candidates; else what differs, in words."""
    mine = normalise(copy)
    wanted = [normalise(c) for c in candidates]
    if mine in wanted:
        return None
    closest = max(wanted, key=lambda c: difflib.SequenceMatcher(None, c, mine).ratio())
    theirs, ours = _sentences(closest), _sentences(mine)
    missing, added = [], []
    matcher = difflib.SequenceMatcher(None, theirs, ours, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op in ("delete", "replace"):
            missing += theirs[a1:a2]
        if op in ("insert", "replace"):
            added += ours[b1:b2]
    parts = []
    for label, items in (("left out of the copy", missing), ("not in your reply", added)):
        if items:
            shown = "; ".join(_quote(s) for s in items[:_SHOWN])
            more = f" (and {len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
            parts.append(f"{label}: {shown}{more}")
    if not parts:  # same sentences, other spacing or line breaks inside them
        parts.append("the same sentences, but not the same text (spacing or line breaks differ)")
    return "; ".join(parts)


# --- the command, the files -------------------------------------------------------


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def last_targets(command: str, cwd: str | None, _depth: int = 0) -> list[Path]:
    """The `last` copies that `santa round start` commands in `command` would
    open a new run on (a command with `--run` continues a run: not checked)."""
    words = _words(command)
    found: list[Path] = []
    if _depth < 4:  # `bash -c "santa round start ..."` is read the same way
        for word in words:
            if any(ch.isspace() for ch in word):
                found += last_targets(word, cwd, _depth + 1)
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SHELL_OPS:
            segments.append([])
        else:
            segments[-1].append(word)
    for seg in segments:
        starts = [
            i
            for i in range(len(seg) - 1)
            if seg[i] == "round"
            and seg[i + 1] == "start"
            and i
            and seg[i - 1].rsplit("/", 1)[-1] in ("santa", "santa_method")
        ]
        if not starts or "--run" in seg or any(w.startswith("--run=") for w in seg):
            continue
        rest = seg[starts[0] + 2 :]
        for i, word in enumerate(rest):
            value = None
            if word == "--against" and i + 1 < len(rest):
                value = rest[i + 1]
            elif word.startswith("--against="):
                value = word.split("=", 1)[1]
            if value:
                path = Path(value).expanduser()
                if not path.is_absolute():
                    path = Path(cwd or ".") / path
                if path.parts[-3:] == LAST_PARTS:
                    found.append(path)
    return found


def check_command(command: str, cwd: str | None, transcript_path: Any) -> str | None:
    """Why this Bash command must not open a run on its `last` copy, or None."""
    targets = last_targets(command, cwd)
    if not targets:
        return None
    from santa_method.core.redact import redact_text
    from santa_method.state import transcripts

    redo = (
        "Write your previous reply to .santa/inputs/last-output.md again, verbatim and "
        "complete (Read it first), then run the same command."
    )
    if not isinstance(transcript_path, str) or not transcript_path:
        return (
            "santa-method cannot check `last`: Claude Code gave no transcript of this session, "
            "so the copy of your previous reply cannot be compared with the reply. Ask the user "
            "to save the text to verify as a file, and verify that file."
        )
    try:
        records = transcripts.read(transcript_path)
    except (OSError, UnicodeDecodeError) as exc:
        return (
            f"santa-method cannot check `last`: this session's transcript {transcript_path} "
            f"cannot be read ({exc.__class__.__name__}). Ask the user to save the text to verify "
            "as a file, and verify that file."
        )
    candidates = previous_reply(records)
    if not candidates:
        return (
            "There is no previous reply in this session to verify as `last`: the transcript "
            "holds no reply before the current request. Ask the user what to verify."
        )
    for target in targets:
        try:
            copy = read_exact(target)
        except FileNotFoundError:
            continue  # `santa round start` says the file is missing
        except (OSError, UnicodeDecodeError) as exc:
            return f"santa-method cannot read {target} ({exc.__class__.__name__}). {redo}"
        differs = difference(copy, candidates)
        if differs:
            return redact_text(
                f"{target} is not your previous reply as this session's transcript holds it: "
                f"{differs}. {redo}"
            )
    return None
