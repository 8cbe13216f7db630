"""A site's drainage rows: checked, combined, their receiving waters, summarised.

The rows are the parcel drainage table's (:data:`DRAINAGE_COLUMNS`); a site of several
parcels combines theirs (:func:`combine_parcel_rows`); each row's receiving water is its
PWL id (:func:`water_ids`); :func:`summarize_drainage` is the determination's
``drainage`` part.  The batch checks a whole table (:func:`_bad_drainage_rows`).
A row whose network path is ambiguous names its candidate outfalls
(:data:`AMBIGUITY_COLUMNS`); :func:`candidate_rows` gives one row per candidate.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...core.errors import DataError
from ...core.nulls import is_blank
from ...core.qa import QAReport
from ...core.schema import AMBIGUITY_COLUMNS, PATH_COLUMNS, id_text, normalize_pwl_id
from ..waters import Waters

DRAINAGE_COLUMNS = (*PATH_COLUMNS, "method", "reason")


TARGET_KINDS = ("inlet", "conveyance", "water_direct", "depression", "off_dem", "unknown")


MS4_KINDS = ("inlet", "conveyance")


REACH_KINDS = ("inlet", "conveyance", "water_direct")


_UNKNOWN_KINDS = ("off_dem", "unknown")


_EPS = 1e-9


def _as_rows(drainage: pd.DataFrame | Iterable[dict[str, Any]]) -> pd.DataFrame:
    df = (
        pd.DataFrame(drainage).copy() if not isinstance(drainage, pd.DataFrame) else drainage.copy()
    )
    for c in DRAINAGE_COLUMNS:
        if c not in df.columns:
            df[c] = None
    for c in AMBIGUITY_COLUMNS:
        df[c] = _blank_text(df[c]) if c in df.columns else ""
    bad_kind = sorted({str(k) for k in df["target_kind"] if k not in TARGET_KINDS})
    if bad_kind:
        raise DataError(
            f"Drainage rows have unknown target_kind {bad_kind}; select from {list(TARGET_KINDS)}."
        )
    df["fraction"] = pd.to_numeric(df["fraction"], errors="coerce").fillna(0.0).astype(float)
    if (df["fraction"] < -_EPS).any():
        raise DataError(
            "Drainage rows have negative fractions; fractions are shares of the site's area (0-1)."
        )
    return df


def combine_parcel_rows(
    drainage: pd.DataFrame, parcel_ids: list[str], weights: dict[str, float] | None = None
) -> pd.DataFrame:
    """The drainage rows of several parcels as one site, fractions weighted by area.

    Parameters
    ----------
    drainage : DataFrame
        The parcel drainage table (with ``parcel_id``).
    parcel_ids : list of str
    weights : dict, optional
        ``parcel_id -> area``; equal weights when omitted.
    """
    sub = drainage[drainage["parcel_id"].astype(str).isin([str(p) for p in parcel_ids])].copy()
    if weights is None:
        weights = {str(p): 1.0 for p in parcel_ids}
    total = sum(weights.get(str(p), 0.0) for p in parcel_ids) or 1.0
    sub["fraction"] = sub["fraction"].astype(float) * sub["parcel_id"].astype(str).map(
        lambda p: weights.get(p, 0.0) / total
    )
    keys = ["target_kind", "target_id", "outfall_id", "receiving_water", "pwl_id"]
    for k in keys:
        sub[k] = sub[k].astype(object).where(sub[k].notna(), None)
    for c in AMBIGUITY_COLUMNS:
        sub[c] = _blank_text(sub[c]) if c in sub.columns else ""
    keys += list(AMBIGUITY_COLUMNS)
    out = (
        sub.groupby(keys, dropna=False, sort=False)
        .agg(
            fraction=("fraction", "sum"),
            method=("method", lambda s: ";".join(sorted({str(x) for x in s if not is_blank(x)}))),
            reason=(
                "reason",
                lambda s: " | ".join(dict.fromkeys(str(x) for x in s if not is_blank(x))),
            ),
        )
        .reset_index()
    )
    out = out[[*DRAINAGE_COLUMNS, *AMBIGUITY_COLUMNS]]
    have = set(sub["parcel_id"].astype(str))
    out.attrs["parcels_without_rows"] = [str(p) for p in parcel_ids if str(p) not in have]
    return out


def resolve_waterbody(row: Any, waters: Waters) -> str | None:
    """The receiving water of one drainage row (a dict or Series): :func:`_water_id`."""
    return _water_id(
        row.get("pwl_id"),
        row.get("target_kind"),
        row.get("target_id"),
        row.get("receiving_water"),
        waters,
    )


def summarize_drainage(rows: pd.DataFrame, waters: Waters) -> dict[str, Any]:
    """The drainage part of the determination: fractions, inlets, outfalls, waters."""
    fr = {
        key: float(rows.loc[rows["target_kind"] == key, "fraction"].sum()) for key in TARGET_KINDS
    }
    paths = []
    for row in rows.to_dict("records"):
        path = {
            key: (
                None
                if is_blank(row.get(key))
                else (float(row[key]) if key == "fraction" else str(row[key]))
            )
            for key in DRAINAGE_COLUMNS
        }
        if candidate_ids(row.get("outfall_candidates")):  # only on an ambiguous path
            path.update({c: str(row[c]) for c in AMBIGUITY_COLUMNS})
        paths.append(path)
    inlets = (
        rows[rows["target_kind"].isin(MS4_KINDS)]
        .groupby("target_id", dropna=False)["fraction"]
        .sum()
    )
    outfalls = []
    ms4 = rows[rows["target_kind"].isin(MS4_KINDS)].copy()
    if len(ms4):
        ms4["outfall_id"] = ms4["outfall_id"].astype(object).where(ms4["outfall_id"].notna(), None)
        amb = ms4["outfall_candidates"] if "outfall_candidates" in ms4.columns else None
        ms4["_cands"] = "" if amb is None else _blank_text(amb)
        for (outfall, cands), group in ms4.groupby(
            ["outfall_id", "_cands"], dropna=False, sort=False
        ):
            first = group.iloc[0]
            wb = resolve_waterbody(first, waters)
            entry = {
                "outfall_id": None if is_blank(outfall) else str(outfall),
                "fraction": float(group["fraction"].sum()),
                "receiving_water": None
                if is_blank(first["receiving_water"])
                else str(first["receiving_water"]),
                "pwl_id": wb,
            }
            if candidate_ids(cands):  # ambiguous: no outfall named, the candidates listed
                entry["candidates"] = candidate_ids(cands)
            outfalls.append(entry)
    recv: dict[tuple[str | None, str], dict[str, Any]] = {}
    for row in rows[rows["target_kind"].isin(REACH_KINDS)].to_dict("records"):
        wb = resolve_waterbody(row, waters)
        via = "ms4" if row["target_kind"] in MS4_KINDS else "direct"
        name = None if is_blank(row.get("receiving_water")) else str(row["receiving_water"])
        if name is None and wb:
            name = waters.name_of(wb)
        cands = candidate_ids(row.get("outfall_candidates"))
        if name is None and wb is None and cands:  # an ambiguous path to different waters
            name = f"not known (the network cannot tell whether flow reaches {' or '.join(cands)})"
        key = (wb, via)
        entry = recv.setdefault(
            key, {"name": name, "pwl_id": wb, "via": via, "fraction": 0.0, "outfalls": []}
        )
        entry["fraction"] += float(row["fraction"])
        if (
            via == "ms4"
            and not is_blank(row.get("outfall_id"))
            and str(row["outfall_id"]) not in entry["outfalls"]
        ):
            entry["outfalls"].append(str(row["outfall_id"]))
    return {
        "fractions": fr,
        "ms4_fraction": fr["inlet"] + fr["conveyance"],
        "direct_fraction": fr["water_direct"],
        "internal_fraction": fr["depression"],
        "unknown_fraction": fr["off_dem"] + fr["unknown"],
        "inlets": [
            {"target_id": None if is_blank(key) else str(key), "fraction": float(value)}
            for key, value in inlets.items()
        ],
        "outfalls": outfalls,
        "receiving_waters": list(recv.values()),
        "paths": paths,
    }


def _blank_text(values: pd.Series) -> pd.Series:
    """``values`` as text, blanks (None, NaN, ``"nan"``) as ``""``."""
    return values.map(lambda v: "" if is_blank(v) else str(v)).astype(object)


def candidate_ids(value: Any) -> list[str]:
    """The candidate outfalls of a drainage row's ``outfall_candidates`` (``"OF-1;OF-2"``);
    ``[]`` for a row that is not ambiguous."""
    if is_blank(value):
        return []
    return [x.strip() for x in str(value).split(";") if x.strip()]


def ambiguous_mask(rows: pd.DataFrame) -> np.ndarray:
    """The drainage rows whose network path is ambiguous (they name candidate outfalls)."""
    if "outfall_candidates" not in rows.columns:
        return np.zeros(len(rows), dtype=bool)
    return np.array([bool(candidate_ids(v)) for v in rows["outfall_candidates"]], dtype=bool)


def candidate_rows(rows: pd.DataFrame, waters: Waters) -> pd.DataFrame:
    """One row per (ambiguous drainage row, candidate outfall): ``_src`` (the row's index
    label), ``outfall_id`` (the candidate), ``pwl_id`` / ``receiving_water`` (the
    candidate's water as ``candidate_waters`` gives it: a PWL ID or a listed id, else a
    name), ``wb`` (that water's PWL id, :func:`_water_id`) and the row's ``target_kind``,
    ``target_id``, ``fraction`` and ``parcel_id`` (when present)."""
    recs = []
    amb = ambiguous_mask(rows)
    for label, row in zip(rows.index[amb], rows[amb].to_dict("records"), strict=True):
        ids = candidate_ids(row.get("outfall_candidates"))
        tokens = [] if is_blank(row.get("candidate_waters")) else str(row["candidate_waters"])
        tokens = tokens.split(";") if tokens else []
        tokens += [""] * (len(ids) - len(tokens))
        for of, tok in zip(ids, tokens, strict=False):
            tok = tok.strip()
            as_id = bool(tok) and (normalize_pwl_id(tok) is not None or len(waters.listings(tok)))
            pwl = tok if as_id else None
            name = None if as_id or not tok else tok
            if not tok and not is_blank(row.get("pwl_id")):  # the row's own (same) water
                pwl, name = str(row["pwl_id"]), row.get("receiving_water")
            recs.append(
                {
                    "_src": label,
                    "parcel_id": row.get("parcel_id"),
                    "target_kind": row.get("target_kind"),
                    "target_id": row.get("target_id"),
                    "fraction": row.get("fraction"),
                    "outfall_id": of,
                    "pwl_id": pwl,
                    "receiving_water": name,
                    "wb": _water_id(pwl, "inlet", None, name, waters),
                }
            )
    cols = ["_src", "parcel_id", "target_kind", "target_id", "fraction", "outfall_id"]
    return pd.DataFrame(recs, columns=[*cols, "pwl_id", "receiving_water", "wb"])


def _checked_water_id(text: str, column: str, waters: Waters) -> tuple[str | None, str | None]:
    """``(PWL id, problem)`` of one written water id: a PWL ID ``NNNN-NNNN``, or one with
    the ATTAINS prefix (``NY1101-0012`` -> ``1101-0012``), or an id the impairments
    table lists as written; else no id, and the problem in words (docs/rules.md section
    2: an id that names no water must not give a "no")."""
    pwl = normalize_pwl_id(text)
    if pwl is not None:
        return pwl, None
    if len(waters.listings(text)):
        return text, None
    return None, (
        f"{column} {text!r} is not a NYSDEC PWL ID (NNNN-NNNN) and is not in the 303(d) list"
    )


def _water_id_and_problem(
    pwl_id: Any, target_kind: Any, target_id: Any, receiving_water: Any, waters: Waters
) -> tuple[str | None, str | None]:
    """:func:`_water_id` and, when the row names a water by an id that is no PWL ID, the
    problem in words (``None`` otherwise)."""
    given = id_text(pwl_id)
    if given is not None:
        return _checked_water_id(given, "pwl_id", waters)
    if target_kind == "water_direct":
        tid = id_text(target_id)
        if tid is not None:
            return _checked_water_id(tid, "wb_id", waters)
    by_name = waters.wb_id_for_name(receiving_water)
    if by_name is None:
        return None, None
    return _checked_water_id(by_name, "wb_id", waters)


def _water_id(
    pwl_id: Any, target_kind: Any, target_id: Any, receiving_water: Any, waters: Waters
) -> str | None:
    """The receiving water (PWL id) of one drainage row: ``pwl_id`` when given; else
    ``target_id`` for a ``water_direct`` row; else the id of the waterbody its
    ``receiving_water`` names, when the name is unique; else ``None``.

    Ids are read stripped; a blank or a null's text (``"<NA>"``, ``"nan"``, ``"NULL"``)
    is no id; ``NY1101-0012`` is the PWL ID ``1101-0012``; an id that is neither a PWL
    ID nor listed in the impairments table is no id either (the row's water is then
    unknown, never "not listed": see :func:`_water_id_and_problem`).
    """
    return _water_id_and_problem(pwl_id, target_kind, target_id, receiving_water, waters)[0]


_WATER_COLUMNS = ("pwl_id", "target_kind", "target_id", "receiving_water")


def _per_water_combo(rows: pd.DataFrame, func: Any) -> pd.Series:
    """``func(pwl_id, target_kind, target_id, receiving_water)`` for each row, called once
    per distinct combination of the four columns."""
    if not len(rows):
        return pd.Series([], index=rows.index, dtype=object)
    codes = np.column_stack([pd.factorize(rows[c].astype(object))[0] for c in _WATER_COLUMNS])
    _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    values = [func(*(rows[c].iat[i] for c in _WATER_COLUMNS)) for i in first.tolist()]
    out = np.asarray(values + [None], dtype=object)[:-1][np.asarray(inverse).ravel()]
    return pd.Series(out, index=rows.index, dtype=object)


def water_ids(rows: pd.DataFrame, waters: Waters) -> pd.Series:
    """The receiving water of each drainage row (:func:`_water_id`), or ``None``.

    Vectorised over the distinct combinations of the four columns it reads, so a
    county's drainage table costs one call per combination.  Rows that reach no water
    get whatever the rule says too (callers look at reaching rows only).
    """
    return _per_water_combo(rows, lambda *cols: _water_id(*cols, waters))


def water_id_problems(rows: pd.DataFrame, waters: Waters) -> pd.Series:
    """For each drainage row, why its written water id gives no water (an id that is
    neither a PWL ID nor in the 303(d) list, :func:`_water_id_and_problem`), or ``None``."""
    return _per_water_combo(rows, lambda *cols: _water_id_and_problem(*cols, waters)[1])


def _screening_drainage(drainage: pd.DataFrame) -> pd.DataFrame:
    """The drainage table with every column the screening reads, ids as text and
    fractions as numbers (NaN where not a number)."""
    table = drainage.copy()
    for c in ("parcel_id", *DRAINAGE_COLUMNS):
        if c not in table.columns:
            table[c] = None
    table["parcel_id"] = table["parcel_id"].astype(str)
    table["fraction"] = pd.to_numeric(table["fraction"], errors="coerce")
    return table


def _bad_drainage_rows(table: pd.DataFrame) -> tuple[set[str], QAReport]:
    """Parcels whose drainage rows cannot be screened (unknown ``target_kind``, missing or
    negative fraction, fractions not summing to 1), each reported as a QA warning
    ``bad_drainage_rows`` (layer ``drainage``, the parcel as feature) saying what is
    wrong (the first 200 parcels; one more finding counts the rest)."""
    qa = QAReport()
    bad = (
        (~table["target_kind"].isin(TARGET_KINDS))
        | table["fraction"].isna()
        | (table["fraction"] < -_EPS)
    )
    sums = table.groupby("parcel_id")["fraction"].sum()
    bad_sum = sums[(sums - 1.0).abs() > 0.01].index
    bad_parcels = set(table.loc[bad, "parcel_id"]) | set(bad_sum)
    for pid in sorted(bad_parcels)[:200]:
        sub = table[table["parcel_id"] == pid]
        why = []
        if (~sub["target_kind"].isin(TARGET_KINDS)).any():
            kinds = sorted(set(sub["target_kind"].astype(str)) - set(TARGET_KINDS))
            why.append(f"unknown target_kind {kinds}")
        if sub["fraction"].isna().any() or (sub["fraction"] < -_EPS).any():
            why.append("missing or negative fraction")
        if pid in bad_sum:
            why.append(f"fractions sum to {sums[pid]:.3f}, not 1")
        qa.warning(
            "bad_drainage_rows",
            "drainage",
            f"parcel {pid}: " + "; ".join(why),
            feature_id=pid,
            step="screening",
        )
    if len(bad_parcels) > 200:
        qa.warning(
            "bad_drainage_rows",
            "drainage",
            f"... and {len(bad_parcels) - 200} more parcels with bad rows",
            step="screening",
            count=len(bad_parcels) - 200,
        )
    return bad_parcels, qa
