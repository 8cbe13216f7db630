"""Read an EPA SWMM model (``.inp``) as raw canonical layers: structures, conveyances, outfalls and drainage areas.

The records are parsed by the `swmm-api <https://pypi.org/project/swmm-api/>`_ library
(docs/network.md, "SWMM models as workspaces", says why that one), after
:func:`ms4map.io.swmm_scan.scan_model` has checked them, so that every bad record is
reported with its section and line number; this module turns the library's tables into
the frames :func:`ms4map.io.open_workspace` canonicalises like any other source layer:

- [JUNCTIONS], [STORAGE], [DIVIDERS] and [OUTFALLS] -> ``structures`` (``struct_id`` the
  node name, ``invert_elev`` its invert, ``rim_elev`` invert + max depth where given);
- [OUTFALLS] -> ``outfalls`` as well (``outfall_id`` the node name);
- [CONDUITS], [ORIFICES], [WEIRS], [PUMPS], [OUTLETS] -> ``conveyances`` (``from_id`` /
  ``to_id`` the link's nodes, inverts = node invert + offset, sizes from [XSECTIONS],
  lines from the from-node through [VERTICES] to the to-node);
- [SUBCATCHMENTS] with a [Polygons] outline -> ``drainage_areas`` (not a schema role:
  the model's own answer, kept for comparison, never read by tracing).

A .inp holds no CRS: the caller names it (``--crs``).  Elevations stay in the model's
length unit (feet for CFS/GPM/MGD models, metres for CMS/LPS/MLD); sizes become inches.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..core.errors import InputOpenError
from ..core.qa import QAReport
from .swmm_scan import (
    LINK_SECTIONS,
    MIN_FIELDS,
    NAMED_SHAPES,
    NODE_SECTIONS,
    ModelScan,
    model_options,
    scan_model,
)

__all__ = [
    "LINK_SECTIONS",
    "MIN_FIELDS",
    "NODE_SECTIONS",
    "SwmmLayers",
    "is_swmm_model",
    "read_swmm",
]

#: Flow units of models whose lengths are feet (the others: metres).
_US_FLOW_UNITS = ("CFS", "GPM", "MGD")
_SI_FLOW_UNITS = ("CMS", "LPS", "MLD")
_HA_TO_AC = 2.471053814671653

#: Cross-section shapes open to the sky (a conduit of one is a ``channel``).
_OPEN_SHAPES = frozenset(
    {
        "RECT_OPEN",
        "TRAPEZOIDAL",
        "TRIANGULAR",
        "PARABOLIC",
        "POWER",
        "IRREGULAR",
        "STREET",
    }
)
#: Shapes whose Geom1 is a diameter (no separate span).
_ROUND_SHAPES = frozenset({"CIRCULAR", "FORCE_MAIN", "FILLED_CIRCULAR"})


def is_swmm_model(path: str | Path) -> bool:
    """Whether ``path`` names an EPA SWMM input file (by its ``.inp`` suffix)."""
    return Path(path).suffix.lower() == ".inp"


@dataclass
class SwmmLayers:
    """The layers :func:`read_swmm` read from one model.

    Attributes
    ----------
    layers : dict
        Role -> ``[(section label, GeoDataFrame)]`` with canonical column names, one
        frame per non-empty SWMM section (labels such as ``"JUNCTIONS"``).
    drainage_areas : GeoDataFrame or None
        The subcatchments with a polygon (``area_id``, ``outlet``, ``outlet_kind``,
        ``area_ac``, ``pct_imperv``, ``width``, ``slope_pct``, ``swmm_line``).
    flow_units, link_offsets : str
        The model's ``FLOW_UNITS`` and ``LINK_OFFSETS`` options (defaults CFS, DEPTH).
    length_unit : str
        ``"ft"`` or ``"m"``: the unit of the model's elevations, offsets and sizes.
    """

    layers: dict[str, list[tuple[str, gpd.GeoDataFrame]]] = field(default_factory=dict)
    drainage_areas: gpd.GeoDataFrame | None = None
    flow_units: str = "CFS"
    link_offsets: str = "DEPTH"
    length_unit: str = "ft"


def read_swmm(path: str | Path, *, crs: Any, report: QAReport) -> SwmmLayers:
    """Read an EPA SWMM ``.inp`` file as raw canonical layers.

    Parameters
    ----------
    path : str or Path
        The model.
    crs : pyproj.CRS
        The CRS of the model's coordinates (a .inp does not say).
    report : QAReport
        Receives the informational findings (subcatchments without a polygon).

    Returns
    -------
    SwmmLayers

    Raises
    ------
    InputOpenError
        The file cannot be read as text, or has no section at all.
    ValidationError
        A record is malformed or the model is inconsistent (a link naming a missing
        node, a duplicated name, no coordinates); every such problem is listed, each
        with its section and line number.
    """
    path = Path(path)
    scan = scan_model(path)
    opts = model_options(scan)
    unit = "m" if opts["FLOW_UNITS"] in _SI_FLOW_UNITS else "ft"
    tables = _library_tables(scan, path)
    xy = _points(scan)
    out = SwmmLayers(
        flow_units=opts["FLOW_UNITS"], link_offsets=opts["LINK_OFFSETS"], length_unit=unit
    )
    node_tab = _node_table(scan, tables, xy)
    sc = tables.get("SUBCATCHMENTS")
    outlets = set(sc["outlet"].astype(str).str.upper()) if sc is not None else set()
    for sec in NODE_SECTIONS:
        frame = _structures(node_tab, sec, outlets, crs)
        if frame is not None:
            out.layers.setdefault("structures", []).append((sec, frame))
    of = _outfalls(node_tab, crs)
    if of is not None:
        out.layers["outfalls"] = [("OUTFALLS", of)]
    for sec in LINK_SECTIONS:
        frame = _conveyances(
            scan, tables, sec, node_tab, link_offsets=opts["LINK_OFFSETS"], unit=unit, crs=crs
        )
        if frame is not None:
            out.layers.setdefault("conveyances", []).append((sec, frame))
    out.drainage_areas = _drainage_areas(
        scan, tables, set(node_tab.index), unit=unit, crs=crs, report=report
    )
    return out


def _unquote(frame: pd.DataFrame) -> pd.DataFrame:
    """The library's table with the double quotes of quoted names removed (index and the
    columns that name nodes, links or outlets)."""
    frame.index = pd.Index([str(v).strip('"') for v in frame.index])
    for col in ("from_node", "to_node", "outlet", "link"):
        if col in frame.columns:
            frame[col] = [v.strip('"') if isinstance(v, str) else v for v in frame[col]]
    return frame


# -- the library's tables --------------------------------------------------------------


def _library_tables(scan: ModelScan, path: Path) -> dict[str, pd.DataFrame]:
    """The sections ms4map reads, parsed by swmm-api (OPTIONS and the sections ms4map
    does not use are not given to it)."""
    from swmm_api import SwmmInput  # a core dependency, loaded when a model is read (60 ms)

    wanted = [*NODE_SECTIONS, *LINK_SECTIONS, "XSECTIONS", "SUBCATCHMENTS"]
    txt = "\n".join(
        f"[{sec}]\n" + "\n".join(scan.text[sec]) for sec in wanted if scan.text.get(sec)
    )
    out: dict[str, pd.DataFrame] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp = SwmmInput.read_text(txt)
        for sec in wanted:
            if not scan.text.get(sec):
                continue
            try:
                frame = inp[sec].frame
            except Exception as exc:  # the library raises several types
                raise InputOpenError(
                    f"[{sec}] of '{path.name}' (from line {scan.header_line[sec]}) cannot be "
                    f"read: {str(exc).strip().splitlines()[0][:200]}. Fix: check the section's "
                    "records against the SWMM manual, or re-save the model in SWMM 5.2."
                ) from None
            frame = _unquote(frame)  # the library sorts by name: back to file order
            order = pd.unique(pd.Index([r.fields[0] for r in scan.records[sec]]))
            out[sec] = frame.loc[order[order.isin(frame.index)]]
    return out


def _points(scan: ModelScan) -> dict[str, tuple[float, float]]:
    """Upper-case node name -> (x, y) from [COORDINATES] (the last line wins)."""
    return {
        r.fields[0].upper(): (float(r.fields[1]), float(r.fields[2]))
        for r in scan.records.get("COORDINATES", [])
    }


def _lines_of(scan: ModelScan, section: str) -> dict[str, int]:
    return {r.fields[0]: r.line for r in scan.records.get(section, [])}


def _node_table(
    scan: ModelScan, tables: dict[str, pd.DataFrame], xy: dict[str, tuple[float, float]]
) -> pd.DataFrame:
    """Every node: name, section, invert, max depth, line, x, y (indexed by upper name)."""
    parts = []
    for sec in NODE_SECTIONS:
        t = tables.get(sec)
        if t is None or not len(t):
            continue
        depth = t["depth_max"] if "depth_max" in t.columns else pd.Series(np.nan, index=t.index)
        lines = _lines_of(scan, sec)
        parts.append(
            pd.DataFrame(
                {
                    "name": t.index.astype(str),
                    "section": sec,
                    "invert": pd.to_numeric(t["elevation"], errors="coerce").to_numpy(float),
                    "max_depth": pd.to_numeric(depth, errors="coerce").to_numpy(float),
                    "line": [lines.get(n, -1) for n in t.index],
                }
            )
        )
    nodes = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["name"])
    pts = np.array([xy[str(n).upper()] for n in nodes["name"]], dtype=float).reshape(-1, 2)
    nodes["x"], nodes["y"] = pts[:, 0], pts[:, 1]
    nodes.index = nodes["name"].str.upper()
    return nodes


# -- the layers --------------------------------------------------------------------------


def _structures(
    nodes: pd.DataFrame, section: str, outlets: set[str], crs: Any
) -> gpd.GeoDataFrame | None:
    """The structures of one node section (``None`` when it has none)."""
    n = nodes[nodes["section"] == section]
    if not len(n):
        return None
    kind = np.full(len(n), NODE_SECTIONS[section], dtype=object)
    if section == "JUNCTIONS":
        kind[n["name"].str.upper().isin(outlets).to_numpy()] = "inlet"
    depth = n["max_depth"].to_numpy(float)
    rim = np.where(np.isfinite(depth) & (depth > 0), n["invert"].to_numpy(float) + depth, np.nan)
    if section == "OUTFALLS":
        rim = np.full(len(n), np.nan)
    return gpd.GeoDataFrame(
        {
            "struct_id": n["name"].to_numpy(),
            "kind": kind,
            "invert_elev": n["invert"].to_numpy(float),
            "rim_elev": rim,
            "max_depth": depth,
            "swmm_type": section[:-1] if section != "STORAGE" else "STORAGE",
            "swmm_line": n["line"].to_numpy(),
        },
        geometry=shapely.points(n[["x", "y"]].to_numpy()),
        crs=crs,
    )


def _outfalls(nodes: pd.DataFrame, crs: Any) -> gpd.GeoDataFrame | None:
    """The model's outfalls as the ``outfalls`` layer (``None`` when it has none)."""
    n = nodes[nodes["section"] == "OUTFALLS"]
    if not len(n):
        return None
    return gpd.GeoDataFrame(
        {
            "outfall_id": n["name"].to_numpy(),
            "invert_elev": n["invert"].to_numpy(float),
            "swmm_line": n["line"].to_numpy(),
        },
        geometry=shapely.points(n[["x", "y"]].to_numpy()),
        crs=crs,
    )


