"""The join with the storm network: where each inlet and conveyance drains (outfall, water).

The only module of :mod:`ms4map.drainage` that reads :mod:`ms4map.network` results:
:func:`network_join` builds a :class:`NetworkJoin` from a ``StormNetwork``, and the
parcel table (:mod:`.parcels`) and the sewersheds (:mod:`.sewersheds`) read it.

Where the network cannot tell which outfall takes the flow (method ``ambiguous``: no
``outfall_id``, the candidates in ``other_outfalls``), :func:`join_rows` names no
outfall; it fills the receiving water only when every candidate discharges to the same
one, and writes the candidates in :data:`ms4map.core.schema.AMBIGUITY_COLUMNS`
(docs/network.md, docs/rules.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..core.qa import QAReport
from ..core.schema import AMBIGUITY_COLUMNS
from ..network import assign_outfalls, edge_outfalls

if TYPE_CHECKING:
    from ..network import StormNetwork

__all__ = ["NetworkJoin", "join_rows", "network_join"]


@dataclass
class NetworkJoin:
    """Where inlets and conveyances drain, from the storm network.

    Attributes
    ----------
    inlet_outfall : DataFrame
        Index ``node_id``: ``outfall_id``, ``other_outfalls``, ``method``, ``struct_id``.
    conv_outfall : DataFrame
        Index ``conv_id``: ``outfall_id``, ``other_outfalls``, ``method``.
    outfalls : DataFrame
        Index ``outfall_id``: ``receiving_water``, ``pwl_id``.
    net : StormNetwork or None
    """

    inlet_outfall: pd.DataFrame
    conv_outfall: pd.DataFrame
    outfalls: pd.DataFrame
    net: StormNetwork | None = None
    qa: QAReport = field(default_factory=QAReport)


def network_join(net: StormNetwork | None) -> NetworkJoin:
    """Build the inlet -> outfall -> receiving water join from a ``StormNetwork``.

    Uses :func:`ms4map.network.assign_outfalls`, :func:`ms4map.network.edge_outfalls`
    and ``net.outfalls``.  ``None`` gives an empty join (no network).
    """
    empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in _JOIN_COLUMNS})
    if net is None:
        outf = pd.DataFrame(
            {"receiving_water": pd.Series([], dtype=object), "pwl_id": pd.Series([], dtype=object)}
        )
        return NetworkJoin(empty.copy(), empty.copy(), outf, None)
    a = assign_outfalls(net)
    a = a[a["node_id"].notna()]
    cols = [*_JOIN_COLUMNS, *(["struct_id"] if "struct_id" in a.columns else [])]
    inl = _with_method(a).drop_duplicates("node_id").set_index("node_id")[cols]
    e = edge_outfalls(net)
    conv = (
        _with_method(e).drop_duplicates("conv_id").set_index("conv_id")[list(_JOIN_COLUMNS)]
        if len(e)
        else empty.copy()
    )
    outf = net.outfalls[["receiving_water", "pwl_id"]].copy()
    outf.index = outf.index.astype(str)
    return NetworkJoin(inl, conv, outf, net)


_JOIN_COLUMNS = ("outfall_id", "other_outfalls", "method")


def _with_method(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with a ``method`` column (``None`` when the network gives none)."""
    return table if "method" in table.columns else table.assign(method=None)


