"""Locate the packaged rubrics and schemas.

A wheel carries them under `santa_method/_data/`; an editable install (or
running from a clone) finds them at the repository root, two levels above
the package. Checking both keeps `pip install .` and `pip install -e .`
equivalent without copying files around.

The search works on strings (`data_path`): `santa validate` reads the review
schema on every cold start, and `pathlib` is a cost it otherwise never pays.
"""

from __future__ import annotations

import os
from functools import cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_CLONE = os.path.dirname(os.path.dirname(_PACKAGE))


@cache
def data_path(name: str) -> str:
    """The packaged folder `name` (rubrics, schemas) as a string."""
    for candidate in (os.path.join(_PACKAGE, "_data", name), os.path.join(_CLONE, name)):
        if os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(f"the packaged folder '{name}' is missing; reinstall santa-method")


def data_dir(name: str) -> Path:
    from pathlib import Path

    return Path(data_path(name))


def plugin_file(relative: str) -> Path:
    """A file of the Claude Code plugin (SKILL.md, agents/, commands/), for `santa init`."""
    from pathlib import Path

    for candidate in (
        Path(_PACKAGE, "_data", "plugin", relative),
        Path(_CLONE, relative),
    ):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"the plugin file '{relative}' is missing; reinstall santa-method")
