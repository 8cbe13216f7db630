"""Reading one role of the workspace (outfalls, structures, parcels) without the pipeline.

:func:`_read_role` reads one canonical layer (mapped, ids checked) through
:func:`ms4map.io.open_workspace`; :func:`layer`, :func:`structure_point` and
:func:`check_parcel` give a :class:`~ms4map.records.records.Records` the workspace
layers its records are checked against.  Only the outfalls are read on opening.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import geopandas as gpd

from .. import io
from ..core.errors import DataError, UsageError
from ..core.manifest import manifest_files

__all__ = ["check_parcel", "layer", "layer_to_check", "structure_point"]


def _read_role(
    workspace: Path,
    role: str,
    *,
    layers: Mapping[str, Any] | None,
    field_map: Any,
    crs: Any,
) -> tuple[gpd.GeoDataFrame | None, list[Path]]:
    """One canonical layer of the workspace (mapped, ids checked) and the files read.

    The layer is read by :func:`ms4map.io.open_workspace` with ``roles=(role,)``: the
    same resolution as every command (a folder holding two files of one stem is refused
    naming both), none of the other layers opened.  ``None`` when the workspace has no
    layer of that name and none is named for it.
    """
    specs = None if not layers else layers.get(role)
    inputs = [workspace]
    named = specs
    base = workspace
    if workspace.suffix.lower() == ".toml":
        man = io.load_manifest(workspace)
        if "workspace" not in man:
            raise UsageError(
                f"Manifest '{workspace.name}' names no workspace. Fix: add workspace = ..."
            )
        base = Path(man["workspace"])
        inputs.append(base)
        # every file the manifest names is the user's: never an output (export, report)
        inputs += [Path(f).resolve() for f in manifest_files(workspace) if Path(f).exists()]
        named = specs or man.get("layers", {}).get(role)
    if not named and role not in io.list_source_layers(base):
        return None, inputs
    ws = io.open_workspace(
        workspace,
        roles=(role,),
        layers={role: specs} if specs else None,
        field_map=field_map,
        crs=crs,
        no_dem=True,
    )
    inputs += [Path(p) for p in ws.inputs]
    return ws.layers.get(role), inputs


def layer(records: Any, role: str) -> gpd.GeoDataFrame | None:
    """The workspace's ``role`` layer of ``records`` (a :class:`Records`), in the CRS of
    its outfalls; ``None`` when the workspace has none."""
    gdf, _ = _read_role(records.workspace, role, **records._options)
    if gdf is not None and records.outfalls.crs is not None and gdf.crs != records.outfalls.crs:
        gdf = gdf.to_crs(records.outfalls.crs)
    return gdf


def layer_to_check(records: Any, role: str, field: str, how: str) -> gpd.GeoDataFrame:
    """The workspace layer a field's ids are checked against (``how``: the hint
    on naming it); a :class:`DataError` when the workspace has none."""
    found = layer(records, role)
    if found is None:
        raise DataError(
            f"Field '{field}': the workspace has no {role} layer to check it "
            f"against. Fix: add the {role} layer ({how})."
        )
    return found


def structure_point(records: Any, struct_id: str) -> Any:
    """The point of structure ``struct_id`` (the structures layer read once)."""
    if records._structures is None:
        records._structures = layer_to_check(
            records, "structures", "struct_id", "or name it with --layer structures=LAYER"
        )
    s = records._structures
    hit = s[s["struct_id"].astype(str) == struct_id]
    if not len(hit):
        raise DataError(
            f"Field 'struct_id' = '{struct_id}' is not a structure of the workspace "
            f"({len(s)} structures, e.g. {', '.join(s['struct_id'].astype(str).head(3))}). "
            "Fix: check the id (ids are case-sensitive)."
        )
    return hit.geometry.iloc[0]


def check_parcel(records: Any, parcel_id: str) -> None:
    """Refuse a ``parcel_id`` that is not a parcel of the workspace (ids read once)."""
    if records._parcel_ids is None:
        p = layer_to_check(records, "parcels", "parcel_id", "or --layer parcels=LAYER")
        records._parcel_ids = set(p["parcel_id"].astype(str))
    if parcel_id not in records._parcel_ids:
        raise DataError(
            f"Field 'parcel_id' = '{parcel_id}' is not a parcel of the workspace "
            f"({len(records._parcel_ids)} parcels). Fix: check the parcel id (SBL)."
        )
