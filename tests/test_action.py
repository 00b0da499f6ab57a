"""The GitHub Action, run step by step here against a fake GitHub API and the scripted model.

The workflow docs/ci.md shows is the one these tests run: its santa step's
`with:` is read from `examples/ci/github-pull-request.yml` (which docs/ci.md
embeds byte for byte), and `action.yml`'s own steps run in bash with the
environment GitHub gives them (event file, output and summary files, API
URL). Only the model (the stub Messages API) and GitHub (the fake REST API)
are fakes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from action_runner import ActionRun, Context, base_env, run_action
from e2e.stub_server import REVIEWER, Json, first_user_text
from fake_github import FakeGitHub
from headless.conftest import failing, passing
from santa_method.github import action as driver
from santa_method.github.comments import MAX_BODY, fit, marker

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "examples" / "ci"
TOKEN = "ghs_fake0token0for0tests"
API_KEY = "sk-ant-api03-fakekeyfortests"
REPO = "octo/docs"


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def workflow_step(name: str = "github-pull-request.yml") -> dict[str, Any]:
    """The santa step of the workflow docs/ci.md shows."""
    workflow = yaml.safe_load((CI / name).read_text(encoding="utf-8"))
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "/santa-method@" in step.get("uses", ""):
                return step
    raise AssertionError(f"{name} has no santa-method step")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A pull request's checkout: a base commit, then a change to two docs."""
    repo = tmp_path / "checkout"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "SPEC.md").write_text("Docs that state facts correctly.\n")
    (repo / "docs" / "a.md").write_text("# A\n\nIntro.\n")
    (repo / "docs" / "b.md").write_text("# B\n\nOther.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "docs" / "a.md").write_text("# A\n\nIntro.\n\nReleased in 1999.\n")
    (repo / "docs" / "b.md").write_text("# B\n\nOther.\n\nSee A.\n")
    git(repo, "commit", "-q", "-am", "change")
    yield repo, base


def reviewer(body: dict[str, Any]) -> Json:
    if "Released in 1999." in first_user_text(body):
        return Json(failing(body, "Released in 1999."))
    return Json(passing(body))


def clean(body: dict[str, Any]) -> Json:
    return Json(passing(body))


class Job:
    """One job's runner: its temp folder, event, summary, and the action's run."""

    def __init__(self, tmp: Path, repo: Path, github: FakeGitHub, model_url: str) -> None:
        self.tmp, self.repo, self.github, self.model_url = tmp, repo, github, model_url
        self.runs = 0

    def run(self, event: dict[str, Any], with_: dict[str, str]) -> tuple[ActionRun, str]:
        self.runs += 1
        temp = self.tmp / f"runner-{self.runs}"
        temp.mkdir()
        # The cache restored the helper's venv: this interpreter's, so no install runs.
        (temp / "santa-venv").symlink_to(Path(sys.prefix))
        event_file = temp / "event.json"
        event_file.write_text(json.dumps(event), encoding="utf-8")
        summary = temp / "summary.md"
        env = base_env(
            {
                "GITHUB_EVENT_PATH": str(event_file),
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_REPOSITORY": REPO,
                "GITHUB_API_URL": self.github.url,
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_WORKSPACE": str(self.repo),
                "ANTHROPIC_BASE_URL": self.model_url,
                "CI": "true",
            }
        )
        result = run_action(ROOT, with_, env=env, runner_temp=temp, cwd=self.repo, token=TOKEN)
        return result, summary.read_text(encoding="utf-8") if summary.exists() else ""


def pr_event(base: str, number: int = 7) -> dict[str, Any]:
    return {"number": number, "pull_request": {"number": number, "base": {"sha": base}}}


def workflow_inputs(secrets: dict[str, str]) -> dict[str, str]:
    step = workflow_step()
    ctx = Context(inputs={}, secrets=secrets)
    return {k: ctx.render(v) for k, v in step["with"].items()}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(token=TOKEN).start()
    yield fake
    fake.stop()


def _sarif_results(path: str) -> list[Any]:
    from sarif_pydantic import Sarif

    log = Sarif.model_validate_json(Path(path).read_text(encoding="utf-8"))
    assert log.version == "2.1.0"
    return [r for run in log.runs for r in (run.results or [])]


@pytest.mark.slow
def test_a_pull_request_gets_one_comment_a_summary_and_sarif(
    tmp_path, checkout, github, stub_server
):
    repo, base = checkout
    server = stub_server({REVIEWER: reviewer})
    github.comments[(REPO, 7)] = [{"id": i, "body": f"someone else {i}"} for i in range(3)]
    job = Job(tmp_path, repo, github, server.base_url)
    with_ = workflow_inputs({"ANTHROPIC_API_KEY": API_KEY})

    first, summary = job.run(pr_event(base), with_)
    assert first.returncode == 1, first.steps[-1].stderr  # NAUGHTY or ESCALATED fails by default
    assert first.outputs["verdict"] in ("NAUGHTY", "ESCALATED")
    assert re.fullmatch(r"[\w.-]+", first.outputs["run-id"])
    report = Path(first.outputs["report"]).read_text(encoding="utf-8")
    assert report.strip() and report.strip() in summary
    # One SARIF result for the planted defect, on the changed file and its line.
    results = _sarif_results(first.outputs["sarif"])
    located = {
        (loc.physical_location.artifact_location.uri, loc.physical_location.region.start_line)
        for r in results
        for loc in (r.locations or [])
    }
    assert ("docs/a.md", 5) in located
    thread = github.comments[(REPO, 7)]
    mine = [c for c in thread if marker("santa-method") in c["body"]]
    assert len(thread) == 4 and len(mine) == 1 and report.strip() in mine[0]["body"]
    assert ("POST", f"/repos/{REPO}/issues/7/comments") in github.requests

    second, _ = job.run(pr_event(base), with_)
    assert second.returncode == 1
    thread = github.comments[(REPO, 7)]
    assert len(thread) == 4, "a re-run updates its comment instead of adding one"
    assert sum(marker("santa-method") in c["body"] for c in thread) == 1
    assert any(m == "PATCH" for m, _ in github.requests)
    # Nothing shows the token or the key.
    seen = summary + report + "".join(s.stdout + s.stderr for s in first.steps + second.steps)
    seen += "".join(c["body"] for c in thread)
    assert TOKEN not in seen and API_KEY not in seen


def test_a_clean_change_is_nice_and_the_job_passes(tmp_path, checkout, github, stub_server):
    repo, base = checkout
    server = stub_server({REVIEWER: clean})
    job = Job(tmp_path, repo, github, server.base_url)
    result, summary = job.run(pr_event(base), workflow_inputs({"ANTHROPIC_API_KEY": API_KEY}))
    assert result.returncode == 0, result.steps[-1].stderr
    assert result.outputs["verdict"] == "NICE"
    assert "NICE" in summary
    assert _sarif_results(result.outputs["sarif"]) == []


def test_a_fork_without_the_secret_is_skipped_with_a_notice(
    tmp_path, checkout, github, stub_server
):
    repo, base = checkout
    server = stub_server({REVIEWER: reviewer})
    job = Job(tmp_path, repo, github, server.base_url)
    result, summary = job.run(pr_event(base), workflow_inputs({}))  # forks get no secrets
    assert result.returncode == 0
    assert result.outputs["verdict"] == "SKIPPED"
    assert "no ANTHROPIC_API_KEY" in summary and "forks" in summary
    assert "::warning" in result.stdout
    assert not server.requests_for(REVIEWER) and not github.requests

    strict = workflow_inputs({}) | {"on-missing-key": "fail"}
    failed, _ = job.run(pr_event(base), strict)
    assert failed.returncode == 1 and "::error" in failed.stdout


def test_an_empty_change_is_skipped_not_failed(tmp_path, checkout, github, stub_server):
    repo, base = checkout
    git(repo, "revert", "--no-edit", "HEAD")  # the pull request's net change is now nothing
    server = stub_server({REVIEWER: reviewer})
    job = Job(tmp_path, repo, github, server.base_url)
    result, summary = job.run(pr_event(base), workflow_inputs({"ANTHROPIC_API_KEY": API_KEY}))
    assert result.returncode == 0, result.steps[-1].stderr
    assert result.outputs["verdict"] == "SKIPPED" and result.outputs["run-id"] == ""
    assert "nothing to verify" in summary
    assert not server.requests_for(REVIEWER)
    # The sticky comment says so too, so a verdict from an earlier push does not stay.
    assert [m for m, _ in github.requests if m in ("POST", "PATCH")] == ["POST"]


def test_a_read_only_token_warns_and_keeps_the_verdict(tmp_path, checkout, stub_server):
    repo, base = checkout
    fake = FakeGitHub(token=TOKEN, read_only=True).start()
    try:
        server = stub_server({REVIEWER: clean})
        job = Job(tmp_path, repo, fake, server.base_url)
        result, summary = job.run(pr_event(base), workflow_inputs({"ANTHROPIC_API_KEY": API_KEY}))
    finally:
        fake.stop()
    assert result.returncode == 0 and result.outputs["verdict"] == "NICE"
    assert "could not comment" in result.stdout and "read-only" in result.stdout
    assert "NICE" in summary


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ({"fail-on": "SOMETIMES"}, "fail-on"),
        ({"budget-usd": "nan"}, "budget-usd"),
        ({"max-fixes": "-1"}, "max-fixes"),
        ({"reviewers": "1"}, "reviewers"),
        ({"spec": ""}, "spec"),
        ({"backend": "openai"}, "backend"),
        ({"report-file": "docs"}, "input report-file: cannot write"),  # a folder: never replaced
    ],
)
def test_bad_inputs_fail_before_anything_runs(
    tmp_path, checkout, github, stub_server, override, says
):
    repo, base = checkout
    server = stub_server({REVIEWER: reviewer})
    job = Job(tmp_path, repo, github, server.base_url)
    result, summary = job.run(
        pr_event(base), workflow_inputs({"ANTHROPIC_API_KEY": API_KEY}) | override
    )
    assert result.returncode == 2
    assert says in summary and "::error" in result.stdout
    assert not server.requests_for(REVIEWER) and not github.requests


