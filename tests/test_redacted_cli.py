"""Every sub-command's readable output goes through redaction, not only run,
gate and batch (issue 11, item 7): a secret that reaches a rubric's key, an
item id or a flag's value is not echoed to stdout or stderr (CI logs keep
both)."""

from __future__ import annotations

import json
from pathlib import Path

from santa_method.cli import main

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TOKEN = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo"  # bare base64, no KEY= context


def _printed(capsys) -> str:
    out, err = capsys.readouterr()
    return out + err


def test_rubric_lint_does_not_echo_a_secret_key(user_files: Path, capsys) -> None:
    base = (Path(__file__).parents[1] / "rubrics" / "base.yaml").read_text(encoding="utf-8")
    (user_files / "r.yaml").write_text(f"{base}\n{TOKEN}: {AWS_SECRET}\n", encoding="utf-8")
    main(["rubric", "lint", "r.yaml"])
    shown = _printed(capsys)
    assert "r.yaml" in shown and "REDACTED" in shown
    assert TOKEN not in shown and AWS_SECRET not in shown


def test_sample_does_not_echo_a_secret_id(user_files: Path, capsys) -> None:
    rows = [{"id": TOKEN, "output": "x"}, {"id": "2", "output": "y"}]
    (user_files / "items.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    assert main(["sample", "items.jsonl", "--rate", "1", "--seed", "1"]) == 0
    shown = _printed(capsys)
    assert "REDACTED" in shown and TOKEN not in shown
    (user_files / "ex.txt").write_text(f"{AWS_SECRET}\n", encoding="utf-8")
    assert main(["sample", "items.jsonl", "--exclude", "ex.txt", "--seed", "1"]) == 0
    shown = _printed(capsys)
    assert "match no item" in shown and AWS_SECRET not in shown


def test_a_usage_error_does_not_echo_a_secret_value(user_files: Path, capsys) -> None:
    assert main(["gate", "b.json", "c.json", "--reviewers", AWS_SECRET]) == 2
    shown = _printed(capsys)
    assert "--reviewers" in shown and AWS_SECRET not in shown


def test_rubric_show_does_not_print_a_secret(user_files: Path, capsys) -> None:
    base = (Path(__file__).parents[1] / "rubrics" / "base.yaml").read_text(encoding="utf-8")
    (user_files / "r.yaml").write_text(
        base.replace("Every factual statement", f"{AWS_SECRET} Every factual statement", 1),
        encoding="utf-8",
    )
    assert main(["rubric", "show", "r.yaml"]) == 0
    shown = _printed(capsys)
    assert "REDACTED" in shown and AWS_SECRET not in shown


def test_metrics_tables_do_not_print_a_secret_an_older_log_kept(user_files: Path, capsys) -> None:
    # A log written before today's rules: the question holds the key as it was.
    from santa_method.state import log

    path = user_files / ".santa" / "log.jsonl"
    for event in ("run", "escalate"):
        log.append(
            path,
            {
                "run_id": "r1",
                "event": event,
                "iteration": 1,
                "reason": "needs-input",
                "questions": [{"n": 1, "question": f"is the key {AWS_SECRET} the live one?"}],
            },
        )
    old = path.read_text(encoding="utf-8").replace("[REDACTED:High Entropy Token]", AWS_SECRET)
    path.write_text(old, encoding="utf-8")
    assert main(["metrics", "--log", str(path)]) == 0
    shown = _printed(capsys)
    assert "is the key" in shown and AWS_SECRET not in shown
