"""Field verification of outfalls: the position found in the field, verified versus mapped-only, accepted moves.

An inspection may carry the position found in the field (``found_lat``, ``found_lon``,
WGS 84 degrees).  The outfall is then ``verified`` on that date, with the distance
between the mapped and the found position.  The position the traces use stays the
mapped one until the SMO accepts the move (:func:`accept_move`, a decision recorded in
the audit trail, table name ``outfall_moves``).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pandas as pd

from ..core.errors import DataError
from ..core.nulls import is_blank
from . import gpkg, tamper, writes

__all__ = ["MOVE_TABLE", "accept_move", "accepted_moves", "verification", "verified_outfalls"]

#: The audit trail's ``table_name`` of an accepted move.
MOVE_TABLE = "outfall_moves"


def _found(r: dict[str, Any]) -> bool:
    return not is_blank(r.get("found_lat")) and not is_blank(r.get("found_lon"))


def verified_outfalls(inspections: pd.DataFrame, *, until: dt.date | None = None) -> list[str]:
    """Outfalls with an inspection (on or before ``until``) that recorded the position
    found in the field."""
    if not len(inspections) or "found_lat" not in inspections:
        return []
    out = set()
    for r in inspections.to_dict("records"):
        d = pd.to_datetime(r.get("date"), errors="coerce")
        if _found(r) and (until is None or (not pd.isna(d) and d.date() <= until)):
            out.add(str(r["outfall_id"]))
    return sorted(out)


def _found_point(r: dict[str, Any], crs: Any) -> Any:
    """The found position in ``crs`` (a shapely point)."""
    import geopandas as gpd
    from shapely.geometry import Point

    p = gpd.GeoSeries([Point(float(r["found_lon"]), float(r["found_lat"]))], crs="EPSG:4326")
    return p.to_crs(crs).iloc[0] if crs is not None else p.iloc[0]


def accepted_moves(audit: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``outfall_id -> {inspection_id, x, y, on, by, at, reason}``: the latest accepted
    move of each outfall (from the audit trail)."""
    out: dict[str, dict[str, Any]] = {}
    if not len(audit):
        return out
    rows = audit[audit["table_name"] == MOVE_TABLE].sort_values("created_at")
    for r in rows.to_dict("records"):
        v = json.loads(r["new_values"])
        out[str(v["outfall_id"])] = {**v, "by": r["created_by"], "at": r["created_at"]}
    return out


def verification(outfalls: Any, inspections: pd.DataFrame, audit: pd.DataFrame) -> pd.DataFrame:
    """Verified versus mapped-only, per outfall.

    Returns
    -------
    DataFrame
        ``outfall_id, verification`` (``verified`` or ``mapped_only``), ``verified_on``,
        ``inspection_id`` (the latest with a found position), ``moved_m`` (metres
        between the mapped and the found position), ``move`` (``none``, ``pending``:
        found elsewhere, not accepted; ``accepted``), ``position_used`` (``mapped`` or
        ``field``: what the traces use), ``x, y`` (that position, in the outfalls' CRS).
    """
    latest: dict[str, dict[str, Any]] = {}
    if len(inspections) and "found_lat" in inspections:
        for r in inspections.sort_values(["date", "inspection_id"]).to_dict("records"):
            if _found(r):
                latest[str(r["outfall_id"])] = r
    moves = accepted_moves(audit)
    crs = getattr(outfalls, "crs", None)
    rows = []
    for o in outfalls.to_dict("records"):
        oid = str(o["outfall_id"])
        geom = o["geometry"]
        r = latest.get(oid)
        row = {
            "outfall_id": oid,
            "verification": "mapped_only",
            "verified_on": None,
            "inspection_id": None,
            "moved_m": None,
            "move": "none",
            "position_used": "mapped",
            "x": float(geom.x),
            "y": float(geom.y),
        }
        if r is not None:
            found = _found_point(r, crs)
            row.update(
                verification="verified",
                verified_on=str(r["date"]),
                inspection_id=int(r["inspection_id"]),
                moved_m=round(float(geom.distance(found)), 2),
            )
            row["move"] = "pending" if row["moved_m"] > 0 else "none"
        m = moves.get(oid)
        if m is not None:
            row.update(move="accepted", position_used="field", x=float(m["x"]), y=float(m["y"]))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["inspection_id"] = out["inspection_id"].astype("Int64")
    return out


def accept_move(records: Any, outfall_id: str, *, inspection_id: int, reason: str = "") -> int:
    """Accept the position an inspection found for an outfall: from then on the traces
    (:meth:`Records.trace_outfalls`) use it.  Recorded in the audit trail (who, when,
    the inspection, the mapped and the new position); returns the decision's id."""
    writes.need_edit(records, "accepting an outfall's moved position")
    ins = records.inspections()
    hit = ins[ins["inspection_id"] == int(inspection_id)] if len(ins) else ins
    if not len(hit):
        raise DataError(f"Field 'inspection_id' = {inspection_id}: no such inspection.")
    r = hit.iloc[0].to_dict()
    if str(r["outfall_id"]) != str(outfall_id):
        raise DataError(
            f"Inspection {inspection_id} is of outfall {r['outfall_id']}, not {outfall_id}."
        )
    if not _found(r):
        raise DataError(
            f"Inspection {inspection_id} recorded no position found in the field "
            "(found_lat, found_lon): there is no move to accept."
        )
    of = records.outfalls
    mapped = of.loc[of["outfall_id"].astype(str) == str(outfall_id), "geometry"].iloc[0]
    p = _found_point(r, of.crs)
    with gpkg.write_tx(records.path) as con:
        row_id = 1 + int(
            con.execute(
                "SELECT COALESCE(MAX(row_id), 0) FROM audit WHERE table_name = ?", (MOVE_TABLE,)
            ).fetchone()[0]
        )
        fid, previous = tamper.next_audit_fid(con)
        audit = {
            "fid": fid,
            "role": records.role,
            "table_name": MOVE_TABLE,
            "row_id": row_id,
            "version": 1,
            "action": "accept_move",
            "old_values": json.dumps({"x": mapped.x, "y": mapped.y}),
            "new_values": json.dumps(
                {
                    "outfall_id": str(outfall_id),
                    "inspection_id": int(inspection_id),
                    "x": p.x,
                    "y": p.y,
                    "moved_m": round(float(mapped.distance(p)), 2),
                    "reason": str(reason or ""),
                },
                sort_keys=True,
            ),
            "created_at": gpkg.now_utc(),
            "created_by": records.user,
        }
        tamper.append_audit(con, audit, previous)  # the audit chain
    return row_id
