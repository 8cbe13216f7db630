"""Reading and writing user files: the workspace, field maps, validation, layer styles.

- :mod:`ms4map.io.files`: the only reader of user files (sources, the zip check,
  manifests, :func:`open_workspace`, DEMs) and the writer of results
  (:func:`write_outputs`, :func:`check_output_path`, provenance).
- :mod:`ms4map.io.workspace`: :class:`~ms4map.io.workspace.Workspace` and ``Dem``.
- :mod:`ms4map.io.fieldmap`: user field maps.
- :mod:`ms4map.io.validate`: the validation report.
- :mod:`ms4map.io.styles`: the layer styles written with the results.

This package re-exports the public names of :mod:`ms4map.io.files`, so
``ms4map.io.open_workspace`` and ``ms4map.io.write_outputs`` keep working.
"""

from __future__ import annotations

from ..core.lazy import lazy_submodules
from .files import (
    MAX_ZIP_MEMBERS,
    MAX_ZIP_UNPACKED,
    TABLE_SUFFIXES,
    VECTOR_SUFFIXES,
    check_output_path,
    check_zip,
    crs_units_to_metres,
    data_dir,
    demo_path,
    list_source_layers,
    load_manifest,
    metres_to_crs_units,
    open_workspace,
    parse_layer_option,
    read_dem,
    read_provenance,
    read_source,
    replace_durably,
    write_outputs,
    write_text_output,
)

__all__ = [
    "MAX_ZIP_MEMBERS",
    "MAX_ZIP_UNPACKED",
    "TABLE_SUFFIXES",
    "VECTOR_SUFFIXES",
    "check_output_path",
    "check_zip",
    "crs_units_to_metres",
    "data_dir",
    "demo_path",
    "list_source_layers",
    "load_manifest",
    "metres_to_crs_units",
    "open_workspace",
    "parse_layer_option",
    "read_dem",
    "read_provenance",
    "read_source",
    "replace_durably",
    "write_outputs",
    "write_text_output",
]

__getattr__ = lazy_submodules(__name__, ("fieldmap", "files", "styles", "validate", "workspace"))
