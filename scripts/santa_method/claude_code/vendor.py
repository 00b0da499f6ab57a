"""`santa init`: drop the method into a repository that does not load the plugin.

The skill, the commands and both agents are copied into `DIR/.claude/`
(agents renamed `santa-reviewer` and `santa-fixer`, commands prefixed
`santa-`), the hooks are merged into `DIR/.claude/settings.json`
without losing anything already there, and `DIR/.gitattributes` gets the
log's union merge (`LOG_ATTRIBUTE`), so a team's committed log merges. The hooks call a small launcher,
`.claude/santa/santa-hook`, that finds the helper in the repository's
environment and refuses santa's own agents when it cannot, because a hook
command that is not found would let everything through.

Idempotent: files that already hold the same text are left alone, files
changed by someone are kept unless `force` is set.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from santa_method import INSTALL_HINT
from santa_method.claude_code.protocol import PLUGIN, ROLES, plugin_agent, vendored_agent
from santa_method.core.data import plugin_file
from santa_method.core.errors import InputError
from santa_method.core.files import (
    MAX_RUBRIC_BYTES,
    check_folder,
    os_error,
    path_kind,
    read_text,
    too_deep,
)
from santa_method.state.atomic import replace_text

HOOK_LAUNCHER = ".claude/santa/santa-hook"
COMMANDS = ("verify", "batch", "metrics", "escape")
# (event, matcher, handler): the same hooks as the plugin's hooks/hooks.json.
HOOKS = (
    ("PreToolUse", "Agent", "pretooluse-agent"),
    ("PreToolUse", "Bash|Write|Edit|MultiEdit|NotebookEdit|SendMessage", "pretooluse-guard"),
    ("SubagentStop", None, "subagent-stop"),
)


#: The log may be committed; teams then append to it on every branch, and
#: git's `union` driver merges two such appends without a conflict.
LOG_ATTRIBUTE = ".santa/log.jsonl merge=union"
_ATTRIBUTES_NOTE = "# santa-method: merge the iteration log of two branches by keeping both sides' lines\n"


@dataclass
class InitResult:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    settings: str = "unchanged"
    attributes: str = "unchanged"
    """What became of `.gitattributes`: created, updated, unchanged, or kept
    (it sets another merge for the log, which is the user's to choose)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "unchanged": self.unchanged,
            "kept": self.kept,
            "settings": self.settings,
            "attributes": self.attributes,
        }


def merge_attributes(text: str | None) -> tuple[str | None, str]:
    """`.gitattributes` with the log's union merge: the new text (None when
    nothing changes) and what happened. A line of the user's that already
    sets a merge for the log is theirs, and is kept."""
    if text is None:
        return _ATTRIBUTES_NOTE + LOG_ATTRIBUTE + "\n", "created"
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] != ".santa/log.jsonl":
            continue
        merges = [w for w in words[1:] if w.lstrip("-!").split("=", 1)[0] == "merge"]
        if merges:
            return None, "unchanged" if merges[-1] == "merge=union" else "kept"
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text if not text or text.endswith("\n") else text + newline
    addition = (_ATTRIBUTES_NOTE + LOG_ATTRIBUTE + "\n").replace("\n", newline)
    return body + (newline if body.strip() else "") + addition, "updated"


def _rename(text: str) -> str:
    """Plugin names to vendored names, agents and slash commands, so the
    copies name only what exists where they are (the plugin's texts name
    only the plugin's)."""
    text = re.sub(rf"/{PLUGIN}:(verify|batch|metrics|escape)\b", r"/santa-\1", text)
    for role in ROLES:
        text = re.sub(rf"\b{re.escape(plugin_agent(role))}\b", vendored_agent(role), text)
    return text


def _agent(text: str, name: str) -> str:
    return re.sub(r"^name:\s*\S+\s*$", f"name: {name}", text, count=1, flags=re.MULTILINE)


def vendored_files() -> dict[str, str]:
    """Relative path under DIR -> content."""
    files = {
        ".claude/skills/santa-method/SKILL.md": _rename(
            plugin_file("SKILL.md").read_text(encoding="utf-8")
        )
    }
    for role in ROLES:
        body = plugin_file(f"agents/{role}.md").read_text(encoding="utf-8")
        name = vendored_agent(role)
        files[f".claude/agents/{name}.md"] = _agent(_rename(body), name)
    for name in COMMANDS:
        body = plugin_file(f"commands/{name}.md").read_text(encoding="utf-8")
        files[f".claude/commands/santa-{name}.md"] = _rename(body)
    launcher = (Path(__file__).parent / "santa-hook.sh").read_text(encoding="utf-8")
    files[HOOK_LAUNCHER] = launcher.replace("@INSTALL_HINT@", INSTALL_HINT)
    return files


def _hook_command(name: str) -> str:
    return f'"$CLAUDE_PROJECT_DIR"/{HOOK_LAUNCHER} {name}'


