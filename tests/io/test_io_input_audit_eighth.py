"""Audit (eighth wave): bad input and file safety in the workspace files, worked by hand.

- a shapefile's input hash covers its sidecar files (.dbf, .shx, .prj, .cpg, .qix), so
  an attribute, CRS or encoding edit changes the provenance, the cache key and batch's
  up-to-date check; other formats are hashed by their bytes as before;
- field-map value maps are in the workspace settings (provenance) and so in the
  cache key: a changed value map recomputes;
- a manifest's boolean must be a TOML boolean (``repair_geometry = "false"`` meant true);
- a manifest's ``[layers]`` file is found beside the manifest, not in the current
  directory (a ``--layer`` path stays relative to the current directory);
- a manifest's ``[settings]`` (never applied) is refused, naming the option to use;
- a folder with two files of one stem is an error naming both and the fix;
- an output folder that cannot be created is an output error (exit 3), not usage (4).
"""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

import geopandas as gpd
import pytest
from shapely.geometry import LineString, Point, Polygon

from ms4map import io, pipeline
from ms4map.cli import main
from ms4map.core.errors import OutputError, UsageError
from ms4map.io.workspace import file_sha256

UTM18 = "EPSG:26918"
X0, Y0 = 600_000.0, 4_760_000.0


def _square(x: float, y: float, s: float = 20.0) -> Polygon:
    return Polygon([(x, y), (x + s, y), (x + s, y + s), (x, y + s)])


def _parcels(ids: list[str] | None = None, sewer: str = "septic") -> gpd.GeoDataFrame:
    ids = ids or ["P1", "P2"]
    return gpd.GeoDataFrame(
        {"parcel_id": ids, "sewer": [sewer] * len(ids)},
        geometry=[_square(X0 + i * 20, Y0) for i in range(len(ids))],
        crs=UTM18,
    )


def _network(gpkg: Path, kinds: tuple[str, str] = ("catch_basin", "outfall")) -> Path:
    """Two structures and one pipe in ``gpkg`` (layers structures, conveyances)."""
    gpd.GeoDataFrame(
        {"struct_id": ["CB1", "OF1"], "kind": list(kinds)},
        geometry=[Point(X0 + 10, Y0 - 5), Point(X0 + 60, Y0 - 5)],
        crs=UTM18,
    ).to_file(gpkg, layer="structures")
    gpd.GeoDataFrame(
        {"conv_id": ["C1"], "from_id": ["CB1"], "to_id": ["OF1"]},
        geometry=[LineString([(X0 + 10, Y0 - 5), (X0 + 60, Y0 - 5)])],
        crs=UTM18,
    ).to_file(gpkg, layer="conveyances")
    return gpkg


# ---- 1. a shapefile is hashed with its sidecar files -----------------------------------
def test_shapefile_hash_covers_dbf_prj_and_cpg(tmp_path: Path) -> None:
    gpkg = _network(tmp_path / "town.gpkg")
    shp = tmp_path / "parcels.shp"
    _parcels().to_file(shp)
    shp_bytes = shp.read_bytes()
    ws0 = io.open_workspace(gpkg, layers={"parcels": str(shp)})
    h0 = file_sha256(shp)
    assert ws0.inputs[str(shp.resolve())] == h0
    assert h0 != hashlib.sha256(shp_bytes).hexdigest()  # not the .shp alone

    # an attribute edit: the .shp is byte for byte the same, the .dbf is not
    _parcels(sewer="public").to_file(shp)
    assert shp.read_bytes() == shp_bytes
    h1 = file_sha256(shp)
    ws1 = io.open_workspace(gpkg, layers={"parcels": str(shp)})
    assert list(ws1.parcels["sewer"]) == ["public", "public"]
    assert h1 != h0
    assert ws1.inputs[str(shp.resolve())] == h1
    assert ws1.fingerprint() != ws0.fingerprint()  # the pipeline's cache key
    assert ws1.provenance()["inputs"][str(shp.resolve())] == h1

    # the CRS file and the encoding file count too; a spatial index when present
    prj = shp.with_suffix(".prj")
    prj.write_text(prj.read_text() + " ")
    h2 = file_sha256(shp)
    assert h2 != h1
    shp.with_suffix(".cpg").write_text("LATIN1")
    h3 = file_sha256(shp)
    assert h3 != h2
    shp.with_suffix(".qix").write_bytes(b"index")
    assert file_sha256(shp) != h3
    # a file of another stem beside it does not
    h4 = file_sha256(shp)
    (tmp_path / "other.dbf").write_bytes(b"x")
    assert file_sha256(shp) == h4

    # other formats are hashed by their bytes, as before
    gj = tmp_path / "parcels.geojson"
    _parcels().to_file(gj, driver="GeoJSON")
    assert file_sha256(gj) == hashlib.sha256(gj.read_bytes()).hexdigest()
    assert file_sha256(gpkg) == hashlib.sha256(gpkg.read_bytes()).hexdigest()
    dbf = tmp_path / "table.dbf"  # a table on its own, not a shapefile's sidecar
    dbf.write_bytes(b"rows")
    assert file_sha256(dbf) == hashlib.sha256(b"rows").hexdigest()


