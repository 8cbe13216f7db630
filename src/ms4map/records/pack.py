"""The compliance pack's counts: IDDE counts, mapping progress and the expedited list, each drillable.

Every count is the length of its list of ids (``ids``: the outfall, inspection, case or
deadline ids behind the number), so the SMO can show where a number comes from.  A
number the SMO types over is an **override**: recorded in the audit trail (who, when,
the reason, the computed and the reported value; table name ``pack_overrides``), shown
beside the computed count, never replacing it silently.
:mod:`ms4map.records.pack_write` writes the pack (PDF and CSVs).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..core.errors import UsageError
from ..core.nulls import is_blank
from . import gpkg, tamper, writes
from .periods import Period

__all__ = [
    "COUNT_LABELS",
    "MAPPING_LABELS",
    "OVERRIDE_TABLE",
    "expedited_list",
    "idde_counts",
    "mapping_progress",
    "overrides",
    "record_override",
]

#: The audit trail's ``table_name`` of an override of a pack count.
OVERRIDE_TABLE = "pack_overrides"

#: IDDE counts of the pack, in order: key -> (label, kind of the ids).
COUNT_LABELS: dict[str, tuple[str, str]] = {
    "outfalls": ("Outfalls in the inventory", "outfall"),
    "outfalls_mapped": ("Outfalls mapped with receiving water and PWL id", "outfall"),
    "outfalls_verified": ("Outfalls field-verified (position found in the field)", "outfall"),
    "outfalls_screened": ("Outfalls screened in the period", "outfall"),
    "screened_last_5_years": ("Outfalls screened within the last five years", "outfall"),
    "flowing": ("Outfalls found flowing (dry weather)", "outfall"),
    "suspect_or_obvious": ("Outfalls characterised suspect or obvious", "outfall"),
    "inspections": ("Inspections in the period", "inspection"),
    "complaints_received": ("Complaints received (cases opened on a complaint)", "case"),
    "cases_opened": ("Cases opened", "case"),
    "track_downs": ("Track-downs (cases sampled)", "case"),
    "samples_taken": ("Track-down samples taken", "sample"),
    "illicit_found": ("Illicit discharges found (source identified)", "case"),
    "illicit_eliminated": ("Illicit discharges eliminated", "case"),
    "cases_still_open": ("Cases still open at the end of the period", "case"),
    "notices_sent": ("Notices of violation issued", "case"),
    "deadlines_missed": ("Deadlines missed (due in the period, overdue or late)", "deadline"),
}

#: Mapping progress rows: key -> (label, kind of the ids).
MAPPING_LABELS: dict[str, tuple[str, str]] = {
    "outfalls_receiving_water_pwl": ("Outfalls with receiving water and PWL id", "outfall"),
    "structures_kind_inverts": ("Structures with kind and invert", "structure"),
    "conveyances_size_material": ("Conveyances with size and material", "conveyance"),
    "conveyances_connected": ("Conveyances with both ends known (connections)", "conveyance"),
    "sewersheds_drawn": ("Outfalls with a sewershed drawn", "outfall"),
}


def _d(v: Any) -> dt.date | None:
    if is_blank(v):
        return None
    d = pd.to_datetime(v, errors="coerce")
    return None if pd.isna(d) else d.date()


def _in(v: Any, lo: dt.date, hi: dt.date) -> bool:
    d = _d(v)
    return d is not None and lo <= d < hi


def _ids(values: Any) -> list[str]:
    """Distinct ids as text, in a stable order (numbers numerically)."""
    seen = list(dict.fromkeys(str(v) for v in values if not is_blank(v)))
    return sorted(seen, key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s))


def _known(v: Any) -> bool:
    return not is_blank(v) and str(v).strip() != ""


def mapped_outfalls(outfalls: pd.DataFrame) -> list[str]:
    """Outfalls with a receiving water and a PWL id."""
    if not {"receiving_water", "pwl_id"} <= set(outfalls.columns):
        return []
    ok = outfalls["receiving_water"].map(_known) & outfalls["pwl_id"].map(_known)
    return _ids(outfalls.loc[ok.astype(bool), "outfall_id"])


def idde_counts(
    period: Period,
    *,
    outfalls: pd.DataFrame,
    inspections: pd.DataFrame,
    samples: pd.DataFrame,
    cases: pd.DataFrame,
    deadlines: pd.DataFrame,
    verified: list[str] = (),  # type: ignore[assignment]
) -> pd.DataFrame:
    """The IDDE counts of ``period``, each with the ids behind it.

    Parameters
    ----------
    period : Period
        What is counted (:mod:`ms4map.records.periods`).
    outfalls : DataFrame
        The workspace's outfalls (``outfall_id``, ``receiving_water``, ``pwl_id``).
    inspections, samples, cases : DataFrame
        Current versions (:class:`~ms4map.records.Records`).
    deadlines : DataFrame
        :meth:`Records.deadlines` judged on the period's last day.
    verified : list of str
        Outfalls field-verified (:mod:`ms4map.records.verify`).

    Returns
    -------
    DataFrame
        ``key, label, kind, count, ids`` (ids: a list), one row per
        :data:`COUNT_LABELS` key; ``count == len(ids)`` on every row.  Outfalls count
        once however many inspections; a case once however many versions.
        ``cases_still_open``: opened before the period ended and neither closed nor
        eliminated by then (its ``age`` in days at the period's end is in
        :func:`open_case_ages`).
    """
    lo, hi = period.start, period.stop
    lo5 = dt.date(period.year - 4, lo.month, lo.day)
    known = set(outfalls["outfall_id"].astype(str))
    ins = inspections.to_dict("records") if len(inspections) else []
    now = [r for r in ins if _in(r["date"], lo, hi)]
    five = [r for r in ins if _in(r["date"], lo5, hi) and str(r["outfall_id"]) in known]

    def flag(r: Mapping[str, Any], col: str) -> bool:
        v = r.get(col)
        return not is_blank(v) and bool(v)

    cs = cases.to_dict("records") if len(cases) else []
    smp = samples.to_dict("records") if len(samples) else []
    smp_now = [s for s in smp if _in(s["date"], lo, hi)]

    def cases_on(col: str, **eq: Any) -> list[str]:
        return _ids(
            c["case_id"]
            for c in cs
            if _in(c.get(col), lo, hi) and all(c.get(k) == v for k, v in eq.items())
        )

    still = [c["case_id"] for c in open_case_ages(period, cases).to_dict("records")]
    missed: list[str] = []
    if len(deadlines):
        for r in deadlines.to_dict("records"):
            if r.get("status") in ("overdue", "late") and _in(r.get("due"), lo, hi):
                missed.append(f"{r['case_id']}:{r['deadline']}")
    lists = {
        "outfalls": _ids(known),
        "outfalls_mapped": mapped_outfalls(outfalls),
        "outfalls_verified": _ids(v for v in verified if v in known),
        "outfalls_screened": _ids(r["outfall_id"] for r in now),
        "screened_last_5_years": _ids(r["outfall_id"] for r in five),
        "flowing": _ids(r["outfall_id"] for r in now if flag(r, "flow_present")),
        "suspect_or_obvious": _ids(
            r["outfall_id"] for r in now if r.get("characterization") in ("suspect", "obvious")
        ),
        "inspections": _ids(r["inspection_id"] for r in now),
        "complaints_received": cases_on("opened_on", origin="complaint"),
        "cases_opened": cases_on("opened_on"),
        "track_downs": _ids(s["case_id"] for s in smp_now),
        "samples_taken": _ids(s["sample_id"] for s in smp_now),
        "illicit_found": cases_on("source_found_on"),
        "illicit_eliminated": cases_on("eliminated_on"),
        "cases_still_open": _ids(still),
        "notices_sent": cases_on("notice_on"),
        "deadlines_missed": sorted(set(missed)),
    }
    rows = [
        {"key": k, "label": label, "kind": kind, "count": len(lists[k]), "ids": lists[k]}
        for k, (label, kind) in COUNT_LABELS.items()
    ]
    return pd.DataFrame(rows)


def open_case_ages(period: Period, cases: pd.DataFrame) -> pd.DataFrame:
    """Cases still open at the end of ``period``: ``case_id, outfall_id, opened_on,
    status, age_days`` (days from opening to the period's last day), oldest first."""
    rows = []
    for c in cases.to_dict("records") if len(cases) else []:
        opened = _d(c.get("opened_on"))
        if opened is None or opened > period.end:
            continue
        ended = [_d(c.get(k)) for k in ("closed_on", "eliminated_on")]
        if any(e is not None and e <= period.end for e in ended):
            continue
        rows.append(
            {
                "case_id": int(c["case_id"]),
                "outfall_id": str(c["outfall_id"]),
                "opened_on": opened.isoformat(),
                "status": c.get("status"),
                "age_days": (period.end - opened).days,
            }
        )
    cols = ["case_id", "outfall_id", "opened_on", "status", "age_days"]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["age_days", "case_id"], ascending=[False, True]).reset_index(drop=True)


