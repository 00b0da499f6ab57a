"""How long `santa view` takes, and how big its page is, for a busy project's log.

    python bench/view.py [--runs 10000] [--folders 300]

Why: the page must stay quick to write and to open as the log grows (the
goal: 10,000 runs in under 10 s, a page under 10 MB). The log is made of
real runs: the scripted model of the viewer's tests (tests/_view_project.py)
drives the headless loop through every kind of run once (NICE at once, fixed
then NICE, escalated, a fixer's question, hostile text) and a batch; those
runs' records are then copied under new ids, spread over 120 days, and the
newest `--folders` copies keep a run folder (copied from the real one), as
run folders are git-ignored and usually only recent ones remain.

Columns, for 1,000 and for --runs runs side by side: seconds to write the
page (median of --repeat) against the limit, the CPU seconds of this
process (what the machine's other load changes least), the page's size
against its limit, the time per run (its ratio between the two rows shows
how it scales), and how many runs have their details in the page (the
goal: every one). Then where the time goes for the larger log, step by
step. JSON is read and written with orjson when the `view` extra is
installed (`pip install '/path/to/santa-method[view]'`; the dev extra has it), else
with json: the first line says which.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

import _view_project as vp  # noqa: E402
from santa_method.view import write_view  # noqa: E402

LIMIT_S = 10.0
LIMIT_BYTES = 10_000_000


def real_project(root: Path) -> Path:
    """Real runs and a batch in `root`; returns its `.santa/`."""
    os.environ["SANTA_HOME"] = str(root / ".santa")
    os.environ["CLAUDE_PROJECT_DIR"] = str(root)
    os.environ.pop("SANTA_LOG", None)
    os.chdir(root)
    vp.run_all(root)
    vp.run_batch()
    return root / ".santa"


def busy_project(real: Path, home: Path, runs: int, folders: int) -> None:
    """`runs` copies of the real runs, the newest `folders` with a run folder."""
    home.mkdir(parents=True)
    ids = vp.clone_log(real / "log.jsonl", home / "log.jsonl", runs)
    originals = sorted(p for p in (real / "runs").iterdir() if (p / "state.json").exists())
    originals = [p for p in originals if len(list(p.glob("round-*"))) > 1] or originals
    for i, run_id in enumerate(ids[-folders:] if folders else []):
        shutil.copytree(originals[i % len(originals)], home / "runs" / run_id)
    shutil.copytree(real / "batches", home / "batches")


def measure(home: Path, repeat: int) -> tuple[float, float, int, int]:
    """Median wall and CPU seconds of `repeat` writes, the page's bytes, runs with details."""
    times, cpu = [], []
    written = None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        written = write_view(log_path=home / "log.jsonl", home=home, out=home / "view.html")
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert written is not None
    return statistics.median(times), statistics.median(cpu), written.bytes, written.detailed


def phases(home: Path) -> list[tuple[str, float]]:
    """Where the time goes, each step once as `write_view` takes it (the run
    folders' share is what `collect` takes beyond the log and the metrics)."""
    from santa_method.state import log as runlog
    from santa_method.state.metrics import compute_runs, runs_from_log
    from santa_method.view.model import page_data
    from santa_method.view.page import embed_json, render
    from santa_method.view.sources import collect

    out = []
    with runlog.gc_paused():
        start = time.perf_counter()
        read = runlog.read(home / "log.jsonl")
        out.append(("read the log", time.perf_counter() - start))
        start = time.perf_counter()
        compute_runs(runs_from_log(read))
        out.append(("metrics", time.perf_counter() - start))
        start = time.perf_counter()
        src = collect(home / "log.jsonl", home)
        out.append(("run folders", time.perf_counter() - start - out[0][1] - out[1][1]))
        start = time.perf_counter()
        data = page_data(src, generated="now", since=None)
        out.append(("page data", time.perf_counter() - start))
        start = time.perf_counter()
        render(src, data, embed_json(data))
        out.append(("JSON and HTML", time.perf_counter() - start))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--folders", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "real").mkdir()
        real = real_project(base / "real")
        sizes = sorted({min(1_000, args.runs), args.runs})
        from santa_method.state.fastjson import fast_loads

        print(f"JSON: {'orjson' if fast_loads() else 'json (orjson is not installed)'}")
        print(
            f"{'runs':>7} {'folders':>8} {'write s':>8} {'x limit':>8} {'CPU s':>6} "
            f"{'page MB':>8} {'x limit':>8} {'ms/run':>7} {'detailed':>9}"
        )
        for n in sizes:
            home = base / f"busy-{n}"
            busy_project(real, home, n, min(args.folders, n))
            seconds, cpu, size, detailed = measure(home, args.repeat)
            print(
                f"{n:>7} {min(args.folders, n):>8} {seconds:>8.2f} {seconds / LIMIT_S:>8.2f} "
                f"{cpu:>6.2f} {size / 1e6:>8.2f} {size / LIMIT_BYTES:>8.2f} "
                f"{seconds / n * 1000:>7.3f} {detailed:>9}"
            )
        print(f"\nwhere the time goes for {sizes[-1]} runs (one pass of each step, s):")
        for name, seconds in phases(base / f"busy-{sizes[-1]}"):
            print(f"  {name:<14} {seconds:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
