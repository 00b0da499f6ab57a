"""Where the launchers enter the helper: `python -m santa_method` and hooks.

The PreToolUse guard runs on every Bash, Write and Edit call of a Claude
Code session, so this module and everything the guard imports before it
knows that a run is open stay within the standard library's cheapest parts
(`json`, `os`, `re`, `shlex`). The guard needs no dependency at all, so
`libexec/santa` starts its interpreter with `-S` (no `site`: a fifth of a bare
start) and the site directories are added here only for the hooks and
commands that need them. Commands other than `hook NAME` go to the CLI.

`libexec/santa` may pick a `python3` it has not checked: it then sets
`SANTA_LAUNCHER_CHECK=1`, and this entry looks for Python 3.11 and the
helper's dependencies without importing them. When one is missing it exits
`UNAVAILABLE` (69, "service unavailable") before doing anything, and the
launcher answers as if it had found no interpreter at all: one process,
where asking first would start a second interpreter on every call. The
guard checks only the version: it runs on the standard library alone.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# What the helper imports besides the standard library (PyYAML is `yaml`).
DEPENDENCIES = ("jsonschema", "fastjsonschema", "yaml", "rapidfuzz", "rich", "detect_secrets")
CHECK_VARIABLE = "SANTA_LAUNCHER_CHECK"
UNAVAILABLE = 69
MIN_PYTHON = (3, 11)
GUARD = "pretooluse-guard"  # runs on the standard library alone


def missing_dependencies() -> list[str]:
    """The dependencies this interpreter cannot find (found, not imported)."""

    def found(name: str) -> bool:
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is not None and find_spec(name, None) is not None:
                return True
        return False

    return [name for name in DEPENDENCIES if not found(name)]


def _site() -> None:
    from santa_method.claude_code.protocol import with_dependencies

    with_dependencies()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Popped so that the helper's own child processes never inherit it.
    check = os.environ.pop(CHECK_VARIABLE, None) == "1"
    if check and sys.version_info < MIN_PYTHON:
        return UNAVAILABLE
    if len(args) == 2 and args[0] == "hook":
        from santa_method.claude_code.entry import run
        from santa_method.claude_code.protocol import HOOK_NAMES, read_input

        if args[1] in HOOK_NAMES:
            if args[1] != GUARD:
                _site()
                if check and missing_dependencies():
                    return UNAVAILABLE
            out = run(args[1], read_input())
            if out:
                print(out)
            return 0
    _site()
    if check and missing_dependencies():
        return UNAVAILABLE
    from santa_method.cli import main as cli_main

    return cli_main(args)
