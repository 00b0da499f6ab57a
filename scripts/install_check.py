"""Notice local files that were copied into the plugin's installed copy.

Claude Code copies a marketplace that is a folder whole, git-ignored files
included: a working clone brings its `.venv` (hundreds of MB), a `.env` (a
secret) and `.santa/` run state into the plugin cache. Nothing of santa's
reads or uses them, but the user should know, once, what was copied, where,
and how to reinstall cleanly. Run from the SessionStart bootstrap, so it is
standard library only, and it looks at names only: no copied file is ever
opened. What runs with `claude --plugin-dir` is the user's own folder, not a
copy, and is never reported.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shlex
from pathlib import Path

# Never part of a plugin, whatever .gitignore says.
ALWAYS = (".env", ".env.*", ".venv/", ".santa/")
# Written by running the plugin's own Python from the copy: not copied dirt.
RUNTIME = ("__pycache__/", "*.pyc")
STATE_NAME = "install-check.json"
MAX_ENTRIES = 20000  # a walk that long is itself a sign; stop and report what was found


def _patterns(root: Path) -> list[str]:
    """The shipped .gitignore's patterns (a tracked file), then ALWAYS."""
    found: list[str] = []
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for line in lines:
        line = line.rstrip()
        if line and not line.startswith("#"):
            found.append(line)
    return [*found, *ALWAYS]


def ignored(rel: str, is_dir: bool, patterns: list[str]) -> bool:
    """Whether git would ignore `rel` (a path relative to the root, with `/`).

    The subset of gitignore rules that .gitignore files use: `!` negation
    (the last match wins), a trailing `/` for folders only, a leading or
    inner `/` anchoring the pattern at the root, otherwise a match on the
    name at any depth.
    """
    result = False
    name = rel.rsplit("/", 1)[-1]
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern[1:] if negate else pattern
        dir_only = body.endswith("/")
        body = body.rstrip("/")
        if not body or (dir_only and not is_dir):
            continue
        anchored = "/" in body
        subject = rel if anchored else name
        if fnmatch.fnmatchcase(subject, body.lstrip("/")):
            result = not negate
    return result


def local_files(root: Path) -> list[str]:
    """Copied files and folders that git would ignore (folders end in `/`).

    A matching folder is reported without looking inside it; symlinks are
    never followed.
    """
    patterns = _patterns(root)
    found: list[str] = []
    seen = 0
    stack = [""]
    while stack and seen < MAX_ENTRIES:
        rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(root / rel_dir), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if ignored(rel, is_dir, RUNTIME):
                continue
            if ignored(rel, is_dir, patterns):
                found.append(rel + "/" if is_dir else rel)
            elif is_dir:
                stack.append(rel)
    return sorted(found)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def _directory_source(plugins: Path, market: str) -> str | None:
    """The folder a directory marketplace was added from, as Claude Code records it."""
    known = _read_json(plugins / "known_marketplaces.json")
    entry = known.get(market) if isinstance(known, dict) else None
    source = entry.get("source") if isinstance(entry, dict) else None
    if isinstance(source, dict) and source.get("source") == "directory":
        path = source.get("path")
        return path if isinstance(path, str) else None
    return None


def copies(root: Path) -> list[tuple[Path, str | None, str | None]]:
    """The installed copies of this plugin to check: (copy, marketplace, source folder).

    Claude Code runs a plugin from its cache copy (`plugins/cache/MARKET/
    PLUGIN/VERSION`), except one from a directory marketplace, which it runs
    from the folder itself while the copy sits in the cache. So: this root
    when it is a cache copy, else every cache copy installed from a directory
    marketplace that is this root. `claude --plugin-dir` copies nothing and
    matches neither.
    """
    parents = root.parents
    if len(parents) >= 4 and parents[2].name == "cache":
        if (root / ".git").exists():
            return []
        market = parents[1].name
        return [(root, market, _directory_source(parents[3], market))]
    plugins = _config_dir() / "plugins"
    installed = _read_json(plugins / "installed_plugins.json")
    entries = installed.get("plugins") if isinstance(installed, dict) else None
    found = []
    for plugin_id, installs in (entries or {}).items():
        name, _, market = str(plugin_id).partition("@")
        source = _directory_source(plugins, market) if name == "santa-method" else None
        if source is None or Path(source).resolve() != root.resolve():
            continue
        for install in installs if isinstance(installs, list) else []:
            path = install.get("installPath") if isinstance(install, dict) else None
            if isinstance(path, str) and Path(path).is_dir():
                found.append((Path(path), market, source))
    return found


def message(copy: Path, found: list[str], market: str | None, source: str | None) -> str:
    """What the user is told: what was copied, where, and how to reinstall."""
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    where = f"from {source} " if source else ""
    text = (
        f"santa-method: the installed copy of this plugin holds local files that never belong "
        f"in a plugin: {shown}. Claude Code copied them {where}into {copy} (a marketplace that "
        "is a folder is copied whole, git-ignored files included). santa-method does not read "
        "or use them, but they take space and a .env may hold secrets."
    )
    if market is None:
        return text + " Reinstall the plugin from a clean checkout or the hosted repository."
    clean = "~/santa-method-plugin"
    steps = [
        f"claude plugin uninstall santa-method@{market}",
        f"claude plugin marketplace remove {market}",
    ]
    if source and (Path(source) / ".git").exists():
        steps.append(f"git clone {shlex.quote(source)} {clean}")
        steps += [f"claude plugin marketplace add {clean}"]
        steps.append("claude plugin install santa-method@santa-method")
        return text + " To reinstall cleanly, run: " + " && ".join(steps)
    return (
        text
        + " To reinstall cleanly, run: "
        + " && ".join(steps)
        + "; then add a clean checkout (git clone the repository into a new folder and "
        "`claude plugin marketplace add` that folder) or the hosted repository, and install "
        "santa-method from it."
    )


def notice(root: Path, data_dir: str | None) -> str | None:
    """The message to show, or None: nothing copied, or already told.

    Told once per copy and finding: the finding's digest is kept in the
    plugin's data folder (without one, the notice repeats every session).
    """
    texts, told = [], []
    for copy, market, source in copies(root):
        found = local_files(copy)
        if found:
            texts.append(message(copy, found, market, source))
            told.append([str(copy), found])
    if not texts:
        return None
    digest = hashlib.sha256(json.dumps(told).encode()).hexdigest()
    state = Path(data_dir) / STATE_NAME if data_dir else None
    if state is not None:
        previous = _read_json(state)
        if isinstance(previous, dict) and previous.get("told") == digest:
            return None
        try:
            state.parent.mkdir(parents=True, exist_ok=True)
            temp = state.with_suffix(".tmp")
            temp.write_text(json.dumps({"told": digest}) + "\n", encoding="utf-8")
            os.replace(temp, state)
        except OSError:
            pass
    return "\n\n".join(texts)
