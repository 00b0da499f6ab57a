"""What the skill and /santa-method:verify tell a model, where a real model hesitated.

Each test pins one answer the texts must give (which rubric fits, what
"deliver" means, which checks count, when not to fix) and, where the helper
takes part, runs it: `santa round start` says which rubric it chose and why,
and `santa runs show` prints an open round's instruction again.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SANTA = str(Path(sys.executable).parent / "santa")
SKILL = (ROOT / "SKILL.md").read_text(encoding="utf-8")
VERIFY = (ROOT / "commands" / "verify.md").read_text(encoding="utf-8")
PACKAGED = sorted(p.stem for p in (ROOT / "rubrics").glob("*.yaml"))


def santa(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "SANTA_"))}
    return subprocess.run(
        [SANTA, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def project(project: Path) -> Path:
    """The shared project (conftest.py) as a git repository holding a draft."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "draft.md").write_text("# Hello\n", encoding="utf-8")
    return project


def test_the_skill_has_one_rubric_table_with_base_the_default() -> None:
    rows = dict(re.findall(r"^\s*\| ([^|]+?) \| `([a-z+]+)` \|$", SKILL, flags=re.MULTILINE))
    assert rows["anything (the default)"] == "base"
    named = set(rows.values())
    assert set(PACKAGED) <= named  # every packaged rubric is placed
    for name in named:  # and every rubric named exists
        shown = santa("rubric", "show", name, cwd=ROOT)
        assert shown.returncode == 0, (name, shown.stderr)
    for name in PACKAGED:
        assert f"`{name}`" in VERIFY, name
    for text in (SKILL, VERIFY):
        assert "else `base`" in " ".join(text.split())


@pytest.mark.parametrize(
    ("config", "flag", "expected"),
    [
        (None, None, ("base", "default")),
        ("rubric: content\n", None, ("content", "config")),
        ("rubric: content\n", "content+code", ("content+code", "flag")),
        ("reviewers: 3\n", None, ("base", "default")),
    ],
)
def test_round_start_says_which_rubric_and_why(
    project: Path, config: str | None, flag: str | None, expected: tuple[str, str]
) -> None:
    if config is not None:
        (project / ".santa").mkdir()
        (project / ".santa" / "config.yaml").write_text(config, encoding="utf-8")
    args = ["round", "start", "--against", "draft.md", "--spec-text", "A greeting."]
    args += ["--rubric", flag] if flag else []
    opened = santa(*args, "--json", cwd=project)
    assert opened.returncode == 0, opened.stderr
    rubric = json.loads(opened.stdout)["rubric"]
    assert (rubric["name"], rubric["chosen_by"]) == expected
    assert rubric["why"]
    human = santa(*args, cwd=project)
    assert f"rubric: {expected[0]} (" in human.stdout


def test_runs_show_prints_the_open_rounds_instruction_again(project: Path) -> None:
    opened = json.loads(
        santa(
            "round", "start", "--against", "draft.md", "--spec-text", "x", "--json", cwd=project
        ).stdout
    )
    shown = santa("runs", "show", opened["run_id"], cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.rstrip().endswith(opened["instruction"])
    assert f"round {opened['round']} is open" in shown.stdout
    # The JSON stays the run's events, as before.
    events = json.loads(santa("runs", "show", opened["run_id"], "--json", cwd=project).stdout)
    assert isinstance(events, list) and events[0]["event"] == "run"


@pytest.mark.parametrize("text", [SKILL, VERIFY], ids=["SKILL.md", "verify.md"])
def test_the_texts_say_what_delivering_means(text: str) -> None:
    ship = text[text.index("`ship`") :]
    ship = ship[: ship.index("`fix`")]
    assert "rounds used" in ship and "path" in ship
    assert "`.santa/inputs/last-output.md` as your reply" in " ".join(ship.split())


@pytest.mark.parametrize("text", [SKILL, VERIFY], ids=["SKILL.md", "verify.md"])
def test_the_texts_say_which_deterministic_checks_count(text: str) -> None:
    flat = " ".join(text.split())
    for check in ("a build", "tests", "linter", "schema"):
        assert check in flat, check
    assert "none applies (plain Markdown, a CSV" in flat


@pytest.mark.parametrize("text", [SKILL, VERIFY], ids=["SKILL.md", "verify.md"])
def test_the_texts_say_when_to_verify_without_fixing(text: str) -> None:
    flat = " ".join(text.split())
    assert "`--max-fixes 0`" in flat
    assert "ask them" in flat  # before their file is changed, unless they asked for fixes
    # (test_escalation proves a run with `--max-fixes 0` escalates at its first NAUGHTY gate.)


FIXER_AGENT = (ROOT / "agents" / "fixer.md").read_text(encoding="utf-8")


def _fixer_rules() -> str:
    from santa_method.core.assignments import FIXER_RULES

    return FIXER_RULES


@pytest.mark.parametrize("text", [FIXER_AGENT, _fixer_rules()], ids=["fixer.md", "assignment"])
def test_the_fixer_may_use_a_fact_a_flag_states_that_it_can_check(text: str) -> None:
    """A correction a reviewer spells out (the spec's version, the line the
    output contradicts) is no question for a person: asking would escalate
    every such run, a `last` run's above all. Only a fact that neither the
    spec, the output nor a checkable flag gives is asked for."""
    flat = " ".join(text.split())
    assert "Facts come from the spec, the output and the flags." in flat
    assert "Use a fact a flag states when you can check it against the output or the spec" in flat
    assert "needs a fact none of them gives" in flat
    assert "neither the spec nor the output" not in flat
