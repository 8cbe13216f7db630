"""Layer I/O, field mapping, workspace and validation, including the bad-input corpus."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import LineString, MultiLineString, Point, Polygon

import ms4map
from ms4map import io
from ms4map.cli import main
from ms4map.core.errors import InputOpenError, OutputError, UsageError, ValidationError

UTM18 = "EPSG:26918"
X0, Y0 = 600_000.0, 4_760_000.0


def _square(x: float, y: float, s: float = 20.0) -> Polygon:
    return Polygon([(x, y), (x + s, y), (x + s, y + s), (x, y + s)])


def _tree_hash(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def town(tmp_path: Path) -> Path:
    """A tiny valid workspace: 4 parcels, 3 structures, 2 pipes, a DEM."""
    parcels = gpd.GeoDataFrame(
        {
            "SBL": ["1.-1-1", "1.-1-2", "1.-1-3", "1.-1-4"],
            "PROP_CLASS": [210, "484", 105.0, None],
            "OWNER_NAME": ["A", "B", "C", "D"],
            "SEWER_TYPE": ["public", "septic", "", None],
        },
        geometry=[_square(X0 + i * 20, Y0) for i in range(4)],
        crs=UTM18,
    )
    structures = gpd.GeoDataFrame(
        {
            "Structure_": ["CB1", "MH1", "OF1"],
            "Structure1": ["CBNS", "MH", "OF"],
            "Rim_Elevat": [101.0, 100.5, 0.0],
            "Invert_Ele": [99.0, 98.0, -9999],
            "OUTFALL": ["X", "X", "X"],
        },
        geometry=[Point(X0, Y0 - 10), Point(X0 + 50, Y0 - 10), Point(X0 + 100, Y0 - 10)],
        crs=UTM18,
    )
    pipes = gpd.GeoDataFrame(
        {
            "Upstream_S": ["CB1", "MH1"],
            "Downstream": ["MH1", "OF1"],
            "Upstream_I": [99.0, 98.0],
            "Downstre_1": [98.2, 0.0],
            "Pipe_Size": ["15''", "60''X42''"],
            "Pipe_Mater": ["RCP", "CMP"],
        },
        geometry=[
            LineString([(X0, Y0 - 10), (X0 + 50, Y0 - 10)]),
            LineString([(X0 + 50, Y0 - 10), (X0 + 100, Y0 - 10)]),
        ],
        crs=UTM18,
    )
    gpkg = tmp_path / "town.gpkg"
    parcels.to_file(gpkg, layer="parcels")
    structures.to_file(gpkg, layer="storm_structures")
    pipes.to_file(gpkg, layer="storm_pipes")
    dem = np.linspace(110, 90, 40 * 40, dtype="float32").reshape(40, 40)
    with rasterio.open(
        tmp_path / "town_dem.tif",
        "w",
        driver="GTiff",
        width=40,
        height=40,
        count=1,
        dtype="float32",
        crs=UTM18,
        transform=from_origin(X0 - 50, Y0 + 100, 5, 5),
        nodata=-9999,
    ) as dst:
        dst.write(dem, 1)
        dst.update_tags(1)
        dst.units = ("metre",)
    return gpkg


def _open(town: Path, **kw):
    return ms4map.open_workspace(
        town, layers={"structures": ["storm_structures"], "conveyances": ["storm_pipes"]}, **kw
    )


def test_alias_mapping_and_value_normalisation(town: Path) -> None:
    ws = _open(town)
    s = ws.structures.set_index("struct_id")
    assert list(s.index) == ["CB1", "MH1", "OF1"]
    assert list(s["kind"]) == ["catch_basin", "manhole", "outfall"]
    assert pd.isna(s.loc["OF1", "rim_elev"]) and pd.isna(s.loc["OF1", "invert_elev"])  # 0, -9999
    # answer columns are carried along untouched but never mapped
    assert list(s["OUTFALL"]) == ["X", "X", "X"]
    c = ws.conveyances
    assert list(c["from_id"]) == ["CB1", "MH1"]
    assert list(c["diameter_in"]) == [15.0, 60.0]
    assert np.isnan(c["rise_in"].iloc[0]) and c["rise_in"].iloc[1] == 42.0
    assert c["ds_invert"].isna().iloc[1]  # 0 -> missing
    assert set(c["kind"]) == {"pipe"}
    p = ws.parcels.set_index("parcel_id")
    assert list(p["prop_class"].fillna("")) == ["210", "484", "105", ""]
    assert list(p["sewer"]) == ["public", "septic", "unknown", "unknown"]
    assert ws.field_mapping["structures"]["storm_structures"]["struct_id"] == "Structure_"
    assert ws.crs.to_epsg() == 26918
    assert ws.dem is not None and ws.dem.shape == (40, 40)
    assert ws.dem.vertical_unit == "metre"
    assert all(len(h) == 64 for h in ws.inputs.values())


def test_user_field_map_cli_and_toml(town: Path, tmp_path: Path) -> None:
    toml = tmp_path / "fields.toml"
    toml.write_text(
        '[parcels]\nowner = "SBL"\n[structures.values.kind]\nCBNS = "inlet"\n', encoding="utf-8"
    )
    ws = _open(town, field_map=toml)
    assert list(ws.parcels["owner"]) == list(ws.parcels["parcel_id"])
    assert ws.structures.set_index("struct_id").loc["CB1", "kind"] == "inlet"
    with pytest.raises(UsageError, match="not a column of layer 'parcels'"):
        _open(town, field_map={"parcels": {"nope": "SBL"}})


def test_missing_required_column_names_the_fix(town: Path) -> None:
    with pytest.raises(ValidationError) as exc:
        _open(town, field_map={"parcels": {"parcel_id": "NO_SUCH"}})
    codes = exc.value.report.codes()
    assert codes["missing_column"] >= 1
    assert "NO_SUCH" in str(exc.value)


def test_geographic_input_is_reprojected(town: Path, tmp_path: Path) -> None:
    s = gpd.read_file(town, layer="storm_structures").to_crs(4326)
    path = tmp_path / "wgs.geojson"
    s.to_file(path)
    ws = ms4map.open_workspace(None, layers={"structures": [str(path)]})
    assert ws.crs.to_epsg() == 26918  # NAD83 UTM 18N from the data's longitude
    assert ws.qa.codes()["geographic_crs"] == 1
    assert ws.structures.geometry.x.round(3).tolist() == pytest.approx(
        [X0, X0 + 50, X0 + 100], abs=0.01
    )


def test_missing_ids_generated_and_duplicates_reported(town: Path, tmp_path: Path) -> None:
    s = gpd.read_file(town, layer="storm_structures")
    s.loc[1, "Structure_"] = None
    s.loc[2, "Structure_"] = "CB1"
    s.to_file(tmp_path / "s.gpkg", layer="structures")
    ws = ms4map.open_workspace(tmp_path / "s.gpkg")
    ids = list(ws.structures["struct_id"])
    assert ids[0] == "CB1" and ids[1] == "structures:2" and ids[2] == "structures:3"
    assert {"missing_id", "duplicate_id"} <= set(ws.qa.codes())
    # stable: same ids on a second read
    assert list(ms4map.open_workspace(tmp_path / "s.gpkg").structures["struct_id"]) == ids


def test_multipart_lines(tmp_path: Path) -> None:
    g = gpd.GeoDataFrame(
        {"conv_id": ["A", "B"]},
        geometry=[
            MultiLineString([[(0, 0), (1, 0)], [(1, 0), (2, 0)]]),  # touching -> merged
            MultiLineString([[(0, 5), (1, 5)], [(3, 5), (4, 5)]]),  # apart -> split
        ],
        crs=UTM18,
    )
    g.to_file(tmp_path / "c.gpkg", layer="conveyances")
    ws = ms4map.open_workspace(tmp_path / "c.gpkg")
    assert sorted(ws.conveyances["conv_id"]) == ["A", "B.1", "B.2"]
    assert set(ws.conveyances.geom_type) == {"LineString"}


def test_manifest_holds_the_options(town: Path, tmp_path: Path) -> None:
    man = tmp_path / "ws.toml"
    man.write_text(
        f'workspace = "{town.name}"\n[layers]\nstructures = "storm_structures"\n'
        'conveyances = ["storm_pipes"]\n',
        encoding="utf-8",
    )
    ws = ms4map.open_workspace(man)
    assert len(ws.structures) == 3 and len(ws.conveyances) == 2


def test_manifest_field_map_file_applies_on_the_command_line_too(
    town: Path, tmp_path: Path
) -> None:
    # the manifest's field_map file was ignored by the CLI (it always passed its own, empty
    # map); now file < manifest [fields] < --field, entry by entry
    from ms4map.cli import build_parser, workspace_from_args

    s = gpd.read_file(town, layer="storm_structures").rename(columns={"Structure_": "MY_ID"})
    s["OTHER"] = ["X1", "X2", "X3"]
    s.to_file(tmp_path / "s.gpkg", layer="structures")
    (tmp_path / "fields.toml").write_text('[structures]\nstruct_id = "MY_ID"\n', encoding="utf-8")
    man = tmp_path / "ws.toml"
    man.write_text('workspace = "s.gpkg"\nfield_map = "fields.toml"\n', encoding="utf-8")
    ids = list(s["MY_ID"])
    assert list(ms4map.open_workspace(man).structures["struct_id"]) == ids  # the library
    args = build_parser().parse_args(["validate", str(man)])
    assert list(workspace_from_args(args).structures["struct_id"]) == ids  # the CLI
    args = build_parser().parse_args(
        ["validate", str(man), "--field", "structures.struct_id=OTHER"]
    )
    assert list(workspace_from_args(args).structures["struct_id"]) == ["X1", "X2", "X3"]


def test_write_outputs_records_provenance_and_protects_inputs(town: Path, tmp_path: Path) -> None:
    ws = _open(town)
    out = io.write_outputs(
        tmp_path / "out.gpkg", {"structures": ws.structures}, provenance=ws.provenance(step="test")
    )
    prov = io.read_provenance(out)
    assert prov["version"] == ms4map.__version__ and str(town.resolve()) in prov["inputs"]
    with pytest.raises(UsageError, match="Refusing to write"):
        io.write_outputs(town, {"x": ws.structures}, provenance=ws.provenance())


# --------------------------------------------------------------------------------------
# Bad-input corpus: each gives its own message and exit code; nothing on disk changes.
# --------------------------------------------------------------------------------------
def _bad_no_crs(tmp: Path) -> list[str]:
    g = gpd.GeoDataFrame({"parcel_id": ["1"]}, geometry=[_square(0, 0)])
    g.to_file(tmp / "nocrs.shp")
    return [str(tmp / "nocrs.shp"), "--layer", "parcels=nocrs"]


def _bad_self_intersecting(tmp: Path) -> list[str]:
    bow = Polygon([(0, 0), (10, 10), (10, 0), (0, 10)])
    gpd.GeoDataFrame({"parcel_id": ["1"]}, geometry=[bow], crs=UTM18).to_file(
        tmp / "b.gpkg", layer="parcels"
    )
    return [str(tmp / "b.gpkg")]


def _bad_empty(tmp: Path) -> list[str]:
    g = gpd.GeoDataFrame({"parcel_id": pd.Series([], dtype=str)}, geometry=[], crs=UTM18)
    g.to_file(tmp / "e.gpkg", layer="parcels")
    return [str(tmp / "e.gpkg")]


def _bad_points_as_conveyances(tmp: Path) -> list[str]:
    gpd.GeoDataFrame({"x": [1]}, geometry=[Point(0, 0)], crs=UTM18).to_file(
        tmp / "p.gpkg", layer="conveyances"
    )
    return [str(tmp / "p.gpkg")]


def _bad_duplicate_parcels(tmp: Path) -> list[str]:
    gpd.GeoDataFrame(
        {"parcel_id": ["7", "7"]}, geometry=[_square(0, 0), _square(30, 0)], crs=UTM18
    ).to_file(tmp / "d.gpkg", layer="parcels")
    return [str(tmp / "d.gpkg")]


def _bad_zip_slip(tmp: Path) -> list[str]:
    with zipfile.ZipFile(tmp / "evil.zip", "w") as zf:
        zf.writestr("../evil.shp", b"x")
    return [str(tmp / "evil.zip")]


def _bad_missing_file(tmp: Path) -> list[str]:
    return [str(tmp / "nowhere.gpkg")]


def _bad_missing_layer(tmp: Path) -> list[str]:
    _bad_empty(tmp)
    return [str(tmp / "e.gpkg"), "--layer", "structures=no_such_layer"]


def _bad_not_spatial(tmp: Path) -> list[str]:
    (tmp / "notes.gpkg").write_text("hello", encoding="utf-8")
    return [str(tmp / "notes.gpkg")]


BAD = [
    (_bad_no_crs, 2, "no coordinate reference system"),
    (_bad_self_intersecting, 2, "Invalid geometry"),
    (_bad_empty, 2, "has no features"),
    (_bad_points_as_conveyances, 2, "needs LineString geometries"),
    (_bad_duplicate_parcels, 2, "used by 2 parcels"),
    (_bad_zip_slip, 3, "outside the archive"),
    (_bad_missing_file, 3, "does not exist"),
    (_bad_missing_layer, 3, "Available layers"),
    (_bad_not_spatial, 3, "cannot be opened"),
]


@pytest.mark.parametrize(("make", "code", "text"), BAD, ids=[b[0].__name__ for b in BAD])
def test_bad_input_gives_clear_message_and_exit_code(
    make, code, text, tmp_path: Path, capsys
) -> None:
    args = make(tmp_path)
    before = _tree_hash(tmp_path)
    rc = main(["validate", *args])
    out = capsys.readouterr()
    assert rc == code, out
    assert text in out.out + out.err
    assert "Traceback" not in out.out + out.err
    assert _tree_hash(tmp_path) == before  # nothing on disk modified
    assert not any(tmp_path.rglob("*.ms4map.gpkg"))


def test_repair_geometry_turns_error_into_warning(tmp_path: Path) -> None:
    args = _bad_self_intersecting(tmp_path)
    ws = ms4map.open_workspace(args[0], repair_geometry=True)
    assert ws.parcels.geometry.is_valid.all()
    assert ws.qa.codes()["repaired_geometry"] == 1


def test_non_utf8_text_is_read_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "latin.geojson"
    text = (
        '{"type":"FeatureCollection","features":[{"type":"Feature","properties":'
        '{"parcel_id":"1","owner":"Fran\xe7ois C\xf4t\xe9"},"geometry":{"type":"Polygon",'
        '"coordinates":[[[-73.7,43.0],[-73.7,43.001],[-73.699,43.001],[-73.7,43.0]]]}}]}'
    )
    path.write_bytes(text.encode("latin-1"))
    ws = ms4map.open_workspace(None, layers={"parcels": [str(path)]})
    assert ws.parcels["owner"].iloc[0] == "François Côté"
    assert "non_utf8_text" in ws.qa.codes()


def test_dem_in_other_crs_is_warped(town: Path, tmp_path: Path) -> None:
    src = town.with_name("town_dem.tif")
    with rasterio.open(src) as s:
        arr, prof = s.read(1), s.profile
    from rasterio.warp import calculate_default_transform, reproject

    t, w, h = calculate_default_transform(UTM18, "EPSG:4326", 40, 40, *rasterio.open(src).bounds)
    out = np.zeros((h, w), "float32")
    reproject(
        arr,
        out,
        src_transform=prof["transform"],
        src_crs=UTM18,
        dst_transform=t,
        dst_crs="EPSG:4326",
    )
    prof.update(crs="EPSG:4326", transform=t, width=w, height=h)
    geo = tmp_path / "geo_dem.tif"
    with rasterio.open(geo, "w", **prof) as d:
        d.write(out, 1)
    ws = _open(town, dem=geo)
    assert ws.crs.to_epsg() == 26918
    assert {"dem_reprojected", "vertical_units_unknown"} <= set(ws.qa.codes())
    assert np.nanmax(ws.dem.array) == pytest.approx(110, abs=2)


def test_dem_not_covering_parcels(town: Path, tmp_path: Path) -> None:
    p = gpd.read_file(town, layer="parcels")
    p.loc[len(p)] = {"SBL": "far", "geometry": _square(X0 + 5000, Y0)}
    p = gpd.GeoDataFrame(p, crs=UTM18)
    gp = tmp_path / "far.gpkg"
    p.to_file(gp, layer="parcels")
    ws = ms4map.open_workspace(gp, dem=town.with_name("town_dem.tif"))
    f = ws.qa.by_code("dem_not_covering")
    assert f and "far" in f[0].feature_id


def test_inputopen_for_bad_option(town: Path) -> None:
    with pytest.raises(InputOpenError):
        ms4map.open_workspace(town, layers={"structures": ["nope"]})
    assert main(["validate", str(town), "--layer", "bogus=storm_pipes"]) == 4
    assert main(["validate", str(town), "--field", "nonsense"]) == 4


def test_output_guard_protects_inputs_and_their_sidecars(town: Path, tmp_path: Path) -> None:
    ws = _open(town)
    with pytest.raises(UsageError, match="Refusing to write into input file"):
        io.check_output_path(town, protected=ws.inputs)
    with pytest.raises(UsageError, match="Refusing"):
        io.check_output_path(town.with_name("town_dem.tif"), protected=ws.inputs)
    with pytest.raises(UsageError, match="must end in .csv"):
        io.check_output_path(tmp_path / "x.gpkg", suffixes=(".csv",))
    out = io.write_text_output(tmp_path / "new" / "dir" / "a.csv", "a\n1\n", protected=ws.inputs)
    assert out.read_text() == "a\n1\n"


def test_provenance_kept_per_layer_across_runs(town: Path, tmp_path: Path) -> None:
    ws = _open(town)
    out = tmp_path / "out.gpkg"
    io.write_outputs(out, {"a": ws.structures}, provenance=ws.provenance(step="first"))
    io.write_outputs(out, {"b": ws.conveyances}, provenance=ws.provenance(step="second"))
    assert io.read_provenance(out, "a")["settings"]["step"] == "first"
    assert io.read_provenance(out, "b")["settings"]["step"] == "second"


def test_outputs_written_unjournaled_then_synced_once_before_the_rename(
    town: Path, tmp_path: Path, monkeypatch, request
) -> None:
    """The temporary GeoPackage is filled without SQLite's journal and per-transaction
    syncs; the finished file is synced, then renamed over the output, then its folder
    synced; GDAL's settings are restored; a failed write leaves the old output whole."""
    ws = _open(town)
    out = tmp_path / "out.gpkg"
    io.write_outputs(out, {"a": ws.structures}, provenance=ws.provenance(step="first"))
    events = request.getfixturevalue("sync_events")  # from here on
    seen: dict[str, str | None] = {}
    real_write = io.write._write_layer

    def write(frame, path, name, *, arrow):  # noqa: ANN001, ANN202
        seen.update({k: pyogrio.get_gdal_config_option(k) for k in io.write._TEMP_SQLITE})
        return real_write(frame, path, name, arrow=arrow)

    monkeypatch.setattr(io.write, "_write_layer", write)
    io.write_outputs(out, {"b": ws.conveyances}, provenance=ws.provenance(step="second"))
    # pyogrio reads GDAL's "OFF" back as False
    assert seen == {"OGR_SQLITE_SYNCHRONOUS": False, "OGR_SQLITE_JOURNAL": False}
    assert {k: pyogrio.get_gdal_config_option(k) for k in seen} == dict.fromkeys(seen)
    kinds = [e[0] for e in events]
    i = kinds.index("replace")
    assert kinds[i - 1] == "fsync" and ".ms4map-" in events[i - 1][1]  # the temporary file
    assert events[i] == ("replace", str(out))
    assert events[i + 1] == ("fsync", str(tmp_path))  # the folder's entry
    assert set(pyogrio.list_layers(out)[:, 0]) >= {"a", "b"}

    def boom(frame, path, name, *, arrow):  # noqa: ANN001, ANN202
        raise RuntimeError("disk full")

    monkeypatch.setattr(io.write, "_write_layer", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        io.write_outputs(out, {"c": ws.structures}, provenance=ws.provenance(step="third"))
    assert set(pyogrio.list_layers(out)[:, 0]) >= {"a", "b"}
    assert not list(tmp_path.glob(".ms4map-*"))
    assert {k: pyogrio.get_gdal_config_option(k) for k in seen} == dict.fromkeys(seen)


def test_a_file_system_that_cannot_sync_still_gets_the_output(
    town: Path, tmp_path: Path, monkeypatch
) -> None:
    """A share answering fsync with EINVAL gets the rename alone; an I/O error while
    syncing stops the write and keeps the old output."""
    import errno
    import os

    ws = _open(town)
    out = tmp_path / "out.gpkg"
    io.write_outputs(out, {"a": ws.structures}, provenance=ws.provenance(step="first"))

    def einval(fd: int) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "fsync", einval)
    io.write_outputs(out, {"b": ws.conveyances}, provenance=ws.provenance(step="second"))
    assert set(pyogrio.list_layers(out)[:, 0]) >= {"a", "b"}

    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", eio)
    with pytest.raises(OutputError, match=r"Cannot write '.*out\.gpkg': Input/output error\. Fix:"):
        io.write_outputs(out, {"c": ws.structures}, provenance=ws.provenance(step="third"))
    assert "c" not in set(pyogrio.list_layers(out)[:, 0])
    assert not list(tmp_path.glob(".ms4map-*"))


