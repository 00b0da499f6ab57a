"""`santa init`: vendoring the method into a repository that has no plugin.

The command runs as a user runs it (a subprocess in a fresh git repository),
and the hooks it installs are run the way Claude Code runs them: the
command string from `.claude/settings.json` through a shell, hook JSON on
stdin, `CLAUDE_PROJECT_DIR` set. The last tests take the helper away and
check the launcher still refuses santa's agents instead of failing open.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from _reviews import BASE_IDS, review_reply
from _transcripts import reviewer_transcript

REPO = Path(__file__).resolve().parents[1]
SANTA = str(Path(sys.executable).parent / "santa")

SKILL = ".claude/skills/santa-method/SKILL.md"
REVIEWER = ".claude/agents/santa-reviewer.md"
FIXER = ".claude/agents/santa-fixer.md"
COMMANDS = tuple(f".claude/commands/santa-{n}.md" for n in ("verify", "batch", "metrics", "escape"))
LAUNCHER = ".claude/santa/santa-hook"
VENDORED = {SKILL, REVIEWER, FIXER, *COMMANDS, LAUNCHER}

EXISTING_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(.env)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre-bash"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "echo stop"}]}],
    },
}


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC", "SANTA_"))
    }
    env.update(extra)
    return env


def santa_init(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SANTA, "init", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=cwd,
        timeout=60,
    )


def frontmatter(text: str) -> tuple[dict[str, Any], str]:
    assert text.startswith("---\n"), text[:40]
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode)
        for p in sorted((root / ".claude").rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(
        json.dumps(EXISTING_SETTINGS, indent=2), encoding="utf-8"
    )
    return root


@pytest.fixture
def initialised(repo: Path) -> Path:
    done = santa_init(str(repo), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result["written"]) == VENDORED
    assert result["kept"] == [] and result["settings"] == "updated"
    assert result["attributes"] == "created"
    return repo


def test_files_are_vendored_with_vendored_names(initialised: Path) -> None:
    for rel in VENDORED:
        assert (initialised / rel).is_file(), rel

    skill, _ = frontmatter((initialised / SKILL).read_text(encoding="utf-8"))
    assert skill["name"] == "santa-method" and skill["description"]
    skill_text = (initialised / SKILL).read_text(encoding="utf-8")
    # The copies name the vendored agents only: nothing that does not exist here.
    for name in ("santa-reviewer", "santa-fixer"):
        assert name in skill_text
    for rel in (SKILL, *COMMANDS, REVIEWER, FIXER):
        text = (initialised / rel).read_text(encoding="utf-8")
        assert "santa-method:" not in text, rel
        assert "vendored" not in text, rel

    reviewer, reviewer_body = frontmatter((initialised / REVIEWER).read_text(encoding="utf-8"))
    assert reviewer["name"] == "santa-reviewer" and reviewer["description"]
    tools = reviewer["tools"]
    tools = [t.strip() for t in tools.split(",")] if isinstance(tools, str) else tools
    assert tools == ["Read", "Grep", "Glob"]
    _, plugin_body = frontmatter((REPO / "agents" / "reviewer.md").read_text(encoding="utf-8"))
    assert reviewer_body == plugin_body

    fixer, _ = frontmatter((initialised / FIXER).read_text(encoding="utf-8"))
    assert fixer["name"] == "santa-fixer" and fixer["description"]

    for rel in COMMANDS:
        meta, _ = frontmatter((initialised / rel).read_text(encoding="utf-8"))
        assert meta["description"], rel
    for rel in (SKILL, *COMMANDS):
        text = (initialised / rel).read_text(encoding="utf-8")
        for command in ("verify", "batch", "metrics", "escape"):
            assert f"/santa-method:{command}" not in text, (rel, command)
    assert "/santa-metrics" in (initialised / ".claude/commands/santa-escape.md").read_text()

    mode = (initialised / LAUNCHER).stat().st_mode
    assert mode & stat.S_IXUSR and mode & stat.S_IXOTH


def test_settings_are_merged_without_losing_anything(initialised: Path) -> None:
    settings = json.loads((initialised / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == EXISTING_SETTINGS["permissions"]
    assert settings["env"] == EXISTING_SETTINGS["env"]
    hooks = settings["hooks"]
    assert hooks["Stop"] == EXISTING_SETTINGS["hooks"]["Stop"]
    assert hooks["PreToolUse"][0] == EXISTING_SETTINGS["hooks"]["PreToolUse"][0]
    assert hooks["PreToolUse"][1]["matcher"] == "Agent"
    assert [h["command"] for h in hooks["PreToolUse"][1]["hooks"]] == [
        f'"$CLAUDE_PROJECT_DIR"/{LAUNCHER} pretooluse-agent'
    ]
    assert [h["command"] for e in hooks["SubagentStop"] for h in e["hooks"]] == [
        f'"$CLAUDE_PROJECT_DIR"/{LAUNCHER} subagent-stop'
    ]


def test_a_second_run_changes_nothing(initialised: Path) -> None:
    before = snapshot(initialised)
    done = santa_init("--json", cwd=initialised)  # DIR defaults to .
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["written"] == [] and result["kept"] == []
    assert set(result["unchanged"]) == VENDORED
    assert result["settings"] == "unchanged" and result["attributes"] == "unchanged"
    assert snapshot(initialised) == before

    human = santa_init(str(initialised))
    assert human.returncode == 0 and "already up to date" in human.stdout
    assert snapshot(initialised) == before


def test_the_log_merges_by_union_and_a_users_attributes_are_kept(repo: Path) -> None:
    attributes = repo / ".gitattributes"
    assert santa_init(str(repo)).returncode == 0
    checked = subprocess.run(
        ["git", "check-attr", "merge", "--", ".santa/log.jsonl"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert checked.stdout.strip() == ".santa/log.jsonl: merge: union"
    # A file of the user's: kept whole, the line added once, nothing on a second run.
    attributes.write_text("*.png binary\n*.sh text eol=lf", encoding="utf-8")
    done = santa_init(str(repo), "--json")
    assert json.loads(done.stdout)["attributes"] == "updated"
    text = attributes.read_text(encoding="utf-8")
    assert text.startswith("*.png binary\n*.sh text eol=lf\n")
    assert text.count(".santa/log.jsonl merge=union") == 1
    assert json.loads(santa_init(str(repo), "--json").stdout)["attributes"] == "unchanged"
    assert attributes.read_text(encoding="utf-8") == text
    # A merge of the user's own for the log is theirs to choose.
    attributes.write_text(".santa/log.jsonl merge=ours\n", encoding="utf-8")
    human = santa_init(str(repo))
    assert "kept (it sets its own merge for .santa/log.jsonl)" in human.stdout
    assert attributes.read_text(encoding="utf-8") == ".santa/log.jsonl merge=ours\n"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _append_run(log: Path, run_id: str, cost: float) -> None:
    """A shipped run's records, as the loop writes them."""
    from santa_method.state import log as runlog

    for event, data in (
        ("run", {"iteration": 0, "target": "doc.md", "reviewers": 2, "source": "api"}),
        (
            "review",
            {"iteration": 1, "label": "B", "valid": True, "verdict": "PASS", "cost_usd": cost},
        ),
        (
            "review",
            {"iteration": 1, "label": "C", "valid": True, "verdict": "PASS", "cost_usd": cost},
        ),
        ("gate", {"iteration": 1, "verdict": "NICE", "next": "ship", "issues": []}),
        ("ship", {"iteration": 1}),
    ):
        runlog.append(log, {"run_id": run_id, "event": event, **data})


