"""Every install path README (and docs/) documents, run as a user runs it.

Why: a marketplace that is a folder is copied whole by Claude Code,
git-ignored files included, so an install from the wrong folder ships a
`.venv`, a `.env` or `.santa/` run state into the plugin cache. These tests
run the README's own commands with the real Claude Code CLI (bundled in
claude-agent-sdk) in a throwaway HOME, from a "working clone" that holds
exactly that dirt, and check what lands in the cache. The hosted path is
simulated offline: git's `insteadOf` in the throwaway HOME points
github.com at a bare repository on disk, so `marketplace add OWNER/REPO`
really clones.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from test_plugin_manifest import claude_cli as bundled_cli
from test_plugin_manifest import cli_env, run_claude

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The pages for people: README and docs/ (docs/headless.md installs a backend's extra).
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_CACHE_BYTES = 5 * 1024 * 1024
LOCAL_ONLY = (".venv", ".env", ".santa")
OWNER_REPO = "santa-owner/santa-method"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def readme_block(needle: str) -> list[str]:
    """The command lines of the one README code block that holds `needle`."""
    (block,) = [b for b in code_blocks(README) if needle in b]
    return [line for line in block.splitlines() if line.strip()]


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


@pytest.fixture
def working_clone(tmp_path: Path) -> Path:
    """A clone someone works in: the repository plus the local files that
    never belong in a plugin (a big `.venv`, a secret `.env`, run state)."""
    work = tmp_path / "work"
    git("clone", "-q", str(ROOT), str(work))
    (work / ".venv" / "lib").mkdir(parents=True)
    (work / ".venv" / "lib" / "big.bin").write_bytes(os.urandom(MAX_CACHE_BYTES + 1))
    (work / ".env").write_text("ANTHROPIC_API_KEY=sk-not-a-real-key\n", encoding="utf-8")
    (work / ".santa" / "runs" / "r1").mkdir(parents=True)
    (work / ".santa" / "runs" / "r1" / "state.json").write_text("{}", encoding="utf-8")
    return work


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def shell(lines: list[str], home: Path, substitutions: dict[str, str]) -> None:
    """Run README lines in bash as written, with `claude` the bundled CLI and
    the README's placeholders replaced."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").unlink(missing_ok=True)
    (bin_dir / "claude").symlink_to(bundled_cli())
    script = "\n".join(lines)
    for placeholder, value in substitutions.items():
        script = script.replace(placeholder, value)
    env = cli_env(home)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"


def installed_copy(home: Path) -> Path:
    (copy,) = (home / ".claude" / "plugins" / "cache").glob("*/santa-method/*")
    return copy


def assert_clean(copy: Path) -> None:
    names = {p.name for p in copy.iterdir()}
    assert not names & set(LOCAL_ONLY), sorted(names)
    size = sum(p.stat().st_size for p in copy.rglob("*") if p.is_file() and not p.is_symlink())
    assert size <= MAX_CACHE_BYTES, f"{size} bytes in {copy}"
    # It is the plugin, whole.
    for rel in ("SKILL.md", ".claude-plugin/plugin.json", "hooks/hooks.json", "libexec/santa"):
        assert (copy / rel).exists(), rel


# --- what the README says ------------------------------------------------------


def pip_targets() -> list[tuple[str, str]]:
    """(line, package argument) for every `pip install` in the pages' commands."""
    found = []
    texts = [page.read_text(encoding="utf-8") for page in PAGES]
    spans = [s for text in texts for s in re.findall(r"`([^`\n]*pip install[^`\n]*)`", text)]
    lines = [line for text in texts for block in code_blocks(text) for line in block.splitlines()]
    for line in [*spans, *lines]:
        for command in re.split(r"&&|;", line.split("#", 1)[0]):
            if "pip install" not in command:
                continue
            words = shlex.split(command)
            if words[:2] != ["pip", "install"]:
                continue
            args = iter(words[2:])
            for word in args:
                if word in ("-c", "--constraint", "-r", "--requirement"):
                    next(args, None)  # a file of pins, not a package
                elif not word.startswith("-"):
                    found.append((command.strip(), word))
    return found


def test_readme_installs_the_package_only_from_a_clone_or_git() -> None:
    targets = pip_targets()
    assert targets, "README shows no pip install at all"
    for line, target in targets:
        local = target.startswith((".", "/", "~"))
        git_url = re.fullmatch(r"santa-method(\[[a-z,]+\])? @ git\+\S+", target)
        assert local or git_url, f"{line!r}: {target!r} is looked up on PyPI, where it is not"