def _complete(df: pd.DataFrame | None, id_col: str, need: list[tuple[str, ...]]) -> list[str]:
    """Ids of the rows of ``df`` where, for every group of ``need``, one column is known."""
    if df is None or not len(df):
        return []
    ok = pd.Series(True, index=df.index)
    for group in need:
        have = pd.Series(False, index=df.index)
        for col in group:
            if col in df:
                have |= df[col].map(_known).astype(bool)
        ok &= have
    return _ids(df.loc[ok, id_col])


def mapping_progress(
    *,
    outfalls: pd.DataFrame,
    structures: pd.DataFrame | None,
    conveyances: pd.DataFrame | None,
    sewersheds: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """How far the MS4 map is: ``key, label, kind, count, total, share, ids``.

    ``ids`` lists what is complete (``count == len(ids)``); ``total`` is the size of the
    layer.  A structure is complete with a ``kind`` and an invert (``invert_elev``); a
    conveyance with a size (``diameter_in`` or ``rise_in``) and a ``material``;
    connected with both ends (``from_id``, ``to_id``) naming structures of the layer.
    ``sewersheds_drawn`` is counted only with a network result (``sewersheds``): the
    row is left out without one.
    """
    rows: list[dict[str, Any]] = []

    def add(key: str, ids: list[str], total: int) -> None:
        label, kind = MAPPING_LABELS[key]
        share = round(len(ids) / total, 4) if total else 0.0
        rows.append(
            {
                "key": key,
                "label": label,
                "kind": kind,
                "count": len(ids),
                "total": int(total),
                "share": share,
                "ids": ids,
            }
        )

    add("outfalls_receiving_water_pwl", mapped_outfalls(outfalls), len(outfalls))
    st = structures if structures is not None else pd.DataFrame(columns=["struct_id"])
    add(
        "structures_kind_inverts",
        _complete(st, "struct_id", [("kind",), ("invert_elev",)]),
        len(st),
    )
    cv = conveyances if conveyances is not None else pd.DataFrame(columns=["conv_id"])
    add(
        "conveyances_size_material",
        _complete(cv, "conv_id", [("diameter_in", "rise_in"), ("material",)]),
        len(cv),
    )
    nodes = set(st["struct_id"].astype(str)) | set(outfalls["outfall_id"].astype(str))
    if len(cv) and {"from_id", "to_id"} <= set(cv.columns):
        both = cv["from_id"].astype(str).isin(nodes) & cv["to_id"].astype(str).isin(nodes)
        connected = _ids(cv.loc[both.astype(bool), "conv_id"])
    else:
        connected = []
    add("conveyances_connected", connected, len(cv))
    if sewersheds is not None:
        known = set(outfalls["outfall_id"].astype(str))
        shed = sewersheds
        if "geometry" in shed:
            shed = shed[~shed.geometry.is_empty & shed.geometry.notna()]
        add(
            "sewersheds_drawn",
            _ids(o for o in shed["outfall_id"].astype(str) if o in known),
            len(known),
        )
    return pd.DataFrame(rows)


def expedited_list(
    *,
    outfalls: pd.DataFrame,
    listed: set[str],
    tmdl_of: Mapping[str, str],
    verified: list[str],
    screened_5y: list[str],
    sewersheds: list[str] | None = None,
) -> pd.DataFrame:
    """Outfalls (and their sewersheds) in impaired or TMDL watersheds, with what each lacks.

    Parameters
    ----------
    listed : set of str
        PWL ids of impaired waters (303(d) category 5 or TMDL 4a).
    tmdl_of : mapping
        ``outfall_id -> TMDL watershed name`` for outfalls inside one.
    verified, screened_5y : lists of outfall ids
    sewersheds : list of outfall ids, optional
        Outfalls with a sewershed drawn (``None``: not known without the network).

    Returns
    -------
    DataFrame
        ``outfall_id, receiving_water, pwl_id, why, lacks`` (``lacks``: ``;``-joined,
        empty when nothing is missing), one row per expedited outfall.
    """
    rows = []
    for r in outfalls.to_dict("records"):
        oid = str(r["outfall_id"])
        pwl = r.get("pwl_id")
        why = []
        if _known(pwl) and str(pwl).strip() in listed:
            why.append(f"receiving water {pwl} is impaired (303(d))")
        if oid in tmdl_of:
            why.append(f"in the TMDL watershed {tmdl_of[oid]}")
        if not why:
            continue
        lacks = []
        if not _known(r.get("receiving_water")):
            lacks.append("receiving water")
        if not _known(pwl):
            lacks.append("PWL id")
        if oid not in verified:
            lacks.append("field verification")
        if oid not in screened_5y:
            lacks.append("screening in the last five years")
        if sewersheds is not None and oid not in sewersheds:
            lacks.append("sewershed")
        rows.append(
            {
                "outfall_id": oid,
                "receiving_water": r.get("receiving_water"),
                "pwl_id": pwl,
                "why": "; ".join(why),
                "lacks": "; ".join(lacks),
            }
        )
    cols = ["outfall_id", "receiving_water", "pwl_id", "why", "lacks"]
    return pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------- overrides
def overrides(audit: pd.DataFrame, period: Period) -> dict[str, dict[str, Any]]:
    """The overrides of ``period`` in the audit trail: ``key -> {value, reason, by,
    at, computed}``, the latest of each key."""
    out: dict[str, dict[str, Any]] = {}
    if not len(audit):
        return out
    rows = audit[audit["table_name"] == OVERRIDE_TABLE]
    for r in rows.sort_values("created_at").to_dict("records"):
        v = json.loads(r["new_values"])
        if v.get("period") == period.kind and int(v.get("year", -1)) == period.year:
            out[v["key"]] = {
                "value": v["value"],
                "reason": v["reason"],
                "computed": v.get("computed"),
                "by": r["created_by"],
                "at": r["created_at"],
            }
    return out


def check_override(key: str, value: Any, reason: Any) -> tuple[str, int, str]:
    """Refuse an override of an unknown count, a value not a whole number >= 0, or one
    without a reason."""
    if key not in COUNT_LABELS:
        raise UsageError(
            f"override {key!r}: not a count of the pack; select from {list(COUNT_LABELS)}."
        )
    try:
        n = int(str(value).strip())
        if n < 0:
            raise ValueError
    except ValueError:
        raise UsageError(
            f"override {key} = {value!r}: give the reported number, a whole number >= 0."
        ) from None
    text = "" if reason is None else str(reason).strip()
    if not text:
        raise UsageError(
            f"override {key} = {n}: a reason is required (--reason TEXT; reason= in Python): "
            "an override is recorded in the audit trail with who, when and why."
        )
    return key, n, text


def record_override(
    records: Any, period: Period, key: str, value: Any, *, reason: str, computed: int
) -> int:
    """Write one override in the audit trail (its own transaction); returns its id."""
    key, n, why = check_override(key, value, reason)
    writes.need_edit(records, "override a count of the compliance pack")
    with gpkg.write_tx(records.path) as con:
        row_id = 1 + int(
            con.execute(
                "SELECT COALESCE(MAX(row_id), 0) FROM audit WHERE table_name = ?",
                (OVERRIDE_TABLE,),
            ).fetchone()[0]
        )
        fid, previous = tamper.next_audit_fid(con)
        audit = {
            "fid": fid,
            "role": records.role,
            "table_name": OVERRIDE_TABLE,
            "row_id": row_id,
            "version": 1,
            "action": "override",
            "old_values": json.dumps({"computed": int(computed)}),
            "new_values": json.dumps(
                {
                    "period": period.kind,
                    "year": period.year,
                    "key": key,
                    "value": n,
                    "computed": int(computed),
                    "reason": why,
                },
                sort_keys=True,
            ),
            "created_at": gpkg.now_utc(),
            "created_by": records.user,
        }
        tamper.append_audit(con, audit, previous)  # the audit chain
    return row_id
