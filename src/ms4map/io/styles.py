"""Layer styles: one source of truth for the app's map and the QGIS styles.

The app's map (:mod:`ms4map.outputs.maps`) reads its colours and classes from here, and
every GeoPackage ms4map writes (:func:`ms4map.io.write_outputs`) gets, for each
spatial layer, a QGIS style built from the same table: a QML document (what
QGIS reads) and an SLD document (for other tools), stored in the GeoPackage's
``layer_styles`` table in QGIS's own schema with ``useAsDefault`` set, so QGIS
draws the layer styled when it is opened.

Public names
------------
:data:`PARCEL_COLOURS` ... :data:`MS4_AREA_COLOUR`  the app's colours by category
:class:`StyleClass`, :class:`LayerStyle`              one legend entry / one layer's style
:data:`LAYER_STYLES`                                  style of each layer ms4map writes or draws
:func:`style_for`                                     the style of a layer name (a grey default)
:func:`qml`, :func:`sld`                              the QGIS / SLD documents of a style
:func:`write_layer_styles`                            fill ``layer_styles`` of a GeoPackage
:func:`read_layer_styles`                             its rows (for tests and ``ms4map export``)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "ensure_styles_table",
    "CONVEYANCE_COLOURS",
    "IMPAIRED_COLOURS",
    "LAYER_STYLES",
    "MS4_AREA_COLOUR",
    "OUTFALL_COLOURS",
    "PARCEL_COLOURS",
    "STRUCTURE_COLOURS",
    "LayerStyle",
    "StyleClass",
    "qml",
    "read_layer_styles",
    "sld",
    "style_for",
    "write_layer_styles",
]

# -- the app's colours (ms4map.outputs.maps reads these) -----------------------------------------
PARCEL_COLOURS: dict[str, dict[str, str]] = {
    "drainage": {
        "MS4": "#1f78b4",
        "direct to water": "#33a02c",
        "internally drained": "#b15928",
        "unknown": "#999999",
        "not computed": "#d9d9d9",
    },
    "septic": {
        "septic violation": "#67000d",
        "septic, special condition": "#d7301f",
        "septic, tributary to MS4": "#fc8d59",
        "septic, tributary not known": "#bcbddc",
        "septic, not tributary": "#fdd49e",
        "public sewer / unknown": "#e0e0e0",
        "not computed": "#d9d9d9",
    },
    "condition_a": {
        "Condition A": "#d7301f",
        "undetermined": "#fdae6b",
        "not Condition A": "#74c476",
        "not computed": "#d9d9d9",
    },
}
STRUCTURE_COLOURS = {
    "catch_basin": "#1f78b4",
    "inlet": "#a6cee3",
    "manhole": "#6a3d9a",
    "junction": "#cab2d6",
    "headwall": "#ff7f00",
    "outfall": "#e31a1c",
    "cleanout": "#b2df8a",
    "bmp": "#33a02c",
    "other": "#666666",
}
CONVEYANCE_COLOURS = {
    "pipe": "#08519c",
    "culvert": "#6a51a3",
    "ditch": "#41ab5d",
    "swale": "#a1d99b",
    "channel": "#238b45",
    "connector": "#969696",
    "other": "#666666",
}
OUTFALL_COLOURS = {
    "unknown": "#969696",
    "not_flowing": "#1a9850",
    "flowing": "#fee08b",
    "suspect": "#fc8d59",
    "illicit": "#d73027",
    "eliminated": "#4575b4",
}
IMPAIRED_COLOURS = {
    "nutrients": "#238443",
    "pathogens": "#88419d",
    "sediment": "#8c510a",
    "toxics (PCBs, metals, ...)": "#e7298a",
    "other pollutant": "#d95f02",
}
WATER_COLOUR = "#4a90d9"
TMDL_COLOUR = "#e6ab02"
SEWERSHED_COLOUR = "#7570b3"
SEWER_DISTRICT_COLOUR = "#66a61e"
#: The MS4-area outline: dark grey, dashed (not the pink of "toxics" or the magenta path).
MS4_AREA_COLOUR = "#252525"
#: Outline of parcel polygons and of point markers on the map.
PARCEL_OUTLINE = "#555555"
POINT_OUTLINE = "#222222"
#: A structure or conveyance whose outfall the storm network cannot tell (method
#: ``ambiguous``): its map category, drawn grey and dashed (uncertain), whatever its kind.
AMBIGUOUS_CATEGORY = "outfall ambiguous (uncertain)"
AMBIGUOUS_COLOUR = "#8c8c8c"
AMBIGUOUS_DASH = "6 4"
#: Outfalls the network guessed from where the mapped lines end (not in the outfalls layer).
GUESSED_OUTFALL_CATEGORY = "outfall guessed from a line end (check in the field)"
GUESSED_OUTFALL_COLOUR = "#ffffff"
GUESSED_OUTFALL_DASH = "3 3"
#: The drainage target kinds of the parcel table, as the app's drainage classes.
DRAINAGE_CLASS_OF_TARGET = {
    "inlet": "MS4",
    "conveyance": "MS4",
    "water_direct": "direct to water",
    "depression": "internally drained",
}

#: Leaflet draws widths in screen pixels; QGIS styles are in millimetres (96 dpi).
PX_MM = 25.4 / 96


#: The ``method`` of a septic parcel none of whose runoff is known to enter the MS4 and
#: whose drainage is not known (in part, or at all): tributary not known, not "no".
SEPTIC_TRIBUTARY_NOT_KNOWN = ("unknown_drainage", "no_drainage")


@dataclass(frozen=True)
class StyleClass:
    """One legend entry: a label, a colour and when a feature belongs to it.

    ``when`` is a tuple of ``(column, values)``: the feature belongs when every
    column holds one of its values.  The classes of a layer are tried in order
    (the first that matches wins); an empty ``when`` takes every other feature.
    """

    label: str
    colour: str
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()


@dataclass(frozen=True)
class LayerStyle:
    """How one layer is drawn: title, geometry kind, classes and line/fill settings.

    ``weight`` and ``radius`` are in screen pixels (Leaflet's units);
    ``outline`` is the outline colour of polygons (``None``: the class colour).
    """

    title: str
    geom: str  # "polygon", "line" or "point"
    classes: tuple[StyleClass, ...]
    fill_opacity: float = 0.35
    weight: float = 1.0
    radius: float = 4.0
    dash: str | None = None
    outline: str | None = None
    line_opacity: float = 0.9

    @property
    def single(self) -> bool:
        return len(self.classes) == 1 and not self.classes[0].when


def _label(category: str) -> str:
    return category.replace("_", " ")  # as the app's legend writes a category


def by_column(column: str, colours: dict[str, str], *, other: str | None = "other") -> tuple:
    """Classes of ``colours`` (value -> colour) on ``column``; ``other`` takes the rest."""
    out = [StyleClass(_label(v), c, ((column, (v,)),)) for v, c in colours.items() if v != other]
    if other is not None and other in colours:
        out.append(StyleClass(_label(other), colours[other]))
    return tuple(out)


def _single(label: str, colour: str) -> tuple[StyleClass, ...]:
    return (StyleClass(label, colour),)


_PD, _PS, _PC = (PARCEL_COLOURS[k] for k in ("drainage", "septic", "condition_a"))


def _parcel(title: str, classes: tuple[StyleClass, ...]) -> LayerStyle:
    # parcels as the app draws them: fill 0.45, grey outline 0.6 px
    return LayerStyle(
        title, "polygon", classes, fill_opacity=0.45, weight=0.6, outline=PARCEL_OUTLINE
    )


def _marker(title: str, classes: tuple[StyleClass, ...]) -> LayerStyle:
    # QA findings and IDDE records: opaque points of 5 px
    return LayerStyle(title, "point", classes, fill_opacity=1.0, radius=5.0)


def _drainage_classes(column: str) -> tuple[StyleClass, ...]:
    groups: dict[str, list[str]] = {}
    for kind, label in DRAINAGE_CLASS_OF_TARGET.items():
        groups.setdefault(label, []).append(kind)
    out = [StyleClass(lab, _PD[lab], ((column, tuple(kinds)),)) for lab, kinds in groups.items()]
    return (*out, StyleClass("unknown", _PD["unknown"]))


#: The style of every layer ms4map writes (result GeoPackages) or draws (the app's
#: workspace layers), by layer name.  The app's own layers use the app's settings.
LAYER_STYLES: dict[str, LayerStyle] = {
    # -- the workspace layers the app draws ---------------------------------------------
    "parcels": _parcel("Parcels", _single("not computed", _PD["not computed"])),
    "structures": LayerStyle(
        "Structures",
        "point",
        by_column("kind", STRUCTURE_COLOURS),
        fill_opacity=0.9,
        radius=3.5,
    ),
    "conveyances": LayerStyle(
        "Conveyances", "line", by_column("kind", CONVEYANCE_COLOURS), weight=2.0
    ),
    "outfalls": LayerStyle(
        "Outfalls",
        "point",
        (*by_column("status", OUTFALL_COLOURS, other="unknown"),),
        fill_opacity=1.0,
        radius=6.0,
        weight=1.5,
    ),
    "waterbodies": LayerStyle(
        "Waters", "polygon", _single("water", WATER_COLOUR), fill_opacity=0.4, weight=2.0
    ),
    "tmdl_watersheds": LayerStyle(
        "TMDL watersheds",
        "polygon",
        _single("TMDL watershed", TMDL_COLOUR),
        fill_opacity=0.08,
        weight=2.5,
    ),
    "sewersheds": LayerStyle(
        "Sewersheds",
        "polygon",
        _single("sewershed", SEWERSHED_COLOUR),
        fill_opacity=0.05,
        weight=2.0,
    ),
    "ms4_area": LayerStyle(
        "MS4 area",
        "polygon",
        _single("MS4 area", MS4_AREA_COLOUR),
        fill_opacity=0.03,
        weight=2.0,
        dash="8 4",
    ),
    "sewer_districts": LayerStyle(
        "Sewer districts",
        "polygon",
        _single("Sewer districts", SEWER_DISTRICT_COLOUR),
        fill_opacity=0.03,
        weight=2.0,
    ),
    # -- result layers: the app's parcel colourings ---------------------------------------
    "screening": _parcel(
        "Condition A screening",
        (
            StyleClass("Condition A", _PC["Condition A"], (("condition_a_text", ("yes",)),)),
            StyleClass(
                "undetermined", _PC["undetermined"], (("condition_a_text", ("undetermined",)),)
            ),
            StyleClass("not Condition A", _PC["not Condition A"], (("condition_a_text", ("no",)),)),
            StyleClass("not computed", _PC["not computed"]),
        ),
    ),
    "septic": _parcel(
        "Septic parcels",
        (
            StyleClass("septic violation", _PS["septic violation"], (("violation", (True,)),)),
            StyleClass(
                "septic, special condition",
                _PS["septic, special condition"],
                (("special_condition", (True,)),),
            ),
            StyleClass(
                "septic, tributary to MS4",
                _PS["septic, tributary to MS4"],
                (("flagged", (True,)),),
            ),
            StyleClass(
                "septic, tributary not known",
                _PS["septic, tributary not known"],
                (("method", SEPTIC_TRIBUTARY_NOT_KNOWN),),
            ),
            StyleClass("septic, not tributary", _PS["septic, not tributary"]),
        ),
    ),
    "inlet_catchments": LayerStyle(
        "Inlet catchments", "polygon", _drainage_classes("target_kind"), fill_opacity=0.2
    ),
    # ``ms4map drainage``'s parcels with their answer (pipeline.parcel_drainage_map)
    "parcel_drainage_map": _parcel("Parcel drainage", _drainage_classes("target_kind")),
    # -- result layers the app does not draw: the same palette -----------------------------
    "structure_outfalls": LayerStyle(
        "Structures by outfall method",
        "point",
        (
            StyleClass(
                "drains to an outfall",
                STRUCTURE_COLOURS["catch_basin"],
                (
                    (
                        "method",
                        ("outfalls_layer", "outfall_structure", "terminal_at_water", "split"),
                    ),
                ),
            ),
            StyleClass(
                "drains to a guessed outlet",
                STRUCTURE_COLOURS["headwall"],
                (
                    (
                        "method",
                        (
                            "headwall_at_end",
                            "terminal_at_structure",
                            "terminal_loose_end",
                            "assumed_lateral",
                        ),
                    ),
                ),
            ),
            StyleClass("no outfall", OUTFALL_COLOURS["illicit"]),
        ),
        fill_opacity=0.9,
        radius=3.5,
    ),
    "network_qa": _marker(
        "Network QA",
        (
            StyleClass("error", "#d73027", (("level", ("error",)),)),
            StyleClass("warning", "#fdae61", (("level", ("warning",)),)),
            StyleClass("info", "#74add1"),
        ),
    ),
    "field_check": _marker(
        "Field check",
        (
            StyleClass("loose end", "#ff7f00", (("what", ("loose_end",)),)),
            StyleClass("terminal at structure", "#6a3d9a", (("what", ("terminal_at_structure",)),)),
            StyleClass("unassigned structure", "#d73027"),
        ),
    ),
    # -- IDDE records ----------------------------------------------------------------------
    "outfall_status": LayerStyle(
        "Outfall status",
        "point",
        by_column("status", OUTFALL_COLOURS, other="unknown"),
        fill_opacity=1.0,
        radius=6.0,
        weight=1.5,
    ),
    "inspections": _marker(
        "Inspections",
        (
            StyleClass(
                "dry-weather flow", OUTFALL_COLOURS["flowing"], (("flow_present", (True,)),)
            ),
            StyleClass("no flow", OUTFALL_COLOURS["not_flowing"], (("flow_present", (False,)),)),
            StyleClass("not recorded", OUTFALL_COLOURS["unknown"]),
        ),
    ),
    "samples": _marker(
        "Track-down samples",
        (
            StyleClass("flow found", OUTFALL_COLOURS["illicit"], (("result", ("flow",)),)),
            StyleClass("clean", OUTFALL_COLOURS["not_flowing"], (("result", ("clean",)),)),
            StyleClass("not recorded", OUTFALL_COLOURS["unknown"]),
        ),
    ),
    "cases": LayerStyle(
        "IDDE cases",
        "point",
        (
            StyleClass("closed", OUTFALL_COLOURS["unknown"], (("status", ("closed",)),)),
            StyleClass("open", OUTFALL_COLOURS["illicit"]),
        ),
        fill_opacity=1.0,
        radius=7.0,
    ),
}


def style_for(layer: str, geom: str) -> LayerStyle:
    """The style of ``layer`` (a grey single symbol for a layer not listed)."""
    st = LAYER_STYLES.get(layer)
    if st is not None:
        return st
    return LayerStyle(layer, geom, _single(layer, "#888888"), fill_opacity=0.3)


# -- QML ---------------------------------------------------------------------------------
def _rgba(colour: str, alpha: float = 1.0) -> str:
    c = colour.lstrip("#")
    r, g, b = (int(c[i : i + 2], 16) for i in (0, 2, 4))
    return f"{r},{g},{b},{round(alpha * 255)}"


def _mm(px: float) -> str:
    return f"{px * PX_MM:.3g}"


def _expr_literal(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def _expr_condition(when: tuple[tuple[str, tuple[Any, ...]], ...]) -> str:
    parts = []
    for column, values in when:
        col = '"' + column.replace('"', '""') + '"'
        if all(isinstance(v, bool) for v in values):
            # to_int: a GeoPackage boolean, or the 1/0 of a shapefile or geodatabase
            # (QGIS compares a boolean with 1 as unequal); NULL = not set: no match
            parts.append(" OR ".join(f"to_int({col}) = {int(v)}" for v in values))
        elif len(values) == 1:
            parts.append(f"{col} = {_expr_literal(values[0])}")
        else:
            parts.append(f"{col} IN ({', '.join(map(_expr_literal, values))})")
    return " AND ".join(f"({p})" for p in parts)


def renderer_attribute(style: LayerStyle) -> tuple[str, list[str]]:
    """The categorized renderer's attribute (a column or an expression) and the value
    of each class (``""`` = QGIS's "all other values")."""
    conds = [c.when for c in style.classes if c.when]
    simple = (
        all(len(w) == 1 and len(w[0][1]) == 1 for w in conds)
        and len({w[0][0] for w in conds}) == 1
        and not any(isinstance(w[0][1][0], bool) for w in conds)
        and all(not c.when for c in style.classes[len(conds) :])
    )
    if conds and simple:
        return conds[0][0][0], [str(c.when[0][1][0]) if c.when else "" for c in style.classes]
    whens = " ".join(
        f"WHEN {_expr_condition(c.when)} THEN {_expr_literal(c.label)}"
        for c in style.classes
        if c.when
    )
    rest = [c for c in style.classes if not c.when]
    tail = f" ELSE {_expr_literal(rest[0].label)}" if rest else ""
    return f"CASE {whens}{tail} END", [c.label for c in style.classes]


def _options(props: dict[str, str], indent: str) -> str:
    opts = "".join(
        f'{indent}  <Option name="{k}" value={quoteattr(v)} type="QString"/>\n'
        for k, v in props.items()
    )
    legacy = "".join(f'{indent}<prop k="{k}" v={quoteattr(v)}/>\n' for k, v in props.items())
    return f'{indent}<Option type="Map">\n{opts}{indent}</Option>\n{legacy}'


def _symbol_layer(style: LayerStyle, colour: str) -> tuple[str, str, dict[str, str]]:
    """(QGIS symbol type, symbol layer class and properties)."""
    if style.geom == "point":
        props = {
            "name": "circle",
            "color": _rgba(colour, style.fill_opacity),
            "outline_color": _rgba(POINT_OUTLINE),
            "outline_style": "solid",
            "outline_width": _mm(style.weight),
            "outline_width_unit": "MM",
            "size": _mm(2 * style.radius),
            "size_unit": "MM",
            "angle": "0",
            "joinstyle": "bevel",
            "scale_method": "diameter",
        }
        return "marker", "SimpleMarker", props
    if style.geom == "line":
        props = {
            "line_color": _rgba(colour, style.line_opacity),
            "line_style": "solid",
            "line_width": _mm(style.weight),
            "line_width_unit": "MM",
            "capstyle": "round",
            "joinstyle": "round",
            "use_custom_dash": "1" if style.dash else "0",
            "customdash": (style.dash or "5 2").replace(" ", ";"),
            "customdash_unit": "Pixel",
        }
        return "line", "SimpleLine", props
    props = {
        "color": _rgba(colour, style.fill_opacity),
        "style": "solid",
        "outline_color": _rgba(style.outline or colour),
        "outline_style": "dash" if style.dash else "solid",
        "outline_width": _mm(style.weight),
        "outline_width_unit": "MM",
        "joinstyle": "bevel",
    }
    return "fill", "SimpleFill", props


def _symbol(style: LayerStyle, name: str, colour: str, indent: str) -> str:
    kind, cls, props = _symbol_layer(style, colour)
    return (
        f'{indent}<symbol name="{name}" type="{kind}" alpha="1" clip_to_extent="1" '
        'force_rhr="0">\n'
        f'{indent}  <layer class="{cls}" enabled="1" locked="0" pass="0">\n'
        + _options(props, indent + "    ")
        + f"{indent}  </layer>\n{indent}</symbol>\n"
    )


def qml(style: LayerStyle, *, version: str = "3.22.0") -> str:
    """The QGIS style document (QML) of ``style``: a categorized renderer (a single
    symbol when the layer has one class), with the app's labels and colours."""
    head = (
        "<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>\n"
        f'<qgis version="{version}" styleCategories="Symbology" labelsEnabled="0" '
        'hasScaleBasedVisibilityFlag="0" minScale="100000000" maxScale="0">\n'
    )
    if style.single:
        body = (
            '  <renderer-v2 type="singleSymbol" forceraster="0" symbollevels="0" '
            'enableorderby="0">\n    <symbols>\n'
            + _symbol(style, "0", style.classes[0].colour, "      ")
            + "    </symbols>\n  </renderer-v2>\n"
        )
    else:
        attr, values = renderer_attribute(style)
        cats = "".join(
            f'      <category value={quoteattr(v)} label={quoteattr(c.label)} symbol="{i}" '
            'render="true"/>\n'
            for i, (c, v) in enumerate(zip(style.classes, values, strict=True))
        )
        syms = "".join(
            _symbol(style, str(i), c.colour, "      ") for i, c in enumerate(style.classes)
        )
        body = (
            f'  <renderer-v2 type="categorizedSymbol" attr={quoteattr(attr)} forceraster="0" '
            'symbollevels="0" enableorderby="0">\n'
            f"    <categories>\n{cats}    </categories>\n"
            f"    <symbols>\n{syms}    </symbols>\n"
            "  </renderer-v2>\n"
        )
    return (
        head
        + body
        + "  <layerGeometryType>{}</layerGeometryType>\n</qgis>\n".format(
            {"point": 0, "line": 1, "polygon": 2}[style.geom]
        )
    )


# -- SLD ---------------------------------------------------------------------------------
def _ogc_literal(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return escape(str(v))


def _ogc_condition(when: tuple[tuple[str, tuple[Any, ...]], ...]) -> str:
    parts = []
    for column, values in when:
        eqs = [
            f"<ogc:PropertyIsEqualTo><ogc:PropertyName>{escape(column)}</ogc:PropertyName>"
            f"<ogc:Literal>{_ogc_literal(v)}</ogc:Literal></ogc:PropertyIsEqualTo>"
            for v in values
        ]
        parts.append(eqs[0] if len(eqs) == 1 else "<ogc:Or>" + "".join(eqs) + "</ogc:Or>")
    return parts[0] if len(parts) == 1 else "<ogc:And>" + "".join(parts) + "</ogc:And>"


def _sld_symbolizer(style: LayerStyle, colour: str) -> str:
    def css(name: str, value: Any) -> str:
        return f'<se:SvgParameter name="{name}">{value}</se:SvgParameter>'

    stroke_w = f"{style.weight:g}"
    if style.geom == "point":
        return (
            "<se:PointSymbolizer><se:Graphic><se:Mark><se:WellKnownName>circle"
            "</se:WellKnownName><se:Fill>"
            + css("fill", colour)
            + css("fill-opacity", f"{style.fill_opacity:g}")
            + "</se:Fill><se:Stroke>"
            + css("stroke", POINT_OUTLINE)
            + css("stroke-width", stroke_w)
            + f"</se:Stroke></se:Mark><se:Size>{2 * style.radius:g}</se:Size>"
            "</se:Graphic></se:PointSymbolizer>"
        )
    dash = css("stroke-dasharray", style.dash) if style.dash else ""
    if style.geom == "line":
        return (
            "<se:LineSymbolizer><se:Stroke>"
            + css("stroke", colour)
            + css("stroke-opacity", f"{style.line_opacity:g}")
            + css("stroke-width", stroke_w)
            + dash
            + "</se:Stroke></se:LineSymbolizer>"
        )
    return (
        "<se:PolygonSymbolizer><se:Fill>"
        + css("fill", colour)
        + css("fill-opacity", f"{style.fill_opacity:g}")
        + "</se:Fill><se:Stroke>"
        + css("stroke", style.outline or colour)
        + css("stroke-width", stroke_w)
        + dash
        + "</se:Stroke></se:PolygonSymbolizer>"
    )


def sld(style: LayerStyle, layer: str) -> str:
    """The SLD 1.1 document of ``style`` (first matching class wins, as in QGIS)."""
    rules = []
    earlier: list[str] = []
    for c in style.classes:
        if c.when:
            cond = _ogc_condition(c.when)
            filt = cond
            if earlier:
                nots = "".join(f"<ogc:Not>{e}</ogc:Not>" for e in earlier)
                filt = f"<ogc:And>{cond}{nots}</ogc:And>"
            filt = f"<ogc:Filter>{filt}</ogc:Filter>"
            earlier.append(cond)
        elif earlier:  # the rest, spelled out (readers differ on ElseFilter)
            nots = "".join(f"<ogc:Not>{e}</ogc:Not>" for e in earlier)
            filt = f"<ogc:Filter>{nots if len(earlier) == 1 else f'<ogc:And>{nots}</ogc:And>'}"
            filt += "</ogc:Filter>"
        else:
            filt = ""
        rules.append(
            f"<se:Rule><se:Name>{escape(c.label)}</se:Name><se:Description><se:Title>"
            f"{escape(c.label)}</se:Title></se:Description>{filt}"
            f"{_sld_symbolizer(style, c.colour)}</se:Rule>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<StyledLayerDescriptor xmlns="http://www.opengis.net/sld" '
        'xmlns:ogc="http://www.opengis.net/ogc" xmlns:se="http://www.opengis.net/se" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="1.1.0" '
        'xsi:schemaLocation="http://www.opengis.net/sld '
        'http://schemas.opengis.net/sld/1.1.0/StyledLayerDescriptor.xsd">'
        f"<NamedLayer><se:Name>{escape(layer)}</se:Name><UserStyle>"
        f"<se:Name>{escape(layer)}</se:Name><se:FeatureTypeStyle>"
        + "".join(rules)
        + "</se:FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>\n"
    )


# -- the layer_styles table --------------------------------------------------------------
#: The columns of QGIS's ``layer_styles`` table that a style row fills, in order.
LAYER_STYLES_COLUMNS = (
    "f_table_catalog",
    "f_table_schema",
    "f_table_name",
    "f_geometry_column",
    "styleName",
    "styleQML",
    "styleSLD",
    "useAsDefault",
    "description",
    "owner",
    "ui",
    "update_time",
)
#: QGIS's own table (as QGIS creates it in a GeoPackage when a style is saved there).
LAYER_STYLES_DDL = (
    'CREATE TABLE IF NOT EXISTS "layer_styles" ( "id" INTEGER PRIMARY KEY AUTOINCREMENT NOT '
    'NULL, "f_table_catalog" TEXT(256), "f_table_schema" TEXT(256), "f_table_name" TEXT(256), '
    '"f_geometry_column" TEXT(256), "styleName" TEXT(30), "styleQML" TEXT, "styleSLD" TEXT, '
    '"useAsDefault" BOOLEAN, "description" TEXT, "owner" TEXT(30), "ui" TEXT(30), '
    "\"update_time\" DATETIME DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))"
)
_GEOM_KIND = {
    "POINT": "point",
    "MULTIPOINT": "point",
    "LINESTRING": "line",
    "MULTILINESTRING": "line",
    "CURVE": "line",
    "MULTICURVE": "line",
    "COMPOUNDCURVE": "line",
    "CIRCULARSTRING": "line",
    "POLYGON": "polygon",
    "MULTIPOLYGON": "polygon",
    "CURVEPOLYGON": "polygon",
    "SURFACE": "polygon",
    "MULTISURFACE": "polygon",
}


def _geometry_kind(con: sqlite3.Connection, table: str, column: str, declared: str) -> str | None:
    kind = _GEOM_KIND.get(declared.upper())
    if kind is not None:
        return kind
    # GEOMETRY: the type of the first geometry (a GeoPackage blob: header, then WKB)
    row = con.execute(
        f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL LIMIT 1'
    ).fetchone()
    if row is None or not row[0]:
        return None
    blob = bytes(row[0])
    flags = blob[3]
    env = {0: 0, 1: 32, 2: 48, 3: 48, 4: 64}.get((flags >> 1) & 7, 0)
    wkb = blob[8 + env :]
    order = "little" if wkb[0] == 1 else "big"
    code = int.from_bytes(wkb[1:5], order) % 1000
    return {1: "point", 4: "point", 2: "line", 5: "line", 3: "polygon", 6: "polygon"}.get(code)


def write_layer_styles(
    gpkg: str | Path, layers: Iterable[str] | None = None, *, description: str | None = None
) -> list[str]:
    """Store the default QGIS style of each spatial layer of ``gpkg`` in ``layer_styles``.

    Parameters
    ----------
    gpkg : path
        A GeoPackage (written by GDAL).
    layers : iterable of str, optional
        The layers to style (default: every spatial layer).  A layer named that is a
        plain table, or whose geometry column holds no geometry (and whose style is
        not known by name), is skipped.  Earlier styles of these layers are replaced;
        other layers' styles are kept.

    Returns
    -------
    list of str
        The layers styled.
    """
    styled: list[str] = []
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    with sqlite3.connect(gpkg) as con:
        try:
            geoms = {
                str(t): (str(c), str(g))
                for t, c, g in con.execute(
                    "SELECT table_name, column_name, geometry_type_name FROM gpkg_geometry_columns"
                )
            }
        except sqlite3.OperationalError:  # no gpkg_geometry_columns: no spatial layer
            return styled
        wanted = list(geoms) if layers is None else [n for n in layers if n in geoms]
        rows = []
        for name in wanted:
            column, declared = geoms[name]
            known = LAYER_STYLES.get(name)
            kind = _geometry_kind(con, name, column, declared)
            if kind is None and known is None:
                continue
            style = style_for(name, kind or known.geom)  # type: ignore[union-attr]
            if kind is not None and kind != style.geom:  # a known name on other geometry
                style = LayerStyle(
                    style.title, kind, style.classes, style.fill_opacity, style.weight,
                    style.radius, style.dash, style.outline, style.line_opacity,
                )  # fmt: skip
            rows.append(
                (
                    "",
                    "",
                    name,
                    column,
                    name,
                    qml(style),
                    sld(style, name),
                    1,
                    description or f"ms4map: {style.title}, as the ms4map app draws it",
                    "",
                    "",
                    now,
                )
            )
            styled.append(name)
        if not rows:
            return styled
        ensure_styles_table(con)
        for r in rows:
            con.execute(
                'DELETE FROM "layer_styles" WHERE f_table_name = ? AND f_geometry_column = ?',
                (r[2], r[3]),
            )
        con.executemany(
            f'INSERT INTO "layer_styles" ({", ".join(LAYER_STYLES_COLUMNS)}) '
            f"VALUES ({', '.join('?' * len(LAYER_STYLES_COLUMNS))})",
            rows,
        )
        _sync_count(con)
    return styled


def ensure_styles_table(con: sqlite3.Connection) -> None:
    exists = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'layer_styles'"
    ).fetchone()
    if exists:
        return
    con.execute(LAYER_STYLES_DDL)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    # registered as an attributes table, as QGIS (through GDAL) registers it
    con.execute(
        "INSERT OR REPLACE INTO gpkg_contents (table_name, data_type, identifier, "
        "last_change) VALUES ('layer_styles', 'attributes', 'layer_styles', ?)",
        (now,),
    )


def _sync_count(con: sqlite3.Connection) -> None:
    has = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpkg_ogr_contents'"
    ).fetchone()
    if has:
        # NULL: GDAL counts the rows itself (QGIS may add styles without a trigger)
        con.execute(
            "INSERT OR REPLACE INTO gpkg_ogr_contents (table_name, feature_count) "
            "VALUES ('layer_styles', NULL)"
        )


def read_layer_styles(gpkg: str | Path) -> list[dict[str, Any]]:
    """The rows of ``layer_styles`` in ``gpkg`` (empty when it has none)."""
    try:
        with sqlite3.connect(f"file:{Path(gpkg)}?mode=ro", uri=True) as con:
            con.row_factory = sqlite3.Row
            if not con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'layer_styles'"
            ).fetchone():
                return []
            return [dict(r) for r in con.execute('SELECT * FROM "layer_styles" ORDER BY id')]
    except sqlite3.Error:
        return []