def join_rows(df: pd.DataFrame, join: NetworkJoin) -> pd.DataFrame:
    """Fill outfall_id, receiving_water, pwl_id (and the reason) from the network join.

    A row whose inlet or conveyance the network marks ``ambiguous`` gets no
    ``outfall_id`` and its candidates in :data:`AMBIGUITY_COLUMNS`; its receiving water
    is filled only when every candidate has the same ``receiving_water`` and ``pwl_id``.
    (``AMBIGUITY_COLUMNS`` is :data:`ms4map.core.schema.AMBIGUITY_COLUMNS`.)
    """
    out = df.copy()
    outfall = pd.Series(None, index=out.index, dtype=object)
    others = pd.Series("", index=out.index, dtype=object)
    method = pd.Series(None, index=out.index, dtype=object)
    for kind, table in (("inlet", join.inlet_outfall), ("conveyance", join.conv_outfall)):
        m = out["target_kind"] == kind
        if m.any() and len(table):
            j = _with_method(table).reindex(out.loc[m, "target_id"].astype(str))
            outfall[m] = j["outfall_id"].to_numpy()
            others[m] = j["other_outfalls"].fillna("").to_numpy()
            method[m] = j["method"].to_numpy()
    outfall = outfall.where(outfall.notna(), None)
    amb = (method == "ambiguous").to_numpy()
    outfall[amb] = None
    out["outfall_id"] = outfall
    rw = join.outfalls.reindex(outfall.fillna("").astype(str))
    has = outfall.notna().to_numpy()
    out.loc[has, "receiving_water"] = rw["receiving_water"].to_numpy()[has]
    out.loc[has, "pwl_id"] = rw["pwl_id"].to_numpy()[has]
    cands = pd.Series("", index=out.index, dtype=object)
    cwaters = pd.Series("", index=out.index, dtype=object)
    amb_text = pd.Series("", index=out.index, dtype=object)
    for i in np.flatnonzero(amb):
        ids = sorted({x.strip() for x in str(others.iat[i]).split(";") if x.strip()})
        text, water, pwl, wtext = _ambiguous_words(ids, join.outfalls)
        cands.iat[i] = ";".join(ids)
        cwaters.iat[i] = wtext
        amb_text.iat[i] = text
        if water is not None or pwl is not None:
            out.loc[out.index[i], "receiving_water"] = water
            out.loc[out.index[i], "pwl_id"] = pwl
    ms4 = out["target_kind"].isin(["inlet", "conveyance"])
    no_out = ms4 & outfall.isna() & ~amb
    if join.net is None:
        out.loc[ms4, "reason"] = out.loc[ms4, "reason"] + "; no storm network, outfall unknown"
    else:
        out.loc[no_out, "reason"] = out.loc[no_out, "reason"] + "; the network reaches no outfall"
        tail = ms4 & outfall.notna()
        out.loc[tail, "reason"] = (
            out.loc[tail, "reason"] + ", then the pipes to outfall " + outfall[tail].astype(str)
        )
        split = tail & (others != "")
        out.loc[split, "reason"] = (
            out.loc[split, "reason"] + " (flow splits; also " + others[split] + ")"
        )
        am = ms4 & amb
        out.loc[am, "reason"] = out.loc[am, "reason"] + "; " + amb_text[am]
    for col, values in zip(AMBIGUITY_COLUMNS, (cands, cwaters), strict=True):
        out[col] = values.where(ms4, "")
    return out


def _blank(v: object) -> bool:
    return v is None or (isinstance(v, float) and v != v) or str(v).strip() in ("", "nan", "<NA>")


def _ambiguous_words(
    ids: list[str], outfalls: pd.DataFrame
) -> tuple[str, str | None, str | None, str]:
    """``(reason, receiving_water, pwl_id, candidate_waters)`` of an ambiguous path to the
    outfalls ``ids``: the water is filled (and the reason says both discharge to it) only
    when every candidate has the same ``receiving_water`` and ``pwl_id``."""
    t = outfalls.reindex(ids)
    pairs = []
    for rw, pw in zip(t["receiving_water"], t["pwl_id"], strict=True):
        pairs.append((None if _blank(rw) else str(rw), None if _blank(pw) else str(pw).strip()))
    which = " or ".join(ids) if len(ids) <= 2 else ", ".join(ids[:-1]) + " or " + ids[-1]
    head = f"the network cannot tell whether flow reaches {which}"
    per = [(pw or rw or "").replace(";", ",") for rw, pw in pairs]
    names = [_water_words(rw, pw) for rw, pw in pairs]
    if pairs and len(set(pairs)) == 1 and any(pairs[0]):
        rw, pw = pairs[0]
        every = "both" if len(ids) == 2 else "all"
        return f"{head}; {every} discharge to {names[0]}", rw, pw, ";".join(per)
    shown = ", ".join(dict.fromkeys(names))
    return (
        f"{head} (receiving waters {shown}): outfall undetermined",
        None,
        None,
        ";".join(per),
    )


def _water_words(rw: str | None, pw: str | None) -> str:
    """``"Test Creek (1302-0001)"``, the name or the id alone, or ``"unknown water"``."""
    if rw and pw:
        return f"{rw} ({pw})"
    return rw or pw or "unknown water"
