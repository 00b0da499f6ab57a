"""Metrics over the iteration log: pure functions of its records.

They tell whether verification pays its way (first-pass rate, rounds,
escalations, escapes, cost against generation) and where the generator
keeps failing (taxonomy, recurring criteria), and whether the reviewers
agree with each other (issue agreement, Fleiss' kappa per criterion).

Definitions (issue 3, item 6), with the choices that make them exact:

- A run's records share a `run_id`; file order is event order. A round's
  verdict is its *last* `gate` record for that iteration (a re-review gates
  the same iteration again). Only those last gates count anywhere below, so
  a re-gated round is never counted twice.
- Outcome: *shipped* if some round's verdict is NICE; else *escalated* if
  the run has an `escalate` record or a gate whose `next` was `escalate`;
  else *reported* if a gate's `next` was `report` (a check-only run that
  found problems); else *open*.
- `first_pass_rate`: runs whose round 1 is NICE / runs with a round-1 gate.
- `pass_at_k` (k = 1..4): runs whose first NICE round is <= k / runs with a
  round-1 gate (so pass@1 equals the first-pass rate).
- `mean_rounds_to_nice`: mean first NICE round over shipped runs.
- `escalation_rate`: escalated / (shipped + escalated): a reported run
  asked for no fix, so no person had to rescue it.
- `escape_rate`: shipped runs with an `escape` record / shipped runs.
- `taxonomy`: the problems (merged flags) of every gated round, counted by
  primary criterion (the one most of its reviewers named), so one defect
  filed under four criteria counts once. `taxonomy_secondary`: how often a
  criterion was named as a problem's other criterion.
- `agreement.issues`: share of those problems raised by two or more valid
  reviewers of their gate (as the gate computes it: only gates with at
  least two valid reviewers). `agreement.kappa[criterion]`: Fleiss' kappa
  with gated rounds as units, the round's valid reviews as raters (the last
  `review` record of each label before the round's last gate), and each
  review's PASS/FAIL check of the criterion as the category; a unit counts
  only if every rater rated the criterion and there are at least two.
- `recurring`: primary criteria with a problem in at least 3 runs.
- `reviewers`: does each reviewer pay for itself? Per reviewer slot
  (`by_slot`, the label) and per model (`by_model`: the review record's
  `model`, else the run record's `models`, "unknown" when neither says),
  over gates with two or more valid reviewers: `problems` it raised,
  `only` those no other reviewer raised, and of those, `confirmed` (the
  fixer answered "fixed") and `withdrawn` (the fixer answered "not an
  issue"), read from the fix record's `report` of that round by problem
  key.
- `needs_input`: runs stopped by a fixer's question (an `escalate` record
  with reason `needs-input`) and their questions.
- `cost`: tokens and USD of verification per run (every record but
  `generate`), generation tokens and USD (`generate` records), and the
  multiple verification / generation in USD where both are known, else in
  tokens. A record's tokens are its `tokens` total (a map's `total` when it
  has one, else the sum of its parts), never that plus its
  `token_detail`; the cache split (`cache_read_tokens`,
  `cache_write_tokens`) comes from `token_detail` (or a `tokens` map) and
  is None where no record of the run carries it.
- `since`: keeps the runs whose first record is at or after that moment
  (a date means 00:00 UTC), so a run is never cut in half.

Every rate is None where its denominator is zero. Nothing here raises on a
malformed field: it is treated as absent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from types import MappingProxyType
from typing import Any, Literal

from santa_method.core.gate import default_labels
from santa_method.state.log import LogRead, parse_ts, validate_record

Outcome = Literal["shipped", "escalated", "reported", "open"]
KS = (1, 2, 3, 4)
RECURRING_MIN_RUNS = 3
#: The method's targets: (metric, comparison, threshold, readable form).
TARGETS = (
    ("first_pass_rate", ">", 0.70, "> 70 %"),
    ("mean_rounds_to_nice", "<", 1.5, "< 1.5"),
    ("escape_rate", "==", 0.0, "= 0"),
)


@dataclass(frozen=True)
class RunView:
    """One run as the metrics see it, indexed in one pass over its records.

    `rounds` maps each gated iteration to its last gate record (the round's
    verdict), in round order; `first_nice` is the first NICE round or None.
    `reviews` maps each gated iteration to the last review record of each
    label before that round's last gate (the reviews the gate counted).
    Why indexed: every metric asks these of every run, and a log of 10,000
    runs made scanning the records for each question the slow part.
    """

    run_id: str
    records: tuple[dict[str, Any], ...]
    started: datetime | None
    rounds: Mapping[int, dict[str, Any]]
    outcome: Outcome
    first_nice: int | None
    reviews: Mapping[int, Mapping[str, dict[str, Any]]]
    by_event: Mapping[str, tuple[dict[str, Any], ...]]

    @property
    def run_record(self) -> dict[str, Any] | None:
        found = self.by_event.get("run")
        return found[0] if found else None

    def events(self, event: str) -> list[dict[str, Any]]:
        return list(self.by_event.get(event, ()))


def runs_from_records(records: Iterable[Mapping[str, Any]]) -> list[RunView]:
    """Group records by run, in order of each run's first record; invalid records are skipped."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if validate_record(record) is None:
            grouped.setdefault(record["run_id"], []).append(dict(record))
    return [_view(run_id, recs) for run_id, recs in grouped.items()]


