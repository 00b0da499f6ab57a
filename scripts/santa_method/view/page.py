"""The HTML document: the overview drawn here, the rest by the page's own script.

Pure: `render(src, data)` returns the whole page as text. Why this split:
the overview (numbers and charts) reads without any script, while a log of
10,000 runs is far too much to lay out as HTML up front, so each run's and
batch's page is laid out by `assets/app.js` from the embedded JSON when it
is opened (and the table is paged, sorted and filtered there).

Safety, by construction:
- every text that reaches HTML here goes through `html.escape`; the script
  builds its pages with `textContent` and `createElement` only, never with
  markup strings, so an output holding `<script>` or `onerror=` stays text;
- the data is JSON inside `<script type="application/json">` with `<`, `>`
  and `&` written as `\\u` escapes, so no text can close that element;
- a Content-Security-Policy allows nothing but this page's own style and
  script (by their SHA-256), so no request can leave the file, no font or
  image is fetched, and an injected script would not run even if one got in.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from html import escape
from importlib import resources
from typing import Any

from santa_method.state import fastjson
from santa_method.state import metrics as m
from santa_method.view import charts
from santa_method.view.sources import Sources

EMPTY = (
    "No runs have been logged yet. Verify something first, e.g. "
    "<code>santa run --against draft.md --spec spec.md</code> (or "
    "<code>/santa-method:verify draft.md --spec spec.md</code> inside Claude Code), "
    "then run <code>santa view</code> again."
)


def asset(name: str) -> str:
    return resources.files("santa_method.view").joinpath("assets", name).read_text("utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def policy(style: str, script: str) -> str:
    """The page's Content-Security-Policy: its own style and script, nothing else."""
    return (
        f"default-src 'none'; script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
        "base-uri 'none'; form-action 'none'"
    )


def embed_json(data: Any) -> str:
    """JSON that is safe inside a script element whatever its strings hold."""
    text = fastjson.dumps(data)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(src: Sources, data: dict[str, Any], embedded: str | None = None) -> str:
    """The whole page; `embedded` is `embed_json(data)` when the caller has it already."""
    style, script = asset("style.css"), asset("app.js")
    embedded = embed_json(data) if embedded is None else embedded
    empty = not src.runs and not src.batches
    scope = f" since {data['since']}" if data.get("since") else ""
    notes = "".join(f'<p class="warning">{escape(w)}</p>' for w in data["warnings"][:20])
    if len(data["warnings"]) > 20:
        notes += f'<p class="warning">... and {len(data["warnings"]) - 20} more warnings.</p>'
    body = (
        f'<p class="empty-project">{EMPTY}</p>'
        if empty
        else overview(src)
        + '<h2>Runs and batches</h2><div id="table"><noscript><p class="warning">The table '
        "and the pages of runs and batches need JavaScript; the numbers above do not."
        "</p></noscript></div>"
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy(style, script))}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>santa view{escape(scope)}</title><style>{style}</style></head><body>"
        '<header class="top"><a class="brand" href="#">santa-method</a>'
        f'<span class="source">{escape(data["log"])}{escape(scope)} · generated '
        f"{escape(data['generated'][:19].replace('T', ' '))} UTC</span></header>"
        f'<main><section id="overview">{notes}{body}</section>'
        '<section id="page" hidden></section></main>'
        f'<script type="application/json" id="santa-data">{embedded}</script>'
        f"<script>{script}</script></body></html>\n"
    )


