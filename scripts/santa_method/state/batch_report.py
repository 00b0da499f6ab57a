"""A batch's report: what was verified, what failed, what that says about the rest.

Why Markdown beside JSON: a person decides what to do with an escalated
batch, and a CI job archives the JSON; both come from the same data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from santa_method.state.atomic import replace_text


def _money(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, int | float) else "unknown"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(data: dict[str, Any]) -> str:
    lines = [
        f"# santa-method batch {data['batch_id']}: {data['verdict']}",
        "",
        f"- Items in the batch: {data['population']}; verified with the full loop: "
        f"{data['reviewed']}",
        f"- Guarantee: {data['guarantee']}",
        f"- Seed: {data.get('seed')} (the same seed and items draw the same samples)",
        f"- Estimate: {data['estimate_statement']}",
        f"- Cost: {_money(data['cost_usd'])}"
        + (
            f", {data['cost_relative_to_all']:.1%} of verifying every item"
            if isinstance(data.get("cost_relative_to_all"), float)
            else ""
        ),
    ]
    for reason in data["reasons"]:
        lines.append(f"- Reason: {_cell(reason)}")
    for warning in data.get("warnings") or []:
        lines.append(f"- Warning: {_cell(warning)}")
    lines += ["", "## Failures by criterion (first round of each verified item)", ""]
    if data["failures_by_criterion"]:
        for criterion, items in data["failures_by_criterion"].items():
            systemic = " (systemic)" if criterion in data["systemic"] else ""
            lines.append(
                f"- {criterion}{systemic}: {len(items)} item(s): {_cell(', '.join(items))}"
            )
    else:
        lines.append("None.")
    lines += ["", "## Samples", ""]
    for wave in data["waves"]:
        lines.append(f"### Sample {wave['number']}: {_cell(wave['statement'])}")
        lines.append("")
        lines.append(
            f"Verified {wave['verified']} of {wave['n']}; failed at first review: {wave['failed']}."
        )
        if wave["skipped"]:
            lines.append(f"Not verified (budget): {_cell(', '.join(wave['skipped']))}.")
        for criterion, counts in wave["screens"].items():
            lines.append(
                f"Screen for {criterion}: {counts['clean']} clean, {counts['flagged']} flagged "
                f"({counts['fixed']} fixed), {counts['unusable']} without a usable answer."
            )
        if wave["decision"]:
            lines.append(
                f"Decision: {wave['decision']['step']}"
                + (
                    f" ({_cell('; '.join(wave['decision']['reasons']))})"
                    if wave["decision"]["reasons"]
                    else ""
                )
            )
        lines.append("")
    lines += ["## Items", "", "| item | status | first-round failures | rounds | run | cost |"]
    lines.append("|---|---|---|---|---|---|")
    for item in data["items"]:
        lines.append(
            f"| {_cell(item['item'])} | {item['status']} | {_cell(', '.join(item['criteria']))} "
            f"| {item['rounds']} | {item['run_id'] or ''} | {_money(item['cost_usd'])} |"
        )
    if data["changed"]:
        lines += ["", "## Changed items", ""]
        for item, path in data["changed"].items():
            lines.append(f"- {_cell(item)} -> {_cell(path)}")
    if data.get("fixed_jsonl"):
        lines += ["", f"JSONL items with their fixes: {data['fixed_jsonl']}"]
    return "\n".join(lines) + "\n"


def write_batch_report(folder: Path, data: dict[str, Any]) -> Path:
    """Both forms, redacted: a report is for people and gets pasted into tickets."""
    from santa_method.core.redact import redact_json

    data = redact_json(data)
    path = folder / "report.md"
    replace_text(path, to_markdown(data))
    replace_text(folder / "report.json", json.dumps(data, indent=2, ensure_ascii=False))
    return path
