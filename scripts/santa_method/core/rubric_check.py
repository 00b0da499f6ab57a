"""One rubric file checked on its own, every problem a sentence for `santa rubric lint`.

This is the validator the loader and the linter share (core/rubric.py
resolves names, `extend` and combinations around it). The shape is held to
`schemas/rubric.schema.json`, whose `x-errors` hold each shape error's
sentence; what no schema can state is checked here: a pass condition made
only of vague words, an id used twice in one file, a rubric with nothing
to review. Problems are collected, never raised, and listed in the order
the file reads, so one lint names all of them.

All text is whitespace-normalised on load, so the rendered rubric and its
hash do not change when a YAML file is merely re-wrapped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from santa_method.core.data import data_dir
from santa_method.core.schema import conforms
from santa_method.core.types import Criterion
from santa_method.core.yaml_safe import AliasBomb, safe_load, yaml_too_deep

__all__ = [
    "CRITERION_KEYS",
    "STOPWORDS",
    "TOO_DEEP",
    "TOP_KEYS",
    "VAGUE_WORDS",
    "RubricDoc",
    "is_vague",
    "parse_rubric",
]

TOP_KEYS = ("name", "description", "extend", "criteria")
CRITERION_KEYS = ("id", "name", "pass", "fail_signals")

_WORD = re.compile(r"[^\W_]+")

# Words that say nothing a reviewer could check. A pass condition made only
# of these (and of stopwords) is a matter of taste, and two reviewers will
# judge it differently: exactly the drift an objective rubric exists to stop.
_VAGUE = """
good great nice fine ok okay decent solid strong sound excellent perfect optimal
appropriate appropriately proper properly adequate adequately reasonable reasonably
sufficient sufficiently satisfactory suitable suitably acceptable sensible
high quality well written clear clearly clean polished professional professionally
correct correctly accurate accurately valid consistent complete completely fully
thorough thoroughly effective effectively relevant useful helpful meaningful
readable concise engaging compelling best practice practices standard standards
expectations expected requirements sense overall generally right
output response answer content text result results work thing things everything
way manner level degree job
"""

_STOP = """
a an the and or but nor so if then than as of to in on at by for with without from
into onto about over under up out this that these those it its itself there here
is are was were be been being am do does did done has have had having
will would shall should can could may might must not no yes
all any each every some both either neither very really quite rather too also just
enough more most much many whole
which who whom whose what when where why how
i we you he she they them their our your my me us his her
meet meets met follow follows following use uses used make makes made look looks
seem seems feel feels read reads get gets give gives writing
"""

VAGUE_WORDS = frozenset(_VAGUE.split())
STOPWORDS = frozenset(_STOP.split())


@dataclass(frozen=True)
class RubricDoc:
    """One rubric file as written, before `extend` is resolved.

    `criteria` keeps every entry that has a usable id, even an otherwise
    invalid one, so the linter can still report ids duplicated through
    `extend`; a document with `errors` is never used to build a Rubric.
    """

    key: str
    label: str
    name: str | None
    description: str
    extend: tuple[str, ...]
    criteria: tuple[Criterion, ...]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]


def _squash(text: str) -> str:
    return " ".join(text.split())


#: What `_load_yaml` says of YAML nested past the parser's limit.
TOO_DEEP = "the YAML is nested too deeply to be a rubric"


def _load_yaml(text: str) -> tuple[Any, str | None]:
    import yaml

    try:
        return safe_load(text, unique_keys=True), None
    except AliasBomb as exc:
        return None, str(exc)
    except yaml.MarkedYAMLError as exc:
        if yaml_too_deep(exc):
            return None, TOO_DEEP
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return None, f"invalid YAML: {exc.problem}{where}"
    except yaml.YAMLError as exc:
        return None, f"invalid YAML: {_squash(str(exc))}"
    except RecursionError:
        return None, TOO_DEEP


def is_vague(condition: str) -> bool:
    """True when nothing checkable is left after dropping vague words and stopwords."""
    words = _WORD.findall(condition.casefold())
    return not any(w not in VAGUE_WORDS and w not in STOPWORDS for w in words)


@cache
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (data_dir("schemas") / "rubric.schema.json").read_text(encoding="utf-8")
    )
    return loaded


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema())


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a yes/no value"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _good_id(raw: Any) -> str | None:
    """A criterion's id when the schema accepts it (so messages can name it)."""
    cid = raw.get("id") if isinstance(raw, dict) else None
    pattern = _schema()["$defs"]["criterion"]["properties"]["id"]["pattern"]
    return cid if isinstance(cid, str) and re.match(pattern, cid) else None


# Where a problem sits, so they are listed in the order the file reads:
# the document's own keys, then each criterion's id, name, pass and signals.
_Place = tuple[int, int]
_FIELD_ORDER = {k: i for i, k in enumerate(CRITERION_KEYS)}