def test_dem_elsewhere_is_an_error(town: Path, tmp_path: Path) -> None:
    far = tmp_path / "far_dem.tif"
    with rasterio.open(
        far,
        "w",
        driver="GTiff",
        width=10,
        height=10,
        count=1,
        dtype="float32",
        crs=UTM18,
        transform=from_origin(X0 + 50_000, Y0, 5, 5),
    ) as dst:
        dst.write(np.ones((10, 10), "float32"), 1)
    with pytest.raises(ValidationError, match="does not overlap"):
        _open(town, dem=far)


def test_field_map_table_for_unknown_source_layer(town: Path) -> None:
    with pytest.raises(UsageError, match=r"\[structures.storm_structs\]"):
        _open(town, field_map={"structures": {"storm_structs": {"struct_id": "Structure_"}}})


def test_validate_report_never_overwrites_inputs(town: Path, tmp_path: Path, capsys) -> None:
    before = _tree_hash(tmp_path)
    args = ["validate", str(town), "--layer", "structures=storm_structures"]
    assert main([*args, "--report", str(town)]) == 4
    assert main([*args, "--report", str(town.with_name("town_dem.tif"))]) == 4
    assert _tree_hash(tmp_path) == before
    assert "Refusing to write" in capsys.readouterr().err
    # warnings only: the town has no 303(d) list, TMDL or waterbody layers (exit 1)
    assert main([*args, "--report", str(tmp_path / "qa" / "report.json")]) == 1
    assert '"summary"' in (tmp_path / "qa" / "report.json").read_text()
    assert '"missing_legal_layer"' in (tmp_path / "qa" / "report.json").read_text()