def runs_from_log(read: LogRead) -> list[RunView]:
    """`runs_from_records` for records `state.log.read` returned: they are valid
    records already and no one else holds them, so they are neither checked
    nor copied again."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in read.records:
        grouped.setdefault(record["run_id"], []).append(record)
    return [_view(run_id, recs) for run_id, recs in grouped.items()]


def _view(run_id: str, records: list[dict[str, Any]]) -> RunView:
    rounds: dict[int, dict[str, Any]] = {}
    by_event: dict[str, list[dict[str, Any]]] = {}
    seen: dict[Any, dict[str, dict[str, Any]]] = {}
    counted: dict[int, dict[str, dict[str, Any]]] = {}
    escalated = reported = False
    for record in records:
        event = record["event"]
        by_event.setdefault(event, []).append(record)
        if event == "review":
            label = record.get("label")
            if isinstance(label, str):
                seen.setdefault(record.get("iteration"), {})[label] = record
        elif event == "gate":
            iteration = record["iteration"]
            rounds[iteration] = record
            counted[iteration] = dict(seen.get(iteration, {}))
            escalated = escalated or record.get("next") == "escalate"
            reported = reported or record.get("next") == "report"
        elif event == "escalate":
            escalated = True
    ordered = dict(sorted(rounds.items()))
    nice = [i for i, gate in ordered.items() if gate.get("verdict") == "NICE"]
    first_nice = nice[0] if nice else None
    outcome: Outcome = (
        "shipped"
        if nice
        else "escalated"
        if escalated
        else "reported"
        if reported
        else "open"
    )
    return RunView(
        run_id,
        tuple(records),
        parse_ts(records[0].get("ts")),
        MappingProxyType(ordered),
        outcome,
        first_nice,
        MappingProxyType({i: MappingProxyType(counted[i]) for i in ordered}),
        MappingProxyType({e: tuple(rs) for e, rs in by_event.items()}),
    )


def since_filter(runs: Sequence[RunView], since: date | datetime | None) -> list[RunView]:
    """The runs that started at or after `since` (a date is 00:00 UTC that day)."""
    if since is None:
        return list(runs)
    moment = since_moment(since)
    return [r for r in runs if r.started is not None and r.started >= moment]


def since_moment(since: date | datetime) -> datetime:
    """The moment `since` means: a date is 00:00 UTC that day, a naive time is UTC."""
    if not isinstance(since, datetime):
        return datetime(since.year, since.month, since.day, tzinfo=UTC)
    return since if since.tzinfo is not None else since.replace(tzinfo=UTC)


def run_counts(runs: Sequence[RunView]) -> dict[str, int]:
    counts = Counter(r.outcome for r in runs)
    return {
        "total": len(runs),
        "shipped": counts["shipped"],
        "escalated": counts["escalated"],
        "reported": counts["reported"],
        "open": counts["open"],
    }


def first_pass_rate(runs: Sequence[RunView]) -> float | None:
    gated = [r for r in runs if 1 in r.rounds]
    return _ratio(sum(1 for r in gated if r.rounds[1].get("verdict") == "NICE"), len(gated))


def pass_at_k(runs: Sequence[RunView], ks: Sequence[int] = KS) -> dict[int, float | None]:
    gated = [r for r in runs if 1 in r.rounds]
    return {
        k: _ratio(
            sum(1 for r in gated if r.first_nice is not None and r.first_nice <= k), len(gated)
        )
        for k in ks
    }


def mean_rounds_to_nice(runs: Sequence[RunView]) -> float | None:
    firsts = [r.first_nice for r in runs if r.first_nice is not None]
    return sum(firsts) / len(firsts) if firsts else None


def escalation_rate(runs: Sequence[RunView]) -> float | None:
    counts = run_counts(runs)
    return _ratio(counts["escalated"], counts["shipped"] + counts["escalated"])


def escape_rate(runs: Sequence[RunView]) -> float | None:
    shipped = [r for r in runs if r.outcome == "shipped"]
    return _ratio(sum(1 for r in shipped if r.events("escape")), len(shipped))


def taxonomy(runs: Sequence[RunView]) -> dict[str, int]:
    """Problems of every gated round by primary criterion, most frequent first."""
    counts: Counter[str] = Counter()
    for run in runs:
        for gate in run.rounds.values():
            counts.update(_criterion(issue) for issue in _issues(gate))
    return _by_count(counts)


def taxonomy_secondary(runs: Sequence[RunView]) -> dict[str, int]:
    """How often each criterion was a problem's other (not primary) criterion."""
    counts: Counter[str] = Counter()
    for run in runs:
        for gate in run.rounds.values():
            for issue in _issues(gate):
                primary = _criterion(issue)
                counts.update(
                    c for c in dict.fromkeys(_strings(issue.get("criteria"))) if c != primary
                )
    return _by_count(counts)


