"""The SMPs on the map: every practice (point or polygon) coloured by its inspection status, with its legend."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..io import Workspace

__all__ = ["SMP_COLOURS", "SMP_WORDS", "map_status", "smp_overlay"]

#: Colour of each inspection status on the map (ColorBrewer RdYlGn, grey = never).
SMP_COLOURS = {
    "ok": "#1a9850",
    "due_soon": "#fdae61",
    "overdue": "#d73027",
    "never_inspected": "#878787",
}
#: The words of each status (legend, tooltips).
SMP_WORDS = {
    "ok": "inspected, not due",
    "due_soon": "inspection due within 30 days",
    "overdue": "inspection overdue",
    "never_inspected": "never inspected",
}


def map_status(status: str) -> str:
    """The map's status of :func:`ms4map.records.smp.smp_status`'s ``inspection_status``
    (a practice inspected without an inspection interval: ``ok``)."""
    return status if status in SMP_COLOURS else "ok"


def smp_overlay(ws: Workspace, rec: Any, today: dt.date | None = None) -> tuple[Any, str]:
    """``(folium FeatureGroup, legend HTML)`` of the practices of ``rec`` (a
    :class:`~ms4map.records.Records`) as of ``today``; ``(None, "")`` without any."""
    import folium

    from ..outputs import maps
    from ..records import smp

    if rec is None:
        return None, ""
    st_ = smp.smp_status(rec, today)
    if not len(st_):
        return None, ""
    frame = st_.copy()
    frame["state"] = [map_status(s) for s in frame["inspection_status"]]
    frame["inspection"] = [
        SMP_WORDS[m] + (f" (due {d})" if isinstance(d, str) and d else "")
        for m, d in zip(frame["state"], frame["inspection_due"], strict=True)
    ]
    frame = frame.to_crs(ws.crs) if frame.crs is not None and ws.crs is not None else frame
    frame["smp"] = frame["name"].astype(str)
    fg = folium.FeatureGroup(name="SMPs")
    props = ["smp", "practice", "inspection", "state"]
    for state_name, part in frame.groupby("state"):
        colour = SMP_COLOURS[str(state_name)]
        folium.GeoJson(
            maps.display_geojson(part, properties=props),
            marker=folium.CircleMarker(radius=7, fill=True, fill_opacity=0.9),
            style_function=_style(
                {"color": colour, "fillColor": colour, "weight": 2, "fillOpacity": 0.45}
            ),
            tooltip=folium.GeoJsonTooltip(["smp", "practice", "inspection"]),
            interactive=True,
        ).add_to(fg)
    counts = frame["state"].value_counts()
    legend = "<b>SMPs (stormwater management practices)</b><br>" + "".join(
        f'<span style="display:inline-block;width:12px;height:12px;background:{c};'
        f'border:1px solid #333"></span>&nbsp;{SMP_WORDS[k]} ({int(counts.get(k, 0))})<br>'
        for k, c in SMP_COLOURS.items()
    )
    return fg, legend


def _style(style: dict[str, Any]):
    def fn(_feature: Any) -> dict[str, Any]:
        return style

    return fn
