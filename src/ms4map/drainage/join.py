"""The join with the storm network: where each inlet and conveyance drains (outfall, water).

The only module of :mod:`ms4map.drainage` that reads :mod:`ms4map.network` results:
:func:`network_join` builds a :class:`NetworkJoin` from a ``StormNetwork``, and the
parcel table (:mod:`.parcels`) and the sewersheds (:mod:`.sewersheds`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from ..core.qa import QAReport
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
        Index ``node_id``: ``outfall_id``, ``other_outfalls``.
    conv_outfall : DataFrame
        Index ``conv_id``: ``outfall_id``, ``other_outfalls``.
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
    empty = pd.DataFrame(
        {"outfall_id": pd.Series([], dtype=object), "other_outfalls": pd.Series([], dtype=object)}
    )
    if net is None:
        outf = pd.DataFrame(
            {"receiving_water": pd.Series([], dtype=object), "pwl_id": pd.Series([], dtype=object)}
        )
        return NetworkJoin(empty.copy(), empty.copy(), outf, None)
    a = assign_outfalls(net)
    a = a[a["node_id"].notna()]
    inl = a.drop_duplicates("node_id").set_index("node_id")[["outfall_id", "other_outfalls"]]
    e = edge_outfalls(net)
    conv = (
        e.drop_duplicates("conv_id").set_index("conv_id")[["outfall_id", "other_outfalls"]]
        if len(e)
        else empty.copy()
    )
    outf = net.outfalls[["receiving_water", "pwl_id"]].copy()
    outf.index = outf.index.astype(str)
    return NetworkJoin(inl, conv, outf, net)


def join_rows(df: pd.DataFrame, join: NetworkJoin) -> pd.DataFrame:
    """Fill outfall_id, receiving_water, pwl_id (and the reason) from the network join."""
    out = df.copy()
    outfall = pd.Series(None, index=out.index, dtype=object)
    others = pd.Series("", index=out.index, dtype=object)
    for kind, table in (("inlet", join.inlet_outfall), ("conveyance", join.conv_outfall)):
        m = out["target_kind"] == kind
        if m.any() and len(table):
            j = table.reindex(out.loc[m, "target_id"].astype(str))
            outfall[m] = j["outfall_id"].to_numpy()
            others[m] = j["other_outfalls"].fillna("").to_numpy()
    out["outfall_id"] = outfall
    rw = join.outfalls.reindex(outfall.fillna("").astype(str))
    has = outfall.notna().to_numpy()
    out.loc[has, "receiving_water"] = rw["receiving_water"].to_numpy()[has]
    out.loc[has, "pwl_id"] = rw["pwl_id"].to_numpy()[has]
    ms4 = out["target_kind"].isin(["inlet", "conveyance"])
    no_out = ms4 & outfall.isna()
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
    return out
