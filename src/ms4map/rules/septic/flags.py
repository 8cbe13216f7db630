"""The septic layer of a pipeline result: SepticFlags and the recipe over the steps of assess.

:func:`septic_flags` (a pipeline result) and :func:`assess_septic` (a parcels layer and
its drainage table) answer a typed :class:`SepticFlags`; :func:`flag_septic` and
:func:`flag_septic_table` give today's frame, with the findings in
``attrs["qa"]`` and the missing legal layers in ``attrs["missing_layers"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...core.errors import DataError
from ...core.qa import QAReport
from ...core.units import metres_per_unit
from ...pipeline import outfall_points as _outfall_points
from ..profiles import Profile, load_profile
from ..waters import Waters
from .assess import (
    _ASSESSED_COLUMNS,
    SEPTIC_COLUMNS,
    _assess_parcel,
    _septic_drainage,
    _septic_frame,
    _septic_parcels,
    _setback_features,
    _special_conditions,
)
from .reasons import _open_causes

if TYPE_CHECKING:
    from ...io import Workspace
    from ...pipeline import PipelineResult

__all__ = ["SepticFlags", "assess_septic", "flag_septic", "flag_septic_table", "septic_flags"]

_FT = 0.3048


@dataclass(frozen=True, eq=False)
class SepticFlags:
    """The ``septic`` layer and what was found making it (see :func:`septic_flags`).

    Attributes
    ----------
    table : GeoDataFrame
        One row per parcel with an on-site system, columns :data:`SEPTIC_COLUMNS` +
        geometry (no ``attrs``).
    qa : QAReport
        The findings: a warning ``septic_not_inferred`` when parcels without a sewer
        attribute cannot be inferred.
    missing_layers : tuple of str
        The legal layers the waters lack (:attr:`ms4map.rules.waters.Waters.missing`):
        with any of them a special condition can be open
        (:func:`ms4map.rules.septic.undetermined_causes`).
    """

    table: Any
    qa: QAReport = field(default_factory=QAReport)
    missing_layers: tuple[str, ...] = ()

    def __repr__(self) -> str:
        t = self.table
        flagged = int(t["flagged"].sum()) if len(t) and "flagged" in t.columns else 0
        return (
            f"SepticFlags({len(t)} septic parcels, {flagged} flagged, "
            f"{len(self.qa.findings)} findings, missing_layers={list(self.missing_layers)})"
        )


def assess_septic(
    parcels: Any,
    drainage: pd.DataFrame,
    *,
    waters: Waters,
    profile: str | Profile | None = None,
    sewer_districts: Any = None,
    conveyances: Any = None,
    outfall_points: dict[str, Any] | None = None,
) -> SepticFlags:
    """The rules of docs/rules.md section 4 over a parcels layer and its drainage table.

    Parameters
    ----------
    parcels : GeoDataFrame
        Canonical parcels (``parcel_id``, ``sewer``, ``prop_class``, ``septic_failure``,
        owner columns), in a projected CRS.
    drainage : DataFrame
        The parcel drainage table.
    waters : Waters
        Listings, TMDL watersheds and waterbody geometries (for the setback).
    profile : str, Path or Profile
    sewer_districts : GeoDataFrame, optional
        Public sewer service areas; needed to infer septic where ``sewer`` is unknown.
    conveyances : GeoDataFrame, optional
        MS4 conveyances; the open ones (ditch, swale, channel) count for the setback.
    outfall_points : dict, optional
        ``outfall_id -> Point`` for "the MS4 discharges into a TMDL watershed".

    Returns
    -------
    SepticFlags
        The layer (one row per parcel with an on-site system), its QA findings and the
        missing legal layers.

    Raises
    ------
    DataError
        The parcels have no ``parcel_id`` column.
    """
    import geopandas as gpd

    prof = load_profile(profile)
    if "parcel_id" not in parcels.columns:
        raise DataError(
            "Layer 'parcels' has no parcel_id column. Fix: map the parcel id "
            "column (--field parcels.parcel_id=SOURCE)."
        )
    sep, qa = _septic_parcels(parcels, sewer_districts)
    flow = _septic_drainage(drainage, sep, waters)
    special = _special_conditions(flow, sep, waters, outfall_points)
    dist = prof.setback_ft * _FT / metres_per_unit(parcels.crs, default=1.0)
    setback = _setback_features(sep, waters, conveyances, dist)
    out = _septic_frame(sep, flow)
    missing = list(getattr(waters, "missing", ()) or ())
    assessed = [
        _assess_parcel(
            rec,
            pols=special["pols"].get(rec["parcel_id"], []),
            why=special["why"].get(rec["parcel_id"], []),
            setback_feature=setback.get(rec["parcel_id"]),
            direct_name=flow["direct_names"].get(rec["parcel_id"], "water"),
            profile=prof,
            open_causes=_open_causes(
                rec["parcel_id"],
                missing,
                special,
                flow["bad_rows"],
                unknown_share=float(rec["_unknown_fraction"]),
            ),
            candidate_pols=special["candidate_pols"].get(rec["parcel_id"]),
        )
        for rec in _records(out, _ASSESS_INPUTS)
    ]
    for rec, a in zip(_records(out, ("parcel_id",)), assessed, strict=True):
        held = special["held"].get(rec["parcel_id"])
        if held and a["special_condition"] is False:  # an ambiguous path, the same on each
            a["reason"] += (
                " (Ambiguous network path: " + "; ".join(dict.fromkeys(held)) + ": the answer "
                "holds for every candidate outfall.)"
            )
    for col in _ASSESSED_COLUMNS:
        out[col] = [a[col] for a in assessed]
    # True / False, or missing (<NA>) where a missing legal layer leaves it open
    out["special_condition"] = pd.array(list(out["special_condition"]), dtype="boolean")
    out["priority"] = np.asarray(out["priority"], dtype="int64")
    out = gpd.GeoDataFrame(
        out[[*SEPTIC_COLUMNS, "geometry"]], geometry="geometry", crs=parcels.crs
    ).reset_index(drop=True)
    return SepticFlags(out, qa, tuple(missing))


#: The columns of :func:`._septic_frame` that :func:`._assess_parcel` reads.
_ASSESS_INPUTS = (
    "parcel_id",
    "flagged",
    "septic_source",
    "septic_failure",
    "outfall_id",
    "ms4_fraction",
    "direct_fraction",
    "_internal_fraction",
    "_unknown_fraction",
    "_has_rows",
)


def _records(frame: Any, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts of ``columns`` (through numpy: faster than
    ``to_dict("records")`` on a county's parcels)."""
    arrays = [frame[c].to_numpy(dtype=object).tolist() for c in columns]
    return [dict(zip(columns, values, strict=True)) for values in zip(*arrays, strict=True)]


