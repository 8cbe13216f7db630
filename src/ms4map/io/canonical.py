"""Column mapping, value maps and per-role normalisers: a source layer as its canonical layer."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..core import schema
from ..core.nulls import is_blank_or_null_marker
from ..core.qa import QAReport
from . import aliases
from .checks import _check_geometries
from .fieldmap import FieldMap
from .sources import Source


def _find_column(df: pd.DataFrame, names: Iterable[str]) -> str | None:
    lower = {str(c).lower(): c for c in df.columns}
    for n in names:
        if n in df.columns:
            return n
        if n.lower() in lower:
            return lower[n.lower()]
    return None


def _closest_columns(col: str, columns: Iterable[Any], n: int = 3) -> list[str]:
    """Column names closest to ``col`` (case-insensitive), for a typo's fix."""
    names = [str(c) for c in columns if str(c) != "geometry"]
    lower = {c.lower(): c for c in names}
    hits = difflib.get_close_matches(col.lower(), list(lower), n=n, cutoff=0.5)
    return [lower[h] for h in hits]


def _columns_some_layers_lack(
    role: str, items: list[tuple[Source, Any]], fmap: FieldMap, report: QAReport
) -> set[str]:
    """Role-wide field-map entries (``--field ROLE.CANON=COLUMN``) whose column some but
    not all of the role's source layers have: a warning naming the layers without it
    (the column is empty there). Returns those canonical names; a column no source
    layer has stays an error (reported per layer by :func:`_canonicalise`)."""
    shared = fmap.columns.get((role, None), {})
    out: set[str] = set()
    if len(items) < 2 or not shared:
        return out
    for canon, col in shared.items():
        # layers whose own entry for canon overrides the role-wide one do not count
        concerned = [
            (src, df)
            for src, df in items
            if isinstance(df, pd.DataFrame) and canon not in fmap.columns.get((role, src.label), {})
        ]
        has = [src.label for src, df in concerned if col in df.columns]
        lack = [src.label for src, df in concerned if col not in df.columns]
        if has and lack:
            out.add(canon)
            report.warning(
                "column_missing_in_some_layers",
                ", ".join(lack),
                f"The field map says {role}.{canon} comes from column '{col}', which "
                f"{'layer' if len(lack) == 1 else 'layers'} {', '.join(repr(x) for x in lack)} "
                f"{'does' if len(lack) == 1 else 'do'} not have (only {', '.join(map(repr, has))} "
                f"{'has' if len(has) == 1 else 'have'} it); {role}.{canon} is empty there.",
                column=col,
                fix=f"Nothing to do if those layers have no such column; otherwise map theirs "
                f"with --field {role}.{lack[0]}.{canon}=COLUMN.",
            )
    return out


#: Layers where an empty layer is a valid answer ("none"), with what the town would add.
_NONE_MEANS_EMPTY = {
    "impairments": "303(d) listings for its waters",
    "tmdl_watersheds": "TMDL watersheds",
}


