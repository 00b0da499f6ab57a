"""The plugin's Python environment: the SessionStart bootstrap and the `libexec/santa` launcher.

Everything here is offline. Installs use pip against a dead index on the
loopback address, or `--no-index` with a folder of wheels built by the test,
never the network.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

import santa_method
from santa_method.launch import UNAVAILABLE

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = ROOT / "scripts" / "bootstrap.py"
LAUNCHER = ROOT / "libexec" / "santa"
HOOKS_JSON = ROOT / "hooks" / "hooks.json"
DEAD_INDEX = "http://127.0.0.1:9/simple/"


def load_bootstrap() -> ModuleType:
    spec = importlib.util.spec_from_file_location("santa_bootstrap", BOOTSTRAP)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bootstrap = load_bootstrap()


def offline_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would let pip reach an index."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "CLAUDE", "SANTA_")) and k not in ("PYTHONPATH", "CI")
    }
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=DEAD_INDEX,
        PIP_RETRIES="0",
        PIP_TIMEOUT="3",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.update(extra)
    return env


def make_plugin(tmp_path: Path, version: str, requirements: str) -> Path:
    """A plugin root holding this bootstrap and launcher, the package at
    `version`, and requirements."""
    root = tmp_path / "plugin"
    (root / "scripts").mkdir(parents=True)
    shutil.copytree(
        ROOT / "scripts" / "santa_method",
        root / "scripts" / "santa_method",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (root / "libexec").mkdir()
    shutil.copy2(LAUNCHER, root / "libexec" / "santa")
    shutil.copy2(BOOTSTRAP, root / "scripts" / "bootstrap.py")
    (root / "scripts" / "santa_method" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (root / "scripts" / "requirements.txt").write_text(requirements)
    return root


def session_env(env_file: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    """What a Bash tool call sees after sourcing `env_file` (twice, as a
    session that starts again appends it again): PATH, where `santa` is
    found, SANTA_PYTHON."""
    script = (
        f". {env_file}; . {env_file}; "
        'printf "%s\\n" "$PATH" "$(command -v santa)" "${SANTA_PYTHON-unset}"'
    )
    done = subprocess.run(
        ["/bin/sh", "-c", script],
        env={"PATH": path},
        capture_output=True,
        text=True,
        check=True,
    )
    found_path, santa, python = done.stdout.splitlines()
    return {"PATH": found_path, "santa": santa, "SANTA_PYTHON": python}


def run_bootstrap(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "bootstrap.py")],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def build_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel, so pip can install with --no-index."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f'__version__ = "{version}"\n',
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: santa-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter with nothing installed: santa_method is not importable from it."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    return where / "bin" / "python"


# --- decisions -----------------------------------------------------------------


def test_install_decision() -> None:
    assert bootstrap.needs_install(None, "abc", python_exists=True)
    assert bootstrap.needs_install("abc", "abc", python_exists=False)
    assert bootstrap.needs_install("old", "abc", python_exists=True)
    assert not bootstrap.needs_install("abc", "abc", python_exists=True)


def test_stamp_follows_the_requirements_file(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("jsonschema==4.26.0\n")
    first = bootstrap.requirements_hash(requirements)
    bootstrap.write_stamp(tmp_path, first)
    assert bootstrap.read_stamp(tmp_path) == first
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    assert bootstrap.venv_is_current(tmp_path, requirements)
    requirements.write_text("jsonschema==4.26.1\n")
    assert bootstrap.requirements_hash(requirements) != first
    assert not bootstrap.venv_is_current(tmp_path, requirements)


def test_plugin_version_is_read_without_importing(tmp_path: Path) -> None:
    assert bootstrap.plugin_version(ROOT) == santa_method.__version__
    assert bootstrap.plugin_version(make_plugin(tmp_path, "7.1.2", "")) == "7.1.2"
    assert bootstrap.plugin_version(tmp_path / "nowhere") is None


def test_requirements_pin_exactly_the_core_dependencies() -> None:
    """The plugin's venv gets the package's core dependencies (no backend extras), pinned."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = [
        Requirement(line)
        for line in (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    assert {canonicalize_name(p.name) for p in pins} == set(core)
    for pin in pins:
        (spec,) = pin.specifier
        assert spec.operator == "==", pin
        assert core[canonicalize_name(pin.name)].specifier.contains(spec.version), pin


def test_the_launchers_look_for_every_core_dependency() -> None:
    """An interpreter the launchers choose must hold every core dependency,
    named as it is imported (PyYAML is `yaml`)."""
    import tomllib
    from importlib.metadata import packages_distributions

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from santa_method import launch

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    modules = {
        module
        for module, dists in packages_distributions().items()
        if any(canonicalize_name(d) in core for d in dists) and not module.startswith("_")
    }
    assert set(launch.DEPENDENCIES) == set(bootstrap.DEPENDENCY_MODULES) == modules


def test_interpreter_check(bare_python: Path) -> None:
    version = santa_method.__version__
    assert bootstrap.interpreter_has_package(sys.executable, version)
    assert not bootstrap.interpreter_has_package(sys.executable, "9.9.9")
    assert not bootstrap.interpreter_has_package(str(bare_python), version)
    assert not bootstrap.interpreter_has_package("/nonexistent/python", version)
    assert not bootstrap.interpreter_has_package(sys.executable, None)


def test_interpreter_check_ignores_the_plugins_own_copy(
    bare_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin's scripts/ on PYTHONPATH must not pass for an installed package."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "scripts"))
    monkeypatch.chdir(ROOT / "scripts")
    assert not bootstrap.interpreter_has_package(str(bare_python), santa_method.__version__)


# --- the script as Claude Code runs it -----------------------------------------------


def test_skip_variable_means_no_work(tmp_path: Path) -> None:
    data, env_file = tmp_path / "data", tmp_path / "env.sh"
    root = make_plugin(tmp_path, "9.9.9", "santa-dummy==1.0\n")
    env = offline_env(
        SANTA_SKIP_BOOTSTRAP="1", CLAUDE_PLUGIN_DATA=str(data), CLAUDE_ENV_FILE=str(env_file)
    )
    done = run_bootstrap(root, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not data.exists()
    # Still: the launcher's folder on PATH, once however often it is sourced.
    seen = session_env(env_file)
    assert seen["santa"] == str(root / "libexec" / "santa")
    assert seen["PATH"] == f"{root / 'libexec'}:/usr/bin:/bin"
    assert seen["SANTA_PYTHON"] == "unset"


def test_already_installed_means_no_work(tmp_path: Path) -> None:
    """The running interpreter has the package at the plugin's version: no venv at all."""
    data, env_file = tmp_path / "data", tmp_path / "env.sh"
    env = offline_env(CLAUDE_PLUGIN_DATA=str(data), CLAUDE_ENV_FILE=str(env_file))
    done = run_bootstrap(ROOT, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not data.exists()
    seen = session_env(env_file)
    assert seen["SANTA_PYTHON"] == sys.executable
    assert seen["santa"] == str(LAUNCHER)


def _break_missing(root: Path) -> None:
    (root / "libexec" / "santa").unlink()


def _break_not_executable(root: Path) -> None:
    (root / "libexec" / "santa").chmod(0o644)


def _break_crashing(root: Path) -> None:
    (root / "libexec" / "santa").write_text("#!/bin/sh\necho 'half removed' >&2\nexit 1\n")


def _break_helper(root: Path) -> None:
    (root / "scripts" / "santa_method" / "claude_code" / "guard.py").unlink()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (_break_missing, "No such file or directory"),
        (_break_not_executable, "Permission denied"),
        (_break_crashing, "exited with status 1: half removed"),
        (_break_helper, "it refused a harmless command"),
    ],
)
@pytest.mark.parametrize("skip", [False, True])
def test_a_launcher_that_does_not_work_is_reported_at_session_start(
    tmp_path: Path, damage, why: str, skip: bool
) -> None:
    """Both PreToolUse hooks block their call when the launcher fails, so a
    broken install would refuse every Bash, Write, Edit and Agent call: the
    session start says so once, with the way out, bootstrap or not."""
    root = make_plugin(tmp_path, santa_method.__version__, "santa-dummy==1.0\n")
    damage(root)
    env = offline_env(
        CLAUDE_PLUGIN_ROOT=str(root), CLAUDE_ENV_FILE=str(tmp_path / "env.sh"), PATH=os.environ["PATH"]
    )
    if skip:
        env["SANTA_SKIP_BOOTSTRAP"] = "1"
    done = run_bootstrap(root, env)
    assert done.returncode == 0
    message = json.loads(done.stdout)["systemMessage"]
    assert message.startswith(f"santa-method: its hook launcher {root / 'libexec' / 'santa'}")
    assert why in message
    assert "refuses every Bash, Write, Edit and Agent call" in message
    assert "claude plugin install santa-method@santa-method" in message
    assert "claude plugin disable santa-method@santa-method" in message
    assert message in done.stderr


def test_no_data_dir_is_reported_not_fatal(tmp_path: Path) -> None:
    root = make_plugin(tmp_path, "9.9.9", "santa-dummy==1.0\n")
    done = run_bootstrap(root, offline_env())
    assert done.returncode == 0
    assert "CLAUDE_PLUGIN_DATA is not set" in done.stderr


@pytest.mark.slow
def test_install_lifecycle_offline(tmp_path: Path) -> None:
    """Dead index, then a real install, then no work, then a changed pin: reinstall."""
    data, env_file, wheels = tmp_path / "data", tmp_path / "env.sh", tmp_path / "wheels"
    root = make_plugin(tmp_path, "9.9.9", "santa-dummy==1.0\n")
    requirements = root / "scripts" / "requirements.txt"
    venv_python = data / "venv" / "bin" / "python"
    stamp = data / "venv" / bootstrap.STAMP_NAME
    base = offline_env(
        CLAUDE_PLUGIN_DATA=str(data),
        CLAUDE_ENV_FILE=str(env_file),
        CLAUDE_PLUGIN_ROOT=str(root),
    )

    # 1. The index cannot be reached: one clear message, exit 0, nothing stamped.
    done = run_bootstrap(root, base)
    assert done.returncode == 0
    assert done.stderr.startswith("santa-method: could not install the helper's packages")
    assert "package index may be unreachable" in done.stderr
    assert "start a new Claude Code session" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    hook_output = json.loads(done.stdout)
    assert hook_output["systemMessage"] == done.stderr.strip()
    assert hook_output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert not stamp.exists()
    assert session_env(env_file)["SANTA_PYTHON"] == "unset"

    # 2. Packages available (offline, from a folder): installed, stamped, exported.
    build_wheel(wheels, "santa-dummy", "1.0")
    local = {**base, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    done = run_bootstrap(root, local)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert stamp.read_text().strip() == bootstrap.requirements_hash(requirements)
    assert session_env(env_file)["SANTA_PYTHON"] == str(venv_python)

    def installed_version() -> str:
        code = "import santa_dummy; print(santa_dummy.__version__)"
        return subprocess.run(
            [str(venv_python), "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()

    assert installed_version() == "1.0"

    # 3. Same requirements: no work. Without the wheels, any install would fail.
    shutil.rmtree(wheels)
    done = run_bootstrap(root, local)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert installed_version() == "1.0"

    # 4. A changed pin: reinstall into the same venv.
    build_wheel(wheels, "santa-dummy", "2.0")
    requirements.write_text("santa-dummy==2.0\n")
    done = run_bootstrap(root, local)
    assert (done.returncode, done.stderr) == (0, "")
    assert installed_version() == "2.0"
    assert stamp.read_text().strip() == bootstrap.requirements_hash(requirements)


# --- the launcher ----------------------------------------------------------------


def fake_python(path: Path, name: str, import_ok: bool = True) -> Path:
    """An 'interpreter' that says who it is. Without the dependencies it answers the
    launcher's check (SANTA_LAUNCHER_CHECK=1) as santa_method.launch does: exit 69."""
    path.parent.mkdir(parents=True, exist_ok=True)
    missing = "" if import_ok else f'[ "$SANTA_LAUNCHER_CHECK" = 1 ] && exit {UNAVAILABLE}\n'
    path.write_text(f'#!/bin/sh\n{missing}printf "%s\\n" "{name}" "$PYTHONPATH" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def tool_path(tmp_path: Path) -> Path:
    """A PATH holding only the tools the launcher uses: no real python3 to fall back on."""
    bin_dir = tmp_path / "tools"
    bin_dir.mkdir()
    for tool in ("sh", "dirname", "readlink", "cat", "grep", "printf"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return bin_dir


def launch(
    args: list[str], env: dict[str, str], stdin: str = "", launcher: Path = LAUNCHER
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(launcher), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def bare_env(tool_path: Path, home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": str(tool_path), "HOME": str(home), **extra}


def test_launcher_runs_the_helper_with_santa_python(tmp_path: Path, tool_path: Path) -> None:
    env = bare_env(tool_path, tmp_path, SANTA_PYTHON=sys.executable)
    done = launch(["--version"], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"santa-method {santa_method.__version__}"


def test_launcher_through_a_symlink_sets_pythonpath(tmp_path: Path, tool_path: Path) -> None:
    python = fake_python(tmp_path / "py" / "python", "chosen")
    linked = tmp_path / "elsewhere" / "santa"
    linked.parent.mkdir()
    linked.symlink_to(LAUNCHER)
    env = bare_env(tool_path, tmp_path, SANTA_PYTHON=str(python), PYTHONPATH="/already/there")
    done = launch(["gate", "--run", "a b"], env, launcher=linked)
    assert done.returncode == 0, done.stderr
    name, pythonpath, *argv = done.stdout.splitlines()
    assert name == "chosen"
    assert pythonpath == f"{ROOT.resolve() / 'scripts'}:/already/there"
    assert argv == ["-m", "santa_method", "gate", "--run", "a b"]


def test_launcher_order_of_interpreters(tmp_path: Path, tool_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".claude" / "plugins" / "data"

    def ready_venv(where: Path, name: str) -> Path:
        fake_python(where / "bin" / "python", name)
        (where / bootstrap.STAMP_NAME).write_text("x\n")
        return where

    plugin_data = tmp_path / "plugin-data"
    fake_python(plugin_data / "venv" / "bin" / "python", "plugin-data")  # not stamped yet
    fake_python(tool_path / "python3", "python3")
    env = bare_env(tool_path, home, CLAUDE_PLUGIN_DATA=str(plugin_data))

    def chosen(**extra: str) -> str:
        done = launch(["runs"], {**env, **extra})
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()[0]

    # Nothing stamped, no data folders: python3, because it has the dependencies.
    assert chosen() == "python3"
    # Exactly one santa-method venv among Claude Code's plugin data folders.
    ready_venv(data / "santa-method-santa-method" / "venv", "data-glob")
    assert chosen() == "data-glob"
    # Two are ambiguous: not guessed.
    ready_venv(data / "santa-method-inline" / "venv", "other")
    assert chosen() == "python3"
    # CLAUDE_PLUGIN_DATA's venv, once the bootstrap stamped it.
    (plugin_data / "venv" / bootstrap.STAMP_NAME).write_text("x\n")
    assert chosen() == "plugin-data"
    # SANTA_PYTHON first; one that does not exist is passed over.
    explicit = fake_python(tmp_path / "explicit" / "python", "explicit")
    assert chosen(SANTA_PYTHON=str(explicit)) == "explicit"
    assert chosen(SANTA_PYTHON=str(tmp_path / "gone")) == "plugin-data"


def test_launcher_without_interpreter_says_how_to_fix(tmp_path: Path, tool_path: Path) -> None:
    fake_python(tool_path / "python3", "python3", import_ok=False)
    done = launch(["--version"], bare_env(tool_path, tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "start a new Claude Code session" in done.stderr
    # A command that works as written: the plugin's own pinned requirements.
    assert f"python3 -m pip install -r {ROOT}/scripts/requirements.txt" in done.stderr


def pretooluse(subagent_type: str) -> str:
    return json.dumps(
        {
            "session_id": "s",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": "/tmp",
            "hook_event_name": "PreToolUse",
            "tool_name": "Agent",
            "tool_input": {"description": "r", "prompt": "p", "subagent_type": subagent_type},
        },
        separators=(",", ":"),
    )


def subagent_stop(agent_type: str, active: bool = False) -> str:
    return json.dumps(
        {
            "session_id": "s",
            "hook_event_name": "SubagentStop",
            "agent_id": "a1",
            "agent_type": agent_type,
            "agent_transcript_path": "/tmp/a.jsonl",
            "last_assistant_message": '{"verdict": "PASS"}',
            "stop_hook_active": active,
        },
        separators=(",", ":"),
    )


def hook_command(event: str, matcher: str | None = "Agent") -> str:
    """The command line hooks.json gives Claude Code, with the plugin root filled in."""
    groups = json.loads(HOOKS_JSON.read_text())["hooks"][event]
    (group,) = [g for g in groups if event != "PreToolUse" or g.get("matcher") == matcher]
    (hook,) = group["hooks"]
    return hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))


def run_hook(event: str, stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """As Claude Code runs a hook: the command through a shell, the event JSON on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", hook_command(event)],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("agent", ["santa-method:reviewer", "santa-reviewer", "santa-method:fixer"])
def test_hook_without_interpreter_denies_santa_agents(
    agent: str, tmp_path: Path, tool_path: Path
) -> None:
    done = run_hook("PreToolUse", pretooluse(agent), bare_env(tool_path, tmp_path))
    assert done.returncode == 0
    decision = json.loads(done.stdout)["hookSpecificOutput"]
    assert decision["hookEventName"] == "PreToolUse"
    assert decision["permissionDecision"] == "deny"
    assert "start a new Claude Code session" in decision["permissionDecisionReason"]


def test_hook_without_interpreter_leaves_other_agents_alone(
    tmp_path: Path, tool_path: Path
) -> None:
    env = bare_env(tool_path, tmp_path)
    done = run_hook("PreToolUse", pretooluse("general-purpose"), env)
    assert (done.returncode, done.stdout) == (0, "")
    done = run_hook("SubagentStop", subagent_stop("Explore"), env)
    assert (done.returncode, done.stdout) == (0, "")


def test_subagent_stop_without_interpreter_blocks_a_reviewer_once(
    tmp_path: Path, tool_path: Path
) -> None:
    env = bare_env(tool_path, tmp_path)
    done = run_hook("SubagentStop", subagent_stop("santa-method:reviewer"), env)
    assert done.returncode == 0
    reply = json.loads(done.stdout)
    assert reply["decision"] == "block"
    assert "santa-method cannot run" in reply["reason"]
    # Already continuing because of a block: let it stop; nothing was stored.
    done = run_hook("SubagentStop", subagent_stop("santa-reviewer", active=True), env)
    assert (done.returncode, done.stdout) == (0, "")