def _by_count(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _models(run: RunView, iteration: int) -> dict[str, str]:
    """label -> model of a round: what each review record says wrote it, else
    what the run record asked for (each slot's, or labels B, C, ... in order)."""
    record = run.run_record or {}
    models = record.get("models")
    by_slot = record.get("slot_models")
    asked: dict[str, str] = {}
    if isinstance(by_slot, dict):
        asked = {k: m for k, m in by_slot.items() if isinstance(m, str) and m}
    elif isinstance(models, list):
        labels = default_labels(len(models))
        asked = {
            label: m for label, m in zip(labels, models, strict=True) if isinstance(m, str) and m
        }
    for label, review in _round_reviews(run, iteration).items():
        said = review.get("model")
        if isinstance(said, str) and said:
            asked[label] = said
    return asked


def _answers(run: RunView, iteration: int) -> dict[str, str]:
    """problem key -> the fixer's answer, from the fix record after `iteration`."""
    out: dict[str, str] = {}
    for record in run.events("fix"):
        if record.get("iteration") != iteration:
            continue
        report = record.get("report")
        for entry in report if isinstance(report, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                out[entry["key"]] = str(entry.get("answer") or "")
    return out


def reviewers(runs: Sequence[RunView]) -> dict[str, Any]:
    """Per slot and per model: problems raised, raised alone, and of those the
    fixer's verdict (confirmed = fixed, withdrawn = not an issue)."""
    empty = {"problems": 0, "only": 0, "confirmed": 0, "withdrawn": 0}
    by_slot: dict[str, dict[str, int]] = {}
    by_model: dict[str, dict[str, int]] = {}
    for run in runs:
        for iteration, gate in run.rounds.items():
            models = _models(run, iteration)
            valid = _valid_labels(gate, _round_reviews(run, iteration))
            if len(valid) < 2:
                continue
            answers = _answers(run, iteration)
            for issue in _issues(gate):
                raised = [x for x in dict.fromkeys(_strings(issue.get("flagged_by"))) if x in valid]
                answer = answers.get(str(issue.get("key") or ""))
                for label in raised:
                    rows = (
                        by_slot.setdefault(label, dict(empty)),
                        by_model.setdefault(models.get(label, "unknown"), dict(empty)),
                    )
                    for row in rows:
                        row["problems"] += 1
                        if len(raised) == 1:
                            row["only"] += 1
                            row["confirmed"] += answer == "fixed"
                            row["withdrawn"] += answer == "not an issue"
    return {"by_slot": dict(sorted(by_slot.items())), "by_model": dict(sorted(by_model.items()))}


def needs_input(runs: Sequence[RunView]) -> dict[str, Any]:
    """Runs a fixer's question stopped, with the questions a person must answer."""
    questions = []
    stopped = 0
    for run in runs:
        asked = [r for r in run.events("escalate") if r.get("reason") == "needs-input"]
        stopped += bool(asked)
        for record in asked:
            entries = record.get("questions")
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict):
                    questions.append(
                        {
                            "run_id": run.run_id,
                            "round": record.get("iteration"),
                            "criterion": entry.get("criterion"),
                            "question": entry.get("question"),
                        }
                    )
    return {"runs": stopped, "questions": questions}


def recurring(runs: Sequence[RunView], min_runs: int = RECURRING_MIN_RUNS) -> list[dict[str, Any]]:
    """Criteria flagged in at least `min_runs` runs: candidates for a standing instruction."""
    counts: Counter[str] = Counter()
    for run in runs:
        counts.update({_criterion(i) for gate in run.rounds.values() for i in _issues(gate)})
    hits = [(c, n) for c, n in counts.items() if n >= min_runs]
    return [{"criterion": c, "runs": n} for c, n in sorted(hits, key=lambda cn: (-cn[1], cn[0]))]


def agreement(runs: Sequence[RunView]) -> dict[str, Any]:
    """`issues`: share of problems raised by two or more valid reviewers;
    `kappa`: Fleiss' kappa per criterion."""
    agreed = total = 0
    tables: dict[str, list[tuple[int, int]]] = {}
    criteria: set[str] = set()
    for run in runs:
        for iteration, gate in run.rounds.items():
            raters = _round_reviews(run, iteration)
            valid = _valid_labels(gate, raters)
            if len(valid) >= 2:
                for issue in _issues(gate):
                    total += 1
                    agreed += len(valid & set(_strings(issue.get("flagged_by")))) >= 2
            results = [
                _check_results(review) for review in raters.values() if review.get("valid") is True
            ]
            for result in results:
                criteria.update(result)
            if len(results) < 2:
                continue
            # A unit counts for the criteria every rater rated.
            for criterion in set(results[0]).intersection(*results[1:]):
                passes = [r[criterion] for r in results].count("PASS")
                tables.setdefault(criterion, []).append((passes, len(results) - passes))
    kappa = {c: fleiss_kappa(tables[c]) if c in tables else None for c in sorted(criteria)}
    return {"issues": _ratio(agreed, total), "kappa": kappa}


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a units x categories table of rating counts.

    Rows may have different rater totals (each at least 2): a unit's
    observed agreement is the share of agreeing ordered rater pairs,
    P_i = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1)); chance agreement uses the
    pooled category shares p_j = sum_i n_ij / sum_i n_i, P_e = sum_j p_j^2;
    kappa = (mean P_i - P_e) / (1 - P_e). With equal totals this is exactly
    Fleiss (1971). None when there are no units or no expected disagreement
    (every rating in one category), where kappa is undefined.
    """
    rows = [list(row) for row in table]
    if not rows:
        return None
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise ValueError("every unit must have a count for every category")
    if any(n < 0 for row in rows for n in row):
        raise ValueError("rating counts cannot be negative")
    totals = [sum(row) for row in rows]
    if any(n < 2 for n in totals):
        raise ValueError("every unit needs at least two ratings")
    observed = sum(
        (sum(n * n for n in row) - n_i) / (n_i * (n_i - 1))
        for row, n_i in zip(rows, totals, strict=True)
    ) / len(rows)
    grand = sum(totals)
    expected = sum((sum(row[j] for row in rows) / grand) ** 2 for j in range(width))
    if 1.0 - expected <= 1e-12:
        return None
    return (observed - expected) / (1.0 - expected)


def cost(runs: Sequence[RunView]) -> dict[str, Any]:
    """Verification and generation cost per run, totals, means and the multiple."""
    per_run: dict[str, dict[str, Any]] = {}
    for run in runs:
        # One pass over the run's records, each value kept in record order.
        spent: list[float | None] = []
        reads: list[float | None] = []
        writes: list[float | None] = []
        paid: list[float | None] = []
        gen_tokens: list[float | None] = []
        gen_usd: list[float | None] = []
        for r in run.records:
            if (
                r.get("tokens") is None
                and r.get("token_detail") is None
                and r.get("cost_usd") is None
            ):
                continue  # a record without costs (a gate, a ship) adds only unknowns
            if r.get("event") == "generate":
                gen_tokens.append(_tokens(r))
                gen_usd.append(_number(r.get("cost_usd")))
            else:
                spent.append(_tokens(r))
                reads.append(_cache(r, "cache_read"))
                writes.append(_cache(r, "cache_write"))
                paid.append(_number(r.get("cost_usd")))
        entry: dict[str, Any] = {
            "tokens": _sum(spent, whole=True),
            "cache_read_tokens": _sum(reads, whole=True),
            "cache_write_tokens": _sum(writes, whole=True),
            "cost_usd": _sum(paid),
            "generation_tokens": _sum(gen_tokens, whole=True),
            "generation_cost_usd": _sum(gen_usd),
        }
        if all(v is None for v in entry.values()):
            continue
        entry["multiple"], entry["basis"] = _multiple(entry)
        per_run[run.run_id] = entry
    multiples = [e["multiple"] for e in per_run.values() if e["multiple"] is not None]
    tokens = [e["tokens"] for e in per_run.values() if e["tokens"] is not None]
    usd = [e["cost_usd"] for e in per_run.values() if e["cost_usd"] is not None]
    return {
        "tokens_total": sum(tokens) if tokens else None,
        "cache_read_tokens_total": _sum(
            (e["cache_read_tokens"] for e in per_run.values()), whole=True
        ),
        "cache_write_tokens_total": _sum(
            (e["cache_write_tokens"] for e in per_run.values()), whole=True
        ),
        "cost_usd_total": sum(usd) if usd else None,
        "mean_tokens_per_run": sum(tokens) / len(tokens) if tokens else None,
        "mean_cost_usd_per_run": sum(usd) / len(usd) if usd else None,
        "mean_multiple": sum(multiples) / len(multiples) if multiples else None,
        "per_run": per_run,
    }


def targets(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target of the method with its value and whether it is met (None: no data)."""
    out: dict[str, dict[str, Any]] = {}
    for name, op, threshold, text in TARGETS:
        value = result.get(name)
        met: bool | None = None
        if isinstance(value, int | float):
            met = (
                value > threshold
                if op == ">"
                else value < threshold
                if op == "<"
                else value == threshold
            )
        out[name] = {"target": text, "value": value, "met": met}
    return out


