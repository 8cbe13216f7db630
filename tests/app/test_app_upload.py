"""Uploads (limits, safe zip extraction), offline assets and the ``ms4map app`` command."""

from __future__ import annotations

import io
import os
import stat
import zipfile
from pathlib import Path

import pytest

from ms4map.app.static import asset_base_url, ensure_static_assets
from ms4map.app.upload import safe_extract_zip, store_upload
from ms4map.core.errors import InputOpenError

GEOJSON = (
    b'{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":"a"},'
    b'"geometry":{"type":"Point","coordinates":[-73.7,43.0]}}]}'
)


def _zip(members: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_zipped_layers_are_unpacked_into_the_data_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    up = store_upload(
        "town.zip", _zip({"shp/parcels.geojson": GEOJSON, "readme.txt": b"x"}), data_dir=data
    )
    assert [p.name for p in up.layers] == ["parcels.geojson"]
    assert up.skipped == ["readme.txt"]
    assert data in up.layers[0].parents
    assert _files(tmp_path) == {
        str(p.relative_to(tmp_path)) for p in up.folder.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize(
    ("members", "kwargs", "match"),
    [
        ({"../evil.geojson": GEOJSON}, {}, "outside the archive"),
        ({"/abs/evil.geojson": GEOJSON}, {}, "outside the archive"),
        ({"a/../../evil.geojson": GEOJSON}, {}, "outside the archive"),
        ({"C:/evil.geojson": GEOJSON}, {}, "outside the archive"),
        ({f"f{i}.geojson": GEOJSON for i in range(6)}, {"max_members": 5}, "members"),
        ({"big.geojson": b"x" * 5000}, {"max_unpacked": 1000}, "unpacks to more"),
    ],
)
def test_unsafe_zips_are_refused_and_nothing_is_written(
    tmp_path: Path, members: dict, kwargs: dict, match: str
) -> None:
    data = tmp_path / "data"
    with pytest.raises(InputOpenError, match=match):
        store_upload("evil.zip", _zip(members), data_dir=data, **kwargs)
    assert _files(tmp_path) == set()


def test_symlink_members_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputOpenError, match="link or special file"):
        store_upload(
            "link.zip",
            _zip({"a.geojson": GEOJSON}, symlink="passwd.geojson"),
            data_dir=tmp_path / "data",
        )
    assert _files(tmp_path) == set()


def test_a_zip_bomb_lying_in_its_headers_stops_while_extracting(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    archive.write_bytes(_zip({"a.geojson": b"0" * 50_000}))
    # rewrite the recorded size so the header check passes, then extraction must stop
    raw = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        info = zf.infolist()[0]
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = (10).to_bytes(4, "little")  # uncompressed size in the central dir
    archive.write_bytes(bytes(raw))
    with pytest.raises(InputOpenError):
        safe_extract_zip(archive, tmp_path / "out", max_unpacked=1000)
    assert info.file_size == 50_000


def test_oversized_and_empty_and_non_spatial_uploads(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with pytest.raises(InputOpenError, match="upload limit"):
        store_upload("big.gpkg", b"x" * 2048, data_dir=data, max_bytes=1024)
    with pytest.raises(InputOpenError, match="empty"):
        store_upload("none.gpkg", b"", data_dir=data)
    with pytest.raises(InputOpenError, match="no spatial layer"):
        store_upload("table.csv", b"a,b\n1,2\n", data_dir=data)
    assert _files(tmp_path) == set()


def test_upload_names_cannot_climb_out(tmp_path: Path) -> None:
    up = store_upload("../../x/evil.geojson", GEOJSON, data_dir=tmp_path / "data")
    assert up.layers[0].name == "evil.geojson"
    assert (tmp_path / "data") in up.layers[0].parents


def test_offline_assets_are_copied_once(tmp_path: Path) -> None:
    vendor = ensure_static_assets(tmp_path / "static")
    leaflet = vendor / "leaflet" / "leaflet.js"
    assert leaflet.stat().st_size > 100_000
    assert (vendor / "leaflet" / "images" / "layers.png").exists()
    assert (vendor / "jquery" / "jquery.min.js").exists()
    mtime = leaflet.stat().st_mtime_ns
    ensure_static_assets(tmp_path / "static")
    assert leaflet.stat().st_mtime_ns == mtime  # idempotent: not copied again
    assert asset_base_url("") == "/app/static/vendor"
    assert asset_base_url("/ms4/") == "/ms4/app/static/vendor"


def test_app_command_serves_static_files_and_passes_the_workspace(tmp_path: Path) -> None:
    from ms4map.cli.app import app_command

    cmd = app_command(str(tmp_path / "town.gpkg"), port=8765, headless=True)
    assert cmd[1:4] == ["-m", "streamlit", "run"]
    assert Path(cmd[4]).name in ("app.py", "ms4map_app.py")
    i = cmd.index("--server.enableStaticServing")
    assert cmd[i + 1] == "true"
    assert cmd[-2:] == ["--", str(tmp_path / "town.gpkg")]
    assert "8765" in cmd


def test_app_command_refuses_a_missing_workspace(tmp_path: Path) -> None:
    from ms4map.cli import main

    assert main(["app", str(tmp_path / "missing.gpkg")]) == 3


def test_launcher_is_written_in_the_data_folder(tmp_path: Path, monkeypatch) -> None:
    from ms4map.cli import app as cli_app

    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(cli_app, "__file__", str(tmp_path / "site" / "ms4map" / "cli" / "app.py"))
    script = cli_app.launcher_script()
    assert script == tmp_path / "app" / "ms4map_app.py"
    assert "from ms4map.app import main" in script.read_text()
    assert os.access(script, os.R_OK)
