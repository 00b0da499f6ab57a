"""The tested lock and the open ranges: what CI installs, what users get.

Why: users install santa-method with open ranges, so a new release of a
dependency reaches them without a release of ours; CI and README's set-up
install the versions the suite passed with (constraints.txt), so main stays
green while .ci/latest shows the drift. These tests keep the three files
that name versions (pyproject.toml, constraints.txt, the plugin's
scripts/requirements.txt) and the two set-ups (README, .ci/run) in step.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SELF = canonicalize_name(PROJECT["name"])


def pins(path: Path) -> dict[str, str]:
    """name -> version of a pip requirements file that pins exactly."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", line
        found[canonicalize_name(requirement.name)] = spec.version
    return found


def declared(extra: str | None) -> list[Requirement]:
    """The project's requirements for `extra` (None: the core), its own extras unfolded."""
    lines = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    found = []
    for requirement in map(Requirement, lines):
        if canonicalize_name(requirement.name) == SELF:
            for inner in sorted(requirement.extras):
                found += declared(inner)
        else:
            found.append(requirement)
    return found


def test_the_lock_pins_every_declared_dependency_within_its_range() -> None:
    locked = pins(ROOT / "constraints.txt")
    wanted = declared(None) + declared("dev")
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{name} is not in constraints.txt"
        assert requirement.specifier.contains(locked[name]), (requirement, locked[name])


def test_the_plugins_venv_gets_the_tested_versions() -> None:
    """The bootstrap installs scripts/requirements.txt: the same versions CI tested."""
    locked = pins(ROOT / "constraints.txt")
    for name, version in pins(ROOT / "scripts" / "requirements.txt").items():
        assert locked[name] == version, name


def test_no_upper_bound_without_a_reason() -> None:
    """A bound that keeps users from a newer release says why, in a comment above it."""
    lines = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    extras = PROJECT["optional-dependencies"].values()
    everything = [*PROJECT["dependencies"], *(text for extra in extras for text in extra)]
    for text in everything:
        ops = {spec.operator for spec in Requirement(text).specifier}
        if ops & {"<", "<=", "==", "!=", "~=", "==="}:
            (number,) = [i for i, line in enumerate(lines) if f'"{text}"' in line]
            assert lines[number - 1].strip().startswith("#"), f"{text} has no reason above it"


def setup_installs(text: str) -> list[list[str]]:
    """The arguments of every `pip install` in `text` that installs the project itself."""
    found = []
    for command in re.split(r"&&|;|\n", text):
        words = shlex.split(command.split(" #", 1)[0], comments=False) if command.strip() else []
        if "pip" in words and "install" in words:
            args = words[words.index("install") + 1 :]
            if any(a.startswith(".[") or a == "." for a in args):
                found.append([a for a in args if a not in ("--quiet", "-q")])
    return found


def test_readme_and_ci_install_from_the_lock_the_same_way() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", readme, re.M | re.S)
    (readme_install,) = [found for block in blocks for found in setup_installs(block)]
    (ci_install,) = setup_installs((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert readme_install == ci_install == ["-e", ".[dev]", "-c", "constraints.txt"]


def test_latest_ignores_the_lock() -> None:
    (latest_install,) = setup_installs((ROOT / ".ci" / "latest").read_text(encoding="utf-8"))
    assert "constraints.txt" not in latest_install and "--upgrade" in latest_install
