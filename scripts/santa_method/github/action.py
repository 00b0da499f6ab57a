"""The GitHub Action's one step: verify, report, comment, set outputs.

`action.yml` passes every input through `env:` (never into a shell line, so
no text from the event can become a command) and runs
`python -m santa_method.github`. This module drives the `santa` command as a
user would, through its stable CLI (`santa run --json`, `santa batch --json`,
`santa report ID --format ...`), so the Action tests the same contract docs/ci.md
documents for every other CI system. One question is asked before: is
there any text in the change at all? It is answered by the same reader
`santa run --against-diff` uses, so the two never disagree.

Fail closed: a backend failure, a refused input or an unreadable reply is an
error that fails the job; only a missing key is configurable, because a pull
request from a fork gets no secrets and should see one clear notice, not a
red X for every push. Comments are best effort (a fork's token is
read-only): the job summary always holds the report.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from santa_method.core import numbers
from santa_method.core.errors import InputError as SantaInputError
from santa_method.core.errors import SantaError
from santa_method.core.files import read_text
from santa_method.core.numbers import Range
from santa_method.core.redact import redact_text
from santa_method.github.comments import Client, GitHubError
from santa_method.headless.change import Change
from santa_method.state.atomic import out_kind, write_out_text

VERDICTS = ("NICE", "NAUGHTY", "ESCALATED", "ACCEPTED", "SKIPPED", "ERROR")
# Worst first: the job's verdict is the worst of its runs'.
_RANK = {"ERROR": 5, "ESCALATED": 4, "NAUGHTY": 3, "NICE": 1, "ACCEPTED": 1, "SKIPPED": 0}
_BACKENDS = ("anthropic", "claude", "anthropic-batch")
_MISSING_KEY = ("skip", "fail")


class InputError(ValueError):
    """An input of the Action is wrong; the message names it."""


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[\s,]+", text.strip()) if w]


def _lines(text: str) -> list[str]:
    """Paths one per line (a path may hold spaces); a single line may list several."""
    rows = [r.strip() for r in text.splitlines() if r.strip()]
    return _words(rows[0]) if len(rows) == 1 else rows


def _number(name: str, text: str, allowed: Range) -> Any:
    """An input's number through the one rule every santa number follows
    (`core.numbers`): finite and in range, or the Action stops before anything runs."""
    if not text.strip():
        return None
    try:
        return allowed.parse(text.strip(), f"input {name}")
    except SantaInputError as e:
        raise InputError(str(e)) from None


@dataclass(frozen=True)
class Inputs:
    """The Action's inputs, checked before anything runs or is paid for."""

    files: list[str] = field(default_factory=list)
    batch: list[str] = field(default_factory=list)
    base: str = ""
    spec: str = ""
    spec_text: str = ""
    rubric: str = ""
    reviewers: int | None = None
    models: str = ""
    backend: str = "anthropic"
    max_fixes: int = 0
    budget_usd: float | None = None
    fail_on: frozenset[str] = frozenset({"NAUGHTY", "ESCALATED"})
    on_missing_key: str = "skip"
    comment: bool = True
    comment_key: str = "santa-method"
    sarif_file: str = ""
    report_file: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Inputs:
        def get(name: str) -> str:
            return env.get(f"INPUT_{name.upper().replace('-', '_')}", "")

        files, batch = _lines(get("files")), _lines(get("batch"))
        if files and batch:
            raise InputError("give files or batch, not both")
        if not get("spec").strip() and not get("spec-text").strip():
            raise InputError("give spec (a file) or spec-text: reviewers judge against it")
        if get("spec").strip() and get("spec-text").strip():
            raise InputError("give spec or spec-text, not both")
        backend = get("backend").strip() or "anthropic"
        if backend not in _BACKENDS:
            raise InputError(
                f"input backend must be one of {', '.join(_BACKENDS)}, not {backend!r}"
            )
        fail_on = {w.upper() for w in _words(get("fail-on") or "NAUGHTY,ESCALATED")}
        wrong = sorted(fail_on - {"NAUGHTY", "ESCALATED", "NONE"})
        if wrong:
            raise InputError(
                f"input fail-on takes NAUGHTY, ESCALATED or none, not {', '.join(wrong)}"
            )
        missing = get("on-missing-key").strip().lower() or "skip"
        if missing not in _MISSING_KEY:
            raise InputError(f"input on-missing-key must be skip or fail, not {missing!r}")
        comment = get("comment").strip().lower() or "true"
        if comment not in ("true", "false"):
            raise InputError(f"input comment must be true or false, not {comment!r}")
        key = get("comment-key").strip() or "santa-method"
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", key):
            raise InputError("input comment-key takes letters, digits, '.', '_' and '-' only")
        return cls(
            files=files,
            batch=batch,
            base=get("base").strip(),
            spec=get("spec").strip(),
            spec_text=get("spec-text"),
            rubric=get("rubric").strip(),
            reviewers=_number("reviewers", get("reviewers"), numbers.REVIEWERS),
            models=get("models").strip(),
            backend=backend,
            max_fixes=_number("max-fixes", get("max-fixes"), numbers.MAX_FIXES) or 0,
            budget_usd=_number("budget-usd", get("budget-usd"), numbers.BUDGET_USD),
            fail_on=frozenset(fail_on - {"NONE"}),
            on_missing_key=missing,
            comment=comment == "true",
            comment_key=key,
            sarif_file=get("sarif-file").strip(),
            report_file=get("report-file").strip(),
        )


