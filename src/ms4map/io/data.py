"""Where ms4map keeps its own files: the user data folder (:func:`data_dir`).

``demo_path`` is the old way to the demo town, now :func:`ms4map.datasets.get_path`
(io sits below the demo generator and does not build it).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from ..core.errors import InputOpenError

__all__ = ["bundled_file", "data_dir", "demo_path"]


def demo_path() -> Path:
    """Deprecated: ``ms4map.datasets.get_path("alder_falls")``; removed in 0.3.

    The committed demo GeoPackage (``data/layers/demo.gpkg`` in a source checkout, the
    installed package data after a regular install).  Unlike ``get_path`` it never
    rebuilds the demo: io does not reach up to the generator.
    """
    warnings.warn(
        "ms4map.io.demo_path() is deprecated and is removed in ms4map 0.3; use "
        'ms4map.datasets.get_path("alder_falls").',
        DeprecationWarning,
        stacklevel=2,
    )
    found = bundled_file("demo.gpkg")
    if found is not None:
        return found
    raise InputOpenError(
        "The demo town is not installed here. Fix: use "
        'ms4map.datasets.get_path("alder_falls"), which rebuilds it.'
    )


def bundled_file(name: str) -> Path | None:
    """A file of the bundled demo town, ``None`` when this install carries none.

    The repository's ``data/layers`` in a source checkout; the package data
    ``ms4map/demo_data`` after a regular install.
    """
    here = Path(__file__).resolve()
    for folder in (
        here.parents[3] / "data" / "layers",  # source checkout (src layout)
        here.parents[1] / "demo_data",  # installed package data
    ):
        if (folder / name).exists():
            return folder / name
    return None


def data_dir() -> Path:
    """The folder ms4map may write to (``MS4MAP_DATA_DIR``, else ``~/.local/share/ms4map``)."""
    base = os.environ.get("MS4MAP_DATA_DIR")
    p = Path(base) if base else Path.home() / ".local" / "share" / "ms4map"
    p.mkdir(parents=True, exist_ok=True)
    return p
