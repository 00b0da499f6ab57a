"""The PreToolUse guard's cost when no run is open, against a bare interpreter start.

    python bench/guard.py [--finished N] [--runs K]

Claude Code runs the guard (`libexec/santa hook pretooluse-guard`) on every
Bash, Write, Edit and SendMessage call of a session, run or no run. With no
run open it must cost at most 2x a bare start of the same interpreter, on
both ways the launcher finds one, whatever the number of finished runs:

- plugin venv: `$CLAUDE_PLUGIN_DATA/venv`, made as the bootstrap makes it
  (here: a venv whose site-packages points at this interpreter's, so it has
  the dependencies but not the package, and a bootstrap stamp);
- python3: no venv, a `python3` on PATH that has the package itself.

A temporary project holds N finished runs (default 300: opened and
escalated through the helper's API). Each call is timed through `/bin/sh
-c` with the command line from hooks/hooks.json, as Claude Code runs it,
interleaved with bare starts of the same interpreter K times (default 21)
so that machine load hits all alike; the medians of wall time and of CPU
time (the call's whole process tree: every shell and the interpreter) and
their ratios are printed. On a shared, loaded machine the wall time also
counts the waits for a CPU of each process the call starts, so the CPU
time is the steadier figure. Every call's answer is checked too: the
harmless calls are let through, the forging ones refused, so a fast guard
cannot be a guard that lets everything through. The project's folders run
as Claude Code's would: byte-code caches are written (to a temporary
PYTHONPYCACHEPREFIX), as they are for an installed plugin.

What counts as a bare start, to compare like with like: the same
interpreter started with the flags the launcher gives the guard
(`python -S -c pass`: no `site`), run directly, with no shell. That is the
strictest reference: the guard's call also pays for `/bin/sh` and the
launcher script, and `-S` is not credited to it. An ordinary start
(`python -c pass`, what any Python hook pays at least) is printed beside
it, for scale; the target is against the strict one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

TARGET_RATIO = 2.0
# The reference: the guard's interpreter with the guard's flags (see above).
BARE = "bare start: python -S -c pass"

# (name, hook input, whether the guard must refuse it)
CALLS = [
    ("Bash: ls -la", {"tool_name": "Bash", "tool_input": {"command": "ls -la"}}, False),
    (
        "Write: a project file",
        {"tool_name": "Write", "tool_input": {"file_path": "notes.md"}},
        False,
    ),
    (
        "Edit: .claude/settings.json",
        {"tool_name": "Edit", "tool_input": {"file_path": ".claude/settings.json"}},
        False,
    ),
    (
        "SendMessage",
        {"tool_name": "SendMessage", "tool_input": {"to": "a", "message": "hi"}},
        False,
    ),
    (
        "Bash: santa hook (forging)",
        {"tool_name": "Bash", "tool_input": {"command": "santa hook subagent-stop"}},
        True,
    ),
    (
        "Write: run state (forging)",
        {"tool_name": "Write", "tool_input": {"file_path": ".santa/runs/x/state.json"}},
        True,
    ),
]


def guard_command() -> str:
    groups = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]["PreToolUse"]
    for group in groups:
        for hook in group["hooks"]:
            if "pretooluse-guard" in hook.get("command", ""):
                return hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))
    raise SystemExit("bench: hooks/hooks.json has no pretooluse-guard hook")


def finished_project(project: Path, count: int) -> None:
    """`count` runs opened and escalated by the helper, as a busy project has."""
    from santa_method.core.rubric import load_rubric, render_markdown, rubric_hash
    from santa_method.state.events import log_event
    from santa_method.state.model.run import Target
    from santa_method.state.rounds import start_run
    from santa_method.state.store import list_run_ids, load_state

    (project / "out.md").write_text("# tally\n\nCounts lines.\n", encoding="utf-8")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{}\n", encoding="utf-8")
    rubric = load_rubric("base")
    os.environ["CLAUDE_PROJECT_DIR"] = str(project)
    for _ in range(count):
        opened = start_run(
            target=Target(kind="file", path=str(project / "out.md")),
            spec="Count lines.",
            rubric=rubric,
            rubric_name="base",
            rubric_markdown=render_markdown(rubric),
            rubric_hash=rubric_hash(rubric),
            reviewers=2,
            max_fixes=1,
            source="files",
            cwd=str(project),
        )
        log_event(opened.run_id, "escalate", data={"reason": "bench"})
    assert not [r for r in list_run_ids() if load_state(r).status == "open"]


def plugin_venv(data: Path) -> Path:
    """A venv as the bootstrap leaves it, borrowing this interpreter's packages."""
    folder = data / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    import jsonschema

    borrowed = Path(jsonschema.__file__).resolve().parents[1]
    (Path(site) / "borrowed.pth").write_text(f"{borrowed}\n", encoding="utf-8")
    (folder / ".santa-requirements.sha256").write_text("bench\n", encoding="utf-8")
    return python


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def answer(
    command: list[str], env: dict[str, str], cwd: Path, stdin: str
) -> tuple[float, float, str]:
    """Wall time, CPU time (the call's whole process tree) and what it printed."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        command, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench: {command} exited {done.returncode}: {done.stderr}")
    return elapsed, _children_cpu() - cpu, done.stdout


def refused(stdout: str) -> bool:
    if not stdout.strip():
        return False
    return json.loads(stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def measure(
    label: str, python: str, env: dict[str, str], project: Path, runs: int
) -> list[tuple[str, float, float]]:
    hook = ["/bin/sh", "-c", guard_command()]
    cases: list[tuple[str, list[str], str, bool | None]] = [
        (BARE, [python, "-S", "-c", "pass"], "", None),
        ("ordinary start: python -c pass", [python, "-c", "pass"], "", None),
    ]
    for name, payload, must_refuse in CALLS:
        event = {
            "session_id": "bench",
            "transcript_path": str(project / "t.jsonl"),
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            **payload,
        }
        cases.append(
            (f"guard, {name}", hook, json.dumps(event, separators=(",", ":")), must_refuse)
        )
    for _ in range(2):  # warm the file cache and the byte-code caches
        for _, command, stdin, _ in cases:
            answer(command, env, project, stdin)
    walls: dict[str, list[float]] = {name: [] for name, *_ in cases}
    cpus: dict[str, list[float]] = {name: [] for name, *_ in cases}
    for _ in range(runs):
        for name, command, stdin, must_refuse in cases:
            wall, cpu, out = answer(command, env, project, stdin)
            if must_refuse is not None and refused(out) != must_refuse:
                raise SystemExit(f"bench: {label}, {name}: the guard answered {out!r}")
            walls[name].append(wall)
            cpus[name].append(cpu)
    return [(name, statistics.median(walls[name]), statistics.median(cpus[name])) for name in walls]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=300, help="finished runs (default 300)")
    parser.add_argument("--runs", type=int, default=21, help="timed calls per case (default 21)")
    args = parser.parse_args(argv)
    if args.finished < 0 or args.runs < 1:
        parser.error("--finished must be at least 0 and --runs at least 1")

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "project"
        project.mkdir()
        finished_project(project, args.finished)
        tools = base / "tools"  # PATH: sh and friends, and only the python3 we mean
        tools.mkdir()
        for tool in ("sh", "cat", "grep", "readlink", "printf"):
            found = shutil.which(tool)
            if found:
                (tools / tool).symlink_to(found)
        common = {
            "HOME": str(base / "home"),
            "CLAUDE_PROJECT_DIR": str(project),
            "CLAUDE_PLUGIN_ROOT": str(ROOT),
            "CLAUDECODE": "1",
            "PYTHONPYCACHEPREFIX": str(base / "pycache"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        data = base / "plugin-data"
        venv_python = plugin_venv(data)
        python3 = Path(sys.executable).parent / "python3"
        paths = {
            "plugin venv": (
                str(venv_python),
                {**common, "PATH": str(tools), "CLAUDE_PLUGIN_DATA": str(data)},
            ),
            "python3 with the package": (
                str(python3),
                {**common, "PATH": f"{python3.parent}:{tools}"},
            ),
        }
        results = {
            label: measure(label, python, env, project, args.runs)
            for label, (python, env) in paths.items()
        }

    print(
        f"santa-method guard bench: {args.finished} finished runs, no run open, "
        f"{args.runs} timed calls per case, Python {sys.version.split()[0]}"
    )
    print(
        "ratios are against a bare start of the same interpreter with the guard's flags "
        "(-S), run without a shell; the guard's calls go through /bin/sh and libexec/santa"
    )
    worst = {"wall": 0.0, "cpu": 0.0}
    for label, rows in results.items():
        _, bare_wall, bare_cpu = next(row for row in rows if row[0] == BARE)
        print()
        print(f"{label:<40} {'wall':>9} {'vs bare':>8} {'cpu':>9} {'vs bare':>8}")
        for name, wall, cpu in rows:
            if name.startswith("guard"):
                worst["wall"] = max(worst["wall"], wall / bare_wall)
                worst["cpu"] = max(worst["cpu"], cpu / bare_cpu)
            print(
                f"  {name:<38} {wall * 1e3:>6.1f} ms {wall / bare_wall:>7.2f}x "
                f"{cpu * 1e3:>6.1f} ms {cpu / bare_cpu:>7.2f}x"
            )
    print()
    for what, ratio in worst.items():
        verdict = "meets" if ratio <= TARGET_RATIO else "misses"
        print(
            f"slowest guard call, {what} time: {ratio:.2f}x a bare start "
            f"({verdict} the {TARGET_RATIO:.0f}x target)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
