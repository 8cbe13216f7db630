"""The drainage chain validate -> network -> overland -> drainage: :func:`run` and its steps.

The app, the CLI and notebooks all call :func:`run`; each step goes through the step
cache (:mod:`.cache`), so a repeated call recomputes nothing that has not changed.

Example
-------
>>> import ms4map
>>> from ms4map import pipeline
>>> ws = ms4map.open_workspace(ms4map.datasets.get_path("alder_falls"))          # doctest: +SKIP
>>> res = pipeline.run(ws)                                     # doctest: +SKIP
>>> res.drainage.head()                                        # doctest: +SKIP
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd

from .. import drainage as _drainage
from ..core.errors import UsageError, ValidationError
from ..core.qa import QAReport
from ..drainage import NetworkJoin
from ..hydrology import ROUTING_STEP, network_targets, route
from ..network import build_network
from .cache import StepCache, workspace_key
from .result import Result
from .settings import DRAINAGE_KEYS as _DRAINAGE_KEYS
from .settings import NETWORK_KEYS as _NETWORK_KEYS
from .settings import OVERLAND_KEYS as _OVERLAND_KEYS
from .settings import Settings

if TYPE_CHECKING:
    from ..hydrology import OverlandResult
    from ..io import Workspace
    from ..network import StormNetwork

__all__ = ["drainage_shares", "run"]

ProgressFn = Callable[[str], None]


#: The target kinds whose catchments the pipeline and its model layers draw.
SURFACE_KINDS = ("inlet", "conveyance", "water_direct")


def run(
    ws: Workspace,
    *,
    settings: Settings | dict[str, Any] | None = None,
    progress: ProgressFn | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    **old_settings: Any,
) -> Result:
    """Run validate -> network -> overland -> drainage on a workspace (cached).

    Parameters
    ----------
    ws : Workspace
        From :func:`ms4map.io.open_workspace` (already validated there).
    settings : Settings or dict, optional
        The settings (:class:`Settings`; a dict holds some of its fields, the others keep
        their defaults); ``None``: every default.
    progress : callable, optional
        Called with a short message at each long step.
    cache_dir : path, optional
        Also keep step results as pickles in this folder (survives restarts).
    use_cache : bool
        ``False`` recomputes every step.
    **old_settings
        Deprecated: the settings as keywords (``run(ws, min_depth_m=0.5)``), answered as
        ``run(ws, settings={"min_depth_m": 0.5})`` with a :class:`DeprecationWarning`.

    Returns
    -------
    Result

    Raises
    ------
    UsageError
        An unknown setting, or one that is not a non-negative number.
    DataError
        Data the chain cannot use (the message names the layer and the fix).
    """
    if old_settings:
        warnings.warn(
            "run(ws, **settings) is deprecated and is removed in ms4map 0.3; use "
            "run(ws, settings=Settings(...)) or run(ws, settings={...}).",
            DeprecationWarning,
            stacklevel=2,
        )
        if settings is not None:
            raise UsageError("Pass the settings either as settings= or as keywords, not both.")
        settings = old_settings
    opts = Settings.factory(settings).as_dict()
    say = progress or (lambda _m: None)
    steps = StepCache(workspace_key(ws) if use_cache else "", opts, use_cache, cache_dir)
    qa = QAReport()
    # -- validate: open_workspace validated the layers; carry its warnings -----------------
    qa.extend(ws.qa)
    if ws.qa.has_errors:
        raise ValidationError(ws.qa)
    net = _network_step(ws, steps, opts, say, qa)
    parcels = ws.get("parcels")
    join, inlets, ov, cells = _join_and_overland(ws, net, parcels, steps=steps, opts=opts, say=say)
    _warn_overland(qa, ov, opts)
    table = _drainage_step(parcels, ov, join, inlets, cells, steps=steps, opts=opts, say=say)
    cells = None  # the parcel raster (4 bytes a cell) is no longer needed
    if parcels is None:
        qa.warning(
            "no_parcels",
            "parcels",
            "The workspace has no parcels: the drainage table is empty.",
            step="pipeline",
            fix="Add the tax parcels layer (--layer parcels=LAYER).",
        )
    inlet_catchments, sheds = _polygons_step(ws, ov, join, steps, say)
    _summarise(qa, table, parcels)
    return Result(
        network=net,
        overland=ov,
        drainage=table,
        inlet_catchments=inlet_catchments,
        sewersheds=sheds,
        qa=qa,
        join=join,
        inlets=inlets,
        crs=ws.crs,
        settings=opts,
        timings=steps.timings,
        cached=steps.cached,
        workspace=ws,
    )


def _network_step(
    ws: Workspace, steps: StepCache, opts: dict[str, Any], say: ProgressFn, qa: QAReport
) -> StormNetwork | None:
    """The cached storm network (``None`` without conveyances, with a warning)."""

    def _net() -> StormNetwork | None:
        conv = ws.get("conveyances")
        if conv is None or len(conv) == 0:
            return None
        kw = {k: opts[k] for k in _NETWORK_KEYS if opts[k] is not None}
        say("network: building the storm network")
        return build_network(ws, **kw)

    net = steps("network", _NETWORK_KEYS, _net)
    if net is None:
        qa.warning(
            "no_network",
            "conveyances",
            "The workspace has no conveyances: inlets come from the structures layer and "
            "no outfall or receiving water can be joined.",
            step="pipeline",
            fix="Add the storm pipes/ditches layer (--layer conveyances=LAYER).",
        )
    else:
        qa.extend(net.qa)
    return net


def _join_and_overland(
    ws: Workspace,
    net: StormNetwork | None,
    parcels: Any,
    *,
    steps: StepCache,
    opts: dict[str, Any],
    say: ProgressFn,
) -> tuple[NetworkJoin, Any, OverlandResult | None, Any]:
    """The network join, the inlets, the overland routing and the parcel cells.

    Work that needs no routing runs in a second thread while the DEM is routed: the
    compiled kernels release the GIL (docs/hydrology.md).  The parcel raster waits
    for the routing step (:data:`~ms4map.hydrology.ROUTING_STEP`): its rasterizing
    holds about three grids of its own for a moment, which beside the fill's grids
    would set the run's peak memory (docs/hydrology.md "Memory per cell").
    """
    all_keys = _NETWORK_KEYS + _OVERLAND_KEYS + _DRAINAGE_KEYS
    routed = threading.Event()  # the D8 grid is made and the conditioned DEM freed

    def say_routed(msg: str) -> None:
        say(msg)
        if msg == ROUTING_STEP:
            routed.set()

    def cells_when_routed() -> Any:
        routed.wait()
        return _drainage.parcel_cells(parcels.geometry.values, ws.dem.array.shape, ws.dem.transform)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ms4map-overlap")
    try:
        join_f = pool.submit(steps, "join", _NETWORK_KEYS, lambda: _drainage.network_join(net))
        cells_f = None
        if (
            ws.dem is not None
            and parcels is not None
            and len(parcels)
            and not steps.is_cached("drainage", all_keys)
        ):
            cells_f = pool.submit(cells_when_routed)
        inlets, open_conv = network_targets(ws, net)
        ov = _overland_step(ws, steps, inlets, open_conv, opts=opts, say=say_routed)
        routed.set()  # a cached step says nothing: the parcel raster need not wait
        join = join_f.result()
        cells = cells_f.result() if cells_f is not None else None
    finally:
        routed.set()  # an error above: the parcel raster does not wait for ever
        pool.shutdown(wait=True, cancel_futures=True)
    return join, inlets, ov, cells


def _warn_overland(qa: QAReport, ov: OverlandResult | None, opts: dict[str, Any]) -> None:
    """The overland step's findings, or the warning that there is no DEM."""
    if ov is None:
        qa.warning(
            "no_dem",
            "dem",
            "The workspace has no DEM: parcels drain to the nearest inlet within "
            f"{opts['fallback_distance_m']:g} m (method nearest_inlet), else 'unknown'.",
            step="pipeline",
            fix="Pass a DEM GeoTIFF with --dem FILE.",
        )
    else:
        qa.extend(ov.qa)


