"""Reading and writing user files: the workspace, DEMs, manifests, field maps, outputs.

The door of :mod:`ms4map.io`; its modules each do one job:

- :mod:`~ms4map.io.open`: :func:`open_workspace`, the recipe, which uses
  :mod:`~ms4map.io.sources` (``LAYER`` / ``FILE`` / ``FILE::LAYER``, the zip check),
  :mod:`~ms4map.io.manifest` (TOML manifests), :mod:`~ms4map.io.crs` (the working CRS),
  :mod:`~ms4map.io.canonical` (column and value mapping, with the alias tables of
  :mod:`~ms4map.io.aliases`), :mod:`~ms4map.io.checks` (QA of the layers),
  :mod:`~ms4map.io.dem` (:func:`read_dem`) and :mod:`~ms4map.io.swmm` (an EPA SWMM
  model, ``.inp``, read as layers, its records checked by :mod:`~ms4map.io.swmm_scan`);
- :mod:`~ms4map.io.write`: :func:`write_outputs`, :func:`check_output_path`, provenance;
- :mod:`~ms4map.io.workspace`: :class:`Workspace` and :class:`Dem`;
- :mod:`~ms4map.io.fieldmap`, :mod:`~ms4map.io.validate`, :mod:`~ms4map.io.styles`:
  user field maps, the validation report, the layer styles written with the results;
- :mod:`~ms4map.io.site_file`: the ``--site-file`` polygon; :mod:`~ms4map.io.data`:
  the demo town's path.
"""

from __future__ import annotations

from . import (
    aliases,
    crs,
    data,
    dem,
    fieldmap,
    impairments,
    manifest,
    site_file,
    sources,
    styles,
    swmm,
    validate,
    write,
)
from .crs import metres_to_crs_units
from .dem import read_dem
from .fieldmap import FieldMap
from .impairments import ImpairmentsRead
from .manifest import load_manifest
from .open import open_workspace
from .sources import list_source_layers
from .workspace import Dem, Workspace, file_sha256
from .write import check_output_path, read_provenance, write_outputs, write_text_output

#: Deprecated, not in the door: ``ms4map.datasets.get_path("alder_falls")``.
demo_path = data.demo_path

__all__ = [
    # the names
    "Dem",
    "FieldMap",
    "ImpairmentsRead",
    "Workspace",
    "check_output_path",
    "file_sha256",
    "list_source_layers",
    "load_manifest",
    "metres_to_crs_units",
    "open_workspace",
    "read_dem",
    "read_provenance",
    "write_outputs",
    "write_text_output",
    # the public modules, one topic each
    "aliases",
    "crs",
    "data",
    "dem",
    "fieldmap",
    "impairments",
    "manifest",
    "site_file",
    "sources",
    "styles",
    "swmm",
    "validate",
    "write",
]
