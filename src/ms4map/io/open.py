""":func:`open_workspace`: roles, sources read, the working CRS, canonical layers and the DEM.

The recipe of opening a workspace; each step is a function of its own module
(:mod:`~ms4map.io.sources`, :mod:`~ms4map.io.canonical`, :mod:`~ms4map.io.checks`,
:mod:`~ms4map.io.dem`).  Everything it returns is in canonical form
(:mod:`ms4map.core.schema`) and in one projected working CRS; every problem found on
the way is collected into one :class:`~ms4map.core.qa.QAReport` (errors raise
:class:`~ms4map.core.errors.ValidationError`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import pandas as pd
from pyproj import CRS

from ..core import schema
from ..core.errors import InputOpenError, UsageError, ValidationError
from ..core.qa import QAReport
from .canonical import _canonicalise, _columns_some_layers_lack
from .checks import _check_layers
from .coords import check_coordinates
from .crs import _choose_crs, _source_crs, _user_crs
from .dem import _dem_coverage, _dem_crs, _dem_overlap, _find_dem, read_dem
from .fieldmap import FieldMap
from .manifest import load_manifest
from .sources import Source, _check_zip, _resolve_source, list_source_layers, read_source
from .swmm import is_swmm_model, read_swmm
from .workspace import Dem, Workspace, file_sha256

__all__ = ["open_workspace"]


def open_workspace(
    path: str | Path | None = None,
    *,
    layers: Mapping[str, str | Iterable[str]] | None = None,
    field_map: FieldMap | Mapping[str, Any] | str | Path | None = None,
    dem: str | Path | None = None,
    crs: Any = None,
    repair_geometry: bool = False,
    no_dem: bool = False,
    roles: Iterable[str] | None = None,
) -> Workspace:
    """Open layers (and a DEM) as one canonical :class:`~ms4map.io.workspace.Workspace`.

    Parameters
    ----------
    path : str or Path, optional
        A GeoPackage (the usual workspace), a File Geodatabase, a folder of vector files,
        a single vector file, an EPA SWMM model (``.inp``, read by
        :func:`ms4map.io.swmm.read_swmm`; ``crs`` is then required), or a TOML manifest
        holding these options.
    layers : mapping, optional
        Role -> source layer(s): a layer of ``path``, a file path, or ``FILE::LAYER``.
        Several sources may feed one role (pipes, ditches and links all feed
        ``conveyances``).  Roles not named are filled from layers whose name is exactly
        the canonical role name.
    field_map : FieldMap, dict, or path to a TOML file, optional
        Column (and value) mapping beyond the built-in alias tables.  With a manifest,
        its ``field_map`` file and its ``[fields]`` apply too; entries given here win.
    dem : str or Path, optional
        DEM GeoTIFF; default ``<stem>_dem.tif`` beside the GeoPackage, else none.
    crs : optional
        Working CRS (must be projected).  Default: the DEM's projected CRS, else the
        data's own projected CRS, else the NAD83 UTM zone of the data.
    repair_geometry : bool
        Repair invalid geometries with ``shapely.make_valid`` (reported) instead of
        stopping with an error.
    no_dem : bool
        Ignore any DEM.
    roles : iterable of str, optional
        Read only these canonical roles (e.g. ``("outfalls",)``): the sources of other
        roles are not resolved or opened, and their absence is not reported.  ``None``
        (the default): every role.

    Returns
    -------
    Workspace

    Raises
    ------
    InputOpenError
        A file or layer cannot be opened.
    ValidationError
        The data has errors; ``exc.report`` lists every one.
    """
    req = _request(
        path, layers=layers, field_map=field_map, dem=dem, crs=crs, repair_geometry=repair_geometry
    )
    report = QAReport()
    wanted = _wanted_roles(roles)
    extra: dict[str, Any] = {}  # layers beside the schema's (a SWMM model's drainage areas)
    if req.base is not None and is_swmm_model(req.base):
        role_specs, raw, inputs, extra = _read_swmm_model(req, wanted, report)
    else:
        role_specs = _resolve_roles(req.layers, req.base, wanted)
        raw, inputs = _read_sources(role_specs, req.base, report)
    _check_field_map_layers(req.fmap, raw, wanted)
    dem_path, work_crs = _working_crs(req, raw, report, no_dem=no_dem)
    source_crs = _source_crs(raw)
    out_layers, mapping_used = _canonical_layers(raw, req, work_crs, report)
    _check_layers(out_layers, work_crs, report, wanted)
    out_layers.update(extra)
    dem_obj = _attach_dem(dem_path, work_crs, out_layers, inputs, report)
    if report.has_errors:
        raise ValidationError(report)

    for p in list(inputs):
        inputs[p] = file_sha256(p)
    settings = dict(req.settings)
    settings.update(
        {
            "path": str(req.base) if req.base else None,
            "layers": {r: list(s) for r, s in role_specs.items()},
            "dem": (
                [str(f) for f in dem_path]
                if isinstance(dem_path, tuple)
                else (str(dem_path) if dem_path else None)
            ),
            "crs": work_crs.to_string() if work_crs is not None else None,
            "repair_geometry": req.repair_geometry,
            "field_map": json.dumps(mapping_used, sort_keys=True),
            "value_maps": _value_maps_used(req.fmap, raw),
        }
    )
    unit = work_crs.axis_info[0]
    report.note(
        f"Working CRS: {work_crs.name} ({work_crs.to_string()}); linear unit "
        f"{unit.unit_name} = {unit.unit_conversion_factor:.10g} m."
    )
    return Workspace(
        path=req.base.resolve() if req.base else None,
        crs=work_crs,
        layers=out_layers,
        dem=dem_obj,
        qa=report,
        source_crs=source_crs,
        field_mapping=mapping_used,
        inputs=inputs,
        settings=settings,
    )


@dataclass
class _Request:
    """What :func:`open_workspace` was asked to open, with a manifest's options filled in."""

    base: Path | None  # the workspace path (GeoPackage, folder, file), if any
    layers: Mapping[str, str | Iterable[str]] | None
    fmap: FieldMap
    dem: str | Path | None
    crs: Any
    repair_geometry: bool
    settings: dict[str, Any]  # the manifest's path, for the provenance