def compute(
    records: Iterable[Mapping[str, Any]], *, since: date | datetime | None = None
) -> dict[str, Any]:
    """Every metric, JSON-ready (pass@k keys are the strings "1".."4")."""
    return compute_runs(since_filter(runs_from_records(records), since))


def compute_runs(runs: Sequence[RunView]) -> dict[str, Any]:
    """Every metric of runs already grouped (`santa view` groups them once for
    its pages and its charts)."""
    result: dict[str, Any] = {
        "runs": run_counts(runs),
        "first_pass_rate": first_pass_rate(runs),
        "pass_at_k": {str(k): v for k, v in pass_at_k(runs).items()},
        "mean_rounds_to_nice": mean_rounds_to_nice(runs),
        "escalation_rate": escalation_rate(runs),
        "escape_rate": escape_rate(runs),
        "taxonomy": taxonomy(runs),
        "taxonomy_secondary": taxonomy_secondary(runs),
        "agreement": agreement(runs),
        "recurring": recurring(runs),
        "reviewers": reviewers(runs),
        "needs_input": needs_input(runs),
        "cost": cost(runs),
    }
    result["targets"] = targets(result)
    return result


# -- tolerant field access ---------------------------------------------------


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _issues(gate: Mapping[str, Any]) -> list[dict[str, Any]]:
    issues = gate.get("issues")
    return [i for i in issues if isinstance(i, dict)] if isinstance(issues, list) else []


