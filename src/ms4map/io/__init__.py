"""Reading and writing user files: the workspace, DEMs, manifests, field maps, outputs.

The door of :mod:`ms4map.io`; its modules each do one job:

- :mod:`~ms4map.io.open`: :func:`open_workspace`, the recipe, which uses
  :mod:`~ms4map.io.sources` (``LAYER`` / ``FILE`` / ``FILE::LAYER``, the zip check),
  :mod:`~ms4map.io.manifest` (TOML manifests), :mod:`~ms4map.io.crs` (the working CRS),
  :mod:`~ms4map.io.canonical` (column and value mapping, with the alias tables of
  :mod:`~ms4map.io.aliases`), :mod:`~ms4map.io.checks` (QA of the layers) and
  :mod:`~ms4map.io.dem` (:func:`read_dem`);
- :mod:`~ms4map.io.write`: :func:`write_outputs`, :func:`check_output_path`, provenance;
- :mod:`~ms4map.io.workspace`: :class:`Workspace` and :class:`Dem`;
- :mod:`~ms4map.io.fieldmap`, :mod:`~ms4map.io.validate`, :mod:`~ms4map.io.styles`:
  user field maps, the validation report, the layer styles written with the results;
- :mod:`~ms4map.io.site_file`: the ``--site-file`` polygon; :mod:`~ms4map.io.data`:
  the demo town's path.
"""

from __future__ import annotations

from .crs import crs_units_to_metres, metres_to_crs_units
from .data import data_dir, demo_path
from .dem import read_dem
from .fieldmap import FieldMap
from .manifest import load_manifest
from .open import open_workspace
from .site_file import read_site_file
from .sources import MAX_ZIP_MEMBERS as MAX_ZIP_MEMBERS  # transitional: app/upload.py
from .sources import MAX_ZIP_UNPACKED as MAX_ZIP_UNPACKED  # transitional: app/upload.py
from .sources import TABLE_SUFFIXES as TABLE_SUFFIXES  # transitional: io.__all__ before #26
from .sources import VECTOR_SUFFIXES as VECTOR_SUFFIXES  # transitional: io.__all__ before #26
from .sources import check_zip, list_source_layers, parse_layer_option
from .sources import read_source as read_source  # transitional: io.__all__ before #26
from .workspace import Dem, Workspace, file_sha256
from .write import (
    check_output_path,
    read_provenance,
    replace_durably,
    write_outputs,
    write_text_output,
)

__all__ = [
    "Dem",
    "FieldMap",
    "Workspace",
    "check_output_path",
    "check_zip",
    "crs_units_to_metres",
    "data_dir",
    "demo_path",
    "file_sha256",
    "list_source_layers",
    "load_manifest",
    "metres_to_crs_units",
    "open_workspace",
    "parse_layer_option",
    "read_dem",
    "read_provenance",
    "read_site_file",
    "replace_durably",
    "write_outputs",
    "write_text_output",
]
