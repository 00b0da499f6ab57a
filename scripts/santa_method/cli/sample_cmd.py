"""`santa sample`: which items of a batch to review, and what reviewing them promises.

This module is the I/O edge of core/sampling.py: it turns ITEMS arguments
(files, folders, JSONL files) into item ids and strata, reads an exclusion
list, and prints the plan. `read_items` is public so that `santa batch` can
resolve ITEMS the same way.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NamedTuple

from santa_method.cli._io import echo, number_arg
from santa_method.core import numbers
from santa_method.core.errors import InputError

_MISSING_STRATUM = "(none)"

_EPILOG = """\
ITEMS
  a file          one item; its id is the path as given
  a folder        every file under it, recursively, sorted, hidden files and
                  folders skipped; ids are the paths (folder/sub/file); any
                  other entry that is not a regular file (a FIFO, a device,
                  a broken or looping symlink, a link to a folder) is an
                  error, never skipped
  FILE.jsonl      one item per non-blank line, each a JSON object; its id is
                  the object's "id" field, else its line number (1-based)
  Ids must be unique across all ITEMS.

plans
  flat (default)  max(--min, ceil(--rate x N)) items, never more than N; the
                  plan states its detection probability at 5 % prevalence.
  guarantee       --prevalence P --confidence C: the smallest sample that sees
                  at least one defective item with probability >= C when a
                  share P of the items is defective (exact hypergeometric,
                  drawn without replacement). Below one item (P x N < 1) the
                  plan assumes one defective item.
  Probabilities are rounded down, so the statement never overstates them.

strata
  --strata FIELD  JSONL items: the value of FIELD in each object (a missing
                  field is the stratum "(none)"); files: only "dir", the
                  file's parent folder. The sample is allocated proportionally
                  (largest remainder) with at least one item per stratum, and
                  grows to the number of strata if it was smaller. The stated
                  probability is then the worst case over how the defective
                  items could be spread across strata.

--exclude FILE    item ids to leave out (one per line, '#' comments allowed),
                  or the --json output of an earlier `santa sample` (its
                  "items"): the plan covers the remaining items only.

output
  the plan's statement and seed on the first line, then the chosen ids in
  input order, one per line; --json prints n, population,
  detection_probability, items, method, seed, strata, statement and more.