def _criterion(issue: Mapping[str, Any]) -> str:
    criterion = issue.get("criterion")
    return criterion if isinstance(criterion, str) and criterion else "unspecified"


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _round_reviews(run: RunView, iteration: int) -> Mapping[str, dict[str, Any]]:
    """The last review of each label for `iteration` up to the round's last gate."""
    return run.reviews.get(iteration, {})


def _valid_labels(gate: Mapping[str, Any], reviews: Mapping[str, Mapping[str, Any]]) -> set[str]:
    listed = gate.get("valid_reviewers")
    if isinstance(listed, list):
        return set(_strings(listed))
    return {label for label, r in reviews.items() if r.get("valid") is True}


def _check_results(review: Mapping[str, Any]) -> dict[str, str]:
    """criterion -> PASS/FAIL for the review's checks; a criterion rated twice counts as unrated."""
    results: dict[str, str] = {}
    twice: set[str] = set()
    checks = review.get("checks")
    for check in checks if isinstance(checks, list) else ():
        if not isinstance(check, dict):
            continue
        criterion, result = check.get("criterion"), check.get("result")
        if isinstance(criterion, str) and (result == "PASS" or result == "FAIL"):
            if criterion in results:
                twice.add(criterion)
            results[criterion] = result
    for criterion in twice:
        del results[criterion]
    return results


