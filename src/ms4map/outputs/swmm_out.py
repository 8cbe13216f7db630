"""Write the traced network and its inlet catchments as an EPA SWMM model (``.inp``) engineers can run.

:func:`export_swmm` reads the results GeoPackage of ``ms4map drainage`` (its
``structures``, ``conveyances``, ``outfalls`` and ``inlet_catchments`` layers, from
:func:`ms4map.pipeline.model_layers`) and writes, through the swmm-api library
(docs/exports.md, "SWMM models", says why that one): [JUNCTIONS], [STORAGE],
[OUTFALLS], [CONDUITS], [XSECTIONS], [VERTICES], [COORDINATES], [SUBCATCHMENTS],
[SUBAREAS], [INFILTRATION], [Polygons], [RAINGAGES], [TIMESERIES], [OPTIONS], [TAGS]
and a [TITLE] saying what every tag means.  Every element is named with its ms4map
id; every value that is a default rather than data is marked in the element's tag
(``DEFAULT:rim,n``), the tables are :mod:`ms4map.outputs.swmm_tables`.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import shapely
from pyproj import CRS

from ..core.errors import DataError, InputOpenError, UsageError
from ..core.version import __version__
from ..io import check_output_path, read_dem
from ..io.write import recorded_inputs, writing
from .swmm_tables import DEFAULTS, design_storm, manning_n, pct_impervious

__all__ = ["NEEDED_LAYERS", "SwmmExport", "build_model", "export_swmm", "raster_impervious"]

#: The layers of the results GeoPackage a model is built from.
NEEDED_LAYERS = ("structures", "conveyances", "outfalls", "inlet_catchments")
#: The first line of the model's [TITLE]: how ms4map knows a .inp is its own.
TITLE_MARK = "EPA SWMM model written by ms4map"
_M_PER_IN = 0.0254


@dataclass
class SwmmExport:
    """What :func:`export_swmm` wrote: the path, element counts and notes."""

    path: Path
    format: str = "EPA SWMM input file"
    layers: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Units:
    """The model's units: CMS (metres, hectares, mm) or CFS (feet, acres, inches)."""

    flow: str
    to_len: float  # model length per CRS unit
    per_m: float  # model length per metre
    area_per_m2: float  # model area (ha or ac) per square metre
    rain_per_mm: float  # model rain depth per millimetre


def _units(crs: CRS) -> _Units:
    m = crs.axis_info[0].unit_conversion_factor if crs.axis_info else 1.0
    if abs(m - 1.0) < 1e-9:
        return _Units("CMS", 1.0, 1.0, 1e-4, 1.0)
    ft = 1 / 0.3048
    return _Units("CFS", m * ft, ft, 1 / 4046.8564224, 1 / 25.4)


