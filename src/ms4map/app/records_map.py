"""The IDDE records on the map: outfalls by their one status, open cases and field verification as rings."""

from __future__ import annotations

from typing import Any

from ..io import Workspace
from .records_ui import CASE_COLOURS, derived_status, open_cases, reader

__all__ = ["VERIFIED_COLOUR", "layers_with_status", "map_overlay", "traced"]


def map_overlay(ws: Workspace, layers: dict[str, Any]) -> tuple[dict[str, Any], list[Any], str]:
    """Outfalls recoloured by their derived status, and the open-cases rings.

    Returns ``(layers, extra folium groups, legend HTML)``; without records the
    layers are returned as they are.  An outfall never inspected and without a case
    keeps the status of the outfalls layer.
    """
    import dataclasses

    import folium
    import numpy as np

    from ..outputs import maps
    from ..outputs.maps.layers import OUTFALL_PRIORITY

    got = derived_status()
    if got is None or "outfalls" not in layers:
        return layers, [], ""
    status, cases, dl = got
    lay = layers["outfalls"]
    frame = lay.frame.copy()
    known = status[status["method"] != "never_inspected"]
    derived = dict(zip(known["outfall_id"].astype(str), known["status"].astype(str), strict=True))
    frame["category"] = [
        derived.get(str(f), c) for f, c in zip(frame["fid"], frame["category"], strict=True)
    ]
    rank = frame["category"].map(OUTFALL_PRIORITY).fillna(0).to_numpy()
    frame = frame.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)
    out = dict(layers)
    out["outfalls"] = dataclasses.replace(lay, frame=frame)
    active = open_cases(cases, dl)
    groups: list[Any] = []
    legend = ""
    if active is not None and len(active):
        import geopandas as gpd

        fg = folium.FeatureGroup(name="Open cases")
        pts = gpd.GeoDataFrame(active, geometry="geometry", crs=cases.crs).to_crs(ws.crs)
        for overdue, part in pts.groupby("overdue"):
            label = "open case, deadline overdue" if overdue else "open case"
            colour = CASE_COLOURS[label]
            part = part.assign(case=part["case_id"].astype(int), status=part["status"].astype(str))
            folium.GeoJson(
                maps.display_geojson(part, properties=["case", "outfall_id", "status"]),
                marker=folium.CircleMarker(radius=12 if overdue else 10, fill=False),
                style_function=_style(
                    {
                        "color": colour,
                        "weight": 4 if overdue else 2.5,
                        "fill": False,
                        "dashArray": None if overdue else "4 3",
                    }
                ),
                tooltip=folium.GeoJsonTooltip(["case", "outfall_id", "status"]),
                interactive=True,
            ).add_to(fg)
        groups.append(fg)
        n_over = int(active["overdue"].sum())
        legend = (
            "<b>Open cases</b><br>"
            + "".join(
                f'<span style="display:inline-block;width:12px;height:12px;border-radius:50%;'
                f'border:3px solid {c}"></span>&nbsp;{lab}<br>'
                for lab, c in CASE_COLOURS.items()
            )
            + f"{len(active)} open, {n_over} overdue"
        )
    vgroup, vlegend = _verification_overlay(ws)
    if vgroup is not None:
        groups.append(vgroup)
        legend = f"{legend}<br>{vlegend}" if legend else vlegend
    return out, groups, legend


#: The ring of an outfall verified in the field (its position seen by an inspection).
VERIFIED_COLOUR = "#1a9850"


def _verification_overlay(ws: Workspace) -> tuple[Any, str]:
    """A ring around every outfall verified in the field (issue 30 item 3), with its
    date and how far the field position lies from the mapped one; mapped-only outfalls
    have none.  ``(None, "")`` without records or without a verified outfall."""
    import folium
    import geopandas as gpd
    from shapely.geometry import Point

    from ..outputs import maps

    rec = reader()
    if rec is None:
        return None, ""
    try:
        v = rec.verification()
    except Exception:  # noqa: BLE001 - an older records file: no field positions yet
        return None, ""
    v = v[v["verification"] == "verified"]
    if not len(v):
        return None, ""
    moved = v["moved_m"].astype(float).fillna(0.0)
    words = {
        "none": "",
        "pending": " (move not accepted: traces use the mapped point)",
        "accepted": " (move accepted: traces use the field point)",
    }
    frame = gpd.GeoDataFrame(
        {
            "outfall_id": v["outfall_id"].astype(str).to_numpy(),
            "verified": [
                f"in the field on {d}; {m:.1f} m from the mapped point{words.get(str(k), '')}"
                for d, m, k in zip(v["verified_on"], moved, v["move"], strict=True)
            ],
        },
        geometry=[Point(x, y) for x, y in zip(v["x"], v["y"], strict=True)],
        crs=rec.outfalls.crs,
    ).to_crs(ws.crs)
    fg = folium.FeatureGroup(name="Verified in the field")
    folium.GeoJson(
        maps.display_geojson(frame, properties=["outfall_id", "verified"]),
        marker=folium.CircleMarker(radius=9, fill=False),
        style_function=_style({"color": VERIFIED_COLOUR, "weight": 2, "fill": False}),
        tooltip=folium.GeoJsonTooltip(["outfall_id", "verified"]),
        interactive=True,
    ).add_to(fg)
    legend = (
        "<b>Field verification</b><br>"
        f'<span style="display:inline-block;width:12px;height:12px;border-radius:50%;'
        f'border:2px solid {VERIFIED_COLOUR}"></span>&nbsp;verified in the field '
        f"({len(v)}); no ring: mapped only"
    )
    return fg, legend


def _style(style: dict[str, Any]):
    def fn(_feature: Any) -> dict[str, Any]:
        return style

    return fn


def layers_with_status(ws: Workspace, layers: dict[str, Any]) -> dict[str, Any]:
    """The layers with outfalls in their derived status (what a click picks among)."""
    try:
        return map_overlay(ws, layers)[0]
    except Exception:  # noqa: BLE001 - without records the layers as they are
        return layers


_MOVED: dict[tuple[int, str], Workspace] = {}


def traced(ws: Workspace) -> Workspace:
    """``ws`` with the outfall moves the SMO accepted in the records
    (:meth:`ms4map.records.Records.with_accepted_moves`): the workspace the app's traces
    run on (:func:`ms4map.app.state.traced_workspace`).  ``ws`` itself without records or
    moves; one copy per workspace and set of moves (its fingerprint names the moves)."""
    rec = reader()
    if rec is None:
        return ws
    moved = rec.with_accepted_moves(ws)
    if moved is ws:
        return ws
    key = (id(ws), moved.fingerprint())
    if key not in _MOVED:
        while len(_MOVED) >= 4:
            _MOVED.pop(next(iter(_MOVED)))
        _MOVED[key] = moved
    return _MOVED[key]
