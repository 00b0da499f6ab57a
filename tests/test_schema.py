"""The tolerant review schema and the strict form derived for structured outputs."""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from _reviews import BASE_IDS, pass_review
from santa_method.core import review_schema
from santa_method.core.review import validate_object
from santa_method.core.schema import (
    COMPILED,
    compiled_source,
    conforms,
    shape_errors,
    strict_schema,
    strict_subset_violations,
    tolerant_schema,
)

# The structured-output subset as ARCHITECTURE.md ("Structured outputs") states it, written here
# independently of santa_method.core.schema so the two can disagree.
FORBIDDEN = {"oneOf", "minLength", "maxLength", "pattern", "format", "$ref", "$defs", "$schema"}


def subset_problems(node: Any, path: str = "$") -> list[str]:
    problems: list[str] = []
    if isinstance(node, list):
        for i, sub in enumerate(node):
            problems += subset_problems(sub, f"{path}[{i}]")
        return problems
    if not isinstance(node, dict):
        return problems
    problems += [f"{path}: {key}" for key in FORBIDDEN & node.keys()]
    is_object = node.get("type") == "object" or (
        isinstance(node.get("type"), list) and "object" in node["type"]
    )
    if is_object or "properties" in node:
        if node.get("additionalProperties") is not False:
            problems.append(f"{path}: open object")
        if set(node.get("required", ())) != set(node.get("properties", {})):
            problems.append(f"{path}: not every property required")
    for key, value in node.items():
        if key in ("properties", "$defs"):
            for name, sub in value.items():
                problems += subset_problems(sub, f"{path}.{name}")
        elif key != "enum" and key != "const":
            problems += subset_problems(value, f"{path}/{key}")
    return problems


@pytest.mark.parametrize("criteria", [None, BASE_IDS, ("only-one",)])
def test_strict_schema_stays_in_the_structured_output_subset(criteria: Any) -> None:
    schema = strict_schema(criteria)
    assert strict_subset_violations(schema) == []
    assert subset_problems(schema) == []
    Draft202012Validator.check_schema(schema)


def test_the_independent_checker_can_fail() -> None:
    # The tolerant schema is deliberately outside the subset; both checkers say so.
    tolerant = tolerant_schema()
    found = subset_problems(tolerant)
    assert any("oneOf" in p for p in found)
    assert any("minLength" in p for p in found)
    assert any("$defs" in p or "$schema" in p for p in found)
    assert any("open object" in p for p in found)
    assert strict_subset_violations(tolerant) != []


def test_subset_checker_in_core_flags_each_rule() -> None:
    base = strict_schema()
    for breakage in (
        lambda s: s.pop("additionalProperties"),
        lambda s: s["required"].remove("verdict"),
        lambda s: s["properties"]["checks"]["items"].__setitem__("oneOf", []),
        lambda s: s["properties"]["verdict"].__setitem__("pattern", "P"),
        lambda s: s["properties"]["canary"].__setitem__("minLength", 1),
        lambda s: s.__setitem__("$defs", {}),
    ):
        broken = copy.deepcopy(base)
        breakage(broken)
        assert strict_subset_violations(broken) != []
        assert subset_problems(broken) != []


def test_strict_schema_with_criteria_restricts_ids_and_requires_canary() -> None:
    schema = strict_schema(("a", "b"))
    validator = Draft202012Validator(schema)
    good = {
        "verdict": "PASS",
        "checks": [{"criterion": "a", "result": "PASS", "detail": None}],
        "critical_issues": [],
        "suggestions": [],
        "canary": "tok",
    }
    assert list(validator.iter_errors(good)) == []
    unknown = copy.deepcopy(good)
    unknown["checks"][0]["criterion"] = "zzz"
    assert list(validator.iter_errors(unknown))
    no_canary = {k: v for k, v in good.items() if k != "canary"}
    assert list(validator.iter_errors(no_canary))
    extra = dict(good, surprise=1)
    assert list(validator.iter_errors(extra))
    issue_obj = {
        "criterion": "zzz",
        "issue": "x",
        "quote": None,
        "missing": None,
        "location": None,
    }
    assert list(validator.iter_errors(dict(good, critical_issues=[issue_obj])))
    issue_obj["criterion"] = "b"
    assert list(validator.iter_errors(dict(good, critical_issues=[issue_obj]))) == []