def _request(
    path: str | Path | None,
    *,
    layers: Mapping[str, str | Iterable[str]] | None,
    field_map: FieldMap | Mapping[str, Any] | str | Path | None,
    dem: str | Path | None,
    crs: Any,
    repair_geometry: bool,
) -> _Request:
    """The options of :func:`open_workspace` after a TOML manifest (``path``) filled the
    ones not given; checks that the workspace path exists (and a zip is safe)."""
    settings: dict[str, Any] = {}
    manifest_fields = FieldMap()  # the manifest's field_map file, then its [fields]
    if path is not None and Path(path).suffix.lower() == ".toml":
        man = load_manifest(path)
        settings["manifest"] = str(path)
        path = man.get("workspace")
        if layers is None and "layers" in man:
            layers = man["layers"]
        if dem is None and "dem" in man:
            dem = man["dem"]
        if crs is None and "crs" in man:
            crs = man["crs"]
        repair_geometry = repair_geometry or bool(man.get("repair_geometry", False))
        if "field_map" in man:
            manifest_fields = FieldMap.from_toml(man["field_map"])
        if "fields" in man:
            inline = FieldMap.from_dict(man["fields"], origin="manifest [fields]")
            manifest_fields = manifest_fields.merge(inline)

    # the caller's map (the command line's --field-map and --field) wins over the
    # manifest's, entry by entry; neither replaces the other
    fmap = manifest_fields.merge(_coerce_field_map(field_map))

    base = Path(path).expanduser() if path is not None else None
    if base is not None and not base.exists():
        raise InputOpenError(f"Workspace '{base}' does not exist. Fix: check the path.")
    if base is not None and base.suffix.lower() == ".zip":
        _check_zip(base)
    return _Request(base, layers, fmap, dem, crs, repair_geometry, settings)


