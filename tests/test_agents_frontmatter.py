"""Frontmatter and contracts of the skill, the agents and the commands.

`claude plugin validate` does not read a root SKILL.md's frontmatter, and a
vendored agent passes it with none, so these files are parsed here: the
reviewer must stay read-only, every file must carry the fields Claude Code
needs, and the texts must agree with the helper's contract.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("verify", "batch", "metrics", "escape")
# Fields Claude Code reads for plugin agents; others are ignored or unknown.
AGENT_FIELDS = {
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "color",
    "effort",
    "maxTurns",
    "skills",
    "background",
    "omitClaudeMd",
}
COMMAND_FIELDS = {
    "description",
    "argument-hint",
    "allowed-tools",
    "model",
    "disable-model-invocation",
    "user-invocable",
}
# The helper's sub-commands (and their own sub-commands) the markdown may use.
SANTA_COMMANDS = {
    "round": {"start"},
    "gate": None,
    "log": {"fix", "ship", "escalate", "escape", "waive", "generate"},
    "report": None,
    "runs": None,
    "metrics": None,
    "sample": None,
    "batch": None,
    "validate": None,
    "rubric": {"list", "show", "lint"},
    "init": None,
    "view": None,
}


def split(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert match, f"{path.name} has no frontmatter"
    meta = yaml.safe_load(match.group(1))
    assert isinstance(meta, dict), f"{path.name}: frontmatter is not a mapping"
    return meta, match.group(2)


def tools(meta: dict) -> list[str]:
    value = meta["tools"]
    items = value if isinstance(value, list) else str(value).split(",")
    return [t.strip() for t in items if t.strip()]


def markdown_files() -> list[Path]:
    return [
        ROOT / "SKILL.md",
        *(ROOT / "agents").glob("*.md"),
        *(ROOT / "commands").glob("*.md"),
    ]


# --- skill -------------------------------------------------------------------


def test_skill_frontmatter_says_when_to_activate_and_when_not() -> None:
    meta, body = split(ROOT / "SKILL.md")
    assert meta["name"] == "santa-method"
    description = meta["description"]
    assert 0 < len(description) <= 1024
    assert "Use when" in description and "Do not use" in description
    for trigger in ("published", "compliance", "batch", "hallucination", "end users"):
        assert trigger in description, trigger
    for skip in ("drafts", "exploration", "deterministic"):
        assert skip in description, skip
    assert body.strip()


def test_skill_spawns_reviewers_by_the_plugins_names_only() -> None:
    """`santa init` renames them in its copy, so neither text needs the other's names."""
    _, body = split(ROOT / "SKILL.md")
    for name in ("santa-method:reviewer", "santa-method:fixer"):
        assert name in body, name
    for name in ("santa-reviewer", "santa-fixer", "vendored"):
        assert name not in body, name
    assert "ONE turn" in body
    assert '"run_in_background": false' in body
    assert "/santa-method:batch" in body


def test_skill_is_about_claude_code_and_pattern_b_has_its_own_page() -> None:
    _, body = split(ROOT / "SKILL.md")
    for other_host in ("--source files", "Pattern B", "clear the context", "new session"):
        assert other_host not in body, other_host
    page = (ROOT / "docs" / "pattern-b.md").read_text(encoding="utf-8")
    assert "Not for Claude Code" in page and "--source files" in page


# --- agents ------------------------------------------------------------------


def test_reviewer_is_read_only() -> None:
    meta, _ = split(ROOT / "agents" / "reviewer.md")
    assert meta["name"] == "reviewer"
    assert meta["description"]
    assert tools(meta) == ["Read", "Grep", "Glob"]
    assert meta.get("model", "inherit") == "inherit"
    assert "disallowedTools" not in meta


def test_fixer_edits_but_runs_nothing() -> None:
    meta, _ = split(ROOT / "agents" / "fixer.md")
    assert meta["name"] == "fixer"
    assert meta["description"]
    assert sorted(tools(meta)) == sorted(["Read", "Edit", "Write", "Grep", "Glob"])
    assert meta.get("model", "inherit") == "inherit"


