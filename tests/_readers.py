"""Every place a command reads a file the user names, for the bad-file tests.

`READERS` maps a name to the command's arguments, `{}` standing for the bad
file; the `user_files` fixture (conftest.py) is a project folder holding a
good file of each kind these arguments name, so that only the file under
test is bad. A command that reads a file at a fixed place rather than one
named in its arguments (`santa init DIR` reads `DIR/.claude/settings.json`)
has no `{}`: `AT` says where, under the project folder, the bad file goes.
"""

from __future__ import annotations

from pathlib import Path

READERS: dict[str, list[str]] = {
    "rubric lint": ["rubric", "lint", "{}"],
    "gate rubric": ["gate", "b.json", "c.json", "--rubric", "{}"],
    "gate review": ["gate", "{}", "c.json"],
    "gate output": ["gate", "b.json", "c.json", "--against", "{}"],
    "validate": ["validate", "{}"],
    "round start spec": ["round", "start", "--against", "out.md", "--spec", "{}"],
    "round start output": ["round", "start", "--against", "{}", "--spec", "spec.md"],
    "round start rubric": [
        "round",
        "start",
        "--against",
        "out.md",
        "--spec-text",
        "x",
        "--rubric",
        "{}",
    ],
    "run spec": ["run", "--against", "out.md", "--spec", "{}"],
    "run output": ["run", "--against", "{}", "--spec-text", "x"],
    "run rubric": ["run", "--against", "out.md", "--spec-text", "x", "--rubric", "{}"],
    "sample items": ["sample", "{}"],
    "sample exclude": ["sample", "items.jsonl", "--exclude", "{}"],
    "batch items": ["batch", "{}", "--spec-text", "x"],
    "batch spec": ["batch", "items.jsonl", "--spec", "{}"],
    "batch rubric": ["batch", "items.jsonl", "--spec-text", "x", "--rubric", "{}"],
    "batch exclude": ["batch", "items.jsonl", "--spec-text", "x", "--exclude", "{}"],
    "batch plan items": ["batch", "plan", "{}", "--spec-text", "x"],
    "batch plan spec": ["batch", "plan", "items.jsonl", "--spec", "{}"],
    "batch plan rubric": ["batch", "plan", "items.jsonl", "--spec-text", "x", "--rubric", "{}"],
    "batch plan exclude": ["batch", "plan", "items.jsonl", "--spec-text", "x", "--exclude", "{}"],
    "validate rubric": ["validate", "b.json", "--rubric", "{}"],
    "validate output": ["validate", "b.json", "--against", "{}"],
    "rubric show": ["rubric", "show", "{}"],
    "init settings": ["init", "."],
}

AT: dict[str, str] = {"init settings": ".claude/settings.json"}


def place(project: Path, name: str, default: str) -> Path:
    """Where the bad file of reader `name` goes: `AT`'s place (its folder
    made), else `default` in the project folder."""
    if name not in AT:
        return project / default
    target = project / AT[name]
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


#: Commands that read, or append to, a log the user names with --log.
LOG_READERS: dict[str, list[str]] = {
    "metrics log": ["metrics", "--log", "{}"],
    "round start log": ["round", "start", "--against", "out.md", "--spec-text", "x", "--log", "{}"],
    "run log": ["run", "--against", "out.md", "--spec-text", "x", "--log", "{}"],
    "batch log": ["batch", "items.jsonl", "--spec-text", "x", "--log", "{}"],
    "log generate log": [
        "log",
        "generate",
        "--run",
        "r1",
        "--log",
        "{}",
        "--data",
        '{"tokens": 1}',
    ],
    "runs log": ["runs", "--log", "{}"],
    "runs show log": ["runs", "show", "r1", "--log", "{}"],
    "view log": ["view", "--log", "{}", "--out", "page.html"],
}