def _number(value: Any) -> float | None:
    """A logged token count or cost, or None: one below zero, NaN or infinite
    counts as unknown (a log edited by hand, or written before backends were
    checked), never as a saving."""
    if type(value) is float:  # the common case first: this runs for every record
        return value if value - value == 0.0 and value >= 0 else None  # NaN - NaN is NaN
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value >= 0 and abs(value) != float("inf") else None


def _tokens(record: Mapping[str, Any]) -> float | None:
    value = record.get("tokens")
    if isinstance(value, dict):
        # A map of parts may carry its own total: summing it with the parts
        # would count every token twice.
        total = _number(value.get("total"))
        if total is not None:
            return total
        parts = [_number(v) for v in value.values()]
        known = [p for p in parts if p is not None]
        return sum(known) if known else None
    return _number(value)


def _cache(record: Mapping[str, Any], part: Literal["cache_read", "cache_write"]) -> float | None:
    """One side of a record's cache split: `token_detail`, else a `tokens` map; None if absent."""
    for key in ("token_detail", "tokens"):
        value = record.get(key)
        if isinstance(value, dict) and part in value:
            return _number(value[part])
    return None


def _sum(values: Iterable[float | None], *, whole: bool = False) -> float | None:
    """Sum of the known values, None if none is known; `whole` keeps token counts integers."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    total = sum(known)
    return int(total) if whole and float(total).is_integer() else total


def _multiple(entry: Mapping[str, Any]) -> tuple[float | None, str | None]:
    if entry["cost_usd"] is not None and entry["generation_cost_usd"]:
        return entry["cost_usd"] / entry["generation_cost_usd"], "usd"
    if entry["tokens"] is not None and entry["generation_tokens"]:
        return entry["tokens"] / entry["generation_tokens"], "tokens"
    return None, None
