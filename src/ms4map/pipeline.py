"""One orchestrator for the chain validate -> network -> overland -> drainage, with caching.

The app, the CLI and notebooks all call :func:`run`; each step's result is cached
in memory (and optionally on disk, ``cache_dir=``) under a key made of the
workspace fingerprint and the settings that step depends on, so a repeated call
recomputes nothing that has not changed.

Example
-------
>>> import ms4map
>>> from ms4map import pipeline
>>> ws = ms4map.open_workspace(ms4map.io.demo_path())          # doctest: +SKIP
>>> res = pipeline.run(ws)                                     # doctest: +SKIP
>>> res.drainage.head()                                        # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd

from . import drainage as _drainage
from .core.errors import UsageError
from .core.qa import QAReport
from .core.version import __version__
from .hydrology import overland as _overland

if TYPE_CHECKING:
    from .hydrology.overland import OverlandResult
    from .io.workspace import Workspace
    from .network.build import StormNetwork

#: Part of every cache key (with ms4map's version): bump when a step's result changes
#: shape or meaning, so that results cached on disk by an older ms4map are recomputed,
#: never loaded.  3: the edge of the DEM's data and nodata holes as outlets, pools
#: spilling into a target (eighth session).
_CACHE_FORMAT = "format=3"

__all__ = [
    "DEFAULT_SETTINGS",
    "PipelineResult",
    "clear_cache",
    "command_settings",
    "drainage_shares",
    "outfall_points",
    "run",
    "workspace_key",
]

#: Every setting :func:`run` accepts, with its default (metres / square metres).
DEFAULT_SETTINGS: dict[str, Any] = {
    # network
    "snap_tolerance_m": None,  # None: the network module's default
    "water_tolerance_m": None,
    "lateral_tolerance_m": None,
    # overland
    **_overland.DEFAULTS,
    # drainage
    "fallback_distance_m": _drainage.DEFAULT_FALLBACK_M,
}


def command_settings() -> dict[str, float]:
    """The settings ``ms4map drainage`` runs with when no option changes them.

    The command's option defaults (``cli/drainage.py``) and ``ms4map batch`` read them
    here, so a batch town's layers are made exactly as the command makes them.
    """
    return {
        **{k: float(v) for k, v in _overland.DEFAULTS.items()},
        "fallback_distance_m": float(_drainage.DEFAULT_FALLBACK_M),
    }


_NETWORK_KEYS = ("snap_tolerance_m", "water_tolerance_m", "lateral_tolerance_m")
_OVERLAND_KEYS = tuple(_overland.DEFAULTS)
_DRAINAGE_KEYS = ("fallback_distance_m",)

_CACHE: dict[tuple[str, ...], Any] = {}
ProgressFn = Callable[[str], None]


@dataclass
class PipelineResult:
    """Everything the chain produced for one workspace and one set of settings.

    Attributes
    ----------
    network : StormNetwork or None
        ``None`` when the workspace has no conveyances.
    overland : OverlandResult or None
        ``None`` when the workspace has no DEM (the drainage table then uses the
        documented nearest-inlet fallback).
    drainage : DataFrame
        The parcel drainage table (:data:`ms4map.drainage.COLUMNS`).
    inlet_catchments : GeoDataFrame
        One polygon per inlet with a surface catchment: ``target_id`` (node id),
        ``outfall_id``, ``cells``, ``area_m2``.
    sewersheds : GeoDataFrame
        One non-overlapping polygon per outfall (:func:`ms4map.drainage.sewersheds`).
    qa : QAReport
        Findings of every step (validation warnings included).
    join : NetworkJoin
        Inlet/conveyance -> outfall -> receiving water.
    inlets : GeoDataFrame
        Inlet points used for routing (``node_id``).
    settings : dict
    workspace : Workspace
        The workspace the result was computed from (parcels, waters, outfalls for the
        screening steps).
    timings : dict
        Seconds per step (0 for a cached step).
    """

    network: StormNetwork | None
    overland: OverlandResult | None
    drainage: pd.DataFrame
    inlet_catchments: gpd.GeoDataFrame
    sewersheds: gpd.GeoDataFrame
    qa: QAReport
    join: Any
    inlets: gpd.GeoDataFrame
    crs: Any
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    workspace: Workspace | None = None

    def layers(self) -> dict[str, Any]:
        """The output layers of ``ms4map drainage``: parcel_drainage, inlet_catchments,
        sewersheds, qa."""
        qa_frame = self.qa.to_frame()
        for c in qa_frame.columns:
            if qa_frame[c].dtype == object:
                qa_frame[c] = qa_frame[c].map(lambda v: None if v is None else str(v))
        return {
            "parcel_drainage": self.drainage,
            "inlet_catchments": self.inlet_catchments,
            "sewersheds": self.sewersheds,
            "qa": qa_frame,
        }

    def where_does_it_drain(self, point: Any) -> dict[str, Any]:
        """See :func:`ms4map.drainage.where_does_it_drain`."""
        return _drainage.where_does_it_drain(self, point)

    def what_drains_here(
        self, point: Any = None, *, outfall_id: str | None = None
    ) -> gpd.GeoDataFrame:
        """See :func:`ms4map.drainage.what_drains_here`."""
        return _drainage.what_drains_here(self, point, outfall_id=outfall_id)

    def polygon_drainage(self, polygon: Any) -> pd.DataFrame:
        """See :func:`ms4map.drainage.polygon_drainage`."""
        return _drainage.polygon_drainage(self, polygon)


def clear_cache() -> None:
    """Forget every cached step result (in memory)."""
    _CACHE.clear()


def workspace_key(ws: Workspace) -> str:
    """Cache key of a workspace: its fingerprint, or a content hash for in-memory ones."""
    if getattr(ws, "inputs", None):
        return str(ws.fingerprint())
    h = hashlib.sha256()
    h.update(str(ws.fingerprint()).encode())
    for role in sorted(ws.layers):
        df = ws.layers[role]
        h.update(role.encode())
        h.update(
            pd.util.hash_pandas_object(
                pd.DataFrame(df)
                .drop(
                    columns=[
                        c for c in df.columns if c == getattr(df, "_geometry_column_name", None)
                    ]
                )
                .astype(str),
                index=True,
            )
            .to_numpy()
            .tobytes()
        )
        if isinstance(df, gpd.GeoDataFrame):
            h.update(b"".join(g if g is not None else b"" for g in df.geometry.to_wkb()))
    if ws.dem is not None:
        h.update(np.ascontiguousarray(ws.dem.array).tobytes())
        h.update(str(tuple(ws.dem.transform)).encode())
    return h.hexdigest()[:16]


def run(
    ws: Workspace,
    *,
    progress: ProgressFn | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    **settings: Any,
) -> PipelineResult:
    """Run validate -> network -> overland -> drainage on a workspace (cached).

    Parameters
    ----------
    ws : Workspace
        From :func:`ms4map.io.open_workspace` (already validated there).
    progress : callable, optional
        Called with a short message at each long step.
    cache_dir : path, optional
        Also keep step results as pickles in this folder (survives restarts).
    use_cache : bool
        ``False`` recomputes every step.
    **settings
        Any of :data:`DEFAULT_SETTINGS` (metres / square metres).

    Returns
    -------
    PipelineResult

    Raises
    ------
    UsageError
        An unknown setting.
    DataError
        Data the chain cannot use (the message names the layer and the fix).
    """
    opts = _check_settings(settings)
    say = progress or (lambda _m: None)
    steps = _StepCache(workspace_key(ws) if use_cache else "", opts, use_cache, cache_dir)
    qa = QAReport()
    # -- validate: open_workspace validated the layers; carry its warnings -----------------
    qa.extend(ws.qa)
    if ws.qa.has_errors:
        from .core.errors import ValidationError

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
    return PipelineResult(
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


def _check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """:data:`DEFAULT_SETTINGS` updated with ``settings``; unknown or negative ones refused."""
    unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
    if unknown:
        raise UsageError(f"Unknown setting(s) {unknown}; select from {sorted(DEFAULT_SETTINGS)}.")
    opts = {**DEFAULT_SETTINGS, **settings}
    for k, v in opts.items():
        if v is not None and (not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0):
            raise UsageError(f"Setting {k} must be a non-negative number, got {v!r}.")
    return opts


class _StepCache:
    """Runs the pipeline's steps through the cache: in memory (:data:`_CACHE`) and, with a
    ``cache_dir``, as pickles; keyed by the workspace key, the step, the cache format and
    the step's settings.  Records each step's time and whether it came from the cache."""

    def __init__(
        self, wkey: str, opts: dict[str, Any], use_cache: bool, cache_dir: str | Path | None
    ) -> None:
        self.wkey, self.opts, self.use_cache, self.cache_dir = wkey, opts, use_cache, cache_dir
        self.timings: dict[str, float] = {}
        self.cached: dict[str, bool] = {}

    def where(self, name: str, keys: tuple[str, ...]) -> tuple[tuple[Any, ...], Path | None]:
        """The memory key of step ``name`` with settings ``keys``, and its pickle's path."""
        key = (
            self.wkey,
            name,
            _CACHE_FORMAT,
            f"ms4map={__version__}",
            *[f"{k}={self.opts[k]!r}" for k in keys],
        )
        path = None
        if self.use_cache and self.cache_dir is not None:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
            path = Path(self.cache_dir) / f"{name}-{digest}.pkl"
        return key, path

    def is_cached(self, name: str, keys: tuple[str, ...]) -> bool:
        """Whether the step would come from the cache."""
        key, path = self.where(name, keys)
        return self.use_cache and (key in _CACHE or (path is not None and path.exists()))

    def __call__(self, name: str, keys: tuple[str, ...], fn: Callable[[], Any]) -> Any:
        """The step's value: from the cache, else ``fn()`` (then cached)."""
        key, path = self.where(name, keys)
        if self.use_cache and key in _CACHE:
            self.timings[name], self.cached[name] = 0.0, True
            return _CACHE[key]
        if path is not None:
            value = _load(path)
            if value is not None:
                _CACHE[key] = value
                self.timings[name], self.cached[name] = 0.0, True
                return value
        t0 = time.perf_counter()
        value = fn()
        self.timings[name], self.cached[name] = time.perf_counter() - t0, False
        if self.use_cache:
            _CACHE[key] = value
            if path is not None:
                _dump(path, value)
        return value


