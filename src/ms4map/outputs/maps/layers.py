"""Map layers of a workspace and its results: one :class:`MapLayer` per toggle (:func:`build_layers`).

Each layer holds its features in the workspace's projected CRS with a ``fid`` and a
display ``category`` column; the colours and classes come from :mod:`ms4map.io.styles`
(shared with the QGIS styles).  Drawing them is :mod:`.render`'s job.  A structure or
conveyance whose outfall the network cannot tell (``ambiguous``) is drawn uncertain
(grey, dashed) with its candidate outfalls in a ``candidates`` column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ...analysis.frames import column_or_none as _col
from ...analysis.frames import feature_ids as _ids
from ...core.nulls import is_truthy
from ...io.styles import (
    AMBIGUOUS_CATEGORY,
    AMBIGUOUS_COLOUR,
    AMBIGUOUS_DASH,
    CONVEYANCE_COLOURS,
    DRAINAGE_CLASS_OF_TARGET,
    GUESSED_OUTFALL_CATEGORY,
    GUESSED_OUTFALL_COLOUR,
    GUESSED_OUTFALL_DASH,
    IMPAIRED_COLOURS,
    MS4_AREA_COLOUR,
    OUTFALL_COLOURS,
    PARCEL_COLOURS,
    SEPTIC_TRIBUTARY_NOT_KNOWN,
    SEWER_DISTRICT_COLOUR,
    SEWERSHED_COLOUR,
    STRUCTURE_COLOURS,
    TMDL_COLOUR,
    WATER_COLOUR,
)

if TYPE_CHECKING:
    from ...io import Workspace
    from ...pipeline import PipelineResult

__all__ = [
    "BASE_LAYERS",
    "LAYER_LABELS",
    "LAYER_ORDER",
    "OUTFALL_PRIORITY",
    "POLLUTANT_GROUPS",
    "MapLayer",
    "build_layers",
    "impaired_waters",
    "parcel_categories",
]


#: The workspace's own layers (what the investigation map shows first), bottom to top.
BASE_LAYERS = (
    "parcels",
    "waterbodies",
    "impaired_waters",
    "conveyances",
    "structures",
    "outfalls",
)
#: Draw order, bottom to top.
LAYER_ORDER = ("ms4_area", "sewer_districts", "tmdl_watersheds", "sewersheds", *BASE_LAYERS)

LAYER_LABELS = {
    "ms4_area": "MS4 area",
    "sewer_districts": "Sewer districts",
    "tmdl_watersheds": "TMDL watersheds",
    "sewersheds": "Sewersheds",
    "parcels": "Parcels",
    "waterbodies": "Waters",
    "impaired_waters": "303(d) waters",
    "conveyances": "Conveyances",
    "structures": "Structures",
    "outfalls": "Outfalls",
}

# -- styles: colours and classes come from ms4map.io.styles (shared with the QGIS styles) --
#: Outfall statuses by importance: the more important are drawn on top and win a
#: click on overlapping markers (then the nearest).
OUTFALL_PRIORITY = {
    "illicit": 5,
    "suspect": 4,
    "flowing": 3,
    "not_flowing": 2,
    "eliminated": 1,
    "unknown": 0,
}
POLLUTANT_GROUPS = {
    "phosphorus": "nutrients",
    "nitrogen": "nutrients",
    "nutrients": "nutrients",
    "ammonia": "nutrients",
    "pathogens": "pathogens",
    "e. coli": "pathogens",
    "fecal coliform": "pathogens",
    "silt/sediment": "sediment",
    "sediment": "sediment",
    "siltation": "sediment",
    "turbidity": "sediment",
    "pcbs": "toxics (PCBs, metals, ...)",
    "mercury": "toxics (PCBs, metals, ...)",
    "metals": "toxics (PCBs, metals, ...)",
}


@dataclass
class MapLayer:
    """One toggleable map layer: features (working CRS) with a ``category`` column.

    Attributes
    ----------
    key : str
        Layer key (see :data:`LAYER_ORDER`).
    label : str
        Name shown in the legend and the toggles.
    frame : GeoDataFrame
        Features in the working CRS with columns ``fid`` (the feature's id, str)
        and ``category``.
    styles : dict
        ``category -> colour``; categories not listed use ``"other"`` or grey.
    geom : {"polygon", "line", "point"}
    min_zoom : int
        Below this zoom the layer is drawn only when at most half of
        ``max_features`` features are in view (a small town shows all its parcels).
    max_features : int
        Most features drawn per render; beyond that the render notes it.
    fill_opacity : float
    arrows : bool
        Draw flow-direction arrowheads (lines digitised in flow order).
    dash_categories : dict
        ``category -> dash`` of the categories drawn dashed (an ambiguous outfall:
        uncertain) when the layer is not.
    """

    key: str
    label: str
    frame: gpd.GeoDataFrame
    styles: dict[str, str]
    geom: str
    min_zoom: int = 0
    max_features: int = 20000
    fill_opacity: float = 0.35
    weight: float = 1.0
    arrows: bool = False
    radius: float = 4.0
    dash: str | None = None
    dash_categories: dict[str, str] = field(default_factory=dict)

    def colour(self, category: str) -> str:
        return self.styles.get(category, self.styles.get("other", "#888888"))


#: How each layer is drawn: its geometry kind and the :class:`MapLayer` options it sets.
_DRAWING: dict[str, dict[str, Any]] = {
    "parcels": {"geom": "polygon", "max_features": 6000, "fill_opacity": 0.45, "weight": 0.6},
    "structures": {
        "geom": "point",
        "min_zoom": 15,
        "max_features": 4000,
        "fill_opacity": 0.9,
        "radius": 3.5,
    },
    "conveyances": {"geom": "line", "max_features": 8000, "weight": 2.0, "arrows": True},
    "outfalls": {"geom": "point", "fill_opacity": 1.0, "radius": 6.0, "weight": 1.5},
    "waterbodies": {"geom": "polygon", "fill_opacity": 0.4, "weight": 2.0},
    "impaired_waters": {"geom": "polygon", "fill_opacity": 0.5, "weight": 4.0},
    "tmdl_watersheds": {"geom": "polygon", "fill_opacity": 0.08, "weight": 2.5},
    "sewersheds": {"geom": "polygon", "fill_opacity": 0.05, "weight": 2.0},
    "ms4_area": {"geom": "polygon", "fill_opacity": 0.03, "weight": 2.0, "dash": "8 4"},
    "sewer_districts": {"geom": "polygon", "fill_opacity": 0.03, "weight": 2.0},
}


def _map_layer(key: str, frame: gpd.GeoDataFrame, styles: dict[str, str], **opts: Any) -> MapLayer:
    """The :class:`MapLayer` ``key``: its label and drawing (:data:`_DRAWING`) with ``frame``.

    Parameters
    ----------
    key : str
        Layer key (see :data:`LAYER_ORDER`).
    frame : GeoDataFrame
        Its features (columns ``fid`` and ``category``).
    styles : dict
        ``category -> colour``.
    **opts
        Options set at run time (the parcels' ``min_zoom``).

    Returns
    -------
    MapLayer
    """
    return MapLayer(key, LAYER_LABELS[key], frame, styles, **_DRAWING[key], **opts)


def _layer_frame(frame: gpd.GeoDataFrame, ids: pd.Series, category: pd.Series) -> gpd.GeoDataFrame:
    out = gpd.GeoDataFrame(
        {"fid": ids.to_numpy(dtype=object), "category": category.to_numpy(dtype=object)},
        geometry=frame.geometry.to_numpy(),
        crs=frame.crs,
    )
    out = out[out.geometry.notna() & ~out.geometry.is_empty].reset_index(drop=True)
    return out


def parcel_categories(
    parcels: pd.DataFrame,
    *,
    by: str = "drainage",
    drainage: pd.DataFrame | None = None,
    septic: pd.DataFrame | None = None,
    screening: pd.DataFrame | None = None,
) -> pd.Series:
    """One display category per parcel, aligned to ``parcels``.

    Parameters
    ----------
    parcels : DataFrame
        Canonical parcels (``parcel_id``, ``sewer``).
    by : {"drainage", "septic", "condition_a"}
        What colours the parcels.
    drainage : DataFrame, optional
        The parcel drainage table (``parcel_id``, ``target_kind``, ``fraction``).
        The category is that of the largest fraction.
    septic : DataFrame, optional
        The ``septic`` layer (``parcel_id`` plus flags such as ``tributary``,
        ``special_condition``, ``violation``).
    screening : DataFrame, optional
        The ``screening`` layer (``parcel_id`` plus ``condition_a``:
        true / false / NA for undetermined).

    Returns
    -------
    pandas.Series of str
    """
    if by not in PARCEL_COLOURS:
        raise ValueError(f"Unknown parcel colouring: {by!r}, select from {list(PARCEL_COLOURS)}")
    ids = _ids(parcels, "parcel_id")
    out = pd.Series("not computed", index=parcels.index, dtype=object)
    if by == "drainage" and drainage is not None and len(drainage):
        out = _drainage_categories(ids, drainage)
    elif by == "septic":
        out = _septic_categories(parcels, ids, septic)
    elif by == "condition_a" and screening is not None and len(screening):
        s = screening.drop_duplicates("parcel_id")
        if "condition_a" in s.columns:
            vals = dict(zip(s["parcel_id"].astype(str), s["condition_a"], strict=False))
            out = ids.map(lambda p: _condition_a_category(vals, p))
    return out.astype(object)


def _drainage_categories(ids: pd.Series, drainage: pd.DataFrame) -> pd.Series:
    """Each parcel's drainage class: that of the target of its largest fraction
    ("unknown" for a target kind without a class, "not computed" without a row)."""
    d = drainage[["parcel_id", "target_kind", "fraction"]].copy()
    d["parcel_id"] = d["parcel_id"].astype(str)
    d["fraction"] = pd.to_numeric(d["fraction"], errors="coerce").fillna(0.0)
    d = d.sort_values("fraction", ascending=False).drop_duplicates("parcel_id")
    kind = dict(zip(d["parcel_id"], d["target_kind"].astype(str), strict=False))
    names = DRAINAGE_CLASS_OF_TARGET
    return ids.map(lambda p: names.get(kind.get(p, ""), "unknown" if p in kind else "not computed"))


def _septic_categories(
    parcels: pd.DataFrame, ids: pd.Series, septic: pd.DataFrame | None
) -> pd.Series:
    """Each parcel's septic class: sewer or septic from the parcels, refined by the
    ``septic`` layer's flags where it has the parcel."""
    sewer = _col(parcels, "sewer").astype(object)
    out = pd.Series(
        np.where(sewer.astype(str) == "septic", "septic, not tributary", "public sewer / unknown"),
        index=parcels.index,
        dtype=object,
    )
    if septic is not None and len(septic) and "parcel_id" in septic.columns:
        s = septic.drop_duplicates("parcel_id")
        s = s.set_index(s["parcel_id"].astype(str).to_numpy())
        flags = {
            pid: _septic_flag(row) for pid, row in zip(s.index, s.to_dict("records"), strict=False)
        }
        mapped = ids.map(flags)
        out = mapped.where(mapped.notna(), out)
    return out


def _septic_flag(row: dict[str, Any]) -> str:
    """The category of a row of the ``septic`` layer, the strongest flag first."""
    if is_truthy(row.get("violation")):
        return "septic violation"
    if is_truthy(row.get("special_condition")):
        return "septic, special condition"
    if is_truthy(row.get("flagged", row.get("tributary", True))):
        return "septic, tributary to MS4"
    if row.get("method") in SEPTIC_TRIBUTARY_NOT_KNOWN:
        return "septic, tributary not known"
    return "septic, not tributary"


def _condition_a_category(vals: dict[str, Any], p: str) -> str:
    """The Condition A category of parcel ``p`` from the screening's ``condition_a``
    values (true / false / NA or words for undetermined)."""
    if p not in vals:
        return "not computed"
    v = vals[p]
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "undetermined"
    if isinstance(v, str):
        low = v.lower()
        if low in ("undetermined", "unknown"):
            return "undetermined"
        return "Condition A" if low in ("true", "yes", "a", "1") else "not Condition A"
    return "Condition A" if bool(v) else "not Condition A"


def impaired_waters(
    waterbodies: gpd.GeoDataFrame | None, impairments: pd.DataFrame | None
) -> gpd.GeoDataFrame | None:
    """Waterbodies on the 303(d) list, one row per water, categorised by pollutant group."""
    if waterbodies is None or impairments is None or not len(waterbodies) or not len(impairments):
        return None
    imp = impairments.copy()
    imp["wb_id"] = imp["wb_id"].astype(str)
    cat = _col(imp, "category").astype(str).str.lower()
    listed = imp[~cat.str.startswith("4a")]  # 4a counts through its TMDL watershed
    if not len(listed):
        return None
    groups = (
        listed.assign(
            group=listed["pollutant"]
            .astype(str)
            .str.lower()
            .map(POLLUTANT_GROUPS)
            .fillna("other pollutant")
        )
        .groupby("wb_id")
        .agg(group=("group", "first"), pollutants=("pollutant", lambda s: "; ".join(map(str, s))))
    )
    wb = waterbodies[waterbodies["wb_id"].astype(str).isin(groups.index)].copy()
    if not len(wb):
        return None
    wb["category"] = wb["wb_id"].astype(str).map(groups["group"])
    wb["pollutants"] = wb["wb_id"].astype(str).map(groups["pollutants"])
    return wb


def build_layers(
    ws: Workspace,
    *,
    result: PipelineResult | None = None,
    septic: pd.DataFrame | None = None,
    screening: pd.DataFrame | None = None,
    parcel_colour: str = "drainage",
    parcel_min_zoom: int = 15,
) -> dict[str, MapLayer]:
    """Every map layer the workspace and the results have, keyed as :data:`LAYER_ORDER`.

    Parameters
    ----------
    ws : Workspace
    result : PipelineResult, optional
        Adds sewersheds, the parcel drainage colouring and network-ordered conveyances.
    septic, screening : DataFrame, optional
        The ``septic`` and ``screening`` layers, for those parcel colourings.
    parcel_colour : {"drainage", "septic", "condition_a"}
    parcel_min_zoom : int
        Parcels are drawn from this zoom on (or when few are in view).

    Returns
    -------
    dict of str to MapLayer
    """
    get = ws.layers.get
    found = {
        "parcels": _parcels_layer(
            get("parcels"),
            getattr(result, "drainage", None) if result is not None else None,
            septic=septic,
            screening=screening,
            parcel_colour=parcel_colour,
            min_zoom=parcel_min_zoom,
        ),
        "structures": _structures_layer(get("structures"), result),
        "conveyances": _conveyances_layer(get("conveyances"), result),
        "outfalls": _outfalls_layer(get("outfalls"), result),
        "waterbodies": _waterbodies_layer(get("waterbodies")),
        "impaired_waters": _impaired_layer(get("waterbodies"), get("impairments")),
        "tmdl_watersheds": _tmdl_layer(get("tmdl_watersheds")),
        "sewersheds": _sewersheds_layer(
            getattr(result, "sewersheds", None) if result is not None else None
        ),
        "ms4_area": _boundary_layer("ms4_area", get("ms4_area"), MS4_AREA_COLOUR),
        "sewer_districts": _boundary_layer(
            "sewer_districts", get("sewer_districts"), SEWER_DISTRICT_COLOUR
        ),
    }
    return {k: found[k] for k in LAYER_ORDER if found.get(k) is not None}


def _has_rows(frame: pd.DataFrame | None) -> bool:
    return frame is not None and bool(len(frame))


def _parcels_layer(
    parcels: gpd.GeoDataFrame | None,
    drainage: pd.DataFrame | None,
    *,
    septic: pd.DataFrame | None,
    screening: pd.DataFrame | None,
    parcel_colour: str,
    min_zoom: int,
) -> MapLayer | None:
    """Parcels coloured by drainage, septic flag or Condition A (``parcel_colour``)."""
    if not _has_rows(parcels):
        return None
    cats = parcel_categories(
        parcels, by=parcel_colour, drainage=drainage, septic=septic, screening=screening
    )
    frame = _layer_frame(parcels, _ids(parcels, "parcel_id"), cats)
    return _map_layer("parcels", frame, PARCEL_COLOURS[parcel_colour], min_zoom=min_zoom)


def _structures_layer(
    structures: gpd.GeoDataFrame | None, result: PipelineResult | None = None
) -> MapLayer | None:
    """Structures coloured by kind; those whose outfall the network cannot tell drawn
    uncertain (:func:`_uncertain_layer`)."""
    if not _has_rows(structures):
        return None
    kind = _col(structures, "kind").fillna("other")
    ids = _ids(structures, "struct_id")
    table = getattr(getattr(result, "join", None), "inlet_outfall", None)
    if table is not None and "struct_id" in table.columns:
        table = table.set_index(table["struct_id"].astype(str))
    return _uncertain_layer(
        "structures", structures, ids, kind, table=table, colours=STRUCTURE_COLOURS
    )


def _uncertain_layer(
    key: str,
    frame: gpd.GeoDataFrame,
    ids: pd.Series,
    category: pd.Series,
    *,
    table: pd.DataFrame | None,
    colours: dict[str, str],
) -> MapLayer:
    """The layer ``key`` of ``frame``: features whose row of the network's outfall
    ``table`` (``method``, ``other_outfalls``; by feature id) is ``ambiguous`` get the
    category :data:`AMBIGUOUS_CATEGORY` (grey, dashed) and their candidate outfalls in
    ``candidates``; the others keep ``category`` and an empty ``candidates``."""
    cands = pd.Series("", index=frame.index, dtype=object)
    category = category.astype(object).copy()
    if table is not None and len(table) and "method" in table.columns:
        t = table[table["method"].astype(str) == "ambiguous"]
        t = t[~t.index.astype(str).duplicated()]
        got = ids.astype(str).map(t["other_outfalls"].fillna("").astype(str).to_dict())
        amb = got.notna().to_numpy()
        category[amb] = AMBIGUOUS_CATEGORY
        cands[amb] = [str(x).replace(";", ", ") for x in got[amb]]
    out = _layer_frame(frame, ids, category)
    keep = frame.geometry.notna().to_numpy() & ~frame.geometry.is_empty.to_numpy()
    out["candidates"] = cands.to_numpy()[keep]
    styles = {**colours, AMBIGUOUS_CATEGORY: AMBIGUOUS_COLOUR}
    return _map_layer(key, out, styles, dash_categories={AMBIGUOUS_CATEGORY: AMBIGUOUS_DASH})


def _conveyances_layer(
    conveyances: gpd.GeoDataFrame | None, result: PipelineResult | None
) -> MapLayer | None:
    """Conveyances by kind, with flow arrows: the network's edges are drawn in flow
    order; without a network, the layer as digitised (lines marked ``reverse`` turned
    round)."""
    net = getattr(result, "network", None) if result is not None else None
    edges = getattr(net, "edges", None)
    conv = edges if edges is not None and len(edges) else conveyances
    if not _has_rows(conv):
        return None
    if conv is conveyances and "flow_dir" in conv.columns:
        rev = conv["flow_dir"].astype(str) == "reverse"
        if rev.any():
            conv = conv.copy()
            conv.loc[rev, "geometry"] = shapely.reverse(conv.loc[rev, "geometry"].to_numpy())
    table = getattr(getattr(result, "join", None), "conv_outfall", None)
    kind = _col(conv, "kind").fillna("other")
    ids = _ids(conv, "conv_id")
    return _uncertain_layer("conveyances", conv, ids, kind, table=table, colours=CONVEYANCE_COLOURS)


def _outfalls_layer(
    outfalls: gpd.GeoDataFrame | None, result: PipelineResult | None = None
) -> MapLayer | None:
    """Outfalls by status; suspect and flowing ones drawn last, on top of their
    'unknown' neighbours.  The outfalls the network guessed from where the mapped lines
    end (``guessed``, not in the outfalls layer) are drawn too, hollow and dashed
    (:data:`GUESSED_OUTFALL_CATEGORY`): a town without an outfalls layer sees where its
    traces end, and that each end is a guess to check in the field."""
    net = getattr(result, "network", None) if result is not None else None
    guessed = _guessed_outfalls(getattr(net, "outfalls", None), outfalls)
    frames = []
    if _has_rows(outfalls):
        frames.append(
            _layer_frame(
                outfalls, _ids(outfalls, "outfall_id"), _col(outfalls, "status").fillna("unknown")
            )
        )
    if guessed is not None:
        cat = pd.Series(GUESSED_OUTFALL_CATEGORY, index=guessed.index)
        frames.append(_layer_frame(guessed, pd.Series(guessed.index.astype(str)), cat))
    if not frames:
        return None
    of_frame = gpd.GeoDataFrame(pd.concat(frames, ignore_index=True), crs=frames[0].crs)
    rank = of_frame["category"].map(OUTFALL_PRIORITY).fillna(0)
    of_frame = of_frame.iloc[np.argsort(rank.to_numpy(), kind="stable")].reset_index(drop=True)
    styles = {**OUTFALL_COLOURS, GUESSED_OUTFALL_CATEGORY: GUESSED_OUTFALL_COLOUR}
    dashes = {GUESSED_OUTFALL_CATEGORY: GUESSED_OUTFALL_DASH} if guessed is not None else {}
    return _map_layer("outfalls", of_frame, styles, dash_categories=dashes)


def _guessed_outfalls(
    net_outfalls: gpd.GeoDataFrame | None, layer: gpd.GeoDataFrame | None
) -> gpd.GeoDataFrame | None:
    """The network's guessed outfalls with a point that the outfalls layer does not hold
    (by id), or None."""
    if not _has_rows(net_outfalls) or "guessed" not in net_outfalls.columns:
        return None
    g = net_outfalls[net_outfalls["guessed"].map(is_truthy).astype(bool)]
    g = g[g.geometry.notna() & ~g.geometry.is_empty]
    if _has_rows(layer):
        g = g[~g.index.astype(str).isin(set(_ids(layer, "outfall_id").astype(str)))]
    if not len(g):
        return None
    return g if layer is None or g.crs == layer.crs else g.to_crs(layer.crs)


def _waterbodies_layer(waterbodies: gpd.GeoDataFrame | None) -> MapLayer | None:
    """Every waterbody in one colour."""
    if not _has_rows(waterbodies):
        return None
    water = pd.Series("water", index=waterbodies.index)
    frame = _layer_frame(waterbodies, _ids(waterbodies, "wb_id"), water)
    return _map_layer("waterbodies", frame, {"water": WATER_COLOUR})


def _impaired_layer(
    waterbodies: gpd.GeoDataFrame | None, impairments: pd.DataFrame | None
) -> MapLayer | None:
    """The 303(d)-listed waterbodies by pollutant group (:func:`impaired_waters`)."""
    imp = impaired_waters(waterbodies, impairments)
    if imp is None:
        return None
    frame = _layer_frame(imp, _ids(imp, "wb_id"), imp["category"])
    return _map_layer("impaired_waters", frame, IMPAIRED_COLOURS)


def _tmdl_layer(tmdl: gpd.GeoDataFrame | None) -> MapLayer | None:
    """TMDL watersheds, labelled by pollutant."""
    if not _has_rows(tmdl):
        return None
    lab = _col(tmdl, "pollutant").fillna("TMDL").astype(str).map(lambda s: f"TMDL: {s}")
    colours = {c: TMDL_COLOUR for c in lab.unique()} | {"other": TMDL_COLOUR}
    return _map_layer("tmdl_watersheds", _layer_frame(tmdl, _ids(tmdl, "tmdl_id"), lab), colours)


def _sewersheds_layer(sewersheds: gpd.GeoDataFrame | None) -> MapLayer | None:
    """The result's sewersheds, outlines only."""
    if not _has_rows(sewersheds):
        return None
    sid = _ids(sewersheds, "outfall_id")
    frame = _layer_frame(sewersheds, sid, pd.Series("sewershed", index=sewersheds.index))
    return _map_layer("sewersheds", frame, {"sewershed": SEWERSHED_COLOUR})


def _boundary_layer(role: str, frame: pd.DataFrame | None, colour: str) -> MapLayer | None:
    """The MS4 area or the sewer districts: a faint outline (dashed for the MS4 area)."""
    if not _has_rows(frame) or "geometry" not in getattr(frame, "columns", []):
        return None
    label = LAYER_LABELS[role]
    features = _layer_frame(frame, _ids(frame, "name"), pd.Series(label, index=frame.index))
    return _map_layer(role, features, {label: colour})