def test_strict_schema_is_what_the_sdk_would_send_unchanged() -> None:
    # anthropic.transform_schema rewrites a schema into the API's subset; a
    # schema already inside it comes back with the same constraints (it only
    # drops a `type` that sits next to an `enum`, which says nothing more).
    anthropic = pytest.importorskip("anthropic")

    def canonical(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: canonical(v) for k, v in node.items()}
            if "enum" in out:
                out.pop("type", None)
            return out
        if isinstance(node, list):
            return [canonical(v) for v in node]
        return node

    for criteria in (None, BASE_IDS):
        schema = strict_schema(criteria)
        assert canonical(anthropic.transform_schema(schema)) == canonical(schema)


def test_tolerant_schema_is_valid_2020_12() -> None:
    schema = tolerant_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_tolerant_schema_accepts_seed_form_and_unknown_fields() -> None:
    review = {
        "verdict": "FAIL",
        "checks": [{"criterion": "completeness", "result": "FAIL", "confidence": 0.9}],
        "critical_issues": ["No license section"],
        "extra": {"anything": True},
    }
    assert shape_errors(review) == []


def _from_shape(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the strict schema's shape. Strings are non-empty: the strict
    form cannot express minLength (the API rejects it), so emptiness is the
    one constraint it loses; see the test below."""
    if "anyOf" in node:
        return st.one_of([_from_shape(sub) for sub in node["anyOf"]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if kind == "string":
        return st.text(min_size=1, max_size=20)
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_from_shape(node["items"]), max_size=4)
    if kind == "object":
        return st.fixed_dictionaries({k: _from_shape(v) for k, v in node["properties"].items()})
    raise AssertionError(f"unexpected node in the strict schema: {node}")


_STRICT = strict_schema()
_STRICT_BASE = strict_schema(BASE_IDS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_from_shape(_STRICT), _from_shape(_STRICT_BASE)))
def test_strict_valid_objects_are_tolerant_valid(obj: dict[str, Any]) -> None:
    assert list(Draft202012Validator(_STRICT).iter_errors(obj)) == []
    assert shape_errors(obj) == []
    result = validate_object(json.loads(json.dumps(obj)))
    assert result.review is not None  # shape accepted; consistency may still fail


def test_the_one_constraint_the_strict_form_loses_still_fails_closed() -> None:
    # An empty string issue satisfies the strict form but not the contract.
    obj = pass_review(verdict="FAIL", critical_issues=[""])
    obj["canary"] = "t"
    assert list(Draft202012Validator(_STRICT).iter_errors(obj)) == []
    result = validate_object(obj)
    assert not result.valid
    assert any("critical_issues[0]" in e for e in result.errors)


@pytest.mark.parametrize(
    ("obj", "path", "expected"),
    [
        ({"checks": [], "critical_issues": []}, "$", "'verdict'"),
        ({"verdict": "MAYBE", "checks": [], "critical_issues": []}, "$.verdict", '"PASS", "FAIL"'),
        ({"verdict": "PASS", "checks": {}, "critical_issues": []}, "$.checks", "array"),
        (
            {
                "verdict": "PASS",
                "checks": [{"criterion": "x", "result": "ok"}],
                "critical_issues": [],
            },
            "$.checks[0].result",
            '"PASS", "FAIL"',
        ),
        (
            {"verdict": "PASS", "checks": [{"result": "PASS"}], "critical_issues": []},
            "$.checks[0]",
            "'criterion'",
        ),
        (
            {"verdict": "FAIL", "checks": [], "critical_issues": ["ok", 5]},
            "$.critical_issues[1]",
            "string or an object",
        ),
        (
            {"verdict": "FAIL", "checks": [], "critical_issues": [{"quote": "q"}]},
            "$.critical_issues[0]",
            "'issue'",
        ),
        (
            {"verdict": "FAIL", "checks": [], "critical_issues": [{"issue": "x", "quote": 3}]},
            "$.critical_issues[0].quote",
            "string or null",
        ),
        (
            {"verdict": "PASS", "checks": [], "critical_issues": [], "suggestions": "be nicer"},
            "$.suggestions",
            "array",
        ),
    ],
)
def test_errors_name_the_json_path_and_what_was_expected(
    obj: dict[str, Any], path: str, expected: str
) -> None:
    errors = shape_errors(obj)
    assert errors
    assert any(e.startswith(path + ":") and expected in e for e in errors), errors


def test_a_non_object_reply_is_named_as_such() -> None:
    assert shape_errors([1, 2]) == ["$: expected object, got array"]
    assert not validate_object([1, 2]).valid


# --- the compiled check: the same schema, without importing jsonschema ---------


@pytest.mark.parametrize("module", sorted(COMPILED))
def test_the_compiled_check_is_what_fastjsonschema_writes_from_the_schema(module: str) -> None:
    # core/<module>.py is generated: compiling the schema again gives the
    # file byte for byte, so a schema change cannot leave it behind.
    # (Regenerate with `python scripts/compile_schemas.py`.)
    from santa_method.core.data import data_dir

    generated = (Path(review_schema.__file__).parent / f"{module}.py").read_text(encoding="utf-8")
    assert generated == compiled_source(module)
    assert COMPILED[module] in generated.splitlines()[0]
    assert (data_dir("schemas") / COMPILED[module]).is_file()


def test_compile_schemas_check_reports_a_stale_module(tmp_path, monkeypatch) -> None:
    import importlib.util

    script = Path(__file__).resolve().parent.parent / "scripts" / "compile_schemas.py"
    spec = importlib.util.spec_from_file_location("compile_schemas", script)
    assert spec is not None and spec.loader is not None
    compile_schemas = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compile_schemas)

    assert compile_schemas.main(["--check"]) == 0
    (tmp_path / "review_schema.py").write_text("validate = None\n", encoding="utf-8")
    monkeypatch.setattr(compile_schemas, "CORE", tmp_path)
    assert compile_schemas.main(["--check"]) == 1
    assert (tmp_path / "review_schema.py").read_text(encoding="utf-8") == "validate = None\n"
    assert compile_schemas.main([]) == 0
    assert (tmp_path / "review_schema.py").read_text(encoding="utf-8") == compiled_source(
        "review_schema"
    )


_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)
_DROP = object()


def _shape(node: dict[str, Any], defs: dict[str, Any], near: bool) -> st.SearchStrategy[Any]:
    """Values of the tolerant schema's shape (unknown fields included); with
    `near`, each part may be any JSON value instead, fields may be missing and
    enums and strings may miss by a little."""
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[1]]
    if "oneOf" in node:
        right = st.one_of([_shape(sub, defs, near) for sub in node["oneOf"]])
    elif "enum" in node:
        right = st.sampled_from([*node["enum"], *(["pass", ""] if near else [])])
    elif node.get("type") == "object":
        props = {name: _shape(sub, defs, near) for name, sub in node["properties"].items()}
        required = {name: props[name] for name in node.get("required", ())}
        optional = {name: sub for name, sub in props.items() if name not in required}
        known = st.fixed_dictionaries(required, optional=optional)
        if near:
            known |= st.fixed_dictionaries({}, optional=props)
        right = st.builds(
            lambda known, extra: {**extra, **known},
            known,
            st.dictionaries(st.sampled_from(["extra", "confidence"]), _ANY_JSON, max_size=1),
        )
    elif node.get("type") == "array":
        right = st.lists(_shape(node["items"], defs, near), max_size=3)
    else:
        kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
        text = st.text(min_size=node.get("minLength", 0), max_size=3)
        if near:
            text |= st.sampled_from(["", "x"])
        right = st.one_of([text if kind == "string" else st.none() for kind in kinds])
    return st.one_of(right, right, right, right, _ANY_JSON) if near else right


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            found += _places(sub, (*path, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found += _places(sub, (*path, i))
    return found


def _changed(obj: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of `obj` with the part at `path` replaced by `new` (or dropped)."""
    if not path:
        return None if new is _DROP else new
    out = copy.deepcopy(obj)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if new is _DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return out


#: A conforming document of each compiled schema, with every field it names
#: (a reply with both issue forms; a rubric that extends and has criteria).
_FULL = {
    "review_schema": {
        "verdict": "FAIL",
        "checks": [
            {"criterion": "a", "result": "PASS", "detail": "fine"},
            {"criterion": "b", "result": "FAIL", "detail": None, "confidence": 1},
        ],
        "critical_issues": [
            "a seed string",
            {"criterion": "b", "issue": "wrong", "quote": "q", "missing": None, "location": "l"},
            {"criterion": None, "issue": "gap", "quote": None, "missing": "m", "location": None},
        ],
        "suggestions": ["s"],
        "canary": "c",
        "extra": {"k": 1},
    },
    "rubric_schema": {
        "name": "mine",
        "description": "what it checks",
        "extend": ["base", "code"],
        "criteria": [
            {"id": "error-handling2", "name": "Errors", "pass": "p", "fail_signals": ["s", "t"]},
            {"id": "b", "name": "B", "pass": "q", "fail_signals": ["u"], "note": 1},
        ],
        "x": None,
    },
}
_REPLACEMENTS = (
    *("", " ", "\n", "x", "Ab", "a-", "a--b", "pass", "PASS", "FAIL", "base"),
    *(None, 0, 1.5, True, [], ["x"], [""], {}, {"issue": "x"}, _DROP),
)


def _compiled_accepts(obj: Any, module: str = "review_schema") -> bool:
    compiled = importlib.import_module(f"santa_method.core.{module}")
    try:
        compiled.validate(obj)
    except compiled.JsonSchemaValueException:
        return False
    return True


def _jsonschema_accepts(obj: Any, module: str = "review_schema") -> bool:
    from santa_method.core.data import data_dir

    schema = json.loads((data_dir("schemas") / COMPILED[module]).read_text(encoding="utf-8"))
    return list(Draft202012Validator(schema).iter_errors(obj)) == []


@pytest.mark.parametrize("module", sorted(COMPILED))
def test_the_compiled_check_and_jsonschema_agree_on_every_single_change(module: str) -> None:
    # Every part of a full document, replaced by each of a set of near misses
    # or dropped: one answer from both (and many changes must be refusals).
    full = _FULL[module]
    assert _compiled_accepts(full, module) and _jsonschema_accepts(full, module)
    assert conforms(module, full)
    refused = 0
    for path in _places(full):
        for new in _REPLACEMENTS:
            obj = _changed(full, path, new)
            accepted = _compiled_accepts(obj, module)
            assert accepted == _jsonschema_accepts(obj, module), (path, new)
            assert conforms(module, obj) == accepted
            refused += not accepted
    assert refused > 100


_TOLERANT = tolerant_schema()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        _shape(_TOLERANT, _TOLERANT["$defs"], near=False),
        _shape(_TOLERANT, _TOLERANT["$defs"], near=True),
    )
)
def test_the_compiled_check_and_jsonschema_agree(obj: Any) -> None:
    # The compiled check decides alone when it accepts: it must never accept
    # what jsonschema (the reference, which names the errors) refuses, nor the reverse.
    assert _compiled_accepts(obj) == _jsonschema_accepts(obj)
    assert (shape_errors(obj) == []) == _compiled_accepts(obj)


def test_the_agreement_test_sees_both_answers() -> None:
    good = pass_review()
    review_schema.validate(good)
    for bad in ({**good, "verdict": "MAYBE"}, {**good, "critical_issues": [""]}, []):
        with pytest.raises(review_schema.JsonSchemaValueException):
            review_schema.validate(bad)
        assert shape_errors(bad) != []


def test_the_compiled_check_needs_no_fastjsonschema(monkeypatch) -> None:
    # The generated modules carry their own exception class: checking a reply
    # imports nothing of fastjsonschema (only regenerating them needs it).
    import sys

    monkeypatch.setitem(sys.modules, "fastjsonschema", None)  # any import of it fails
    for module in COMPILED:
        monkeypatch.delitem(sys.modules, f"santa_method.core.{module}", raising=False)
    good = pass_review()
    assert conforms("review_schema", good)
    assert not conforms("review_schema", {**good, "verdict": "MAYBE"})
    assert shape_errors(good) == []
    assert shape_errors({**good, "verdict": "MAYBE"}) != []