def overview(src: Sources) -> str:
    """The headline numbers against the method's targets, then the charts."""
    result = src.metrics
    runs = result["runs"]
    targets = result["targets"]
    batches = len(src.batches)

    def card(label: str, value: str, sub: str = "", met: bool | None = None) -> str:
        cls = {True: " met", False: " missed", None: ""}[met]
        return (
            f'<div class="card{cls}"><div class="label">{escape(label)}</div>'
            f'<div class="value">{escape(value)}</div><div class="sub">{escape(sub)}</div></div>'
        )

    def target_card(name: str, label: str, kind: charts.Format) -> str:
        t = targets[name]
        met = t["met"]
        said = {True: "met", False: "not met", None: "no data"}[met]
        return card(label, charts.fmt(result[name], kind), f"target {t['target']}: {said}", met)

    cost = result["cost"]
    cards = [
        card(
            "runs",
            str(runs["total"]),
            f"{runs['shipped']} NICE · {runs['escalated']} ESCALATED · {runs['open']} open",
        ),
        target_card("first_pass_rate", "first-pass rate", "pct"),
        target_card("mean_rounds_to_nice", "mean rounds to NICE", "num"),
        card("escalation rate", charts.fmt(result["escalation_rate"], "pct"), "of finished runs"),
        target_card("escape_rate", "escape rate", "pct"),
        card(
            "reviewer agreement",
            charts.fmt(result["agreement"]["issues"], "pct"),
            "of problems raised by two or more reviewers",
        ),
        card(
            "cost per run",
            charts.fmt(cost["mean_cost_usd_per_run"], "usd"),
            "verification, mean"
            + (f" · {cost['mean_multiple']:.1f}x generation" if cost["mean_multiple"] else ""),
        ),
        card("batches", str(batches), "sampled verifications"),
    ]
    return (
        f'<div class="cards">{"".join(cards)}</div>'
        f'<div class="charts">{"".join(_figure(f) for f in over_time(src.runs, cost["per_run"]))}'
        f"{_figure(_taxonomy(result))}{_figure(_kappa(result))}</div>"
    )


def _figure(inner: str) -> str:
    return f'<figure class="panel">{inner}</figure>'


def over_time(runs: Sequence[m.RunView], per_run: dict[str, dict[str, Any]]) -> list[str]:
    """First-pass rate, rounds to NICE, escalations and escapes, cost: per day, week or
    month. The cost is the mean of the runs' own costs as `metrics.cost` gave them."""
    dated = [r for r in runs if r.started is not None]
    unit, labels, where = charts.buckets([r.started for r in dated])  # type: ignore[misc]
    groups: list[list[m.RunView]] = [[] for _ in labels]
    for run, i in zip(dated, where, strict=True):
        groups[i].append(run)
    per = f"per {unit}"
    goal = {name: (threshold, f"target {text}") for name, _, threshold, text in m.TARGETS}
    return [
        charts.line_chart(
            f"First-pass rate, {per}",
            labels,
            [("first-pass rate", [m.first_pass_rate(g) for g in groups])],
            kind="pct",
            target=goal["first_pass_rate"][0],
            target_text=goal["first_pass_rate"][1],
        ),
        charts.line_chart(
            f"Mean rounds to NICE, {per}",
            labels,
            [("rounds to NICE", [m.mean_rounds_to_nice(g) for g in groups])],
            kind="num",
            target=goal["mean_rounds_to_nice"][0],
            target_text=goal["mean_rounds_to_nice"][1],
        ),
        charts.line_chart(
            f"Escalation and escape rates, {per}",
            labels,
            [
                ("escalation rate", [m.escalation_rate(g) for g in groups]),
                ("escape rate", [m.escape_rate(g) for g in groups]),
            ],
            kind="pct",
        ),
        charts.line_chart(
            f"Verification cost per run (mean), {per}",
            labels,
            [("cost per run", [_mean_cost(g, per_run) for g in groups])],
            kind="usd",
        ),
    ]


def _mean_cost(runs: Sequence[m.RunView], per_run: dict[str, dict[str, Any]]) -> float | None:
    known = [per_run[r.run_id]["cost_usd"] for r in runs if r.run_id in per_run]
    usd = [c for c in known if c is not None]
    return sum(usd) / len(usd) if usd else None


def _taxonomy(result: dict[str, Any]) -> str:
    taxonomy = result["taxonomy"]
    return charts.bar_chart(
        "Problems by criterion",
        [(c, float(n)) for c, n in taxonomy.items()],
        kind="count",
        note=f"{sum(taxonomy.values())} problems in all gated rounds",
    )


def _kappa(result: dict[str, Any]) -> str:
    kappa = result["agreement"]["kappa"]
    return charts.bar_chart(
        "Reviewer agreement by criterion (Fleiss' kappa)",
        sorted(kappa.items(), key=lambda kv: (kv[1] is None, -(kv[1] or 0.0), kv[0])),
        kind="num",
        note="1 = the reviewers always agree on PASS or FAIL; 0 = no better than chance",
    )
