"""Every YAML santa reads goes through core/yaml_safe.py: a safe loader that
refuses alias bombs before building them, and duplicate keys where a person
writes the file (rubrics, the config)."""

from __future__ import annotations

import ast
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from santa_method.core.errors import InputError
from santa_method.core.yaml_safe import (
    MAX_ALIAS_NODES,
    AliasBomb,
    check_aliases,
    safe_load,
)
from santa_method.state.config import load_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# The "billion laughs": nine lines, each nine aliases of the one before:
# 9**9 strings once expanded, from well under 400 bytes.
BOMB = (
    "\n".join(
        ["name: lol", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        + [
            f"{c}: &{c} [{','.join(['*' + p] * 9)}]"
            for p, c in zip("abcdefg", "bcdefgh", strict=True)
        ]
        + ["criteria: [*h,*h,*h,*h,*h,*h,*h,*h,*h]"]
    )
    + "\n"
)

# Memory the child may map: a CLI run needs well under it; expanding the
# bomb needs about 1 GB, so a regression fails at once instead of hanging.
_MEMORY = 384 * 1024 * 1024


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY, _MEMORY))


def _santa(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "SANTA_"))}
    env["SANTA_HOME"] = str(cwd / ".santa")
    env["SANTA_LOG"] = str(cwd / ".santa" / "log.jsonl")
    return subprocess.run(
        [sys.executable, "-m", "santa_method", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=_limited,
    )


def test_the_bomb_is_small() -> None:
    assert len(BOMB.encode()) < 400
    with pytest.raises(AliasBomb):
        safe_load(BOMB)


@pytest.mark.parametrize("face", ["gate", "lint", "config"])
def test_a_billion_laughs_is_refused_in_one_sentence_by_every_reader(
    tmp_path: Path, face: str
) -> None:
    (tmp_path / ".santa").mkdir()
    (tmp_path / "bomb.yaml").write_text(BOMB, encoding="utf-8")
    (tmp_path / "out.md").write_text("# Title\n\nText.\n", encoding="utf-8")
    if face == "gate":
        done = _santa(
            tmp_path,
            "gate",
            "--rubric",
            "bomb.yaml",
            "--against",
            str(EXAMPLES / "output.md"),
            str(EXAMPLES / "review-b.json"),
            str(EXAMPLES / "review-c.json"),
        )
        what = "rubric"
    elif face == "lint":
        done = _santa(tmp_path, "rubric", "lint", "bomb.yaml")
        what = "rubric"
    else:
        (tmp_path / ".santa" / "config.yaml").write_text(BOMB, encoding="utf-8")
        done = _santa(tmp_path, "round", "start", "--against", "out.md")
        what = "the config"
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"santa: cannot read {what} '")
    assert f"its YAML aliases expand it by more than {MAX_ALIAS_NODES:,} nodes" in lines[0]


def test_an_alias_that_holds_itself_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text("criteria: &a [*a]\n", encoding="utf-8")
    done = _santa(tmp_path, "rubric", "lint", "loop.yaml")
    assert done.returncode == 2
    assert "a YAML alias in it refers to a node that holds it" in done.stderr


def test_anchors_that_share_defaults_still_load() -> None:
    text = """\
defaults: &d {name: Shared, fail_signals: [a, b]}
criteria:
  - <<: *d
    id: one
  - <<: *d
    id: two
"""
    data = safe_load(text, unique_keys=True)
    assert [c["name"] for c in data["criteria"]] == ["Shared", "Shared"]


def test_growth_is_counted_in_one_visit_per_node_and_edge() -> None:
    # Sixty levels of two aliases each expand to 2**60 nodes: counting them
    # one by one would never end; the check refuses at once.
    lines = ["l0: &l0 [x]"] + [f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]" for i in range(1, 60)]
    node = yaml.compose("\n".join(lines), Loader=yaml.SafeLoader)
    with pytest.raises(AliasBomb):
        check_aliases(node)
    # Growth well under the bound is allowed.
    few = "x: &x [1]\ny: [" + ", ".join(["*x"] * 1000) + "]\n"
    assert len(safe_load(few)["y"]) == 1000


def test_a_config_giving_a_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ".santa" / "config.yaml"
    path.parent.mkdir()
    path.write_text("reviewers: 3\nrubric: base\nreviewers: 2\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"gives the key 'reviewers' more than once \(again at line 3\)"
    ):
        load_config(tmp_path)


_READERS = {
    "load",
    "safe_load",
    "full_load",
    "unsafe_load",
    "load_all",
    "safe_load_all",
    "compose",
    "compose_all",
    "parse",
    "scan",
}


def _yaml_reads(path: Path) -> list[str]:
    """Where a file reads YAML or names a loader itself (`yaml.load`,
    `yaml.CSafeLoader`, `from yaml import ...`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "yaml"
            and (node.attr in _READERS or node.attr.endswith("Loader"))
        ):
            found.append(f"{path.name}:{node.lineno}: yaml.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("yaml"):
            found.append(f"{path.name}:{node.lineno}: from {node.module} import ...")
    return found


def test_every_yaml_santa_reads_goes_through_the_one_safe_loader() -> None:
    root = Path(__file__).resolve().parent.parent
    files = [*(root / "scripts" / "santa_method").rglob("*.py"), *(root / "bench").rglob("*.py")]
    reads = [where for path in files if path.name != "yaml_safe.py" for where in _yaml_reads(path)]
    assert reads == []