def _offsets(t: pd.DataFrame, section: str) -> tuple[np.ndarray, np.ndarray]:
    """The raw inlet and outlet offsets of a link section (NaN: ``*`` or none)."""

    def col(name: str) -> np.ndarray:
        if name not in t.columns:
            return np.full(len(t), np.nan)
        return pd.to_numeric(t[name], errors="coerce").to_numpy(float)

    zero = np.zeros(len(t))
    if section == "CONDUITS":
        return col("offset_upstream"), col("offset_downstream")
    if section == "WEIRS":
        return col("height_crest"), zero
    if section in ("ORIFICES", "OUTLETS"):
        return col("offset"), zero
    return zero, zero  # pumps


def _end_inverts(node_inv: np.ndarray, offset: np.ndarray, link_offsets: str) -> np.ndarray:
    """Invert of a link end as EPA SWMM sets it: node invert + the offset as a depth, or,
    with ``LINK_OFFSETS ELEVATION``, the offset as an elevation (``*``: the node invert).
    An end below its node is raised to the node invert, as SWMM does (its warning 03)."""
    depth = offset - node_inv if link_offsets == "ELEVATION" else offset
    depth = np.where(np.isfinite(depth), np.maximum(depth, 0.0), 0.0)
    return node_inv + depth


def _conveyances(
    scan: ModelScan,
    tables: dict[str, pd.DataFrame],
    section: str,
    nodes: pd.DataFrame,
    *,
    link_offsets: str,
    unit: str,
    crs: Any,
) -> gpd.GeoDataFrame | None:
    """The conveyances of one link section (``None`` when it has none)."""
    t = tables.get(section)
    if t is None or not len(t):
        return None
    names = t.index.to_numpy(dtype=object)
    fr = nodes.loc[t["from_node"].astype(str).str.upper()]
    to = nodes.loc[t["to_node"].astype(str).str.upper()]
    off_in, off_out = _offsets(t, section)
    # a weir's crest height and the offset of an orifice or outlet follow LINK_OFFSETS
    # like a conduit's inlet offset (SWMM 5.2 manual); their outlet end is the node invert
    us = _end_inverts(fr["invert"].to_numpy(float), off_in, link_offsets)
    ds = _end_inverts(to["invert"].to_numpy(float), off_out, link_offsets)
    if section == "PUMPS":  # a pump lifts water: its end inverts say nothing of its flow
        us = np.full(len(t), np.nan)
        ds = np.full(len(t), np.nan)
    diam, rise, shape, kind = _sizes(tables.get("XSECTIONS"), names, section, unit)
    gated = (
        t["has_flap_gate"].fillna(False).astype(bool).to_numpy()
        if "has_flap_gate" in t.columns
        else np.zeros(len(t), dtype=bool)
    )
    flow_dir = np.where(gated | (section == "PUMPS"), "uni", None)
    lines = _link_lines(scan, names, fr, to)
    return gpd.GeoDataFrame(
        {
            "conv_id": names,
            "kind": kind,
            "from_id": fr["name"].to_numpy(),
            "to_id": to["name"].to_numpy(),
            "us_invert": us,
            "ds_invert": ds,
            "diameter_in": diam,
            "rise_in": rise,
            "flow_dir": flow_dir,
            "swmm_type": LINK_SECTIONS[section],
            "xsection_shape": shape,
            "swmm_line": pd.Series(names).map(_lines_of(scan, section)).fillna(-1).astype(int),
        },
        geometry=lines,
        crs=crs,
    )


