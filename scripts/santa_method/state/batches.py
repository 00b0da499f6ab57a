"""A batch's files: its state, its event log, its items' texts, its report.

Why files, like runs: a batch of a thousand items outlives one process (an
interruption, a Message Batch that takes an hour, a Claude Code session
that records one item at a time), so everything it decided is on disk
before it acts on it, and `--resume` or `santa batch record` pick it up.

Layout, under `.santa/batches/<id>/`: `state.json` (the plan, the waves,
outcomes, screens, changes), `events.jsonl` (one line per thing that
happened, every change to an item among them), `work/` (changed item texts
when the originals are not edited in place), `fixed.jsonl` (JSONL items,
with the fixes applied), `report.md` and `report.json`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from santa_method.core import batch as rules
from santa_method.core.batch import ItemOutcome
from santa_method.core.errors import InputError
from santa_method.state import locks, store
from santa_method.state import log as runlog
from santa_method.state.atomic import replace_text
from santa_method.state.jsonfile import write_atomic
from santa_method.state.paths import ensure_santa_dir, santa_dir
from santa_method.state.redact import redact

STATE_VERSION = 1
_BATCH_ID = re.compile(r"b-\d{8}-\d{6}-[0-9a-f]{6}")


@dataclass(frozen=True)
class BatchItem:
    """One item of a batch. A file item has `path`; a JSONL item has `text`
    (the field under review) and its whole `record`."""

    id: str
    stratum: str | None = None
    path: str | None = None
    text: str | None = None
    record: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "stratum": self.stratum, "path": self.path}


def batches_dir() -> Path:
    return santa_dir() / "batches"


def batch_dir(batch_id: str) -> Path:
    """The batch's folder; the id is checked so it can never name a path elsewhere."""
    if not isinstance(batch_id, str) or not _BATCH_ID.fullmatch(batch_id):
        raise InputError(f"'{batch_id}' is not a batch id")
    return batches_dir() / batch_id


def new_batch_id() -> str:
    return "b-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def create(state: dict[str, Any]) -> Path:
    """Write a new batch's folder and first state; returns the folder."""
    base = ensure_santa_dir() / "batches"
    base.mkdir(exist_ok=True)
    if not (base / ".gitignore").exists():
        replace_text(base / ".gitignore", "*\n")
    folder = batch_dir(state["id"])
    folder.mkdir(parents=True)
    (folder / "work").mkdir()
    state.setdefault("version", STATE_VERSION)
    state.setdefault("created", runlog.now_iso())
    save(state)
    return folder


def open_batch(
    *,
    items: Sequence[BatchItem],
    spec: str,
    options: dict[str, Any],
    seed: int,
    mode: str,
    fingerprint_: str,
) -> dict[str, Any]:
    """A new batch's state, saved with its spec; no wave drawn yet."""
    if not spec.strip():
        raise InputError("the spec is empty; say what the outputs must do")
    state: dict[str, Any] = {
        "id": new_batch_id(),
        "status": "open",
        "mode": mode,
        "fingerprint": fingerprint_,
        "seed": seed,
        "options": options,
        # What each item holds now: a run counts only for this content, and an
        # item changed behind the batch's back blocks acceptance.
        "items": [
            {
                **i.to_json(),
                "sha256": None
                if i.id in set(options.get("exclude") or ())
                else store.sha256(item_text(i)),
            }
            for i in items
        ],
        "spec_sha256": store.sha256(spec),
        "waves": [],
        "cost_usd": 0.0,
        "tokens": {},
        "changed": {},
    }
    folder = create(state)
    replace_text(folder / "spec.md", spec)
    return state


def save(state: dict[str, Any]) -> None:
    write_atomic(batch_dir(state["id"]) / "state.json", state, indent=1)