def test_no_message_tells_anyone_to_install_by_name() -> None:
    """The helper's own messages (launchers, hooks, CLI help) must work as written too."""
    # The name (with extras, quoted or not) as the whole argument: no `@ git+`.
    pattern = re.compile(r"pip install '?santa-method(\[[a-z,]+\])?'?(?=[\s`)\"]|$)(?! @)")
    for folder in ("scripts", "libexec", "hooks", "commands", "agents", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in ("", ".py", ".sh", ".md", ".json"):
                text = path.read_text(encoding="utf-8", errors="replace")
                assert not pattern.search(text), path
    for doc in (ROOT / "SKILL.md", *PAGES):
        assert not pattern.search(doc.read_text(encoding="utf-8")), doc


def test_readme_never_adds_a_working_folder_as_a_marketplace() -> None:
    for block in code_blocks(README):
        for line in block.splitlines():
            if "marketplace add" in line:
                source = line.split("marketplace add", 1)[1].split()[0]
                assert source == "OWNER/REPO" or source.startswith("~/santa-method-plugin"), line


@pytest.mark.slow
@pytest.mark.parametrize("how", ["url", "clone"])
def test_the_package_installs_from_a_clone_and_from_git(
    how: str, working_clone: Path, tmp_path: Path
) -> None:
    """`pip install /path/to/santa-method` and `... @ git+URL`, offline:
    dependencies are already in this environment, so only the package is built."""
    target = tmp_path / "site"
    # file://localhost/...: the pip of a fresh venv (23.x) refuses an empty host (file:///...).
    url = f"git+file://localhost{working_clone}"
    source = str(working_clone) if how == "clone" else f"santa-method @ {url}"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--target", str(target), source], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    # A wheel never carries a clone's local files.
    assert not [p for p in target.rglob("*") if p.name in LOCAL_ONLY]
    env = {**os.environ, "PYTHONPATH": str(target)}
    shown = subprocess.run(
        [sys.executable, "-c", "import santa_method; print(santa_method.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert shown.stdout.startswith(str(target)), shown.stderr


def test_readmes_git_lines_work_with_the_pip_a_fresh_venv_has(tmp_path: Path) -> None:
    """A new venv's own pip (whatever ensurepip bundles, 23.x here) reads every
    `santa-method @ git+URL` line README gives, with a hosted URL filled in."""
    lines = [t for _, t in pip_targets() if " @ git+" in t]
    assert lines, "README gives no install from git"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    code = (
        "import sys\n"
        "from pip._internal.req.constructors import install_req_from_line\n"
        "for line in sys.argv[1:]:\n"
        "    req = install_req_from_line(line)\n"
        "    print(req.name, sorted(req.extras), req.link.url)\n"
    )
    urls = [t.replace("git+URL", "git+https://github.com/santa-owner/santa-method.git") for t in lines]
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code, *urls],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )
    assert done.returncode == 0, done.stderr
    for printed in done.stdout.splitlines():
        assert printed.startswith("santa-method ")
        assert printed.endswith(" git+https://github.com/santa-owner/santa-method.git")


# --- Claude Code installs -------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("checkout", ["clone", "worktree"])
def test_readme_clean_checkout_install_leaves_local_files_behind(
    checkout: str, working_clone: Path, home: Path
) -> None:
    lines = readme_block("claude plugin marketplace add ~/santa-method-plugin")
    if checkout == "worktree":
        (worktree_line,) = re.findall(r"`(git -C [^`]*worktree add[^`]*)`", README)
        assert lines[0].startswith("git clone ")
        lines = [worktree_line, *lines[1:]]
    shell(lines, home, {"/path/to/santa-method": str(working_clone)})
    copy = installed_copy(home)
    assert_clean(copy)
    assert (home / "santa-method-plugin").is_dir()


@pytest.mark.slow
def test_hosted_install_clones_tracked_files_only(working_clone: Path, home: Path) -> None:
    """`/plugin marketplace add OWNER/REPO` (its shell form, as README gives it)."""
    hosted = home / "github"
    git("clone", "-q", "--bare", str(working_clone), str(hosted / f"{OWNER_REPO}.git"))
    for prefix in ("https://github.com/", "git@github.com:"):
        git(
            "config",
            "--file",
            str(home / ".gitconfig"),
            "--add",
            f"url.file://{hosted}/.insteadOf",
            prefix,
        )
    spans = re.findall(r"`(claude plugin (?:marketplace add|install) [^`]+)`", README)
    assert spans[0] == "claude plugin marketplace add OWNER/REPO", spans
    shell(spans[:2], home, {"OWNER/REPO": OWNER_REPO})
    assert_clean(installed_copy(home))


@pytest.mark.slow
def test_a_working_folder_marketplace_copies_its_local_files(
    working_clone: Path, home: Path
) -> None:
    """Why README forbids it: the CLI copies git-ignored files into the cache."""
    added = run_claude(["plugin", "marketplace", "add", str(working_clone)], home=home)
    assert added.returncode == 0, added.stderr
    installed = run_claude(["plugin", "install", "santa-method@santa-method"], home=home)
    assert installed.returncode == 0, installed.stderr
    names = {p.name for p in installed_copy(home).iterdir()}
    assert set(LOCAL_ONLY) <= names
