"""The page's data: every run and batch as plain JSON, from `Sources`.

Pure functions: what a page shows is decided here, from data already read
(and redacted) by `view.sources`, so it is tested without files or a
browser. The page's script only lays this data out.

Why compact in places: a log of 10,000 runs must fit a page of a few
megabytes with every run's details, so a reviewer's checks are one letter
per criterion (`P`, `F`, `-` not rated) over the run's `criteria`, which
index the page's one list of criterion names; a reviewer's model is named
once for the run (`models_by`, an index into the page's list of models),
and how long a reviewer or the fixer took is `s` (seconds, to a tenth);
empty fields are left out;
and what is the same for many runs (why a run folder's texts are missing)
is said once for the page (`folder_notes`). Runs are newest first; a page
whose data would still pass `PAGE_BUDGET` bytes leaves out the details of
the oldest runs (`fit`), which keep their row in the table and say how to
see them.

Log fields are read tolerantly (a damaged field is treated as absent), and
the merged problems of the gate are read as `criteria`/`quotes` lists when
present, else as the single `criterion`/`quote`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from santa_method.core.fixreport import NEEDS_INPUT
from santa_method.state.metrics import RunView
from santa_method.view.batches import batch_entry
from santa_method.view.fields import dicts as _dicts
from santa_method.view.fields import number as _number
from santa_method.view.fields import plain as _plain
from santa_method.view.fields import text as _str
from santa_method.view.fields import texts as _strs
from santa_method.view.marks import Located, line_diff, merge_spans
from santa_method.view.sources import (
    LINE_BUDGET,
    RAW_BUDGET,
    TEXT_BUDGET,
    RunFiles,
    Sources,
)

#: Bytes of data embedded in one page: every run's row, then the rounds of the
#: newest runs while they fit (the rest of the page is under 100 KB).
PAGE_BUDGET = 9_600_000
VERDICTS = {"shipped": "NICE", "escalated": "ESCALATED", "reported": "NAUGHTY", "open": "open"}
_CHECK_CODE = {"PASS": "P", "FAIL": "F"}
_NEEDS_INPUT = re.compile(r"^\s*\d+\s*[.)]\s*needs input\s*:\s*(.+?)\s*$", re.I | re.M)

GONE = (
    "The run folder is gone (run folders are git-ignored and may be deleted): this page "
    "comes from the log alone, so the outputs, the changes between rounds, the spec and "
    "the reviewers' reasons for each check are not shown."
)
TEXTS_LEFT_OUT = (
    "The run folder exists, but its texts were left out to keep this page small and quick "
    f"(the newest runs' texts are read, up to {TEXT_BUDGET:,} characters and "
    f"{LINE_BUDGET:,} lines in all); "
    "`santa view --since DATE` shows older runs in full."
)
RAW_LEFT_OUT = (
    "The reviewers' whole replies of older runs are left out to keep this page small (the "
    f"newest runs' are kept, up to {RAW_BUDGET:,} characters); `santa view --since DATE` "
    "shows this run's."
)
DETAIL_LEFT_OUT = (
    "This run's rounds were left out to keep the page under 10 MB (the newest runs come "
    "first); `santa view --since DATE` shows older runs in full."
)

#: Escalation reasons logged as codes, in words a person reads at a glance.
REASON_WORDS = {NEEDS_INPUT: f"{NEEDS_INPUT} (the fixer asked a question only a person can answer)"}

#: What a run's page says about its folder, by the row's `folder`; said once
#: in the page, not in each of 10,000 runs.
FOLDER_NOTES = {"gone": GONE, "kept": TEXTS_LEFT_OUT}


def interrupted_note(run_id: str) -> str:
    return (
        f"This run was interrupted: the process driving it is gone. Resume it with "
        f"`santa run --resume {run_id}`, or close it with `santa log escalate --run {run_id}`."
    )


class Names:
    """One of the page's lists of names (criteria, models); runs refer to them by index."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def index(self, name: str) -> int:
        if name not in self._index:
            self._index[name] = len(self.names)
            self.names.append(name)
        return self._index[name]