# ---- 2. value maps are in the settings, the provenance and the cache key ---------------
def test_value_map_is_recorded_and_changes_the_cache_key(tmp_path: Path) -> None:
    gpkg = _network(tmp_path / "town.gpkg", kinds=("X", "outfall"))
    _parcels().to_file(gpkg, layer="parcels")

    def opened(kind: str):
        fm = {"structures": {"values": {"kind": {"X": kind}}}}
        return io.open_workspace(gpkg, field_map=fm)

    inlet, manhole = opened("catch_basin"), opened("manhole")
    assert list(inlet.structures["kind"]) == ["catch_basin", "outfall"]
    assert list(manhole.structures["kind"]) == ["manhole", "outfall"]
    assert inlet.fingerprint() != manhole.fingerprint()
    assert inlet.provenance()["workspace_settings"]["value_maps"] == {
        "structures": {"kind": {"X": "catch_basin"}}
    }
    assert manhole.provenance()["workspace_settings"]["value_maps"] == {
        "structures": {"kind": {"X": "manhole"}}
    }
    # the same map opened again is the same key (the cache still hits)
    assert opened("catch_basin").fingerprint() == inlet.fingerprint()

    # the pipeline (no DEM: nearest inlet) recomputes for the changed map
    a = pipeline.run(inlet)
    b = pipeline.run(manhole)
    assert set(a.drainage["target_kind"]) == {"inlet"}
    assert set(a.drainage["target_id"]) == {"CB1"}
    assert "inlet" not in set(b.drainage["target_kind"])


# ---- 3. manifest booleans are TOML booleans ---------------------------------------------
def test_manifest_boolean_must_be_a_toml_boolean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _network(tmp_path / "town.gpkg")
    man = tmp_path / "town.toml"
    for text in ('"false"', '"no"', "0", "1"):
        man.write_text(f'workspace = "town.gpkg"\nrepair_geometry = {text}\n', encoding="utf-8")
        with pytest.raises(UsageError) as exc:
            io.open_workspace(man)
        msg = str(exc.value)
        assert f"repair_geometry = {text} is not a TOML boolean" in msg
        assert "repair_geometry = false (or true) without quotes" in msg
        assert main(["validate", str(man)]) == 4
        assert f"repair_geometry = {text}" in capsys.readouterr().err
    # TOML booleans read as before
    for text, value in (("false", False), ("true", True)):
        man.write_text(f'workspace = "town.gpkg"\nrepair_geometry = {text}\n', encoding="utf-8")
        assert io.load_manifest(man)["repair_geometry"] is value
        assert io.open_workspace(man).settings["repair_geometry"] is value


