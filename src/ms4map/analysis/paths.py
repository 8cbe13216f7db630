"""Where a feature drains: a parcel's, structure's, conveyance's or outfall's way to its
receiving water (:func:`feature_path`), the overland step of a parcel
(:func:`overland_steps`) and one feature's geometry and attributes.  The map shows them
(:mod:`ms4map.outputs.maps` re-exports these names)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import shapely
from shapely.geometry import LineString

from .. import network as _network_package
from ..core.nulls import is_na
from ..hydrology import walk_down
from ..io import Workspace
from .frames import column_or_none as _col
from .frames import feature_ids as _ids
from .frames import result_workspace

if TYPE_CHECKING:
    from types import ModuleType

    from ..network import StormNetwork
    from ..pipeline import Result

__all__ = [
    "OVERLAND_METHODS",
    "PathResult",
    "feature_attributes",
    "feature_geometry",
    "feature_path",
    "overland_steps",
]


_ID_COLUMNS = {
    "parcels": "parcel_id",
    "structures": "struct_id",
    "conveyances": "conv_id",
    "outfalls": "outfall_id",
    "waterbodies": "wb_id",
    "impaired_waters": "wb_id",
    "tmdl_watersheds": "tmdl_id",
    "sewersheds": "outfall_id",
}


def _feature_rows(ws: Workspace, layer: str, fid: str, result: Result | None) -> Any:
    """The rows of a map layer whose id is ``fid`` (None when the layer is absent)."""
    if layer == "sewersheds":
        frame = getattr(result, "sewersheds", None)
    else:
        frame = ws.layers.get("waterbodies" if layer == "impaired_waters" else layer)
    if frame is None or not len(frame):
        return None
    ids = _ids(frame, _ID_COLUMNS.get(layer, "name"))
    return frame[ids.to_numpy() == str(fid)]


def feature_geometry(ws: Workspace, layer: str, fid: str, *, result: Result | None = None) -> Any:
    """The geometry of one feature (working CRS), or None."""
    rows = _feature_rows(ws, layer, fid, result)
    return rows.geometry.iloc[0] if rows is not None and len(rows) else None


def feature_attributes(
    ws: Workspace, layer: str, fid: str, *, result: Result | None = None
) -> dict[str, Any]:
    """The attributes of one feature, as a plain dict (geometry dropped)."""
    rows = _feature_rows(ws, layer, fid, result)
    if rows is None:
        return {}
    if not len(rows):
        return {}
    rec = rows.drop(columns=[rows.geometry.name]).iloc[0].to_dict()
    if layer in ("waterbodies", "impaired_waters"):
        imp = ws.layers.get("impairments")
        if imp is not None and len(imp):
            hit = imp[imp["wb_id"].astype(str) == str(fid)]
            if len(hit):
                rec["303(d) listings"] = "; ".join(
                    f"{p} (category {c})"
                    for p, c in zip(hit["pollutant"], _col(hit, "category"), strict=False)
                )
    return {k: (None if is_na(v) else v) for k, v in rec.items()}


@dataclass
class PathResult:
    """A feature's way to its receiving water.

    Attributes
    ----------
    geometry : GeoSeries
        Path lines (working CRS), possibly empty.
    steps : list of str
        Plain-words description, one line per branch.
    outfall_ids, receiving_waters : list of str
    reason : str
        Why the path is what it is (or why there is none).
    """

    geometry: gpd.GeoSeries
    steps: list[str]
    outfall_ids: list[str]
    receiving_waters: list[str]
    reason: str = ""
    overland: gpd.GeoDataFrame | None = None
    outfalls: gpd.GeoSeries | None = None

    def highlights(self) -> dict[str, Any]:
        """The path as map highlights: ``path`` (network lines), ``overland step`` and
        ``outfalls reached`` (see :data:`HIGHLIGHT_STYLES`); empty parts left out."""
        out: dict[str, Any] = {}
        if len(self.geometry):
            out["path"] = self.geometry
        if self.overland is not None and len(self.overland):
            out["overland step"] = self.overland.geometry
        if self.outfalls is not None and len(self.outfalls):
            out["outfalls reached"] = self.outfalls
        return out

    def extent(self) -> Any:
        """Every geometry of the path (network lines, overland steps, outfalls reached),
        as one geometry in the working CRS, or ``None``: what a map should fit."""
        geoms = [
            g
            for part in self.highlights().values()
            for g in part
            if g is not None and not g.is_empty
        ]
        return shapely.union_all(geoms) if geoms else None


def feature_path(result: Result, layer: str, fid: str, *old: Any) -> PathResult:
    """The downstream path of a parcel, structure, conveyance or outfall.

    Parcels follow the drainage table (each target with its fraction); network
    features follow :func:`ms4map.network.trace_downstream`; an outfall is its
    own end.  Without a pipeline result (or the network module) the path is
    empty and ``reason`` says why.  The workspace is ``result.workspace``.

    Parameters
    ----------
    result : Result
        From :func:`ms4map.pipeline.run`.
    layer : str
        ``parcels``, ``structures``, ``conveyances`` or ``outfalls``.
    fid : str
        The feature's id.
    *old
        The deprecated form ``feature_path(ws, result, layer, fid)`` (recognised by its
        :class:`~ms4map.io.workspace.Workspace` first; ``result`` may then be ``None``)
        is answered the same, with a :class:`DeprecationWarning`.
    """
    if isinstance(result, Workspace):
        warnings.warn(
            "feature_path(ws, result, layer, fid) is deprecated and is removed in ms4map "
            "0.3; use feature_path(result, layer, fid) (the workspace is result.workspace).",
            DeprecationWarning,
            stacklevel=2,
        )
        if len(old) != 1:
            raise TypeError("feature_path(ws, result, layer, fid) takes four arguments.")
        return _feature_path(result, layer, fid, old[0])
    if old:
        raise TypeError("feature_path(result, layer, fid) takes three arguments.")
    return _feature_path(result_workspace(result, "feature_path"), result, layer, fid)


def _feature_path(ws: Workspace, result: Result | None, layer: str, fid: str) -> PathResult:
    """:func:`feature_path` on the workspace ``ws`` (``result`` ``None``: not run)."""
    empty = gpd.GeoSeries([], crs=ws.crs)
    if result is None:
        return PathResult(
            empty, [], [], [], "The drainage analysis has not been run for this workspace."
        )
    net = getattr(result, "network", None)
    _network = _network_package
    if layer == "outfalls":
        return _outfall_path(ws, fid)
    if layer == "parcels":
        found = _parcel_starts(result, fid)
        if isinstance(found, str):
            return PathResult(empty, [], [], [], found)
        starts, direct = found
    elif layer in ("structures", "conveyances"):
        starts, direct = [(str(fid), 1.0, f"from {layer[:-1]} {fid}")], []
    else:
        return PathResult(empty, [], [], [], f"No downstream path for a {layer} feature.")
    if starts and (net is None or not hasattr(_network, "trace_downstream")):
        return PathResult(empty, direct, [], [], "The storm network is not available to trace.")
    geoms, steps, outs_, waters = _trace_starts(_network, net, starts, list(direct))
    overland = overland_steps(ws, result, fid) if layer == "parcels" else None
    reached = [feature_geometry(ws, "outfalls", o) for o in dict.fromkeys(outs_)]
    return PathResult(
        gpd.GeoSeries(geoms, crs=ws.crs),
        steps,
        list(dict.fromkeys(outs_)),
        list(dict.fromkeys(waters)),
        "traced downstream through the storm network" if geoms else "no path found",
        overland=overland,
        outfalls=gpd.GeoSeries([g for g in reached if g is not None], crs=ws.crs),
    )


def _outfall_path(ws: Workspace, fid: str) -> PathResult:
    """The path of an outfall: its own end, discharging to its receiving water."""
    outs = ws.layers.get("outfalls")
    attrs = feature_attributes(ws, "outfalls", fid)
    rw = attrs.get("receiving_water") or "unknown water"
    geom = feature_geometry(ws, "outfalls", fid)
    crs = getattr(outs, "crs", ws.crs)
    return PathResult(
        gpd.GeoSeries([], crs=crs),
        [f"Outfall {fid} discharges to {rw} (PWL {attrs.get('pwl_id') or 'unknown'})."],
        [fid],
        [str(rw)],
        "an outfall is the end of the MS4",
        outfalls=gpd.GeoSeries([geom] if geom is not None else [], crs=crs),
    )


def _parcel_starts(
    result: Result, fid: str
) -> tuple[list[tuple[str, float, str]], list[str]] | str:
    """Where parcel ``fid`` drains, from the drainage table: the network starts to trace
    ``(start id, fraction, label)`` and the lines of its direct (non-MS4) parts; or the
    reason there is no path (a text)."""
    d = getattr(result, "drainage", None)
    if d is None or not len(d):
        return "No drainage table in the result."
    rows = d[d["parcel_id"].astype(str) == str(fid)]
    if not len(rows):
        return f"Parcel {fid} is not in the drainage table."
    starts: list[tuple[str, float, str]] = []
    direct: list[str] = []
    for r in rows.to_dict("records"):
        frac = float(r.get("fraction") or 0)
        kind = str(r.get("target_kind"))
        if kind in ("inlet", "conveyance") and not is_na(r.get("target_id")):
            starts.append((str(r["target_id"]), frac, f"{frac:.0%} to {kind} {r['target_id']}"))
        else:
            direct.append(_direct_text(r, frac, kind))
    return starts, direct


def _direct_text(r: dict[str, Any], frac: float, kind: str) -> str:
    """The path line of a drainage row that does not enter the MS4."""
    if kind == "water_direct":
        return (
            f"{frac:.0%} runs directly to {r.get('receiving_water') or r.get('target_id')}"
            f" (PWL {r.get('pwl_id') or 'unknown'}), not through the MS4."
        )
    if kind == "depression":
        return f"{frac:.0%} drains to a closed depression (internally drained)."
    return f"{frac:.0%}: drainage {kind} ({r.get('reason') or 'no reason given'})."


def _trace_starts(
    _network: ModuleType,
    net: StormNetwork | None,
    starts: list[tuple[str, float, str]],
    steps: list[str],
) -> tuple[list[Any], list[str], list[str], list[str]]:
    """Trace each start down the network: ``(geometries, steps, outfall ids, waters)``;
    the steps follow those given (a start that cannot be traced says why).  Both the
    module and the network are there whenever ``starts`` is not empty.  An ambiguous
    trace names its candidates in its step but adds no outfall or water."""
    geoms: list[Any] = []
    outs_: list[str] = []
    waters: list[str] = []
    for start, _frac, label in starts:
        try:
            tr = _network.trace_downstream(net, start)
        except Exception as exc:  # noqa: BLE001 - shown to the user as the reason
            steps.append(f"{label}: cannot trace ({exc}).")
            continue
        if tr.geometry is not None and not tr.geometry.is_empty:
            geoms.append(tr.geometry)
        o = [str(x) for x in (tr.outfall_ids or [])]
        w = [str(x) for x in (tr.receiving_waters or [])]
        if getattr(tr, "ambiguous", False):  # no outfall is named: the candidates only
            steps.append(
                f"{label}, then the network cannot tell which outfall takes the flow "
                f"(candidates {', '.join(o) or 'none'}; {tr.reason or tr.method}): "
                "outfall undetermined"
            )
            continue
        outs_ += o
        waters += w
        steps.append(_step_text(label, o, w, tr.length_m, tr.reason or tr.method))
    return geoms, steps, outs_, waters


def _step_text(label: str, outfalls: list[str], waters: list[str], metres: float, why: str) -> str:
    """One line of a path, saying each thing once.

    The trace's reason already reads "3 conveyance(s), 276 m downstream to outfall
    OF-013 (in the outfalls layer)"; it is used as is, followed by the water.
    """
    water = ", ".join(waters) or "an unknown water"
    why = str(why or "").strip()
    if outfalls and all(f"outfall {o}" in why for o in outfalls[:1]):
        return f"{label}, then {why}, which discharges to {water}"
    if outfalls:
        return (
            f"{label}, then {metres:,.0f} m downstream to outfall {', '.join(outfalls)}"
            f" ({why}), which discharges to {water}"
        )
    return f"{label}: no outfall found ({why or 'no reason given'})"


#: Words of the overland-step methods on the map and in its legend.
OVERLAND_METHODS = {
    "d8": "over the ground (steepest descent on the DEM)",
    "nearest_inlet": "to the nearest inlet (no DEM: a straight line, not the ground)",
}


def overland_steps(ws: Workspace, result: Result | None, parcel_id: str) -> gpd.GeoDataFrame:
    """The overland step of a parcel: a line from the parcel to each target it drains to.

    With the DEM routing (``result.overland``), each line follows the steepest-descent
    directions from the cell of the parcel's part draining to that target nearest that
    part's centre, down to the target's first cell (method ``d8``).  Without a DEM
    (the nearest-inlet fallback), a straight line from the parcel to the inlet
    (method ``nearest_inlet``).

    Returns
    -------
    GeoDataFrame
        ``target_kind, target_id, fraction, method`` and a line geometry (working CRS),
        one row per target reached overland; empty when there is none.
    """
    cols = ["target_kind", "target_id", "fraction", "method"]
    empty = gpd.GeoDataFrame({c: [] for c in cols}, geometry=[], crs=ws.crs)
    d = getattr(result, "drainage", None) if result is not None else None
    parcels = ws.layers.get("parcels")
    if d is None or not len(d) or parcels is None or not len(parcels):
        return empty
    rows = d[d["parcel_id"].astype(str) == str(parcel_id)]
    prow = parcels[parcels["parcel_id"].astype(str) == str(parcel_id)]
    if not len(rows) or not len(prow):
        return empty
    poly = prow.geometry.iloc[0]
    ov = getattr(result, "overland", None)
    recs: list[dict[str, Any]] = []
    for r in rows.to_dict("records"):
        kind, tid = str(r.get("target_kind")), r.get("target_id")
        if is_na(tid) or kind not in ("inlet", "conveyance", "water_direct", "depression"):
            continue
        line = None
        method = "d8"
        if ov is not None:
            line = _d8_line(ov, poly, kind, str(tid))
        if line is None and kind == "inlet":
            end = _inlet_point(ws, result, str(tid))
            if end is not None:
                start = poly.representative_point()
                line = LineString([(start.x, start.y), (end.x, end.y)])
                method = "d8" if ov is not None else "nearest_inlet"
        if line is None or line.is_empty:
            continue
        recs.append(
            {
                "target_kind": kind,
                "target_id": str(tid),
                "fraction": float(r.get("fraction") or 0.0),
                "method": method,
                "geometry": line,
            }
        )
    if not recs:
        return empty
    return gpd.GeoDataFrame(recs, geometry="geometry", crs=ws.crs)


def _inlet_point(ws: Workspace, result: Result | None, node_id: str) -> Any:
    inlets = getattr(result, "inlets", None)
    if inlets is not None and len(inlets) and "node_id" in inlets.columns:
        hit = inlets[inlets["node_id"].astype(str) == node_id]
        if len(hit):
            return hit.geometry.iloc[0]
    return feature_geometry(ws, "structures", node_id)


def _d8_line(ov: Any, poly: Any, kind: str, target_id: str, max_cells: int = 20000) -> Any:
    """Steepest-descent line from the parcel's part draining to a target down to it."""
    label = ov.label_of(kind, target_id)
    if label is None or getattr(ov, "idxs_ds", None) is None:
        return None
    t = ov.transform
    h, w = ov.shape
    minx, miny, maxx, maxy = poly.bounds
    c0, c1 = sorted(((minx - t.c) / t.a, (maxx - t.c) / t.a))
    r0, r1 = sorted(((miny - t.f) / t.e, (maxy - t.f) / t.e))
    c0, r0 = max(int(np.floor(c0)), 0), max(int(np.floor(r0)), 0)
    c1, r1 = min(int(np.ceil(c1)), w), min(int(np.ceil(r1)), h)
    if c0 >= c1 or r0 >= r1:
        return None
    rr, cc = np.mgrid[r0:r1, c0:c1]
    xs, ys = t.c + (cc + 0.5) * t.a, t.f + (rr + 0.5) * t.e
    inside = shapely.contains_xy(poly, xs, ys) & (ov.labels[r0:r1, c0:c1] == label)
    if not inside.any():
        return None
    px, py = xs[inside], ys[inside]
    k = int(np.argmin((px - px.mean()) ** 2 + (py - py.mean()) ** 2))
    start = int(rr[inside][k] * w + cc[inside][k])
    # the downstream index, not the pyflwdir graph (building it costs seconds on a county)
    mask = np.asarray(ov.target_mask).ravel()
    idx = walk_down(ov.idxs_ds, start, mask, max_cells=max_cells)
    r, c = np.divmod(idx, w)
    coords = np.column_stack([t.c + (c + 0.5) * t.a, t.f + (r + 0.5) * t.e])
    if len(coords) < 2:
        coords = np.vstack([coords, coords + [0.01, 0.0]])
    return LineString(coords)
