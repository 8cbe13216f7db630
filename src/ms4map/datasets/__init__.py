"""The bundled sample data: the demo town of Alder Falls, as committed files.

``get_path("alder_falls")`` is the demo GeoPackage every example, notebook and test
starts from (``get_path("alder_falls", "dem")`` its DEM).  The files are the
repository's ``data/layers`` in a source checkout, or the copy a regular install ships
as package data (``ms4map.demo_data``); only when neither is there are they rebuilt,
deterministically, by the generator in :mod:`ms4map.datasets.alder_falls` into
ms4map's data folder.  Nothing below this package imports it: the library's own path
(io, pipeline, ...) never loads the generator.
"""

from __future__ import annotations

from pathlib import Path

from ..io.data import bundled_file, data_dir
from . import alder_falls

__all__ = ["alder_falls", "available", "data_dir", "get_path"]

#: The datasets :func:`get_path` knows.
available: list[str] = ["alder_falls"]

#: kind -> file name of the demo town's files.
_FILES = {"gpkg": "demo.gpkg", "dem": "demo_dem.tif"}


def _committed(name: str) -> Path | None:
    """The committed (or installed) copy of demo file ``name``, if there is one."""
    return bundled_file(name)


def get_path(dataset: str = "alder_falls", kind: str = "gpkg") -> Path:
    """The path of a bundled dataset's file.

    Parameters
    ----------
    dataset : str
        One of :data:`available` (``"alder_falls"``, the demo town).
    kind : {"gpkg", "dem"}
        The GeoPackage of layers or the DEM GeoTIFF.

    Returns
    -------
    Path
        The committed file; when the install carries none, the file rebuilt by the
        demo generator (deterministic) in :func:`data_dir` ``/demo``.

    Raises
    ------
    ValueError
        An unknown dataset or kind, naming the ones there are.
    """
    if dataset not in available:
        raise ValueError(
            f"The dataset {dataset!r} is not available. "
            f"Available datasets are {', '.join(available)}."
        )
    if kind not in _FILES:
        raise ValueError(f"Unknown kind {kind!r}; select from {sorted(_FILES)}.")
    name = _FILES[kind]
    found = _committed(name)
    if found is not None:
        return found
    out = data_dir() / "demo"
    if not (out / name).exists():
        alder_falls.build_demo(out)  # rebuild: deterministic
    return out / name
