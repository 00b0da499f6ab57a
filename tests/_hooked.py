"""A project with an open round, driven through the real hook commands.

Why one helper: the hook tests and the late-reply replays both feed Claude
Code's hook JSON to `santa hook NAME` (or the plugin's `libexec/santa`) in a
subprocess, with the environment Claude Code gives a hook, and read what
Claude Code would see (exit 0 always; a deny, a block, a note or nothing on
stdout) and what the run's state holds afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _reviews import review_reply
from _transcripts import reviewer_transcript
from santa_method.state.model.run import RunState, Slot

REPO = Path(__file__).resolve().parents[1]
SANTA = str(Path(sys.executable).parent / "santa")
BIN_SANTA = str(REPO / "libexec" / "santa")

OUTPUT = """\
# tally

tally counts lines and words in your files. Current version: 2.0.

Run `tally --lines notes.txt` to count lines.
"""
SPEC = "Document tally 2.1: the flags --lines and --words, and a License section (MIT).\n"
QUOTE = "Current version: 2.0."


def _iso(moment: datetime) -> str:
    """A time as Claude Code writes it in a transcript."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def clock_on(state_file: Path, minutes: float) -> None:
    """Let `minutes` pass for a run's reviewers: every start the guard
    recorded moves that far into the past (the state file is the clock the
    gate reads; no test waits half an hour)."""
    state = json.loads(state_file.read_text(encoding="utf-8"))
    for r in state["rounds"]:
        for spawn in r.get("spawns") or []:
            at = datetime.fromisoformat(spawn["at"].replace("Z", "+00:00"))
            moved = (at - timedelta(minutes=minutes)).isoformat(timespec="microseconds")
            spawn["at"] = moved.replace("+00:00", "Z")
    state_file.write_text(json.dumps(state, indent=2), encoding="utf-8")


