"""Small I/O helpers shared by the sub-commands: reading inputs, printing results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from santa_method.core.errors import InputError
from santa_method.core.files import read_text
from santa_method.core.numbers import Range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "add_budget_option",
    "count",
    "echo",
    "models_option",
    "number_arg",
    "out_file",
    "print_json",
    "read_text",
    "require_named_log",
    "reviewers_option",
    "say",
    "split_labels",
]


def number_arg(allowed: Range) -> Callable[[str], Any]:
    """The argparse `type=` of every numeric flag: a finite number in
    `allowed`, or a usage error (exit 2) before anything runs."""

    def parse(text: str) -> Any:
        try:
            return allowed.parse(text, "the value")
        except InputError:
            try:
                why = allowed.why(float(text))  # --reviewers 1: the one sentence
            except ValueError:
                why = ""
            raise argparse.ArgumentTypeError(
                f"expected {allowed.describe()}, got {text!r}{why}"
            ) from None

    parse.__name__ = "number"
    return parse


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 run`, `2 runs`: a number and its noun, in the singular for one."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {plural or (noun + 'es' if noun.endswith(('ch', 'sh', 's', 'x')) else noun + 's')}"


def print_json(data: Any) -> None:
    """Every `--json` answer, redacted (CI logs keep what is printed)."""
    from santa_method.core.redact import redact_json

    sys.stdout.write(json.dumps(redact_json(data), indent=2, ensure_ascii=False) + "\n")


def say(text: str, stream: Any = None) -> None:
    """Every readable answer, redacted: what santa prints is shown to people
    (and kept by CI), so a quoted secret must not reach it."""
    from santa_method.core.redact import redact_text

    (stream or sys.stdout).write(redact_text(text))


def echo(text: object = "", file: Any = None) -> None:
    """`print` for the sub-commands, redacted like `say` (one line, newline added)."""
    say(f"{text}\n", file)


def split_labels(text: str | None) -> list[str] | None:
    if text is None:
        return None
    labels = [part.strip() for part in text.split(",") if part.strip()]
    if len(set(labels)) != len(labels):
        raise InputError("--labels must not repeat a label")
    return labels


def models_option(text: str | None, configured: Any) -> list[str] | None:
    """`--models M1,M2`, else the config's list (a per-label mapping is for runs inside Claude Code)."""
    if text is not None:
        models = [m.strip() for m in text.split(",") if m.strip()]
        if not models:
            raise InputError("--models needs at least one model name")
        return models
    return list(configured) if isinstance(configured, tuple) else None


def reviewers_option(
    models_flag: str | None, reviewers_flag: int | None, config: Any
) -> tuple[list[str] | None, int | None]:
    """The models list and reviewer count of a headless run or batch, from
    the flags over the config, checked by the one rule (`core/reviewers.py`)
    with the names the user wrote: `--models` sets the count, the config's
    `reviewers` yields to it, and a `--reviewers` that says otherwise is refused."""
    from santa_method.core.reviewers import reviewer_slots

    models = models_option(models_flag, config.models)
    if reviewers_flag is not None:
        reviewers: int | None = reviewers_flag
    else:
        reviewers = None if models_flag is not None else config.reviewers
    reviewer_slots(
        models,
        reviewers,
        what="--models" if models_flag is not None else "the config's models",
        count_what="--reviewers" if reviewers_flag is not None else "the config's reviewers",
    )
    return models, reviewers


def out_file(value: str) -> Path:
    """`--out FILE` checked before any work, by the rule its writer follows
    (`state.atomic.write_out`): a regular file in a folder that exists is
    replaced atomically, a FIFO, a character device, `/dev/stdout` or `-` is
    written to as a stream, anything else is refused."""
    from pathlib import Path

    from santa_method.state.atomic import out_kind

    out_kind(value)
    return Path(value)


def require_named_log(flag: str | None, path: Any) -> None:
    """A log the user named with --log must exist: a typo must not read as "no runs".
    The default log (or one from SANTA_LOG or the config) may be absent: no runs yet."""
    import os

    if flag and not os.path.lexists(path):
        raise InputError(f"cannot read the log '{path}': no such file")


def add_budget_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--budget-usd USD`, the one name for a money budget (as `budget_usd` in
    the config); `--max-cost-usd`, its old spelling, still works, unlisted."""
    from santa_method.core import numbers

    amount = number_arg(numbers.BUDGET_USD)
    parser.add_argument(
        "--budget-usd",
        type=amount,
        metavar="USD",
        help=f"{help_text} (config: budget_usd; --max-cost-usd is the old spelling)",
    )
    parser.add_argument("--max-cost-usd", dest="budget_usd", type=amount, help=argparse.SUPPRESS)
