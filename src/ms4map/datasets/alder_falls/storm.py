"""The demo town's storm sewer system: catch basins, pipes, ditches, culverts, outfalls and inverts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .grid import _cell_centre
from .roads import Road, _curbed_lines
from .spec import (
    BROOK,
    BROOK_LINE,
    COLE_RD_U,
    CREEK,
    CREEK_LINE,
    CREEK_OF_U,
    HC1_CBS,
    HC2_CB_V,
    HC3_CB_V,
    HILL_U,
    KETTLE_RD_V,
    LAKE,
    LAKE_AB,
    LAKE_C,
    LAKE_CURB,
    LAKE_OF_U,
    LAKE_RD_V,
    RIVER,
    RIVER_OF_V,
    RIVER_RD_U,
    RIVER_W,
    STONY,
    VILLAGE_EW,
)


# ======================================================================================
# Storm network
# ======================================================================================
@dataclass
class Net:
    structs: list[dict[str, Any]] = field(default_factory=list)
    convs: list[dict[str, Any]] = field(default_factory=list)
    outfalls: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)

    def new_id(self, prefix: str, width: int = 4) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}-{n:0{width}d}"

    def add_struct(self, kind: str, u: float, v: float, prefix: str, **kw: Any) -> str:
        sid = kw.pop("struct_id", None) or self.new_id(prefix, 3 if prefix in ("HW", "OF") else 4)
        self.structs.append({"struct_id": sid, "kind": kind, "u": u, "v": v, **kw})
        return sid

    def struct(self, sid: str) -> dict[str, Any]:
        for s in self.structs:
            if s["struct_id"] == sid:
                return s
        raise KeyError(sid)


def _split_at(line, dists):
    import shapely

    cuts = sorted({0.0, line.length, *[d for d in dists if 0 < d < line.length]})
    return [
        shapely.ops.substring(line, a, b)
        for a, b in zip(cuts[:-1], cuts[1:], strict=False)
        if b - a > 1
    ]


def _curbed_graph(roads: list[Road]):
    """Segments of the curbed (piped) streets between junctions, with node coordinates."""
    import shapely

    lines = _curbed_lines(roads)
    # split points: every junction between curbed lines plus the river outfall nodes
    pts: list[tuple[float, float]] = [(RIVER_RD_U, v) for v in RIVER_OF_V]
    pts.append((LAKE_OF_U, LAKE_RD_V))
    geoms = [g for _, g in lines]
    for i, a in enumerate(geoms):
        for b in geoms[i + 1 :]:
            x = a.intersection(b)
            for p in getattr(x, "geoms", [x]):
                if isinstance(p, shapely.Point):
                    pts.append((round(p.x, 3), round(p.y, 3)))
    creek = shapely.LineString(CREEK_LINE)
    segs = []
    for name, g in lines:
        ds = [g.project(shapely.Point(p)) for p in pts if g.distance(shapely.Point(p)) < 0.01]
        for piece in _split_at(g, ds):
            if piece.intersects(creek):
                continue  # bridge: no pipes, its deck drains to the creek
            c = list(piece.coords)
            a = (round(c[0][0], 3), round(c[0][1], 3))
            b = (round(c[-1][0], 3), round(c[-1][1], 3))
            segs.append((name, a, b, piece.length))
    return segs


def _system_of(node: tuple[float, float]) -> str:
    u, v = node
    if abs(v - LAKE_RD_V) < 0.01 and u <= LAKE_CURB[1] + 0.01:
        return "lake"
    if abs(u - RIVER_RD_U) < 0.01:
        return "river"
    return "creek"


def _outfall_nodes() -> dict[tuple[float, float], str]:
    nodes = {}
    for u in CREEK_OF_U:
        nodes[(u, VILLAGE_EW["Front St"])] = "creek"
        nodes[(u, VILLAGE_EW["Water St"])] = "creek"
    for v in RIVER_OF_V:
        nodes[(RIVER_RD_U, v)] = "river"
    nodes[(LAKE_OF_U, LAKE_RD_V)] = "lake"
    return nodes


def _place_cbs(name: str, a, b, length: float) -> list[tuple[float, float]]:
    """Catch basins along a segment (every ~75 m, plus the forced hand-check inlets)."""
    forced = {
        "Hill St": [(HILL_U, HC2_CB_V), (HILL_U, HC1_CBS[0]), (HILL_U, HC1_CBS[1])],
        "River Rd": [(RIVER_RD_U, HC2_CB_V), (RIVER_RD_U, HC3_CB_V)],
    }.get(name, [])
    ax, ay = a
    bx, by = b
    on_seg = [
        p
        for p in forced
        if min(ax, bx) - 0.1 <= p[0] <= max(ax, bx) + 0.1
        and min(ay, by) + 5 < p[1] < max(ay, by) - 5
    ]
    n = max(1, round(length / 75.0))
    out = list(on_seg)
    for k in range(n):
        t = (k + 0.5) / n
        p = _cell_centre(ax + (bx - ax) * t, ay + (by - ay) * t)
        if any(math.hypot(p[0] - q[0], p[1] - q[1]) < 40 for q in forced):
            continue
        if name == "Hill St" and HC1_CBS[0] - 1 < p[1] < HC1_CBS[1] + 1:
            continue  # keep the HC1 frontage free of inlets
        out.append(p)
    out.sort(key=lambda p: math.hypot(p[0] - ax, p[1] - ay))
    return out


def _build_piped(net: Net, roads: list[Road], ground) -> tuple[list, list]:
    """Catch basins, manholes and pipes of the curbed streets; returns (cb_points, edges)."""
    import networkx as nx

    segs = _curbed_graph(roads)
    of_nodes = _outfall_nodes()
    nodes = sorted({p for _, a, b, _ in segs for p in (a, b)}, key=lambda p: (-p[1], p[0]))
    z = {p: ground(*p) for p in nodes}
    degree: dict[tuple[float, float], int] = {}
    for _, a, b, _ in segs:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    node_id = {}
    cb_dead_ends: list[tuple[float, float]] = []
    for p in nodes:
        kind = "manhole" if degree[p] > 1 or p in of_nodes else "catch_basin"
        node_id[p] = net.add_struct(kind, p[0], p[1], "MH" if kind == "manhole" else "CB")
        if kind == "catch_basin":
            cb_dead_ends.append(p)
    # drainage tree per system: cheapest path to an outfall node, uphill is expensive
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    for _, a, b, length in segs:
        if _system_of(a) != _system_of(b):
            continue
        g.add_edge(b, a, weight=length + 60.0 * max(0.0, z[b] - z[a]))  # a drains to b
        g.add_edge(a, b, weight=length + 60.0 * max(0.0, z[a] - z[b]))
    parent: dict[tuple[float, float], tuple[float, float] | None] = {}
    for system in ("creek", "river", "lake"):
        srcs = [p for p, s in of_nodes.items() if s == system]
        sub = g.subgraph([p for p in nodes if _system_of(p) == system])
        _, paths = nx.multi_source_dijkstra(sub, srcs)
        for p in sub.nodes:
            if p not in paths:
                raise RuntimeError(f"demo: node {p} cannot reach a {system} outfall")
            parent[p] = paths[p][-2] if len(paths[p]) > 1 else None
    cb_points: list[tuple[float, float]] = list(cb_dead_ends)
    edges: list[tuple[str, str]] = []
    for name, a, b, length in segs:
        cbs = _place_cbs(name, a, b, length)
        cb_ids = []
        for p in cbs:
            kind = "inlet" if (len(net.structs) % 17 == 5) else "catch_basin"
            cb_ids.append(net.add_struct(kind, p[0], p[1], "CB"))
            cb_points.append(p)
        if parent.get(a) == b:
            chain = [node_id[a], *cb_ids, node_id[b]]
        elif parent.get(b) == a:
            chain = [node_id[b], *reversed(cb_ids), node_id[a]]
        else:  # lateral: runs to the lower end (to River Rd when it joins it)
            sa, sb = _system_of(a), _system_of(b)
            if sa != sb and "river" in (sa, sb):
                lower_b = sb == "river"
            else:
                lower_b = z[b] < z[a]
            chain = [*cb_ids, node_id[b]] if lower_b else [*reversed(cb_ids), node_id[a]]
        edges.extend(zip(chain[:-1], chain[1:], strict=False))
    # outfall pipes from the outfall nodes to the bank
    import shapely

    creek = shapely.LineString(CREEK_LINE)
    of_order = sorted(
        of_nodes.items(),
        key=lambda kv: ({"creek": 0, "river": 1, "lake": 2}[kv[1]], kv[0][0], kv[0][1]),
    )
    for p, system in of_order:
        if system == "creek":
            q = creek.interpolate(creek.project(shapely.Point(p)))
            dv = 1.0 if p[1] > q.y else -1.0
            end = (p[0], q.y + 6.0 * dv)
            water = CREEK
        elif system == "river":
            end = (RIVER_W - 2.0, p[1])
            water = RIVER
        else:
            a, b = LAKE_AB
            vshore = LAKE_C[1] - b * math.sqrt(max(0.0, 1 - ((p[0] - LAKE_C[0]) / a) ** 2))
            end = (p[0], vshore - 2.0)
            water = LAKE
        of_id = _add_outfall(net, end, water)
        edges.append((node_id[p], of_id))
    return cb_points, edges


def _add_outfall(net: Net, end: tuple[float, float], water: tuple[str, str, str]) -> str:
    of_id = net.new_id("OF", 3)
    net.add_struct("outfall", end[0], end[1], "OF", struct_id=of_id)
    net.outfalls.append(
        {
            "outfall_id": of_id,
            "receiving_water": water[1],
            "pwl_id": water[0],
            "u": end[0],
            "v": end[1],
        }
    )
    return of_id


def _ditch_to_water(coords, water_coords, off: float = 5.0):
    """Cut a ditch polyline where it comes within ``off`` metres of a water line."""
    import shapely

    line = shapely.LineString(coords)
    water = shapely.LineString(water_coords)
    x = line.intersection(water)
    if x.is_empty:
        return list(line.coords)
    s = min(line.project(p) for p in getattr(x, "geoms", [x]))
    lo, hi = 0.0, s
    for _ in range(40):
        mid = (lo + hi) / 2
        if line.interpolate(mid).distance(water) > off:
            lo = mid
        else:
            hi = mid
    return list(shapely.ops.substring(line, 0, lo).coords)


def _ditch_systems(net: Net) -> list[dict[str, Any]]:
    """Rural ditches, culverts, headwalls and their outfalls.  Returns the ditch lines."""
    creek_v_cole = float(
        np.interp(COLE_RD_U, [p[0] for p in CREEK_LINE], [p[1] for p in CREEK_LINE])
    )
    wu, eu = COLE_RD_U - 5.0, COLE_RD_U + 5.0
    lines: list[dict[str, Any]] = []

    def ditch(coords, frm=None, to=None, material="grass"):
        lines.append(
            {
                "coords": [tuple(map(float, c)) for c in coords],
                "from_id": frm,
                "to_id": to,
                "kind": "ditch",
                "material": material,
            }
        )

    def culvert(a, b, frm, to, dia, material="CMP", rise=None):
        lines.append(
            {
                "coords": [a, b],
                "from_id": frm,
                "to_id": to,
                "kind": "culvert",
                "material": material,
                "diameter_in": dia,
                "rise_in": rise,
            }
        )

    # 1. Cole Rd north of the brook -> Tamarack Brook
    c = _ditch_to_water([(wu, 2790.0), (wu, 2200.0)], BROOK_LINE)
    of = _add_outfall(net, c[-1], BROOK)
    ditch(c, None, of)
    # 2. Cole Rd between brook and creek, both sides -> Alder Kill (north bank)
    hw_e = net.add_struct("headwall", eu, 1805.0, "HW")
    hw_w = net.add_struct("headwall", wu, 1805.0, "HW")
    of = _add_outfall(net, (wu, creek_v_cole + 7.5), CREEK)
    ditch([(wu, 2245.0), (wu, 1805.0)], None, hw_w)
    ditch([(eu, 2245.0), (eu, 1805.0)], None, hw_e)
    culvert((eu, 1805.0), (wu, 1805.0), hw_e, hw_w, 18.0)
    ditch([(wu, 1805.0), (wu, creek_v_cole + 7.5)], hw_w, of)
    # 3. Cole Rd south of the creek -> Alder Kill (south bank)
    of = _add_outfall(net, (wu, creek_v_cole - 7.5), CREEK)
    ditch([(wu, 1015.0), (wu, creek_v_cole - 7.5)], None, of)
    # 4. Kettle Rd east (south side) -> culverts under Hill Rd and River Rd -> Kenyon River
    kv = KETTLE_RD_V - 5.0
    h1 = net.add_struct("headwall", HILL_U - 5.0, kv, "HW")
    h2 = net.add_struct("headwall", HILL_U + 5.0, kv, "HW")
    h3 = net.add_struct("headwall", RIVER_RD_U - 5.0, kv, "HW")
    h4 = net.add_struct("headwall", RIVER_RD_U + 5.0, kv, "HW")
    of = _add_outfall(net, (RIVER_W - 2.0, kv), RIVER)
    ditch([(COLE_RD_U + 7.5, kv), (HILL_U - 5.0, kv)], None, h1)
    culvert((HILL_U - 5.0, kv), (HILL_U + 5.0, kv), h1, h2, 24.0)
    ditch([(HILL_U + 5.0, kv), (RIVER_RD_U - 5.0, kv)], h2, h3)
    culvert((RIVER_RD_U - 5.0, kv), (RIVER_RD_U + 5.0, kv), h3, h4, 36.0, "RCP", rise=24.0)
    ditch([(RIVER_RD_U + 5.0, kv), (RIVER_W - 2.0, kv)], h4, of, material="riprap")
    # 5. Stony Hill Rd (north-west side) -> headwall at the village corner (piped on)
    (ax, ay), (bx, by) = STONY[1], STONY[2]
    L = math.hypot(bx - ax, by - ay)
    dx, dy = (bx - ax) / L, (by - ay) / L
    nx_, ny_ = -dy, dx
    p0 = (ax + 15 * dx + 5 * nx_, ay + 15 * dy + 5 * ny_)
    p1 = (bx - 15 * dx + 5 * nx_, by - 15 * dy + 5 * ny_)
    hw = net.add_struct("headwall", p1[0], p1[1], "HW")
    ditch([p0, p1], None, hw)
    # 7. Lake Rd east of the lake (south side) -> Tamarack Brook
    c = _ditch_to_water(
        [(LAKE_CURB[1] + 12.5, LAKE_RD_V - 5.0), (1400.0, LAKE_RD_V - 5.0)], BROOK_LINE
    )
    of = _add_outfall(net, c[-1], BROOK)
    ditch(c, None, of)
    return lines, hw


# ======================================================================================
# Inverts
# ======================================================================================
def _set_inverts(net: Net, edges, ground, rng, fixed: dict[str, float]):
    """Structure and pipe inverts: ~1.8-2.4 m cover, >= 0.5 % slope, falling downstream."""
    import networkx as nx

    g = nx.DiGraph()
    pos = {s["struct_id"]: (s["u"], s["v"]) for s in net.structs}
    g.add_edges_from(edges)
    inv: dict[str, float] = {}
    for n in nx.topological_sort(g):
        u, v = pos[n]
        gr = ground(u, v)
        cover = 1.8 + 0.6 * float(rng.random())
        cand = [gr - cover]
        s = net.struct(n)
        if s["kind"] == "outfall":
            cand = [gr - 0.3]
        if n in fixed:
            cand = [fixed[n]]
        for p in g.predecessors(n):
            pu, pv = pos[p]
            L = math.hypot(u - pu, v - pv)
            cand.append(inv[p] - max(0.005 * L, 0.03))
        inv[n] = round(min(cand), 2)
        s["rim_elev"] = round(gr, 2) if s["kind"] != "outfall" else float("nan")
        s["invert_elev"] = inv[n]
    return inv
