"""The permit year's methods of :class:`~ms4map.records.Records`: the compliance pack, overrides, outfall priorities, the schedule, field verification."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
from shapely.geometry import Point

from . import reads, verify, writes
from .pack import check_override, record_override
from .pack_write import CompliancePack, build_pack, outfall_priorities
from .schedule import screening_schedule

if TYPE_CHECKING:
    from ..pipeline import PipelineResult

__all__ = ["PermitYear"]


class PermitYear:
    """Mixed into :class:`~ms4map.records.Records` (which holds the state these use)."""

    def pack(
        self,
        year: int | None = None,
        *,
        period: str | None = None,
        result: PipelineResult | None = None,
        network: bool = False,
        today: dt.date | str | None = None,
    ) -> CompliancePack:
        """The compliance pack of a period: IDDE counts, mapping progress, open cases,
        expedited list, each count with the ids behind it
        (:func:`ms4map.records.pack_write.build_pack`); ``network=True`` runs the
        pipeline (cached) for the sewersheds drawn when no ``result`` is given."""
        if result is None and network:
            result = reads.network_result(self)
        return build_pack(self, year, period=period, result=result, today=today)

    def override(
        self,
        key: str,
        value: int,
        *,
        reason: str,
        year: int | None = None,
        period: str | None = None,
    ) -> int:
        """Type over a count of the pack: recorded in the audit trail with the user, the
        time, the reason and the computed count (a reason is required)."""
        check_override(key, value, reason)
        writes.need_edit(self, "override a count of the compliance pack")
        pk = self.pack(year, period=period)
        computed = int(pk.idde.set_index("key").loc[key, "count"])
        return record_override(self, pk.period, key, value, reason=reason, computed=computed)

    def priorities(
        self, *, result: PipelineResult | None = None, network: bool = False
    ) -> pd.DataFrame:
        """Each outfall's priority, its components (weighted by the profile's
        ``[records.priority]``) and why (:func:`ms4map.records.schedule.priority_scores`)."""
        if result is None and network:
            result = reads.network_result(self)
        return outfall_priorities(self, result=result)

    def schedule(
        self,
        start: int,
        *,
        years: int = 5,
        per_year: int,
        result: PipelineResult | None = None,
        network: bool = False,
    ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
        """Outfall priorities and the screening schedule (:mod:`ms4map.records.schedule`):
        ``(priorities, schedule, warnings)``; ``network=True`` runs the pipeline (cached)
        for the upstream traces when no ``result`` is given."""
        if result is None and network:
            result = reads.network_result(self)
        scores = outfall_priorities(self, result=result)
        plan, warnings = screening_schedule(scores, start=start, years=years, per_year=per_year)
        return scores, plan, warnings

    def verification(self) -> pd.DataFrame:
        """Verified versus mapped-only per outfall, the distance moved and the position
        the traces use (:func:`ms4map.records.verify.verification`)."""
        return verify.verification(self.outfalls, self.inspections(), self.audit())

    def accept_move(self, outfall_id: str, *, inspection_id: int, reason: str = "") -> int:
        """Accept the position an inspection found in the field (audited); from then on
        :meth:`trace_outfalls` places the outfall there."""
        return verify.accept_move(self, outfall_id, inspection_id=inspection_id, reason=reason)

    def with_accepted_moves(self, ws: Any) -> Any:
        """``ws`` with the outfalls whose move the SMO accepted at their field position
        (a copy; ``ws`` itself when there is none): what the traces of these records use."""
        return reads.with_accepted_moves(ws, self)

    def trace_outfalls(self) -> gpd.GeoDataFrame:
        """The outfalls at the position the traces use: mapped, or an accepted move."""
        v = self.verification().set_index("outfall_id")
        out = self.outfalls.copy()
        out["geometry"] = [
            Point(v.loc[o, "x"], v.loc[o, "y"]) for o in out["outfall_id"].astype(str)
        ]
        return out
