"""Value normalisation and field-map parsing."""

from __future__ import annotations

import zipfile
from pathlib import Path

import geopandas as gpd
import pytest
from shapely.geometry import LineString

import ms4map
from ms4map.core import schema
from ms4map.core.errors import UsageError
from ms4map.io import aliases
from ms4map.io.fieldmap import FieldMap, mapping_to_cli, mapping_to_toml, parse_field_option


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("CB", "catch_basin"),
        ("CBNS", "catch_basin"),
        ("MH", "manhole"),
        ("MHNS", "manhole"),
        ("DI", "inlet"),
        ("YB", "inlet"),
        ("GB", "inlet"),
        ("OF", "outfall"),
        ("Catchbasin", "catch_basin"),
        ("Headwall", "headwall"),
        ("Outfall", "outfall"),
        ("Manhole-CB", "catch_basin"),
        ("Water Quality BMP", "bmp"),
        # Norfolk: PE* pipe ends are where ditches enter the pipes, PO* pipe outlets
        ("PEHW", "inlet"),
        ("PE", "inlet"),
        ("POEW", "headwall"),
        ("POPE", "headwall"),
        ("zzz-unknown", "other"),
        (None, None),
    ],
)
def test_structure_kinds(code, kind) -> None:
    assert aliases.normalize_structure_kind(code) == kind


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15''", (15.0, None)),
        ("60''X42''", (60.0, 42.0)),
        ("0''", (None, None)),
        ("12", (12.0, None)),
        (8.0, (8.0, None)),
        (0.0, (None, None)),
        ('24"', (24.0, None)),
        ("120''X60*", (120.0, 60.0)),
        ("n/a", (None, None)),
        (None, (None, None)),
    ],
)
def test_pipe_sizes(text, expected) -> None:
    assert aliases.parse_pipe_size(text) == expected


def test_elevations_and_flow_dirs() -> None:
    assert aliases.normalize_elevation(0) is None
    assert aliases.normalize_elevation(-9999) is None
    assert aliases.normalize_elevation("12.5") == 12.5
    assert aliases.normalize_elevation(-0.42) == -0.42  # tidal inverts below datum are real
    assert aliases.normalize_flow_dir("UNI") == "uni" and aliases.normalize_flow_dir("BI") == "bi"
    assert schema.is_pwl_id("1302-0092") and not schema.is_pwl_id("1302-92")


def test_field_option_syntax() -> None:
    assert parse_field_option("structures.struct_id=ASSET") == (
        "structures",
        None,
        "struct_id",
        "ASSET",
    )
    assert parse_field_option("conveyances.ditches.conv_id=Ditch_ID") == (
        "conveyances",
        "ditches",
        "conv_id",
        "Ditch_ID",
    )
    with pytest.raises(UsageError, match="ROLE"):
        parse_field_option("struct_id")


def test_mapping_round_trips_through_toml() -> None:
    used = {"structures": {"storm_structures": {"struct_id": "Structure_", "kind": "Structure1"}}}
    text = mapping_to_toml(used)
    fm = FieldMap.from_dict(__import__("tomllib").loads(text))
    assert fm.for_layer("structures", "storm_structures") == used["structures"]["storm_structures"]
    assert mapping_to_cli(used)[0] == "--field structures.storm_structures.struct_id=Structure_"


def test_zipped_shapefile_and_layer_kind_hint(tmp_path: Path) -> None:
    g = gpd.GeoDataFrame(
        {"Ditch_ID": ["D1"]}, geometry=[LineString([(0, 0), (5, 0)])], crs="EPSG:26918"
    )
    g.to_file(tmp_path / "roadside_ditches.shp")
    z = tmp_path / "roadside_ditches.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in tmp_path.glob("roadside_ditches.*"):
            if f.suffix != ".zip":
                zf.write(f, f.name)
    ws = ms4map.open_workspace(None, layers={"conveyances": [str(z)]})
    assert list(ws.conveyances["conv_id"]) == ["D1"]
    assert list(ws.conveyances["kind"]) == ["ditch"]  # from the layer name


def test_nyc_outfall_schema_maps_without_a_field_map(tmp_path: Path) -> None:
    from shapely.geometry import Point

    g = gpd.GeoDataFrame(
        {
            "spdes_permit_number": ["NY0026158", "NY0026131"],
            "cso_identification_number": ["NY0026158-011", "NY0026131-011"],
            "outfall_number": ["11", "11"],  # not unique across permits
            "receiving_waterbody_name": ["Newtown Creek", "Hudson River"],
        },
        geometry=[Point(-73.94, 40.73), Point(-74.0, 40.8)],
        crs="EPSG:4326",
    )
    g.to_file(tmp_path / "CSOs.geojson")
    ws = ms4map.open_workspace(tmp_path / "CSOs.geojson", layers={"outfalls": ["CSOs"]})
    o = ws.outfalls
    assert list(o["outfall_id"]) == ["NY0026158-011", "NY0026131-011"]
    assert list(o["receiving_water"]) == ["Newtown Creek", "Hudson River"]
    assert list(o["permit_id"]) == ["NY0026158", "NY0026131"]
    assert set(o["status"]) == {"unknown"}
    assert list(o["outfall_number"]) == ["11", "11"]  # unmapped columns carried along
