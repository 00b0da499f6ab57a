"""Reading the text files a user names (outputs, specs, reviews, rubrics).

One place decides what an unreadable file looks like: an input error
(exit 2) with one sentence naming the file and the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

from santa_method.core.errors import InputError


def read_text(path: str | Path, what: str = "file") -> str:
    """Read a UTF-8 text file, or stdin for '-'."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"cannot read {what} '{path}': no such file") from None
    except IsADirectoryError:
        raise InputError(f"cannot read {what} '{path}': it is a directory") from None
    except UnicodeDecodeError:
        raise InputError(f"cannot read {what} '{path}': it is not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
