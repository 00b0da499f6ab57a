"""Small I/O helpers shared by the sub-commands: reading inputs, printing results."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from santa_method.core.errors import InputError


def read_text(path: str, what: str = "file") -> str:
    """Read a UTF-8 text file, or stdin for '-'; any failure is an input error (exit 2)."""
    if path == "-":
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
        raise InputError(f"cannot read {what} '{path}': {exc.strerror}") from None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def split_labels(text: str | None) -> list[str] | None:
    if text is None:
        return None
    labels = [part.strip() for part in text.split(",") if part.strip()]
    if len(set(labels)) != len(labels):
        raise InputError("--labels must not repeat a label")
    return labels
