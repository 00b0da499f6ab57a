"""A run's issue keys are the same in its state, its log and what santa prints
(issue 33, item 6).

A key embeds its quote with the spaces removed, and a sentence run together
looks random to the entropy rule: "You can ask for a full refund within 60
days of delivery." came out of the log as `quote:[REDACTED:High Entropy
Token].` while `state.json` kept the real key. Here real headless runs (an
in-process scripted backend) flag ordinary prose, a bare secret, a URL's
password and an omission, a fixer answers each flag (one answer quoting the
secret), and every copy of every key is compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _reviews import output_of, review_of, review_reply
from santa_method.cli import main
from santa_method.core.redact import redact_text
from santa_method.headless import verify_sync
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import (
    FixReply,
    FixRequest,
    ReviewReply,
    ReviewRequest,
    Tokens,
)

from .conftest import CRITERIA

PROSE = "You can ask for a full refund within 60 days of delivery."
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # a bare AWS secret key (fake)
URL = "postgres://admin:Qw7!H6qEzVFSU7@db.internal:5432/app"
DOC = f"# Refunds\n\n{PROSE}\n\nThe key is {SECRET} for now.\n\nDATABASE_URL={URL}\n"
SPEC = "A refund policy page: refunds within 30 days, and no credentials."
FLAGS = [
    {"criterion": "factual-accuracy", "issue": "the spec says 30 days", "quote": PROSE},
    {"criterion": "compliance", "issue": "a key is published", "quote": SECRET},
    {"criterion": "compliance", "issue": "a password is published", "quote": f"DATABASE_URL={URL}"},
    {"criterion": "completeness", "issue": "no contact", "missing": "A contact address"},
]


class Flagging:
    """Reviewers flag every planted problem; the fixer answers each and changes nothing."""

    name = "flagging"

    async def review(self, request: ReviewRequest) -> ReviewReply:
        canary = request.round_part.rstrip().rsplit("santa-canary: ", 1)[1]
        assert PROSE in output_of(request.round_part)
        review = review_of(CRITERIA, FLAGS, detail="x", canary=canary)
        return ReviewReply(text=json.dumps(review), tokens=Tokens(10, 5), cost_usd=0.001)

    async def fix(self, request: FixRequest) -> FixReply:
        notes = "\n".join(
            f"{n}. not an issue: it was checked, {SECRET} is a test value" for n in range(1, 5)
        )
        return FixReply(output=request.output, notes=notes, cost_usd=0.001)


def _keys_in(issues: list[dict[str, Any]]) -> list[str]:
    return [i["key"] for i in issues]


def test_the_logs_keys_are_the_states_keys(project: Path) -> None:
    page = project / "refunds.md"
    page.write_text(DOC, encoding="utf-8")
    result = verify_sync(SPEC, page, options=VerifyOptions(backend=Flagging(), max_fixes=1))
    assert result.verdict == "ESCALATED" and result.rounds == 2

    santa = project / ".santa"
    (state_file,) = santa.glob(f"runs/{result.run_id}/state.json")
    state = json.loads(state_file.read_text(encoding="utf-8"))
    in_state = [_keys_in(g["issues"]) for r in state["rounds"] for g in r["gates"]]
    records = [
        json.loads(line)
        for line in (santa / "log.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(line)["run_id"] == result.run_id
    ]
    in_log = [_keys_in(r["issues"]) for r in records if r["event"] == "gate"]
    assert len(in_state) == 2 and all(len(keys) == 4 for keys in in_state)
    assert in_log == in_state

    keys = in_state[0]
    # Ordinary prose is not redacted; its key is readable, and redaction keeps it.
    (prose,) = [k for k in keys if k.startswith("factual-accuracy|")]
    assert "REDACTED" not in prose and "refund" in prose and redact_text(prose) == prose
    # A secret's key shows none of it, in the state as in the log.
    assert all(SECRET.casefold()[:12] not in k.casefold() for k in keys)
    assert all("qw7!h6qezvfsu7" not in k.casefold() for k in keys)
    assert all(redact_text(k) == k for k in keys)
    # The fixer's answers, logged with their keys (one answer quotes the
    # secret), join the gate's problems by key, as metrics join them.
    (fix,) = [r for r in records if r["event"] == "fix"]
    assert sorted(a["key"] for a in fix["report"]) == sorted(keys)
    assert SECRET not in json.dumps(fix)


def test_santa_gate_json_shows_the_readable_key_of_prose(project: Path, capsys) -> None:
    output = project / "refunds.md"
    output.write_text(DOC, encoding="utf-8")
    reviews = []
    for label in ("b", "c"):
        path = project / f"{label}.json"
        path.write_text(review_reply(CRITERIA, FLAGS, detail=label), encoding="utf-8")
        reviews.append(str(path))
    assert main(["gate", *reviews, "--against", str(output), "--json"]) == 1
    issues = json.loads(capsys.readouterr().out)["issues"]
    keys = _keys_in(issues)
    (prose,) = [k for k in keys if k.startswith("factual-accuracy|")]
    assert (
        prose == "factual-accuracy|quote:you can ask for a full refund within 60 days of delivery."
    )
    assert all(SECRET.casefold()[:12] not in k.casefold() for k in keys)
    # What the gate printed is what a run's state and log hold for the same flags.
    from santa_method.core.merge import issue_key
    from santa_method.core.types import Issue

    assert prose == issue_key(Issue("factual-accuracy", "the spec says 30 days", PROSE))
