"""Draw the plugin's icon (.claude-plugin/icon.png) with the standard library only.

The plugin catalog wants a real 512x512 PNG. Keeping the drawing as code
makes the icon reproducible and reviewable without an image editor or a
binary dependency: a santa hat on a green tile, with a check mark on the
hat for "verified". Run: python scripts/make_icon.py [OUT]
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

SIZE = 512
SUPERSAMPLE = 3  # samples per axis per pixel, for smooth edges

GREEN = (24, 96, 64)
RED = (204, 36, 48)
WHITE = (250, 250, 250)

Point = tuple[float, float]
Shape = Callable[[float, float], bool]


def rounded_square(x0: float, y0: float, x1: float, y1: float, r: float) -> Shape:
    def inside(x: float, y: float) -> bool:
        cx = min(max(x, x0 + r), x1 - r)
        cy = min(max(y, y0 + r), y1 - r)
        return (x - cx) ** 2 + (y - cy) ** 2 <= r * r

    return inside


def circle(cx: float, cy: float, r: float) -> Shape:
    return lambda x, y: (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def polygon(points: list[Point]) -> Shape:
    """Even-odd rule, so concave outlines work too."""

    def inside(x: float, y: float) -> bool:
        hit = False
        for (ax, ay), (bx, by) in zip(points, points[1:] + points[:1], strict=True):
            if (ay > y) != (by > y) and x < ax + (y - ay) * (bx - ax) / (by - ay):
                hit = not hit
        return hit

    return inside


def stroke(points: list[Point], width: float) -> Shape:
    """A polyline with round joins and caps."""
    half2 = (width / 2) ** 2
    segments = list(pairwise(points))

    def inside(x: float, y: float) -> bool:
        for (ax, ay), (bx, by) in segments:
            dx, dy = bx - ax, by - ay
            t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
            if (x - ax - t * dx) ** 2 + (y - ay - t * dy) ** 2 <= half2:
                return True
        return False

    return inside


def scene() -> list[tuple[Shape, tuple[int, int, int]]]:
    """Back to front: tile, hat, brim, pompom, check mark."""
    hat = polygon(
        [
            (112, 372),
            (170, 230),
            (250, 138),
            (340, 100),
            (404, 118),
            (352, 168),
            (372, 260),
            (400, 372),
        ]
    )
    return [
        (rounded_square(16, 16, 496, 496, 96), GREEN),
        (hat, RED),
        (rounded_square(92, 340, 420, 412, 36), WHITE),
        (circle(404, 118, 44), WHITE),
        (stroke([(176, 262), (232, 314), (326, 196)], 34), WHITE),
    ]


def render() -> bytes:
    """Raw RGBA scanlines, each prefixed with PNG filter type 0."""
    shapes = scene()
    n = SUPERSAMPLE
    offsets = [(i + 0.5) / n for i in range(n)]
    rows = bytearray()
    for py in range(SIZE):
        rows.append(0)
        for px in range(SIZE):
            r = g = b = a = 0.0
            for oy in offsets:
                for ox in offsets:
                    x, y = px + ox, py + oy
                    colour = None
                    for inside, fill in reversed(shapes):
                        if inside(x, y):
                            colour = fill
                            break
                    if colour is not None:
                        r += colour[0]
                        g += colour[1]
                        b += colour[2]
                        a += 255
            samples = n * n
            coverage = a / 255
            if coverage:
                rows += bytes(
                    (
                        round(r / coverage),
                        round(g / coverage),
                        round(b / coverage),
                        round(a / samples),
                    )
                )
            else:
                rows += b"\0\0\0\0"
    return bytes(rows)


def png(raw: bytes) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parent.parent / ".claude-plugin" / "icon.png"
    out = Path(argv[0]) if argv else default
    out.write_bytes(png(render()))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