def page_data(
    src: Sources, *, generated: str, since: str | None, page_budget: int | None = None
) -> dict[str, Any]:
    """The JSON the page embeds: every run's row and its page's details (held
    to `page_budget` bytes by `fit` when one is given)."""
    criteria, models = Names(), Names()
    batches = [batch_entry(b) for b in src.batches]
    batch_of = {
        item["run"]: b["id"]
        for b in batches
        for sample in (b["detail"] or {}).get("samples", [])
        for item in sample["items"]
        if item.get("run")
    }
    per_run = (src.metrics.get("cost") or {}).get("per_run") or {}
    runs = []
    for view in src.runs:
        files = src.folders.get(view.run_id)
        entry = run_row(view, files, per_run.get(view.run_id))
        if view.run_id in src.interrupted:
            entry["state"] = "interrupted"
        if view.run_id in batch_of:
            entry["batch"] = batch_of[view.run_id]
        detail = run_detail(view, files, criteria, models)
        if view.run_id in src.interrupted:
            detail.setdefault("notes", []).insert(0, interrupted_note(view.run_id))
        entry["detail"] = detail
        runs.append(entry)
    data = {
        "generated": generated,
        "log": str(src.log),
        "home": str(src.home),
        "since": since,
        "warnings": list(src.warnings),
        "left_out": DETAIL_LEFT_OUT,
        "raw_left_out": RAW_LEFT_OUT,
        "folder_notes": FOLDER_NOTES,
        "criteria": criteria.names,
        "models": models.names,
        "runs": runs,
        "batches": batches,
    }
    return data if page_budget is None else fit(data, page_budget)


def fit(data: dict[str, Any], budget: int, size: int | None = None) -> dict[str, Any]:
    """`data` in at most `budget` bytes of page: the oldest runs' details are
    left out (`detail` None; the page says why once, `left_out`) until it
    fits. Their rows stay, so every run is still listed. `size` is the bytes
    `data` takes, when the caller has measured it already."""
    over = (_size(data) if size is None else size) - budget
    for entry in reversed(data["runs"]):
        if over <= 0:
            break
        if entry["detail"] is not None:
            over -= _size(entry["detail"]) - len("null")
            entry["detail"] = None
    return data


# -- runs ----------------------------------------------------------------------