def _tiled_dem(path: Path) -> None:
    """A real 256 x 256 tiled, deflate-compressed float32 GeoTIFF around the town."""
    z = (100 + np.add.outer(np.arange(256), np.arange(256)) * 0.01).astype("float32")
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=256,
        height=256,
        count=1,
        dtype="float32",
        crs=UTM18,
        transform=from_origin(X0 - 100, Y0 + 100, 1, 1),
        nodata=-9999,
        tiled=True,
        blockxsize=64,
        blockysize=64,
        compress="deflate",
    ) as dst:
        dst.write(z, 1)


def test_dem_cut_off_in_its_header_is_an_input_error_with_a_fix(town: Path, tmp_path: Path) -> None:
    """A GeoTIFF cut off before its first directory ends cannot even be opened: the error
    names the file, GDAL's reason and what to do."""
    good = tmp_path / "good_dem.tif"
    _tiled_dem(good)
    bad = tmp_path / "cut_dem.tif"
    bad.write_bytes(good.read_bytes()[:64])  # the TIFF signature survives, little else
    with pytest.raises(rasterio.errors.RasterioIOError):
        rasterio.open(bad)
    for call in (lambda: io.read_dem(bad), lambda: _open(town, dem=bad)):
        with pytest.raises(InputOpenError) as err:
            call()
        msg = str(err.value)
        assert "cut_dem.tif" in msg and "cannot be opened" in msg
        assert "Fix:" in msg and "gdalinfo" in msg


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_truncated_or_corrupt_dem_is_an_input_error_naming_the_file(
    damage: str, town: Path, tmp_path: Path, capsys
) -> None:
    good = tmp_path / "good_dem.tif"
    _tiled_dem(good)
    assert np.isfinite(io.read_dem(good).array).all()  # the intact file reads
    data = good.read_bytes()
    bad = tmp_path / f"{damage}_dem.tif"
    if damage == "truncated":  # the header survives, the last tiles are cut off
        bad.write_bytes(data[: len(data) // 2])
    else:  # garbage in the middle of the compressed tiles
        mid = len(data) // 2
        bad.write_bytes(data[:mid] + bytes(range(256)) * 4 + data[mid + 1024 :])
    with rasterio.open(bad) as src:  # it still opens: only reading its blocks fails
        assert src.shape == (256, 256)
    with pytest.raises(InputOpenError, match=f"{damage}_dem.tif"):
        io.read_dem(bad)
    with pytest.raises(InputOpenError, match="truncated or corrupt"):
        _open(town, dem=bad)
    rc = main(
        [
            "drainage",
            str(town),
            "--layer",
            "structures=storm_structures",
            "--layer",
            "conveyances=storm_pipes",
            "--dem",
            str(bad),
            "--out",
            str(tmp_path / "out.gpkg"),
        ]
    )
    out = capsys.readouterr()
    assert rc == 3, out
    assert f"{damage}_dem.tif" in out.err and "cannot be read" in out.err
    assert "internal error" not in out.err and "Traceback" not in out.err
    assert not (tmp_path / "out.gpkg").exists()


def test_one_zip_check_refuses_links_and_climbing_paths_for_the_cli_too(tmp_path):
    import stat

    from ms4map.io.sources import check_zip

    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as zf:
        info = zipfile.ZipInfo("passwd.geojson")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(InputOpenError, match="link or special file"):
        check_zip(link)
    slip = tmp_path / "slip.zip"
    with zipfile.ZipFile(slip, "w") as zf:
        zf.writestr("a/../../evil.geojson", "{}")
    with pytest.raises(InputOpenError, match="outside the archive"):
        check_zip(slip)
    ok = tmp_path / "ok.zip"
    with zipfile.ZipFile(ok, "w") as zf:
        zf.writestr("shp/parcels.geojson", "{}")
    assert [i.filename for i in check_zip(ok)] == ["shp/parcels.geojson"]


@pytest.mark.parametrize(
    ("dtype", "nodata"),
    [
        ("float32", -9999.0),
        ("float32", -3.4028234663852886e38),
        ("int16", -32768),
        ("float64", 0.1),
    ],
)
def test_dem_nodata_read_from_the_values_equals_gdals_mask(tmp_path: Path, dtype, nodata) -> None:
    import rasterio
    from rasterio.transform import from_origin

    rng = np.random.default_rng(0)
    z = (rng.random((40, 50)) * 100).astype(dtype)
    z[3:7, 4:9] = nodata  # a hole
    z[0, 0] = nodata
    path = tmp_path / "dem.tif"
    profile = dict(driver="GTiff", width=50, height=40, count=1, dtype=dtype, nodata=nodata)
    profile.update(crs="EPSG:26918", transform=from_origin(500000, 4700000, 2, 2))
    profile.update(tiled=True, blockxsize=16, blockysize=16, compress="deflate")
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(z, 1)
    with rasterio.open(path) as src:
        expected = src.read(1, masked=True).astype("float64").filled(np.nan)
    got = io.read_dem(path).array
    assert np.array_equal(got, expected, equal_nan=True)
    assert np.isnan(got).sum() == 21


def test_output_layer_with_a_column_arrow_cannot_type_is_still_written(tmp_path: Path) -> None:
    import pyogrio

    path = tmp_path / "out.gpkg"
    mixed = pd.DataFrame({"value": [1, "x", None], "n": [1.0, 2.0, 3.0]})
    from ms4map.io import write

    write._write_layer(mixed, path, "t", arrow=True)  # Arrow refuses int + str: GDAL writes it
    back = pyogrio.read_dataframe(path, layer="t")
    assert back["value"].tolist()[:2] == ["1", "x"] and back["n"].tolist() == [1.0, 2.0, 3.0]


def test_the_cli_names_the_output_it_cannot_write(tmp_path, monkeypatch, capsys) -> None:
    """A disk that fails while an output is written: exit 3, the file named and the fix,
    not an "internal error"; no output and no temporary file left."""
    import errno
    import os

    def eio(a, b) -> None:  # noqa: ANN001
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", eio)
    out = tmp_path / "outfalls.csv"
    code = main(["trace", str(ms4map.datasets.get_path("alder_falls")), "--all", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert f"Cannot write '{out}': No space left on device. Fix:" in err
    assert "internal error" not in err
    assert not out.exists() and not list(tmp_path.glob(".ms4map-*"))


# ---- open_workspace(roles=...): only the roles asked for are resolved and read -----------
def _outfalls_and_a_broken_parcels_layer(tmp_path: Path) -> Path:
    """A GeoPackage with two outfalls and a ``parcels`` layer GDAL lists but cannot read
    (its table is a view of a table that is gone)."""
    import sqlite3

    gpkg = tmp_path / "town.gpkg"
    gpd.GeoDataFrame(
        {"outfall_id": ["OF-1", "OF-2"], "receiving_water": ["Mill Creek", "Mill Creek"]},
        geometry=[Point(X0, Y0), Point(X0 + 100, Y0)],
        crs=UTM18,
    ).to_file(gpkg, layer="outfalls")
    gpd.GeoDataFrame({"SBL": ["1.-1-1"]}, geometry=[_square(X0, Y0 + 50)], crs=UTM18).to_file(
        gpkg, layer="parcels"
    )
    con = sqlite3.connect(gpkg)
    try:
        triggers = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'parcels'"
        for (name,) in con.execute(triggers).fetchall():
            con.execute(f'DROP TRIGGER "{name}"')
        con.execute("DROP TABLE parcels")
        con.execute("CREATE VIEW parcels AS SELECT fid, geom, SBL FROM gone")
        con.commit()
    finally:
        con.close()
    return gpkg


@pytest.mark.parametrize("parcels", ["unreadable", "absent"])
def test_roles_open_only_the_roles_asked_for(
    parcels: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if parcels == "unreadable":
        gpkg, layers = _outfalls_and_a_broken_parcels_layer(tmp_path), None
        refused = "Cannot read layer 'parcels'"
    else:  # named, but no such layer
        gpkg = tmp_path / "town.gpkg"
        gpd.GeoDataFrame(
            {"outfall_id": ["OF-1", "OF-2"]},
            geometry=[Point(X0, Y0), Point(X0 + 100, Y0)],
            crs=UTM18,
        ).to_file(gpkg, layer="outfalls")
        layers = {"parcels": "tax_parcels"}
        refused = "Layer 'tax_parcels' does not exist"
    with pytest.raises(InputOpenError, match=refused):  # every role: parcels too
        io.open_workspace(gpkg, layers=layers, no_dem=True)

    read: list[str] = []
    real = io.open.read_source

    def spy(source):  # noqa: ANN001, ANN202
        read.append(source.label)
        return real(source)

    monkeypatch.setattr(io.open, "read_source", spy)
    ws = io.open_workspace(gpkg, layers=layers, no_dem=True, roles=("outfalls",))
    assert read == ["outfalls"]
    assert list(ws.layers) == ["outfalls"] and ws.parcels is None
    assert sorted(ws.outfalls["outfall_id"]) == ["OF-1", "OF-2"]
    assert ws.crs.to_epsg() == 26918
    assert not [f for f in ws.qa.findings if "parcels" in f.message or f.layer == "parcels"]
    assert ws.settings["layers"] == {"outfalls": ["outfalls"]}


def test_roles_name_canonical_roles(town: Path) -> None:
    with pytest.raises(UsageError, match="Unknown layer role 'outfall'"):
        io.open_workspace(town, roles=("outfall",))
    ws = io.open_workspace(town, roles="parcels")  # one role as a string
    assert list(ws.layers) == ["parcels"]
    with pytest.raises(ValidationError) as exc:  # none of the roles asked for is there
        io.open_workspace(town, roles=("outfalls",))
    assert "looked for layers named outfalls)" in str(exc.value.report.errors[0].message)