def hook_env(root: Path) -> dict[str, str]:
    """The environment Claude Code gives a hook command, with state kept in tmp."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC", "SANTA_"))
    }
    env.update(
        CLAUDECODE="1",
        CLAUDE_CODE_SESSION_ID="session-test",
        CLAUDE_PROJECT_DIR=str(root),
        CLAUDE_PLUGIN_ROOT=str(REPO),
        SANTA_HOME=str(root / ".santa"),
        SANTA_LOG=str(root / "log.jsonl"),
    )
    return env


@dataclass
class Hooked:
    rc: int
    out: str
    err: str

    def allowed(self) -> None:
        assert self.rc == 0, self.err
        assert self.out.strip() == "", f"expected no output (allow), got {self.out!r}"

    def denied(self) -> str:
        assert self.rc == 0, self.err
        answer = json.loads(self.out)
        specific = answer["hookSpecificOutput"]
        assert specific["hookEventName"] == "PreToolUse"
        assert specific["permissionDecision"] == "deny"
        return specific["permissionDecisionReason"]

    def blocked(self) -> str:
        assert self.rc == 0, self.err
        answer = json.loads(self.out)
        assert answer["decision"] == "block"
        return answer["reason"]

    def noted(self) -> str:
        """Let through with a note for the user (`systemMessage`): what became
        of a reply that could not fill a slot, said out loud."""
        assert self.rc == 0, self.err
        assert self.out.strip(), "expected a note, got no output"
        answer = json.loads(self.out)
        assert "decision" not in answer and "hookSpecificOutput" not in answer, answer
        note = answer["systemMessage"]
        assert isinstance(note, str) and note
        return note


@dataclass
class Project:
    root: Path
    env: dict[str, str]
    run_id: str
    instruction: str
    canary: str
    assignment: str
    calls: int = 0
    #: When each named reviewer began (UTC), as Claude Code stamps its transcript.
    started: dict[str, datetime] = field(default_factory=dict)

    def santa(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SANTA, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.root,
            timeout=60,
        )

    def hook(self, name: str, payload: dict[str, Any] | str, launcher: str = "santa") -> Hooked:
        raw = payload if isinstance(payload, str) else json.dumps(payload)
        if launcher == "santa":
            cmd, env = [SANTA, "hook", name], self.env
        else:  # the plugin's launcher, as hooks/hooks.json calls it
            cmd, env = [BIN_SANTA, "hook", name], {**self.env, "SANTA_PYTHON": sys.executable}
        done = subprocess.run(
            cmd, input=raw, capture_output=True, text=True, env=env, cwd=self.root, timeout=60
        )
        return Hooked(done.returncode, done.stdout, done.stderr)

    def agent_call(
        self,
        subagent_type: str,
        prompt: str,
        launcher: str = "santa",
        tool_use_id: str | None = None,
        background: bool = False,
        model: str | None = None,
    ) -> Hooked:
        """One Agent tool call: each has its own tool_use_id unless one is given;
        `model` is the call's `model` (left out when None)."""
        if tool_use_id is None:
            self.calls += 1
            tool_use_id = f"toolu_{self.calls:02d}"
        tool_input: dict[str, Any] = {
            "description": "santa reviewer 1",
            "prompt": prompt,
            "subagent_type": subagent_type,
            "run_in_background": background,
        }
        if model is not None:
            tool_input["model"] = model
        return self.hook(
            "pretooluse-agent",
            {
                "session_id": "session-test",
                "transcript_path": str(self.root / "main.jsonl"),
                "cwd": str(self.root),
                "permission_mode": "default",
                "hook_event_name": "PreToolUse",
                "tool_name": "Agent",
                "tool_input": tool_input,
                "tool_use_id": tool_use_id,
            },
            launcher,
        )

    def spawn(
        self,
        launcher: str = "santa",
        *,
        background: bool = False,
        agent: str | None = None,
        model: str | None = None,
    ) -> None:
        """Start a reviewer the way the main agent must: the Agent call with
        the exact instruction (and its slot's `model`), which the PreToolUse
        guard lets through and counts. `agent`: the id Claude Code will give
        it; its transcript then carries the time it began, as real transcripts do."""
        self.agent_call(
            "santa-method:reviewer", self.instruction, launcher, background=background, model=model
        ).allowed()
        if agent is not None:
            self.started[agent] = datetime.now(UTC)

    def gate(self) -> tuple[int, dict[str, Any]]:
        """`santa gate --run ID --json`: its exit code and its answer."""
        done = self.santa("gate", "--run", self.run_id, "--json")
        assert done.stdout.strip(), done.stderr
        return done.returncode, json.loads(done.stdout)

    def clock_on(self, minutes: float) -> None:
        """Let `minutes` pass for the run's reviewers (see `clock_on`), and
        for the times the reviewers' transcripts will show they began."""
        clock_on(self.root / ".santa" / "runs" / self.run_id / "state.json", minutes)
        for agent, began in self.started.items():
            self.started[agent] = began - timedelta(minutes=minutes)

    def transcript(
        self,
        agent_id: str,
        prompt: str,
        *replies: str,
        stamped: bool = True,
        model: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Path:
        """A subagent transcript as Claude Code writes it: the prompt first,
        the Read of the whole assignment, then the replies (each from `model`,
        with `usage`, when given); every record stamped with the agent's id
        (unless `stamped` is False)."""
        path = self.root / "transcripts" / f"agent-{agent_id}.jsonl"
        reviewer_transcript(
            path,
            prompt,
            *replies,
            agent_id=agent_id if stamped else None,
            assignment=self.assignment,
            started=_iso(self.started[agent_id]) if agent_id in self.started else None,
            model=model,
            usage=usage,
        )
        return path

    def stop(
        self,
        agent_id: str,
        reply: str,
        *,
        active: bool = False,
        agent_type: str = "santa-method:reviewer",
        prompt: str | None = None,
        launcher: str = "santa",
        earlier: tuple[str, ...] = (),
        stamped: bool = True,
        model: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Hooked:
        transcript = self.transcript(
            agent_id,
            self.instruction if prompt is None else prompt,
            *earlier,
            reply,
            stamped=stamped,
            model=model,
            usage=usage,
        )
        return self.hook(
            "subagent-stop",
            {
                "session_id": "session-test",
                "transcript_path": str(self.root / "main.jsonl"),
                "cwd": str(self.root),
                "hook_event_name": "SubagentStop",
                "agent_id": agent_id,
                "agent_type": agent_type,
                "agent_transcript_path": str(transcript),
                "last_assistant_message": reply,
                "stop_hook_active": active,
            },
            launcher,
        )

    def state(self) -> RunState:
        """The run's state through the state module, as the gate reads it."""
        from santa_method.state.store import load_state

        old = {k: os.environ.get(k) for k in ("SANTA_HOME", "CLAUDE_PROJECT_DIR")}
        os.environ["SANTA_HOME"] = self.env["SANTA_HOME"]
        os.environ["CLAUDE_PROJECT_DIR"] = self.env["CLAUDE_PROJECT_DIR"]
        try:
            return load_state(self.run_id)
        finally:
            for key, value in old.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def slots(self) -> dict[str, Slot | None]:
        return self.state().rounds[-1].slots


CRITERIA = (
    "factual-accuracy",
    "no-hallucination",
    "completeness",
    "compliance",
    "internal-consistency",
    "technical-correctness",
)


def review(canary: str, *, quote: str | None = None, drop: str | None = None) -> str:
    """A review JSON: PASS, or FAIL on factual-accuracy when `quote` is given."""
    issues = []
    if quote is not None:
        issues = [{"criterion": "factual-accuracy", "issue": "The spec says 2.1.", "quote": quote}]
    criteria = [c for c in CRITERIA if c != drop]
    return review_reply(criteria, issues, detail="checked", canary=canary)


def open_hook_round(tmp_path: Path, *more: str, config: str | None = None) -> Project:
    """A project under `tmp_path` with round 1 of a hook-store run open (slots B, C);
    `more` goes to `santa round start`, `config` into `.santa/config.yaml`."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text(OUTPUT, encoding="utf-8")
    (root / "spec.md").write_text(SPEC, encoding="utf-8")
    if config is not None:
        (root / ".santa").mkdir()
        (root / ".santa" / "config.yaml").write_text(config, encoding="utf-8")
    env = hook_env(root)
    done = subprocess.run(
        [SANTA, "round", "start", "--against", "README.md", "--spec", "spec.md", "--json", *more],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    opened = json.loads(done.stdout)
    assert opened["open_slots"] == ["B", "C"]
    p = Project(
        root, env, opened["run_id"], opened["instruction"], opened["canary"], opened["assignment"]
    )
    assert p.state().source == "hook"  # CLAUDECODE=1 makes it a hook-store run
    return p
