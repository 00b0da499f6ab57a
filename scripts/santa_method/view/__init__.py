"""`santa view`: one self-contained HTML page of the project's runs, batches and metrics.

The I/O edge of the viewer: `write_view` reads (`view.sources`), builds the
page's data and HTML with pure functions (`view.model`, `view.page`) and
writes the file atomically, so a browser that reloads it mid-write sees the
old page or the new one. The page works offline from `file://`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

__all__ = ["Written", "default_out", "write_view"]


@dataclass(frozen=True)
class Written:
    """What `write_view` wrote: where, how big, and what it holds."""

    path: Path
    bytes: int
    runs: int
    batches: int
    detailed: int


def default_out(home: Path) -> Path:
    """`.santa/view/index.html`, in a folder git ignores like the run folders."""
    return home / "view" / "index.html"


def write_view(
    *,
    log_path: Path,
    home: Path,
    out: Path | None = None,
    since: date | datetime | None = None,
    since_text: str | None = None,
) -> Written:
    """Write the page for the log at `log_path` and the folders under `home`."""
    from santa_method.state.atomic import replace_bytes, replace_text, write_out
    from santa_method.state.log import gc_paused, now_iso
    from santa_method.view.model import PAGE_BUDGET, fit, page_data
    from santa_method.view.page import embed_json, render
    from santa_method.view.sources import collect

    with gc_paused():  # a page of 10,000 runs is a million small objects, none in a cycle
        src = collect(log_path, home, since)
        data = page_data(src, generated=now_iso(), since=since_text)
        # Encoded once; only a page over its budget is trimmed and encoded again.
        embedded = embed_json(data)
        size = len(embedded.encode("utf-8", "replace"))
        if size > PAGE_BUDGET:
            embedded = embed_json(fit(data, PAGE_BUDGET, size))
        html = render(src, data, embedded).encode("utf-8", "replace")
    target = out if out is not None else default_out(home)
    if out is None:
        target.parent.mkdir(parents=True, exist_ok=True)
        ignore = target.parent / ".gitignore"
        if not ignore.exists():
            replace_text(ignore, "*\n")
        replace_bytes(target, html)
    else:
        write_out(target, html)  # where the user pointed: a file, or a stream
    return Written(
        target,
        len(html),
        len(data["runs"]),
        len(data["batches"]),
        sum(1 for r in data["runs"] if r["detail"] is not None),
    )