@dataclass
class Outcome:
    """What one `santa run` or `santa batch` ended in."""

    verdict: str
    run_id: str = ""
    label: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Context:
    """What GitHub tells the step through its environment."""

    event: dict[str, Any]
    repo: str
    api_url: str
    token: str
    output_file: str
    summary_file: str
    temp: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Context:
        event: dict[str, Any] = {}
        path = env.get("GITHUB_EVENT_PATH", "")
        if path:
            try:
                loaded = json.loads(read_text(path, "event file"))
            except SantaInputError as e:
                raise InputError(str(e)) from None
            except (ValueError, RecursionError) as e:
                raise InputError(f"cannot read the event file {path}: {e}") from None
            event = loaded if isinstance(loaded, dict) else {}
        return cls(
            event=event,
            repo=env.get("GITHUB_REPOSITORY", ""),
            api_url=env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/"),
            token=env.get("INPUT_GITHUB_TOKEN", ""),
            output_file=env.get("GITHUB_OUTPUT", ""),
            summary_file=env.get("GITHUB_STEP_SUMMARY", ""),
            temp=Path(env.get("RUNNER_TEMP") or tempfile.gettempdir()) / "santa-action",
        )

    @property
    def pull_request(self) -> dict[str, Any] | None:
        pr = self.event.get("pull_request")
        return pr if isinstance(pr, dict) else None


def missing_credentials(backend: str, env: Mapping[str, str]) -> str | None:
    """The sentence to show when the backend has nothing to log in with."""
    if backend == "claude":
        if env.get("CLAUDE_CODE_OAUTH_TOKEN") or env.get("ANTHROPIC_API_KEY"):
            return None
        return "no CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY for the claude backend"
    if env.get("ANTHROPIC_API_KEY"):
        return None
    return "no ANTHROPIC_API_KEY for the anthropic backend"


def _santa(
    *args: str, env: Mapping[str, str], cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "santa_method", *args],
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd,
        check=False,
    )


def _common(inputs: Inputs) -> list[str]:
    args = ["--spec", inputs.spec] if inputs.spec else ["--spec-text", inputs.spec_text]
    args += ["--backend", inputs.backend, "--max-fixes", str(inputs.max_fixes)]
    if inputs.rubric:
        args += ["--rubric", inputs.rubric]
    if inputs.reviewers is not None:
        args += ["--reviewers", str(inputs.reviewers)]
    if inputs.models:
        args += ["--models", inputs.models]
    if inputs.budget_usd is not None:
        args += ["--budget-usd", repr(inputs.budget_usd)]
    return args


