"""Build the directed storm network: snap, split, orient, find outfalls, QA.

The public entry point is :func:`ms4map.network.build_network`; this module holds
the work.  Everything runs on numpy arrays (cKDTree / STRtree for snapping) so a
county-sized network builds in seconds.  See ``docs/network.md`` for the rules.

The build is a chain of plain functions over plain tables (:func:`run_build`):
:func:`read_structures` -> :class:`StructureTable`, :func:`read_conveyances` ->
:class:`ConveyanceTable`, :func:`snap_ends` -> :class:`EndTable`,
:func:`split_lines` and :func:`assumed_laterals` -> :class:`SplitTable`,
:func:`orient_lines` -> :class:`Orientation`, :func:`assemble_edges` ->
:class:`EdgeTable`, :func:`find_outfalls` -> :class:`OutfallTable`,
:func:`graph_qa`, :func:`network_frames` -> :class:`StormNetwork`, and last
:func:`sink_pools_and_graph_qa` on the solved graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..core.errors import DataError
from ..core.qa import QAReport, shown_ids
from ..core.schema import INLET_KINDS, OPEN_CONVEYANCE_KINDS
from .settings import (
    DEFAULT_ID_MATCH_M,
    DEFAULT_LATERAL_M,
    DEFAULT_SNAP_M,
    DEFAULT_WATER_M,
    OUTFALL_METHODS,
)

if TYPE_CHECKING:
    from ..io.workspace import Workspace
    from .trace import _Solved

__all__ = [
    "DEFAULT_SNAP_M",
    "DEFAULT_WATER_M",
    "DEFAULT_ID_MATCH_M",
    "DEFAULT_LATERAL_M",
    "ORIENT_METHODS",
    "OUTFALL_METHODS",
    "StormNetwork",
    "build_network",
    "crs_unit_factor",
]

#: Values of ``edges.orient_method``: the rule of docs/rules.md section 1 that decided.
ORIENT_METHODS = (
    "inverts",
    "ids",
    "flow_dir",
    "flow_dir_bi",
    "structure_inverts",
    "structure_rims",
    "dem_ground",
    "outlet_path",
    "flow_dir_uni",
    "digitized",
    "assumed_lateral",
)
_STEP = "network"
#: Outfall attributes carried from the outfalls layer into ``net.outfalls``.
_OUTFALL_ATTRS = ("receiving_water", "pwl_id", "status", "permit_id")
_NA = pd.NA


def crs_unit_factor(crs: Any) -> float:
    """Metres per unit of the CRS's first axis (1.0 for metres, 0.3048006 for US feet)."""
    from ..core.units import metres_per_unit

    return metres_per_unit(crs)


