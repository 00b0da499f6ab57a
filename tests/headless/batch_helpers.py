"""A scripted model for batch tests: it flags what is planted, and fixes it.

Why planted markers: a batch test must know, independently of the code
under test, which items are defective and for which criterion. An item
holding `BAD-<criterion>` is defective on that criterion; the scripted
reviewer flags it (quoting the marker) whenever its rubric holds that
criterion, and the scripted fixer replaces every marker it is shown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from _reviews import review_of
from e2e.stub_server import FIXER, REVIEWER, Json, first_user_text, system_text

from .conftest import CRITERIA

_CANARY = re.compile(r"santa-canary: ([0-9a-f]+)\s*$")
_OUTPUT = re.compile(r"<<<OUTPUT (\S+)\n(.*?)OUTPUT \1>>>", re.S)
MARK = re.compile(r"BAD-([a-z-]+)")


def rubric_of(body: dict[str, Any]) -> list[str]:
    """The criteria of the rubric this reviewer was given (from its system prompt)."""
    section = system_text(body).split("## Rubric", 1)[1].split("## Spec", 1)[0]
    return [c for c in CRITERIA if f"### `{c}`" in section]


def review(body: dict[str, Any]) -> Json:
    text = first_user_text(body)
    canary = _CANARY.search(text)
    output = _OUTPUT.search(text)
    assert canary and output, "a reviewer's message ends with the output fence and the canary"
    criteria = rubric_of(body)
    bad = sorted({m for m in MARK.findall(output.group(2)) if m in criteria})
    flags = [{"criterion": c, "issue": f"planted defect in {c}", "quote": f"BAD-{c}"} for c in bad]
    return Json(review_of(criteria, flags, detail="checked", canary=canary.group(1)))


def fix(body: dict[str, Any]) -> Json:
    text = first_user_text(body)
    outputs = _OUTPUT.findall(text)
    assert outputs, "the fix assignment holds the output"
    fixed = MARK.sub("fine", outputs[-1][1])
    return Json({"output": fixed, "report": ["1. fixed: removed the planted defect"]})


SCRIPT = {REVIEWER: review, FIXER: fix}


def jsonl(path: Path, texts: list[str], **fields: list[Any]) -> Path:
    """Write items as JSONL: id i, field `output`, plus any extra fields by position."""
    lines = []
    for i, text in enumerate(texts):
        record = {"id": f"item-{i:04d}", "output": text}
        for name, values in fields.items():
            record[name] = values[i]
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def texts(n: int, defective: set[int], criterion: str = "completeness") -> list[str]:
    return [
        f"Summary {i}.\n"
        + (
            f"BAD-{criterion} a needed part is missing.\n"
            if i in defective
            else "All parts present.\n"
        )
        for i in range(n)
    ]


def notes_batch(project: Path, base_url: str, monkeypatch: Any, n: int = 1) -> list[str]:
    """`santa batch` arguments for `n` release notes reviewed through the
    Message Batches API at `base_url` (the stub server)."""
    items = project / "items"
    items.mkdir()
    for k in range(n):
        (items / f"note-{k}.md").write_text(f"Release note {k}.\n", encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    argv = ["batch", str(items), "--spec-text", "A release note.", "--quiet"]
    return [*argv, "--backend", "anthropic-batch"]