def _where(index: int, raw: Any) -> str:
    cid = _good_id(raw)
    return f"criterion '{cid}'" if cid else f"criteria[{index}]"


def _sentences(error: Any, data: Any) -> list[tuple[_Place, str]]:
    """The schema's own sentence(s) for one failed keyword, placed where it failed."""
    path = list(error.absolute_path)
    messages = error.schema.get("x-errors", {})
    prefix, place = "", (-1, 0)
    if len(path) >= 2 and path[0] == "criteria" and isinstance(path[1], int):
        prefix = _where(path[1], data["criteria"][path[1]]) + ": "
        path = path[2:]
        place = (error.absolute_path[1], _FIELD_ORDER.get(str(path[0]), 0) if path else 0)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        return [((place[0], _FIELD_ORDER[k]), prefix + messages["required"][k]) for k in missing]
    if path and isinstance(path[-1], int):
        field = f"{path[-2]}[{path[-1]}]"
    else:
        field = str(error.schema.get("title", ""))
    template = messages.get(error.validator, f"{field} {error.message}")
    text = template.format(field=field, type=_type_name(error.instance), value=error.instance)
    return [(place, prefix + text)]


def _criterion(
    index: int, raw: dict[Any, Any], problems: list[tuple[_Place, str]]
) -> Criterion | None:
    """The criterion as written, squashed; the rules no schema states are added to `problems`."""
    where = _where(index, raw)
    condition = _squash(raw["pass"]) if isinstance(raw.get("pass"), str) else ""
    if condition and is_vague(condition):
        problems.append(
            (
                (index, _FIELD_ORDER["pass"]),
                f"{where}: the pass condition '{condition}' is made only of vague words; "
                "say what must be true, checkable against the spec and the output",
            )
        )
    cid = _good_id(raw)
    if cid is None:
        return None
    signals = raw.get("fail_signals")
    return Criterion(
        id=cid,
        name=_squash(raw["name"]) if isinstance(raw.get("name"), str) else "",
        pass_=condition,
        fail_signals=tuple(
            _squash(s)
            for s in (signals if isinstance(signals, list) else ())
            if isinstance(s, str) and _squash(s)
        ),
    )


def parse_rubric(text: str, key: str, label: str) -> RubricDoc:
    """Check one document on its own; never raises, every problem is collected.

    The shape is checked by `schemas/rubric.schema.json`, which also holds
    each shape error's sentence; what no schema can say (vague pass
    conditions, an id used twice, nothing to review) is checked here.
    """
    data, yaml_error = _load_yaml(text)
    if yaml_error is not None:
        return RubricDoc(key, label, None, "", (), (), (yaml_error,), ())
    if data is None:
        return RubricDoc(key, label, None, "", (), (), ("the rubric is empty",), ())
    problems: list[tuple[_Place, str]] = []
    bad_extend = False
    for error in () if conforms("rubric_schema", data) else _validator().iter_errors(data):
        problems += _sentences(error, data)
        bad_extend = bad_extend or list(error.absolute_path)[:1] == ["extend"]
    if not isinstance(data, dict):
        return RubricDoc(key, label, None, "", (), (), tuple(m for _, m in problems), ())
    warnings = [f"unknown top-level key '{k}' is ignored" for k in data if k not in TOP_KEYS]
    raw_extend = data.get("extend") or ()
    extend: tuple[str, ...] = ()
    if not bad_extend:
        extend = tuple(
            e.strip() for e in ([raw_extend] if isinstance(raw_extend, str) else raw_extend)
        )
    raw_criteria = data.get("criteria")
    listed = raw_criteria if isinstance(raw_criteria, list) else []
    if raw_criteria in (None, []) and not extend:
        problems.append(((-1, 1), "the rubric defines no criteria and extends no other rubric"))
    criteria: list[Criterion] = []
    first_at: dict[str, int] = {}
    for i, raw in enumerate(listed):
        if not isinstance(raw, dict):
            continue
        crit = _criterion(i, raw, problems)
        unknown = [k for k in raw if k not in CRITERION_KEYS]
        warnings += [f"{_where(i, raw)}: unknown key '{k}' is ignored" for k in unknown]
        if crit is None:
            continue
        if crit.id in first_at:
            problems.append(
                (
                    (i, len(CRITERION_KEYS)),
                    f"criteria[{i}]: duplicate id '{crit.id}' (first used by criteria[{first_at[crit.id]}])",
                )
            )
            continue
        first_at[crit.id] = i
        criteria.append(crit)
    name, description = data.get("name"), data.get("description")
    return RubricDoc(
        key=key,
        label=label,
        name=_squash(name) if isinstance(name, str) and name.strip() else None,
        description=_squash(description) if isinstance(description, str) else "",
        extend=extend,
        criteria=tuple(criteria),
        errors=tuple(dict.fromkeys(m for _, m in sorted(problems, key=lambda p: p[0]))),
        warnings=tuple(warnings),
    )