def load(batch_id: str) -> dict[str, Any]:
    path = batch_dir(batch_id) / "state.json"
    if not path.exists():
        raise InputError(f"no batch '{batch_id}' under {batches_dir()}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"the state of batch '{batch_id}' is unreadable: {exc}") from None


@contextlib.contextmanager
def locked(batch_id: str) -> Iterator[dict[str, Any]]:
    """The state under an exclusive lock, saved on a clean exit only (two
    `santa batch record` calls at once must not lose each other's item)."""
    folder = batch_dir(batch_id)
    load(batch_id)
    with open(folder / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load(batch_id)
        yield state
        save(state)


@contextlib.contextmanager
def held(batch_id: str) -> Iterator[None]:
    """One process drives a batch at a time (two would pay for the same
    reviews twice and overwrite each other's state)."""
    refusal = f"batch {batch_id} is being run by another process ({{holder}}) right now"
    with locks.hold(batch_dir(batch_id) / ".running", refusal):
        yield


def event(batch_id: str, kind: str, **data: Any) -> None:
    """One line in the batch's own event log (its items are not runs, so
    this is not the project's iteration log)."""
    record = {"ts": runlog.now_iso(), "batch_id": batch_id, "event": kind, **data}
    # A record like the iteration log: redacted, its ids and hashes verbatim.
    record = redact(record, skip_keys=runlog.STRUCTURAL_FIELDS | {"batch_id", "item"})
    line = json.dumps(record, ensure_ascii=True, separators=(",", ":"))
    with open(batch_dir(batch_id) / "events.jsonl", "a", encoding="utf-8") as out:
        out.write(line + "\n")


def events(batch_id: str) -> list[dict[str, Any]]:
    path = batch_dir(batch_id) / "events.jsonl"
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return found


def list_ids() -> list[str]:
    base = batches_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if _BATCH_ID.fullmatch(p.name))


def fingerprint(items: Sequence[BatchItem], spec: str, options: Mapping[str, Any]) -> str:
    """What makes two invocations the same batch (for --resume)."""
    body = json.dumps(
        {"items": [i.id for i in items], "spec": store.sha256(spec), "options": dict(options)},
        sort_keys=True,
    )
    return store.sha256(body)


def find_resumable(fingerprint_: str) -> str | None:
    """The newest open batch started with the same items, spec and options."""
    for batch_id in reversed(list_ids()):
        with contextlib.suppress(InputError):
            state = load(batch_id)
            if state.get("status") == "open" and state.get("fingerprint") == fingerprint_:
                return batch_id
    return None


# ---------------------------------------------------------------- item texts


class ItemStore:
    """Reads and writes item texts, so a fix never loses the original.

    Files are edited only with `in_place`; otherwise a changed item's text
    lives in the batch's `work/` folder and every later read sees it.
    JSONL items are never edited in place: `export()` writes `fixed.jsonl`.
    """

    def __init__(self, state: dict[str, Any], items: Sequence[BatchItem], field: str) -> None:
        self.state = state
        self.items = {i.id: i for i in items}
        self.order = [i.id for i in items]
        self.field = field
        self.in_place = bool(state["options"].get("in_place"))
        self.state.setdefault("changed", {})

    @property
    def folder(self) -> Path:
        return batch_dir(self.state["id"])

    def text(self, item_id: str) -> str:
        changed = self.state["changed"].get(item_id)
        if changed:
            return Path(changed).read_text(encoding="utf-8")
        item = self.items[item_id]
        if item.path is not None:
            try:
                return Path(item.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read item '{item_id}': {exc}") from None
        assert item.text is not None
        return item.text

    def write(self, item_id: str, text: str) -> str:
        """Store a new text for the item; returns where it is."""
        item = self.items[item_id]
        self.known(item_id, text)
        if item.path is not None and self.in_place:
            replace_text(Path(item.path), text)
            return item.path
        index = self.order.index(item_id)
        name = Path(item.path).name if item.path else "item.txt"
        path = self.folder / "work" / f"{index:06d}-{name}"
        replace_text(path, text)
        self.state["changed"][item_id] = str(path)
        return str(path)

    def known(self, item_id: str, text: str) -> None:
        """The batch changed the item itself: this is its content now."""
        for entry in self.state["items"]:
            if entry["id"] == item_id:
                entry["sha256"] = store.sha256(text)

    def drifted(self, ids: Sequence[str]) -> list[str]:
        """Items whose content is not what the batch last knew (edited behind its back)."""
        found = []
        known = {e["id"]: e.get("sha256") for e in self.state["items"]}
        for item_id in ids:
            try:
                now = store.sha256(self.text(item_id))
            except InputError:
                now = None
            if known.get(item_id) is not None and now != known[item_id]:
                found.append(item_id)
        return found

    def export(self) -> str | None:
        """`fixed.jsonl`: every JSONL item, with the changed ones' field replaced."""
        jsonl = [i for i in self.order if self.items[i].record is not None]
        changed = {i for i in jsonl if self.text(i) != (self.items[i].record or {}).get(self.field)}
        if not changed:
            return None
        lines = []
        for item_id in jsonl:
            record = dict(self.items[item_id].record or {})
            if item_id in changed:
                record[self.field] = self.text(item_id)
            lines.append(json.dumps(record, ensure_ascii=False))
        path = self.folder / "fixed.jsonl"
        replace_text(path, "\n".join(lines) + "\n")
        return str(path)


def item_text(item: BatchItem) -> str:
    """An item's text, which must be non-empty UTF-8: said before any money
    is spent (an item no run can review would strand the batch later)."""
    if item.path is None:
        text = item.text or ""
    else:
        from santa_method.core.files import read_text

        try:
            text = read_text(item.path, "item")
        except InputError as exc:
            raise InputError(f"{exc}; leave it out with --exclude") from None
    if not text.strip():
        raise InputError(
            f"item '{item.id}' is empty: there is nothing to verify; leave it out with --exclude"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"item '{item.id}' holds a lone surrogate (\\ud800-\\udfff), which is not text; "
            "fix it or leave it out with --exclude"
        ) from None
    return text


def check_readable(item: BatchItem) -> None:
    item_text(item)


def first_draw(state: dict[str, Any], store: ItemStore) -> dict[str, Any]:
    """Draw a new batch's first sample; a plan that cannot be drawn removes
    the batch again rather than leave an open batch behind."""
    import shutil

    try:
        return Book(state, store).draw()
    except BaseException:
        shutil.rmtree(batch_dir(state["id"]), ignore_errors=True)
        raise


def jsonl_text(record: Mapping[str, Any], field: str, item_id: str) -> str:
    """The text under review of a JSONL item: its `field`, which must be a string."""
    value = record.get(field)
    if not isinstance(value, str):
        raise InputError(
            f"item '{item_id}' has no string field '{field}' to verify; name it with --field"
        )
    return value


# ---------------------------------------------------------------- outcomes of runs


def outcome_of_run(item_id: str, run_id: str) -> ItemOutcome:
    """An item's outcome read from its finished run (how `santa batch record`
    and a resumed batch learn what a run decided, without trusting anyone)."""
    state = store.load(run_id)
    if state["status"] == "open":
        raise InputError(f"run {run_id} is still open; finish it (ship or escalate) first")
    first = state["rounds"][0]
    criteria: list[str] = []
    for gate in first.get("gates") or []:
        # A problem counts once, under its primary criterion (core/batch.py).
        criteria.extend(issue["criterion"] for issue in gate.get("issues") or [])
    status = "escalated"
    if state["status"] == "shipped":
        status = "fixed" if criteria or len(state["rounds"]) > 1 else "passed"
    records = (
        [r for r in runlog.read(state["log"]).records if r.get("run_id") == run_id]
        if Path(state["log"]).exists()
        else []
    )
    report = None
    if state["status"] == "escalated":
        candidate = store.run_dir(run_id) / "report.md"
        report = str(candidate) if candidate.exists() else None
    return ItemOutcome(
        item=item_id,
        run_id=run_id,
        status=status,  # type: ignore[arg-type]
        criteria=tuple(dict.fromkeys(criteria)),
        rounds=len(state["rounds"]),
        cost_usd=runlog.logged_cost(records, run_id),
        report=report,
    )


# ---------------------------------------------------------------- the book


ESTIMATE_CONFIDENCE = 0.95


class Book:
    """A batch's bookkeeping, the same for `santa batch` and `santa batch
    plan/record`: which items a wave holds, what the rules decide after it,
    and the verdict with its numbers. Who reviews is not its business."""

    def __init__(self, state: dict[str, Any], store: ItemStore) -> None:
        self.state = state
        self.store = store
        self.options: dict[str, Any] = state["options"]

    @property
    def batch_id(self) -> str:
        return str(self.state["id"])

    @property
    def waves(self) -> list[dict[str, Any]]:
        return self.state["waves"]

    def save(self) -> None:
        save(self.state)

    def outcomes(self) -> list[ItemOutcome]:
        return [ItemOutcome.from_json(o) for w in self.waves for o in w["outcomes"].values()]

    def verified_ids(self) -> set[str]:
        return {o.item for o in self.outcomes()}

    def population(self) -> int:
        excluded = set(self.options["exclude"])
        return sum(1 for i in self.store.order if i not in excluded)

    def unverified(self) -> list[str]:
        """Items of the batch no wave has verified (the ones a screen covers)."""
        done = self.verified_ids()
        excluded = set(self.options["exclude"])
        return [i for i in self.store.order if i not in done and i not in excluded]

    def draw(self) -> dict[str, Any]:
        """The next wave: a fresh sample that excludes every verified item."""
        from santa_method.core.sampling import make_plan

        o = self.options
        number = len(self.waves) + 1
        strata = None
        if o["stratified"]:
            strata = {i["id"]: i.get("stratum") or "(none)" for i in self.state["items"]}
        try:
            plan = make_plan(
                self.store.order,
                seed=(self.state["seed"] + number - 1) % 2**31,
                rate=o["rate"],
                minimum=o["minimum"],
                prevalence=o["prevalence"],
                confidence=o["confidence"],
                strata=strata,
                exclude=[*o["exclude"], *sorted(self.verified_ids())],
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if number == 1 and plan.population == 0:
            raise InputError("every item is excluded; there is nothing to verify")
        wave = {
            "number": number,
            "drawn": runlog.now_iso(),
            "plan": plan.to_json(),
            "items": list(plan.items),
            "outcomes": {},
            "running": {},
            "skipped": [],
            "screened": False,
            "screens": {},
            "decision": None,
        }
        self.waves.append(wave)
        self.save()
        event(self.batch_id, "wave", number=number, statement=plan.statement())
        return wave

    def current(self) -> dict[str, Any] | None:
        """The wave still being worked on, if any."""
        if self.waves and self.waves[-1]["decision"] is None:
            return self.waves[-1]
        return None

    def concluded(self) -> rules.Decision | None:
        """The last wave's decision when it ended the batch but the verdict
        was never written (an interruption between the two)."""
        if self.state["status"] != "open" or not self.waves:
            return None
        decision = self.waves[-1]["decision"]
        if decision is None or decision["step"] == "resample":
            return None
        return rules.Decision(
            decision["step"], tuple(decision["criteria"]), tuple(decision["reasons"])
        )

    def decide(self, wave: dict[str, Any]) -> rules.Decision:
        # A screen's verdict stands until the item is verified by a run of its own.
        verified = self.verified_ids()
        screens = [
            found
            for w in self.waves
            for by_item in w["screens"].values()
            for item, found in by_item.items()
            if item not in verified
        ]
        return rules.decide(
            [ItemOutcome.from_json(o) for o in wave["outcomes"].values()],
            all_outcomes=self.outcomes(),
            screened=wave["screened"],
            unscreened=sum(1 for f in screens if f["result"] == "unusable"),
            unfixed=sum(1 for f in screens if f["result"] == "flagged" and not f.get("fixed")),
            unverified_left=wave["plan"]["population"] - len(wave["items"]),
            resamples_left=self.options["max_resamples"] - (len(self.waves) - 1),
            min_items=self.options["systemic_min"],
            share=self.options["systemic_share"],
            screenable={c["id"] for c in self.options["rubric"]["criteria"]},
            screen_fixes=sum(
                1
                for by_item in wave["screens"].values()
                for f in by_item.values()
                if f.get("fixed")
            ),
        )

    def conclude(self, wave: dict[str, Any], decision: rules.Decision) -> None:
        wave["decision"] = decision.to_json()
        self.save()
        event(self.batch_id, "decision", wave=wave["number"], **decision.to_json())

    def audit(self) -> list[str]:
        """Why the batch's recorded verdict does not hold up against its runs
        (a state file edited by hand, say); empty when it does. The runs
        have protections of their own, so a verdict is only as good as them."""
        problems: list[str] = []
        if self.state["status"] not in ("accepted", "escalated"):
            return problems
        if self.state.get("verdict") != self.state["status"].upper():
            problems.append("the verdict and the status disagree")
        for wave in self.waves:
            missing = [i for i in wave["items"] if i not in wave["outcomes"]]
            if missing and self.state["status"] == "accepted":
                problems.append(f"sample {wave['number']} has items never verified")
            for item, recorded in wave["outcomes"].items():
                if not recorded.get("run_id"):
                    continue
                try:
                    actual = outcome_of_run(item, recorded["run_id"])
                except InputError as exc:
                    problems.append(f"item {item}: {exc}")
                    continue
                if actual.status != recorded["status"] or list(actual.criteria) != list(
                    recorded["criteria"]
                ):
                    problems.append(f"item {item}: its run {recorded['run_id']} says otherwise")
        if self.state["status"] == "accepted":
            last = self.waves[-1] if self.waves else None
            if last is None or self.decide(last).step != "accept":
                problems.append("the batch's own rules do not accept its last sample")
        return problems

    def finish(
        self, decision: rules.Decision, *, tokens: dict[str, int] | None, warnings: Sequence[str]
    ) -> dict[str, Any]:
        """Close the batch: verdict, estimate, guarantee, cost; write the report."""
        from santa_method.core.sampling import estimate_defect_rate
        from santa_method.state.batch_report import write_batch_report

        if decision.step == "accept":
            excluded = set(self.options["exclude"])
            drifted = self.store.drifted([i for i in self.store.order if i not in excluded])
            if drifted:
                decision = rules.Decision(
                    "escalate",
                    reasons=(
                        f"{len(drifted)} item(s) changed since the batch last saw them: "
                        f"{', '.join(drifted[:10])}",
                    ),
                )
        outcomes = self.outcomes()
        verdict = "ACCEPTED" if decision.step == "accept" else "ESCALATED"
        verified = [w for w in self.waves if w["outcomes"]]
        last = verified[-1] if verified else None

        def estimate(wave: dict[str, Any]) -> Any:
            found = [ItemOutcome.from_json(o) for o in wave["outcomes"].values()]
            if wave["plan"].get("strata") is not None:
                return _Unweighted(sum(1 for o in found if o.failed), len(found))
            return estimate_defect_rate(
                sum(1 for o in found if o.failed),
                len(found),
                wave["plan"]["population"],
                ESTIMATE_CONFIDENCE,
            )

        # The first sample is a random draw from the batch as generated: it
        # estimates the generator's defect rate. The last one, drawn after
        # screens and fixes from the items never verified, estimates what
        # is left.
        first_rate = estimate(verified[0]) if verified else None
        last_rate = estimate(last) if last is not None and len(verified) > 1 else None
        statement = "no item was verified"
        if first_rate is not None:
            statement = "as generated: " + first_rate.statement()
        if last_rate is not None:
            statement += "; after fixes, last sample: " + last_rate.statement()
        if verdict != "ACCEPTED" or last is None:
            guarantee = "none: the batch was not accepted"
        elif not self.unverified():
            guarantee = f"every one of the {self.population()} items was verified"
        else:
            guarantee = _guarantee(verified)
        systemic = sorted({c for w in self.waves for c in w["screens"]} | set(decision.criteria))
        self.state.update(
            status="accepted" if verdict == "ACCEPTED" else "escalated",
            verdict=verdict,
            reasons=list(decision.reasons),
        )
        folder = batch_dir(self.batch_id)
        data = {
            "verdict": verdict,
            "batch_id": self.batch_id,
            "population": self.population(),
            "reviewed": len(outcomes),
            "items": [o.to_json() for o in outcomes],
            "waves": [wave_summary(w) for w in self.waves],
            "failures_by_criterion": rules.failures_by_criterion(outcomes),
            "systemic": systemic,
            "estimate": first_rate.to_json() if first_rate is not None else None,
            "estimate_after_fixes": last_rate.to_json() if last_rate is not None else None,
            "estimate_statement": statement,
            "guarantee": guarantee,
            "seed": self.state["seed"],
            "cost_usd": self.state.get("cost_usd"),
            "cost_relative_to_all": rules.cost_relative_to_all(
                self.state.get("cost_usd"), outcomes, self.population()
            ),
            "tokens": tokens,
            "changed": dict(self.state.get("changed") or {}),
            "fixed_jsonl": self.store.export(),
            "report": str(folder / "report.md"),
            "reasons": list(decision.reasons),
            "warnings": list(dict.fromkeys(warnings)),
        }
        write_batch_report(folder, data)
        self.save()
        event(self.batch_id, "verdict", verdict=verdict, reasons=list(decision.reasons))
        return data


@dataclass(frozen=True)
class _Unweighted:
    """A stratified sample's failures, without an interval: its items were
    not drawn with equal chances (one per stratum at least), so the interval
    of a simple random sample would not hold."""

    defects: int
    sampled: int

    def statement(self) -> str:
        return (
            f"{self.defects} of {self.sampled} sampled items failed; no interval is given, "
            "as a stratified sample does not draw items with equal chances"
        )

    def to_json(self) -> dict[str, Any]:
        return {"defects": self.defects, "sampled": self.sampled, "interval": None}


def _guarantee(waves: Sequence[dict[str, Any]]) -> str:
    """The last sample's guarantee, and, when several were drawn, what the
    whole procedure can still promise: the batch accepts when one sample
    comes back clean, so each draw was a chance to miss (a union bound)."""
    import math

    last = waves[-1]["plan"]
    if len(waves) == 1:
        return str(last["statement"])
    miss = math.fsum(1 - (w["plan"]["detection_probability"] or 0.0) for w in waves)
    overall = math.floor(max(0.0, 1 - miss) * 1000 + 1e-9) / 10
    return (
        f"{last['statement']}; over the {len(waves)} samples drawn, a defect in "
        f"{last['prevalence'] * 100:g} % of the items left is seen with probability at least "
        f"{overall:g} %"
    )


def wave_summary(wave: dict[str, Any]) -> dict[str, Any]:
    outcomes = [ItemOutcome.from_json(o) for o in wave["outcomes"].values()]
    screens = {
        criterion: {
            kind: sum(1 for s in found.values() if s["result"] == kind)
            for kind in ("clean", "flagged", "unusable")
        }
        | {"fixed": sum(1 for s in found.values() if s.get("fixed"))}
        for criterion, found in wave["screens"].items()
    }
    return {
        "number": wave["number"],
        "statement": wave["plan"]["statement"],
        "n": len(wave["items"]),
        "population": wave["plan"]["population"],
        "verified": len(outcomes),
        "failed": sum(1 for o in outcomes if o.failed),
        "skipped": list(wave["skipped"]),
        "failures_by_criterion": rules.failures_by_criterion(outcomes),
        "screens": screens,
        "decision": wave["decision"],
    }