def _canonicalise(
    role: str,
    src: Source,
    df: pd.DataFrame,
    fmap: FieldMap,
    report: QAReport,
    *,
    repair_geometry: bool,
    lenient: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[pd.DataFrame | None, dict[str, str]]:
    """One source layer as the canonical layer of ``role``: checked (geometry, features),
    its columns mapped, values normalised and geometries checked.  Returns the layer (or
    ``None`` when it cannot be used) and the mapping used (canonical -> source column)."""
    spec = schema.LAYERS[role]
    label = src.label
    is_geo = spec.geometry is not None
    if not _usable_layer(role, label, df, report):
        return None, {}
    used = _map_columns(role, label, df, fmap, report, lenient=lenient)
    _check_required(role, label, df, used, report)
    out = _canonical_frame(role, label, df, used)
    _normalise_values(role, label, out, used, fmap, report=report)
    if is_geo:
        gdf = gpd.GeoDataFrame(out, geometry=df.geometry.values, crs=df.crs)
        gdf = _check_geometries(role, label, gdf, report, repair_geometry)
        return gdf, used
    return out, used


def _usable_layer(role: str, label: str, df: pd.DataFrame, report: QAReport) -> bool:
    """Whether a source layer can be read as ``role``: it has geometry where the role
    needs it, and features unless an empty layer means "none" (reported either way)."""
    spec = schema.LAYERS[role]
    if spec.geometry is not None:
        if not isinstance(df, gpd.GeoDataFrame) or df.geometry.name not in df.columns:
            report.error(
                "no_geometry",
                label,
                f"Layer '{label}' ({role}) has no geometry.",
                fix=f"Give a spatial layer of {spec.geometry}s.",
            )
            return False
    if len(df) == 0 and role in _NONE_MEANS_EMPTY:
        # an empty 303(d) list or TMDL layer says "there is none": a valid answer
        report.info(
            "empty_layer",
            label,
            f"Layer '{label}' ({role}) has no features: read as 'the town has none'.",
            fix=f"If the town has {_NONE_MEANS_EMPTY[role]}, add them to the layer.",
        )
    elif len(df) == 0:
        report.error(
            "empty_layer",
            label,
            f"Layer '{label}' ({role}) has no features.",
            fix="Check that the right layer was named, or leave the role out.",
        )
        return False
    return True


def _map_columns(
    role: str,
    label: str,
    df: pd.DataFrame,
    fmap: FieldMap,
    report: QAReport,
    *,
    lenient: set[str],
) -> dict[str, str]:
    """Canonical -> source column of one layer: the field map's choices (reported when the
    column is absent or records an answer), else the alias tables'."""
    user = fmap.for_layer(role, label)
    used: dict[str, str] = {}
    for canon in schema.LAYERS[role].column_names:
        if canon in user:
            col = user[canon]
            if _user_column_usable(
                role, label, df, fmap, report, canon=canon, col=col, lenient=lenient
            ):
                used[canon] = col
            continue
        found = _find_column(df, aliases.ALIASES.get(role, {}).get(canon, ()))
        if found is not None and found not in schema.ANSWER_COLUMNS and found not in used.values():
            used[canon] = found
    return used


def _user_column_usable(
    role: str,
    label: str,
    df: pd.DataFrame,
    fmap: FieldMap,
    report: QAReport,
    *,
    canon: str,
    col: str,
    lenient: set[str],
) -> bool:
    """Whether the column the field map names for ``role.canon`` can be used: an absent
    one is an error (unless another source layer has it, ``lenient``), an answer column
    a warning."""
    if col not in df.columns:
        layer_specific = canon in fmap.columns.get((role, label), {})
        if canon in lenient and not layer_specific:
            return False  # another source layer has it: warned once for the role
        close = _closest_columns(col, df.columns)
        report.error(
            "missing_column",
            label,
            f"The field map says {role}.{canon} comes from column '{col}', which layer "
            f"'{label}' does not have.",
            column=col,
            fix=(
                f"Did you mean {' or '.join(repr(c) for c in close)}? "
                f"Use --field {role}.{canon}={close[0]}."
                if close
                else f"Use one of: {[c for c in df.columns if c != 'geometry']}."
            ),
        )
        return False
    if col in schema.ANSWER_COLUMNS:
        report.warning(
            "answer_column_mapped",
            label,
            f"Column '{col}' records someone's answer about where things drain; it is "
            f"not used as {role}.{canon}.",
            column=col,
            fix="Map another column, or none.",
        )
        return False
    return True


def _check_required(
    role: str, label: str, df: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """An error for each required column of ``role`` that no source column feeds."""
    for col in schema.LAYERS[role].columns:
        if col.required and col.name not in used:
            report.error(
                "missing_column",
                label,
                f"Layer '{label}' ({role}) has no column for required '{col.name}'.",
                column=col.name,
                fix=f"Map it: --field {role}.{col.name}=YOUR_COLUMN (columns: "
                f"{[c for c in df.columns if c != 'geometry'][:30]}).",
            )


def _canonical_frame(role: str, label: str, df: pd.DataFrame, used: dict[str, str]) -> pd.DataFrame:
    """The canonical columns of ``role`` (missing ones empty), the source layer and feature
    number, then every unmapped source column (``src_`` prefixed where a name is taken);
    no geometry."""
    spec = schema.LAYERS[role]
    out = pd.DataFrame(index=df.index)
    for canon in spec.column_names:
        out[canon] = (
            df[used[canon]] if canon in used else pd.Series(pd.NA, index=df.index, dtype=object)
        )
    out["src_layer"] = label
    out["src_fid"] = np.arange(1, len(df) + 1)
    mapped_sources = set(used.values())
    geometry = df.geometry.name if spec.geometry is not None else None
    for c in df.columns:
        if c == geometry or c in mapped_sources:
            continue
        name = c if c not in out.columns else f"src_{c}"
        out[name] = df[c]
    return out


def _str_or_na(s: pd.Series) -> pd.Series:
    return aliases.text_or_na(s)


def _normalise_values(
    role: str,
    label: str,
    out: pd.DataFrame,
    used: dict[str, str],
    fmap: FieldMap,
    *,
    report: QAReport,
) -> None:
    """Normalise the canonical columns of ``out`` in place: the field map's value maps,
    text columns, the role's own columns (codes, sizes, elevations ...), the id column."""
    _apply_value_maps(role, out, fmap)
    id_col = schema.LAYERS[role].id_column
    for c in schema.LAYERS[role].columns:
        if c.dtype == "str" and c.values is None:
            out[c.name] = _str_or_na(out[c.name])
    normalise = _ROLE_NORMALISERS.get(role)
    if normalise is not None:
        normalise(label, out, used, report)
    if id_col is not None and id_col in out.columns:
        out[id_col] = _str_or_na(out[id_col])


def _apply_value_maps(role: str, out: pd.DataFrame, fmap: FieldMap) -> None:
    """Replace the values of each column of ``role`` the field map has a value map for
    (blanks, null markers and unmapped values are kept)."""
    for col in schema.LAYERS[role].columns:
        canon = col.name
        vm = fmap.value_map(role, canon)
        if vm:
            keep = out[canon]
            mapped = aliases.map_unique(
                keep,
                lambda v, vm=vm: vm.get(str(v).strip(), v) if not is_blank_or_null_marker(v) else v,
            )
            out[canon] = mapped.where(keep.notna(), keep)


def _normalise_structures(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Structure kinds from their codes (unknown ones 'other', reported) and elevations."""
    kinds = pd.Series(pd.unique(out["kind"].astype(object)), dtype=object)
    unknown = sorted({str(v) for v in kinds if not aliases.is_known_structure_code(v)})
    out["kind"] = aliases.map_unique(out["kind"], aliases.normalize_structure_kind)
    out["kind"] = out["kind"].where(out["kind"].notna(), "other")
    if unknown:
        _unread_values(
            report,
            "unknown_kind_code",
            label,
            used,
            column="kind",
            message=f"Structure type codes not in the alias table were mapped to 'other': {unknown[:20]}.",
            count=int(sum(1 for v in out["kind"] if v == "other")),
            fix='Add a value map, e.g. [structures.values.kind] CODE = "catch_basin".',
        )
    for c in ("rim_elev", "invert_elev"):
        out[c] = aliases.normalize_elevations(out[c])


def _normalise_conveyances(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Conveyance kinds (default from the layer name), inverts, pipe sizes (span and
    rise; sizes not understood reported), flow direction and end ids."""
    default_kind = _kind_from_layer_name(label)
    out["kind"] = aliases.map_unique(
        out["kind"], lambda v: aliases.normalize_conveyance_kind(v, default=default_kind)
    )
    for c in ("us_invert", "ds_invert"):
        out[c] = aliases.normalize_elevations(out[c])
    sizes = aliases.map_unique(out["diameter_in"], aliases.parse_pipe_size)
    parseable = aliases.map_unique(out["diameter_in"], aliases.is_parseable_pipe_size)
    bad = out["diameter_in"][~parseable.to_numpy(dtype=bool)].astype(str).tolist()
    if bad:
        _unread_values(
            report,
            "unparsed_pipe_size",
            label,
            used,
            column="diameter_in",
            message=f"Pipe sizes not understood were left missing: {sorted(set(bad))[:10]}.",
            count=len(bad),
            fix="Use inches, e.g. 15'' or 60''X42'' (span x rise).",
        )
    rise_given = pd.to_numeric(
        aliases.map_unique(out["rise_in"], lambda v: aliases.parse_pipe_size(v)[0]),
        errors="coerce",
    ).to_numpy(dtype=float, na_value=np.nan)
    span = aliases.map_unique(sizes, lambda t: t[0] if t else None)
    rise = aliases.map_unique(sizes, lambda t: t[1] if t else None)
    out["diameter_in"] = pd.to_numeric(span, errors="coerce").astype(float)
    rise_f = pd.to_numeric(rise, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    out["rise_in"] = np.where(np.isnan(rise_given), rise_f, rise_given)
    out["flow_dir"] = aliases.map_unique(out["flow_dir"], aliases.normalize_flow_dir)
    for c in ("from_id", "to_id"):
        out[c] = _str_or_na(out[c])


def _normalise_outfalls(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Outfall status words."""
    out["status"] = aliases.map_unique(out["status"], aliases.normalize_outfall_status)


def _normalise_parcels(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Sewer service, the three-digit property class and acres."""
    out["sewer"] = aliases.map_unique(out["sewer"], aliases.normalize_sewer)
    out["prop_class"] = aliases.map_unique(
        out["prop_class"],
        lambda v: pd.NA if is_blank_or_null_marker(v) else str(v).strip().split(".")[0].zfill(3),
    )
    out["acres"] = pd.to_numeric(out["acres"], errors="coerce").astype(float)


def _normalise_impairments(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """The listing category as text and the list year as an integer."""
    out["category"] = _str_or_na(out["category"])
    out["list_year"] = pd.to_numeric(out["list_year"], errors="coerce").astype("Int64")


def _normalise_tmdl_watersheds(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Whether stormwater is a source, as a boolean."""
    out["stormwater_source"] = aliases.map_unique(out["stormwater_source"], _to_bool)


#: Role -> the normalisation of its own columns, ``(label, out, used, report)``.
_ROLE_NORMALISERS: dict[str, Callable[[str, pd.DataFrame, dict[str, str], QAReport], None]] = {
    "structures": _normalise_structures,
    "conveyances": _normalise_conveyances,
    "outfalls": _normalise_outfalls,
    "parcels": _normalise_parcels,
    "impairments": _normalise_impairments,
    "tmdl_watersheds": _normalise_tmdl_watersheds,
}


def _to_bool(v: Any) -> Any:
    """A ``stormwater_source`` cell as read: True, False, or ``pd.NA`` when blank or
    unrecognised (not known: Condition A is then undetermined, never a "no")."""
    out = aliases.stormwater_source_value(v)
    return pd.NA if out is None else out


def _kind_from_layer_name(label: str) -> str:
    low = label.lower()
    for word, kind in aliases.LAYER_NAME_KIND_HINTS.items():
        if word in low:
            return kind
    return "pipe"


def _unread_values(
    report: QAReport,
    code: str,
    label: str,
    used: Mapping[str, str],
    *,
    column: str,
    message: str,
    count: int,
    fix: str,
) -> None:
    """Note values of canonical ``column`` that were not understood, when the column
    came from the user's layer (``used``: canonical -> source column)."""
    if column in used:
        report.info(code, label, message, column=used[column], count=count, fix=fix)
