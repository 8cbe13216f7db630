"""Grid helpers of the demo generator: cell centres, distances to boxes and lines, chainages."""

from __future__ import annotations

import math

import numpy as np

from .spec import CELL, HEIGHT, NCOLS, NROWS


def _grid() -> tuple[np.ndarray, np.ndarray]:
    u = (np.arange(NCOLS) + 0.5) * CELL
    v = HEIGHT - (np.arange(NROWS) + 0.5) * CELL
    return np.meshgrid(u, v)


def _rc(u: float, v: float) -> tuple[int, int]:
    return int((HEIGHT - v) // CELL), int(u // CELL)


def _cell_centre(u: float, v: float) -> tuple[float, float]:
    return (math.floor(u / CELL) + 0.5) * CELL, (math.floor(v / CELL) + 0.5) * CELL


def _box_dist(U: np.ndarray, V: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    u0, v0, u1, v1 = box
    du = np.maximum(np.maximum(u0 - U, 0.0), U - u1)
    dv = np.maximum(np.maximum(v0 - V, 0.0), V - v1)
    return np.hypot(du, dv)


def _seg_dist(U: np.ndarray, V: np.ndarray, a: tuple[float, float], b: tuple[float, float]):
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = np.clip(((U - ax) * dx + (V - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
    return np.hypot(U - (ax + t * dx), V - (ay + t * dy))


def _line_cells(coords: list[tuple[float, float]], step: float = 1.0) -> list[tuple[int, int]]:
    """Grid cells a polyline passes, in order, without repeats."""
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for (x0, y0), (x1, y1) in zip(coords[:-1], coords[1:], strict=False):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        for k in range(n + 1):
            t = k / n
            r, c = _rc(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
            if 0 <= r < NROWS and 0 <= c < NCOLS and (r, c) not in seen:
                seen.add((r, c))
                out.append((r, c))
    return out


def _chainage_field(U, V, coords, values):
    """Distance to a polyline and the value interpolated at the nearest point."""
    import shapely

    line = shapely.LineString(coords)
    pts = shapely.points(U.ravel(), V.ravel())
    d = shapely.distance(pts, line).reshape(U.shape)
    s = shapely.line_locate_point(line, pts).reshape(U.shape)
    return d, np.interp(s, [0.0, line.length], values)
