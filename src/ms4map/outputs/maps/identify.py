"""Answering the map on the server: the feature under a click (:func:`identify`) and text search of parcels, structures and outfalls.

The browser only reports where the user clicked; the spatial index finds the feature.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pyproj import Transformer
from shapely.geometry import Point

from ...analysis.frames import WGS84
from ...analysis.frames import column_or_none as _col
from ...analysis.frames import feature_ids as _ids
from ...core.units import metres_per_unit
from .layers import OUTFALL_PRIORITY, MapLayer
from .view import metres_per_pixel

if TYPE_CHECKING:
    from ...io import Workspace

__all__ = ["SearchIndex", "build_search_index", "identify", "search_features"]


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


#: Street words as people type them -> the USPS abbreviation addresses are kept in, so
#: "river road" finds "River Rd" and "100 river rd." finds "100 River Road".
_STREET_WORDS = {
    "road": "rd", "street": "st", "avenue": "ave", "av": "ave", "drive": "dr",
    "lane": "ln", "court": "ct", "place": "pl", "boulevard": "blvd", "terrace": "ter",
    "parkway": "pkwy", "highway": "hwy", "circle": "cir", "square": "sq", "trail": "trl",
    "turnpike": "tpke", "route": "rte", "north": "n", "south": "s", "east": "e",
    "west": "w", "mount": "mt", "saint": "st",
}  # fmt: skip


def _norm_words(value: Any) -> str:
    """Lower case, single spaces, street words abbreviated; a word's trailing ``.`` or
    ``,`` dropped (``"Rd."``, ``"Main St,"``) but not those inside ids (``232.-1-12``)."""
    words = [w.rstrip(".,") or w for w in str(value).lower().split()]
    return " ".join(_STREET_WORDS.get(w, w) for w in words)


def _norm_text(values: pd.Series) -> pd.Series:
    s = values.astype(object).where(values.notna(), "")
    return s.map(_norm_words)


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
    q = _norm_words(query)
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