def _reason(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"santa exited {proc.returncode} and said nothing"


def _outcome(proc: subprocess.CompletedProcess[str], label: str, id_key: str) -> Outcome:
    """A run's JSON answer, or an error: anything else is never a verdict."""
    if proc.returncode not in (0, 1):
        return Outcome("ERROR", label=label, reason=_reason(proc))
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return Outcome("ERROR", label=label, reason="santa's --json answer was not JSON")
    verdict = data.get("verdict") if isinstance(data, dict) else None
    run_id = data.get(id_key) if isinstance(data, dict) else None
    if verdict not in VERDICTS or not isinstance(run_id, str) or not run_id:
        return Outcome("ERROR", label=label, reason="santa's --json answer had no verdict and id")
    return Outcome(verdict, run_id=run_id, label=label)


def _has_commit(rev: str) -> bool:
    probe = subprocess.run(
        ["git", "cat-file", "-e", f"{rev}^{{commit}}"], capture_output=True, check=False
    )
    return probe.returncode == 0


def _base(inputs: Inputs, ctx: Context) -> str:
    base = inputs.base
    if not base and ctx.pull_request:
        base = str(ctx.pull_request.get("base", {}).get("sha", ""))
    if not base:
        raise InputError("nothing to verify: this is not a pull request; give files, batch or base")
    if not _has_commit(base):
        subprocess.run(
            ["git", "fetch", "--no-tags", "--depth=1", "origin", base],
            capture_output=True,
            check=False,
        )
    if not _has_commit(base):
        raise InputError(
            f"the base commit {base} is not in the checkout: "
            "check out with actions/checkout and fetch-depth: 0"
        )
    return base


def verify(inputs: Inputs, ctx: Context, env: Mapping[str, str]) -> list[Outcome]:
    common = _common(inputs)
    if inputs.batch:
        proc = _santa("batch", *inputs.batch, *common, "--json", "--quiet", env=env)
        return [_outcome(proc, "batch", "batch_id")]
    if inputs.files:
        return [
            _outcome(
                _santa("run", "--against", f, *common, "--json", "--quiet", env=env), f, "run_id"
            )
            for f in inputs.files
        ]
    base = _base(inputs, ctx)
    label = f"the change since {base[:12]}"
    try:
        change = Change(base, Path.cwd()).read_text()
    except SantaError as e:
        raise InputError(f"cannot read the change since {base[:12]}: {e}") from None
    if not change.strip():
        # A pull request whose net change is empty (a revert of a revert, a
        # merge of what the base has) gives reviewers nothing: that is not a
        # verdict, and not a failure.
        return [Outcome("SKIPPED", label=label, reason="nothing changed: nothing to verify")]
    # Fixing a change means editing the checkout; with no fixes it only reports.
    in_place = ["--in-place"] if inputs.max_fixes > 0 else []
    proc = _santa("run", "--against-diff", base, *common, *in_place, "--json", "--quiet", env=env)
    return [_outcome(proc, label, "run_id")]


def _report(outcome: Outcome, fmt: str, env: Mapping[str, str], out: Path | None = None) -> str:
    args = ["report", outcome.run_id, "--format", fmt]
    if out is not None:
        args += ["--out", str(out)]
    proc = _santa(*args, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"santa report {outcome.run_id} --format {fmt}: {_reason(proc)}")
    return proc.stdout


def merge_sarif(logs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One SARIF run for all files: code scanning wants one run per tool and category."""
    merged = json.loads(json.dumps(logs[0]))
    run = merged["runs"][0]
    rules = run["tool"]["driver"].setdefault("rules", [])
    known = {r.get("id") for r in rules}
    for log in logs[1:]:
        other = log["runs"][0]
        for rule in other["tool"]["driver"].get("rules", []):
            if rule.get("id") not in known:
                rules.append(rule)
                known.add(rule.get("id"))
        run.setdefault("results", []).extend(other.get("results", []))
    # ruleIndex points into one run's rules; after merging, the id alone is safe.
    for result in run.get("results", []):
        result.pop("ruleIndex", None)
    return merged


def _error_block(outcome: Outcome) -> str:
    return f"**santa could not verify {outcome.label}**: {outcome.reason}\n"


def _write_output(ctx: Context, values: Mapping[str, str]) -> None:
    if not ctx.output_file:
        return
    with open(ctx.output_file, "a", encoding="utf-8") as out:
        for name, value in values.items():
            clean = " ".join(str(value).split())  # one line each: no output can smuggle another
            out.write(f"{name}={clean}\n")


def _write_summary(ctx: Context, text: str) -> None:
    if ctx.summary_file:
        with open(ctx.summary_file, "a", encoding="utf-8") as out:
            out.write(text if text.endswith("\n") else text + "\n")


def _annotate(level: str, message: str) -> None:
    print(f"::{level} title=santa-method::{' '.join(redact_text(message).split())}")


def _worst(outcomes: Sequence[Outcome]) -> str:
    return max((o.verdict for o in outcomes), key=lambda v: _RANK[v])


def _comment(inputs: Inputs, ctx: Context, body: str) -> None:
    pr = ctx.pull_request
    if not inputs.comment or pr is None:
        return
    number = pr.get("number") or ctx.event.get("number")
    if not isinstance(number, int) or not ctx.repo:
        _annotate("warning", "no pull request number or repository in the event: no comment")
        return
    try:
        what, _ = Client(ctx.api_url, ctx.token).upsert(ctx.repo, number, inputs.comment_key, body)
    except GitHubError as e:
        hint = (
            " (the token is read-only, as for pull requests from forks, or lacks "
            "pull-requests: write)"
            if e.status in (401, 403, 404)
            else ""
        )
        _annotate("warning", f"could not comment on the pull request: {e}{hint}")
        return
    print(f"santa-method: {what} the pull request comment")


def run(env: Mapping[str, str]) -> int:
    ctx = Context.from_env(env)
    inputs = Inputs.from_env(env)
    child = dict(env)
    key = env.get("INPUT_ANTHROPIC_API_KEY", "")
    if key:
        child["ANTHROPIC_API_KEY"] = key
    oauth = env.get("INPUT_CLAUDE_CODE_OAUTH_TOKEN", "")
    if oauth:
        child["CLAUDE_CODE_OAUTH_TOKEN"] = oauth
    for name in [n for n in child if n.startswith("INPUT_")]:
        del child[name]  # the model backend never sees the GitHub token or other inputs
    ctx.temp.mkdir(parents=True, exist_ok=True)
    report_path = Path(inputs.report_file or ctx.temp / "report.md").absolute()
    sarif_path = Path(inputs.sarif_file or ctx.temp / "santa.sarif").absolute()
    for name, path in (("report-file", report_path), ("sarif-file", sarif_path)):
        try:
            out_kind(path)  # refused before any reviewer is paid, as --out is
        except SantaInputError as e:
            raise InputError(f"input {name}: {e}") from None

    missing = missing_credentials(inputs.backend, child)
    if missing:
        fork = " Pull requests from forks get no secrets, so this is expected there."
        text = f"## santa-method: not run\n\nSkipped: {missing}.{fork}\n"
        _write_summary(ctx, text)
        _write_output(ctx, {"verdict": "SKIPPED", "run-id": "", "report": "", "sarif": ""})
        if inputs.on_missing_key == "fail":
            return _failed(ctx, f"not run: {missing}")
        _annotate("warning", f"skipped: {missing}")
        return 0

    outcomes = verify(inputs, ctx, child)
    verdict = _worst(outcomes)
    parts: list[str] = []
    sarifs: list[dict[str, Any]] = []
    for index, outcome in enumerate(outcomes):
        if outcome.verdict == "ERROR":
            parts.append(_error_block(outcome))
            continue
        if outcome.verdict == "SKIPPED":
            parts.append(f"## santa-method: not run\n\n{outcome.label}: {outcome.reason}.\n")
            continue
        parts.append(_report(outcome, "markdown", child))
        part = ctx.temp / f"part-{index}.sarif"
        _report(outcome, "sarif", child, out=part)
        sarifs.append(json.loads(part.read_text(encoding="utf-8")))
    body = "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
    write_out_text(report_path, body)
    sarif_out = ""
    if sarifs:
        write_out_text(sarif_path, json.dumps(merge_sarif(sarifs), indent=2))
        sarif_out = str(sarif_path)
    _write_summary(ctx, body)
    _comment(inputs, ctx, body)
    ids = ",".join(o.run_id for o in outcomes if o.run_id)
    _write_output(
        ctx, {"verdict": verdict, "run-id": ids, "report": str(report_path), "sarif": sarif_out}
    )
    if verdict == "ERROR":
        return _failed(ctx, "; ".join(o.reason for o in outcomes if o.verdict == "ERROR"))
    if verdict in inputs.fail_on:
        return _failed(ctx, f"santa-method says {verdict}: see the job summary")
    print(f"santa-method: {verdict}")
    return 0


def _failed(ctx: Context, reason: str) -> int:
    _annotate("error", reason)
    return 1


def main(env: Mapping[str, str] | None = None) -> int:
    values = os.environ if env is None else env
    try:
        return run(values)
    except InputError as e:
        _annotate("error", str(e))
        summary = values.get("GITHUB_STEP_SUMMARY", "")
        if summary:
            with open(summary, "a", encoding="utf-8") as out:
                out.write(f"## santa-method: not run\n\n{e}\n")
        return 2
    except (OSError, RuntimeError) as e:
        _annotate("error", f"santa-method failed: {e}")
        return 1
