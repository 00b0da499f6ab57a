"""`santa validate` and `santa gate` never import a model SDK.

The plugin's own environment installs only the core, and the CLI's cold
start matters: the SDKs (`anthropic`, `claude_agent_sdk`) belong to the
headless face and must stay out of the helper's path, even when they are
installed, as they are in the dev environment these tests run in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _reviews import OUTPUT, pass_review, reply

SDKS = ("anthropic", "claude_agent_sdk")
REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# Runs the CLI's main() in a fresh interpreter, then reports which SDK
# modules ended up in sys.modules. PRELUDE lets a test prove the probe works.
PROBE = """
import json, sys
{prelude}
from santa_method.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {sdks!r})
sys.stderr.write("\\nPROBE " + json.dumps({{"code": code, "loaded": loaded}}) + "\\n")
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, SANTA_HOME=str(tmp_path / ".santa"), CLAUDE_PROJECT_DIR=str(tmp_path))


def _probe(
    tmp_path: Path, args: list[str], prelude: str = "", modules: tuple[str, ...] = SDKS
) -> dict:
    """Run the CLI in a fresh interpreter: its exit code and which of `modules` it loaded."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(prelude=prelude, sdks=modules), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        timeout=60,
    )
    line = [x for x in proc.stderr.splitlines() if x.startswith("PROBE ")][-1]
    return json.loads(line[len("PROBE ") :])


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "pass.json").write_text(reply(pass_review(), "fenced"), encoding="utf-8")
    (tmp_path / "pass-c.json").write_text(reply(pass_review(), "plain"), encoding="utf-8")
    (tmp_path / "out.md").write_text(OUTPUT, encoding="utf-8")
    return {
        "pass": str(tmp_path / "pass.json"),
        "pass_c": str(tmp_path / "pass-c.json"),
        "out": str(tmp_path / "out.md"),
        "b": str(EXAMPLES / "review-b.json"),
        "c": str(EXAMPLES / "review-c.json"),
        "output": str(EXAMPLES / "output.md"),
    }


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["validate", "{pass}"], 0),
        (["validate", "{b}", "--rubric", "base", "--against", "{output}", "--json"], 0),
        (["gate", "{pass}", "{pass_c}", "--against", "{out}"], 0),
        (["gate", "{b}", "{c}", "--rubric", "base", "--against", "{output}", "--json"], 1),
        (["gate", "{b}"], 1),
        (["validate", "--help"], 0),
    ],
)
def test_validate_and_gate_import_no_sdk(tmp_path, inputs, args, code) -> None:
    report = _probe(tmp_path, [a.format(**inputs) for a in args])
    assert report["code"] == code
    assert report["loaded"] == []


@pytest.mark.slow
def test_the_probe_would_see_an_sdk(tmp_path, inputs) -> None:
    pytest.importorskip("anthropic")
    report = _probe(tmp_path, ["validate", inputs["pass"]], prelude="import anthropic")
    assert "anthropic" in report["loaded"]


def test_console_script_import_time_lists_no_sdk(tmp_path, inputs) -> None:
    script = Path(sys.executable).with_name("santa")
    if not script.exists():
        pytest.skip("the santa console script is not installed next to this interpreter")
    env = dict(_env(tmp_path), PYTHONPROFILEIMPORTTIME="1")
    for args in (
        ["validate", inputs["b"], "--rubric", "base", "--against", inputs["output"]],
        ["gate", inputs["b"], inputs["c"], "--against", inputs["output"]],
    ):
        proc = subprocess.run(
            [str(script), *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
        )
        imported = [
            line.rsplit("|", 1)[-1].strip()
            for line in proc.stderr.splitlines()
            if line.startswith("import time:")
        ]
        assert "santa_method.core.review" in imported  # the profile did record imports
        assert not [m for m in imported if m.split(".")[0] in SDKS]


#: What a cold `santa validate` of a conforming reply does not use: jsonschema
#: (the compiled check accepts it) and fastjsonschema (which only generates
#: that check), output styling, the YAML of rubrics, fuzzy matching, the SDKs,
#: detect-secrets for text that cannot hold what its plugins find
#: (core/redact.py), and pathlib (core/data.py).
#: bench/helper.py measures the time this saves.
NOT_ON_THE_VALIDATE_PATH = (
    "jsonschema",
    "referencing",
    "fastjsonschema",
    "rich",
    "yaml",
    "rapidfuzz",
    *SDKS,
)


@pytest.mark.parametrize(
    "args",
    [["validate", "{pass}"], ["validate", "{b}"], ["validate", "{b}", "--against", "{output}"]],
)
def test_a_cold_validate_imports_only_what_it_uses(tmp_path, inputs, args) -> None:
    # Nor dataclasses (with inspect, which it imports: the contracts in
    # core/types.py are plain classes) nor shutil (argparse's help width).
    args = [a.format(**inputs) for a in args]
    modules = (*NOT_ON_THE_VALIDATE_PATH, "detect_secrets", "pathlib", "dataclasses", "shutil")
    assert _probe(tmp_path, args, modules=modules) == {"code": 0, "loaded": []}


def test_a_rubric_is_checked_without_either_schema_library(tmp_path, inputs) -> None:
    # A rubric file is read with YAML, and held to its schema by the compiled
    # check (core/rubric_schema.py), not by jsonschema nor fastjsonschema.
    args = ["validate", inputs["b"], "--rubric", "base", "--against", inputs["output"]]
    modules = ("jsonschema", "referencing", "fastjsonschema", "rich", *SDKS)
    assert _probe(tmp_path, args, modules=modules) == {"code": 0, "loaded": []}


#: A failing review whose issues name the rubric's longest criteria, as
#: bench/helper.py times it (issue 33, item 7).
FAILING = {
    "verdict": "FAIL",
    "checks": [
        {"criterion": c, "result": "FAIL" if c.endswith("ness") else "PASS", "detail": ""}
        for c in (
            "factual-accuracy",
            "no-hallucination",
            "completeness",
            "compliance",
            "internal-consistency",
            "technical-correctness",
        )
    ],
    "critical_issues": [
        {"criterion": "completeness", "issue": "No License section", "missing": "a License"},
        {
            "criterion": "technical-correctness",
            "issue": "The third example calls a flag the tool does not have, so it fails.",
            "quote": "tally --chars notes.txt",
        },
    ],
    "suggestions": [],
}


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_what_validate_prints_loads_no_detect_secrets_when_it_can_hold_none(
    tmp_path, inputs, as_json
) -> None:
    # Every criterion id is printed ('technical-correctness', 21 characters);
    # no detect-secrets plugin can match one, so printing them, redacted,
    # costs no import of detect-secrets (core/plugin_screen.py).
    failing = tmp_path / "failing.json"
    failing.write_text(json.dumps(FAILING), encoding="utf-8")
    modules = (*NOT_ON_THE_VALIDATE_PATH, "detect_secrets")
    for args in (
        ["validate", inputs["pass"]],
        ["validate", str(failing), "--rubric", "base", "--against", inputs["output"]],
    ):
        report = _probe(tmp_path, args + (["--json"] if as_json else []), modules=modules)
        assert report["code"] == 0
        assert [m for m in report["loaded"] if m.split(".")[0] == "detect_secrets"] == []


def test_a_reply_the_compiled_check_refuses_gets_jsonschemas_errors(tmp_path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"verdict": "MAYBE"}), encoding="utf-8")
    report = _probe(tmp_path, ["validate", str(broken)], modules=("jsonschema",))
    assert report["code"] == 1 and "jsonschema" in report["loaded"]  # the probe sees it load


# Importing core/redact.py compiles none of its patterns: each is compiled
# the first time it is used, and finds what it found compiled at import.
REDACT_PROBE = """
import json, re, sys
compiled = []
real = re.compile
re.compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)
import santa_method.core.redact as redact
at_import = len(compiled)
re.compile = real
key = "sk-ant-" + "a1B2" * 8
out = redact.redact_text(f"token: {key}\\nverdict PASS\\n")
print(json.dumps({"at_import": at_import, "out": out}))
"""


def test_importing_redaction_compiles_no_pattern() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", REDACT_PROBE], capture_output=True, text=True, timeout=60
    )
    report = json.loads(proc.stdout)
    assert report["at_import"] == 0
    assert report["out"] == "token: [REDACTED:Anthropic API Key]\nverdict PASS\n"


@pytest.mark.parametrize(("columns", "widest"), [("50", 48), ("200", 198), (None, 78), ("x", 78)])
def test_help_is_as_wide_as_the_terminal_says(tmp_path, columns, widest) -> None:
    # The width argparse would take from shutil.get_terminal_size (COLUMNS,
    # else the terminal, else 80; two less for the margin), without shutil.
    env = {k: v for k, v in _env(tmp_path).items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "santa_method.cli", "validate", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines
    assert max(map(len, lines)) <= widest
    assert max(map(len, lines)) > widest - 12  # wrapped at that width, not narrower