def _frame(flags: SepticFlags) -> Any:
    """Today's septic frame: ``flags.table`` with ``attrs["qa"]`` and
    ``attrs["missing_layers"]`` (what :func:`flag_septic` and :func:`flag_septic_table`
    return)."""
    out = flags.table
    out.attrs["qa"] = flags.qa
    out.attrs["missing_layers"] = list(flags.missing_layers)
    return out


def flag_septic_table(
    parcels: Any,
    drainage: pd.DataFrame,
    *,
    waters: Waters,
    profile: str | Profile | None = None,
    sewer_districts: Any = None,
    conveyances: Any = None,
    outfall_points: dict[str, Any] | None = None,
) -> Any:
    """The rules of docs/rules.md section 4 over a parcels layer and its drainage table.

    Parameters as :func:`assess_septic`.

    Returns
    -------
    GeoDataFrame
        One row per parcel with an on-site system, columns :data:`SEPTIC_COLUMNS` +
        geometry.  ``frame.attrs["qa"]`` (a :class:`ms4map.qa.QAReport`) holds the findings: a warning
        ``septic_not_inferred`` when parcels without a sewer attribute cannot be inferred;
        ``frame.attrs["missing_layers"]`` the legal layers the waters lack.
        :func:`assess_septic` gives the same as a :class:`SepticFlags`.
    """
    return _frame(
        assess_septic(
            parcels,
            drainage,
            waters=waters,
            profile=profile,
            sewer_districts=sewer_districts,
            conveyances=conveyances,
            outfall_points=outfall_points,
        )
    )


def septic_flags(
    result: PipelineResult,
    *,
    profile: str | Profile | None = "stillwater",
    workspace: Workspace | None = None,
    waters: Waters | None = None,
) -> SepticFlags:
    """The ``septic`` layer for a pipeline result, typed (see :func:`assess_septic`).

    Parameters
    ----------
    result : PipelineResult
        Its drainage table and outfalls.
    profile : str or Profile
    workspace : Workspace, optional
        Defaults to ``result.workspace``.
    waters : Waters, optional
        Defaults to the workspace's (:meth:`Waters.from_workspace`).

    Returns
    -------
    SepticFlags
    """
    return _result_flags(result, profile, workspace, waters, caller="septic_flags")


def flag_septic(
    result: PipelineResult,
    *,
    profile: str | Profile | None = "stillwater",
    workspace: Workspace | None = None,
    waters: Waters | None = None,
) -> Any:
    """The ``septic`` layer for a pipeline result (see :func:`flag_septic_table`)."""
    return _frame(_result_flags(result, profile, workspace, waters, caller="flag_septic"))


def _result_flags(
    result: PipelineResult,
    profile: str | Profile | None,
    workspace: Workspace | None,
    waters: Waters | None,
    *,
    caller: str,
) -> SepticFlags:
    """:func:`assess_septic` on the layers of ``workspace`` (default: the result's)."""
    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    if ws is None:
        raise DataError(f"{caller} needs the workspace: pass workspace=.")
    if "parcels" not in ws.layers:
        raise DataError(
            f"{caller} needs the parcels layer, and the workspace has none (its layers: "
            f"{', '.join(sorted(ws.layers)) or 'none'}). Fix: add the town's parcels (polygons "
            "with a parcel id, and a sewer or septic column) as the 'parcels' layer of the "
            "workspace, or on the app's Data page."
        )
    waters = waters or Waters.from_workspace(ws)
    return assess_septic(
        ws.layers["parcels"],
        result.drainage,
        waters=waters,
        profile=profile,
        sewer_districts=ws.layers.get("sewer_districts"),
        conveyances=ws.layers.get("conveyances"),
        outfall_points=_outfall_points(result, ws),
    )