@pytest.mark.parametrize("name", ["reviewer", "fixer"])
def test_agent_frontmatter_has_only_known_fields(name: str) -> None:
    meta, _ = split(ROOT / "agents" / f"{name}.md")
    assert set(meta) <= AGENT_FIELDS, set(meta) - AGENT_FIELDS


def test_reviewer_body_states_the_output_contract() -> None:
    _, body = split(ROOT / "agents" / "reviewer.md")
    for phrase in ("santa-canary:", "data", "verbatim", "missing", "every criterion"):
        assert phrase.lower() in body.lower(), phrase
    (example,) = re.findall(r"```json\n(.*?)\n```", body, re.S)
    review = json.loads(example)
    assert set(review) == {"verdict", "checks", "critical_issues", "suggestions", "canary"}
    # The example obeys the consistency rule it teaches.
    failing = {c["criterion"] for c in review["checks"] if c["result"] == "FAIL"}
    flagged = {i["criterion"] for i in review["critical_issues"]}
    assert review["verdict"] == "FAIL" and failing and failing <= flagged
    assert all("quote" in i or "missing" in i for i in review["critical_issues"])


def test_fixer_body_limits_it_to_the_flags() -> None:
    _, body = split(ROOT / "agents" / "fixer.md")
    for phrase in ("only the listed flags", "unverified", "no refactoring", "not an issue"):
        assert phrase.lower() in body.lower(), phrase


# --- commands ----------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_command_frontmatter(name: str) -> None:
    meta, body = split(ROOT / "commands" / f"{name}.md")
    assert set(meta) <= COMMAND_FIELDS, set(meta) - COMMAND_FIELDS
    assert meta["description"] and meta["argument-hint"]
    allowed = [t.strip() for t in meta["allowed-tools"].split(",")]
    assert "Bash(santa:*)" in allowed
    assert "Bash" not in allowed, "a plain Bash grant would let the command run anything"
    assert "$ARGUMENTS" in body
    needs_agents = name in ("verify", "batch")
    assert ("Agent" in allowed) is needs_agents


def test_verify_handles_every_target_form() -> None:
    _, body = split(ROOT / "commands" / "verify.md")
    for form in ("diff:REV", "--against-diff REV", "`last`", ".santa/inputs/last-output.md"):
        assert form in body, form
    assert "fixer_instruction" in body


def test_batch_leaves_the_books_to_the_helper() -> None:
    """The page plans, records and reports through `santa batch`; the model
    never picks items or decides the verdict."""
    _, body = split(ROOT / "commands" / "batch.md")
    for step in ("santa batch plan", "santa batch record", "santa batch status"):
        assert step in body
    assert "Never choose items" in body
    assert "not available" not in body


# --- santa command lines -----------------------------------------------------


def santa_lines(path: Path) -> list[str]:
    """Every `santa ...` command line: in fenced blocks (indented ones too) and inline code."""
    lines, fence, prose = [], None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:]
        elif fence is not None:
            if stripped.startswith("santa "):
                lines.append(stripped)
        else:
            prose.append(line)
    lines += re.findall(r"`(santa [^`]+)`", "\n".join(prose))
    return lines


def test_santa_lines_finds_commands_in_indented_blocks() -> None:
    lines = santa_lines(ROOT / "SKILL.md")
    assert "santa gate --run RUN_ID --json" in lines
    assert "santa log ship --run RUN_ID" in lines
    assert "santa metrics" in lines


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.name)
def test_santa_command_lines_use_the_helpers_commands(path: Path) -> None:
    for line in santa_lines(path):
        words = line.split()
        assert words[1] in SANTA_COMMANDS, line
        subs = SANTA_COMMANDS[words[1]]
        if subs is not None and len(words) > 2:
            assert words[2] in subs, line
        assert "<" not in line and ">" not in line, f"shell redirection in: {line}"


def test_markdown_names_only_agents_that_exist() -> None:
    agents = {split(p)[0]["name"] for p in (ROOT / "agents").glob("*.md")}
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"santa-method:(reviewer|fixer)\b", text):
            assert name in agents, (path.name, name)