# ---- 4. manifest layer files relative to the manifest, --layer to the cwd --------------
def test_manifest_layer_file_is_found_beside_the_manifest_not_in_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    town, elsewhere = tmp_path / "town", tmp_path / "elsewhere"
    town.mkdir()
    elsewhere.mkdir()
    gpkg = _network(town / "town.gpkg")
    _parcels(["P1", "P2"]).to_file(town / "parcels.geojson", driver="GeoJSON")
    _parcels(["OLD-1", "OLD-2"]).to_file(elsewhere / "parcels.geojson", driver="GeoJSON")
    man = town / "town.toml"
    man.write_text(
        'workspace = "town.gpkg"\n[layers]\nparcels = "parcels.geojson"\n', encoding="utf-8"
    )
    monkeypatch.chdir(elsewhere)
    assert list(io.open_workspace(man).parcels["parcel_id"]) == ["P1", "P2"]
    assert io.load_manifest(man)["layers"] == {
        "parcels": [str((town / "parcels.geojson").resolve())]
    }
    # FILE::LAYER in a manifest too
    man.write_text(
        'workspace = "town.gpkg"\n[layers]\nparcels = "parcels.geojson::parcels"\n',
        encoding="utf-8",
    )
    assert list(io.open_workspace(man).parcels["parcel_id"]) == ["P1", "P2"]
    # a path on the command line (--layer) stays relative to the current directory
    ws = io.open_workspace(gpkg, layers={"parcels": "parcels.geojson"})
    assert list(ws.parcels["parcel_id"]) == ["OLD-1", "OLD-2"]


