"""The workspace: one bundle of canonical layers (+ DEM) that every step takes.

:func:`ms4map.io.open_workspace` builds it; nothing else reads the user's files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.qa import QAReport
from ..core.schema import LAYERS
from ..core.version import __version__

__all__ = ["Dem", "SHAPEFILE_SIDECARS", "Workspace", "file_sha256"]


@dataclass(repr=False)
class Dem:
    """A DEM as an array plus its georeferencing (rasterio stays in :mod:`ms4map.io`).

    Attributes
    ----------
    array : numpy.ndarray
        2-D elevations in the working CRS's grid; nodata cells are NaN.  float32 when
        the file's band is float32 or a 8/16-bit integer (the file's values, 4 bytes
        per cell), else float64 (and after a warp to the working CRS).
    transform : affine.Affine
        Pixel -> working-CRS coordinates.
    crs : pyproj.CRS
        The working CRS (the DEM is warped into it when it arrives in another).
    path : pathlib.Path or None
        The file it was read from.
    vertical_unit : str or None
        ``"metre"``, ``"US survey foot"``, ``"foot"`` or ``None`` when unknown.
    z_to_m : float
        Factor that converts the array's elevations to metres (1.0 when unknown).
    """

    array: np.ndarray
    transform: Any
    crs: Any
    path: Path | None = None
    vertical_unit: str | None = None
    z_to_m: float = 1.0

    def __repr__(self) -> str:
        name = self.path.name if self.path else "array"
        return (
            f"<Dem {name}: {self.array.shape[1]}x{self.array.shape[0]} cells of "
            f"{self.cellsize:g}, vertical unit {self.vertical_unit or 'unknown'}>"
        )

    @property
    def shape(self) -> tuple[int, int]:
        return self.array.shape  # type: ignore[return-value]

    @property
    def cellsize(self) -> float:
        return float(abs(self.transform.a))

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        t = self.transform
        h, w = self.array.shape
        x0, y0 = t.c, t.f
        x1, y1 = t.c + t.a * w, t.f + t.e * h
        return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


@dataclass(repr=False)
class Workspace:
    """Canonical layers in one projected working CRS, plus the DEM and the QA so far.

    Attributes
    ----------
    path : pathlib.Path or None
        The GeoPackage (or manifest) the workspace was opened from.
    crs : pyproj.CRS
        The projected working CRS of every layer and of the DEM.
    source_crs : pyproj.CRS or None
        The CRS the main network layers arrived in (outputs that report
        coordinates "in the source data's CRS" use it).
    layers : dict of str to GeoDataFrame or DataFrame
        Canonical role -> frame with canonical columns (plus the source's
        unmapped columns, untouched, and ``src_layer``/``src_fid``).  Roles that
        were not supplied are absent.
    dem : Dem or None
    qa : QAReport
        Validation findings (warnings only: errors raise).
    field_mapping : dict
        The mapping actually used: ``{role: {source_layer: {canonical: source}}}``.
    inputs : dict
        ``{path: sha256}`` of every file read (:func:`file_sha256`: a shapefile with its
        sidecar files), for provenance and :meth:`fingerprint`.
    settings : dict
        The options the workspace was opened with (for provenance and caching).
    """

    path: Path | None
    crs: Any
    layers: dict[str, Any]
    dem: Dem | None = None
    qa: QAReport = field(default_factory=QAReport)
    source_crs: Any = None
    field_mapping: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        name = self.path.name if self.path else "in-memory"
        layers = ", ".join(f"{r}={len(df)}" for r, df in self.layers.items())
        dem = f"{self.dem.shape[1]}x{self.dem.shape[0]} DEM" if self.dem is not None else "no DEM"
        crs = self.crs.to_string() if hasattr(self.crs, "to_string") else str(self.crs)
        return f"<Workspace {name}: {layers}; {dem}; {crs}; {len(self.qa.warnings)} warning(s)>"

    def get(self, role: str) -> Any:
        """The layer for ``role``, or ``None`` when the workspace has none."""
        return self.layers.get(role)

    def __getattr__(self, name: str) -> Any:
        # parcels, structures, conveyances, ... as attributes (None when absent)
        if name in LAYERS:
            return self.__dict__["layers"].get(name)
        raise AttributeError(name)

    @property
    def sidecar_path(self) -> Path:
        """Default output: ``<stem>.ms4map.gpkg`` beside the workspace GeoPackage."""
        if self.path is None:
            return Path("ms4map_output.ms4map.gpkg")
        return self.path.with_name(f"{self.path.stem}.ms4map.gpkg")

    def fingerprint(self) -> str:
        """A hash of inputs and settings, used as the pipeline's cache key."""
        h = hashlib.sha256()
        for p, digest in sorted(self.inputs.items()):
            h.update(f"{p}={digest};".encode())
        for k, v in sorted(self.settings.items()):
            h.update(f"{k}={v!r};".encode())
        h.update(str(self.crs).encode())
        return h.hexdigest()[:16]

    def provenance(self, **settings: Any) -> dict[str, Any]:
        """Version, inputs with hashes, settings and time, for any output."""
        import datetime as _dt

        return {
            "tool": "ms4map",
            "version": __version__,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "inputs": dict(self.inputs),
            "workspace_settings": {k: _jsonable(v) for k, v in self.settings.items()},
            "settings": {k: _jsonable(v) for k, v in settings.items()},
            "crs": self.crs.to_string() if hasattr(self.crs, "to_string") else str(self.crs),
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


#: The files GDAL reads with a shapefile's ``.shp``, hashed with it (:func:`file_sha256`):
#: index, attributes, CRS, text encoding and spatial index.
SHAPEFILE_SIDECARS = (".shx", ".dbf", ".prj", ".cpg", ".qix")


def file_sha256(path: str | Path, *, chunk: int = 1 << 20) -> str:
    """SHA-256 of an input file: what the provenance records, the cache key holds and a
    batch rerun compares.

    A file is hashed by its bytes; a directory (a File Geodatabase) by the bytes of every
    file in it.  A shapefile (``.shp``) is hashed with its sidecar files
    (:data:`SHAPEFILE_SIDECARS`, those present, matched by stem whatever the case of
    their suffix), each named in the hash, so an edit of its attributes (``.dbf``), CRS
    (``.prj``) or encoding (``.cpg``) changes it.

    Parameters
    ----------
    path : str or Path
        The file or folder.
    chunk : int
        Bytes read at a time.

    Returns
    -------
    str
        The hexadecimal digest.
    """
    p = Path(path)
    h = hashlib.sha256()
    if p.suffix.lower() == ".shp" and p.is_file():
        for label, f in _shapefile_parts(p):
            h.update(f"\0{label}\0".encode())
            _hash_into(h, f, chunk)
        return h.hexdigest()
    files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
    for f in files:
        _hash_into(h, f, chunk)
    return h.hexdigest()


def _shapefile_parts(shp: Path) -> list[tuple[str, Path]]:
    """``(suffix, file)`` of a shapefile's ``.shp`` and of each sidecar file present."""
    beside = {}
    try:
        for q in sorted(shp.parent.iterdir()):
            if q.stem == shp.stem and q.suffix.lower() in SHAPEFILE_SIDECARS and q.is_file():
                beside.setdefault(q.suffix.lower(), q)
    except OSError:  # a folder that cannot be listed: the .shp alone, as it opened
        pass
    return [(".shp", shp)] + [(ext, beside[ext]) for ext in SHAPEFILE_SIDECARS if ext in beside]


def _hash_into(h: Any, path: Path, chunk: int) -> None:
    """Feed the bytes of ``path`` to the hash ``h``, ``chunk`` bytes at a time."""
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