def merge_settings(settings: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Add santa's hooks to a settings object; return it and whether it changed."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InputError(".claude/settings.json has a 'hooks' value that is not an object")
    changed = False
    for event, matcher, name in HOOKS:
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise InputError(f".claude/settings.json hooks.{event} is not a list")
        command = _hook_command(name)
        present = [
            h
            for entry in entries
            if isinstance(entry, dict)
            for h in entry.get("hooks", [])
            if isinstance(h, dict) and h.get("command") == command
        ]
        # A PreToolUse hook that fails (a launcher gone, a crash) blocks the
        # call instead of letting it through, as the plugin's do; a hook an
        # older `santa init` wrote gets the key too.
        blocking = {"onFailure": "block"} if event == "PreToolUse" else {}
        for h in present:
            if blocking and h.get("onFailure") != "block":
                h.update(blocking)
                changed = True
        if present:
            continue
        hook = {"type": "command", "command": command, "timeout": 60, **blocking}
        entry: dict[str, Any] = {"hooks": [hook]}
        if matcher:
            entry = {"matcher": matcher, **entry}
        entries.append(entry)
        changed = True
    return settings, changed


def _holds(path: Path, content: str) -> bool:
    """Whether `path` already holds `content` (unreadable, a FIFO included, counts as changed)."""
    try:
        text = read_text(path, "vendored file")
    except InputError:
        return False
    return text.replace("\r\n", "\n") == content  # as a checkout with CRLF endings reads


def _read_settings(path: Path) -> dict[str, Any]:
    """The settings object at `path` ({} when there is none), read through
    the shared checks: a FIFO, a loop, a directory or a huge file is refused
    before anything is read."""
    if path_kind(path) == "missing" and not path.is_symlink():
        return {}
    text = read_text(path, "settings file", MAX_RUBRIC_BYTES)
    try:
        settings = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON ({exc.msg}); fix it first") from None
    except RecursionError:
        raise too_deep("settings file", path) from None
    if not isinstance(settings, dict):
        raise InputError(f"{path} does not hold a JSON object")
    return settings


def _read_attributes(path: Path) -> str | None:
    """`.gitattributes` as text (None when there is none), read through the
    shared checks, before anything is written."""
    if path_kind(path) == "missing" and not path.is_symlink():
        return None
    return read_text(path, "attributes file", MAX_RUBRIC_BYTES)


def _refuse_bad_links(root: Path, files: list[str | Path]) -> None:
    """A folder on the way to a vendored file that is a broken symlink (or a
    loop) would surface mid-write as "File exists"; name it before anything
    is written."""
    seen: set[Path] = set()
    for rel in files:
        for depth in range(1, len(Path(rel).parts)):
            folder = root.joinpath(*Path(rel).parts[:depth])
            if folder in seen or not folder.is_symlink():
                continue
            seen.add(folder)
            kind = path_kind(folder)
            if kind == "loop":
                raise InputError(f"cannot write into '{folder}': it is a symlink loop")
            if kind == "missing":
                raise InputError(
                    f"cannot write into '{folder}': it is a broken symlink (to "
                    f"'{os.readlink(folder)}'); remove it, or create the folder it points to"
                )


def init(directory: str | Path, *, force: bool = False) -> InitResult:
    check_folder(directory, "repository")
    root = Path(directory)
    # Read settings.json before writing anything: a file we cannot merge
    # stops the whole command, so a half-done setup never has files
    # without the hooks that guard them.
    settings_path = root / ".claude" / "settings.json"
    settings = _read_settings(settings_path)
    try:
        merged, changed = merge_settings(settings)
        settings_text = json.dumps(merged, indent=2) + "\n"
    except RecursionError:  # loaded, yet too deep to write back
        raise too_deep("settings file", settings_path) from None
    attributes_path = root / ".gitattributes"
    attributes, said = merge_attributes(_read_attributes(attributes_path))
    _refuse_bad_links(root, [*vendored_files(), settings_path.relative_to(root)])
    result = InitResult(attributes=said)
    path = settings_path
    try:
        for rel, content in vendored_files().items():
            path = root / rel
            if path.exists():
                if _holds(path, content):
                    if rel == HOOK_LAUNCHER:
                        path.chmod(0o755)  # a copy may have lost its mode; the hooks need it
                    result.unchanged.append(rel)
                    continue
                if not force:
                    result.kept.append(rel)
                    continue
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_text(path, content)
            if rel == HOOK_LAUNCHER:
                path.chmod(0o755)
            result.written.append(rel)
        path = settings_path
        if changed or not settings_path.exists():
            settings_path.parent.mkdir(parents=True, exist_ok=True)
            replace_text(settings_path, settings_text)
            result.settings = "updated"
        path = attributes_path
        if attributes is not None:
            replace_text(attributes_path, attributes)
    except OSError as exc:  # a part of .claude/ that is a loop, a file, or not writable
        raise os_error("file", path, exc, "write") from None
    return result