def _wanted_roles(roles: Iterable[str] | None) -> tuple[str, ...] | None:
    """The canonical roles ``open_workspace(roles=...)`` asks for, in schema order
    (``None``: every role); an unknown role is a usage error."""
    if roles is None:
        return None
    asked = {roles} if isinstance(roles, str) else set(roles)
    unknown = sorted(asked - set(schema.LAYERS))
    if unknown:
        raise UsageError(f"Unknown layer role '{unknown[0]}'. Select from {list(schema.LAYERS)}.")
    return tuple(r for r in schema.LAYERS if r in asked)


def _resolve_roles(
    layers: Mapping[str, str | Iterable[str]] | None,
    base: Path | None,
    wanted: tuple[str, ...] | None = None,
) -> dict[str, list[str]]:
    """Role -> source specs: the roles named in ``layers``, then every role a layer of
    ``base`` is named exactly like; only the ``wanted`` roles when given.  Raises when
    no role is left."""
    role_specs: dict[str, list[str]] = {}
    for role, spec in (layers or {}).items():
        if role not in schema.LAYERS:
            raise UsageError(f"Unknown layer role '{role}'. Select from {list(schema.LAYERS)}.")
        if wanted is not None and role not in wanted:
            continue
        role_specs[role] = [spec] if isinstance(spec, str) else list(spec)

    # roles not named explicitly: layers with exactly the canonical name
    if base is not None:
        available = list_source_layers(base)
        for role in schema.LAYERS if wanted is None else wanted:
            if role not in role_specs and role in available:
                role_specs[role] = [role]
        if (
            base.suffix.lower() not in (".gpkg", ".gdb", ".zip")
            and not base.is_dir()
            and not role_specs
        ):
            raise UsageError(
                f"'{base.name}' is a single layer; say which role it plays, e.g. "
                f"--layer structures={base.stem}"
            )
    if not role_specs:
        raise ValidationError(
            _single_error(
                "no_layers",
                str(base) if base else "workspace",
                "No canonical layers found (looked for layers named "
                + ", ".join(schema.LAYERS if wanted is None else wanted)
                + ").",
                "Name them with --layer ROLE=LAYER, e.g. --layer structures=storm_structures.",
            )
        )
    return role_specs


def _read_sources(
    role_specs: dict[str, list[str]], base: Path | None, report: QAReport
) -> tuple[dict[str, list[tuple[Source, pd.DataFrame]]], dict[str, str]]:
    """Read every source of every role: (role -> [(source, frame)], input path -> "")."""
    raw: dict[str, list[tuple[Source, pd.DataFrame]]] = {}
    inputs: dict[str, str] = {}
    for role, specs in role_specs.items():
        for spec in specs:
            src = _resolve_source(spec, base, role)
            df = read_source(src)
            inputs.setdefault(str(src.path.resolve()), "")
            raw.setdefault(role, []).append((src, df))
            if df.attrs.get("ms4map_encoding") == "latin1":
                report.warning(
                    "non_utf8_text",
                    src.label,
                    "Attribute text is not UTF-8; it was read as Latin-1 (Windows-1252 characters may differ).",
                    fix="Save the layer with UTF-8 text (or add a .cpg file naming its encoding).",
                )
    return raw, inputs


