"""Rubrics: loading, resolution, combination, rendering, hashing and every lint rule."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from santa_method.core.data import data_dir
from santa_method.core.errors import InputError
from santa_method.core.rubric import (
    lint,
    lint_report,
    list_rubrics,
    load_rubric,
    render_markdown,
    rubric_from_json,
    rubric_hash,
)
from santa_method.core.rubric_check import is_vague
from santa_method.core.types import Rubric

BASE_IDS = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)
DOMAIN_IDS = {
    "code": ("type-safety", "error-handling", "security", "tests-for-new-paths"),
    "content": (
        "brand-voice",
        "seo-requirements",
        "no-competitor-trademark-misuse",
        "cta-with-correct-links",
    ),
    "regulated": (
        "no-outcome-guarantees",
        "required-disclaimers",
        "approved-terminology",
        "jurisdiction-appropriate-language",
    ),
}
SHIPPED = ("base", "code", "content", "regulated")


def criterion(
    cid: str = "has-tests", pass_: str = "Every new function has a unit test.", **extra: object
) -> dict:
    crit = {
        "id": cid,
        "name": "A name",
        "pass": pass_,
        "fail_signals": ["A function without a test."],
    }
    crit.update(extra)
    return crit


def rubric_yaml(*criteria: dict, **top: object) -> str:
    doc: dict = {"name": "x", "description": "d"}
    doc.update(top)
    if criteria:
        doc["criteria"] = list(criteria)
    return json.dumps(doc)  # JSON is YAML, and keeps the fixtures unambiguous


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def errors_of(text: str, search_dirs: tuple = ()) -> list[str]:
    return list(lint_report(text, search_dirs).errors)


# --------------------------------------------------------------------------- shipped rubrics


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_rubrics_lint_clean_without_warnings(name: str) -> None:
    path = data_dir("rubrics") / f"{name}.yaml"
    assert lint(path) == []


def test_base_has_exactly_the_six_criteria_of_the_method() -> None:
    base = load_rubric("base")
    assert base is not None
    assert base.ids == BASE_IDS
    assert base.name == "base"


@pytest.mark.parametrize("name", DOMAIN_IDS)
def test_domain_rubrics_extend_base(name: str) -> None:
    import yaml

    raw = yaml.safe_load((data_dir("rubrics") / f"{name}.yaml").read_text(encoding="utf-8"))
    assert raw["extend"] == ["base"]
    assert raw["name"] == name and raw["description"]
    rubric = load_rubric(name)
    assert rubric is not None
    assert rubric.ids == BASE_IDS + DOMAIN_IDS[name]


def test_shipped_criteria_are_complete() -> None:
    for name in SHIPPED:
        rubric = load_rubric(name)
        assert rubric is not None
        for crit in rubric.criteria:
            assert crit.name and crit.pass_ and crit.fail_signals, (name, crit.id)
            assert not is_vague(crit.pass_)


def test_data_dir_finds_rubrics_from_the_checkout() -> None:
    names = {p.stem for p in data_dir("rubrics").glob("*.yaml")}
    assert set(SHIPPED) <= names


def test_data_dir_finds_rubrics_in_the_wheel_layout(tmp_path: Path) -> None:
    """A regular install puts rubrics under santa_method/_data/; lookups must find them there."""
    package = Path(__import__("santa_method").__file__).parent
    site = tmp_path / "site"
    shutil.copytree(package, site / "santa_method", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("rubrics", "schemas"):
        shutil.copytree(data_dir(name), site / "santa_method" / "_data" / name)
    code = (
        "import santa_method, json\n"
        "from santa_method.core.data import data_dir\n"
        "from santa_method.core.rubric import load_rubric\n"
        "r = load_rubric('code+regulated')\n"
        "print(json.dumps([santa_method.__file__, str(data_dir('rubrics')), len(r.criteria)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    module_file, rubrics_dir, count = json.loads(done.stdout)
    assert module_file.startswith(str(site))
    assert Path(rubrics_dir) == site / "santa_method" / "_data" / "rubrics"
    assert count == 14


def test_importing_the_rubric_modules_does_not_import_yaml() -> None:
    code = (
        "import sys, santa_method.core.rubric, santa_method.cli.rubric_cmd\n"
        "print('yaml' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


# --------------------------------------------------------------------------- the schema


def _nodes(node: object) -> list[dict]:
    if isinstance(node, dict):
        return [node, *(n for v in node.values() for n in _nodes(v))]
    if isinstance(node, list):
        return [n for v in node for n in _nodes(v)]
    return []


def test_the_rubric_schema_is_valid_and_every_message_belongs_to_a_keyword() -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((data_dir("schemas") / "rubric.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    for node in _nodes(schema):
        for keyword in node.get("x-errors", {}):
            assert keyword in node, (keyword, node)  # a message for a rule the node states
        for keyword in node.get("x-errors", {}).get("required", {}):
            assert keyword in node["required"]


def test_every_packaged_rubric_passes_the_schema() -> None:
    import yaml
    from jsonschema import Draft202012Validator

    schema = json.loads((data_dir("schemas") / "rubric.schema.json").read_text())
    for path in sorted(data_dir("rubrics").glob("*.yaml")):
        Draft202012Validator(schema).validate(yaml.safe_load(path.read_text()))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"id": "a", "name": "n", "pass": True, "fail_signals": ["x"]},
            "must be text, not a yes/no",
        ),
        ({"id": "a\n", "name": "n", "pass": "A link works.", "fail_signals": ["x"]}, "kebab-case"),
        (
            {"id": "a", "name": "n", "pass": "A link works.", "fail_signals": None},
            "no fail_signals",
        ),
        (
            {"id": "a", "name": "n", "pass": "A link works.", "fail_signals": ["x", " "]},
            "fail_signals[1] is empty",
        ),
    ],
)
def test_shape_errors_are_the_schemas_sentences(raw: dict, expected: str) -> None:
    errors = errors_of(json.dumps({"name": "x", "criteria": [raw]}))
    assert len(errors) == 1 and expected in errors[0], errors


# --------------------------------------------------------------------------- lint rules


def test_a_good_rubric_is_clean() -> None:
    assert lint(rubric_yaml(criterion())) == []


def test_missing_id() -> None:
    crit = criterion()
    del crit["id"]
    assert any("missing id" in e for e in errors_of(rubric_yaml(crit)))


@pytest.mark.parametrize("bad", ["Foo", "foo_bar", "foo--bar", "-foo", "foo-", "foo bar", "føø"])
def test_id_must_be_kebab_case(bad: str) -> None:
    errors = errors_of(rubric_yaml(criterion(bad)))
    assert any("not kebab-case" in e for e in errors), errors


@pytest.mark.parametrize("good", ["foo", "foo-bar", "a1-b2-c3", "no-hallucination"])
def test_kebab_case_ids_pass(good: str) -> None:
    assert errors_of(rubric_yaml(criterion(good))) == []


def test_id_must_be_text() -> None:
    errors = errors_of(
        "criteria:\n  - {id: 12, name: n, pass: Each link returns HTTP 200., fail_signals: [x]}\n"
    )
    assert any("id must be text" in e for e in errors)


def test_duplicate_id_in_one_file() -> None:
    errors = errors_of(rubric_yaml(criterion("a"), criterion("b"), criterion("a")))
    assert errors == ["criteria[2]: duplicate id 'a' (first used by criteria[0])"]


def test_duplicate_id_through_extend(tmp_path: Path) -> None:
    text = rubric_yaml(criterion("completeness"), extend=["base"])
    errors = errors_of(text)
    assert len(errors) == 1
    assert "criterion id 'completeness' is defined twice" in errors[0]
    assert "'base'" in errors[0]
    path = write(tmp_path, "mine.yaml", text)
    with pytest.raises(InputError, match="'completeness' is defined twice"):
        load_rubric(str(path))


def test_duplicate_id_through_two_parents(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", rubric_yaml(criterion("shared")))
    write(tmp_path, "b.yaml", rubric_yaml(criterion("shared")))
    errors = errors_of(rubric_yaml(extend=["a", "b"]), (tmp_path,))
    assert len(errors) == 1 and "'shared' is defined twice" in errors[0]


def test_diamond_inheritance_is_not_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", rubric_yaml(criterion("only-a"), extend=["base"]))
    write(tmp_path, "b.yaml", rubric_yaml(criterion("only-b"), extend=["base"]))
    path = write(tmp_path, "c.yaml", rubric_yaml(extend=["a", "b"]))
    assert lint(path, (tmp_path,)) == []
    rubric = load_rubric("c", (tmp_path,))
    assert rubric is not None
    assert rubric.ids == (*BASE_IDS, "only-a", "only-b")


def test_missing_name() -> None:
    crit = criterion()
    del crit["name"]
    assert errors_of(rubric_yaml(crit)) == ["criterion 'has-tests': missing name"]
    assert errors_of(rubric_yaml(criterion(name="  "))) == ["criterion 'has-tests': name is empty"]


@pytest.mark.parametrize("value", ["", "   ", None])
def test_empty_pass(value: str | None) -> None:
    crit = criterion()
    if value is None:
        del crit["pass"]
    else:
        crit["pass"] = value
    errors = errors_of(rubric_yaml(crit))
    assert len(errors) == 1 and "pass condition" in errors[0]


def test_pass_that_yaml_reads_as_a_boolean_is_rejected() -> None:
    text = "criteria:\n  - {id: a, name: n, pass: yes, fail_signals: [x]}\n"
    errors = errors_of(text)
    assert errors and "pass condition must be text, not a yes/no value" in errors[0]


@pytest.mark.parametrize(
    "vague",
    [
        "good",
        "Good.",
        "The output is of high quality.",
        "Appropriate and well written",
        "The response is clear, concise and reasonable.",
        "It should be adequate and proper overall.",
        "Looks nice; follows best practices.",
        "High-quality, well-written content.",
    ],
)
def test_vague_pass_conditions_are_rejected(vague: str) -> None:
    errors = errors_of(rubric_yaml(criterion(pass_=vague)))
    assert len(errors) == 1 and "only of vague words" in errors[0], errors


@pytest.mark.parametrize(
    "concrete",
    [
        "Every function named in the spec has a unit test.",
        "Each claim cites a source listed in the spec.",
        "The title is at most 60 characters.",
        "Good: every link returns HTTP 200.",
        "所有链接都指向规格中给出的网址。",
    ],
)
def test_concrete_pass_conditions_pass(concrete: str) -> None:
    assert errors_of(rubric_yaml(criterion(pass_=concrete))) == []


@pytest.mark.parametrize(
    ("signals", "expected"),
    [
        (None, "no fail_signals"),
        ([], "no fail_signals"),
        ("just one", "fail_signals must be a list"),
        (["ok", ""], "fail_signals[1] is empty"),
        (["ok", {"a": "b"}], "fail_signals[1] must be text, not a mapping"),
    ],
)
def test_fail_signals_required(signals: object, expected: str) -> None:
    crit = criterion()
    if signals is None:
        del crit["fail_signals"]
    else:
        crit["fail_signals"] = signals
    errors = errors_of(rubric_yaml(crit))
    assert len(errors) == 1 and expected in errors[0], errors


def test_unquoted_colon_in_a_fail_signal_is_caught() -> None:
    text = "criteria:\n  - id: a\n    name: n\n    pass: Each test asserts a value.\n    fail_signals:\n      - uses `# type: ignore` to hide it\n"
    errors = errors_of(text)
    assert any("fail_signals[0] must be text" in e and "quote it" in e for e in errors)


def test_unknown_keys_are_warnings_not_errors() -> None:
    text = rubric_yaml(criterion(weight=3), version=2)
    report = lint_report(text)
    assert report.ok
    assert report.warnings == (
        "unknown top-level key 'version' is ignored",
        "criterion 'has-tests': unknown key 'weight' is ignored",
    )
    assert lint(text) == [f"warning: {w}" for w in report.warnings]
    assert lint_report(rubric_yaml(criterion())).warnings == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("criteria: [\n", "invalid YAML"),
        ("name: x\nname: y\ncriteria: []\n", "duplicate key 'name'"),
        ("", "the rubric is empty"),
        ("- a\n- b\n", "must be a mapping"),
        ("name: x\ndescription: y\n", "defines no criteria"),
        ("name: x\ncriteria: []\n", "defines no criteria"),
        ("criteria: {a: 1}\n", "criteria must be a list"),
        ("criteria:\n  - just a string\n", "criteria[0]: must be a mapping"),
        ("extend: 3\ncriteria: []\n", "extend must be a rubric name"),
    ],
)
def test_document_level_errors(text: str, expected: str) -> None:
    errors = errors_of(text)
    assert any(expected in e for e in errors), errors


def test_invalid_yaml_names_the_line() -> None:
    errors = errors_of("name: x\ncriteria:\n  - id: a\n   name: [\n")
    assert len(errors) == 1 and "line" in errors[0]


def test_unknown_extend() -> None:
    errors = errors_of(rubric_yaml(criterion(), extend=["nope"]))
    assert len(errors) == 1
    assert "unknown rubric 'nope'" in errors[0] and "base, code, content, regulated" in errors[0]
    assert errors_of(rubric_yaml(criterion(), extend="base")) == []


def test_extend_of_an_invalid_rubric(tmp_path: Path) -> None:
    write(
        tmp_path, "broken.yaml", "criteria:\n  - {id: a, name: n, pass: good, fail_signals: [x]}\n"
    )
    errors = errors_of(rubric_yaml(criterion(), extend=["broken"]), (tmp_path,))
    assert len(errors) == 1 and "is invalid" in errors[0] and "vague" in errors[0]


def test_extend_cycle(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", rubric_yaml(criterion("in-a"), extend=["b"]))
    write(tmp_path, "b.yaml", rubric_yaml(criterion("in-b"), extend=["a"]))
    errors = lint_report(a, (tmp_path,)).errors
    assert len(errors) == 1 and "extend cycle" in errors[0]
    with pytest.raises(InputError, match="extend cycle"):
        load_rubric("a", (tmp_path,))
    with pytest.raises(InputError, match="unknown rubric 'b'"):
        load_rubric(str(a))  # names resolve in the search dirs, not next to the file


def test_extend_cycle_through_paths(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", rubric_yaml(criterion("in-a"), extend=["./b.yaml"]))
    write(tmp_path, "b.yaml", rubric_yaml(criterion("in-b"), extend=["./c.yaml"]))
    write(tmp_path, "c.yaml", rubric_yaml(criterion("in-c"), extend=["./a.yaml"]))
    errors = lint_report(a).errors
    assert len(errors) == 1 and "extend cycle" in errors[0]
    with pytest.raises(InputError, match=r"extend cycle: .*a\.yaml.* -> .*b\.yaml.* -> .*c\.yaml"):
        load_rubric(str(a))


def test_self_extend_by_path_is_a_cycle(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", rubric_yaml(criterion(), extend=["./a.yaml"]))
    assert any("extend cycle" in e for e in lint_report(a).errors)


def test_self_extend_by_name_without_a_packaged_namesake(tmp_path: Path) -> None:
    write(tmp_path, "solo.yaml", rubric_yaml(criterion(), extend=["solo"]))
    with pytest.raises(InputError, match="cannot extend itself"):
        load_rubric("solo", (tmp_path,))


def test_lint_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        lint(tmp_path / "missing.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match="not UTF-8"):
        lint(tmp_path / "bin.yaml")


# --------------------------------------------------------------------------- resolution


def test_none_means_no_rubric() -> None:
    assert load_rubric(None) is None


def test_project_dir_shadows_packaged(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", rubric_yaml(criterion("house-rule")))
    base = load_rubric("base", (tmp_path,))
    assert base is not None and base.ids == ("house-rule",)
    code = load_rubric("code", (tmp_path,))  # the packaged code extends the project's base
    assert code is not None and code.ids == ("house-rule", *DOMAIN_IDS["code"])
    assert load_rubric("base").ids == BASE_IDS  # type: ignore[union-attr]


def test_project_rubric_may_extend_its_packaged_namesake(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", rubric_yaml(criterion("house-rule"), extend=["base"]))
    base = load_rubric("base", (tmp_path,))
    assert base is not None and base.ids == (*BASE_IDS, "house-rule")
    code = load_rubric("code", (tmp_path,))
    assert code is not None and code.ids == (*BASE_IDS, "house-rule", *DOMAIN_IDS["code"])


def test_search_dirs_in_order_and_yml(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    write(first, "mine.yml", rubric_yaml(criterion("from-one")))
    write(second, "mine.yaml", rubric_yaml(criterion("from-two")))
    rubric = load_rubric("mine", (first, second))
    assert rubric is not None and rubric.ids == ("from-one",)
    rubric = load_rubric("mine", (tmp_path / "absent", second))
    assert rubric is not None and rubric.ids == ("from-two",)


def test_path_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "r", "house.yaml", rubric_yaml(criterion("house-rule"), name="house"))
    monkeypatch.chdir(tmp_path)
    for spec in (str(path), "r/house.yaml", path):
        rubric = load_rubric(spec)
        assert rubric is not None and rubric.ids == ("house-rule",) and rubric.name == "house"
    write(tmp_path, "flat.yaml", rubric_yaml(criterion("flat-rule"), name=None))
    rubric = load_rubric("flat.yaml")  # a .yaml ending makes it a path, even without '/'
    assert rubric is not None and rubric.name == "flat"


def test_relative_extend_path_is_relative_to_the_file(tmp_path: Path) -> None:
    write(tmp_path / "lib", "parent.yaml", rubric_yaml(criterion("parent-rule")))
    child = write(
        tmp_path, "child.yaml", rubric_yaml(criterion("child-rule"), extend=["lib/parent.yaml"])
    )
    rubric = load_rubric(str(child))
    assert rubric is not None and rubric.ids == ("parent-rule", "child-rule")


def test_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path, "house.yaml", rubric_yaml(criterion()))
    with pytest.raises(InputError) as info:
        load_rubric("nope", (tmp_path,))
    message = str(info.value)
    assert "unknown rubric 'nope'" in message
    assert "base, code, content, house, regulated" in message  # every rubric it could be


@pytest.mark.parametrize("spec", ["", "  ", "code+", "+code", "code++base", "co de", "../x"])
def test_bad_specs_are_input_errors(spec: str) -> None:
    with pytest.raises(InputError):
        load_rubric(spec)


def test_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_rubric(str(tmp_path / "nope.yaml"))


def test_invalid_project_rubric_cannot_be_loaded(tmp_path: Path) -> None:
    write(
        tmp_path, "bad.yaml", rubric_yaml(criterion(pass_="appropriate"), criterion("x", name=""))
    )
    with pytest.raises(
        InputError, match=r"is invalid: .*vague.*\(and 1 more problem\).*santa rubric lint"
    ):
        load_rubric("bad", (tmp_path,))


# --------------------------------------------------------------------------- combined names


def test_combined_names_merge_in_order_with_base_once() -> None:
    rubric = load_rubric("code+regulated")
    assert rubric is not None
    assert rubric.name == "code+regulated"
    assert rubric.ids == BASE_IDS + DOMAIN_IDS["code"] + DOMAIN_IDS["regulated"]
    reverse = load_rubric(" regulated + code ")
    assert reverse is not None and reverse.name == "regulated+code"
    assert reverse.ids == BASE_IDS + DOMAIN_IDS["regulated"] + DOMAIN_IDS["code"]
    three = load_rubric("base+content+code+base")
    assert three is not None
    assert three.ids == BASE_IDS + DOMAIN_IDS["content"] + DOMAIN_IDS["code"]


def test_combined_with_a_path(tmp_path: Path) -> None:
    path = write(tmp_path, "house.yaml", rubric_yaml(criterion("house-rule"), name="house"))
    rubric = load_rubric(f"code+{path}")
    assert rubric is not None
    assert rubric.name == "code+house"
    assert rubric.ids == (*BASE_IDS, *DOMAIN_IDS["code"], "house-rule")


def test_combined_clash_between_different_files(tmp_path: Path) -> None:
    write(tmp_path, "mine.yaml", rubric_yaml(criterion("security")))
    with pytest.raises(InputError, match="'security' is defined twice"):
        load_rubric("code+mine", (tmp_path,))


def test_a_plus_in_an_existing_file_name_is_a_path(tmp_path: Path) -> None:
    path = write(tmp_path, "a+b.yaml", rubric_yaml(criterion("plus-rule")))
    rubric = load_rubric(str(path))
    assert rubric is not None and rubric.ids == ("plus-rule",)


# --------------------------------------------------------------------------- render, hash, JSON


def test_render_markdown_shape() -> None:
    rubric = load_rubric("code")
    assert rubric is not None
    text = render_markdown(rubric)
    assert text.startswith("## Rubric: code\n")
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert all(line == line.rstrip() for line in text.splitlines())
    positions = [text.index(f"### `{cid}`: ") for cid in rubric.ids]
    assert positions == sorted(positions)
    for crit in rubric.criteria:
        block = text[text.index(f"### `{crit.id}`: {crit.name}\n") :]
        assert block.split("\n")[1] == f"Pass: {crit.pass_}"
        assert block.split("\n")[2] == "Fail signals:"
        for signal in crit.fail_signals:
            assert f"\n- {signal}\n" in block
    assert render_markdown(load_rubric("code")) == text  # type: ignore[arg-type]


def test_rewrapping_yaml_changes_neither_render_nor_hash(tmp_path: Path) -> None:
    one = write(
        tmp_path,
        "one.yaml",
        """\
        criteria:
          - id: a
            name: The name
            pass: Every link in the output returns HTTP 200.
            fail_signals: [A link that returns 404.]
        """,
    )
    two = write(
        tmp_path,
        "two.yaml",
        """\
        criteria:
          - id: a
            name: >-
              The
              name
            pass: >
              Every link in the output
              returns   HTTP 200.
            fail_signals:
              - |
                A link that
                returns 404.
        """,
    )
    r1, r2 = load_rubric(str(one)), load_rubric(str(two))
    assert r1 is not None and r2 is not None
    assert r1.criteria == r2.criteria
    assert rubric_hash(r1) == rubric_hash(Rubric(name=r1.name, criteria=r2.criteria))
    assert render_markdown(r1) == render_markdown(r2).replace("## Rubric: two", "## Rubric: one")


def test_rubric_hash_is_sha256_of_canonical_json() -> None:
    rubric = load_rubric("base")
    assert rubric is not None
    canonical = json.dumps(
        rubric.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert rubric_hash(rubric) == hashlib.sha256(canonical.encode()).hexdigest()
    assert rubric_hash(rubric) != rubric_hash(load_rubric("code"))  # type: ignore[arg-type]
    renamed = Rubric(name="other", criteria=rubric.criteria)
    assert rubric_hash(renamed) != rubric_hash(rubric)


def test_json_shape_and_round_trip() -> None:
    rubric = load_rubric("content+regulated")
    assert rubric is not None
    data = rubric.to_json()
    assert set(data) == {"name", "criteria"}
    assert data["name"] == "content+regulated"
    for crit in data["criteria"]:
        assert set(crit) == {"id", "name", "pass", "fail_signals"}
        assert isinstance(crit["fail_signals"], list) and crit["fail_signals"]
    assert rubric_from_json(json.loads(json.dumps(data))) == rubric
    with pytest.raises(InputError):
        rubric_from_json({"name": "x"})


# --------------------------------------------------------------------------- listing


def test_list_packaged() -> None:
    infos = list_rubrics()
    assert [i.name for i in infos] == list(SHIPPED)
    assert all(i.source == "packaged" and i.description and i.error is None for i in infos)


def test_list_with_project_rubrics(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", rubric_yaml(criterion(), description="House base"))
    write(tmp_path, "house.yaml", rubric_yaml(criterion(), description="House rules"))
    write(tmp_path, "broken.yaml", "criteria: [\n")
    write(tmp_path, "notes.txt", "not a rubric")
    infos = {i.name: i for i in list_rubrics((tmp_path, tmp_path / "absent"))}
    assert sorted(infos) == ["base", "broken", "code", "content", "house", "regulated"]
    assert infos["base"].source == "project" and infos["base"].shadows
    assert infos["base"].description == "House base"
    assert infos["house"].source == "project" and not infos["house"].shadows
    assert infos["broken"].error is not None and "invalid YAML" in infos["broken"].error
    assert infos["code"].source == "packaged"
    assert set(infos["house"].to_json()) == {
        "name",
        "source",
        "path",
        "description",
        "shadows",
        "error",
    }
