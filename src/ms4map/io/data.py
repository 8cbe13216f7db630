"""Where ms4map's own files are: the bundled demo town (:func:`demo_path`) and its data folder.

The demo generator sits above io in the import order, so io does not import it: when no
copy of the demo is found, the package root's ``ms4map._build_demo`` builds one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import InputOpenError

__all__ = ["data_dir", "demo_path"]

#: Builds the demo town into a folder when :func:`demo_path` finds no copy.  ``None``: the
#: package root's ``ms4map._build_demo`` (:func:`ms4map.demo.build_demo`): the generator
#: sits above io in the import order, so io does not import it, and the root is always
#: imported before io.
demo_builder: Callable[[Path], Any] | None = None


def _demo_builder() -> Callable[[Path], Any] | None:
    root = sys.modules.get("ms4map")
    return demo_builder or getattr(root, "_build_demo", None)


def demo_path() -> Path:
    """The bundled demo GeoPackage (``data/layers/demo.gpkg`` or the installed copy).

    In a source checkout the repository's ``data/layers`` is used; after a regular
    install the copy shipped as package data (``ms4map/demo_data``).  When neither is
    there the demo is rebuilt (deterministically) into the user data folder.
    """
    here = Path(__file__).resolve()
    candidates = [
        here.parents[3] / "data" / "layers" / "demo.gpkg",  # source checkout (src layout)
        here.parents[1] / "demo_data" / "demo.gpkg",  # installed package data
    ]
    for c in candidates:
        if c.exists():
            return c
    build = _demo_builder()
    if build is None:
        raise InputOpenError("The demo town is not installed and there is no demo builder.")
    out = data_dir() / "demo"
    if not (out / "demo.gpkg").exists():
        build(out)  # rebuild: deterministic
    return out / "demo.gpkg"


def data_dir() -> Path:
    """The folder ms4map may write to (``MS4MAP_DATA_DIR``, else ``~/.local/share/ms4map``)."""
    base = os.environ.get("MS4MAP_DATA_DIR")
    p = Path(base) if base else Path.home() / ".local" / "share" / "ms4map"
    p.mkdir(parents=True, exist_ok=True)
    return p
