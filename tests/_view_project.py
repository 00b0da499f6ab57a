"""Real runs and a real batch for the viewer's tests and benchmark.

Why a scripted backend rather than hand-written state files: the viewer
must show what the loop really writes (log records, run folders, batch
state), so this drives `verify_sync` and `verify_batch_sync` with a
backend that reacts to planted phrases. Each phrase is one kind of
problem, so a test knows from the phrase alone what a page must show:

- `Released in 1999.` both reviewers flag it (factual-accuracy); fixed.
- `the --turbo flag` only reviewer B flags it (no-hallucination); fixed.
- no `## License` heading: both say it is missing (completeness); fixed.
- `Runs on Windows 95.` both flag it (technical-correctness); the fixer
  cannot fix it, so the run escalates at the cap.
- `Price: TBD` both flag it (completeness); the fixer asks for the price.
- any `<script>` or `onerror=` in the output: both flag the line
  (compliance), quoting the hostile text itself; fixed by removing it.

Batch items carry `BAD-<criterion>` markers, flagged on that criterion by
every reviewer whose rubric holds it (screens have a one-criterion rubric).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from _reviews import BASE_IDS, output_of, review_of
from santa_method.headless.api import VerifyOptions
from santa_method.headless.backends.base import FixReply, ReviewReply, Tokens
from santa_method.headless.batch import BatchOptions
from santa_method.state import log as runlog

CRITERIA = BASE_IDS
SPEC = "The README states the current release year, its real flags and a License section."
HOSTILE = '<script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2">'
_MARK = re.compile(r"BAD-([a-z-]+)")


def _problems(output: str, label: str, criteria: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def add(criterion: str, issue: str, **evidence: str) -> None:
        if criterion in criteria:
            found.append({"criterion": criterion, "issue": issue, **evidence})

    for line in output.splitlines():
        if "Released in 1999." in line:
            add("factual-accuracy", "the release year is wrong", quote="Released in 1999.")
        if "the --turbo flag" in line and label == "B":
            add("no-hallucination", "the tool has no --turbo flag", quote="the --turbo flag")
        if "Runs on Windows 95." in line:
            add("technical-correctness", "Windows 95 is not supported", quote="Runs on Windows 95.")
        if "Price: TBD" in line:
            add("completeness", "the price is missing", quote="Price: TBD")
        if "<script>" in line or "onerror=" in line:
            add(
                "compliance", "markup injected into the README: " + line.strip(), quote=line.strip()
            )
    for criterion in sorted(set(_MARK.findall(output))):
        add(criterion, f"planted defect in {criterion}", quote=f"BAD-{criterion}")
    if "# " in output and "## License" not in output:
        add("completeness", "there is no License section", missing="A License section")
    return found


class ScriptedModel:
    """A reviewer and fixer that follow the planted phrases (module docstring)."""

    name = "scripted"

    async def review(self, request: Any) -> ReviewReply:
        canary = request.round_part.rstrip().rsplit("santa-canary: ", 1)[1]
        criteria = [c for c in CRITERIA if f"### `{c}`" in request.prefix] or list(CRITERIA)
        problems = _problems(output_of(request.round_part), request.label, criteria)
        review = review_of(
            criteria,
            problems,
            detail=lambda c, result: (
                f"reviewer {request.label}: "
                + ("see the critical issues" if result == "FAIL" else "nothing wrong found")
            ),
            suggestions=[f"reviewer {request.label} suggests a usage example"],
            canary=canary,
        )
        model = "claude-sonnet-4-5" if request.label == "B" else "claude-haiku-4-5"
        return ReviewReply(
            text=json.dumps(review),
            tokens=Tokens(1200, 300, 800, 0),
            cost_usd=0.0042 if request.label == "B" else 0.0011,
            model=model,
        )

    async def fix(self, request: Any) -> FixReply:
        text = request.output
        notes = []
        steps = (
            ("Released in 1999.", "Released in 2024.", "fixed: the year is now 2024"),
            (
                ", and the --turbo flag makes it fast",
                "",
                "fixed: removed the invented --turbo flag",
            ),
        )
        for before, after, note in steps:
            if before in text:
                text = text.replace(before, after)
                notes.append(note)
        kept = [ln for ln in text.splitlines() if "<script>" not in ln and "onerror=" not in ln]
        if len(kept) != len(text.splitlines()):
            text = "\n".join(kept) + "\n"
            notes.append("fixed: removed the injected markup")
        if "# " in text and "## License" not in text:
            text = text.rstrip("\n") + "\n\n## License\nMIT\n"
            notes.append("fixed: added a License section")
        if "Price: TBD" in text:
            notes.append("needs input: what is the price of the Pro plan?")
        if "Runs on Windows 95." in text:
            notes.append("not an issue: the spec does not say which systems are supported")
        text = _MARK.sub("fine", text)
        report = "\n".join(f"{n}. {note}" for n, note in enumerate(notes, 1))
        return FixReply(
            output=text,
            notes=report,
            tokens=Tokens(900, 400, 0, 0),
            cost_usd=0.003,
            model="claude-sonnet-4-5",
        )


README_OK = "# Tool\n\nTool counts words in a file.\n\n## Usage\n`tool FILE`\n\n## License\nMIT\n"
README_YEAR = (
    "# Tool\n\nReleased in 1999. It counts words, and the --turbo flag makes it fast.\n\n"
    "## Usage\n`tool FILE`\n\n## License\nMIT\n"
)
README_NO_LICENSE = "# Tool\n\nTool counts words.\n\n## Usage\n`tool FILE`\n"
README_STUCK = "# Tool\n\nRuns on Windows 95.\n\n## License\nMIT\n"
README_PRICE = "# Tool\n\nPrice: TBD\n\n## License\nMIT\n"
README_HOSTILE = f"# Tool\n\nCounts words.\n{HOSTILE}\n\n## License\nMIT\n"

#: name -> (output, max_fixes); the verdicts follow from the phrases.
RUNS = {
    "clean": (README_OK, 3),
    "year": (README_YEAR, 3),
    "license": (README_NO_LICENSE, 3),
    "stuck": (README_STUCK, 1),
    "price": (README_PRICE, 1),
    "hostile": (README_HOSTILE, 3),
}


def run_all(root: Path, names: tuple[str, ...] = tuple(RUNS)) -> dict[str, Any]:
    """One real run per name, in the project at `root` (SANTA_HOME set by the caller)."""
    from santa_method.headless import verify_sync

    results = {}
    for name in names:
        output, max_fixes = RUNS[name]
        path = root / f"{name}.md"
        path.write_text(output, encoding="utf-8")
        results[name] = verify_sync(
            SPEC, path, options=VerifyOptions(backend=ScriptedModel(), max_fixes=max_fixes)
        )
    return results


def batch_texts(n: int, defective: set[int], criterion: str = "completeness") -> list[str]:
    return [
        f"Summary {i}.\n"
        + (f"BAD-{criterion} a part is missing.\n" if i in defective else "All parts present.\n")
        for i in range(n)
    ]


def run_batch(n: int = 24, defective: frozenset[int] = frozenset(range(0, 24, 3))) -> Any:
    """A real batch whose planted pattern is screened, fixed and resampled."""
    from santa_method.headless.batch import verify_batch_sync
    from santa_method.state.batches import BatchItem

    items = [
        BatchItem(id=f"item-{i:04d}", text=t, record={"id": f"item-{i:04d}", "output": t})
        for i, t in enumerate(batch_texts(n, set(defective)))
    ]
    return verify_batch_sync(
        items,
        "Each summary has all its parts.",
        options=BatchOptions(backend=ScriptedModel(), seed=7, minimum=8),
    )


def isolate(mp: pytest.MonkeyPatch, root: Path) -> None:
    """Make `root` the project: its own `.santa/`, no log from elsewhere."""
    mp.chdir(root)
    mp.setenv("CLAUDE_PROJECT_DIR", str(root))
    mp.setenv("SANTA_HOME", str(root / ".santa"))
    mp.delenv("SANTA_LOG", raising=False)


def built_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every run of RUNS and one batch in a new project (for a module-scoped fixture)."""
    root = tmp_path_factory.mktemp("viewed")
    with pytest.MonkeyPatch.context() as mp:
        isolate(mp, root)
        results = run_all(root)
        batch = run_batch()
        yield {"root": root, "runs": results, "batch": batch}


def clone_log(source: Path, dest: Path, copies: int, *, days: int = 120) -> list[str]:
    """A log of `copies` runs, each a copy of one of `source`'s real runs under a
    new id, their starts spread over `days` up to now; returns the new ids,
    oldest first. Real records, many runs: what a busy project's log holds."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in runlog.read(source).records:
        grouped.setdefault(record["run_id"], []).append(record)
    templates = list(grouped.values())
    start = datetime.now(UTC) - timedelta(days=days)
    ids = []
    with open(dest, "w", encoding="utf-8") as out:
        for i in range(copies):
            moment = start + timedelta(seconds=days * 86400 * i / copies)
            run_id = moment.strftime("%Y%m%d-%H%M%S") + f"-{i:06x}"
            ids.append(run_id)
            for k, record in enumerate(templates[i % len(templates)]):
                copy = {**record, "run_id": run_id}
                copy["ts"] = runlog.now_iso(moment + timedelta(milliseconds=k))
                out.write(json.dumps(copy, ensure_ascii=False) + "\n")
    return ids
