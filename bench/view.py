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
page (median of --repeat), the page's size, each against its limit, and the
time per run, whose ratio between the two rows shows how it scales.
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


def measure(home: Path, repeat: int) -> tuple[float, int, int]:
    times = []
    written = None
    for _ in range(repeat):
        start = time.perf_counter()
        written = write_view(log_path=home / "log.jsonl", home=home, out=home / "view.html")
        times.append(time.perf_counter() - start)
    assert written is not None
    return statistics.median(times), written.bytes, written.detailed


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
        print(
            f"{'runs':>7} {'folders':>8} {'write s':>8} {'x limit':>8} {'page MB':>8} "
            f"{'x limit':>8} {'ms/run':>7} {'detailed':>9}"
        )
        for n in sizes:
            home = base / f"busy-{n}"
            busy_project(real, home, n, min(args.folders, n))
            seconds, size, detailed = measure(home, args.repeat)
            print(
                f"{n:>7} {min(args.folders, n):>8} {seconds:>8.2f} {seconds / LIMIT_S:>8.2f} "
                f"{size / 1e6:>8.2f} {size / LIMIT_BYTES:>8.2f} {seconds / n * 1000:>7.3f} "
                f"{detailed:>9}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
