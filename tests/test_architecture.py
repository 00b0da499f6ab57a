"""ARCHITECTURE.md's diagram of a run and its table of transitions match the code.

The diagram is how a newcomer learns the run; a diagram that drifts from
the code teaches the wrong thing, so its states, its gate outcomes and the
function behind each transition are read here and checked against the
package.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from santa_method.core.types import Next
from santa_method.state.open_runs import FINAL_STATUSES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scripts" / "santa_method"
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
FACES = ("cli", "headless", "claude_code")


def _diagram() -> list[tuple[str, str, str]]:
    (block,) = re.findall(r"```mermaid\n(.*?)```", TEXT, flags=re.S)
    edges = re.findall(r"^\s*(\S+) --> (\S+?)(?:: (.+))?$", block, flags=re.M)
    assert edges, "the diagram has no transitions"
    return [(a, b, label.strip()) for a, b, label in edges]


def _table() -> list[tuple[str, str, list[str]]]:
    rows = re.findall(r"^\| [^|]+ \| `([^`]+)` `([^`]+)` \| ([^|]+) \|$", TEXT, flags=re.M)
    assert len(rows) >= 8, "the table of transitions is missing or unreadable"
    return [(module, name, re.findall(r"`([^`]+)`", callers)) for module, name, callers in rows]


def _uses(path: Path, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", path.read_text(encoding="utf-8")) is not None


def test_the_diagram_ends_in_the_final_statuses_of_the_code() -> None:
    ends = {a for a, b, _ in _diagram() if b == "[*]"}
    assert ends == set(FINAL_STATUSES)


def test_the_diagram_names_every_gate_outcome_and_wait() -> None:
    labels = {label for a, _, label in _diagram() if a in {"gated", "reviewing"}}
    assert set(get_args(Next)) | {"wait"} <= labels | {"fix"}
    assert "fix" in {label for a, _, label in _diagram() if a == "gated"}


def test_each_transition_is_one_function_and_the_table_names_every_face_that_calls_it() -> None:
    for module, name, callers in _table():
        source = PACKAGE / module
        assert re.search(rf"^def {name}\(", source.read_text(encoding="utf-8"), flags=re.M), (
            f"{module} defines no {name}"
        )
        calling = {
            str(path.relative_to(PACKAGE))
            for face in FACES
            for path in (PACKAGE / face).rglob("*.py")
            if _uses(path, name)
        }
        assert calling == set(callers), f"{name} is called by {sorted(calling)}"