def _drainage_step(
    parcels: Any,
    ov: OverlandResult | None,
    join: NetworkJoin,
    inlets: Any,
    cells: Any,
    *,
    steps: StepCache,
    opts: dict[str, Any],
    say: ProgressFn,
) -> pd.DataFrame:
    """The cached parcel drainage table (empty, with its columns, without parcels)."""

    def _dr() -> pd.DataFrame:
        if parcels is None or len(parcels) == 0:
            return pd.DataFrame(
                {
                    c: pd.Series([], dtype=float if c == "fraction" else "str")
                    for c in _drainage.COLUMNS
                }
            )
        return _drainage.parcel_drainage(
            parcels,
            ov,
            join=join,
            inlets=inlets,
            fallback_distance_m=float(opts["fallback_distance_m"]),
            progress=say,
            cells=cells,
        )

    return steps("drainage", _NETWORK_KEYS + _OVERLAND_KEYS + _DRAINAGE_KEYS, _dr)


def _polygons_step(
    ws: Workspace, ov: OverlandResult | None, join: NetworkJoin, steps: StepCache, say: ProgressFn
) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """The cached inlet catchments (with their outfall) and sewersheds."""

    def _polys() -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
        if ov is None:
            empty = gpd.GeoDataFrame(
                {"target_id": pd.Series([], dtype=str)},
                geometry=gpd.GeoSeries([], crs=ws.crs),
                crs=ws.crs,
            )
            return empty, empty.rename(columns={"target_id": "outfall_id"})
        say("drainage: catchment and sewershed polygons")
        # one polygonization for both layers (drainage.sewersheds unites these) and the
        # model layers' surface catchments (OverlandResult.catchments filters it)
        ic = ov.catchments(SURFACE_KINDS)
        ic = ic[ic["target_kind"] == "inlet"].reset_index(drop=True)
        if len(ic) and len(join.inlet_outfall):
            ic = ic.assign(
                outfall_id=join.inlet_outfall.reindex(ic["target_id"])["outfall_id"].to_numpy()
            )
        else:
            ic = ic.assign(outfall_id=None)
        ic = ic.rename(columns={"target_id": "node_id"})
        return ic, _drainage.sewersheds(ov, join)

    return steps("polygons", _NETWORK_KEYS + _OVERLAND_KEYS, _polys)


