"""Zips from macOS and Windows (issue 28 item 11): layers in sub-folders are found,
``__MACOSX/`` and ``._*`` entries are ignored, and only a real ambiguity (two
``parcels.shp`` in different folders) is refused, naming both paths.  In the CLI (a zip
as the workspace) and the app's upload."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import pytest
from test_hydrology_overland_fixtures import town_layers

from ms4map.app.upload import store_upload
from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.io import list_source_layers, open_workspace

JUNK = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        "  # an AppleDouble header


def _shapefiles(folder: Path, roles=("parcels", "structures", "conveyances", "outfalls")):
    folder.mkdir(parents=True, exist_ok=True)
    layers = town_layers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for role in roles:
            layers[role].drop(columns=["src_layer", "src_fid"], errors="ignore").to_file(
                folder / f"{role}.shp"
            )
    return sorted(folder.iterdir())


def _mac_zip(tmp_path: Path, inner: str = "Town Data") -> Path:
    """What macOS's Compress makes of a folder: the files in the folder, and an
    AppleDouble ``__MACOSX/<folder>/._<file>`` beside each."""
    files = _shapefiles(tmp_path / "src")
    out = tmp_path / "town.zip"
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(f"{inner}/", b"")
        for f in files:
            zf.write(f, f"{inner}/{f.name}")
            zf.writestr(f"__MACOSX/{inner}/._{f.name}", JUNK)
        zf.writestr(f"{inner}/.DS_Store", b"\x00\x00\x00\x01Bud1")
    return out


def test_a_macos_zip_with_a_folder_opens_as_a_workspace(tmp_path):
    z = _mac_zip(tmp_path)
    assert list_source_layers(z) == ["conveyances", "outfalls", "parcels", "structures"]
    ws = open_workspace(z)
    assert len(ws.layers["parcels"]) == len(town_layers()["parcels"])
    assert len(ws.layers["outfalls"]) == 2


def test_the_cli_validates_a_zip_with_a_folder(tmp_path, capsys):
    z = _mac_zip(tmp_path)
    code = main(["validate", str(z)])
    out = capsys.readouterr()
    assert code in (0, 1), out.err  # usable (warnings are fine), not refused
    assert "parcels" in out.out


def test_a_layer_named_by_its_path_in_the_zip(tmp_path):
    z = _mac_zip(tmp_path)
    ws = open_workspace(z, layers={"parcels": "Town Data/parcels.shp"}, roles=["parcels"])
    assert len(ws.layers["parcels"]) == len(town_layers()["parcels"])


def test_two_parcels_in_different_folders_are_refused_naming_both(tmp_path, capsys):
    files = _shapefiles(tmp_path / "src", roles=("parcels",))
    z = tmp_path / "two.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for folder in ("2023", "2024/final"):
            for f in files:
                zf.write(f, f"{folder}/{f.name}")
    with pytest.raises(UsageError, match="2023/parcels.shp") as err:
        open_workspace(z)
    assert "2024/final/parcels.shp" in str(err.value)
    assert main(["validate", str(z)]) == 4
    e = capsys.readouterr().err
    assert "'2023/parcels.shp' and '2024/final/parcels.shp'" in e


def test_an_app_upload_from_macos_keeps_the_real_layers_only(tmp_path):
    z = _mac_zip(tmp_path)
    up = store_upload("town.zip", z.read_bytes(), data_dir=tmp_path / "data")
    assert sorted(p.name for p in up.layers) == [
        "conveyances.shp",
        "outfalls.shp",
        "parcels.shp",
        "structures.shp",
    ]
    assert all(p.parent.name == "Town_Data" for p in up.layers)  # found in the folder
    assert not up.problems
    extracted = [p for p in (up.folder / "files").rglob("*") if p.is_file()]
    assert not [p for p in extracted if "MACOSX" in str(p) or p.name.startswith(".")]
    assert not [s for s in up.skipped if "MACOSX" in s or "DS_Store" in s]


def test_an_app_upload_with_two_parcels_is_refused_naming_both(tmp_path):
    files = _shapefiles(tmp_path / "src", roles=("parcels",))
    z = tmp_path / "two.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for folder in ("old", "new"):
            for f in files:
                zf.write(f, f"{folder}/{f.name}")
    data = tmp_path / "data"
    with pytest.raises(UsageError, match="new/parcels.shp") as err:
        store_upload("two.zip", z.read_bytes(), data_dir=data)
    assert "old/parcels.shp" in str(err.value)
    assert not [p for p in (data / "uploads").iterdir()]  # nothing kept


def test_a_zipped_single_layer_in_a_folder_feeds_a_role(tmp_path):
    files = _shapefiles(tmp_path / "src", roles=("parcels",))
    z = tmp_path / "parcels.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in files:
            zf.write(f, f"Export Folder/{f.name}")
            zf.writestr(f"__MACOSX/Export Folder/._{f.name}", JUNK)
    ws = open_workspace(None, layers={"parcels": str(z)}, roles=["parcels"])
    assert len(ws.layers["parcels"]) == len(town_layers()["parcels"])