def _network_step(
    ws: Workspace, steps: _StepCache, opts: dict[str, Any], say: ProgressFn, qa: QAReport
) -> StormNetwork | None:
    """The cached storm network (``None`` without conveyances, with a warning)."""

    def _net() -> StormNetwork | None:
        conv = ws.get("conveyances")
        if conv is None or len(conv) == 0:
            return None
        from .network import build_network

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
    steps: _StepCache,
    opts: dict[str, Any],
    say: ProgressFn,
) -> tuple[Any, Any, OverlandResult | None, Any]:
    """The network join, the inlets, the overland routing and the parcel cells.

    Work that needs no routing runs in a second thread while the DEM is conditioned:
    whitebox-workflows fills on one core and releases the GIL (docs/hydrology.md).
    """
    all_keys = _NETWORK_KEYS + _OVERLAND_KEYS + _DRAINAGE_KEYS
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
            cells_f = pool.submit(
                _drainage.parcel_cells,
                parcels.geometry.values,
                ws.dem.array.shape,
                ws.dem.transform,
            )
        inlets, open_conv = _overland.network_targets(ws, net)
        ov = _overland_step(ws, steps, inlets, open_conv, opts=opts, say=say)
        join = join_f.result()
        cells = cells_f.result() if cells_f is not None else None
    finally:
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
    join: Any,
    inlets: Any,
    cells: Any,
    *,
    steps: _StepCache,
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
    ws: Workspace, ov: OverlandResult | None, join: Any, steps: _StepCache, say: ProgressFn
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
        # one polygonization for both layers (drainage.sewersheds unites these)
        ic = ov.catchments(("inlet", "conveyance"))
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