def _overland_step(
    ws: Workspace,
    step: Callable[[str, tuple[str, ...], Callable[[], Any]], Any],
    inlets: Any,
    open_conv: Any,
    *,
    opts: dict[str, Any],
    say: ProgressFn,
) -> OverlandResult | None:
    """The cached overland step: :func:`ms4map.overland.route` (``None`` without a DEM)."""

    def _ov() -> OverlandResult | None:
        if ws.dem is None:
            return None
        return route(
            ws.dem,
            inlets=inlets,
            conveyances=open_conv,
            waterbodies=ws.get("waterbodies"),
            progress=say,
            keep_conditioned=False,  # nothing after the routing reads it: 8 bytes per cell
            **{k: float(opts[k]) for k in _OVERLAND_KEYS},
        )

    return step("overland", _NETWORK_KEYS + _OVERLAND_KEYS, _ov)


def drainage_shares(table: pd.DataFrame, parcels: Any) -> tuple[pd.Series, str]:
    """The share of the parcels' area that drains to each target kind, and its label.

    Each row's fraction is weighted by its parcel's area (``parcels``' geometry, in the
    working CRS: the unit cancels out), so a 9 m2 parcel counts for 9 m2, not as much
    as a 900 m2 one.  Parcels without an area (no geometry, a point) weigh nothing.
    When no parcel of ``table`` has an area (or ``parcels`` is ``None``) the result is
    the mean of the per-parcel fractions, labelled so.

    Parameters
    ----------
    table : DataFrame
        The parcel drainage table (``parcel_id``, ``target_kind``, ``fraction``).
    parcels : GeoDataFrame or None
        The workspace's parcels (``parcel_id`` + geometry).

    Returns
    -------
    shares : Series
        Target kind -> share (0..1), largest first.
    label : str
        ``"share of parcel area"``, or ``"mean share per parcel"`` for the fallback.
    """
    ids = table["parcel_id"].astype(str)
    total = 0.0
    if parcels is not None and len(parcels):
        area = pd.Series(
            np.nan_to_num(parcels.geometry.area.to_numpy(dtype=float)),
            index=parcels["parcel_id"].astype(str).to_numpy(),
        )
        area = area[~area.index.duplicated()]
        weight = ids.map(area).fillna(0.0).to_numpy()
        total = float(area.reindex(ids.unique()).fillna(0.0).sum())
    if total > 0:
        share = (table["fraction"] * weight).groupby(table["target_kind"]).sum() / total
        label = "share of parcel area"
    else:
        share = table.groupby("target_kind")["fraction"].sum() / max(ids.nunique(), 1)
        label = "mean share per parcel"
    return share.sort_values(ascending=False), label


def _summarise(qa: QAReport, table: pd.DataFrame, parcels: Any = None) -> None:
    if len(table) == 0:
        return
    share, label = drainage_shares(table, parcels)
    n = table["parcel_id"].nunique()
    parts = ", ".join(f"{k} {v:.1%}" for k, v in share.items())
    qa.note(f"drainage: {n} parcels; {label} by target kind: {parts}.")
    unk = table[table["target_kind"].isin(["unknown", "off_dem"])]
    if len(unk):
        ids = unk["parcel_id"].unique()
        # by cause, each parcel counted once per cause (the reason names the DEM edge's side)
        causes = unk.groupby("reason")["parcel_id"].nunique().sort_values(ascending=False)
        detail = "; ".join(f"{n} ({reason})" for reason, n in causes.items())
        qa.warning(
            "drainage_partly_unknown",
            "parcels",
            f"{len(ids)} parcel(s) drain partly or wholly off the DEM or to unknown places, "
            f"so their Condition A and septic answers may be undetermined: {detail}.",
            feature_id=", ".join(map(str, ids[:50])),
            count=len(ids),
            step="drainage",
            fix="Extend the DEM over the whole area with a margin beyond the town (runoff "
            "that reaches its edge leaves it) and fill its nodata holes.",
        )