def test_given_files_are_verified_one_run_each(tmp_path, checkout, github, stub_server):
    repo, base = checkout
    server = stub_server({REVIEWER: reviewer})
    job = Job(tmp_path, repo, github, server.base_url)
    with_ = workflow_inputs({"ANTHROPIC_API_KEY": API_KEY}) | {"files": "docs/a.md\ndocs/b.md"}
    result, _ = job.run(pr_event(base), with_)
    assert result.returncode == 1, result.steps[-1].stderr
    assert len(result.outputs["run-id"].split(",")) == 2
    uris = {
        loc.physical_location.artifact_location.uri
        for r in _sarif_results(result.outputs["sarif"])
        for loc in (r.locations or [])
    }
    assert uris == {"docs/a.md"}


def test_the_action_and_workflows_pass_the_schemas_and_zizmor() -> None:
    github_files = [str(ROOT / "action.yml"), *map(str, sorted(CI.glob("github-*.yml")))]
    checks = [
        [_bin("check-jsonschema"), "--builtin-schema", "vendor.github-actions", github_files[0]],
        [
            _bin("check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            *github_files[1:],
        ],
        [
            _bin("check-jsonschema"),
            "--builtin-schema",
            "vendor.gitlab-ci",
            str(CI / "gitlab-ci.yml"),
        ],
        [_bin("zizmor"), "--offline", "--min-severity", "medium", "--no-progress", *github_files],
    ]
    for command in checks:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"


def test_the_ci_page_embeds_the_workflows_the_tests_run() -> None:
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, flags=re.S)
    for name in ("github-pull-request.yml", "github-scheduled-batch.yml", "gitlab-ci.yml"):
        assert (CI / name).read_text(encoding="utf-8") in blocks, f"docs/ci.md lacks {name} as is"


