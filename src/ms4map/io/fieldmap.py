"""User field maps: which source column feeds which canonical column.

Three ways to say it, all equivalent:

* command line: ``--field ROLE[.SOURCE_LAYER].COLUMN=SOURCE`` (repeatable), e.g.
  ``--field structures.struct_id=ASSET_NO`` or
  ``--field conveyances.ditches.conv_id=Ditch_ID``;
* a TOML file (``--field-map FILE``) with a table per role, optionally a sub-table per
  source layer, and value maps for codes::

      [structures]
      struct_id = "ASSET_NO"

      [structures.values.kind]      # code -> canonical value
      "CB-2" = "catch_basin"

      [conveyances.ditches]         # only for source layer "ditches"
      conv_id = "Ditch_ID"

* a Python ``dict`` of the same shape as the TOML.

The mapping actually used (aliases included) is reported back in the same forms by
:func:`mapping_to_toml` and :func:`mapping_to_cli`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputOpenError, UsageError
from ..core.schema import LAYERS

__all__ = ["FieldMap", "parse_field_option", "mapping_to_toml", "mapping_to_cli"]


@dataclass
class FieldMap:
    """A user field map.

    Attributes
    ----------
    columns : dict
        ``{(role, source_layer_or_None): {canonical: source_column}}``.
    values : dict
        ``{(role, canonical): {source_value: canonical_value}}``.
    """

    columns: dict[tuple[str, str | None], dict[str, str]] = field(default_factory=dict)
    values: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, origin: str = "field map") -> FieldMap:
        fm = cls()
        for role, table in data.items():
            _check_role(role, origin)
            if not isinstance(table, dict):
                raise UsageError(
                    f"{origin}: [{role}] must be a table of canonical column = source column; "
                    f"got {type(table).__name__}."
                )
            for key, val in table.items():
                if key == "values":
                    _add_values(fm, role, val, origin)
                elif isinstance(val, dict):  # per source layer
                    for canon, src in val.items():
                        if canon == "values":
                            _add_values(fm, role, src, origin)
                            continue
                        fm.set(role, canon, src, source_layer=key, origin=origin)
                else:
                    fm.set(role, key, val, origin=origin)
        return fm

    @classmethod
    def from_toml(cls, path: str | Path) -> FieldMap:
        p = Path(path)
        if not p.exists():
            raise InputOpenError(f"Field map file '{p}' does not exist. Fix: check the path.")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"Field map file '{p}' is not valid TOML: {exc}") from None
        return cls.from_dict(data, origin=f"field map '{p.name}'")

    def set(
        self,
        role: str,
        canonical: str,
        source: Any,
        *,
        source_layer: str | None = None,
        origin: str = "field map",
    ) -> None:
        _check_role(role, origin)
        spec = LAYERS[role]
        if canonical not in spec.column_names:
            raise UsageError(
                f"{origin}: '{canonical}' is not a column of layer '{role}'. "
                f"Select from {spec.column_names}."
            )
        if not isinstance(source, str) or not source:
            raise UsageError(f"{origin}: {role}.{canonical} must name a source column (text).")
        self.columns.setdefault((role, source_layer), {})[canonical] = source

    def merge(self, other: FieldMap) -> FieldMap:
        """A new map with ``other``'s entries overriding this one's."""
        out = FieldMap(
            {k: dict(v) for k, v in self.columns.items()},
            {k: dict(v) for k, v in self.values.items()},
        )
        for k, v in other.columns.items():
            out.columns.setdefault(k, {}).update(v)
        for k, v in other.values.items():
            out.values.setdefault(k, {}).update(v)
        return out

    # -- lookup ---------------------------------------------------------------------------
    def for_layer(self, role: str, source_layer: str) -> dict[str, str]:
        """Canonical -> source column for one source layer (layer-specific entries win)."""
        out = dict(self.columns.get((role, None), {}))
        out.update(self.columns.get((role, source_layer), {}))
        return out

    def value_map(self, role: str, canonical: str) -> dict[str, str]:
        return self.values.get((role, canonical), {})

    def is_empty(self) -> bool:
        return not self.columns and not self.values


def _check_role(role: str, origin: str) -> None:
    if role not in LAYERS:
        raise UsageError(f"{origin}: unknown layer role '{role}'. Select from {list(LAYERS)}.")


def _add_values(fm: FieldMap, role: str, table: Any, origin: str) -> None:
    if not isinstance(table, dict):
        raise UsageError(
            f"{origin}: [{role}.values] must hold tables such as [{role}.values.kind]."
        )
    for canon, mapping in table.items():
        if canon not in LAYERS[role].column_names or not isinstance(mapping, dict):
            raise UsageError(
                f"{origin}: [{role}.values.{canon}] must be a table of source code = canonical "
                f"value for a column of '{role}' ({LAYERS[role].column_names})."
            )
        fm.values.setdefault((role, canon), {}).update({str(k): str(v) for k, v in mapping.items()})


def parse_field_option(text: str) -> tuple[str, str | None, str, str]:
    """Parse ``ROLE[.SOURCE_LAYER].COLUMN=SOURCE`` into its four parts.

    Examples
    --------
    >>> parse_field_option("conveyances.ditches.conv_id=Ditch_ID")
    ('conveyances', 'ditches', 'conv_id', 'Ditch_ID')
    """
    if "=" not in text:
        raise UsageError(
            f"--field '{text}' needs the form ROLE[.SOURCE_LAYER].COLUMN=SOURCE, "
            "e.g. --field structures.struct_id=ASSET_NO"
        )
    left, source = text.split("=", 1)
    parts = left.strip().split(".")
    if len(parts) < 2 or not source.strip():
        raise UsageError(
            f"--field '{text}' needs the form ROLE[.SOURCE_LAYER].COLUMN=SOURCE, "
            "e.g. --field structures.struct_id=ASSET_NO"
        )
    role, column = parts[0], parts[-1]
    layer = ".".join(parts[1:-1]) or None
    return role, layer, column, source.strip()


def mapping_to_toml(mapping: dict[str, dict[str, dict[str, str]]]) -> str:
    """Render ``{role: {source_layer: {canonical: source}}}`` as a field-map TOML file."""
    lines: list[str] = []
    for role, per_layer in mapping.items():
        for layer, cols in per_layer.items():
            if not cols:
                continue
            lines.append(f"[{role}.{_toml_key(layer)}]")
            lines += [f'{canon} = "{src}"' for canon, src in cols.items()]
            lines.append("")
    return "\n".join(lines)


def mapping_to_cli(mapping: dict[str, dict[str, dict[str, str]]]) -> list[str]:
    """The same mapping as ``--field`` options."""
    return [
        f"--field {role}.{layer}.{canon}={src}"
        for role, per_layer in mapping.items()
        for layer, cols in per_layer.items()
        for canon, src in cols.items()
    ]


def _toml_key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum()
    return key if bare else '"' + key.replace('"', '\\"') + '"'