def _sizes(
    xs: pd.DataFrame | None, names: np.ndarray, section: str, unit: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Span (``diameter_in``), rise (inches), shape and kind of each link from [XSECTIONS]."""
    n = len(names)
    k = 12.0 if unit == "ft" else 1 / 0.0254
    diam, rise = np.full(n, np.nan), np.full(n, np.nan)
    shape = np.full(n, None, dtype=object)
    culvert = np.zeros(n, dtype=bool)
    if xs is not None and len(xs):
        x = xs.reindex(pd.Index(names).astype(str))
        shape = x["shape"].astype(object).where(x["shape"].notna(), None).to_numpy()
        up = np.array([str(s).upper() if s is not None else "" for s in shape], dtype=object)
        g1 = pd.to_numeric(x["height"], errors="coerce").to_numpy(float)
        g2 = pd.to_numeric(x.get("parameter_2"), errors="coerce").to_numpy(float)
        sized = ~np.isin(up, list(NAMED_SHAPES)) & (up != "")
        is_round = np.isin(up, list(_ROUND_SHAPES))
        span = np.where(is_round | ~(np.isfinite(g2) & (g2 > 0)), g1, g2)
        diam = np.where(sized, span * k, np.nan)
        rise = np.where(sized & ~is_round & (up != "CUSTOM"), g1 * k, np.nan)
        diam = np.where(up == "CUSTOM", np.nan, diam)
        rise = np.where(up == "CUSTOM", g1 * k, rise)
        if "culvert" in x.columns:
            culvert = pd.to_numeric(x["culvert"], errors="coerce").fillna(0).to_numpy() > 0
        is_open = np.isin(up, list(_OPEN_SHAPES))
    else:
        is_open = np.zeros(n, dtype=bool)
    if section != "CONDUITS":
        kind = np.full(n, "connector", dtype=object)
    else:
        kind = np.where(culvert, "culvert", np.where(is_open, "channel", "pipe")).astype(object)
    return diam, rise, shape, kind


def _link_lines(
    scan: ModelScan, names: np.ndarray, fr: pd.DataFrame, to: pd.DataFrame
) -> np.ndarray:
    """Each link's line: from-node point, its [VERTICES] in order, to-node point."""
    verts: dict[str, list[tuple[float, float]]] = {}
    for r in scan.records.get("VERTICES", []):
        verts.setdefault(r.fields[0], []).append((float(r.fields[1]), float(r.fields[2])))
    a = fr[["x", "y"]].to_numpy(float)
    b = to[["x", "y"]].to_numpy(float)
    if not verts:
        return shapely.linestrings(np.stack([a, b], axis=1))
    out = np.empty(len(names), dtype=object)
    for i, name in enumerate(names):
        pts = [tuple(a[i]), *verts.get(str(name), []), tuple(b[i])]
        out[i] = shapely.LineString(pts)
    return out


def _drainage_areas(
    scan: ModelScan,
    tables: dict[str, pd.DataFrame],
    nodes: set[str],
    *,
    unit: str,
    crs: Any,
    report: QAReport,
) -> gpd.GeoDataFrame | None:
    """The subcatchments with a polygon; those without one are one info finding."""
    sc = tables.get("SUBCATCHMENTS")
    if sc is None or not len(sc):
        return None
    rings: dict[str, list[tuple[float, float]]] = {}
    for r in scan.records.get("POLYGONS", []):
        rings.setdefault(r.fields[0].upper(), []).append((float(r.fields[1]), float(r.fields[2])))
    names = sc.index.astype(str)
    has = np.array([len(set(rings.get(n.upper(), []))) >= 3 for n in names], dtype=bool)
    lines = _lines_of(scan, "SUBCATCHMENTS")
    missing = [n for n, h in zip(names, has, strict=True) if not h]
    if missing:
        shown = ", ".join(f"'{n}' (line {lines.get(n, '?')})" for n in missing[:10])
        report.info(
            "swmm_subcatchment_without_polygon",
            "[SUBCATCHMENTS]",
            f"{len(missing)} of {len(names)} subcatchments have no outline in [Polygons] "
            f"(at least 3 points), so they are not in the drainage_areas layer: {shown}"
            + (" ..." if len(missing) > 10 else "."),
            count=len(missing),
            fix="Nothing to do; to compare them with ms4map's catchments, draw their "
            "outlines in the SWMM GUI and save the model.",
        )
    if not has.any():
        return None
    s = sc[has]
    area = pd.to_numeric(s["area"], errors="coerce").to_numpy(float)
    outlet = s["outlet"].astype(str).to_numpy()
    return gpd.GeoDataFrame(
        {
            "area_id": s.index.astype(str).to_numpy(),
            "outlet": outlet,
            "outlet_kind": ["node" if o.upper() in nodes else "subcatchment" for o in outlet],
            "area_ac": area if unit == "ft" else area * _HA_TO_AC,
            "pct_imperv": pd.to_numeric(s["imperviousness"], errors="coerce").to_numpy(float),
            "width": pd.to_numeric(s["width"], errors="coerce").to_numpy(float),
            "slope_pct": pd.to_numeric(s["slope"], errors="coerce").to_numpy(float),
            "swmm_line": [lines.get(n, -1) for n in s.index.astype(str)],
        },
        geometry=[shapely.Polygon(rings[n.upper()]) for n in s.index.astype(str)],
        crs=crs,
    )
