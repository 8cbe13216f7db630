"""folium maps of a workspace and its results, built for the browser's sake.

The map never ships every feature: each render takes the current view (a
:class:`MapView`, in EPSG:4326 with a zoom level), picks the features in it
with the spatial index, drops parcels below a zoom level unless few are in
view, simplifies at about half a screen pixel (never finer than 0.5 m), rounds
coordinates to 6 decimals (~0.1 m) and sends one style per category instead
of one per feature.  Clicks are answered on the server (:func:`identify`):
the browser only reports where the user clicked.

Everything here works on GeoDataFrames in the workspace's projected CRS and
reprojects to EPSG:4326 only for display.  folium is imported lazily.

Public functions
----------------
:func:`build_layers`       workspace + results -> :class:`MapLayer` per toggle
:func:`render_layers`      layers + view -> folium FeatureGroups (limited to the view)
:func:`base_map`           an empty map (basemap or none, offline assets)
:func:`static_map`         a self-contained map of the given layers (no view limit)
:func:`identify`           the feature under a click (spatial index, pixel tolerance)
:func:`search_features`    address / parcel id / structure id / outfall id search
:func:`feature_path`       a feature's downstream path to its receiving water
:func:`hillshade`          a shaded-relief RGBA image of a DEM, in EPSG:4326 bounds
:func:`legend_html`        an HTML legend of the visible layers
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from shapely.geometry import LineString, Point, box

from ms4map.core.nulls import is_truthy

from ..analysis.frames import WGS84
from ..analysis.frames import column_or_none as _col
from ..analysis.frames import feature_ids as _ids
from ..analysis.outfalls import OutfallArea, inventory_totals, outfall_area, outfall_inventory
from ..analysis.paths import (
    OVERLAND_METHODS,
    PathResult,
    feature_attributes,
    feature_geometry,
    feature_path,
    overland_steps,
)
from ..core.units import metres_per_unit
from ..io.styles import (
    CONVEYANCE_COLOURS,
    DRAINAGE_CLASS_OF_TARGET,
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
    from ..io.workspace import Workspace
    from ..pipeline import PipelineResult

__all__ = [
    "BASEMAPS",
    "OVERLAND_METHODS",
    "BASE_LAYERS",
    "LAYER_ORDER",
    "MapLayer",
    "OutfallArea",
    "MapView",
    "PathResult",
    "base_map",
    "build_layers",
    "build_search_index",
    "clip_to_view",
    "display_geojson",
    "feature_attributes",
    "feature_geometry",
    "feature_path",
    "flow_arrows",
    "hillshade",
    "identify",
    "inventory_totals",
    "legend_html",
    "metres_per_pixel",
    "outfall_area",
    "outfall_inventory",
    "outfall_map_pdf",
    "overland_steps",
    "parcel_categories",
    "png_bytes",
    "render_layers",
    "search_features",
    "static_map",
]

#: Basemaps: name -> (tiles URL or None, attribution).  "none" works offline.
BASEMAPS: dict[str, tuple[str | None, str]] = {
    "none": (None, ""),
    "OpenStreetMap (online)": (
        "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        "&copy; OpenStreetMap contributors",
    ),
    "Esri World Imagery (online)": (
        "https://server.arcgisonline.com/ArcGIS/rest/services/World_Imagery/MapServer/tile/{z}/{y}/{x}",
        "Tiles &copy; Esri",
    ),
}

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
PATH_COLOUR = "#ff00ff"
HIGHLIGHT_COLOUR = "#00e5ff"
#: Highlights drawn over the layers: label -> (colour, dash or None, legend words).
#: A label not listed is drawn in :data:`HIGHLIGHT_COLOUR` and named as is.
HIGHLIGHT_STYLES: dict[str, tuple[str, str | None, str]] = {
    "selection": (HIGHLIGHT_COLOUR, None, "selected"),
    "path": (PATH_COLOUR, None, "path to the outfall (pipes and ditches)"),
    "overland step": (PATH_COLOUR, "6 6", "overland step (parcel to inlet or water)"),
    "outfalls reached": (PATH_COLOUR, None, "outfall(s) reached"),
    "sewershed": (HIGHLIGHT_COLOUR, "8 4", "sewershed of the outfall"),
    "upstream network": ("#ffd400", None, "network upstream of the outfall"),
    "contributing parcels": (HIGHLIGHT_COLOUR, None, "parcels draining to the outfall"),
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


@dataclass
class MapView:
    """What the browser shows: EPSG:4326 bounds plus a zoom level."""

    south: float
    west: float
    north: float
    east: float
    zoom: int = 14

    @classmethod
    def from_bounds(
        cls, bounds: tuple[float, float, float, float], crs: Any, *, zoom: int | None = None
    ) -> MapView:
        """A view of ``bounds`` (minx, miny, maxx, maxy in ``crs``); zoom to fit when None."""
        from pyproj import Transformer

        tr = Transformer.from_crs(crs, WGS84, always_xy=True)
        west, south, east, north = tr.transform_bounds(*bounds)
        if zoom is None:
            zoom = fit_zoom(south, west, north, east)
        return cls(south, west, north, east, int(zoom))

    @classmethod
    def around(
        cls, lat: float, lng: float, zoom: int, *, width_px: int = 1000, height_px: int = 600
    ) -> MapView:
        """The view a ``width_px`` x ``height_px`` map centred at ``(lat, lng)`` shows at
        ``zoom`` (what to draw before the browser reports its own bounds)."""
        mpp = metres_per_pixel(lat, zoom)
        dlat = height_px * mpp / 110574 / 2
        dlng = width_px * mpp / (111320 * max(math.cos(math.radians(lat)), 1e-6)) / 2
        return cls(lat - dlat, lng - dlng, lat + dlat, lng + dlng, int(zoom))

    @classmethod
    def from_st_folium(cls, out: dict | None, default: MapView) -> MapView:
        """The view reported by ``st_folium`` (``bounds`` and ``zoom``), else ``default``."""
        if not out:
            return default
        b = out.get("bounds") or {}
        sw, ne = b.get("_southWest") or {}, b.get("_northEast") or {}
        try:
            south, west = float(sw["lat"]), float(sw["lng"])
            north, east = float(ne["lat"]), float(ne["lng"])
        except (KeyError, TypeError, ValueError):
            return default
        if not all(map(math.isfinite, (south, west, north, east))) or north <= south:
            return default
        zoom = out.get("zoom")
        return cls(south, west, north, east, int(zoom) if zoom is not None else default.zoom)

    @property
    def center(self) -> tuple[float, float]:
        return ((self.south + self.north) / 2, (self.west + self.east) / 2)

    def bbox(self, crs: Any, *, margin: float = 0.1) -> tuple[float, float, float, float]:
        """The view in ``crs`` (minx, miny, maxx, maxy), grown by ``margin`` of its size."""
        from pyproj import Transformer

        tr = Transformer.from_crs(WGS84, crs, always_xy=True)
        minx, miny, maxx, maxy = tr.transform_bounds(self.west, self.south, self.east, self.north)
        dx, dy = (maxx - minx) * margin, (maxy - miny) * margin
        return (minx - dx, miny - dy, maxx + dx, maxy + dy)

    def metres_per_pixel(self) -> float:
        return metres_per_pixel(self.center[0], self.zoom)


def metres_per_pixel(lat: float, zoom: int) -> float:
    """Ground size of one Web-Mercator screen pixel at ``lat`` and ``zoom``."""
    return 156543.03392 * math.cos(math.radians(lat)) / (2**zoom)


def fit_zoom(
    south: float,
    west: float,
    north: float,
    east: float,
    *,
    width_px: int = 900,
    height_px: int = 600,
) -> int:
    """Largest zoom at which the bounds fit a ``width_px`` x ``height_px`` map."""
    lat = (south + north) / 2
    for z in range(19, 0, -1):
        mpp = metres_per_pixel(lat, z)
        w = (east - west) * 111320 * math.cos(math.radians(lat)) / mpp
        h = (north - south) * 110574 / mpp
        if w <= width_px and h <= height_px:
            return z
    return 1


# -- building the layers ---------------------------------------------------------------
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
        "structures": _structures_layer(get("structures")),
        "conveyances": _conveyances_layer(get("conveyances"), result),
        "outfalls": _outfalls_layer(get("outfalls")),
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


def _structures_layer(structures: gpd.GeoDataFrame | None) -> MapLayer | None:
    """Structures coloured by kind."""
    if not _has_rows(structures):
        return None
    kind = _col(structures, "kind").fillna("other")
    frame = _layer_frame(structures, _ids(structures, "struct_id"), kind)
    return _map_layer("structures", frame, STRUCTURE_COLOURS)


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
    frame = _layer_frame(conv, _ids(conv, "conv_id"), _col(conv, "kind").fillna("other"))
    return _map_layer("conveyances", frame, CONVEYANCE_COLOURS)


def _outfalls_layer(outfalls: gpd.GeoDataFrame | None) -> MapLayer | None:
    """Outfalls by status; suspect and flowing ones drawn last, on top of their
    'unknown' neighbours."""
    if not _has_rows(outfalls):
        return None
    of_frame = _layer_frame(
        outfalls, _ids(outfalls, "outfall_id"), _col(outfalls, "status").fillna("unknown")
    )
    rank = of_frame["category"].map(OUTFALL_PRIORITY).fillna(0)
    of_frame = of_frame.iloc[np.argsort(rank.to_numpy(), kind="stable")].reset_index(drop=True)
    return _map_layer("outfalls", of_frame, OUTFALL_COLOURS)


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


# -- view limiting and display geometry -----------------------------------------------
def in_view(frame: gpd.GeoDataFrame, bbox: tuple[float, float, float, float]) -> gpd.GeoDataFrame:
    """The rows of ``frame`` whose geometry intersects ``bbox`` (spatial index query)."""
    if not len(frame):
        return frame
    idx = frame.sindex.query(box(*bbox), predicate="intersects")
    return frame.iloc[np.sort(idx)]


def clip_to_view(
    frame: gpd.GeoDataFrame, bbox: tuple[float, float, float, float]
) -> gpd.GeoDataFrame:
    """Cut lines and polygons that reach beyond ``bbox`` to it (a sewershed or a river
    crossing the view is sent as the part in view, not whole); empty results dropped."""
    geoms = frame.geometry.to_numpy()
    b = shapely.bounds(geoms)
    out = (b[:, 0] < bbox[0]) | (b[:, 1] < bbox[1]) | (b[:, 2] > bbox[2]) | (b[:, 3] > bbox[3])
    if not out.any():
        return frame
    geoms = geoms.copy()
    geoms[out] = shapely.clip_by_rect(geoms[out], *bbox)
    keep = ~shapely.is_empty(geoms)
    clipped = frame.copy()
    clipped[clipped.geometry.name] = geoms
    return clipped[keep]


def display_geojson(
    frame: gpd.GeoDataFrame,
    *,
    tolerance: float = 0.0,
    decimals: int = 6,
    properties: Iterable[str] = (),
) -> str:
    """Compact GeoJSON of ``frame`` in EPSG:4326, simplified and rounded for display.

    Parameters
    ----------
    frame : GeoDataFrame
        Features in a projected CRS.
    tolerance : float
        Simplification tolerance in the frame's CRS units (0 = none).
    decimals : int
        Decimal places kept in the output coordinates (6 ~ 0.1 m).
    properties : iterable of str
        Columns written as feature properties.
    """
    geoms = frame.geometry.to_numpy()
    if tolerance > 0:
        geoms = shapely.simplify(geoms, tolerance, preserve_topology=True)
    if frame.crs is not None and not frame.crs.equals(WGS84):
        geoms = gpd.GeoSeries(geoms, crs=frame.crs).to_crs(WGS84).to_numpy()
    geoms = shapely.transform(geoms, lambda c: np.round(c, decimals))
    texts = shapely.to_geojson(geoms)
    props = list(properties)
    if props:
        records = frame[props].astype(object).where(frame[props].notna(), None).to_dict("records")
        feats = [
            f'{{"type":"Feature","properties":{json.dumps(r, default=str, separators=(",", ":"))},"geometry":{g}}}'
            for r, g in zip(records, texts, strict=False)
        ]
    else:
        feats = [f'{{"type":"Feature","properties":{{}},"geometry":{g}}}' for g in texts]
    return '{"type":"FeatureCollection","features":[' + ",".join(feats) + "]}"


def flow_arrows(lines: gpd.GeoDataFrame, *, size: float) -> gpd.GeoDataFrame:
    """Arrowheads (a "V" of two segments) at the middle of each line, pointing downstream.

    Parameters
    ----------
    lines : GeoDataFrame
        Lines digitised in flow order, projected CRS.
    size : float
        Arrow arm length in CRS units.
    """
    geoms = lines.geometry.to_numpy()
    lengths = shapely.length(geoms)
    ok = lengths > 2 * size
    geoms, lengths = geoms[ok], lengths[ok]
    if not len(geoms):
        return gpd.GeoDataFrame({"category": []}, geometry=[], crs=lines.crs)
    tip = shapely.line_interpolate_point(geoms, lengths / 2 + size / 2)
    back = shapely.line_interpolate_point(geoms, lengths / 2 - size / 2)
    tx, ty = shapely.get_x(tip), shapely.get_y(tip)
    bx, by = shapely.get_x(back), shapely.get_y(back)
    ang = np.arctan2(ty - by, tx - bx)
    arms = []
    for a, x, y in zip(ang, tx, ty, strict=False):
        left = (x - size * math.cos(a - 0.5), y - size * math.sin(a - 0.5))
        right = (x - size * math.cos(a + 0.5), y - size * math.sin(a + 0.5))
        arms.append(LineString([left, (x, y), right]))
    cats = lines["category"].to_numpy()[ok] if "category" in lines.columns else "arrow"
    return gpd.GeoDataFrame({"category": cats}, geometry=arms, crs=lines.crs)


@dataclass
class RenderStats:
    """What one render sent: features per layer and notes for the user."""

    features: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def render_layers(
    layers: dict[str, MapLayer],
    view: MapView,
    *,
    visible: Iterable[str] | None = None,
    crs: Any = None,
    min_tolerance_m: float = 0.5,
    decimals: int = 6,
    stats: RenderStats | None = None,
) -> list[Any]:
    """folium FeatureGroups of the visible layers, limited to ``view``.

    Parameters
    ----------
    layers : dict of str to MapLayer
    view : MapView
    visible : iterable of str, optional
        Layer keys to draw (default all).
    crs : CRS, optional
        Working CRS (default: the first layer's).
    min_tolerance_m : float
        Finest simplification, in metres (the tolerance is half a screen pixel,
        never below this).
    decimals : int
        Coordinate decimals sent to the browser.
    stats : RenderStats, optional
        Filled with the feature counts and notes (e.g. "zoom in to see parcels").

    Returns
    -------
    list of folium.FeatureGroup
        One group per drawn layer, in :data:`LAYER_ORDER`.
    """
    import folium

    keys = [k for k in LAYER_ORDER if k in layers and (visible is None or k in set(visible))]
    if not keys:
        return []
    crs = crs if crs is not None else layers[keys[0]].frame.crs
    bbox = view.bbox(crs)
    unit = metres_per_unit(crs, default=1.0)
    mpp = view.metres_per_pixel()
    tol = max(min_tolerance_m, 0.5 * mpp) / unit
    groups = []
    for key in keys:
        layer = layers[key]
        sub = in_view(layer.frame, bbox)
        if view.zoom < layer.min_zoom and len(sub) > layer.max_features // 2:
            if stats is not None:
                stats.notes.append(
                    f"{layer.label}: {len(sub):,} in view; zoom in (to level {layer.min_zoom}) to draw them."
                )
                stats.features[key] = 0
            continue
        if len(sub) > layer.max_features:
            if stats is not None:
                stats.notes.append(
                    f"{layer.label}: {len(sub):,} in view, the first {layer.max_features:,} drawn; zoom in."
                )
            sub = sub.iloc[: layer.max_features]
        if layer.geom != "point" and len(sub):
            sub = clip_to_view(sub, bbox)
        if stats is not None:
            stats.features[key] = len(sub)
        fg = folium.FeatureGroup(name=layer.label, show=True)
        parts = list(sub.groupby("category", sort=True))
        if key == "outfalls":  # later groups are drawn on top: the important statuses last
            parts.sort(key=lambda kv: OUTFALL_PRIORITY.get(str(kv[0]), 0))
        for cat, part in parts:
            _add_geojson(fg, part, layer, str(cat), tol=tol, decimals=decimals)
        if layer.arrows and len(sub) and view.zoom >= 16:
            arrows = flow_arrows(sub, size=7 * mpp / unit)
            for cat, part in arrows.groupby("category", sort=True):
                colour = layer.colour(str(cat))
                folium.GeoJson(
                    display_geojson(part, decimals=decimals),
                    style_function=_const_style({"color": colour, "weight": 2, "opacity": 1}),
                    interactive=False,
                ).add_to(fg)
        groups.append(fg)
    return groups


def _const_style(style: dict[str, Any]):
    def fn(_feature: Any) -> dict[str, Any]:
        return style

    return fn


def _add_geojson(
    fg: Any, part: gpd.GeoDataFrame, layer: MapLayer, cat: str, *, tol: float, decimals: int
) -> None:
    import folium

    colour = layer.colour(cat)
    data = display_geojson(part, tolerance=tol if layer.geom != "point" else 0.0, decimals=decimals)
    if layer.geom == "point":
        style = {
            "color": "#222222",
            "weight": layer.weight,
            "fillColor": colour,
            "fillOpacity": layer.fill_opacity,
            "radius": layer.radius,
        }
        folium.GeoJson(
            data,
            marker=folium.CircleMarker(radius=layer.radius, fill=True),
            style_function=_const_style(style),
        ).add_to(fg)
    elif layer.geom == "line":
        style = {"color": colour, "weight": layer.weight, "opacity": 0.9}
        folium.GeoJson(data, style_function=_const_style(style)).add_to(fg)
    else:
        style = {
            "color": colour if layer.key not in ("parcels",) else "#555555",
            "weight": layer.weight,
            "fillColor": colour,
            "fillOpacity": layer.fill_opacity,
        }
        if layer.dash:
            style["dashArray"] = layer.dash
        folium.GeoJson(data, style_function=_const_style(style)).add_to(fg)


def highlight_group(
    items: dict[str, gpd.GeoSeries | gpd.GeoDataFrame],
    *,
    name: str = "Selection",
    colours: dict[str, str] | None = None,
    decimals: int = 6,
    view: MapView | None = None,
    max_features: int = 5000,
) -> Any:
    """A FeatureGroup that draws highlighted geometries (selection, path, upstream).

    With ``view``, only what is in view is sent (clipped, simplified at half a
    pixel, at most ``max_features`` per item), like the layers themselves.
    """
    import folium

    fg = folium.FeatureGroup(name=name)
    colours = colours or {}
    for label, geoms in items.items():
        if geoms is None or not len(geoms):
            continue
        frame = geoms if isinstance(geoms, gpd.GeoDataFrame) else gpd.GeoDataFrame(geometry=geoms)
        tol = 0.0
        if view is not None and frame.crs is not None and not frame.crs.is_geographic:
            bbox = view.bbox(frame.crs)
            frame = in_view(frame.reset_index(drop=True), bbox)
            if len(frame) > max_features:
                frame = frame.iloc[:max_features]
            if len(frame):
                frame = clip_to_view(frame, bbox)
            tol = max(0.5, 0.5 * view.metres_per_pixel()) / metres_per_unit(frame.crs, default=1.0)
            if not len(frame):
                continue
        colour, dash, _words = HIGHLIGHT_STYLES.get(label, (HIGHLIGHT_COLOUR, None, label))
        colour = colours.get(label, colour)
        style = {
            "color": colour,
            "weight": 4 if label in ("path", "overland step", "upstream network") else 3,
            "fillOpacity": 0.15,
            "fillColor": colour,
        }
        if dash:
            style["dashArray"] = dash
        is_pt = frame.geometry.geom_type.isin(["Point", "MultiPoint"]).to_numpy()
        if is_pt.any():  # circle markers (a plain GeoJson point is an image marker)
            folium.GeoJson(
                display_geojson(frame[is_pt], decimals=decimals),
                marker=folium.CircleMarker(radius=7, fill=True),
                style_function=_const_style(style | {"fillOpacity": 0.6}),
            ).add_to(fg)
        if not is_pt.all():
            folium.GeoJson(
                display_geojson(frame[~is_pt], tolerance=tol, decimals=decimals),
                style_function=_const_style(style),
            ).add_to(fg)
    return fg


def base_map(
    view: MapView,
    *,
    basemap: str = "none",
    asset_js: Sequence[tuple[str, str]] | None = None,
    asset_css: Sequence[tuple[str, str]] | None = None,
    hillshade_url: str | None = None,
    hillshade_bounds: list[list[float]] | None = None,
    hillshade_opacity: float = 0.5,
) -> Any:
    """An empty map at ``view``: basemap tiles (or none) and the hillshade image.

    Parameters
    ----------
    view : MapView
    basemap : str
        A key of :data:`BASEMAPS`; ``"none"`` needs no network.
    asset_js, asset_css : list of (name, URL), optional
        folium's ``default_js`` / ``default_css`` for locally served Leaflet/jQuery (the
        app passes :func:`ms4map.app.static.offline_js` / ``offline_css``); ``None`` keeps
        folium's CDN links.
    hillshade_url : str, optional
        URL (or data URL) of a hillshade PNG; ``hillshade_bounds`` its
        ``[[south, west], [north, east]]``.
    """
    import folium

    if basemap not in BASEMAPS:
        raise ValueError(f"Unknown basemap: {basemap!r}, select from {list(BASEMAPS)}")
    tiles, attr = BASEMAPS[basemap]
    m = folium.Map(
        location=list(view.center),
        zoom_start=view.zoom,
        tiles=None,
        control_scale=True,
        prefer_canvas=False,
        max_zoom=21,
    )
    if asset_js is not None:
        m.default_js = list(asset_js)
    if asset_css is not None:
        m.default_css = list(asset_css)
    if tiles is not None:
        folium.TileLayer(
            tiles=tiles, attr=attr, name=basemap, max_zoom=21, max_native_zoom=19
        ).add_to(m)
    if hillshade_url is not None and hillshade_bounds is not None:
        overlay = folium.raster_layers.ImageOverlay(
            image="data:image/png;base64,",  # placeholder: folium would read a local path
            bounds=hillshade_bounds,
            opacity=hillshade_opacity,
            name="Hillshade",
            interactive=False,
            zindex=1,
        )
        overlay.url = hillshade_url  # a served URL (or data URL) used as is
        overlay.add_to(m)
    return m


def static_map(
    layers: dict[str, MapLayer],
    *,
    view: MapView | None = None,
    visible: Iterable[str] | None = None,
    highlights: dict[str, gpd.GeoSeries | gpd.GeoDataFrame] | None = None,
    basemap: str = "none",
    asset_js: Sequence[tuple[str, str]] | None = None,
    asset_css: Sequence[tuple[str, str]] | None = None,
    legend: bool = True,
) -> Any:
    """A complete folium map (for HTML export or a notebook): layers, highlights, legend;
    ``asset_js``/``asset_css`` as in :func:`base_map`."""
    import folium

    if view is None:
        frames = [lyr.frame for lyr in layers.values() if len(lyr.frame)]
        if not frames:
            raise ValueError("No layer has features to map.")
        b = np.array([f.total_bounds for f in frames])
        view = MapView.from_bounds(
            (b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()), frames[0].crs
        )
    m = base_map(view, basemap=basemap, asset_js=asset_js, asset_css=asset_css)
    for fg in render_layers(layers, view, visible=visible):
        fg.add_to(m)
    if highlights:
        highlight_group(highlights).add_to(m)
    if legend:
        html = legend_html(layers, visible=visible, highlights=highlights)
        m.get_root().html.add_child(
            folium.Element(
                '<div style="position:fixed;bottom:24px;left:10px;z-index:9999;background:white;'
                "padding:6px 8px;border:1px solid #999;font:12px sans-serif;max-height:60%;"
                f'overflow:auto">{html}</div>'
            )
        )
    m.fit_bounds([[view.south, view.west], [view.north, view.east]])
    return m


def _swatch(geom: str, colour: str, dash: str | None = None) -> str:
    if geom == "point":
        return (
            '<span style="display:inline-block;width:10px;height:10px;border-radius:50%;'
            f'background:{colour};border:1px solid #222"></span>'
        )
    if geom == "line":
        style = "dashed" if dash else "solid"
        return (
            '<span style="display:inline-block;width:18px;height:0;'
            f'border-top:3px {style} {colour};vertical-align:middle"></span>'
        )
    if dash:  # an outline only
        return (
            '<span style="display:inline-block;width:14px;height:10px;'
            f'border:2px dashed {colour}"></span>'
        )
    return (
        '<span style="display:inline-block;width:14px;height:10px;'
        f'background:{colour};opacity:0.8;border:1px solid #555"></span>'
    )


def _highlight_geom(label: str, geoms: Any) -> str:
    kinds = set(getattr(geoms, "geom_type", [])) if geoms is not None else set()
    if kinds and kinds <= {"Point", "MultiPoint"}:
        return "point"
    if kinds and kinds <= {"LineString", "MultiLineString"}:
        return "line"
    if label in ("path", "overland step", "upstream network"):
        return "line"
    if label == "outfalls reached":
        return "point"
    return "polygon"


def legend_html(
    layers: dict[str, MapLayer],
    *,
    visible: Iterable[str] | None = None,
    only_present: bool = True,
    highlights: dict[str, Any] | None = None,
    horizontal: bool = False,
) -> str:
    """An HTML legend: one swatch per category of each visible layer.

    Parameters
    ----------
    highlights : dict, optional
        ``label -> geometries`` drawn on top (as given to :func:`highlight_group`):
        each gets an entry under "Highlighted" (:data:`HIGHLIGHT_STYLES` words).
    horizontal : bool
        Lay the layers side by side (a legend under a full-width map).
    """
    vis = None if visible is None else set(visible)
    parts = []
    if highlights:
        rows = []
        for label, geoms in highlights.items():
            if geoms is None or not len(geoms):
                continue
            colour, dash, words = HIGHLIGHT_STYLES.get(label, (HIGHLIGHT_COLOUR, None, label))
            geom = _highlight_geom(label, getattr(geoms, "geometry", geoms))
            rows.append(f"{_swatch(geom, colour, dash)}&nbsp;{_esc(words)}")
        if rows:
            parts.append("<b>Highlighted</b><br>" + "<br>".join(rows))
    for key in LAYER_ORDER:
        if key not in layers or (vis is not None and key not in vis):
            continue
        layer = layers[key]
        present = (
            set(map(str, layer.frame["category"].unique())) if only_present else set(layer.styles)
        )
        cats = [c for c in layer.styles if c in present] + sorted(present - set(layer.styles))
        if not cats:
            continue
        rows = []
        for c in cats:
            sw = _swatch(layer.geom, layer.colour(c), layer.dash)
            rows.append(f"{sw}&nbsp;{_esc(c.replace('_', ' '))}")
        parts.append(f"<b>{_esc(layer.label)}</b><br>" + "<br>".join(rows))
    if horizontal:
        cells = "".join(
            f'<div style="margin:0 18px 6px 0;vertical-align:top">{p}</div>' for p in parts
        )
        return (
            '<div class="ms4map-legend" style="font-size:12px;line-height:1.5;display:flex;'
            f'flex-wrap:wrap">{cells}</div>'
        )
    return (
        '<div class="ms4map-legend" style="font-size:12px;line-height:1.5">'
        + "<br>".join(parts)
        + "</div>"
    )


def _esc(text: str) -> str:
    import html

    return html.escape(str(text))


# -- clicks, search, paths --------------------------------------------------------------
def identify(
    layers: dict[str, MapLayer],
    lat: float,
    lng: float,
    *,
    zoom: int = 16,
    tolerance_px: float = 8.0,
    visible: Iterable[str] | None = None,
) -> tuple[str, str] | None:
    """The feature under a click, found on the server with the spatial index.

    Points (outfalls, structures) within ``tolerance_px`` screen pixels win over
    lines, lines over polygons (parcels before larger areas).

    Returns
    -------
    (layer key, feature id) or None
    """
    from pyproj import Transformer

    if not layers:
        return None
    crs = next(iter(layers.values())).frame.crs
    x, y = Transformer.from_crs(WGS84, crs, always_xy=True).transform(lng, lat)
    pt = Point(x, y)
    tol = tolerance_px * metres_per_pixel(lat, zoom) / metres_per_unit(crs, default=1.0)
    vis = None if visible is None else set(visible)
    order = (
        "outfalls",
        "structures",
        "conveyances",
        "impaired_waters",
        "waterbodies",
        "parcels",
        "sewersheds",
        "tmdl_watersheds",
        "sewer_districts",
        "ms4_area",
    )
    for key in order:
        if key not in layers or (vis is not None and key not in vis):
            continue
        frame = layers[key].frame
        if not len(frame):
            continue
        if layers[key].geom == "polygon":
            hits = frame.sindex.query(pt, predicate="intersects")
            if len(hits):
                # smallest containing polygon (a parcel inside a large district)
                areas = frame.geometry.iloc[hits].area.to_numpy()
                return key, str(frame["fid"].iloc[hits[int(np.argmin(areas))]])
            if key not in ("parcels",):
                hits = frame.sindex.query(pt.buffer(tol), predicate="intersects")
                lines = [
                    h
                    for h in hits
                    if frame.geometry.iloc[h].geom_type in ("LineString", "MultiLineString")
                ]
                if lines:
                    return key, str(frame["fid"].iloc[lines[0]])
            continue
        hits = frame.sindex.query(pt.buffer(tol), predicate="intersects")
        if len(hits):
            d = frame.geometry.iloc[hits].distance(pt).to_numpy()
            if key == "outfalls":
                # markers under the pointer (its radius): the one drawn on top (the most
                # important status) wins; else, and among equals, the nearest
                r = (
                    layers[key].radius
                    * metres_per_pixel(lat, zoom)
                    / metres_per_unit(crs, default=1.0)
                )
                under = d <= r
                if under.any():
                    pri = frame["category"].iloc[hits].map(OUTFALL_PRIORITY).fillna(0).to_numpy()
                    best = np.lexsort((d, -np.where(under, pri, -1)))[0]
                    return key, str(frame["fid"].iloc[hits[int(best)]])
            return key, str(frame["fid"].iloc[hits[int(np.argmin(d))]])
    return None


_SEARCH_FIELDS = (
    ("parcels", "parcel_id", ("parcel_id", "address", "owner")),
    ("structures", "struct_id", ("struct_id",)),
    ("outfalls", "outfall_id", ("outfall_id", "receiving_water")),
)


@dataclass
class SearchIndex:
    """Normalised search texts of a workspace, sorted for prefix lookups.

    Build it once per workspace (:func:`build_search_index`); a search is then a
    binary search for exact and prefix matches and, only when those are fewer than
    asked for, one substring scan.
    """

    text: np.ndarray  # sorted normalised texts (object)
    layer: np.ndarray
    fid: np.ndarray
    label: np.ndarray


def _norm_text(values: pd.Series) -> pd.Series:
    s = values.astype(object).where(values.notna(), "")
    s = s.map(lambda v: " ".join(str(v).split()).lower())
    return s


def build_search_index(ws: Workspace) -> SearchIndex:
    """Index parcel ids, addresses and owners, structure ids, outfall ids and waters."""
    parts = []
    for role, idcol, fields in _SEARCH_FIELDS:
        frame = ws.layers.get(role)
        if frame is None or not len(frame):
            continue
        ids = _ids(frame, idcol).astype(object)
        extra = _col(frame, "address" if role == "parcels" else "receiving_water").astype(object)
        label = [
            f"{role[:-1]} {fid}" + (f" — {a}" if isinstance(a, str) and a.strip() else "")
            for fid, a in zip(ids, extra.where(extra.notna(), None), strict=True)
        ]
        for f in fields:
            if f != idcol and f not in frame.columns:
                continue
            text = _norm_text(ids if f == idcol else frame[f])
            keep = (text != "").to_numpy()
            parts.append(
                pd.DataFrame(
                    {
                        "text": text.to_numpy()[keep],
                        "layer": role,
                        "fid": ids.to_numpy()[keep],
                        "label": np.asarray(label, dtype=object)[keep],
                    }
                )
            )
    if not parts:
        empty = np.array([], dtype=object)
        return SearchIndex(empty, empty, empty, empty)
    df = pd.concat(parts, ignore_index=True).sort_values("text", kind="stable")
    return SearchIndex(*(df[c].to_numpy(dtype=object) for c in ("text", "layer", "fid", "label")))


def search_features(
    ws: Workspace, query: str, *, limit: int = 20, index: SearchIndex | None = None
) -> pd.DataFrame:
    """Find parcels (id, address, owner), structures and outfalls by text.

    Exact matches come first, then prefix matches, then substring matches; case
    and repeated spaces are ignored.

    Parameters
    ----------
    ws : Workspace
    query : str
    limit : int
    index : SearchIndex, optional
        A prebuilt :func:`build_search_index` (the app caches one per workspace).

    Returns
    -------
    DataFrame
        ``layer, fid, label, score`` (0 exact, 1 prefix, 2 substring), at most
        ``limit`` rows, one per feature.
    """
    cols = ["layer", "fid", "label", "score"]
    q = " ".join(str(query).split()).lower()
    if not q:
        return pd.DataFrame(columns=cols)
    idx = index if index is not None else build_search_index(ws)
    if not len(idx.text):
        return pd.DataFrame(columns=cols)
    lo = int(np.searchsorted(idx.text, q, side="left"))
    hi = int(np.searchsorted(idx.text, q + "\uffff", side="left"))
    rows = []
    for k in range(lo, hi):
        rows.append((idx.layer[k], idx.fid[k], idx.label[k], 0.0 if idx.text[k] == q else 1.0))
    seen = {(r[0], r[1]) for r in rows}
    if len(seen) < limit:
        hits = np.flatnonzero(pd.Series(idx.text).str.contains(q, regex=False).to_numpy())
        for k in hits:
            if lo <= k < hi:
                continue
            rows.append((idx.layer[k], idx.fid[k], idx.label[k], 2.0))
            if len(rows) > 50 * limit:
                break
    out = pd.DataFrame(rows, columns=cols)
    out = out.sort_values(["score", "layer", "fid"], kind="stable")
    out = out.drop_duplicates(["layer", "fid"], keep="first")
    return out.head(limit).reset_index(drop=True)


# -- hillshade ----------------------------------------------------------------------------
def hillshade(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    azimuth: float = 315.0,
    altitude: float = 45.0,
    z_factor: float = 1.0,
    max_px: int = 1200,
) -> tuple[np.ndarray, list[list[float]]]:
    """A shaded-relief RGBA image of a DEM, warped to Web Mercator for display.

    Parameters
    ----------
    array : ndarray
        Elevations (NaN = nodata) on the grid of ``transform`` in ``crs``.
    transform : affine.Affine
    crs : CRS
        The DEM's projected CRS.
    azimuth, altitude : float
        Sun direction and height in degrees.
    z_factor : float
        Vertical units to horizontal units.
    max_px : int
        Longest side of the output image.

    Returns
    -------
    rgba : ndarray (h, w, 4) uint8
        Grey shading, transparent where there is no data.
    bounds : list
        ``[[south, west], [north, east]]`` for :class:`folium.raster_layers.ImageOverlay`.
    """
    from rasterio.warp import calculate_default_transform

    from ..io.files import warp_bilinear

    a = np.asarray(array, dtype="float64")
    h, w = a.shape
    step = max(1, int(math.ceil(max(h, w) / max_px)))
    if step > 1:
        a = a[::step, ::step]
        t = transform  # transform x scale(step, step), written out (no Affine product)
        transform = type(t)(t.a * step, t.b * step, t.c, t.d * step, t.e * step, t.f)
    cx, cy = abs(transform.a), abs(transform.e)
    filled = np.where(np.isnan(a), np.nanmean(a) if np.isfinite(a).any() else 0.0, a) * z_factor
    dzdy, dzdx = np.gradient(filled, cy, cx)
    slope = np.arctan(np.hypot(dzdx, dzdy))
    aspect = np.arctan2(-dzdx, dzdy)
    az, alt = math.radians(360.0 - azimuth + 90.0), math.radians(altitude)
    shade = np.sin(alt) * np.cos(slope) + np.cos(alt) * np.sin(slope) * np.cos(az - aspect)
    shade = np.clip(shade, 0, 1)
    shade[np.isnan(a)] = np.nan
    hh, ww = shade.shape
    left, top = transform.c, transform.f
    right, bottom = left + transform.a * ww, top + transform.e * hh
    dst_crs = "EPSG:3857"
    dst_tr, dw, dh = calculate_default_transform(crs, dst_crs, ww, hh, left, bottom, right, top)
    scale = max(dw, dh) / max_px if max(dw, dh) > max_px else 1.0
    if scale > 1.0:
        dw, dh = int(dw / scale), int(dh / scale)
        dst_tr = dst_tr * dst_tr.scale(scale, scale)
    dst = warp_bilinear(
        shade, transform, crs, dst_transform=dst_tr, dst_crs=dst_crs, shape=(dh, dw)
    )
    grey = np.nan_to_num(dst * 255, nan=0).astype("uint8")
    rgba = np.dstack([grey, grey, grey, np.where(np.isnan(dst), 0, 255).astype("uint8")])
    from pyproj import Transformer

    x0, y0 = dst_tr.c, dst_tr.f
    x1, y1 = x0 + dst_tr.a * dw, y0 + dst_tr.e * dh
    tr = Transformer.from_crs(dst_crs, WGS84, always_xy=True)
    west, north = tr.transform(x0, y0)
    east, south = tr.transform(x1, y1)
    return rgba, [[south, west], [north, east]]


def png_bytes(rgba: np.ndarray) -> bytes:
    """Encode an RGBA uint8 image as PNG (folium's pure-Python writer)."""
    from folium.utilities import write_png

    return write_png(rgba)


# -- outfall investigation and inventory -------------------------------------------------
# candidate sources, sampling plans and notices live in ms4map.idde


def outfall_map_pdf(
    ws: Workspace,
    result: PipelineResult,
    inventory: pd.DataFrame,
    *,
    title: str = "MS4 outfall map",
) -> bytes:
    """A printable outfall map (PDF, letter landscape) plus the inventory table.

    Page 1 draws parcels, waters, conveyances, sewersheds and every outfall
    labelled with its id; the following pages list the inventory.
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    buf = io.BytesIO()
    with PdfPages(buf) as pdf:
        fig, ax = plt.subplots(figsize=(11, 8.5))
        get = ws.layers.get
        if (p := get("parcels")) is not None and len(p):
            p.plot(ax=ax, facecolor="#f2f2f2", edgecolor="#bbbbbb", linewidth=0.2)
        sheds = getattr(result, "sewersheds", None) if result is not None else None
        if sheds is not None and len(sheds):
            sheds.plot(ax=ax, facecolor="none", edgecolor="#7570b3", linewidth=1.0)
        if (w := get("waterbodies")) is not None and len(w):
            w.plot(ax=ax, color="#4a90d9", linewidth=1.2, alpha=0.8)
        conv = get("conveyances")
        if conv is not None and len(conv):
            conv.plot(ax=ax, color="#08519c", linewidth=0.6)
        if len(inventory):
            for status, grp in inventory.groupby(inventory["status"].astype(str)):
                ax.scatter(
                    grp["x"],
                    grp["y"],
                    s=30,
                    c=OUTFALL_COLOURS.get(status, "#969696"),
                    edgecolors="black",
                    linewidths=0.6,
                    zorder=5,
                    label=status,
                )
            for r in inventory.itertuples():
                ax.annotate(
                    str(r.outfall_id),
                    (r.x, r.y),
                    xytext=(3, 3),
                    textcoords="offset points",
                    fontsize=6,
                    zorder=6,
                )
            ax.legend(title="Outfall status", loc="lower right", fontsize=7, title_fontsize=8)
        ax.set_title(f"{title} — {len(inventory)} outfall(s)")
        ax.set_aspect("equal")
        ax.tick_params(labelsize=6)
        ax.set_xlabel(getattr(ws.crs, "name", str(ws.crs)), fontsize=7)
        fig.tight_layout()
        pdf.savefig(fig)
        plt.close(fig)
        shown = inventory.drop(columns=["x", "y"]).astype(object).where(inventory.notna(), "")
        per_page = 40
        for start in range(0, max(len(shown), 1), per_page):
            fig, ax = plt.subplots(figsize=(11, 8.5))
            ax.axis("off")
            chunk = shown.iloc[start : start + per_page]
            if len(chunk):
                tab = ax.table(
                    cellText=chunk.astype(str).to_numpy(),
                    colLabels=[c.replace("_", " ") for c in chunk.columns],
                    loc="upper center",
                    cellLoc="left",
                )
                tab.auto_set_font_size(False)
                tab.set_fontsize(6)
                tab.scale(1, 1.1)
            ax.set_title(f"Outfall inventory ({start + 1}-{start + len(chunk)} of {len(shown)})")
            pdf.savefig(fig)
            plt.close(fig)
    return buf.getvalue()