def _read_swmm_model(
    req: _Request, wanted: tuple[str, ...] | None, report: QAReport
) -> tuple[dict[str, list[str]], dict, dict[str, str], dict[str, Any]]:
    """An EPA SWMM model's layers as sources (``MODEL.inp::SECTION``), plus the layers
    ``layers`` names (files), plus its ``drainage_areas`` layer: (role specs, raw, inputs,
    extra layers).  The model has no CRS of its own: ``crs`` must name it."""
    assert req.base is not None
    if req.crs is None:
        raise UsageError(
            f"'{req.base.name}' is an EPA SWMM model, and a .inp file does not say which "
            "coordinate system its coordinates are in. Fix: name it with --crs EPSG:NNNN "
            "(e.g. --crs EPSG:2284 for Virginia State Plane South, US feet), or "
            "open_workspace(path, crs=...)."
        )
    crs = _user_crs(req.crs)
    model = read_swmm(req.base, crs=crs, report=report)
    role_specs: dict[str, list[str]] = {}
    raw: dict[str, list[tuple[Source, pd.DataFrame]]] = {}
    for role, items in model.layers.items():
        if wanted is not None and role not in wanted:
            continue
        for label, frame in items:
            raw.setdefault(role, []).append((Source(req.base, label, label), frame))
            role_specs.setdefault(role, []).append(f"{req.base.name}::{label}")
    others: dict[str, list[str]] = {}
    for role, spec in (req.layers or {}).items():
        if role not in schema.LAYERS:
            raise UsageError(f"Unknown layer role '{role}'. Select from {list(schema.LAYERS)}.")
        if wanted is None or role in wanted:
            others[role] = [spec] if isinstance(spec, str) else list(spec)
    more, inputs = _read_sources(others, req.base, report)
    for role, items in more.items():
        raw.setdefault(role, []).extend(items)
        role_specs.setdefault(role, []).extend(others[role])
    inputs[str(req.base.resolve())] = ""
    extra: dict[str, Any] = {}
    if wanted is None and model.drainage_areas is not None:
        extra["drainage_areas"] = model.drainage_areas
    report.note(
        f"EPA SWMM model {req.base.name}: FLOW_UNITS {model.flow_units}, LINK_OFFSETS "
        f"{model.link_offsets}; elevations in {model.length_unit}, sizes in inches."
    )
    return role_specs, raw, inputs, extra


def _working_crs(
    req: _Request, raw: dict, report: QAReport, *, no_dem: bool
) -> tuple[Path | None, CRS | None]:
    """The DEM's path and the working CRS (``--crs``, else the DEM's, else the data's);
    a geometry layer without a CRS is an error."""
    for role, items in raw.items():
        for src, df in items:
            if schema.LAYERS[role].geometry is None:
                continue
            if not isinstance(df, gpd.GeoDataFrame):
                continue  # reported as no_geometry by _canonicalise
            if df.crs is None:
                report.error(
                    "missing_crs",
                    src.label,
                    f"Layer '{src.label}' ({role}) has no coordinate reference system.",
                    fix="Define its CRS in your GIS (e.g. Define Projection) or save it as a "
                    "GeoPackage with a CRS; then re-run.",
                )

    dem_path = _find_dem(req.base, req.dem, no_dem)
    # numbers that cannot be in their declared CRS (UTM metres declared as degrees)
    check_coordinates(raw, report, dem_path=dem_path)
    dem_crs = None
    if dem_path is not None:
        dem_crs = _dem_crs(dem_path, report)
    return dem_path, _choose_crs(req.crs, dem_crs, raw, report)


