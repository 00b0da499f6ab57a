"""Runs a composite action's steps here, as the Actions runner would.

Why our own runner: no Actions runner or container engine exists here, and
the Action's behaviour lives in its `run:` steps and the values `env:` and
`with:` hand them. This evaluates the few expression forms the Action and
the example workflows use (`inputs.*`, `steps.*.outputs.*`, `github.token`,
`secrets.*`) and refuses any other, so a step that needs more fails the test
instead of running with a guess. `uses:` steps (the cache) are not run: their
pins are checked instead.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def read_outputs(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's two forms: `name=value` and `name<<DELIM ... DELIM`."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            body: list[str] = []
            i += 1
            while lines[i] != delim:
                body.append(lines[i])
                i += 1
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        i += 1
    return values


@dataclass
class Context:
    inputs: dict[str, str]
    token: str = "ghs_test_token"
    secrets: dict[str, str] = field(default_factory=dict)
    steps: dict[str, dict[str, str]] = field(default_factory=dict)

    def value(self, expression: str) -> str:
        parts = expression.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs.get(parts[1], "")
        if parts[0] == "secrets" and len(parts) == 2:
            return self.secrets.get(parts[1], "")
        if expression == "github.token":
            return self.token
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return self.steps.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the test runner does not know the expression {expression!r}")

    def render(self, text: Any) -> str:
        return _EXPR.sub(lambda m: self.value(m.group(1)), str(text))


@dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    returncode: int
    steps: list[StepRun]
    outputs: dict[str, str]

    @property
    def stdout(self) -> str:
        return "".join(s.stdout for s in self.steps)


def run_action(
    action_dir: Path,
    with_: Mapping[str, str],
    *,
    env: Mapping[str, str],
    runner_temp: Path,
    cwd: Path,
    token: str = "ghs_test_token",
) -> ActionRun:
    """Run `action_dir/action.yml` with `with_` inputs; stops at the first failing step."""
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    declared = action["inputs"]
    unknown = set(with_) - set(declared)
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    defaults = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    ctx = Context(inputs={}, token=token)
    ctx.inputs = {name: ctx.render(value) for name, value in defaults.items()}
    ctx.inputs.update(with_)
    done: list[StepRun] = []
    for index, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {index}")
        if "uses" in step:
            assert PINNED.match(step["uses"].split(" ")[0]), f"{step['uses']} is not pinned"
            continue
        assert step.get("shell") == "bash", f"{name}: every run step says shell: bash"
        out = runner_temp / f"output-{index}"
        out.write_text("", encoding="utf-8")
        step_env = dict(env)
        step_env.update(
            {
                "GITHUB_ACTION_PATH": str(action_dir),
                "GITHUB_OUTPUT": str(out),
                "RUNNER_TEMP": str(runner_temp),
                "RUNNER_OS": "Linux",
            }
        )
        step_env.update({k: ctx.render(v) for k, v in (step.get("env") or {}).items()})
        script = runner_temp / f"step-{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            env=step_env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        outputs = read_outputs(out)
        if "id" in step:
            ctx.steps[step["id"]] = outputs
        done.append(StepRun(name, proc.returncode, proc.stdout, proc.stderr, outputs))
        if proc.returncode != 0:
            break
    # Like the runner: outputs are set from what the steps wrote, even when one failed.
    results = {name: ctx.render(spec["value"]) for name, spec in action["outputs"].items()}
    return ActionRun(done[-1].returncode if done else 0, done, results)


def base_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The runner's environment: this machine's PATH and nothing from the developer's shell."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(extra)
    return env