def test_a_teams_committed_log_merges_without_conflict_or_doubled_records(repo: Path) -> None:
    """Two branches append runs, and both log an escape of the same run (one
    cherry-picks the other's commit); then they merge. git's union merge
    keeps both sides' lines, so the escape is in the file twice; the log
    reader counts it once."""
    from santa_method.state import log as runlog

    assert santa_init(str(repo)).returncode == 0
    log = repo / ".santa" / "log.jsonl"
    shipped = "20260101-000000-aaaaaa"
    _append_run(log, shipped, 0.01)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "one")
    runlog.append(
        log, {"run_id": shipped, "event": "escape", "description": "a wrong date shipped"}
    )
    _git(repo, "commit", "-q", "-am", "the escape of the shipped run")
    _git(repo, "checkout", "-q", "-")
    _git(repo, "checkout", "-q", "-b", "two")
    _append_run(log, "20260103-000000-cccccc", 0.04)
    _git(repo, "commit", "-q", "-am", "two")
    _git(repo, "cherry-pick", "one")  # with merge=union, no conflict
    _append_run(log, "20260104-000000-dddddd", 0.08)
    _git(repo, "commit", "-q", "-am", "two again")
    _git(repo, "checkout", "-q", "one")
    _append_run(log, "20260105-000000-eeeeee", 0.16)
    _git(repo, "commit", "-q", "-am", "one again")
    _git(repo, "merge", "-q", "two", "-m", "merge")
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 22 and len(set(lines)) == 21  # the escape, twice

    def santa(*args: str) -> Any:
        done = subprocess.run(
            [SANTA, *args, "--json", "--log", str(log)],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=60,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return json.loads(done.stdout)

    metrics = santa("metrics")
    assert metrics["runs"] == {"total": 4, "shipped": 4, "escalated": 0, "reported": 0, "open": 0}
    assert metrics["escape_rate"] == pytest.approx(1 / 4)
    rows = {r["run_id"]: r for r in santa("runs")}
    assert rows[shipped]["escapes"] == 1


def test_a_locally_edited_file_is_kept_unless_forced(initialised: Path) -> None:
    edited = initialised / REVIEWER
    original = edited.read_text(encoding="utf-8")
    mine = original + "\nAlso check our style guide.\n"
    edited.write_text(mine, encoding="utf-8")

    done = santa_init(str(initialised), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kept"] == [REVIEWER]
    assert edited.read_text(encoding="utf-8") == mine
    assert "--force" in santa_init(str(initialised)).stdout

    forced = santa_init(str(initialised), "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    result = json.loads(forced.stdout)
    assert result["written"] == [REVIEWER] and result["kept"] == []
    assert edited.read_text(encoding="utf-8") == original


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"hooks": []}', '{"hooks": {"PreToolUse": {"matcher": "Agent"}}}'],
)
def test_settings_that_cannot_be_merged_stop_everything(repo: Path, content: str) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.write_text(content, encoding="utf-8")
    done = santa_init(str(repo), "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("santa: ") and len(done.stderr.strip().splitlines()) == 1
    assert settings.read_text(encoding="utf-8") == content
    assert [p.name for p in (repo / ".claude").iterdir()] == ["settings.json"]


def test_not_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    done = santa_init(str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such directory" in done.stderr
    (tmp_path / "file").write_text("x\n", encoding="utf-8")
    done = santa_init(str(tmp_path / "file"))
    assert done.returncode == 2 and "it is a file, not a directory" in done.stderr


@pytest.mark.parametrize(
    ("link", "points_to", "said"),
    [
        (".claude", "nowhere", "it is a broken symlink (to 'nowhere')"),
        (".claude/agents", "gone", "it is a broken symlink (to 'gone')"),
        (".claude/agents", "agents", "it is a symlink loop"),
    ],
)
def test_a_bad_link_on_the_way_is_named_before_anything_is_written(
    tmp_path: Path, link: str, points_to: str, said: str
) -> None:
    """A broken `.claude` link said "File exists"; what is true is named."""
    (tmp_path / link).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / link).symlink_to(points_to)
    done = santa_init(str(tmp_path))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"santa: cannot write into '{tmp_path / link}': {said}")
    assert ("create the folder it points to" in line) == ("broken" in said)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == sorted(
        {".claude", link}
    )


# --- the vendored hooks, run as Claude Code runs them -------------------------


def hook_command(root: Path, event: str, name: str | None = None) -> str:
    """The vendored command for `event` (PreToolUse: the Agent guard unless `name`)."""
    name = name or ("pretooluse-agent" if event == "PreToolUse" else "subagent-stop")
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    commands = [
        h["command"]
        for entry in settings["hooks"][event]
        for h in entry["hooks"]
        if "santa-hook" in h["command"] and h["command"].endswith(f" {name}")
    ]
    assert len(commands) == 1
    return commands[0]


def run_hook(
    root: Path, event: str, payload: dict[str, Any], env: dict[str, str], *, compact: bool = False
) -> tuple[int, str]:
    raw = json.dumps(payload, separators=(",", ":") if compact else None)
    done = subprocess.run(
        ["/bin/sh", "-c", hook_command(root, event)],
        input=raw,
        capture_output=True,
        text=True,
        env={**env, "CLAUDE_PROJECT_DIR": str(root)},
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.returncode, done.stdout


def agent_call(kind: str, prompt: str) -> dict[str, Any]:
    return {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "tool_name": "Agent",
        "tool_input": {"description": "d", "prompt": prompt, "subagent_type": kind},
    }


def deny_reason(stdout: str) -> str:
    answer = json.loads(stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PreToolUse" and answer["permissionDecision"] == "deny"
    return answer["permissionDecisionReason"]


def test_vendored_hooks_run_the_helper_through_santa_python(
    initialised: Path, tmp_path: Path
) -> None:
    env = clean_env(CLAUDECODE="1", SANTA_PYTHON=sys.executable, HOME=str(tmp_path))
    _, out = run_hook(initialised, "PreToolUse", agent_call("santa-reviewer", "Review a.md"), env)
    assert "exactly the instruction" in deny_reason(out)
    _, out = run_hook(initialised, "PreToolUse", agent_call("general-purpose", "Find x"), env)
    assert out == ""

    # A whole review, end to end, with the run state inside the repository.
    (initialised / "out.md").write_text("hello world\n", encoding="utf-8")
    opened = subprocess.run(
        [SANTA, "round", "start", "--against", "out.md", "--spec-text", "Say hello.", "--json"],
        capture_output=True,
        text=True,
        env={**env, "CLAUDE_PROJECT_DIR": str(initialised)},
        cwd=initialised,
        timeout=60,
    )
    assert opened.returncode == 0, opened.stderr
    run = json.loads(opened.stdout)
    _, out = run_hook(
        initialised, "PreToolUse", agent_call("santa-reviewer", run["instruction"]), env
    )
    assert out == ""

    reply = review_reply(BASE_IDS, suggestions=None, canary=run["canary"])
    transcript = Path(
        reviewer_transcript(
            tmp_path / "agent.jsonl",
            run["instruction"],
            reply,
            agent_id="a1",
            assignment=run["assignment"],
        )
    )
    stop = {
        "hook_event_name": "SubagentStop",
        "agent_id": "a1",
        "agent_type": "santa-reviewer",
        "agent_transcript_path": str(transcript),
        "last_assistant_message": reply,
        "stop_hook_active": False,
    }
    _, out = run_hook(initialised, "SubagentStop", stop, env)
    assert out == ""
    state = json.loads((initialised / ".santa" / "runs" / run["run_id"] / "state.json").read_text())
    slot = state["rounds"][-1]["slots"]["B"]
    assert slot["reply"] == reply and slot["agent_id"] == "a1" and not slot["failed"]


def test_vendored_hooks_find_the_projects_venv(initialised: Path, tmp_path: Path) -> None:
    venv_bin = initialised / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    wrapper = venv_bin / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    _, out = run_hook(initialised, "PreToolUse", agent_call("santa-reviewer", "Review a.md"), env)
    assert "exactly the instruction" in deny_reason(out)  # the helper's own answer


@pytest.fixture
def no_helper(initialised: Path, tmp_path: Path) -> dict[str, str]:
    """An environment like `env -i PATH=/usr/bin:/bin`: no venv, no santa."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if shutil.which("santa", path=env["PATH"]):
        pytest.skip("a santa command is installed system-wide")
    python3 = shutil.which("python3", path=env["PATH"])
    if python3:
        probe = subprocess.run([python3, "-c", "import santa_method"], env=env, capture_output=True)
        if probe.returncode == 0:
            pytest.skip("the system python3 has santa_method")
    return env


@pytest.mark.parametrize("compact", [False, True])
def test_vendored_hooks_refuse_when_no_helper_is_reachable(
    initialised: Path, no_helper: dict[str, str], compact: bool
) -> None:
    for kind in ("santa-reviewer", "santa-fixer"):
        _, out = run_hook(
            initialised, "PreToolUse", agent_call(kind, "anything"), no_helper, compact=compact
        )
        assert "not installed" in deny_reason(out), kind
        # Says how to install it (it is not on PyPI, so never by name alone).
        assert "pip install /path/to/santa-method" in deny_reason(out), kind
        assert "pip install santa-method " not in deny_reason(out) + " ", kind
    _, out = run_hook(
        initialised, "PreToolUse", agent_call("general-purpose", "x"), no_helper, compact=compact
    )
    assert out == ""

    stop = {"hook_event_name": "SubagentStop", "agent_type": "santa-reviewer", "agent_id": "a"}
    _, out = run_hook(
        initialised, "SubagentStop", {**stop, "stop_hook_active": False}, no_helper, compact=compact
    )
    answer = json.loads(out)
    assert answer["decision"] == "block" and "not installed" in answer["reason"]
    # Once continuing because of that block, the reviewer may stop: nothing was stored.
    _, out = run_hook(
        initialised, "SubagentStop", {**stop, "stop_hook_active": True}, no_helper, compact=compact
    )
    assert out == ""
    _, out = run_hook(
        initialised,
        "SubagentStop",
        {**stop, "agent_type": "general-purpose", "stop_hook_active": False},
        no_helper,
        compact=compact,
    )
    assert out == ""


def test_vendored_hooks_refuse_when_the_helper_crashes(
    initialised: Path, no_helper: dict[str, str], tmp_path: Path
) -> None:
    """A helper that imports but dies part-way (a missing dependency, say)
    must not fail open: Claude Code lets a call through on a non-zero exit."""
    broken = tmp_path / "broken-python"
    broken.write_text(
        "#!/bin/sh\necho '{\"partial'\necho boom >&2\nexit 1\n",
        encoding="utf-8",
    )
    broken.chmod(0o755)
    env = {**no_helper, "SANTA_PYTHON": str(broken)}
    _, out = run_hook(initialised, "PreToolUse", agent_call("santa-reviewer", "x"), env)
    assert "hook failed" in deny_reason(out)  # one JSON answer, not the partial one
    stop = {"hook_event_name": "SubagentStop", "agent_type": "santa-reviewer", "agent_id": "a"}
    _, out = run_hook(initialised, "SubagentStop", {**stop, "stop_hook_active": False}, env)
    assert json.loads(out)["decision"] == "block"
    _, out = run_hook(initialised, "PreToolUse", agent_call("general-purpose", "x"), env)
    assert out == ""