def test_manifest_layer_file_beside_the_workspace_when_not_beside_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, conf = tmp_path / "data", tmp_path / "conf"
    data.mkdir()
    conf.mkdir()
    _network(data / "town.gpkg")
    _parcels(["P1", "P2"]).to_file(data / "parcels.geojson", driver="GeoJSON")
    _parcels(["OLD-1", "OLD-2"]).to_file(tmp_path / "parcels.geojson", driver="GeoJSON")
    man = conf / "town.toml"
    man.write_text(
        'workspace = "../data/town.gpkg"\n[layers]\nparcels = "parcels.geojson"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)  # the cwd holds a parcels.geojson: never read
    assert list(io.open_workspace(man).parcels["parcel_id"]) == ["P1", "P2"]


# ---- 5. a manifest's [settings] is refused, never recorded as applied -------------------
def test_manifest_settings_are_refused_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _network(tmp_path / "town.gpkg")
    man = tmp_path / "town.toml"
    man.write_text(
        'workspace = "town.gpkg"\n[settings]\nsnap_tolerance_m = 3.0\n', encoding="utf-8"
    )
    with pytest.raises(UsageError) as exc:
        io.open_workspace(man)
    msg = str(exc.value)
    assert "[settings] snap_tolerance_m = 3.0" in msg
    assert "--snap-tolerance 3.0" in msg
    assert main(["trace", str(man), "--all", "--out", str(tmp_path / "t.csv")]) == 4
    assert "--snap-tolerance 3.0" in capsys.readouterr().err
    assert not (tmp_path / "t.csv").exists()

    man.write_text('workspace = "town.gpkg"\n[settings]\nspeed = "fast"\n', encoding="utf-8")
    with pytest.raises(UsageError, match=r'speed = "fast" \(not a setting of any command\)'):
        io.load_manifest(man)

    # an empty [settings] table claims nothing: nothing recorded
    man.write_text('workspace = "town.gpkg"\n[settings]\n', encoding="utf-8")
    wss = io.open_workspace(man).provenance()["workspace_settings"]
    assert wss["manifest"] == str(man)
    assert not [k for k in wss if k.startswith("manifest.")]


# ---- 6. a folder with two files of one stem ---------------------------------------------
def test_folder_with_two_files_of_one_stem_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    gpkg = _network(tmp_path / "net.gpkg")
    for role in ("structures", "conveyances"):
        gpd.read_file(gpkg, layer=role).to_file(ws_dir / f"{role}.geojson", driver="GeoJSON")
    _parcels(["P1", "P2"]).to_file(ws_dir / "parcels.shp")
    _parcels(["N1", "N2"]).to_file(ws_dir / "parcels.geojson", driver="GeoJSON")
    with pytest.raises(UsageError) as exc:
        io.open_workspace(ws_dir)
    msg = str(exc.value)
    assert "parcels.geojson and parcels.shp" in msg
    assert f"--layer parcels={ws_dir / 'parcels.geojson'}" in msg
    assert f"--layer parcels={ws_dir / 'parcels.shp'}" in msg
    assert main(["validate", str(ws_dir)]) == 4
    assert "parcels.shp" in capsys.readouterr().err
    # the fix works
    ws = io.open_workspace(ws_dir, layers={"parcels": str(ws_dir / "parcels.geojson")})
    assert list(ws.parcels["parcel_id"]) == ["N1", "N2"]
    assert list(ws.structures["struct_id"]) == ["CB1", "OF1"]


# ---- 7. an output folder that cannot be created: exit 3 ---------------------------------
def test_output_folder_that_cannot_be_created_is_an_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    with pytest.raises(OutputError) as exc:
        io.write.check_output_path(blocker / "sub" / "x.gpkg")
    assert exc.value.exit_code == 3
    assert f"cannot create folder '{(blocker / 'sub').resolve()}'" in str(exc.value)

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(OutputError, match="Permission denied") as exc:
        io.write_outputs(tmp_path / "new" / "x.gpkg", {}, provenance={})
    assert exc.value.exit_code == 3
    assert not (tmp_path / "new").exists()


def test_open_records_refuses_a_folder_with_two_files_of_one_stem(tmp_path: Path) -> None:
    """``open_records`` reads the outfalls as ``open_workspace`` does: a folder holding
    ``outfalls.shp`` and ``outfalls.geojson`` is refused naming both (it silently read the
    GeoJSON, so records could attach to the other file's outfalls)."""
    from ms4map.records import open_records

    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    gpkg = _network(tmp_path / "net.gpkg")
    outfalls = gpd.read_file(gpkg, layer="structures")
    outfalls = outfalls[outfalls["struct_id"] == "OF1"].rename(columns={"struct_id": "outfall_id"})
    outfalls.to_file(ws_dir / "outfalls.shp")
    outfalls.assign(outfall_id="OF-OTHER").to_file(ws_dir / "outfalls.geojson", driver="GeoJSON")
    with pytest.raises(UsageError) as exc:
        io.open_workspace(ws_dir, no_dem=True)
    assert "outfalls.geojson and outfalls.shp" in str(exc.value)
    with pytest.raises(UsageError) as exc:
        open_records(ws_dir, user="jsmith", records=tmp_path / "r.records.gpkg")
    assert "outfalls.geojson and outfalls.shp" in str(exc.value)
    # the fix the message names works for the records too
    rec = open_records(
        ws_dir,
        user="jsmith",
        records=tmp_path / "r.records.gpkg",
        layers={"outfalls": str(ws_dir / "outfalls.shp")},
    )
    assert list(rec.outfalls["outfall_id"]) == ["OF1"]


# ---- issue 29 item 11: a coordinate that is not a number ---------------------------------
@pytest.mark.parametrize("repair", [False, True])
def test_nan_coordinates_are_named_even_with_repair_geometry(
    tmp_path: Path, capsys: pytest.CaptureFixture, repair: bool
) -> None:
    """The QA report recommends --repair-geometry for invalid shapes; on a NaN corner
    that ended in 'internal error' (exit 70)."""
    gpkg = _network(tmp_path / "town.gpkg")
    parcels = _parcels(["P1", "P2", "P3"])
    nan = float("nan")
    parcels.loc[1, "geometry"] = Polygon([(X0, Y0), (nan, Y0), (X0 + 5, Y0 + 5), (X0, Y0)])
    parcels.to_file(gpkg, layer="parcels")
    argv = ["validate", str(gpkg), *(["--repair-geometry"] if repair else [])]
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert "nonfinite_coordinates" in out and "P2" in out and "not a number" in out


# ---- issue 29 item 14: a layer whose name holds '::' ---------------------------------------
def test_a_layer_named_with_double_colons_can_be_named(tmp_path: Path) -> None:
    """'x::y' was read as FILE x, LAYER y: 'File 'x' does not exist'."""
    gpkg = _network(tmp_path / "town.gpkg")
    _parcels(["P1", "P2", "P3"]).to_file(gpkg, layer="tax::parcels")
    ws = io.open_workspace(gpkg, layers={"parcels": "tax::parcels"})
    assert sorted(ws.layers["parcels"]["parcel_id"]) == ["P1", "P2", "P3"]
    ws = io.open_workspace(gpkg, layers={"parcels": f"{gpkg}::tax::parcels"})
    assert len(ws.layers["parcels"]) == 3
