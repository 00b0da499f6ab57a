"""Locate the packaged rubrics and schemas.

A wheel carries them under `santa_method/_data/`; an editable install (or
running from a clone) finds them at the repository root, two levels above
the package. Checking both keeps `pip install .` and `pip install -e .`
equivalent without copying files around.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


@cache
def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the packaged folder '{name}' is missing; reinstall santa-method")


def plugin_file(relative: str) -> Path:
    """A file of the Claude Code plugin (SKILL.md, agents/, commands/), for `santa init`."""
    for candidate in (_PACKAGE / "_data" / "plugin" / relative, _PACKAGE.parent.parent / relative):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"the plugin file '{relative}' is missing; reinstall santa-method")