def export_swmm(
    src: str | Path,
    dest: str | Path,
    *,
    storm_depth_mm: float | None = None,
    impervious: str | Path | None = None,
    protected: list[str | Path] | tuple = (),
) -> SwmmExport:
    """Write the model of the results GeoPackage ``src`` to ``dest`` (``.inp``).

    Parameters
    ----------
    src : path
        The output of ``ms4map drainage`` (with the traced network and the inlet
        catchments).
    dest : path
        The ``.inp`` to write; an existing one ms4map wrote is replaced.
    storm_depth_mm : float, optional
        The 24-hour depth of the design storm (NRCS Type II) in millimetres (default
        25.4, marked as a default in the model).
    impervious : path, optional
        A raster of percent impervious (0-100, e.g. NLCD's percent developed
        imperviousness): each subcatchment takes the mean of its cells instead of the
        property-class table (which stays for a catchment without a valid cell).
    protected : paths
        More files never to write.

    Raises
    ------
    UsageError
        ``dest`` is an input (the source or a file its provenance names), not a
        ``.inp``, or an existing file ms4map did not write; ``storm_depth_mm`` <= 0.
    InputOpenError
        ``src`` cannot be read, or lacks the network or the inlet catchments.
    DataError
        The results are in a geographic CRS (degrees are no lengths for a model).
    """
    src_path = Path(src).expanduser()
    out = Path(dest).expanduser()
    guard = [src_path, *(Path(p) for p in protected), *recorded_inputs(src_path)]
    if impervious is not None:
        guard.append(Path(impervious).expanduser())
    if out.suffix.lower() != ".inp":
        raise UsageError(f"--to '{out.name}': a SWMM model is written to a .inp file.")
    if any(out.resolve() == p.expanduser().resolve() for p in guard):
        raise UsageError(
            f"Refusing to write into input file '{out.name}' (--to); ms4map never modifies "
            "your data. Fix: choose another output path."
        )
    if storm_depth_mm is not None and not storm_depth_mm > 0:
        raise UsageError(f"--storm-depth {storm_depth_mm}: give a depth above 0 millimetres.")
    layers = _read_layers(src_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # swmm-api on the time series' first time
        inp, counts, notes = build_model(
            layers, storm_depth_mm=storm_depth_mm, impervious=impervious, source=src_path.name
        )
    _check_ours(out)
    out = check_output_path(out, protected=guard, suffixes=(".inp",), option="--to")
    with writing(out):
        fd, tmp = tempfile.mkstemp(suffix=".inp", dir=out.parent, prefix=".ms4map-")
        os.close(fd)
        try:
            inp.write_file(tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, out)
        finally:
            Path(tmp).unlink(missing_ok=True)
    return SwmmExport(path=out, layers=counts, notes=notes)


def _check_ours(out: Path) -> None:
    if not out.exists():
        return
    try:
        head = out.read_text(errors="replace")[:2000]
    except OSError:
        head = ""
    if TITLE_MARK not in head:
        raise UsageError(
            f"--to '{out}' exists and ms4map did not write it: refusing to replace it, so "
            "nothing of yours is lost. Fix: give a new name, or move that file away first."
        )


def _read_layers(src: Path) -> dict[str, gpd.GeoDataFrame]:
    """The needed layers of ``src``; a missing one is a clear error."""
    if not src.is_file():
        raise InputOpenError(f"Cannot open '{src}': no such file. Fix: check the path.")
    try:
        have = {str(n) for n, _ in pyogrio.list_layers(src)}
    except Exception as exc:  # noqa: BLE001 - GDAL's many errors: not a GeoPackage
        raise InputOpenError(f"Cannot read '{src.name}' as a GeoPackage: {exc}") from None
    missing = [n for n in NEEDED_LAYERS if n not in have]
    if missing:
        what = (
            "the traced network"
            if set(missing) & {"structures", "conveyances", "outfalls"}
            else "the inlet catchments"
        )
        raise InputOpenError(
            f"'{src.name}' has no {', '.join(missing)} layer(s): without {what} there is no "
            "model to write. Fix: run `ms4map drainage WORKSPACE --out RESULTS.gpkg` on a "
            "workspace with conveyances and a DEM (it writes the network and the inlet "
            "catchments) and export that file."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layers = {n: gpd.read_file(src, layer=n) for n in NEEDED_LAYERS}
        if "surface_catchments" in have:  # open conveyances' and waters' catchments
            layers["surface_catchments"] = gpd.read_file(src, layer="surface_catchments")
    crs = layers["structures"].crs
    if crs is None or CRS.from_user_input(crs).is_geographic:
        name = "no CRS" if crs is None else f"the geographic CRS {CRS(crs).name}"
        raise DataError(
            f"'{src.name}' is in {name}: a model needs lengths and areas in metres or feet. "
            "Fix: run `ms4map drainage` with a projected working CRS (--crs EPSG:26918, a "
            "UTM or State Plane CRS) and export that file."
        )
    if not len(layers["inlet_catchments"]):
        raise InputOpenError(
            f"'{src.name}' has no inlet catchments (the layer is empty): no subcatchment to "
            "write. Fix: run `ms4map drainage` with a DEM and inlets in the workspace."
        )
    return layers


def build_model(
    layers: dict[str, gpd.GeoDataFrame],
    *,
    storm_depth_mm: float | None = None,
    impervious: str | Path | None = None,
    source: str = "",
) -> tuple[Any, dict[str, int], list[str]]:
    """The swmm-api model of the layers (see :func:`export_swmm`).

    Returns
    -------
    (swmm_api.SwmmInput, element counts by section, notes)
    """
    from swmm_api import SwmmInput  # loaded when a model is written

    crs = CRS.from_user_input(layers["structures"].crs)
    u = _units(crs)
    inp = SwmmInput()
    tags: dict[tuple[str, str], str] = {}
    notes: list[str] = []
    nodes = _nodes(layers, u, inp, tags)
    conveyances = _split_outfalls(layers["conveyances"], nodes, u, inp, tags)
    _links(conveyances, nodes, u, inp, tags)
    areas = _catchments(layers, nodes, u, inp, tags)
    areas["pct_raster"] = np.nan
    if impervious is not None and len(areas):
        areas["pct_raster"] = raster_impervious(impervious, areas)
        miss = int(np.isnan(areas["pct_raster"]).sum())
        if miss:
            notes.append(
                f"{miss} catchment(s) have no valid cell of {Path(impervious).name}: their "
                "percent impervious is the property-class table's (tagged DEFAULT:imperv)."
            )
    n_sc = _subcatchments(areas, nodes, u, inp, tags=tags, notes=notes)
    storm_default = storm_depth_mm is None
    depth = 25.4 if storm_default else float(storm_depth_mm)
    _rain(inp, depth * u.rain_per_mm, tags, default=storm_default)
    _options(inp, u)
    _title(inp, layers["outfalls"], depth, storm_default, source)
    _tags(inp, tags)
    counts = {
        sec: len(inp[sec])
        for sec in ("JUNCTIONS", "STORAGE", "OUTFALLS", "CONDUITS", "SUBCATCHMENTS")
        if sec in inp
    }
    counts["SUBCATCHMENTS"] = n_sc
    return inp, counts, notes


# -- nodes ----------------------------------------------------------------------------


def _nodes(layers: dict[str, gpd.GeoDataFrame], u: _Units, inp: Any, tags: dict) -> pd.DataFrame:
    """[JUNCTIONS], [STORAGE], [OUTFALLS], [COORDINATES]; returns name -> invert, kind."""
    from swmm_api.input_file.sections import Coordinate, Junction, Outfall, Storage

    st = layers["structures"]
    cv = layers["conveyances"]
    of = layers["outfalls"]
    names = st["node_id"].astype(str).to_numpy()
    inv = pd.to_numeric(st["invert_elev"], errors="coerce").to_numpy(float)
    rim = pd.to_numeric(st["rim_elev"], errors="coerce").to_numpy(float)
    ground = pd.to_numeric(st["ground_elev"], errors="coerce").to_numpy(float)
    # a node without an invert: the lowest end of its links, else the ground less a depth
    ends = pd.concat(
        [
            pd.Series(pd.to_numeric(cv["us_invert"], errors="coerce").to_numpy(), cv["from_node"]),
            pd.Series(pd.to_numeric(cv["ds_invert"], errors="coerce").to_numpy(), cv["to_node"]),
        ]
    )
    low = ends.groupby(level=0).min()
    depth_default = DEFAULTS["node_depth_m"] * u.per_m / u.to_len  # in CRS units
    outfall_nodes = set(of["node_id"].astype(str))
    kinds = st["kind"].astype(str).to_numpy()
    rows = []
    for i, name in enumerate(names):
        marks = []
        top = rim[i] if np.isfinite(rim[i]) else ground[i]
        if not np.isfinite(rim[i]):
            marks.append("rim" if np.isfinite(ground[i]) else "")
        z = inv[i]
        if not np.isfinite(z):
            z = low.get(name, np.nan)
            marks.append("invert")
            if not np.isfinite(z):
                z = top - depth_default if np.isfinite(top) else 0.0
        if not np.isfinite(top) or top <= z:
            top = z + depth_default
            marks.append("depth")
        rows.append((name, z * u.to_len, (top - z) * u.to_len, ",".join(m for m in marks if m)))
    for (name, z, depth, mark), kind, g in zip(rows, kinds, st.geometry, strict=True):
        if name in outfall_nodes:
            inp.add_obj(Outfall(name, round(z, 3), "FREE"))
            key = ("Node", name)
        elif kind == "bmp":
            area = DEFAULTS["storage_area_m2"] * u.per_m**2
            inp.add_obj(Storage(name, round(z, 3), round(depth, 3), 0, "FUNCTIONAL", 0, 0, area))
            mark = ",".join(filter(None, [mark, "storage_area"]))
            key = ("Node", name)
        else:
            inp.add_obj(Junction(name, round(z, 3), round(depth, 3)))
            key = ("Node", name)
        if mark:
            tags[key] = f"DEFAULT:{mark}"
        inp.add_obj(Coordinate(name, round(g.x, 3), round(g.y, 3)))  # map units: the CRS's
    for oid, nid, water, pwl in zip(
        of["outfall_id"].astype(str),
        of["node_id"].astype(str),
        of["receiving_water"],
        of["pwl_id"],
        strict=True,
    ):
        t = f"PWL:{_token(pwl)}|water:{_token(water)}|outfall:{_token(oid)}"
        if ("Node", nid) in tags:
            t += "|" + tags[("Node", nid)]
        tags[("Node", nid)] = t
    kind = np.where(np.isin(names, list(outfall_nodes)), "outfall", kinds)
    return pd.DataFrame(
        {"invert": [r[1] for r in rows], "kind": kind}, index=pd.Index(names, name="node")
    )


def _split_outfalls(
    cv: gpd.GeoDataFrame, nodes: pd.DataFrame, u: _Units, inp: Any, tags: dict
) -> gpd.GeoDataFrame:
    """An outfall that more than one conveyance enters, or one leaves, as SWMM allows
    only one link at an outfall (its ERROR 141): the conveyances meet at a junction
    ``<outfall>_J`` in its place, joined to the outfall by a conduit ``<outfall>_J``
    (both tagged ``DEFAULT:added_node`` / ``added_link``).  Returns the conveyances with
    their ends moved to the junctions."""
    from swmm_api.input_file.sections import Conduit, Coordinate, CrossSection, Junction

    fr, to = cv["from_node"].astype(str), cv["to_node"].astype(str)
    outs = nodes.index[nodes["kind"] == "outfall"]
    deg_in, deg_out = to.value_counts(), fr.value_counts()
    split = [n for n in outs if deg_in.get(n, 0) > 1 or deg_out.get(n, 0) > 0]
    if not split:
        return cv
    xy = {c.node: (c.x, c.y) for c in inp["COORDINATES"].values()}
    cv = cv.copy()
    depth = DEFAULTS["node_depth_m"] * u.per_m
    for name in split:
        j = f"{name}_J"
        z = float(nodes.at[name, "invert"])
        inp.add_obj(Junction(j, round(z, 3), round(depth, 3)))
        inp.add_obj(Coordinate(j, *xy[name]))
        nodes.loc[j] = [z, "junction"]
        at = (to == name) | (fr == name)
        diam = pd.to_numeric(cv.loc[at, "diameter_in"], errors="coerce").max() * _M_PER_IN
        diam = diam if np.isfinite(diam) and diam > 0 else DEFAULTS["diameter_m"]
        cv.loc[to == name, "to_node"] = j
        cv.loc[fr == name, "from_node"] = j
        length = max(1.0 * u.per_m, 0.1)
        inp.add_obj(Conduit(j, j, name, round(length, 3), DEFAULTS["n_pipe"], 0, 0))
        inp.add_obj(CrossSection(j, "CIRCULAR", round(diam * u.per_m, 4)))
        tags[("Node", j)] = "DEFAULT:added_node"
        tags[("Link", j)] = "DEFAULT:added_link"
    return cv


def _token(value: Any) -> str:
    """A value as one word of a tag (spaces as ``_``; ``none`` when missing)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or str(value) == "":
        return "none"
    return "_".join(str(value).split())


# -- links ----------------------------------------------------------------------------


def _links(cv: gpd.GeoDataFrame, nodes: pd.DataFrame, u: _Units, inp: Any, tags: dict) -> None:
    """[CONDUITS], [XSECTIONS], [VERTICES]."""
    from swmm_api.input_file.sections import Conduit, CrossSection, Vertices

    for r, g in zip(cv.itertuples(index=False), cv.geometry, strict=True):
        name, a, b = str(r.link_id), str(r.from_node), str(r.to_node)
        is_open = bool(r.is_open)
        n, n_default = manning_n(r.material, is_open=is_open)
        marks = ["n"] if n_default else []
        length = float(g.length) if g is not None else np.nan
        if not np.isfinite(length) or length <= 0:
            length = float(r.length_m) if np.isfinite(r.length_m) else 1.0
        length = max(length * u.to_len, 0.1 * u.per_m)
        off_up = _offset(r.us_invert, nodes.at[a, "invert"] / u.to_len) * u.to_len
        off_dn = _offset(r.ds_invert, nodes.at[b, "invert"] / u.to_len) * u.to_len
        inp.add_obj(Conduit(name, a, b, round(length, 3), n, round(off_up, 3), round(off_dn, 3)))
        if is_open:
            d = DEFAULTS
            inp.add_obj(
                CrossSection(
                    name,
                    "TRAPEZOIDAL",
                    round(d["channel_depth_m"] * u.per_m, 3),
                    round(d["channel_bottom_m"] * u.per_m, 3),
                    d["channel_side_slope"],
                    d["channel_side_slope"],
                )
            )
            marks.append("xsection")
        else:
            diam = float(r.diameter_in) * _M_PER_IN if np.isfinite(r.diameter_in) else np.nan
            if not np.isfinite(diam) or diam <= 0:
                diam = DEFAULTS["diameter_m"]
                marks.append("diameter")
            inp.add_obj(CrossSection(name, "CIRCULAR", round(diam * u.per_m, 4)))
        if not (np.isfinite(r.us_invert) and np.isfinite(r.ds_invert)):
            marks.append("offsets")
        if marks:
            tags[("Link", name)] = "DEFAULT:" + ",".join(marks)
        pts = shapely.get_coordinates(g) if g is not None else np.zeros((0, 2))
        if len(pts) > 2:
            inp.add_obj(Vertices(name, [tuple(p) for p in np.round(pts[1:-1], 3)]))


def _offset(end: float, node_invert: float) -> float:
    """A link end's height above its node's invert (0 when unknown or below it)."""
    if not np.isfinite(end) or not np.isfinite(node_invert):
        return 0.0
    return max(float(end) - float(node_invert), 0.0)


# -- subcatchments --------------------------------------------------------------------


def _subcatchments(
    ic: gpd.GeoDataFrame,  # of :func:`_catchments`
    nodes: pd.DataFrame,
    u: _Units,
    inp: Any,
    *,
    tags: dict,
    notes: list[str],
) -> int:
    """[SUBCATCHMENTS], [SUBAREAS], [INFILTRATION], [Polygons]; returns how many."""
    from swmm_api.input_file.sections import (
        InfiltrationHorton,
        Polygon,
        SubArea,
        SubCatchment,
    )

    d = DEFAULTS
    skipped = []
    n = 0
    for r, g in zip(ic.itertuples(index=False), ic.geometry, strict=True):
        outlet, name = str(r.outlet), str(r.name)
        if outlet not in nodes.index:
            skipped.append(str(r.what))
            continue
        area_m2 = float(r.area_m2)
        marks = ["imperv", "subareas", "infiltration"]
        flow_len = getattr(r, "flow_length_m", np.nan)
        slope = getattr(r, "slope_pct", np.nan)
        if not np.isfinite(flow_len) or flow_len <= 0:
            flow_len = float(np.sqrt(area_m2))
            marks.append("width")
        if not np.isfinite(slope) or slope <= 0:
            slope = d["slope_pct"]
            marks.append("slope")
        if np.isfinite(r.pct_raster):  # data: the raster's mean over the catchment
            imperv = round(float(r.pct_raster), 2)
            marks.remove("imperv")
        else:
            imperv = pct_impervious(getattr(r, "parcel_classes", None), area_m2)
        width = area_m2 / flow_len * u.per_m
        inp.add_obj(
            SubCatchment(
                name, "RG1", outlet, round(area_m2 * u.area_per_m2, 5), imperv,
                round(width, 3), round(float(slope), 3),
            )
        )  # fmt: skip
        inp.add_obj(
            SubArea(
                name, d["n_imperv"], d["n_perv"], round(d["s_imperv_mm"] * u.rain_per_mm, 3),
                round(d["s_perv_mm"] * u.rain_per_mm, 3), d["pct_zero"],
            )
        )  # fmt: skip
        inp.add_obj(
            InfiltrationHorton(
                name, round(d["horton_max_mm_h"] * u.rain_per_mm, 3),
                round(d["horton_min_mm_h"] * u.rain_per_mm, 3), d["horton_decay_h"],
                d["horton_dry_days"], 0,
            )
        )  # fmt: skip
        ring = _outline(g)
        if ring is not None:
            inp.add_obj(Polygon(name, [tuple(p) for p in np.round(ring, 3)]))
        tags[("Subcatch", name)] = f"drains:{r.kind}|DEFAULT:" + ",".join(marks)
        n += 1
    if skipped:
        notes.append(
            f"{len(skipped)} catchment(s) drain to a target that is not a node of the traced "
            f"network ({', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}): not "
            "written (a subcatchment's outlet must be a node of the model)."
        )
    return n


def _catchments(
    layers: dict[str, gpd.GeoDataFrame], nodes: pd.DataFrame, u: _Units, inp: Any, tags: dict
) -> gpd.GeoDataFrame:
    """Every catchment to write: ``name``, ``outlet``, ``kind``, ``what``, ``area_m2``,
    ``slope_pct``, ``flow_length_m``, ``parcel_classes``.  A water reached directly gets
    an outfall node of its own, ``W_<water id>``, at its lowest cell (the node is added
    here, to the model and to ``nodes``)."""
    from swmm_api.input_file.sections import Coordinate, Outfall

    ic = layers["inlet_catchments"]
    ids = ic["node_id"].astype(str)
    parts = [
        pd.DataFrame(
            {
                "name": "SC_" + ids,
                "outlet": ids,
                "kind": "inlet",
                "what": "inlet " + ids,
                **_hydro(ic),
            }
        ).set_geometry(ic.geometry.to_numpy(), crs=ic.crs)
    ]
    sc = layers.get("surface_catchments")
    if sc is not None and len(sc):
        kind = sc["target_kind"].astype(str).to_numpy()
        tid = sc["target_id"].astype(str).to_numpy()
        outlet = sc["outlet_node"].astype(object).where(sc["outlet_node"].notna(), "").astype(str)
        outlet = np.where(kind == "water_direct", np.char.add("W_", tid.astype(str)), outlet)
        for i in np.flatnonzero(kind == "water_direct"):
            node = str(outlet[i])
            x, y, z = (float(sc[c].iloc[i]) for c in ("low_x", "low_y", "low_elev"))
            if node in nodes.index or not (np.isfinite(x) and np.isfinite(y)):
                continue
            z = z if np.isfinite(z) else 0.0
            inp.add_obj(Outfall(node, round(z * u.to_len, 3), "FREE"))
            inp.add_obj(Coordinate(node, round(x, 3), round(y, 3)))
            name = _token(sc["name"].iloc[i]) if "name" in sc.columns else "none"
            tags[("Node", node)] = f"waterbody:{_token(tid[i])}|water:{name}|DEFAULT:invert"
            nodes.loc[node] = [z * u.to_len, "outfall"]
        parts.append(
            pd.DataFrame(
                {
                    "name": np.char.add("SC_", np.where(kind == "water_direct", outlet, tid)),
                    "outlet": outlet,
                    "kind": kind,
                    "what": np.char.add(np.char.add(kind.astype(str), " "), tid.astype(str)),
                    **_hydro(sc),
                }
            ).set_geometry(sc.geometry.to_numpy(), crs=sc.crs)
        )
    return gpd.GeoDataFrame(pd.concat(parts, ignore_index=True), geometry="geometry")


def _hydro(frame: gpd.GeoDataFrame) -> dict[str, Any]:
    """The columns of a catchment layer a subcatchment takes its values from."""
    n = len(frame)

    def col(name: str, default: Any = np.nan) -> np.ndarray:
        if name in frame.columns:
            return frame[name].to_numpy()
        return np.full(n, default, dtype=object if default is None else float)

    return {
        "area_m2": pd.to_numeric(frame["area_m2"], errors="coerce").to_numpy(float),
        "slope_pct": pd.to_numeric(pd.Series(col("slope_pct")), errors="coerce").to_numpy(float),
        "flow_length_m": pd.to_numeric(pd.Series(col("flow_length_m")), errors="coerce").to_numpy(
            float
        ),
        "parcel_classes": col("parcel_classes", None),
    }


def raster_impervious(path: str | Path, areas: gpd.GeoDataFrame) -> np.ndarray:
    """Mean of a percent-impervious raster (0-100) over each polygon's cells (cell
    centres inside it; no-data cells left out; NaN where none is valid).  The raster
    is read and warped into the polygons' CRS by :func:`ms4map.io.read_dem`."""
    grid = read_dem(path, crs=areas.crs)
    arr, tr = np.asarray(grid.array, dtype=float), grid.transform
    h, w = arr.shape
    inv = ~tr
    out = np.full(len(areas), np.nan)
    for i, g in enumerate(areas.geometry):
        if g is None or g.is_empty:
            continue
        minx, miny, maxx, maxy = g.bounds
        (ca, ra), (cb, rb) = inv @ (minx, maxy), inv @ (maxx, miny)
        r0, r1 = max(int(np.floor(min(ra, rb))), 0), min(int(np.ceil(max(ra, rb))), h)
        c0, c1 = max(int(np.floor(min(ca, cb))), 0), min(int(np.ceil(max(ca, cb))), w)
        if r0 >= r1 or c0 >= c1:
            continue
        rows, cols = np.mgrid[r0:r1, c0:c1]
        xs = tr.c + (cols + 0.5) * tr.a + (rows + 0.5) * tr.b
        ys = tr.f + (cols + 0.5) * tr.d + (rows + 0.5) * tr.e
        vals = arr[rows, cols][shapely.contains_xy(g, xs, ys)]
        vals = vals[np.isfinite(vals)]
        if len(vals):
            out[i] = float(np.clip(vals.mean(), 0.0, 100.0))
    return out


def _outline(g: Any) -> np.ndarray | None:
    """The outline of a catchment as one ring (the largest part's exterior)."""
    if g is None or g.is_empty:
        return None
    if g.geom_type == "MultiPolygon":
        g = max(g.geoms, key=lambda p: p.area)
    return shapely.get_coordinates(g.exterior)[:-1]


# -- storm, options, title, tags -------------------------------------------------------


def _rain(inp: Any, depth: float, tags: dict, *, default: bool) -> None:
    """[TIMESERIES] DESIGN_STORM (intensities per 15 minutes) and [RAINGAGES] RG1."""
    from swmm_api.input_file.sections import RainGage, TimeseriesData

    series = [(round(h, 4), round(v, 4)) for h, v in design_storm(depth)]  # decimal hours
    inp.add_obj(TimeseriesData("DESIGN_STORM", series))
    inp.add_obj(RainGage("RG1", "INTENSITY", "0:15", 1.0, "TIMESERIES", "DESIGN_STORM"))
    tags[("Gage", "RG1")] = "DEFAULT:storm_depth" if default else "storm:NRCS_Type_II_24h"


def _options(inp: Any, u: _Units) -> None:
    from swmm_api.input_file.sections import OptionSection

    opts = OptionSection()
    opts.update(
        {
            "FLOW_UNITS": u.flow,
            "INFILTRATION": "HORTON",
            "FLOW_ROUTING": "DYNWAVE",
            "LINK_OFFSETS": "DEPTH",
            "START_DATE": "01/01/2026",
            "START_TIME": "00:00:00",
            "REPORT_START_DATE": "01/01/2026",
            "REPORT_START_TIME": "00:00:00",
            "END_DATE": "01/02/2026",
            "END_TIME": "06:00:00",
            "WET_STEP": "00:01:00",
            "DRY_STEP": "01:00:00",
            "REPORT_STEP": "00:05:00",
            "ROUTING_STEP": "0:00:05",
            "VARIABLE_STEP": 0.75,
            "ALLOW_PONDING": "NO",
        }
    )
    inp["OPTIONS"] = opts


def _title(inp: Any, of: gpd.GeoDataFrame, depth_mm: float, default: bool, source: str) -> None:
    from swmm_api.input_file.sections import TitleSection

    lines = [
        f"{TITLE_MARK} {__version__} from {source}",
        f"Design storm: NRCS 24-hour Type II, {depth_mm:g} mm"
        + (" (DEFAULT depth: set it with --storm-depth)" if default else ""),
        "Tags: DEFAULT:<what> marks a value that is a planning default, not data (docs/exports.md):",
        "rim, invert, depth, storage_area, n, xsection, diameter, offsets, imperv, subareas,",
        "infiltration, width, slope, added_node, added_link.",
        "Outfalls: PWL:<NY PWL id>|water:<receiving water>; W_<id>: a water reached directly.",
    ]
    inp["TITLE"] = TitleSection("\n".join(lines))


def _tags(inp: Any, tags: dict[tuple[str, str], str]) -> None:
    from swmm_api.input_file.sections import Tag

    for (kind, name), tag in tags.items():
        inp.add_obj(Tag(kind, name, tag))
