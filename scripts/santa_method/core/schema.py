"""The review schema: the tolerant form we validate with, and the strict form
that structured-output APIs accept.

The tolerant schema (schemas/review.schema.json) is the contract. The strict
one is derived from it by code rather than kept by hand, so the two cannot
drift: objects are closed and list every property as required, `oneOf`
becomes `anyOf`, nullable types become `anyOf` with null, references are
inlined, and keywords outside the API's documented subset are dropped.
`strict_subset_violations` states that subset as code so a test can hold the
derived schema to it.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from santa_method.core.data import data_dir

# Keywords the structured-output subset accepts (ARCHITECTURE.md, "Structured outputs").
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
    }
)
_STRIP = frozenset({"$schema", "$id", "$defs", "minLength", "maxLength", "pattern", "format"})


@cache
def _tolerant_text() -> str:
    return (data_dir("schemas") / "review.schema.json").read_text(encoding="utf-8")


def tolerant_schema() -> dict[str, Any]:
    """A fresh copy of the tolerant review schema."""
    schema: dict[str, Any] = json.loads(_tolerant_text())
    return schema


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = tolerant_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            ref = node["$ref"]
            prefix = "#/$defs/"
            if not ref.startswith(prefix):
                raise ValueError(f"unsupported $ref {ref!r} in the review schema")
            return _resolve(copy.deepcopy(defs[ref[len(prefix) :]]), defs)
        return {k: _resolve(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, defs) for v in node]
    return node


def _strictify(node: Any) -> Any:
    if isinstance(node, list):
        return [_strictify(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _STRIP:
            continue
        if key == "oneOf":
            out["anyOf"] = _strictify(value)
        elif key == "properties":
            out["properties"] = {name: _strictify(sub) for name, sub in value.items()}
        else:
            out[key] = _strictify(value)
    kind = out.get("type")
    if isinstance(kind, list):
        del out["type"]
        out["anyOf"] = [{"type": t} for t in kind]
    if "enum" in out and "type" not in out and all(isinstance(v, str) for v in out["enum"]):
        out["type"] = "string"
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


def strict_schema(criteria: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The review schema in the structured-output subset.

    Given rubric criteria, `criterion` fields are restricted to those ids, so
    the API itself refuses unknown criteria. The canary becomes required: a
    structured reply must echo it.
    """
    tolerant = tolerant_schema()
    resolved = _resolve({k: v for k, v in tolerant.items() if k != "$defs"}, tolerant["$defs"])
    strict: dict[str, Any] = _strictify(resolved)
    if criteria:
        ids = list(criteria)
        strict["properties"]["checks"]["items"]["properties"]["criterion"] = {
            "type": "string",
            "enum": ids,
        }
        for alt in strict["properties"]["critical_issues"]["items"]["anyOf"]:
            if alt.get("type") == "object":
                alt["properties"]["criterion"] = {"type": "string", "enum": ids}
    return strict


def strict_subset_violations(schema: Any, path: str = "$") -> list[str]:
    """Every place where `schema` leaves the structured-output subset."""
    problems: list[str] = []
    if isinstance(schema, list):
        for i, sub in enumerate(schema):
            problems += strict_subset_violations(sub, f"{path}[{i}]")
        return problems
    if not isinstance(schema, dict):
        return problems
    for key in schema:
        if key not in STRICT_KEYWORDS:
            problems.append(f"{path}: keyword {key!r} is outside the structured-output subset")
    if isinstance(schema.get("type"), list):
        problems.append(f"{path}: a list of types must be written as anyOf")
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: objects must set additionalProperties to false")
        if sorted(schema.get("required", [])) != sorted(props):
            problems.append(f"{path}: every property must be listed as required")
        for name, sub in props.items():
            problems += strict_subset_violations(sub, f"{path}.{name}")
    if "items" in schema:
        problems += strict_subset_violations(schema["items"], f"{path}[]")
    if "anyOf" in schema:
        problems += strict_subset_violations(schema["anyOf"], f"{path}.anyOf")
    return problems


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _describe(error: Any) -> str:
    where = error.json_path
    kind = error.validator
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"{where}: the required field '{missing}' is missing"
    if kind == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return f"{where}: expected one of {allowed}, got {json.dumps(error.instance)[:80]}"
    if kind == "type":
        expected = error.validator_value
        if isinstance(expected, list):
            expected = " or ".join(expected)
        return f"{where}: expected {expected}, got {_json_type(error.instance)}"
    if kind == "minLength":
        return f"{where}: must not be empty"
    if kind == "oneOf":
        if isinstance(error.instance, dict):
            inner = [e for e in error.context if e.schema_path and e.schema_path[0] == 1]
            if inner:
                return "; ".join(_describe(e) for e in inner)
        return (
            f"{where}: expected a non-empty string or an object with at least 'issue' "
            f"(and 'criterion', 'quote' or 'missing'), got {_json_type(error.instance)}"
        )
    return f"{where}: {error.message}"


def shape_errors(obj: Any) -> list[str]:
    """Schema violations of a parsed reply, each naming its JSON path."""
    errors = sorted(_validator().iter_errors(obj), key=lambda e: list(map(str, e.path)))
    return [_describe(e) for e in errors]