@dataclass
class StormNetwork:
    """The directed storm network.

    Attributes
    ----------
    nodes : GeoDataFrame
        Index ``node_id`` (the ``struct_id`` for structures, ``J<n>`` for junctions
        made where conveyance ends meet without a structure).  Columns ``struct_id``
        (NA for junctions), ``kind``, ``is_inlet``, ``invert_elev``, ``rim_elev``.
    edges : GeoDataFrame
        One row per conveyance part: ``conv_id``, ``part`` (0 unless the conveyance
        was split where another one ends on it), ``from_node``, ``to_node``, ``kind``,
        ``is_open``, ``bidirectional``, ``orient_method``, ``length_m``,
        ``diameter_in``, ``us_invert``, ``ds_invert``; geometry digitised in flow
        order.
    outfalls : GeoDataFrame
        Index ``outfall_id``; columns ``node_id``, ``receiving_water``, ``pwl_id``,
        ``status``, ``method`` (:data:`OUTFALL_METHODS`).
    qa : QAReport
        Findings of step ``network``.
    crs : pyproj.CRS
        The working CRS.
    settings : dict
        Tolerances used (metres and CRS units).
    """

    nodes: gpd.GeoDataFrame
    edges: gpd.GeoDataFrame
    outfalls: gpd.GeoDataFrame
    qa: QAReport
    crs: Any
    settings: dict[str, Any] = field(default_factory=dict)
    #: struct_id of every input structure (input order) -> node_id (coincident
    #: structures share a node) or NA when the structure has no usable geometry.
    structure_nodes: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Terminal nodes that are not outfalls (water layer present, not at water; or no
    #: water layer while the outfalls layer or outfall structures map the outfalls).
    terminals_not_at_water: list[str] = field(default_factory=list)
    #: True when there is no waterbody layer and mapped outfalls exist, so terminals
    #: were not checked against water and are not outfalls.
    terminals_unchecked: bool = False
    #: conv_id -> the evidence the inverts overruled (``"ids"`` or ``"flow_dir"``), for
    #: every ``orientation_conflict`` finding; reasons name it where flow dead-ends.
    orientation_conflicts: dict[str, str] = field(default_factory=dict)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Integer edge endpoints (rows of ``nodes``), kept to skip id look-ups.
    _graph: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (
            f"StormNetwork({len(self.nodes)} nodes, {len(self.edges)} edges, "
            f"{len(self.outfalls)} outfalls, {len(self.qa.findings)} QA findings)"
        )

    @property
    def orient_counts(self) -> dict[str, int]:
        """How many edges each orientation rule decided."""
        return {k: int(v) for k, v in self.edges["orient_method"].value_counts().items()}


# ------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------
def _col(df: pd.DataFrame, name: str, *, kind: str = "str") -> np.ndarray:
    """A column as a numpy array (object for text, float for numbers); NA when absent."""
    n = len(df)
    if name not in df.columns:
        return np.full(n, np.nan) if kind == "float" else np.full(n, None, dtype=object)
    s = df[name]
    if kind == "float":
        return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    blank = pd.isna(s).to_numpy()
    txt = s.astype(object).where(~blank, "").astype(str).str.strip()
    out = txt.to_numpy(dtype=object)
    out[blank | (txt == "").to_numpy()] = None
    return out


def _generated_ids(df: pd.DataFrame, prefix: str) -> np.ndarray:
    if "src_layer" in df.columns and "src_fid" in df.columns:
        return np.array(
            [
                f"{la}:{fid}"
                for la, fid in zip(df["src_layer"].astype(str), df["src_fid"], strict=False)
            ],
            dtype=object,
        )
    return np.array([f"{prefix}:{i + 1}" for i in range(len(df))], dtype=object)


def _fill_ids(ids: np.ndarray, df: pd.DataFrame, prefix: str) -> np.ndarray:
    missing = np.array([v is None for v in ids])
    if missing.any():
        gen = _generated_ids(df, prefix)
        ids = np.where(missing, gen, ids)
    return ids


def _check_crs(ws: Workspace) -> CRS:
    if ws.crs is None:
        raise DataError(
            "The workspace has no CRS, so distances cannot be measured. "
            "Fix: open the workspace with --crs EPSG:xxxx (a projected CRS in metres or feet)."
        )
    crs = CRS.from_user_input(ws.crs)
    if not crs.is_projected:
        raise DataError(
            f"The storm network needs a projected working CRS, got {crs.to_string()} "
            f"({crs.name}), whose unit is '{crs.axis_info[0].unit_name}'. Snap tolerances are "
            "metres. Fix: open the workspace with --crs set to a projected CRS, e.g. "
            "EPSG:26918 (UTM 18N) or EPSG:2260-2263 (NY State Plane)."
        )
    return crs


def _line_parts(geom: Any) -> list[Any]:
    """LineString parts of a (Multi)LineString; multi-part lines merged when they chain."""
    if geom is None or geom.is_empty:
        return []
    gt = geom.geom_type
    if gt == "LineString":
        return [geom]
    if gt == "MultiLineString":
        merged = shapely.line_merge(geom)
        if merged.geom_type == "LineString":
            return [merged]
        return [g for g in merged.geoms if not g.is_empty]
    if gt == "GeometryCollection":
        out: list[Any] = []
        for g in geom.geoms:
            out.extend(_line_parts(g))
        return out
    return []


def junction_outfall_ids(
    nodes: list[int], e_u: np.ndarray, e_v: np.ndarray, conv: np.ndarray, *, taken: set[str]
) -> dict[int, str]:
    """Outfall ids a user can look up for terminal junctions (not ``J<n>``).

    ``end:<conv_id>`` where one conveyance ends there, ``junction:<a>+<b>`` where
    several meet; ``~2``, ``~3`` ... keep them unique.
    """
    out: dict[int, str] = {}
    if not nodes:
        return out
    want = np.asarray(nodes)
    inc: dict[int, list[str]] = {}
    for side in (e_v, e_u):
        for k in np.where(np.isin(side, want))[0]:
            inc.setdefault(int(side[k]), []).append(str(conv[k]))
    used = set(taken)
    for nd in nodes:
        names = sorted(dict.fromkeys(inc.get(nd, [])))
        base = (
            f"end:{names[0]}"
            if len(names) == 1
            else "junction:" + "+".join(names[:3]) + ("+..." if len(names) > 3 else "")
        )
        name, k = base, 2
        while name in used:
            name, k = f"{base}~{k}", k + 1
        used.add(name)
        out[nd] = name
    return out


# ------------------------------------------------------------------------------------
# build
# ------------------------------------------------------------------------------------
def build_network(
    ws: Workspace,
    *,
    snap_tolerance_m: float = DEFAULT_SNAP_M,
    water_tolerance_m: float = DEFAULT_WATER_M,
    id_match_m: float = DEFAULT_ID_MATCH_M,
    lateral_tolerance_m: float = DEFAULT_LATERAL_M,
) -> StormNetwork:
    """Build the directed storm network of a workspace.

    Parameters
    ----------
    ws : ms4map.io.workspace.Workspace
        Canonical layers in the projected working CRS: ``conveyances`` (required),
        ``structures``, ``outfalls`` and ``waterbodies`` (optional).
    snap_tolerance_m : float
        Conveyance ends within this distance (metres) of a structure, of another
        end, or of another conveyance's interior (which is then split) connect.
    water_tolerance_m : float
        A terminal node within this distance (metres) of a waterbody is an outfall
        (``terminal_at_water``).
    id_match_m : float
        From/to structure ids are trusted when the named structure lies within this
        distance (metres) of the conveyance end; otherwise the geometry decides and
        an ``id_geometry_mismatch`` finding is raised.
    lateral_tolerance_m : float
        A structure that no conveyance reaches (QA ``orphan_structure``) is assumed
        to drain through an unmapped lateral to the nearest conveyance within this
        distance (metres): the network gets an edge with ``orient_method``
        ``assumed_lateral`` and the structure's assignment method says so.  0 turns
        this off.

    Returns
    -------
    StormNetwork

    Raises
    ------
    ms4map.core.errors.DataError
        No conveyances layer, no usable conveyance, no CRS or a geographic CRS, or
        a negative tolerance.
    """
    for name, val in (
        ("snap_tolerance_m", snap_tolerance_m),
        ("water_tolerance_m", water_tolerance_m),
        ("id_match_m", id_match_m),
        ("lateral_tolerance_m", lateral_tolerance_m),
    ):
        if not isinstance(val, (int, float)) or not math.isfinite(val) or val < 0:
            raise DataError(f"{name} must be a non-negative number of metres, got {val!r}.")
    crs = _check_crs(ws)
    conv = ws.layers.get("conveyances") if hasattr(ws, "layers") else None
    if conv is None or len(conv) == 0:
        raise DataError(
            "The workspace has no conveyances (pipes, culverts, ditches, swales, connector "
            "links), so there is no storm network to build. Fix: map your pipe layer with "
            "--layer conveyances=LAYER."
        )
    cfg = BuildConfig.of(crs, snap_tolerance_m, water_tolerance_m, id_match_m, lateral_tolerance_m)
    return run_build(ws, cfg)


# ------------------------------------------------------------------------------------
# orientation from known outlets and from the ground (plain functions over arrays)
# ------------------------------------------------------------------------------------
def segment_table(
    end_node: np.ndarray,
    cv_len: np.ndarray,
    splits: dict[int, list[tuple[float, int]]],
    lateral_edges: list[tuple[int, int, float, int]] = (),  # type: ignore[assignment]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The undirected pieces of the network: ``(u, v, length, line)`` arrays.

    One row per conveyance between its two end nodes, or per part where the line is
    split (``splits``: line -> [(distance along it, node)]), plus the assumed
    laterals (``line`` -1).  Lengths are in CRS units.
    """
    L = len(cv_len)
    na, nb = end_node[:L], end_node[L:]
    whole = np.ones(L, dtype=bool)
    if splits:
        whole[list(splits)] = False
    us, vs, ws_, ls = [na[whole]], [nb[whole]], [cv_len[whole]], [np.where(whole)[0]]
    for j, cuts in splits.items():
        cuts = sorted(cuts)
        seq_n = [int(na[j])] + [nd for _, nd in cuts] + [int(nb[j])]
        seq_t = [0.0] + [t for t, _ in cuts] + [float(cv_len[j])]
        us.append(np.array(seq_n[:-1]))
        vs.append(np.array(seq_n[1:]))
        ws_.append(np.diff(np.array(seq_t)))
        ls.append(np.full(len(seq_n) - 1, j))
    if lateral_edges:
        lat = np.array([(a, b, d) for a, b, d, _ in lateral_edges], dtype=float)
        us.append(lat[:, 0].astype(int))
        vs.append(lat[:, 1].astype(int))
        ws_.append(lat[:, 2])
        ls.append(np.full(len(lat), -1))
    return (
        np.concatenate(us).astype(int),
        np.concatenate(vs).astype(int),
        np.concatenate(ws_).astype(float),
        np.concatenate(ls).astype(int),
    )


def outlet_distances(
    u: np.ndarray, v: np.ndarray, length: np.ndarray, n_nodes: int, outlets: np.ndarray
) -> np.ndarray:
    """Distance along the network (undirected, by length) from every node to its nearest
    real outlet; ``inf`` where no outlet is connected (one multi-source Dijkstra)."""
    dist = np.full(n_nodes, np.inf)
    outlets = np.unique(np.asarray(outlets, dtype=int))
    if len(outlets) == 0 or len(u) == 0:
        dist[outlets] = 0.0
        return dist
    from scipy.sparse.csgraph import dijkstra

    keep = u != v
    # a virtual source joined to every outlet at zero cost (tiny weight: csgraph
    # drops explicit zeros)
    src = n_nodes
    rows = np.r_[u[keep], v[keep], np.full(len(outlets), src)]
    cols = np.r_[v[keep], u[keep], outlets]
    w = np.r_[
        np.maximum(length[keep], 1e-12),
        np.maximum(length[keep], 1e-12),
        np.full(len(outlets), 1e-12),
    ]
    g = coo_matrix((w, (rows, cols)), shape=(n_nodes + 1, n_nodes + 1)).tocsr()
    d = dijkstra(g, directed=True, indices=src)
    dist[:] = d[:n_nodes] - 1e-12
    dist[outlets] = 0.0
    return dist


def orient_by_outlet_path(
    dist_a: np.ndarray, dist_b: np.ndarray, *, tie: float = 0.0
) -> np.ndarray:
    """+1 (first vertex to last) where the first end lies farther from the nearest real
    outlet than the last, -1 the other way, 0 where neither end reaches an outlet or
    both lie equally far (within ``tie``)."""
    fa, fb = np.isfinite(dist_a), np.isfinite(dist_b)
    ev = np.zeros(len(dist_a), dtype=int)
    both = fa & fb
    ev[both & (dist_a > dist_b + tie)] = 1
    ev[both & (dist_b > dist_a + tie)] = -1
    return ev


def dem_ground_at(dem: Any, xy: np.ndarray) -> np.ndarray:
    """Ground elevation of the DEM cell under each point (NaN off the DEM or on nodata)."""
    out = np.full(len(xy), np.nan)
    if dem is None or len(xy) == 0:
        return out
    inv = ~dem.transform
    col = inv.a * xy[:, 0] + inv.b * xy[:, 1] + inv.c
    row = inv.d * xy[:, 0] + inv.e * xy[:, 1] + inv.f
    r = np.floor(np.asarray(row)).astype(np.int64)
    c = np.floor(np.asarray(col)).astype(np.int64)
    h, w = dem.array.shape
    ok = (r >= 0) & (r < h) & (c >= 0) & (c < w)
    out[ok] = dem.array[r[ok], c[ok]]
    return out


def downhill_evidence(za: np.ndarray, zb: np.ndarray, thr: float) -> np.ndarray:
    """+1 where the first end lies higher than the last by more than ``thr``, -1 the
    other way, 0 when unknown or level."""
    both = np.isfinite(za) & np.isfinite(zb)
    return np.where(both & (za > zb + thr), 1, np.where(both & (zb > za + thr), -1, 0))


def open_end_headwalls(kind: np.ndarray, degree: np.ndarray) -> np.ndarray:
    """Structures of kind ``headwall`` that one conveyance end touches (an open end)."""
    k = np.asarray(kind, dtype=object)
    return np.where((k == "headwall") & (degree[: len(k)] == 1))[0]


# ------------------------------------------------------------------------------------
# the build steps: plain functions over plain tables
# ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BuildConfig:
    """Tolerances of one build, in CRS units (``settings`` keeps the metres)."""

    crs: Any
    m_per_unit: float  # metres per CRS unit
    tol: float
    water_tol: float
    id_tol: float
    lateral_tol: float
    coincident_tol: float
    elev_thr: float
    settings: dict[str, Any]

    @classmethod
    def of(
        cls, crs: CRS, snap_m: float, water_m: float, id_m: float, lateral_m: float
    ) -> BuildConfig:
        f = crs_unit_factor(crs)
        feetish = abs(f - 0.3048) < 0.001
        # docs/rules.md section 1: 0.01 ft; the vertical unit is taken to be the CRS's linear unit.
        elev_thr = 0.01 if feetish else 0.003
        return cls(
            crs=crs,
            m_per_unit=f,
            tol=snap_m / f,
            water_tol=water_m / f,
            id_tol=max(id_m, snap_m) / f,
            lateral_tol=lateral_m / f,
            coincident_tol=0.01 / f,  # 1 cm: "identical coordinates"
            elev_thr=elev_thr,
            settings={
                "snap_tolerance_m": snap_m,
                "water_tolerance_m": water_m,
                "id_match_m": id_m,
                "lateral_tolerance_m": lateral_m,
                "crs_unit_m": f,
                "snap_tolerance_crs": snap_m / f,
                "elev_threshold": elev_thr,
            },
        )


@dataclass
class StructureTable:
    """Structures in input order: ids (unique), kind, elevations, points; coincident
    structures share the node of the first (``primary``)."""

    ids_in: np.ndarray
    ids: np.ndarray
    kind: np.ndarray
    inv: np.ndarray
    rim: np.ndarray
    ok: np.ndarray
    xy: np.ndarray
    primary: np.ndarray
    is_primary: np.ndarray
    tree_idx: np.ndarray
    tree: Any
    id_index: dict[str, int]

    @property
    def count(self) -> int:
        return len(self.ids)


@dataclass
class ConveyanceTable:
    """Usable line parts (one row per part), with their attributes and end points."""

    row: np.ndarray
    ids: np.ndarray
    geom: np.ndarray
    kind: np.ndarray
    from_id: np.ndarray
    to_id: np.ndarray
    flow_dir: np.ndarray
    us_invert: np.ndarray
    ds_invert: np.ndarray
    diameter_in: np.ndarray
    start_xy: np.ndarray  # first vertex
    end_xy: np.ndarray  # last vertex
    length: np.ndarray
    _mids: Any = None

    @property
    def count(self) -> int:
        return len(self.ids)

    def mid(self, j: int) -> np.ndarray:
        """Midpoint of line ``j`` (where QA findings about it are placed)."""
        if self._mids is None:
            self._mids = shapely.get_coordinates(
                shapely.line_interpolate_point(self.geom, 0.5, normalized=True)
            )[:, :2]
        return self._mids[j]


@dataclass
class EndTable:
    """Line ends ``e`` (``e < L``: first vertex of line ``e``; else last vertex of
    ``e - L``) and the node each attaches to: structures ``0..n_st-1``, junctions
    after (``jxy``)."""

    xy: np.ndarray
    struct: np.ndarray
    node: np.ndarray
    how: np.ndarray
    ids_rev: np.ndarray
    ids_known: np.ndarray
    n_st: int
    jxy: np.ndarray


@dataclass
class SplitTable:
    """Where lines are split (line -> [(distance along it, node)]), why
    (node -> ``dangling``/``structure``/``lateral``), the assumed laterals
    ``(structure node, target node, length, line)`` and the junction coordinates."""

    splits: dict[int, list[tuple[float, int]]]
    split_kind: dict[int, str]
    lateral_edges: list[tuple[int, int, float, int]]
    jxy: np.ndarray


@dataclass
class Orientation:
    """Per line: direction (+1 as drawn, -1 reversed), two-way, the rule that decided."""

    direction: np.ndarray
    bi: np.ndarray
    method: np.ndarray
    node_dist: np.ndarray | None
    conflicts: dict[str, str]
    uni_disagrees: int


@dataclass
class EdgeTable:
    """Directed edges (columns in ``rows``; ``from_node``/``to_node`` node numbers) and the nodes."""

    rows: dict[str, np.ndarray]
    from_node: np.ndarray
    to_node: np.ndarray
    bi: np.ndarray
    src: np.ndarray
    node_ids: np.ndarray
    nodes_used: np.ndarray


@dataclass
class OutfallTable:
    """Outfall id and method per node (None where none), outfalls-layer attributes,
    unsnapped outfalls, terminals that are not outfalls, and the water checks."""

    out_id: np.ndarray
    method: np.ndarray
    attrs: dict[int, dict[str, Any]]
    unsnapped: list[dict[str, Any]]
    not_at_water: list[int]
    has_water: bool
    water_tree: Any
    terminals_are_outfalls: bool


def node_xy(st_xy: np.ndarray, jxy: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Coordinates of nodes: structures first (rows of ``st_xy``), junctions after."""
    n_st = len(st_xy)
    nodes = np.asarray(nodes, dtype=int)
    out = np.zeros((len(nodes), 2))
    s = nodes < n_st
    out[s] = st_xy[nodes[s]]
    out[~s] = jxy[nodes[~s] - n_st]
    return out


def _warn(
    qa: QAReport,
    code: str,
    layer: str,
    msg: str,
    *,
    fid: Any = None,
    xy: Any = None,
    fix: str = "",
    level: str = "warning",
    column: str | None = None,
) -> None:
    x = y = None
    if xy is not None:
        x, y = float(xy[0]), float(xy[1])
    qa.add(
        level,
        code,
        layer,
        msg,
        feature_id=None if fid is None else str(fid),
        fix=fix,
        step=_STEP,
        x=x,
        y=y,
        column=column,
    )


def water_tree(ws: Workspace) -> Any:
    """STRtree of the waterbody geometries, or None without a (non-empty) water layer."""
    wb = ws.layers.get("waterbodies")
    if wb is None or not len(wb):
        return None
    wg = np.array([g for g in wb.geometry.values if g is not None and not g.is_empty], dtype=object)
    return shapely.STRtree(wg) if len(wg) else None


def read_structures(ws: Workspace, cfg: BuildConfig, qa: QAReport) -> StructureTable:
    """Structures as nodes: unique ids, points, coincident structures merged (QA)."""
    df = ws.layers.get("structures")
    if df is None or len(df) == 0:
        df = gpd.GeoDataFrame({"struct_id": []}, geometry=[], crs=cfg.crs)
    ids = _fill_ids(_col(df, "struct_id"), df, "structures")
    kinds = _col(df, "kind")
    geoms = df.geometry.values
    ok = (shapely.get_type_id(geoms) == 0) & ~shapely.is_empty(geoms)
    for i in np.where(~ok)[0]:
        g = geoms[i]
        _warn(
            qa,
            "bad_geometry",
            "structures",
            f"Structure has {'no' if g is None or g.is_empty else g.geom_type} "
            "geometry (a point is needed); it is left out of the network.",
            fid=ids[i],
            fix="Give the structure a point location.",
        )
    xy = np.full((len(df), 2), np.nan)
    if ok.any():
        xy[ok] = shapely.get_coordinates(geoms[ok])[:, :2]
    # duplicate ids
    seen: dict[str, int] = {}
    uniq = ids.copy()
    for i, v in enumerate(ids):
        if v in seen:
            k = 2
            while f"{v}~{k}" in seen:
                k += 1
            uniq[i] = f"{v}~{k}"
            _warn(
                qa,
                "duplicate_feature",
                "structures",
                f"Structure id '{v}' is used by more than one structure; this one "
                f"is called '{uniq[i]}' in the network.",
                fid=v,
                xy=xy[i] if ok[i] else None,
                fix="Give every structure a unique id.",
                column="struct_id",
            )
        seen[uniq[i]] = i
    # coincident structures share one node: an outfall among them (so the network keeps
    # its outfall whatever the order of the rows), else the first
    n = len(df)
    primary = np.arange(n)
    okidx = np.where(ok)[0]
    if len(okidx) > 1:
        tree = cKDTree(xy[okidx])
        pairs = tree.query_pairs(cfg.coincident_tol, output_type="ndarray")
        if len(pairs):
            m = coo_matrix(
                (np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                shape=(len(okidx), len(okidx)),
            )
            _, lab = connected_components(m, directed=False)
            not_outfall = np.asarray(kinds, dtype=object)[okidx] != "outfall"
            key = pd.Series(not_outfall.astype(np.int64) * len(okidx) + np.arange(len(okidx)))
            first = key.groupby(lab).transform("min").to_numpy() % len(okidx)
            primary[okidx] = okidx[first]
            for i in okidx[first != np.arange(len(okidx))]:
                p = primary[i]
                _warn(
                    qa,
                    "duplicate_feature",
                    "structures",
                    f"Structure '{uniq[i]}' lies at the same coordinates as "
                    f"'{uniq[p]}'; both are treated as one network node "
                    f"'{uniq[p]}'.",
                    fid=uniq[i],
                    xy=xy[i],
                    fix="Delete the duplicate structure or move it to its true place.",
                )
    is_primary = ok & (primary == np.arange(n))
    tree_idx = np.where(is_primary)[0]
    id_index: dict[str, int] = {}
    for i in np.where(ok)[0][::-1]:
        id_index[ids[i]] = int(primary[i])
    return StructureTable(
        ids_in=ids,
        ids=uniq,
        kind=kinds,
        inv=_col(df, "invert_elev", kind="float"),
        rim=_col(df, "rim_elev", kind="float"),
        ok=ok,
        xy=xy,
        primary=primary,
        is_primary=is_primary,
        tree_idx=tree_idx,
        tree=cKDTree(xy[tree_idx]) if len(tree_idx) else None,
        id_index=id_index,
    )


def read_conveyances(ws: Workspace, cfg: BuildConfig, qa: QAReport) -> ConveyanceTable:
    """Usable line parts: multi-part lines merged or split, bad and zero-length lines out (QA)."""
    df = ws.layers["conveyances"]
    ids = _fill_ids(_col(df, "conv_id"), df, "conveyances")
    cols = {
        "kind": _col(df, "kind"),
        "from_id": _col(df, "from_id"),
        "to_id": _col(df, "to_id"),
        "flow_dir": _col(df, "flow_dir"),
        "us_invert": _col(df, "us_invert", kind="float"),
        "ds_invert": _col(df, "ds_invert", kind="float"),
        "diameter_in": _col(df, "diameter_in", kind="float"),
    }
    rows: list[int] = []
    geoms: list[Any] = []
    cids: list[str] = []
    seen: set[str] = set()
    gv = df.geometry.values
    gv = np.asarray(shapely.force_2d(np.asarray(gv, dtype=object)), dtype=object)
    simple = (
        (shapely.get_type_id(gv) == 1)
        & ~shapely.is_empty(gv)
        & (shapely.length(gv) > cfg.coincident_tol)
    )
    dup = pd.Series(ids).duplicated(keep="first").to_numpy()
    fast = simple & ~dup
    seen.update(ids[fast])
    slow_idx = np.where(~fast)[0]
    for i in slow_idx:
        g = gv[i]
        cid = ids[i]
        if cid in seen:
            k = 2
            while f"{cid}~{k}" in seen:
                k += 1
            _warn(
                qa,
                "duplicate_feature",
                "conveyances",
                f"Conveyance id '{cid}' is used more than once; this one is called '{cid}~{k}'.",
                fid=cid,
                fix="Give every conveyance a unique id.",
                column="conv_id",
            )
            cid = f"{cid}~{k}"
        seen.add(cid)
        parts = _line_parts(g)
        if not parts:
            what = "no geometry" if g is None or g.is_empty else f"a {g.geom_type}"
            _warn(
                qa,
                "bad_geometry",
                "conveyances",
                f"Conveyance has {what} (a line is needed); it is left out.",
                fid=cid,
                fix="Redraw it as a line.",
            )
            continue
        if len(parts) > 1:
            c0 = shapely.get_coordinates(parts[0])[0]
            _warn(
                qa,
                "multipart_line",
                "conveyances",
                f"Conveyance is a multi-part line whose {len(parts)} parts do not "
                f"join; each part becomes its own edge ('{cid}.1' ...).",
                fid=cid,
                xy=c0,
                fix="Merge or split the parts in the source layer.",
            )
        for k, part in enumerate(parts):
            coords = shapely.get_coordinates(part)
            length = float(part.length)
            if len(coords) < 2 or length <= cfg.coincident_tol:
                _warn(
                    qa,
                    "zero_length_conveyance",
                    "conveyances",
                    "Conveyance has zero length (one vertex, or all vertices at "
                    "one point); it is left out of the network.",
                    fid=cid,
                    xy=coords[0] if len(coords) else None,
                    fix="Redraw it between the structures it joins, or delete it.",
                )
                continue
            rows.append(i)
            geoms.append(shapely.LineString(coords[:, :2]))
            cids.append(cid if len(parts) == 1 else f"{cid}.{k + 1}")
    rows_all = np.r_[np.where(fast)[0], np.array(rows, dtype=int)]
    geoms_all = np.r_[gv[fast], np.array(geoms, dtype=object)] if rows else gv[fast]
    cids_all = np.r_[ids[fast], np.array(cids, dtype=object)] if rows else ids[fast]
    order = np.argsort(rows_all, kind="stable")
    rows = list(rows_all[order])
    geoms = list(geoms_all[order])
    cids = list(cids_all[order])
    if not rows:
        raise DataError(
            "The conveyances layer has no usable line (every feature is empty, a point "
            "or of zero length). Fix: check that the right layer is mapped to "
            "'conveyances'."
        )
    r = np.array(rows)
    geom = np.array(geoms, dtype=object)
    return ConveyanceTable(
        row=r,
        ids=np.array(cids, dtype=object),
        geom=geom,
        kind=cols["kind"][r],
        from_id=cols["from_id"][r],
        to_id=cols["to_id"][r],
        flow_dir=cols["flow_dir"][r],
        us_invert=cols["us_invert"][r].astype(float),
        ds_invert=cols["ds_invert"][r].astype(float),
        diameter_in=cols["diameter_in"][r].astype(float),
        start_xy=shapely.get_coordinates(shapely.get_point(geom, 0))[:, :2],
        end_xy=shapely.get_coordinates(shapely.get_point(geom, -1))[:, :2],
        length=shapely.length(geom),
    )


def snap_ends(st: StructureTable, cv: ConveyanceTable, cfg: BuildConfig, qa: QAReport) -> EndTable:
    """Attach every line end: from/to ids (checked), nearest structure, attached end, junctions."""
    L = cv.count
    ends = np.vstack([cv.start_xy, cv.end_xy])  # end e: e < L start, e >= L last vertex
    end_struct = np.full(2 * L, -1)  # structure row index (primary) or -1
    how = np.full(2 * L, "", dtype=object)
    # 1. from/to ids, checked against the geometry
    ids_known = np.zeros(L, dtype=bool)
    fi = np.array([st.id_index.get(v, -1) if v is not None else -1 for v in cv.from_id])
    ti = np.array([st.id_index.get(v, -1) if v is not None else -1 for v in cv.to_id])
    for name, col, idx in (("from_id", cv.from_id, fi), ("to_id", cv.to_id, ti)):
        unknown = np.where((idx < 0) & np.array([v is not None for v in col]))[0]
        for j in unknown:
            _warn(
                qa,
                "unknown_structure_id",
                "conveyances",
                f"{name} '{col[j]}' names no structure; the geometry decides.",
                fid=cv.ids[j],
                xy=cv.start_xy[j],
                level="info",
                column=name,
                fix="Correct the id or add the structure.",
            )
    same = (fi >= 0) & (fi == ti)
    for j in np.where(same)[0]:
        _warn(
            qa,
            "id_geometry_mismatch",
            "conveyances",
            f"from_id and to_id both name '{cv.from_id[j]}'; the ids are ignored.",
            fid=cv.ids[j],
            xy=cv.start_xy[j],
            fix="Correct from_id/to_id.",
        )
    fi[same] = -1
    ti[same] = -1
    sxy = st.xy

    def dist(idx: np.ndarray, pts: np.ndarray) -> np.ndarray:
        d = np.full(len(idx), np.inf)
        m = idx >= 0
        d[m] = np.hypot(*(sxy[idx[m]] - pts[m]).T)
        return d

    dfa, dfb, dta, dtb = (
        dist(fi, cv.start_xy),
        dist(fi, cv.end_xy),
        dist(ti, cv.start_xy),
        dist(ti, cv.end_xy),
    )
    both = (fi >= 0) & (ti >= 0)
    rev = np.where(
        both,
        dfb + dta < dfa + dtb,
        np.where(fi >= 0, dfb < dfa, np.where(ti >= 0, dta < dtb, False)),
    )
    d_from = np.where(rev, dfb, dfa)
    d_to = np.where(rev, dta, dtb)
    from_end = np.where(rev, np.arange(L) + L, np.arange(L))
    to_end = np.where(rev, np.arange(L), np.arange(L) + L)
    for idx, d, end, name, col in (
        (fi, d_from, from_end, "from_id", cv.from_id),
        (ti, d_to, to_end, "to_id", cv.to_id),
    ):
        good = (idx >= 0) & (d <= cfg.id_tol)
        end_struct[end[good]] = idx[good]
        how[end[good]] = "id"
        far = np.where((idx >= 0) & (d > cfg.tol))[0]
        for j in far:
            trusted = d[j] <= cfg.id_tol
            _warn(
                qa,
                "id_geometry_mismatch",
                "conveyances",
                f"{name} names structure '{col[j]}', which lies {d[j] * cfg.m_per_unit:.1f} m from "
                "the conveyance end; "
                + ("the id is used." if trusted else "too far: the geometry decides."),
                fid=cv.ids[j],
                xy=ends[end[j]],
                column=name,
                fix="Move the line end onto the structure, or correct the id.",
            )
        ids_known |= good
    ids_rev = rev & ids_known
    # 2. ends to structures within tolerance (nearest)
    free = np.where(end_struct < 0)[0]
    if len(free) and st.tree is not None:
        d, k = st.tree.query(ends[free], distance_upper_bound=cfg.tol)
        m = np.isfinite(d)
        end_struct[free[m]] = st.tree_idx[k[m]]
        how[free[m]] = "structure"
    # node numbering: structures (primary) first, junctions after
    n_st = st.count
    end_node = np.where(end_struct >= 0, end_struct, -1)
    # 3. free ends to ends already at a node
    free = np.where(end_node < 0)[0]
    att = np.where(end_node >= 0)[0]
    if len(free) and len(att):
        t = cKDTree(ends[att])
        d, k = t.query(ends[free], distance_upper_bound=cfg.tol)
        m = np.isfinite(d)
        end_node[free[m]] = end_node[att[k[m]]]
        how[free[m]] = "end"
    # 4. remaining free ends cluster into junctions
    free = np.where(end_node < 0)[0]
    jxy = np.zeros((0, 2))
    if len(free):
        t = cKDTree(ends[free])
        pairs = t.query_pairs(cfg.tol, output_type="ndarray")
        m = coo_matrix(
            (
                np.ones(len(pairs)),
                (pairs[:, 0], pairs[:, 1]) if len(pairs) else (np.zeros(0, int), np.zeros(0, int)),
            ),
            shape=(len(free), len(free)),
        )
        nj, lab = connected_components(m, directed=False)
        end_node[free] = n_st + lab
        jxy = np.zeros((nj, 2))
        cnt = np.bincount(lab, minlength=nj).astype(float)
        jxy[:, 0] = np.bincount(lab, weights=ends[free, 0], minlength=nj) / cnt
        jxy[:, 1] = np.bincount(lab, weights=ends[free, 1], minlength=nj) / cnt
        how[free] = np.where(cnt[lab] > 1, "junction", "none")
    return EndTable(
        xy=ends,
        struct=end_struct,
        node=end_node,
        how=how,
        ids_rev=ids_rev,
        ids_known=ids_known,
        n_st=n_st,
        jxy=jxy,
    )


def split_lines(
    st: StructureTable, cv: ConveyanceTable, ends: EndTable, cfg: BuildConfig
) -> SplitTable:
    """Where a dangling end or a structure lies on another line's middle: split it there.

    A structure that no end reaches splits a line within the tolerance of it (away
    from the line's own ends).  A structure a single end reaches (a lateral ending at a
    manhole that a trunk is digitised straight through, not split) splits a line it
    lies on exactly (within 1 cm, as digitised with snapping), unless that pipe lies
    along the line (the same pipe drawn twice): the trunk carries the lateral's flow
    on.  A structure two or more ends reach already joins its lines (a line passing it
    too is most often the same pipe drawn twice, measured on Norfolk).
    """
    L = cv.count
    n_st = ends.n_st
    n_nodes = n_st + len(ends.jxy)
    deg = np.bincount(ends.node, minlength=n_nodes)
    cand_nodes: list[int] = []
    # dangling ends: junctions with a single end
    dangling = np.where(deg[n_st:] == 1)[0] + n_st
    cand_nodes.extend(dangling.tolist())
    # structures (primary, with a location) that no end or a single end reaches
    on_line = np.where(st.is_primary & (deg[:n_st] <= 1))[0]
    cand_nodes.extend(on_line.tolist())
    splits: dict[int, list[tuple[float, int]]] = {}
    split_kind: dict[int, str] = {}
    none = SplitTable(splits, split_kind, [], ends.jxy)
    if not cand_nodes:
        return none
    cand = np.array(cand_nodes)
    xy = node_xy(st.xy, ends.jxy, cand)
    tree = shapely.STRtree(cv.geom)
    pts = shapely.points(xy)
    pi, li = tree.query(pts, predicate="dwithin", distance=cfg.tol)
    if len(pi) == 0:
        return none
    # incident conveyances of each candidate node (exclude them)
    end_conv = np.r_[np.arange(L), np.arange(L)]
    inc: dict[int, set[int]] = {}
    node_ends = {int(n): None for n in cand}
    for e in np.where(np.isin(ends.node, cand))[0]:
        inc.setdefault(int(ends.node[e]), set()).add(int(end_conv[e]))
    del node_ends
    d = shapely.distance(pts[pi], cv.geom[li])
    t = shapely.line_locate_point(cv.geom[li], pts[pi])
    order = np.lexsort((d, pi))
    done: set[int] = set()
    for k in order:
        p, line = int(pi[k]), int(li[k])
        if p in done:
            continue
        node = int(cand[p])
        if line in inc.get(node, ()):
            continue
        if node < n_st and inc.get(node):
            # a structure a pipe ends at joins a line it lies on exactly (as digitised
            # with snapping), unless that pipe lies along the line (one pipe drawn twice)
            if float(d[k]) > cfg.coincident_tol or _lies_along(
                cv.geom[line], [cv.geom[c] for c in inc[node]], cfg.tol
            ):
                continue
        tt = float(t[k])
        # within the tolerance of that line's own end point: the end snapping step has
        # handled it (a point beside the line near its end, but farther than that from
        # the end point, splits it: its projection is then well inside the line)
        g = cv.geom[line]
        near_end = min(
            float(np.hypot(*(xy[p] - shapely.get_coordinates(g)[0]))),
            float(np.hypot(*(xy[p] - shapely.get_coordinates(g)[-1]))),
        )
        if near_end <= cfg.tol or tt <= 1e-6 or tt >= cv.length[line] - 1e-6:
            continue
        done.add(p)
        splits.setdefault(line, []).append((tt, node))
        split_kind[node] = "dangling" if node >= n_st else "structure"
    return none


def _lies_along(line: Any, pipes: list[Any], tol: float) -> bool:
    """Whether any of ``pipes`` lies along ``line`` (its middle and both ends within
    ``tol`` of it): the same pipe drawn twice, not a lateral that joins it."""
    for g in pipes:
        pts = shapely.line_interpolate_point(g, [0.0, 0.5, 1.0], normalized=True)
        if bool(np.all(shapely.distance(line, pts) <= tol)):
            return True
    return False


def assumed_laterals(
    st: StructureTable, cv: ConveyanceTable, ends: EndTable, sp: SplitTable, cfg: BuildConfig
) -> SplitTable:
    """Link orphan structures to the nearest line within the lateral tolerance (a new split table)."""
    lateral_edges: list[tuple[int, int, float, int]] = []
    splits = {k: list(v) for k, v in sp.splits.items()}
    split_kind = dict(sp.split_kind)
    if cfg.lateral_tol <= 0:
        return SplitTable(splits, split_kind, lateral_edges, sp.jxy)
    L, n_st = cv.count, ends.n_st
    deg = np.bincount(ends.node, minlength=n_st + len(sp.jxy))[:n_st]
    on_line = {nd for nd, k in split_kind.items() if k == "structure"}
    orphan = np.array(
        [
            i
            for i in np.where(st.is_primary & (deg == 0))[0]
            if i not in on_line and st.kind[i] != "outfall"
        ],
        dtype=int,
    )
    if len(orphan) == 0:
        return SplitTable(splits, split_kind, lateral_edges, sp.jxy)
    tree = shapely.STRtree(cv.geom)
    pts = shapely.points(st.xy[orphan])
    pi, li = tree.query_nearest(pts, max_distance=cfg.lateral_tol, all_matches=False)
    new_j: list[np.ndarray] = []
    for p, line in zip(pi, li, strict=True):
        node = int(orphan[p])
        g = cv.geom[line]
        t = float(g.project(pts[p]))
        d = float(g.distance(pts[p]))
        if t <= cfg.tol:
            target = int(ends.node[line])
        elif t >= cv.length[line] - cfg.tol:
            target = int(ends.node[line + L])
        else:
            target = n_st + len(sp.jxy) + len(new_j)
            new_j.append(shapely.get_coordinates(g.interpolate(t))[0, :2])
            splits.setdefault(int(line), []).append((t, target))
            split_kind[target] = "lateral"
        lateral_edges.append((node, target, d, int(line)))
    jxy = np.vstack([sp.jxy, np.array(new_j)]) if new_j else sp.jxy
    return SplitTable(splits, split_kind, lateral_edges, jxy)


def real_outlet_nodes(
    ws: Workspace,
    st: StructureTable,
    ends: EndTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
    wtree: Any,
) -> np.ndarray:
    """Nodes that are real outlets before orientation: outfall structures, points of the
    outfalls layer (nearest node within the snap tolerance), headwalls at an open end,
    and open ends within the water tolerance of a waterbody."""
    n_st = ends.n_st
    n_nodes = n_st + len(sp.jxy)
    deg = np.bincount(ends.node, minlength=n_nodes)
    for parts in sp.splits.values():
        for _, nd in parts:
            deg[nd] += 2
    out = [np.where(st.is_primary & (st.kind == "outfall"))[0]]
    out.append(open_end_headwalls(np.where(st.is_primary, st.kind, None), deg))
    of = ws.layers.get("outfalls")
    if of is not None and len(of):
        g = of.geometry.values
        ok = (shapely.get_type_id(g) == 0) & ~shapely.is_empty(g)
        if ok.any():
            idx = np.r_[np.where(st.is_primary)[0], n_st + np.arange(len(sp.jxy))]
            tree = cKDTree(node_xy(st.xy, sp.jxy, idx))
            d, k = tree.query(shapely.get_coordinates(g[ok])[:, :2], distance_upper_bound=cfg.tol)
            out.append(idx[k[np.isfinite(d)]])
    open_ends = np.where(deg == 1)[0]
    if wtree is not None and len(open_ends):
        pts = shapely.points(node_xy(st.xy, sp.jxy, open_ends))
        pi, _ = wtree.query(pts, predicate="dwithin", distance=cfg.water_tol)
        out.append(open_ends[np.unique(pi)])
    return np.unique(np.concatenate(out).astype(int))


def orient_lines(
    ws: Workspace,
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    wtree: Any = None,
) -> Orientation:
    """Orient every line by the rule chain of docs/network.md (first rule that applies); QA on conflicts."""
    L, thr = cv.count, cfg.elev_thr
    na, nb = ends.node[:L], ends.node[L:]
    # inverts belong to the ends the ids name, else us at the first vertex
    ui, di = cv.us_invert, cv.ds_invert
    inv_a = np.where(ends.ids_rev, di, ui)
    inv_b = np.where(ends.ids_rev, ui, di)
    both = np.isfinite(inv_a) & np.isfinite(inv_b)
    ev_inv = np.where(
        both & (inv_a > inv_b + thr), 1, np.where(both & (inv_b > inv_a + thr), -1, 0)
    )
    ev_ids = np.where(ends.ids_known, np.where(ends.ids_rev, -1, 1), 0)
    fd = np.asarray(cv.flow_dir, dtype=object)
    ev_fd = np.where(fd == "reverse", -1, 0)
    ev_uni = np.where(fd == "uni", 1, 0)
    is_bi = fd == "bi"

    def node_val(arr: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        out = np.full(len(nodes), np.nan)
        m = nodes < ends.n_st
        out[m] = arr[nodes[m]]
        return out

    sia, sib = node_val(st.inv, na), node_val(st.inv, nb)
    sb = np.isfinite(sia) & np.isfinite(sib)
    ev_sinv = np.where(sb & (sia > sib + thr), 1, np.where(sb & (sib > sia + thr), -1, 0))
    sra, srb = node_val(st.rim, na), node_val(st.rim, nb)
    rb = np.isfinite(sra) & np.isfinite(srb)
    ev_srim = np.where(rb & (sra > srb + thr), 1, np.where(rb & (srb > sra + thr), -1, 0))
    direction = np.ones(L, dtype=int)
    method = np.full(L, "digitized", dtype=object)
    bi = np.zeros(L, dtype=bool)
    decided = np.zeros(L, dtype=bool)
    for ev, name in ((ev_inv, "inverts"), (ev_ids, "ids"), (ev_fd, "flow_dir")):
        m = ~decided & (ev != 0)
        direction[m] = ev[m]
        method[m] = name
        decided |= m
        if name == "ids":
            m = ~decided & is_bi
            bi[m] = True
            method[m] = "flow_dir_bi"
            decided |= m
    ev_dem = np.zeros(L, dtype=int)
    dem = getattr(ws, "dem", None)
    if dem is not None and not decided.all():
        za = dem_ground_at(dem, node_xy(st.xy, sp.jxy, na))
        zb = dem_ground_at(dem, node_xy(st.xy, sp.jxy, nb))
        ev_dem = downhill_evidence(za, zb, thr)
    for ev, name in (
        (ev_sinv, "structure_inverts"),
        (ev_srim, "structure_rims"),
        (ev_dem, "dem_ground"),
    ):
        m = ~decided & (ev != 0)
        direction[m] = ev[m]
        method[m] = name
        decided |= m
    # outlet_path: from the end farther along the network from the nearest real
    # outlet to the nearer end (only where no stronger evidence decided)
    node_dist = None
    ev_out = np.zeros(L, dtype=int)
    if not decided.all():
        seg = segment_table(ends.node, cv.length, sp.splits, sp.lateral_edges)
        n_nodes = ends.n_st + len(sp.jxy)
        outlets = real_outlet_nodes(ws, st, ends, sp, cfg=cfg, wtree=wtree)
        node_dist = outlet_distances(seg[0], seg[1], seg[2], n_nodes, outlets)
        ev_out = orient_by_outlet_path(node_dist[na], node_dist[nb])
    m = ~decided & (ev_out != 0)
    direction[m] = ev_out[m]
    method[m] = "outlet_path"
    decided |= m
    uni_disagrees = int(np.sum(m & (ev_uni != 0) & (ev_uni != ev_out)))
    m = ~decided & (ev_uni != 0)
    method[m] = "flow_dir_uni"
    decided |= m
    # QA: conflicting evidence, reversed digitisation, uphill pipes
    layer = "conveyances"
    for j in np.where((ev_inv != 0) & (ev_ids != 0) & (ev_inv != ev_ids))[0]:
        _warn(
            qa,
            "orientation_conflict",
            layer,
            "The inverts say the conveyance flows from its to_id structure to its "
            "from_id structure; the inverts win (docs/rules.md section 1).",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check the invert elevations and the from/to ids.",
        )
    ev_fd = np.where(ev_uni != 0, ev_uni, ev_fd)  # any flow-direction value
    for j in np.where((ev_inv != 0) & (ev_fd != 0) & (ev_inv != ev_fd))[0]:
        _warn(
            qa,
            "orientation_conflict",
            layer,
            "The flow-direction attribute disagrees with the inverts; the inverts win.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check flow_dir and the inverts.",
        )
    for j in np.where((method == "inverts") & (direction == -1))[0]:
        _warn(
            qa,
            "reversed_digitization",
            layer,
            "The line is digitised against the flow its inverts show; the network "
            "uses it reversed.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            level="info",
            fix="Flip the line so it is drawn in the direction of flow.",
        )
    # uphill: the chosen direction runs from a lower to a higher structure invert,
    # or the pipe's own inverts (read along the ids) run uphill
    up_struct = (ev_sinv != 0) & (ev_sinv != direction) & ~bi
    for j in np.where(up_struct)[0]:
        _warn(
            qa,
            "uphill_pipe",
            layer,
            f"The conveyance's direction (chosen by the '{method[j]}' rule, docs/network.md) "
            "runs from a structure with a lower invert to one with a higher invert.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check the structure inverts and the conveyance direction.",
        )
    conflicts: dict[str, str] = {}
    for j in np.where((ev_inv != 0) & (ev_fd != 0) & (ev_inv != ev_fd))[0]:
        conflicts[str(cv.ids[j])] = "flow_dir"
    for j in np.where((ev_inv != 0) & (ev_ids != 0) & (ev_inv != ev_ids))[0]:
        conflicts[str(cv.ids[j])] = "ids"
    return Orientation(
        direction=direction,
        bi=bi,
        method=method,
        node_dist=node_dist,
        conflicts=conflicts,
        uni_disagrees=uni_disagrees,
    )


def assemble_edges(
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    *,
    cfg: BuildConfig,
    qa: QAReport,
) -> EdgeTable:
    """Directed edges in flow order (split lines in parts, assumed laterals) and the node table."""
    n_lines = cv.count
    nodes_used, node_ids = _node_table(st, ends, sp)
    rows: dict[str, list[Any]] = {k: [] for k in _EDGE_COLUMNS}
    fast, fast_cols = _straight_edges(cv, ends, sp, ori)
    for j in np.where(~fast)[0]:
        _split_line_edges(j, cv, ends, sp, ori, cfg=cfg, qa=qa, rows=rows)
    _lateral_edges(st, cv, sp, cfg=cfg, qa=qa, rows=rows)
    rows = _edges_in_flow_order(fast_cols, rows, n_lines)
    return EdgeTable(
        rows=rows,
        from_node=np.array(rows["u"], dtype=int),
        to_node=np.array(rows["v"], dtype=int),
        bi=np.array(rows["bi"], dtype=bool),
        src=np.array(rows["src"], dtype=int),
        node_ids=node_ids,
        nodes_used=nodes_used,
    )


#: The columns of the edge rows (``u``, ``v``: node rows; ``src``: conveyance row, -1 for
#: an assumed lateral).
_EDGE_COLUMNS = (
    "conv_id",
    "part",
    "u",
    "v",
    "kind",
    "orient_method",
    "bi",
    "geometry",
    "diameter_in",
    "us_invert",
    "ds_invert",
    "src",
)


def _node_table(
    st: StructureTable, ends: EndTable, sp: SplitTable
) -> tuple[np.ndarray, np.ndarray]:
    """Which nodes the network uses (ends, primary structures, split points) and the node
    ids (structure ids, then ``J1``, ``J2``, ... for the junctions of the splits)."""
    nodes_used = np.zeros(ends.n_st + len(sp.jxy), dtype=bool)
    nodes_used[ends.node] = True
    nodes_used[: ends.n_st] |= st.is_primary
    for parts in sp.splits.values():
        for _, nd in parts:
            nodes_used[nd] = True
    j_ids = np.array([f"J{i + 1}" for i in range(len(sp.jxy))], dtype=object)
    return nodes_used, np.r_[st.ids, j_ids]


def _straight_edges(
    cv: ConveyanceTable, ends: EndTable, sp: SplitTable, ori: Orientation
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Vectorised: the conveyances that are not split and join two different nodes, one
    edge each (the mask of those conveyances and the edges' columns)."""
    n_lines = cv.count
    na_all, nb_all = ends.node[:n_lines], ends.node[n_lines:]
    has_split = np.zeros(n_lines, dtype=bool)
    has_split[list(sp.splits)] = True
    fast = ~has_split & (na_all != nb_all)
    fj = np.where(fast)[0]
    rev = ori.direction[fj] == -1
    ui0 = np.where(ends.ids_rev[fj], cv.ds_invert[fj], cv.us_invert[fj])
    di0 = np.where(ends.ids_rev[fj], cv.us_invert[fj], cv.ds_invert[fj])
    fgeom = cv.geom[fj].copy()
    fgeom[rev] = shapely.reverse(fgeom[rev])
    return fast, {
        "conv_id": cv.ids[fj],
        "part": np.zeros(len(fj), dtype=int),
        "u": np.where(rev, nb_all[fj], na_all[fj]),
        "v": np.where(rev, na_all[fj], nb_all[fj]),
        "kind": cv.kind[fj],
        "orient_method": ori.method[fj],
        "bi": ori.bi[fj],
        "geometry": fgeom,
        "diameter_in": cv.diameter_in[fj],
        "us_invert": np.where(rev, di0, ui0),
        "ds_invert": np.where(rev, ui0, di0),
        "src": fj,
    }


def _split_line_edges(
    j: int,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    rows: dict[str, list[Any]],
) -> None:
    """Append the edges of conveyance ``j`` (split at its cuts, or a self loop left out)."""
    n_lines = cv.count
    g = cv.geom[j]
    na, nb = int(ends.node[j]), int(ends.node[j + n_lines])
    cuts = sorted(sp.splits.get(j, []))
    seq_nodes = [na] + [nd for _, nd in cuts] + [nb]
    seq_t = [0.0] + [t for t, _ in cuts] + [float(cv.length[j])]
    ui, di = cv.us_invert[j], cv.ds_invert[j]
    if ends.ids_rev[j]:
        ui, di = di, ui  # invert at first vertex, at last vertex
    k = 0
    for p in range(len(seq_nodes) - 1):
        u, v = seq_nodes[p], seq_nodes[p + 1]
        t0, t1 = seq_t[p], seq_t[p + 1]
        if t1 - t0 <= cfg.coincident_tol and len(seq_nodes) > 2:
            continue
        if u == v:
            if len(seq_nodes) == 2:
                _warn(
                    qa,
                    "self_loop",
                    "conveyances",
                    "Both ends of the conveyance snap to the same node; it is "
                    "left out of the network.",
                    fid=cv.ids[j],
                    xy=cv.start_xy[j],
                    fix="Check the line: it may be a stub or drawn twice.",
                )
            continue
        part = g if len(seq_nodes) == 2 else shapely.ops.substring(g, t0, t1)
        # a part's inverts: the line's own at its ends, interpolated along its length
        # at the cuts (a pipe's invert falls linearly), unknown where either is unknown
        length = float(cv.length[j])
        ia = ui if p == 0 else ui + (di - ui) * t0 / length if length > 0 else np.nan
        ib = (
            di
            if p == len(seq_nodes) - 2
            else ui + (di - ui) * t1 / length
            if length > 0
            else np.nan
        )
        flip = ori.direction[j] == -1
        if ori.method[j] == "outlet_path" and len(seq_nodes) > 2:
            # each part of a split line runs towards its own nearer end
            du, dv = ori.node_dist[u], ori.node_dist[v]
            if np.isfinite(du) and np.isfinite(dv) and du != dv:
                flip = dv > du
        if flip:
            u, v = v, u
            part = part.reverse()
            ia, ib = ib, ia
        values = (cv.ids[j], k, u, v, cv.kind[j], ori.method[j], bool(ori.bi[j]), part)
        values += (cv.diameter_in[j], ia, ib, j)
        for col, value in zip(_EDGE_COLUMNS, values, strict=True):
            rows[col].append(value)
        k += 1


def _lateral_edges(
    st: StructureTable,
    cv: ConveyanceTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    rows: dict[str, list[Any]],
) -> None:
    """Append an edge for each assumed lateral (structure -> the conveyance's node), with
    an info finding."""
    for node, target, d, line in sp.lateral_edges:
        geom = shapely.LineString(node_xy(st.xy, sp.jxy, np.array([node, target])))
        values = (f"lateral:{st.ids[node]}", 0, node, target, "connector", "assumed_lateral")
        values += (False, geom, np.nan, np.nan, np.nan, -1)
        for col, value in zip(_EDGE_COLUMNS, values, strict=True):
            rows[col].append(value)
        _warn(
            qa,
            "assumed_lateral",
            "structures",
            f"No conveyance reaches the structure; it is assumed to drain through an "
            f"unmapped lateral to conveyance '{cv.ids[line]}', "
            f"{d * cfg.m_per_unit:.1f} m away.",
            fid=st.ids[node],
            xy=st.xy[node],
            level="info",
            fix="Map the lateral that serves this structure.",
        )


def _edges_in_flow_order(
    fast_cols: dict[str, np.ndarray], rows: dict[str, list[Any]], n_lines: int
) -> dict[str, np.ndarray]:
    """The straight edges and the appended ones as arrays, in conveyance order then part
    order (assumed laterals last, in their order)."""
    cols = {}
    for k, fv in fast_cols.items():
        dt = object if k in ("conv_id", "kind", "orient_method", "geometry") else None
        slow = np.array(rows[k], dtype=dt if dt else fv.dtype)
        if k == "geometry" and len(slow) == 0:
            slow = np.zeros(0, dtype=object)
        cols[k] = np.concatenate([np.asarray(fv, dtype=object) if dt else fv, slow])
    key = np.where(cols["src"] >= 0, cols["src"], n_lines + np.arange(len(cols["src"])))
    order = np.lexsort((cols["part"], key))
    return {k: v[order] for k, v in cols.items()}


def rank_terminals(
    kind: np.ndarray,
    is_structure: np.ndarray,
    at_water: np.ndarray,
    *,
    terminals_are_outfalls: bool,
) -> np.ndarray:
    """Outfall method of each terminal node (no way out), or None where it is no outfall.

    Real outlets first: ``terminal_at_water``, then a ``headwall`` structure
    (``headwall_at_end``); then, only when ``terminals_are_outfalls`` (no waterbody
    layer and no outfalls layer), ``terminal_at_structure`` and last
    ``terminal_loose_end`` (a junction: a bare line end).
    """
    kind = np.asarray(kind, dtype=object)
    is_structure = np.asarray(is_structure, dtype=bool)
    at_water = np.asarray(at_water, dtype=bool)
    out = np.full(len(kind), None, dtype=object)
    out[at_water] = "terminal_at_water"
    hw = ~at_water & is_structure & (kind == "headwall")
    out[hw] = "headwall_at_end"
    if terminals_are_outfalls:
        rest = ~at_water & ~hw
        out[rest & is_structure] = "terminal_at_structure"
        out[rest & ~is_structure] = "terminal_loose_end"
    return out


def find_outfalls(
    ws: Workspace,
    st: StructureTable,
    ends: EndTable,
    sp: SplitTable,
    ed: EdgeTable,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    wtree: Any = None,
) -> OutfallTable:
    """Outfalls in order: the outfalls layer, outfall structures, ranked terminals."""
    n_nodes = len(ed.node_ids)
    used = ed.nodes_used
    out_method = np.full(n_nodes, None, dtype=object)
    out_id = np.full(n_nodes, None, dtype=object)
    attrs: dict[int, dict[str, Any]] = {}
    # 1. outfalls layer
    layer = ws.layers.get("outfalls")
    node_idx = np.where(used)[0]
    nxy = node_xy(st.xy, sp.jxy, node_idx)
    ntree = cKDTree(nxy) if len(node_idx) else None
    unsnapped: list[dict[str, Any]] = []
    if layer is not None and len(layer) and ntree is not None:
        oids = _fill_ids(_col(layer, "outfall_id"), layer, "outfalls")
        rw, pwl, stt, permit = (
            _col(layer, c) for c in ("receiving_water", "pwl_id", "status", "permit_id")
        )
        for i, g in enumerate(layer.geometry.values):
            if g is None or g.is_empty or g.geom_type != "Point":
                _warn(
                    qa,
                    "bad_geometry",
                    "outfalls",
                    "Outfall has no point geometry; it is left out.",
                    fid=oids[i],
                    fix="Give the outfall a location.",
                )
                continue
            xy = shapely.get_coordinates(g)[0, :2]
            d, k = ntree.query(xy, distance_upper_bound=cfg.tol)
            rec = {
                "outfall_id": oids[i],
                "receiving_water": rw[i],
                "pwl_id": pwl[i],
                "status": stt[i] if stt[i] is not None else "unknown",
                "permit_id": permit[i],
            }
            if not np.isfinite(d):
                _warn(
                    qa,
                    "unsnapped_outfall",
                    "outfalls",
                    "Outfall is not within the snap tolerance of any network node; "
                    "nothing drains to it.",
                    fid=oids[i],
                    xy=xy,
                    fix="Move the outfall onto the end of its pipe.",
                )
                rec.update(node=-1, xy=xy)
                unsnapped.append(rec)
                continue
            nd = int(node_idx[k])
            if out_id[nd] is not None:
                _warn(
                    qa,
                    "duplicate_feature",
                    "outfalls",
                    f"Outfall shares its network node with outfall '{out_id[nd]}'.",
                    fid=oids[i],
                    xy=xy,
                    fix="Delete the duplicate outfall.",
                )
                continue
            out_id[nd] = oids[i]
            out_method[nd] = "outfalls_layer"
            attrs[nd] = rec
    # 2. structures of kind outfall
    for i in np.where(st.is_primary)[0]:
        if st.kind[i] == "outfall" and out_id[i] is None:
            out_id[i] = st.ids[i]
            out_method[i] = "outfall_structure"
    # 3. terminals
    outdeg = np.bincount(ed.from_node, minlength=n_nodes) + np.bincount(
        ed.to_node[ed.bi], minlength=n_nodes
    )
    indeg = np.bincount(ed.to_node, minlength=n_nodes)
    terminal = (outdeg == 0) & (indeg > 0) & (out_id == None)  # noqa: E711
    # nodes whose only way out is a two-way link back are terminals too, decided after
    # the build (sink_pool_outfalls); here single-node sinks only.
    has_water = wtree is not None or (
        ws.layers.get("waterbodies") is not None and len(ws.layers["waterbodies"]) > 0
    )
    # Without a waterbody layer a terminal can be checked against nothing: it is an
    # outfall candidate, ranked below the real outlets (terminal_at_structure, then
    # terminal_loose_end), unless the town's outfall inventory (the outfalls layer)
    # maps the outfalls: an inventory never gains outfalls at loose pipe ends.
    # Outfall structures and headwalls are real outlets but no inventory: a few of
    # them (Norfolk: 20 outfall structures for 1,901 scored structures) must not
    # leave the rest of the network without an answer.
    terminals_are_outfalls = not has_water and not bool(np.any(out_method == "outfalls_layer"))
    term = np.where(terminal)[0]
    kinds = np.r_[st.kind, np.full(len(sp.jxy), "junction", dtype=object)]
    at = np.zeros(len(term), dtype=bool)
    if wtree is not None and len(term):
        pts = shapely.points(node_xy(st.xy, sp.jxy, term))
        pi, _ = wtree.query(pts, predicate="dwithin", distance=cfg.water_tol)
        at[np.unique(pi)] = True
    meth = rank_terminals(
        kinds[term], term < ends.n_st, at, terminals_are_outfalls=terminals_are_outfalls
    )
    is_out = meth != None  # noqa: E711
    out_id[term[is_out]] = ed.node_ids[term[is_out]]
    out_method[term[is_out]] = meth[is_out]
    return OutfallTable(
        out_id=out_id,
        method=out_method,
        attrs=attrs,
        unsnapped=unsnapped,
        not_at_water=term[~is_out].tolist(),
        has_water=has_water,
        water_tree=wtree,
        terminals_are_outfalls=terminals_are_outfalls,
    )


def graph_qa(
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    *,
    ed: EdgeTable,
    of: OutfallTable,
    cfg: BuildConfig,
    qa: QAReport,
) -> None:
    """QA on the assembled graph: unsnapped and dangling ends, orphans, lines on structures, duplicates."""
    n_nodes = len(ed.node_ids)
    n_st = ends.n_st
    L = cv.count
    # unsnapped ends / dangling conveyances
    split_nodes = set(sp.split_kind)
    deg = np.bincount(ends.node, minlength=n_nodes)
    lonely = (ends.node >= n_st) & (deg[ends.node] == 1) & ~np.isin(ends.node, list(split_nodes))
    la, lb = lonely[:L], lonely[L:]
    for j in np.where(la & lb)[0]:
        _warn(
            qa,
            "dangling_conveyance",
            "conveyances",
            "Neither end of the conveyance touches a structure or another "
            "conveyance within the snap tolerance.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Snap its ends to the structures it joins, or delete it.",
        )
    for e in np.where(lonely)[0]:
        j = e % L
        if la[j] and lb[j]:
            continue
        node = ends.node[e]
        is_out = of.out_id[node] is not None
        upstream_end = (e < L) == (ori.direction[j] != -1)
        if upstream_end and cv.kind[j] in OPEN_CONVEYANCE_KINDS and not is_out:
            # a ditch or swale naturally begins where surface runoff gathers
            _warn(
                qa,
                "open_conveyance_head",
                "conveyances",
                "The open conveyance begins here without a structure (its head).",
                fid=cv.ids[j],
                xy=ends.xy[e],
                level="info",
                fix="Nothing to do unless it should connect to something upstream.",
            )
            continue
        _warn(
            qa,
            "unsnapped_end",
            "conveyances",
            ("The downstream" if is_out else "A")
            + " end of the conveyance touches no structure or other conveyance "
            "within the snap tolerance"
            + (
                (
                    f"; it is treated as outfall '{of.out_id[node]}'."
                    if node < n_st
                    else "; the end itself is treated as an outfall (a terminal)."
                )
                if is_out
                else "."
            ),
            fid=cv.ids[j],
            xy=ends.xy[e],
            fix="Snap the end to its structure, or add the missing structure.",
        )
    # orphan structures
    touched = np.zeros(n_nodes, dtype=bool)
    real = ed.src >= 0  # assumed laterals do not count as a connection
    touched[ed.from_node[real]] = True
    touched[ed.to_node[real]] = True
    for i in np.where(st.ok)[0]:
        p = st.primary[i]
        if not touched[p]:
            _warn(
                qa,
                "orphan_structure",
                "structures",
                "No conveyance reaches this structure within the snap tolerance.",
                fid=st.ids[i],
                xy=st.xy[i],
                fix="Draw the pipe that serves it, or snap the pipe end to it.",
            )
    for node, kind in sp.split_kind.items():
        if kind == "structure" and touched[node]:
            _warn(
                qa,
                "structure_on_conveyance",
                "structures",
                "The structure lies on the middle of a conveyance, which is split there.",
                fid=ed.node_ids[node],
                xy=st.xy[node],
                level="info",
                fix="Split the line at the structure in the source data.",
            )
    # duplicate conveyances: same node pair and about the same length
    key = pd.DataFrame(
        {
            "a": np.minimum(ed.from_node, ed.to_node),
            "b": np.maximum(ed.from_node, ed.to_node),
            "len": np.round(shapely.length(np.array(ed.rows["geometry"])) / max(cfg.tol, 1e-9)),
            "cid": ed.rows["conv_id"],
        }
    )
    dup = key.duplicated(["a", "b", "len"], keep="first")
    for i in np.where(dup.to_numpy())[0]:
        g = ed.rows["geometry"][i]
        _warn(
            qa,
            "duplicate_feature",
            "conveyances",
            "Conveyance joins the same two nodes as another of the same length (drawn twice?).",
            fid=key["cid"].iat[i],
            xy=shapely.get_coordinates(g.interpolate(0.5, normalized=True))[0],
            fix="Delete the duplicate line if it is not a parallel pipe.",
        )

    # -- frames ---------------------------------------------------------------------


def network_frames(
    st: StructureTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    ed: EdgeTable,
    *,
    of: OutfallTable,
    cfg: BuildConfig,
    qa: QAReport,
) -> StormNetwork:
    """The StormNetwork frames (nodes, edges, outfalls) from the tables."""
    used = np.where(ed.nodes_used)[0]
    n_st = ends.n_st
    kinds = np.r_[st.kind, np.full(len(sp.jxy), "junction", dtype=object)]
    struct_id = np.r_[st.ids, np.full(len(sp.jxy), None, dtype=object)]
    inv = np.r_[st.inv, np.full(len(sp.jxy), np.nan)]
    rim = np.r_[st.rim, np.full(len(sp.jxy), np.nan)]
    xy = node_xy(st.xy, sp.jxy, used)
    nodes = gpd.GeoDataFrame(
        {
            "struct_id": pd.array(struct_id[used], dtype="str"),
            "kind": pd.array(kinds[used], dtype="str"),
            "is_inlet": np.array([k in INLET_KINDS for k in kinds[used]], dtype=bool),
            "invert_elev": inv[used],
            "rim_elev": rim[used],
        },
        geometry=shapely.points(xy),
        index=pd.Index(ed.node_ids[used].astype(str), name="node_id"),
        crs=cfg.crs,
    )
    r = ed.rows
    geoms = np.array(r["geometry"], dtype=object)
    kinds_e = [k if k is not None else "pipe" for k in r["kind"]]
    edges = gpd.GeoDataFrame(
        {
            "conv_id": pd.array(r["conv_id"], dtype="str"),
            "part": np.array(r["part"], dtype=int),
            "from_node": pd.array(ed.node_ids[ed.from_node].astype(str), dtype="str"),
            "to_node": pd.array(ed.node_ids[ed.to_node].astype(str), dtype="str"),
            "kind": pd.array(kinds_e, dtype="str"),
            "is_open": np.array([k in OPEN_CONVEYANCE_KINDS for k in kinds_e], dtype=bool),
            "bidirectional": ed.bi,
            "orient_method": pd.array(r["orient_method"], dtype="str"),
            "length_m": shapely.length(geoms) * cfg.m_per_unit if len(geoms) else np.zeros(0),
            "diameter_in": np.array(r["diameter_in"], dtype=float),
            "us_invert": np.array(r["us_invert"], dtype=float),
            "ds_invert": np.array(r["ds_invert"], dtype=float),
        },
        geometry=geoms if len(geoms) else gpd.GeoSeries([], crs=cfg.crs),
        crs=cfg.crs,
    )
    # the outfall table, built column by column (no per-outfall Python rows)
    out_nodes = np.where(of.out_id != None)[0]  # noqa: E711
    jnames = junction_outfall_ids(
        [int(nd) for nd in out_nodes[out_nodes >= n_st] if of.out_id[nd] == ed.node_ids[nd]],
        ed.from_node,
        ed.to_node,
        np.asarray(r["conv_id"], dtype=object),
        taken=set(of.out_id[out_nodes].astype(str).tolist()),
    )
    k = len(out_nodes)
    oid = of.out_id[out_nodes].astype(str).astype(object)
    for nd, name in jnames.items():
        oid[np.searchsorted(out_nodes, nd)] = name
    attr_cols = {c: np.full(k, None, dtype=object) for c in _OUTFALL_ATTRS}
    attr_cols["status"][:] = "unknown"
    for nd, a in of.attrs.items():
        pos = int(np.searchsorted(out_nodes, nd))
        if pos < k and out_nodes[pos] == nd:
            for c in _OUTFALL_ATTRS:
                attr_cols[c][pos] = a.get(c, "unknown" if c == "status" else None)
    un = of.unsnapped
    cols = ["outfall_id", "node_id", *_OUTFALL_ATTRS, "method"]
    data = {
        "outfall_id": np.r_[oid, np.array([str(x["outfall_id"]) for x in un], dtype=object)],
        "node_id": np.r_[
            ed.node_ids[out_nodes].astype(str).astype(object),
            np.full(len(un), None, dtype=object),
        ],
        **{
            c: np.r_[attr_cols[c], np.array([x[c] for x in un], dtype=object)]
            for c in _OUTFALL_ATTRS
        },
        "method": np.r_[
            of.method[out_nodes].astype(object),
            np.full(len(un), "outfalls_layer", dtype=object),
        ],
    }
    xy = np.vstack(
        [node_xy(st.xy, sp.jxy, out_nodes), np.array([x["xy"] for x in un]).reshape(-1, 2)]
    )
    odf = pd.DataFrame({c: data[c] for c in cols})
    for c in cols:
        odf[c] = pd.array(odf[c].astype(object).where(odf[c].notna(), None), dtype="str")
    odf["geometry"] = shapely.points(xy) if len(xy) else np.zeros(0, dtype=object)
    outfalls = gpd.GeoDataFrame(odf, geometry="geometry", crs=cfg.crs).set_index("outfall_id")
    sn = pd.DataFrame(
        {
            "struct_id": pd.array(st.ids_in.astype(str), dtype="str"),
            "node_id": pd.array(
                np.where(st.ok, ed.node_ids[st.primary].astype(str), None).astype(object),
                dtype="str",
            ),
        }
    )
    remap = np.full(len(ed.node_ids), -1)
    remap[used] = np.arange(len(used))
    graph = {
        "u": remap[ed.from_node],
        "v": remap[ed.to_node],
        "n_nodes": len(used),
        "n_edges": len(ed.from_node),
        "src": ed.src,
    }
    net = StormNetwork(
        nodes=nodes,
        edges=edges,
        outfalls=outfalls,
        qa=qa,
        crs=cfg.crs,
        _graph=graph,
        settings=dict(cfg.settings),
        structure_nodes=sn,
        terminals_not_at_water=[str(ed.node_ids[i]) for i in of.not_at_water],
        terminals_unchecked=not of.has_water and not of.terminals_are_outfalls,
        orientation_conflicts=dict(ori.conflicts),
    )
    return net


def sink_pools_and_graph_qa(
    net: StormNetwork,
    *,
    has_water: bool = False,
    at_water: Callable[[np.ndarray], bool] | None = None,
    terminals_are_outfalls: bool = True,
) -> None:
    """The last build step, on the solved graph: a pool of two-way links with no way out
    becomes one terminal (ranked like any other), then QA ``cycle`` and
    ``no_outfall_subnetwork``."""
    from .trace import _solve

    s = _solve(net)
    new_rows = _pool_terminals(
        net,
        s,
        has_water=has_water,
        at_water=at_water,
        terminals_are_outfalls=terminals_are_outfalls,
    )
    if new_rows:
        _add_outfalls(net, new_rows)
        s = _solve(net)
    _cycle_qa(net, s)
    _subnetwork_qa(net, s)


def _pool_terminals(
    net: StormNetwork,
    s: _Solved,
    *,
    has_water: bool,
    at_water: Callable[[np.ndarray], bool] | None,
    terminals_are_outfalls: bool,
) -> list[dict[str, Any]]:
    """The outfall rows of the pools of two-way links with no way out (one per pool, at
    its lowest node or its headwall); a pool whose end is not an outfall is listed in
    ``net.terminals_not_at_water`` instead."""
    nodes = net.nodes
    comp_sizes = np.bincount(s.comp, minlength=s.ncomp)
    new_rows: list[dict[str, Any]] = []
    for c in np.unique(s.sink):
        if s.comp_outfall[c] is not None or comp_sizes[c] < 2 or s.comp_cycle[c]:
            continue
        # a pool of two-way links with no way out: its lowest node is the terminal
        members = np.where(s.comp == c)[0]
        rep = int(members[_lowest_first(nodes, members)[0]])
        nid = str(s.node_index[rep])
        kinds = nodes["kind"].to_numpy(dtype=object)[members]
        hw = np.where(kinds == "headwall")[0]
        xy = shapely.get_coordinates(nodes.geometry.iloc[rep])[0]
        if has_water and at_water is not None and at_water(xy):
            method = "terminal_at_water"
        elif len(hw):
            rep = int(members[hw[0]])
            nid = str(s.node_index[rep])
            method = "headwall_at_end"
        elif has_water or not terminals_are_outfalls:
            net.terminals_not_at_water.append(nid)
            continue
        elif pd.isna(nodes["struct_id"].iat[rep]):
            method = "terminal_loose_end"
        else:
            method = "terminal_at_structure"
        new_rows.append(
            {
                "outfall_id": _pool_outfall_id(net, s, rep, nid, new_rows),
                "node_id": nid,
                "receiving_water": None,
                "pwl_id": None,
                "status": "unknown",
                "permit_id": None,
                "method": method,
                "geometry": nodes.geometry.iloc[rep],
            }
        )
    return new_rows


def _lowest_first(nodes: gpd.GeoDataFrame, members: np.ndarray) -> np.ndarray:
    """The order of ``members`` lowest first: by invert, then rim (missing ones last),
    then position."""
    inv = nodes["invert_elev"].to_numpy(dtype=float)[members]
    rim = nodes["rim_elev"].to_numpy(dtype=float)[members]
    return np.lexsort(
        (
            np.arange(len(members)),
            np.nan_to_num(rim, nan=np.inf),
            np.nan_to_num(inv, nan=np.inf),
        )
    )


def _edge_node_positions(s: _Solved, edges: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The solved-graph positions of each edge's from and to node."""
    eu = s.node_index.get_indexer(edges["from_node"].astype(str))
    ev = s.node_index.get_indexer(edges["to_node"].astype(str))
    return eu, ev


def _pool_outfall_id(
    net: StormNetwork, s: _Solved, rep: int, nid: str, new_rows: list[dict[str, Any]]
) -> str:
    """The outfall id of a pool's terminal node: its node id at a structure, a junction
    outfall id a user can look up (not taken yet) at a junction."""
    if not pd.isna(net.nodes["struct_id"].iat[rep]):
        return nid
    edges = net.edges
    eu, ev = _edge_node_positions(s, edges)
    taken = set(net.outfalls.index.astype(str)) | {r["outfall_id"] for r in new_rows}
    return junction_outfall_ids(
        [rep], eu, ev, edges["conv_id"].astype(str).to_numpy(), taken=taken
    )[rep]


def _add_outfalls(net: StormNetwork, new_rows: list[dict[str, Any]]) -> None:
    """Append the pools' terminals to ``net.outfalls`` (text columns as strings) and drop
    what was solved without them."""
    add = gpd.GeoDataFrame(pd.DataFrame(new_rows), geometry="geometry", crs=net.crs).set_index(
        "outfall_id"
    )
    for col in add.columns:
        if col != "geometry":
            add[col] = pd.array(add[col].astype(object).where(add[col].notna(), None), dtype="str")
    net.outfalls = pd.concat([net.outfalls, add])
    net._cache.clear()


def _cycle_qa(net: StormNetwork, s: _Solved) -> None:
    """QA ``cycle``: one warning per loop of one-way conveyances (saying when water in it
    has no way out)."""
    if not len(s.arc_from):
        return
    edges = net.edges
    conv = edges["conv_id"].astype(str).to_numpy()
    cyc_nodes = np.zeros(len(s.node_index), dtype=bool)
    cyc_nodes[np.isin(s.comp, np.where(s.comp_cycle)[0])] = True
    arcs_in = cyc_nodes[s.arc_from] & cyc_nodes[s.arc_to] & (s.comp[s.arc_from] == s.comp[s.arc_to])
    by_comp: dict[int, list[int]] = {}
    for a in np.where(arcs_in)[0]:
        if not edges["bidirectional"].iat[s.arc_edge[a]]:
            by_comp.setdefault(int(s.comp[s.arc_from[a]]), []).append(int(s.arc_edge[a]))
    for c, eds in by_comp.items():
        ids = sorted({conv[e] for e in eds})
        trapped = s.comp_outfall[s.sink[c]] is None and s.sink[c] == c
        g = edges.geometry.iloc[eds[0]]
        _warn(
            net.qa,
            "cycle",
            "conveyances",
            f"Conveyances {shown_ids(ids, 10)} form a loop of one-way flow"
            + ("; water in it has no way out." if trapped else "."),
            fid=ids[0],
            xy=shapely.get_coordinates(g.interpolate(0.5, normalized=True))[0],
            fix="Check the inverts/direction of the conveyances in the loop.",
        )


def _subnetwork_qa(net: StormNetwork, s: _Solved) -> None:
    """QA ``no_outfall_subnetwork``: one warning per connected piece (weakly connected,
    with conveyances) that reaches no outfall."""
    edges = net.edges
    if not len(edges):
        return
    n = len(s.node_index)
    conv = edges["conv_id"].astype(str).to_numpy()
    eu, ev = _edge_node_positions(s, edges)
    g = csr_matrix((np.ones(len(eu)), (eu, ev)), shape=(n, n))
    nw, lab = connected_components(g, directed=False)
    has_out = np.zeros(nw, dtype=bool)
    has_out[lab[s.is_outfall]] = True
    has_edge = np.zeros(nw, dtype=bool)
    has_edge[lab[eu]] = True
    for w in np.where(has_edge & ~has_out)[0]:
        members = np.where(lab == w)[0]
        ne = int(np.isin(eu, members).sum())
        ids = sorted(set(conv[np.isin(eu, members)]))
        _warn(
            net.qa,
            "no_outfall_subnetwork",
            "conveyances",
            f"A connected piece of {ne} conveyance(s) ({shown_ids(ids, 5)}) reaches no outfall.",
            fid=ids[0],
            xy=shapely.get_coordinates(net.nodes.geometry.iloc[members[0]])[0],
            fix="Connect it to the rest of the system, or add its outfall.",
        )


def run_build(ws: Workspace, cfg: BuildConfig) -> StormNetwork:
    """The build steps in order, each a function of the tables before it."""
    qa = QAReport()
    st = read_structures(ws, cfg, qa)
    cv = read_conveyances(ws, cfg, qa)
    ends = snap_ends(st, cv, cfg, qa)
    sp = split_lines(st, cv, ends, cfg)
    sp = assumed_laterals(st, cv, ends, sp, cfg)
    wtree = water_tree(ws)
    ori = orient_lines(ws, st, cv, ends, sp, cfg=cfg, qa=qa, wtree=wtree)
    ed = assemble_edges(st, cv, ends, sp, ori, cfg=cfg, qa=qa)
    of = find_outfalls(ws, st, ends, sp, ed, cfg=cfg, qa=qa, wtree=wtree)
    graph_qa(st, cv, ends, sp, ori, ed=ed, of=of, cfg=cfg, qa=qa)
    net = network_frames(st, ends, sp, ori, ed, of=of, cfg=cfg, qa=qa)

    def at_water(xy: np.ndarray) -> bool:
        if wtree is None:
            return False
        hit = wtree.query(shapely.points(xy), predicate="dwithin", distance=cfg.water_tol)
        return len(hit) > 0

    sink_pools_and_graph_qa(
        net,
        has_water=of.has_water,
        at_water=at_water,
        terminals_are_outfalls=of.terminals_are_outfalls,
    )
    counts = net.orient_counts
    net.qa.note(
        "Edge orientation (orient_method): "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    if ori.uni_disagrees:
        net.qa.note(
            f"Flow direction 'uni' (the digitised direction) disagrees with the "
            f"outlet_path rule on {ori.uni_disagrees} conveyance(s); outlet_path wins."
        )
    net.settings["uni_disagrees_outlet_path"] = ori.uni_disagrees
    net.qa.note(
        f"Snap tolerance {cfg.settings['snap_tolerance_m']} m "
        f"({cfg.tol:.3f} CRS units); {len(sp.splits)} conveyance(s) split."
    )
    return net
