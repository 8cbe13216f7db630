"""Writing outputs: :func:`check_output_path`, :func:`write_outputs`, provenance, replace_durably.

ms4map never writes into the user's files: every output path is checked first, written
to a temporary file and moved into place whole.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import geopandas as gpd
import pandas as pd
import pyogrio

from ..core.errors import DataError, Ms4mapError, OutputError, UsageError
from .styles import write_layer_styles

__all__ = [
    "provenance_rows",
    "check_ms4map_output",
    "check_output_path",
    "read_provenance",
    "recorded_inputs",
    "replace_durably",
    "write_outputs",
    "write_text_output",
    "writing",
]


def check_output_path(
    path: str | Path,
    *,
    protected: Iterable[str | Path] = (),
    suffixes: Iterable[str] | None = None,
    option: str = "--out",
    ms4map_gpkg: bool = True,
) -> Path:
    """Resolve an output path, refusing the user's input files; create its folder.

    Parameters
    ----------
    path : str or Path
        Where the user asked for output.
    protected : iterable of paths
        Input files (a workspace's ``inputs``): never written.  A shapefile's
        sidecar files (``.dbf``, ``.shx``, ``.prj``, ...) are protected with it.
    suffixes : iterable of str, optional
        Allowed suffixes, e.g. ``(".csv",)``.
    option : str
        The option name, for messages.
    ms4map_gpkg : bool
        An existing ``.gpkg`` must be an ms4map output (:func:`check_ms4map_output`);
        ``False`` for a records store or a backup, which check their own.

    Raises
    ------
    UsageError
        The path is an input file, has the wrong suffix, or is an existing GeoPackage
        ms4map did not write (exit 4).
    OutputError
        Its folder cannot be created (no permission, a read-only file system, a file
        in the way): the output cannot be written (exit 3).
    """
    out = Path(path).expanduser().resolve()
    guarded: set[Path] = set()
    for p in protected:
        q = Path(p).expanduser().resolve()
        guarded.add(q)
        if q.suffix.lower() in (".shp", ".tif", ".tiff", ".gpkg"):
            guarded |= {
                q.with_suffix(ext)
                for ext in (
                    ".shp",
                    ".shx",
                    ".dbf",
                    ".prj",
                    ".cpg",
                    ".qmd",
                    ".tfw",
                    ".aux.xml",
                    ".ovr",
                )
            }
            guarded |= {q.with_name(q.name + ext) for ext in ("-wal", "-shm", ".aux.xml", ".ovr")}
    if out in guarded or any(out.is_relative_to(g) for g in guarded if g.is_dir()):
        raise UsageError(
            f"Refusing to write into input file '{out.name}' ({option}); ms4map never "
            "modifies your data. Fix: choose another output path."
        )
    if suffixes is not None:
        allowed = tuple(s.lower() for s in suffixes)
        if out.suffix.lower() not in allowed:
            raise UsageError(f"{option} '{out.name}' must end in {' or '.join(allowed)}.")
    if out.exists() and out.is_dir():
        raise UsageError(f"{option} '{out}' is a folder; give a file name.")
    if ms4map_gpkg and out.suffix.lower() == ".gpkg":
        check_ms4map_output(out, option=option)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{option}: cannot create folder '{out.parent}': {exc.strerror or exc}. Fix: "
            "choose a folder you may write to (not on a read-only disk), or create it and "
            "check its permissions, then rerun; nothing was written."
        ) from None
    return out


def write_text_output(
    path: str | Path,
    text: str,
    *,
    protected: Iterable[str | Path] = (),
    option: str = "--out",
    suffixes: Iterable[str] | None = None,
) -> Path:
    """Write a text output (CSV, Markdown, JSON) atomically after :func:`check_output_path`."""
    out = check_output_path(path, protected=protected, suffixes=suffixes, option=option)
    with writing(out):
        fd, tmp_name = tempfile.mkstemp(suffix=out.suffix, dir=out.parent, prefix=".ms4map-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_name, 0o666 & ~umask)  # mkstemp makes 0600; ordinary files
            os.replace(tmp_name, out)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
    return out


@contextlib.contextmanager
def writing(out: Path) -> Iterator[None]:
    """Report an operating-system error while writing ``out`` as :class:`OutputError`,
    with the file and the fix (an ms4map error passes through as it is)."""
    try:
        yield
    except Ms4mapError:
        raise
    except OSError as exc:
        raise OutputError(
            f"Cannot write '{out}': {exc.strerror or exc}. Fix: check that the disk has "
            "space and the folder is writable (a network share still connected), then "
            "rerun; an earlier output there is unchanged."
        ) from exc


def write_outputs(
    out_path: str | Path,
    layers: Mapping[str, pd.DataFrame],
    *,
    provenance: Mapping[str, Any],
    inputs: Iterable[str | Path] = (),
    option: str = "--out",
) -> Path:
    """Write result layers and their provenance to a GeoPackage.

    The file is written to a temporary name and moved into place, so an existing
    output is never left half-written.  Refuses to write over any input file.
    Layers of an earlier run that this one does not replace are kept, and so is
    their provenance: the ``provenance`` table has one row per layer (``layer``,
    ``created``, ``value`` = the JSON record of the run that wrote it).  Each spatial
    layer written gets its default QGIS style in ``layer_styles`` (:mod:`ms4map.io.styles`).
    An existing file ms4map did not write is refused (:func:`check_ms4map_output`);
    ``option`` names the option in the messages.
    """
    protected = list(inputs) + list(provenance.get("inputs", {}))
    out = check_output_path(out_path, protected=protected, suffixes=(".gpkg",), option=option)
    with writing(out):
        return _write_outputs(out, layers, provenance)


def check_ms4map_output(
    out: str | Path, *, option: str = "--out", damaged_ok: bool = False
) -> None:
    """Refuse to add layers to an existing file that is not an ms4map output.

    ms4map adds its layers to a GeoPackage only when it wrote that file itself (it has
    the ``provenance`` table of :func:`write_outputs`): a GeoPackage of the user's, an
    IDDE records store or any other file is never changed.  ``damaged_ok``: a file
    that is not a readable database passes (a batch town's own output cut short, which
    its run replaces whole).

    Raises
    ------
    UsageError
        Naming the file, what it is and the fix.
    """
    path = Path(out)
    if not path.is_file() or path.stat().st_size == 0:  # nothing there to lose
        return
    what = None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        if damaged_ok:
            return
        what = "is not a GeoPackage"
    else:
        if "records_meta" in tables:
            what = "is an IDDE records store"
        elif "provenance" not in tables or not provenance_rows(path):
            what = "was not written by ms4map (it has no provenance table)"
    if what:
        raise UsageError(
            f"{option} '{path}' exists and {what}: ms4map adds its layers only to files it "
            "wrote itself, and never changes another file. Fix: give a new file name, or "
            "move that file away first."
        )


def _write_outputs(
    out: Path, layers: Mapping[str, pd.DataFrame], provenance: Mapping[str, Any]
) -> Path:
    fd, tmp_name = tempfile.mkstemp(suffix=".gpkg", dir=out.parent, prefix=".ms4map-")
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    record = json.dumps(dict(provenance), default=str, indent=1)
    created = str(provenance.get("created", ""))
    try:
        rows: dict[str, tuple[str, str]] = {}
        if out.exists():  # keep layers (and their provenance) that this run does not replace
            shutil.copyfile(out, tmp)
            rows = {k: v for k, v in provenance_rows(out).items() if k not in layers}
        arrow = _have_pyarrow()  # the same layers, written faster through Arrow
        with _unjournaled_sqlite():
            for name, df in layers.items():
                frame = df
                if isinstance(frame, gpd.GeoDataFrame):
                    frame = _gpkg_safe(frame)
                else:
                    frame = _gpkg_safe(pd.DataFrame(frame))
                _write_layer(frame, tmp, name, arrow=arrow)
                rows[name] = (created, record)
            prov = pd.DataFrame(
                {
                    "layer": list(rows),
                    "created": [v[0] for v in rows.values()],
                    "value": [v[1] for v in rows.values()],
                }
            )
            pyogrio.write_dataframe(prov, tmp, layer="provenance", driver="GPKG")
        write_layer_styles(tmp, list(layers))  # QGIS styles (layer_styles) of these layers
        replace_durably(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


#: GDAL's SQLite settings while :func:`write_outputs` fills its temporary GeoPackage: no
#: rollback journal and no sync per transaction (measured: about 180 fsyncs per benchmark
#: town's six layers).  A failed write leaves only the temporary file, which is removed;
#: the finished file is synced once before it replaces the output (:func:`replace_durably`).
_TEMP_SQLITE = {"OGR_SQLITE_SYNCHRONOUS": "OFF", "OGR_SQLITE_JOURNAL": "OFF"}


@contextlib.contextmanager
def _unjournaled_sqlite() -> Iterator[None]:
    """Set :data:`_TEMP_SQLITE` in GDAL's (process-wide) configuration, then restore it.

    A GeoPackage another thread writes meanwhile through GDAL gets them too; ms4map's
    other GDAL writes go to temporary files as well, and the records store writes
    through Python's sqlite3, which these options do not touch.
    """
    saved = {k: pyogrio.get_gdal_config_option(k) for k in _TEMP_SQLITE}
    pyogrio.set_gdal_config_options(_TEMP_SQLITE)
    try:
        yield
    finally:
        pyogrio.set_gdal_config_options(saved)


def replace_durably(tmp: Path, out: Path) -> None:
    """Move the finished ``tmp`` over ``out``: its bytes on disk first, then the rename,
    then the folder's entry, so a crash leaves the old output or the new one, whole.

    A file system that cannot sync (some network shares answer ``EINVAL``) gets the
    rename alone, as before; an I/O error while syncing is raised and ``out`` is kept.
    """
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_SYNC:
            raise
    finally:
        os.close(fd)
    os.replace(tmp, out)
    if os.name == "posix":
        with contextlib.suppress(OSError):  # a folder some file systems cannot sync
            dfd = os.open(out.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)


#: ``fsync`` errors meaning "this file system does not sync", not "the write failed".
_NO_SYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF}


def _write_layer(frame: pd.DataFrame, path: Path, name: str, *, arrow: bool) -> None:
    """One layer into a GeoPackage; through Arrow when possible, else row by row (GDAL)."""
    if arrow:
        try:
            pyogrio.write_dataframe(frame, path, layer=name, driver="GPKG", use_arrow=True)
            return
        except Exception:  # noqa: BLE001 - e.g. a mixed-type column Arrow cannot type
            written = path.exists() and name in pyogrio.list_layers(path)[:, 0]
            if written:
                raise  # the layer was (partly) written: do not write it twice
    pyogrio.write_dataframe(frame, path, layer=name, driver="GPKG")


def _have_pyarrow() -> bool:
    """Whether pyarrow is installed (pyogrio then writes layers through Arrow)."""
    return importlib.util.find_spec("pyarrow") is not None


def recorded_inputs(src: Path) -> list[Path]:
    """The input files the provenance of the GeoPackage ``src`` names: an export of it
    never writes them either."""
    if not src.is_file():
        return []
    out: list[Path] = []
    for _created, record in provenance_rows(src).values():
        try:
            inputs = json.loads(record).get("inputs") or {}
        except (ValueError, AttributeError):
            continue
        out += [Path(p) for p in inputs if isinstance(p, str) and p]
    return out


def provenance_rows(path: Path) -> dict[str, tuple[str, str]]:
    try:
        with sqlite3.connect(path) as con:
            cols = [r[1] for r in con.execute("PRAGMA table_info(provenance)")]
            if "layer" not in cols:
                return {}
            return {
                str(layer): (str(created), str(value))
                for layer, created, value in con.execute(
                    "SELECT layer, created, value FROM provenance"
                )
            }
    except sqlite3.Error:
        return {}


def _gpkg_safe(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in out.columns:
        if c == getattr(out, "_geometry_column_name", None):
            continue
        s = out[c]
        if s.dtype == object:
            out[c] = s.map(
                lambda v: (
                    v
                    if v is None or isinstance(v, (str, int, float, bool)) or pd.isna(v)
                    else str(v)
                )
            )
    return out


def read_provenance(path: str | Path, layer: str | None = None) -> dict[str, Any]:
    """The provenance record of one output layer (default: the most recently written)."""
    rows = provenance_rows(Path(path))
    if not rows:
        return {}
    if layer is None:
        layer = max(rows, key=lambda k: rows[k][0])
    if layer not in rows:
        raise DataError(f"No provenance for layer '{layer}' in '{Path(path).name}'.")
    return json.loads(rows[layer][1])