def test_every_third_party_action_is_pinned_and_no_event_text_reaches_a_shell() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], f"{step['name']}: expressions go through env:"
    for name in CI.glob("github-*.yml"):
        workflow = yaml.safe_load(name.read_text(encoding="utf-8"))
        assert workflow["permissions"] == {}
        assert "pull_request_target" not in json.dumps(workflow[True])  # yaml reads `on` as True
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                uses = step.get("uses", "")
                assert not uses or re.search(r"@[0-9a-f]{40}$", uses), uses


def test_outputs_cannot_smuggle_another_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ctx = driver.Context({}, REPO, "http://x", "", str(out), "", tmp_path)
    driver._write_output(ctx, {"verdict": "NICE\nsarif=/etc/passwd"})
    assert out.read_text().splitlines() == ["verdict=NICE sarif=/etc/passwd"]


def test_sarif_of_several_runs_is_one_run_with_every_rule_once() -> None:
    def log(rule: str, uri: str) -> dict[str, Any]:
        return {
            "version": "2.1.0",
            "runs": [
                {
                    "tool": {"driver": {"name": "santa-method", "rules": [{"id": rule}]}},
                    "results": [{"ruleId": rule, "ruleIndex": 0, "message": {"text": uri}}],
                }
            ],
        }

    merged = driver.merge_sarif([log("a", "x"), log("b", "y"), log("a", "z")])
    run = merged["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["a", "b"]
    assert [r["message"]["text"] for r in run["results"]] == ["x", "y", "z"]
    assert all("ruleIndex" not in r for r in run["results"])


def test_a_long_comment_is_cut_to_what_github_accepts() -> None:
    body = fit("x" * (MAX_BODY * 2))
    assert len(body) <= MAX_BODY and "job summary" in body


def test_a_scheduled_batch_is_verified_by_sampling(tmp_path, checkout, github, stub_server):
    repo, _base = checkout
    items = repo / "generated"
    items.mkdir()
    for i in range(3):
        (items / f"item-{i}.md").write_text(f"# Item {i}\n\nFine.\n", encoding="utf-8")
    server = stub_server({REVIEWER: clean})
    job = Job(tmp_path, repo, github, server.base_url)
    step = workflow_step("github-scheduled-batch.yml")
    ctx = Context(inputs={}, secrets={"ANTHROPIC_API_KEY": API_KEY})
    with_ = {k: ctx.render(v) for k, v in step["with"].items()}
    result, summary = job.run({}, with_)  # a schedule's event names no pull request
    assert result.returncode == 0, result.steps[-1].stdout + result.steps[-1].stderr
    assert result.outputs["verdict"] == "ACCEPTED"
    assert result.outputs["run-id"].startswith("b-")
    assert "ACCEPTED" in summary
    assert _sarif_results(result.outputs["sarif"]) == []
    assert len(server.requests_for(REVIEWER)) >= 2
    assert not github.requests  # comment: "false", and no pull request to comment on
