"""The pipeline's step cache: results kept in memory and as pickles, keyed by workspace and settings.

Each step's result is cached in memory (and optionally on disk, ``cache_dir=``) under a
key made of the workspace fingerprint (:func:`workspace_key`), the step, the cache
format, ms4map's version and the settings that step depends on, so a repeated
:func:`ms4map.pipeline.run` recomputes nothing that has not changed.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..core.version import __version__

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = ["StepCache", "clear_cache", "workspace_key"]

#: Part of every cache key (with ms4map's version): bump when a step's result changes
#: shape or meaning, so that results cached on disk by an older ms4map are recomputed,
#: never loaded.  3: the edge of the DEM's data and nodata holes as outlets, pools
#: spilling into a target (eighth session).  4: the drainage table's last two columns,
#: ``outfall_candidates`` and ``candidate_waters`` (ambiguous network paths, issue 27).
_CACHE_FORMAT = "format=4"

_CACHE: dict[tuple[str, ...], Any] = {}


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
        h.update(np.ascontiguousarray(ws.dem.array))  # the buffer itself: no copy of the grid
        h.update(str(tuple(ws.dem.transform)).encode())
    return h.hexdigest()[:16]


class StepCache:
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
