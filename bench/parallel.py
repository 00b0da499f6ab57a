"""Wall time of one review round against a fixed model latency, both backends.

    python bench/parallel.py [--latency S] [--repeat N] [--no-claude]

Why: reviewers of a round are independent, so a round should take about one
reply's latency however many reviewers it has. The scripted Messages API
(tests/e2e/stub_server.py) answers every reviewer after exactly `--latency`
seconds; the loop runs a real round (start_run, concurrent reviewers,
store_reply, gate) and we time it from the round's start to its gate.

Columns: `round s` (median of --repeat), `x latency` (round / latency; the
goal for the anthropic backend is 1.15 or less), and `x one call` (round /
the same backend's single-reviewer call, which removes fixed per-call
overhead such as the claude backend's CLI start-up). `cache-warm` rows show
the latency --cache-warm adds (the others wait for the first stream).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from e2e.conftest import make_claude_env  # noqa: E402
from e2e.stub_server import REVIEWER, Json, Reply, StubServer, first_user_text  # noqa: E402
from santa_method.core.rubric import load_rubric  # noqa: E402
from santa_method.core.schema import strict_schema  # noqa: E402
from santa_method.headless.backends.base import ReviewRequest  # noqa: E402
from santa_method.headless.loop import verify  # noqa: E402
from santa_method.headless.options import VerifyOptions  # noqa: E402

CRITERIA = load_rubric("base").ids


def _review(body: dict[str, Any], stream_delay: float) -> Reply:
    text = first_user_text(body).rstrip()
    canary = text.rsplit("santa-canary: ", 1)[-1] if "santa-canary: " in text else ""
    review = {
        "verdict": "PASS",
        "checks": [{"criterion": c, "result": "PASS", "detail": "ok"} for c in CRITERIA],
        "critical_issues": [],
        "suggestions": [],
        "canary": canary,
    }
    return Reply(Json(review), stream_delay=stream_delay)


def _backend(name: str, server: StubServer, home: Path) -> Any:
    if name == "anthropic":
        from santa_method.headless.backends.anthropic import AnthropicBackend

        return AnthropicBackend(base_url=server.base_url, api_key="bench")
    from santa_method.headless.backends.claude import ClaudeBackend

    return ClaudeBackend(env=make_claude_env(home, server), max_retries=1)


async def _round(backend: Any, reviewers: int, target: Path, cache_warm: bool) -> float:
    marks: dict[str, float] = {}

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind in ("round_start", "gate"):
            marks.setdefault(kind, time.perf_counter())

    result = await verify(
        "The text says hello.",
        target,
        options=VerifyOptions(
            reviewers=reviewers, backend=backend, cache_warm=cache_warm, on_event=on_event
        ),
    )
    if result.verdict != "NICE":
        raise SystemExit(f"benchmark round did not pass: {result.reasons}")
    return marks["gate"] - marks["round_start"]


async def _one_call(backend: Any, work: Path) -> float:
    request = ReviewRequest(
        prefix="# santa-method review assignment\n",
        round_part="hello\nsanta-canary: 00\n",
        schema=strict_schema(CRITERIA),
        project_dir=str(work),
    )
    started = time.perf_counter()
    await backend.review(request)
    elapsed = time.perf_counter() - started
    if hasattr(backend, "aclose"):
        await backend.aclose()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per reply (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per cell (default 3)")
    parser.add_argument("--no-claude", action="store_true", help="skip the claude backend")
    args = parser.parse_args()
    backends = ["anthropic"] if args.no_claude else ["anthropic", "claude"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.chdir(work)
        os.environ["CLAUDE_PROJECT_DIR"] = str(work)
        os.environ["SANTA_HOME"] = str(work / ".santa")
        os.environ.pop("SANTA_LOG", None)
        target = work / "out.md"
        target.write_text("hello\n", encoding="utf-8")
        for name in backends:
            for reviewers, warm in ((2, False), (3, False), (2, True)):
                # The stream begins at once and ends after `latency`, so
                # --cache-warm's wait for the first stream is what it costs.
                warm_split = args.latency / 2 if warm else 0.0
                script = {REVIEWER: lambda body, s=warm_split: _review(body, s)}
                with StubServer(script, delay=args.latency - warm_split) as server:
                    backend = _backend(name, server, work / "home")
                    single = statistics.median(
                        asyncio.run(_one_call(backend, work)) for _ in range(args.repeat)
                    )
                    times = [
                        asyncio.run(_round(backend, reviewers, target, warm))
                        for _ in range(args.repeat)
                    ]
                wall = statistics.median(times)
                rows.append((name, reviewers, "yes" if warm else "no", wall, single))
    print(f"one reply's latency: {args.latency:g}s, median of {args.repeat} round(s)\n")
    print(
        f"{'backend':<10} {'reviewers':>9} {'cache-warm':>10} {'round s':>8} {'x latency':>9} {'one call s':>10} {'x one call':>10}"
    )
    for name, reviewers, warm, wall, single in rows:
        print(
            f"{name:<10} {reviewers:>9} {warm:>10} {wall:>8.2f} {wall / args.latency:>9.2f} "
            f"{single:>10.2f} {wall / single:>10.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