def outfall_points(result: PipelineResult, workspace: Workspace | None) -> dict[str, Any]:
    """Outfall id -> point: the built network's outfalls, else the workspace's
    ``outfalls`` layer (empty when there is neither)."""
    net = getattr(result, "network", None)
    of = getattr(net, "outfalls", None) if net is not None else None
    pts: dict[str, Any] = {}
    if of is not None and len(of):
        ids = of.index if "outfall_id" not in of.columns else of["outfall_id"]
        for i, g in zip(ids, of.geometry, strict=True):
            pts[str(i)] = g
    elif workspace is not None and workspace.layers.get("outfalls") is not None:
        o = workspace.layers["outfalls"]
        for i, g in zip(o["outfall_id"], o.geometry, strict=True):
            pts[str(i)] = g
    return pts


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
        return _overland.route(
            ws.dem,
            inlets=inlets,
            conveyances=open_conv,
            waterbodies=ws.get("waterbodies"),
            progress=say,
            **{k: float(opts[k]) for k in _OVERLAND_KEYS},
        )

    return step("overland", _NETWORK_KEYS + _OVERLAND_KEYS, _ov)


def _load(path: Path) -> Any:
    """A step result from the disk cache, or ``None`` when absent or unreadable (recomputed)."""
    if not path.exists():
        return None
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except Exception:  # noqa: BLE001 - a stale or broken cache file is only recomputed
        return None


def _dump(path: Path, value: Any) -> None:
    """Write a step result to the disk cache (atomically; a failure only skips caching)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    try:
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    except (TypeError, pickle.PicklingError, OSError):
        tmp.unlink(missing_ok=True)


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
