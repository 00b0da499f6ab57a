"""Every place a command reads a file the user names, for the bad-file tests.

`READERS` maps a name to the command's arguments, `{}` standing for the bad
file; the `user_files` fixture (conftest.py) is a project folder holding a
good file of each kind these arguments name, so that only the file under
test is bad.
"""

from __future__ import annotations

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
}

#: Commands that read a log the user names with --log.
LOG_READERS: dict[str, list[str]] = {
    "metrics log": ["metrics", "--log", "{}"],
    "runs log": ["runs", "--log", "{}"],
    "runs show log": ["runs", "show", "r1", "--log", "{}"],
    "view log": ["view", "--log", "{}", "--out", "page.html"],
}