exit codes: 0 success, 2 usage or input error.
"""


class SourceItem(NamedTuple):
    """One item of a batch: its id, its stratum, and where its content lives.

    A NamedTuple rather than a dataclass: importing dataclasses costs the
    whole CLI's cold start ~15 ms, and this module loads on every `santa` call.
    """

    id: str
    stratum: str | None = None
    path: str | None = None
    """The file holding the item (file and folder ITEMS)."""
    record: dict[str, Any] | None = None
    """The JSON object (JSONL ITEMS)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sample",
        help="choose a reproducible sample of a batch and state what it can catch",
        description=(
            "Choose which items of a batch to review, reproducibly (seeded), and state the "
            "plan's guarantee: the probability that the sample contains at least one "
            "defective item when a given share of the batch is defective."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("items", nargs="+", metavar="ITEMS", help="files, folders or JSONL files")
    add_sampling_arguments(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def add_sampling_arguments(p: argparse.ArgumentParser) -> None:
    """The plan's options, shared with `santa batch` and `santa batch plan`."""
    p.add_argument(
        "--rate",
        type=number_arg(numbers.SHARE),
        metavar="R",
        help="flat plan: share of items to review (default 0.15)",
    )
    p.add_argument(
        "--min",
        dest="minimum",
        type=number_arg(numbers.MIN_ITEMS),
        metavar="N",
        help="flat plan: review at least this many items (default 5)",
    )
    p.add_argument(
        "--prevalence",
        type=number_arg(numbers.FRACTION),
        metavar="P",
        help="guarantee plan: the defect share to catch, as a fraction (0.05 = 5 %%)",
    )
    p.add_argument(
        "--confidence",
        type=number_arg(numbers.FRACTION),
        metavar="C",
        help="guarantee plan: the probability of catching it (0.95 = 95 %%)",
    )
    p.add_argument(
        "--strata", metavar="FIELD", help="stratify by a JSONL field, or 'dir' for files"
    )
    p.add_argument(
        "--exclude", metavar="FILE", help="ids to leave out, or an earlier --json output"
    )
    p.add_argument(
        "--seed",
        type=number_arg(numbers.SEED),
        metavar="N",
        help="random seed (default: a fresh one, printed)",
    )


def check_sampling_arguments(args: argparse.Namespace) -> None:
    if (args.prevalence is None) != (args.confidence is None):
        raise InputError(
            "--prevalence and --confidence go together: give both for a guarantee plan, "
            "or neither for the flat plan"
        )
    if args.confidence is not None and (args.rate is not None or args.minimum is not None):
        raise InputError("--rate and --min set the flat plan; leave them out with --confidence")


# ---------------------------------------------------------------- reading ITEMS


def _stratum_value(value: Any) -> str:
    if value is None:
        return _MISSING_STRATUM
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _jsonl_items(arg: str, strata_field: str | None) -> list[SourceItem]:
    from santa_method.cli._io import read_text

    items: list[SourceItem] = []
    for number, line in enumerate(read_text(arg, "items file").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{arg} line {number} is not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise InputError(f"{arg} line {number} is nested too deeply to be an item") from None
        if not isinstance(record, dict):
            raise InputError(f"{arg} line {number} is not a JSON object")
        raw_id = record.get("id", number)
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            raise InputError(f'{arg} line {number}: "id" must be a string or a whole number')
        stratum = _stratum_value(record.get(strata_field)) if strata_field else None
        items.append(SourceItem(id=str(raw_id), stratum=stratum, record=record))
    return items


def _file_item(path: Path, strata_field: str | None) -> SourceItem:
    stratum = str(path.parent) if strata_field else None
    return SourceItem(id=str(path), stratum=stratum, path=str(path))


def read_items(args: list[str], strata_field: str | None = None) -> list[SourceItem]:
    """Resolve ITEMS arguments into items, in a stable order (see the epilog)."""
    items: list[SourceItem] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            if strata_field not in (None, "dir"):
                raise InputError(
                    f"--strata {strata_field}: files can only be stratified by 'dir' "
                    "(their parent folder)"
                )
            from santa_method.core.files import list_files

            items.extend(_file_item(Path(f), strata_field) for f in list_files(path))
        elif path.is_file() and path.suffix.lower() == ".jsonl":
            items.extend(_jsonl_items(arg, strata_field))
        elif path.is_file():
            if strata_field not in (None, "dir"):
                raise InputError(
                    f"--strata {strata_field}: files can only be stratified by 'dir' "
                    "(their parent folder)"
                )
            items.append(_file_item(path, strata_field))
        else:
            from santa_method.core.files import path_kind

            kind = path_kind(path)
            reason = {
                "loop": "it is a symlink loop",
                "other": "it is neither a file nor a folder",
            }.get(kind, "no such file or folder")
            raise InputError(f"cannot read items '{arg}': {reason}")
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise InputError(f"item id '{item.id}' appears more than once; ids must be unique")
        seen.add(item.id)
    return items


def warn_unknown_exclusions(exclude: list[str], items: list[Any]) -> None:
    """A mistyped id excludes nothing: say so rather than sample it silently."""
    import sys

    known = {item.id for item in items}
    unknown = [i for i in exclude if i not in known]
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        echo(
            f"santa: warning: {len(unknown)} excluded id(s) match no item: {shown}",
            file=sys.stderr,
        )


def read_exclusions(path: str) -> list[str]:
    """Ids from a plain list (one per line) or from an earlier `--json` plan."""
    from santa_method.cli._io import read_text

    text = read_text(path, "exclusion file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    except RecursionError:
        raise InputError(
            f"exclusion file '{path}' is nested too deeply to be a list of ids"
        ) from None
    if isinstance(data, dict):
        listed = data.get("items")
        if not isinstance(listed, list):
            raise InputError(f"exclusion file '{path}' is JSON without an \"items\" list")
        # `santa sample --json` lists ids; `santa batch --json` lists outcomes.
        return [str(x["item"]) if isinstance(x, dict) and "item" in x else str(x) for x in listed]
    if isinstance(data, list):
        return [str(x) for x in data]
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


# ---------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> int:
    import random

    from santa_method.cli._io import print_json
    from santa_method.core.sampling import make_plan

    check_sampling_arguments(args)

    items = read_items(args.items, args.strata)
    exclude = read_exclusions(args.exclude) if args.exclude else []
    warn_unknown_exclusions(exclude, items)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    ids = [item.id for item in items]
    strata = {item.id: item.stratum or _MISSING_STRATUM for item in items} if args.strata else None
    try:
        plan = make_plan(
            ids,
            seed=seed,
            rate=args.rate,
            minimum=args.minimum,
            prevalence=args.prevalence,
            confidence=args.confidence,
            strata=strata,
            exclude=exclude,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None

    if args.json:
        print_json(plan.to_json())
    else:
        lines = [f"{plan.statement()} (seed {plan.seed})", *plan.items]
        echo("\n".join(lines))
    return 0
