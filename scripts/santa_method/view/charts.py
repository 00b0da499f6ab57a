"""Charts as inline SVG: a line over time and horizontal bars.

Why plain SVG and no charting library: the page must work offline from
`file://` under a policy that forbids every script but its own, and the
charts it needs are a handful of lines and bars. Drawn here in Python, they
show without the page's script, and cost a few kilobytes. Every label is
escaped (criterion names come from reviewers and rubrics).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from html import escape
from typing import Literal

Format = Literal["pct", "num", "usd", "count"]

WIDTH, HEIGHT = 420, 190
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 14, 34


def fmt(value: float | None, kind: Format) -> str:
    """A value as the page writes it; n/a when there is none."""
    if value is None:
        return "n/a"
    if kind == "pct":
        return f"{value * 100:.0f} %" if value in (0, 1) else f"{value * 100:.1f} %"
    if kind == "usd":
        return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    if kind == "count":
        return f"{value:,.0f}"
    return f"{value:.2f}"


def buckets(moments: Sequence[datetime]) -> tuple[str, list[str], list[int]]:
    """The unit (day, week or month) that gives a readable number of points
    for the time the runs span, its labels, and each moment's bucket index."""
    if not moments:
        return "day", [], []
    first, last = min(moments), max(moments)
    span = (last - first).days
    unit = "day" if span <= 45 else "week" if span <= 400 else "month"

    def key(m: datetime) -> str:
        if unit == "day":
            return m.strftime("%Y-%m-%d")
        if unit == "week":
            return (m - timedelta(days=m.weekday())).strftime("%Y-%m-%d")
        return m.strftime("%Y-%m")

    keys = [key(m) for m in moments]
    labels = sorted(set(keys))
    where = {k: i for i, k in enumerate(labels)}
    return unit, labels, [where[k] for k in keys]


def line_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    kind: Format,
    target: float | None = None,
    target_text: str = "",
    note: str = "",
) -> str:
    """One or two lines over `labels`; gaps where a value is None."""
    values = [v for _, vs in series for v in vs if v is not None]
    top = 1.0 if kind == "pct" else max([*values, target or 0.0, 1e-9]) * 1.15
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (len(labels) - 1) if len(labels) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / top)

    parts = [_frame(title)]
    for step in range(5):
        v = top * step / 4
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
            f'<text class="axis" x="{LEFT - 4}" y="{y(v) + 3:.1f}" text-anchor="end">'
            f"{escape(_tick(v, kind))}</text>"
        )
    if target is not None:
        parts.append(
            f'<line class="target" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(target):.1f}" '
            f'y2="{y(target):.1f}"/><text class="target-text" x="{WIDTH - RIGHT}" '
            f'y="{y(target) - 4:.1f}" text-anchor="end">{escape(target_text)}</text>'
        )
    for n, (name, vs) in enumerate(series):
        points = [(x(i), y(v), v, labels[i]) for i, v in enumerate(vs) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in points)
            parts.append(f'<polyline class="line s{n}" points="{path}"/>')
        for px, py, v, label in points:
            parts.append(
                f'<circle class="dot s{n}" cx="{px:.1f}" cy="{py:.1f}" r="3">'
                f"<title>{escape(f'{name}, {label}: {fmt(v, kind)}')}</title></circle>"
            )
    for i in sorted({0, len(labels) - 1}):
        if labels:
            anchor = "start" if i == 0 and len(labels) > 1 else "end" if i else "middle"
            parts.append(
                f'<text class="axis" x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 14}" '
                f'text-anchor="{anchor}">{escape(labels[i])}</text>'
            )
    if len(series) > 1:
        for n, (name, _) in enumerate(series):
            parts.append(
                f'<rect class="key s{n}" x="{LEFT + n * 130}" y="{HEIGHT - 12}" width="10" '
                f'height="10"/><text class="axis" x="{LEFT + n * 130 + 14}" y="{HEIGHT - 3}">'
                f"{escape(name)}</text>"
            )
    if not values:
        parts.append(_empty())
    return _figure(parts, note, title)


def bar_chart(
    title: str, bars: Sequence[tuple[str, float | None]], *, kind: Format, note: str = ""
) -> str:
    """Horizontal bars, one a row, labelled with their value."""
    shown = list(bars)[:12]
    row = 22
    height = TOP + 8 + row * max(len(shown), 1) + 8
    label_w = 150
    known = [abs(v) for _, v in shown if v is not None]
    top = 1.0 if kind == "pct" else max([*known, 1e-9])
    plot_w = WIDTH - label_w - 60
    parts = [_frame(title, height)]
    for i, (label, value) in enumerate(shown):
        cy = TOP + 8 + row * i
        short = label if len(label) <= 24 else label[:23] + "…"
        parts.append(
            f'<text class="axis" x="{label_w - 6}" y="{cy + 14}" text-anchor="end">'
            f"<title>{escape(label)}</title>{escape(short)}</text>"
        )
        w = 0.0 if value is None else plot_w * max(value, 0.0) / top
        parts.append(
            f'<rect class="bar" x="{label_w}" y="{cy + 3}" width="{w:.1f}" height="{row - 7}"/>'
            f'<text class="axis" x="{label_w + w + 4:.1f}" y="{cy + 14}">'
            f"{escape(fmt(value, kind))}</text>"
        )
    if not shown:
        parts.append(_empty(height))
    return _figure(parts, note, title)


def _frame(title: str, height: int = HEIGHT) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>"
    )


def _figure(parts: list[str], note: str, title: str) -> str:
    """The chart under its title, which is shown (an SVG title is only a tooltip)."""
    svg = "".join(parts) + "</svg>"
    caption = f"<figcaption>{escape(note)}</figcaption>" if note else ""
    return f'<h3 class="chart-title">{escape(title)}</h3>{svg}{caption}'


def _empty(height: int = HEIGHT) -> str:
    return (
        f'<text class="empty" x="{WIDTH / 2}" y="{height / 2}" text-anchor="middle">'
        "no data yet</text>"
    )


def _tick(value: float, kind: Format) -> str:
    if kind == "pct":
        return f"{value * 100:.0f}%"
    if kind == "usd":
        return f"${value:.3f}" if value < 1 else f"${value:.2f}"
    return f"{value:.1f}"
