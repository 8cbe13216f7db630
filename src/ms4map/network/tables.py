"""The build's step tables: BuildConfig, the table each build step hands the next, and their column helpers.

Every build step (:func:`ms4map.network.build.run_build`) is a plain function of the
tables before it: :func:`~ms4map.network.read.read_structures` -> :class:`StructureTable`,
:func:`~ms4map.network.read.read_conveyances` -> :class:`ConveyanceTable`,
:func:`~ms4map.network.snap.snap_ends` -> :class:`EndTable`,
:func:`~ms4map.network.snap.split_lines` and :func:`~ms4map.network.snap.assumed_laterals`
-> :class:`SplitTable`, :func:`~ms4map.network.orient.orient_lines` -> :class:`Orientation`,
:func:`~ms4map.network.edges.assemble_edges` -> :class:`EdgeTable`,
:func:`~ms4map.network.termini.find_outfalls` -> :class:`OutfallTable`.  The helpers
here read a layer's column as an array (:func:`column_values`, :func:`filled_ids`),
place nodes (:func:`node_xy`) and add a finding of step ``network`` (:func:`add_finding`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..core.qa import QAReport
from ..core.units import metres_per_unit

__all__ = [
    "BuildConfig",
    "ConveyanceTable",
    "EdgeTable",
    "EndTable",
    "Orientation",
    "OutfallTable",
    "SplitTable",
    "StructureTable",
    "add_finding",
    "column_values",
    "crs_unit_factor",
    "filled_ids",
    "node_xy",
]


_STEP = "network"


def crs_unit_factor(crs: Any) -> float:
    """Metres per unit of the CRS's first axis (1.0 for metres, 0.3048006 for US feet)."""
    return metres_per_unit(crs)


def column_values(df: pd.DataFrame, name: str, *, kind: str = "str") -> np.ndarray:
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


def filled_ids(ids: np.ndarray, df: pd.DataFrame, prefix: str) -> np.ndarray:
    """``ids`` with the missing ones generated (``layer:fid``, else ``prefix:row``)."""
    missing = np.array([v is None for v in ids])
    if missing.any():
        gen = _generated_ids(df, prefix)
        ids = np.where(missing, gen, ids)
    return ids


@dataclass(frozen=True)
class BuildConfig:
    """Tolerances of one build, in CRS units (``settings`` keeps the metres)."""

    crs: Any
    m_per_unit: float  # metres per CRS unit
    snap_tol: float
    water_tol: float
    id_tol: float
    lateral_tol: float
    coincident_tol: float
    elev_threshold: float
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
            snap_tol=snap_m / f,
            water_tol=water_m / f,
            id_tol=max(id_m, snap_m) / f,
            lateral_tol=lateral_m / f,
            coincident_tol=0.01 / f,  # 1 cm: "identical coordinates"
            elev_threshold=elev_thr,
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

    input_ids: np.ndarray
    ids: np.ndarray
    kind: np.ndarray
    invert_elev: np.ndarray
    rim_elev: np.ndarray
    has_point: np.ndarray  # the structure has a usable point (a network node)
    xy: np.ndarray
    primary: np.ndarray
    is_primary: np.ndarray
    tree_rows: np.ndarray
    tree: Any
    id_index: dict[str, int]

    @property
    def count(self) -> int:
        return len(self.ids)


@dataclass
class ConveyanceTable:
    """Usable line parts (one row per part), with their attributes and end points."""

    source_row: np.ndarray
    ids: np.ndarray
    geometry: np.ndarray
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
                shapely.line_interpolate_point(self.geometry, 0.5, normalized=True)
            )[:, :2]
        return self._mids[j]


@dataclass
class EndTable:
    """Line ends ``e`` (``e < L``: first vertex of line ``e``; else last vertex of
    ``e - L``) and the node each attaches to: structures ``0..n_structures-1``, junctions
    after (``junction_xy``)."""

    xy: np.ndarray
    structure: np.ndarray
    node: np.ndarray
    snapped_by: np.ndarray
    ids_reversed: np.ndarray
    ids_known: np.ndarray
    n_structures: int
    junction_xy: np.ndarray


@dataclass
class SplitTable:
    """Where lines are split (line -> [(distance along it, node)]), why
    (node -> ``dangling``/``structure``/``lateral``), the assumed laterals
    ``(structure node, target node, length, line)`` and the junction coordinates."""

    splits: dict[int, list[tuple[float, int]]]
    split_kind: dict[int, str]
    lateral_edges: list[tuple[int, int, float, int]]
    junction_xy: np.ndarray


@dataclass
class Orientation:
    """Per line: direction (+1 as drawn, -1 reversed), two-way, the rule that decided."""

    direction: np.ndarray
    bidirectional: np.ndarray
    method: np.ndarray
    outlet_distance: np.ndarray | None  # per node, along the network to a real outlet
    conflicts: dict[str, str]
    uni_disagrees: int
    #: per line: the evidence the chosen direction overrules ("" where none)
    overruled: np.ndarray | None = None
    #: per node: the other target it reaches nearly as cheaply where no evidence decides
    #: its way out (-1: none; docs/network.md "The ambiguous answer")
    node_alt: np.ndarray | None = None
    #: per line: no evidence orients it, and its "uni" value agrees with the direction
    uni_ok: np.ndarray | None = None


@dataclass
class EdgeTable:
    """Directed edges (columns in ``rows``; ``from_node``/``to_node`` node numbers) and the nodes."""

    rows: dict[str, np.ndarray]
    from_node: np.ndarray
    to_node: np.ndarray
    bidirectional: np.ndarray
    source_line: np.ndarray  # conveyance row of each edge, -1 for an assumed lateral
    node_ids: np.ndarray
    nodes_used: np.ndarray


@dataclass
class OutfallTable:
    """Outfall id and method per node (None where none), outfalls-layer attributes,
    unsnapped outfalls, terminals that are not outfalls, and the water checks."""

    outfall_id: np.ndarray
    method: np.ndarray
    layer_attributes: dict[int, dict[str, Any]]
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


def add_finding(
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
    """Add a finding of step ``network`` to ``qa`` (placed at ``xy`` when given)."""
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