def run_row(
    view: RunView, files: RunFiles | None, cost: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A run's line in the table (fields that are empty or false are left out)."""
    start = view.run_record or {}
    cost = cost or {}
    started = _str(view.records[0].get("ts")) or ""
    gates = list(view.rounds.values())
    return lean(
        {
            "id": view.run_id,
            "target": _str(start.get("target")) or "",
            "started": started[:19] + "Z" if len(started) > 19 else started,
            "verdict": VERDICTS[view.outcome],
            "shipped": bool(view.events("ship")),
            "state": files.status if files is not None else None,
            "problems": [len(_dicts(gates[0].get("issues"))), len(_dicts(gates[-1].get("issues")))]
            if gates
            else None,
            "ended": ended(view),
            "rounds": max(view.rounds, default=0),
            "cost": _number(cost.get("cost_usd")),
            "tokens": _number(cost.get("tokens")),
            "escapes": len(view.events("escape")) or None,
            "folder": "gone"
            if files is None
            else "texts"
            if files.texts
            else "unreadable"
            if files.problem
            else "kept",
        }
    )


def ended(view: RunView) -> str | None:
    """Why an escalated (or reported) run ended, in a few words for the table. (The page
    says it of a shipped or open run itself: a log of 10,000 runs is mostly
    shipped ones.)"""
    last = max(view.rounds, default=0)
    if view.outcome == "reported":
        return f"a check (no fixes): problems reported in round {last}"
    if view.outcome != "escalated":
        return None
    reasons = [str(e["reason"]) for e in view.events("escalate") if _str(e.get("reason"))]
    if not reasons and last:
        reasons = _strs(view.rounds[last].get("reasons"))
    said = REASON_WORDS.get(reasons[0], reasons[0]) if reasons else "escalated"
    return said if len(said) <= 160 else said[:159] + "…"


def run_detail(
    view: RunView, files: RunFiles | None, criteria: Names, models: Names | None = None
) -> dict[str, Any]:
    """Everything a run's page shows."""
    start = view.run_record or {}
    rounds = _rounds(view.records)
    order: list[str] = []
    for r in rounds.values():
        for review in r["reviews"].values():
            for check in _dicts(review.get("checks")):
                name = _str(check.get("criterion"))
                if name and name not in order:
                    order.append(name)
    texts = files.outputs if files is not None and files.texts else {}
    replies = files.replies if files is not None and files.texts else {}
    raw = files.raw if files is not None and files.texts else {}
    names = models or Names()
    # Each reviewer's model once for the run (a page of 10,000 runs names it
    # in every round otherwise); a review written by another says so itself.
    by_label: dict[str, int] = {}
    for r in rounds.values():
        for label, review in r["reviews"].items():
            said = _str(review.get("model"))
            if said is not None:
                by_label.setdefault(label, names.index(said))
    for label, asked in _asked_models(start).items():  # older logs name only what was asked
        by_label.setdefault(label, names.index(asked))
    shown = []
    for n, r in rounds.items():
        shown.append(
            _round(n, r, order, texts.get(n), texts.get(n - 1), replies, raw, by_label, names)
        )
    # A missing folder, or texts left out, is said once for the page
    # (`FOLDER_NOTES`, by the row's `folder`); only a damaged folder needs words.
    notes = []
    if files is not None and files.problem:
        notes.append(f"The run folder could not be read: {files.problem}.")
    return lean(
        {
            "models_by": by_label,
            "raw_left_out": files is not None and files.raw_left_out,
            "criteria": [criteria.index(c) for c in order],
            "rubric": _str(start.get("rubric")),
            "models": start.get("models") if _plain(start.get("models")) else None,
            "reviewers": _number(start.get("reviewers")),
            "max_fixes": _number(start.get("max_fixes")),
            "source": _str(start.get("source")),
            "spec": files.spec if files is not None and files.texts else None,
            "rounds": shown,
            "events": _events(view.records),
            "escalation": _escalation(view, shown, files) if view.outcome == "escalated" else None,
            "notes": notes,
        }
    )


def _rounds(records: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each round's gates, the reviews its last gate counted, and its fix."""
    rounds: dict[int, dict[str, Any]] = {}
    pending: dict[int, dict[str, Mapping[str, Any]]] = {}
    for record in records:
        event, n = record.get("event"), record.get("iteration")
        if event == "escalate" and record.get("questions") and isinstance(n, int):
            # A fixer that asked logs no fix: its report and questions ride on the escalation.
            r = rounds.setdefault(n, {"gates": [], "reviews": {}, "fix": None})
            r["fix"] = r["fix"] or record
            continue
        if event not in ("review", "gate", "fix") or not isinstance(n, int):
            continue
        r = rounds.setdefault(n, {"gates": [], "reviews": {}, "fix": None})
        if event == "review":
            pending.setdefault(n, {})[str(record.get("label"))] = record
        elif event == "gate":
            r["gates"].append(record)
            r["reviews"] = pending.pop(n, None) or r["reviews"]
        else:
            r["fix"] = record
    return dict(sorted(rounds.items()))


def _asked_models(start: Mapping[str, Any]) -> dict[str, str]:
    """label -> the model the run asked for (the run record's list, in slot order)."""
    from santa_method.core.gate import default_labels

    models = start.get("models")
    if not isinstance(models, list):
        return {}
    return {
        label: m
        for label, m in zip(default_labels(len(models)), models, strict=True)
        if isinstance(m, str) and m
    }


def _round(
    n: int,
    r: Mapping[str, Any],
    order: Sequence[str],
    output: str | None,
    before: str | None,
    replies: Mapping[tuple[int, str], Mapping[str, Any]],
    raw: Mapping[tuple[int, str], str] | None = None,
    by_label: Mapping[str, int] | None = None,
    models: Names | None = None,
) -> dict[str, Any]:
    gate = r["gates"][-1] if r["gates"] else {}
    problems = [problem(i) for i in _dicts(gate.get("issues"))]
    reviews = []
    for label, review in r["reviews"].items():
        words = replies.get((n, label)) or {}
        details = words.get("details") or {}
        results = {_str(c.get("criterion")): c.get("result") for c in _dicts(review.get("checks"))}
        reviews.append(
            lean(
                {
                    "label": label,
                    "invalid": review.get("valid") is not True,
                    "verdict": _str(review.get("verdict")),
                    "errors": _strs(review.get("errors")),
                    "checks": "".join([_CHECK_CODE.get(str(results.get(c)), "-") for c in order]),
                    "details": [details.get(c) for c in order] if details else None,
                    "standing": review.get("standing") is True,
                    "cost": _number(review.get("cost_usd")),
                    "tokens": _number(review.get("tokens")),
                    "model": _own_model(review, label, by_label or {}, models),
                    "s": _seconds(review.get("duration_s")),
                    "reply": (raw or {}).get((n, label)),
                }
            )
        )
    fix = r["fix"]
    diff = line_diff(before, output) if output is not None and before is not None else None
    out: dict[str, Any] = {
        "n": n,
        "verdict": _str(gate.get("verdict")),
        "next": _str(gate.get("next")),
        "reasons": _strs(gate.get("reasons")),
        "agreement": _number(gate.get("agreement")),
        "gates": len(r["gates"]),
        "reviews": reviews,
        "problems": problems,
        "fix": None if fix is None else fix_report(fix, models),
        "output": output,
        "marks": _marks(output, problems) if output is not None else None,
        "diff": diff or None,
        "unchanged": diff == [],
    }
    return lean(out)


def lean(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` without the entries that say nothing (None, False, "", [], {}):
    a page of 10,000 runs is mostly defaults. The page's script reads a
    missing field as empty. Zero is a value and stays."""
    return {k: v for k, v in fields.items() if v or (v == 0 and v is not False)}


def _size(value: Any) -> int:
    """Bytes `value` takes in the page."""
    from santa_method.view.page import embed_json

    return len(embed_json(value).encode("utf-8", "replace"))


def problem(issue: Mapping[str, Any]) -> dict[str, Any]:
    """A merged problem: every criterion it breaks (primary first), every quote."""
    criteria = _strs(issue.get("criteria")) or [_str(issue.get("criterion")) or "unspecified"]
    quotes = _strs(issue.get("quotes"))
    if not quotes and _str(issue.get("quote")):
        quotes = [str(issue["quote"])]
    return lean(
        {
            "criteria": criteria,
            "issue": _str(issue.get("issue")) or "",
            "quotes": quotes,
            "missing": _str(issue.get("missing")),
            "location": _str(issue.get("location")),
            "evidence": _str(issue.get("evidence")),
            "by": _strs(issue.get("flagged_by")),
            "source": _str(issue.get("source")),
        }
    )


def _model(name: str | None, models: Names | None) -> int | str | None:
    """A model as the page holds it: its index in the page's list of models
    (a page of 10,000 runs names a few models many times)."""
    if name is None or models is None:
        return name
    return models.index(name)


def _own_model(
    review: Mapping[str, Any], label: str, by_label: Mapping[str, int], models: Names | None
) -> int | str | None:
    """A review's model when it is not its label's in the run's `models` map."""
    found = _model(_str(review.get("model")), models)
    return None if found is None or found == by_label.get(label) else found


def _seconds(value: Any) -> float | None:
    found = _number(value)
    return None if found is None else round(found, 1)


def fix_report(record: Mapping[str, Any], models: Names | None = None) -> dict[str, Any]:
    """The fixer's report, with its `needs input` questions picked out."""
    notes = _str(record.get("notes")) or ""
    questions: list[str] = []
    for key in ("questions", "needs_input"):
        for q in record.get(key) or [] if isinstance(record.get(key), list) else []:
            text = q if isinstance(q, str) else q.get("question") if isinstance(q, dict) else None
            if isinstance(text, str) and text not in questions:
                questions.append(text)
    for found in _NEEDS_INPUT.findall(notes):
        if found not in questions:
            questions.append(found)
    changed = record.get("changed")
    return lean(
        {
            "notes": notes,
            "questions": questions,
            "changed": changed if isinstance(changed, str | bool) else None,
            "cost": _number(record.get("cost_usd")),
            "tokens": _number(record.get("tokens")),
            "model": _model(_str(record.get("model")), models),
            "s": _seconds(record.get("duration_s")),
        }
    )


def _marks(output: str, problems: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    located = Located(output)
    spans = [
        (start, end, number)
        for number, p in enumerate(problems, 1)
        for quote in p.get("quotes", [])
        for start, end in located.spans(quote)
    ]
    return [[s, e, ns] for s, e, ns in merge_spans(spans)]


def _events(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What happened to the run besides its rounds, in order."""
    shown = []
    for record in records:
        event = record.get("event")
        if event not in ("ship", "escalate", "escape", "waive", "generate"):
            continue
        text = next(
            (record[k] for k in ("reason", "description", "issue", "key") if _str(record.get(k))),
            None,
        )
        if event == "waive" and _str(record.get("reason")):
            text = f"{record.get('key') or record.get('issue')}: {record['reason']}"
        shown.append(
            lean(
                {
                    "event": event,
                    "ts": _str(record.get("ts")),
                    "round": record.get("iteration")
                    if isinstance(record.get("iteration"), int)
                    else None,
                    "text": _str(text),
                    "cost": _number(record.get("cost_usd")),
                }
            )
        )
    return shown


def _escalation(
    view: RunView, rounds: Sequence[Mapping[str, Any]], files: RunFiles | None
) -> dict[str, Any]:
    """Why a person has the run now, and what they are asked."""
    report = files.report if files is not None else None
    reasons = _strs((report or {}).get("escalation_reasons"))
    if not reasons:
        reasons = [str(e["reason"]) for e in view.events("escalate") if _str(e.get("reason"))]
    reasons = [REASON_WORDS.get(r, r) for r in reasons]
    last = rounds[-1] if rounds else None
    questions = (last or {}).get("fix", {}) or {}
    return {
        "reasons": reasons,
        "questions": list(questions.get("questions") or []),
        "round": last["n"] if last else None,
        "open_problems": len(last.get("problems", []))
        if last and last.get("verdict") == "NAUGHTY"
        else 0,
        "from": "report" if report is not None else "log",
    }