def _canonical_layers(
    raw: dict, req: _Request, work_crs: CRS | None, report: QAReport
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, str]]]]:
    """Map fields, normalise values and reproject every source; the sources of one role
    become one layer.  Returns (role -> layer, role -> source -> mapping used)."""
    out_layers: dict[str, Any] = {}
    mapping_used: dict[str, dict[str, dict[str, str]]] = {}
    for role, items in raw.items():
        frames = []
        lenient = _columns_some_layers_lack(role, items, req.fmap, report)
        for src, df in items:
            canon, used = _canonicalise(
                role,
                src,
                df,
                req.fmap,
                report,
                repair_geometry=req.repair_geometry,
                lenient=lenient,
            )
            mapping_used.setdefault(role, {})[src.label] = used
            if canon is None:
                continue
            if (
                isinstance(canon, gpd.GeoDataFrame)
                and canon.crs is not None
                and work_crs is not None
            ):
                if not canon.crs.equals(work_crs):
                    canon = canon.to_crs(work_crs)
            frames.append(canon)
        if not frames:
            continue
        if isinstance(frames[0], gpd.GeoDataFrame):
            merged = gpd.GeoDataFrame(
                pd.concat(frames, ignore_index=True), geometry="geometry", crs=work_crs
            )
        else:
            merged = pd.concat(frames, ignore_index=True)
        out_layers[role] = merged
    return out_layers, mapping_used


def _attach_dem(
    dem_path: Path | tuple[Path, ...] | None,
    work_crs: CRS | None,
    out_layers: dict[str, Any],
    inputs: dict[str, str],
    report: QAReport,
) -> Dem | None:
    """Read the DEM onto the working CRS and check it covers the layers (or report
    ``no_dem``); adds its path to ``inputs``.  Nothing is read after an error."""
    dem_obj: Dem | None = None
    if dem_path is not None and work_crs is not None and not report.has_errors:
        dem_obj = read_dem(dem_path, crs=work_crs, report=report)
        for f in dem_path if isinstance(dem_path, tuple) else (dem_path,):
            inputs[str(f.resolve())] = ""
        _dem_overlap(dem_obj, out_layers, report)
        if dem_obj is not None and "parcels" in out_layers:
            _dem_coverage(dem_obj, out_layers["parcels"], report)
    elif dem_path is None:
        report.warning(
            "no_dem",
            "dem",
            "No DEM: overland flow cannot be traced; parcel drainage falls back to the nearest inlet.",
            fix="Pass --dem FILE or put <stem>_dem.tif beside the GeoPackage.",
        )
    return dem_obj


def _value_maps_used(fmap: FieldMap, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The field map's value maps of the roles read, ``{role: {column: {code: value}}}``
    (sorted, so the cache key's text is the same for the same maps): recorded in the
    settings, so the provenance names them and a changed value map changes
    :meth:`~ms4map.io.workspace.Workspace.fingerprint`."""
    out: dict[str, Any] = {}
    for role, canon in sorted(fmap.values):
        if role in raw and fmap.values[(role, canon)]:
            out.setdefault(role, {})[canon] = dict(sorted(fmap.values[(role, canon)].items()))
    return out


def _single_error(code: str, layer: str, message: str, fix: str) -> QAReport:
    r = QAReport()
    r.error(code, layer, message, fix=fix)
    return r


def _check_field_map_layers(
    fmap: FieldMap, raw: dict[str, list], wanted: tuple[str, ...] | None = None
) -> None:
    """A per-layer field-map table must name a source layer that feeds its role (of the
    ``wanted`` roles, when given)."""
    for role, layer in fmap.columns:
        if layer is None or (wanted is not None and role not in wanted):
            continue
        labels = [src.label for src, _df in raw.get(role, [])]
        if layer not in labels:
            raise UsageError(
                f"The field map has a table [{role}.{layer}], but no source layer '{layer}' "
                f"feeds '{role}' (source layers of {role}: {labels or 'none'}). "
                f"Fix: correct the layer name, or use [{role}] for every source layer."
            )


def _coerce_field_map(field_map: Any) -> FieldMap:
    if field_map is None:
        return FieldMap()
    if isinstance(field_map, FieldMap):
        return field_map
    if isinstance(field_map, (str, Path)):
        return FieldMap.from_toml(field_map)
    if isinstance(field_map, Mapping):
        return FieldMap.from_dict(dict(field_map))
    raise UsageError(
        f"field_map must be a FieldMap, a dict or a TOML path, got {type(field_map).__name__}."
    )
