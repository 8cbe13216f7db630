"""`ms4map batch`: many towns give the same answers as one town at a time.

Towns: the bundled demo (copied into tmp), the tiny valley town of
``test_hydrology_overland_fixtures`` written as a GeoPackage + DEM, and a copy of the tiny town
whose DEM is corrupt.  The in-process runs (``--scheduler none``) are compared with
``ms4map drainage`` and ``ms4map screen --all`` on each workspace; the Dask tests
(``test_batch_dask.py``) compare with these.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import rasterio
from geopandas.testing import assert_geodataframe_equal
from test_hydrology_overland_fixtures import CRS18, TR, town_dem, town_layers

import ms4map
from ms4map import __version__, pipeline
from ms4map.batch import LAYERS, SUMMARY_COLUMNS, read_manifest
from ms4map.cli import main
from ms4map.io import open_workspace, read_provenance


# ---------------------------------------------------------------------------------------
# towns
# ---------------------------------------------------------------------------------------
def write_tiny_town(folder: Path) -> Path:
    """The valley town (36 parcels, 2 outfalls on a creek listed for phosphorus, every
    third parcel on septic) as ``folder/town.gpkg`` + ``folder/town_dem.tif``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "town.gpkg"
    layers = town_layers()
    parcels = layers["parcels"]
    parcels["sewer"] = np.where(np.arange(len(parcels)) % 3 == 0, "septic", "public")
    parcels["owner"] = [f"Owner {i}" for i in range(len(parcels))]
    parcels["owner_address"] = [f"{i} Main St" for i in range(len(parcels))]
    for role, gdf in layers.items():
        gdf.drop(columns=["src_layer", "src_fid"]).to_file(path, layer=role, driver="GPKG")
    gpd.GeoDataFrame(
        {
            "wb_id": ["1302-0001"],
            "pollutant": ["Phosphorus"],
            "category": ["5"],
            "list_year": [2018],
            "source": ["Urban runoff"],
        },
        geometry=[None],
        crs=CRS18,
    ).to_file(path, layer="impairments", driver="GPKG")
    arr = town_dem()
    with rasterio.open(
        folder / "town_dem.tif",
        "w",
        driver="GTiff",
        height=arr.shape[0],
        width=arr.shape[1],
        count=1,
        dtype="float64",
        crs=CRS18,
        transform=TR,
    ) as dst:
        dst.write(arr, 1)
    return path


def write_manifest(path: Path, towns: list[dict[str, str]]) -> Path:
    lines = []
    for t in towns:
        lines.append("[[town]]")
        lines += [f'{k} = "{v}"' for k, v in t.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def towns(tmp_path_factory) -> Path:
    """``towns/`` with ``demo/``, ``valley/`` and ``broken/`` (corrupt DEM)."""
    root = tmp_path_factory.mktemp("towns")
    demo = root / "demo"
    demo.mkdir()
    shutil.copyfile(ms4map.datasets.get_path("alder_falls"), demo / "demo.gpkg")
    shutil.copyfile(
        ms4map.datasets.get_path("alder_falls").with_name("demo_dem.tif"), demo / "demo_dem.tif"
    )
    write_tiny_town(root / "valley")
    write_tiny_town(root / "broken")
    (root / "broken" / "town_dem.tif").write_bytes(b"II*\x00 this is not a GeoTIFF" * 10)
    return root


@pytest.fixture(scope="module")
def first_run(towns, tmp_path_factory):
    """``ms4map batch`` (scheduler none) on demo, valley and broken."""
    man = write_manifest(
        towns / "batch.toml",
        [
            {"name": "alder-falls", "workspace": "demo/demo.gpkg"},
            {"name": "valley", "workspace": "valley/town.gpkg", "profile": "kingsbury"},
            {"name": "broken", "workspace": "broken/town.gpkg"},
        ],
    )
    out = tmp_path_factory.mktemp("batch_out")
    return man, out


@pytest.fixture(scope="module")
def first_result(first_run):
    man, out = first_run
    import contextlib
    import io

    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        code = main(["batch", str(man), "--out", str(out), "--scheduler", "none"])
    return code, std.getvalue(), err.getvalue()


def single_commands(workspace: Path, out: Path, *profile: str) -> Path:
    """`ms4map drainage` then `ms4map screen --all` into one GeoPackage."""
    assert main(["drainage", str(workspace), "--out", str(out), "--quiet"]) == 0
    assert main(["screen", str(workspace), "--all", "--out", str(out), *profile]) == 0
    return out


def read_layer(path: Path, layer: str) -> pd.DataFrame:
    return pyogrio.read_dataframe(path, layer=layer)


def assert_same_outputs(batch_gpkg: Path, ref_gpkg: Path) -> None:
    """Every layer equal, and the provenance equal but for time and the batch record."""
    for layer in LAYERS:
        a, b = read_layer(batch_gpkg, layer), read_layer(ref_gpkg, layer)
        assert len(a) == len(b), layer
        if isinstance(a, gpd.GeoDataFrame):
            assert_geodataframe_equal(a, b, check_less_precise=False)
        else:
            pd.testing.assert_frame_equal(a, b)
        pa, pb = read_provenance(batch_gpkg, layer), read_provenance(ref_gpkg, layer)
        assert pa["batch"]["key"]["name"] == batch_gpkg.stem
        for p in (pa, pb):
            p.pop("created")
            p.pop("batch", None)
        assert pa == pb, layer


def summary(out: Path) -> pd.DataFrame:
    s = pd.read_csv(out / "summary.csv", dtype={"error": str}).set_index("name")
    s["error"] = s["error"].fillna("")
    return s


# ---------------------------------------------------------------------------------------
# one run in this process
# ---------------------------------------------------------------------------------------
def test_batch_failed_town_is_isolated_and_exit_1(first_run, first_result):
    _, out = first_run
    code, std, err = first_result
    assert code == 1, err
    s = summary(out)
    assert list(s.reset_index().columns) == list(SUMMARY_COLUMNS)
    assert list(s.index) == ["alder-falls", "valley", "broken"]  # manifest order
    assert dict(s["status"]) == {"alder-falls": "ok", "valley": "ok", "broken": "failed"}
    assert (s.loc[["alder-falls", "valley"], "error"] == "").all()
    # the error names the town's file and the fix; the failed town has no output
    broken_err = s.loc["broken", "error"]
    assert "town_dem.tif" in broken_err and "fix" in broken_err.lower()
    assert not (out / "broken.gpkg").exists()
    assert not list(out.glob(".*partial*"))
    assert "town 'broken'" in err and "town_dem.tif" in err
    assert "3 town(s)" in std and "2 ok, 0 skipped, 1 failed" in std
    # a progress line per town, with the overall count
    for i, name in enumerate(["alder-falls", "valley", "broken"], start=1):
        assert f"[{i}/3] {name}: " in err


def test_batch_equals_single_commands_on_demo(towns, first_run, first_result, tmp_path):
    _, out = first_run
    assert first_result[0] == 1
    ref = single_commands(towns / "demo" / "demo.gpkg", tmp_path / "demo_ref.gpkg")
    assert_same_outputs(out / "alder-falls.gpkg", ref)


def test_batch_equals_single_commands_on_small_town_with_profile(
    towns, first_run, first_result, tmp_path
):
    _, out = first_run
    assert first_result[0] == 1
    ref = single_commands(
        towns / "valley" / "town.gpkg", tmp_path / "valley_ref.gpkg", "--profile", "kingsbury"
    )
    assert_same_outputs(out / "valley.gpkg", ref)
    assert read_provenance(out / "valley.gpkg", "screening")["settings"]["profile"] == "kingsbury"


def test_summary_counts_are_those_of_the_layers(towns, first_run, first_result):
    _, out = first_run
    assert first_result[0] == 1
    s = summary(out)
    for name, ws_path in (("alder-falls", "demo/demo.gpkg"), ("valley", "valley/town.gpkg")):
        scr = read_layer(out / f"{name}.gpkg", "screening")
        sep = read_layer(out / f"{name}.gpkg", "septic")
        net = pipeline.run(open_workspace(towns / ws_path)).network
        assert s.loc[name, "parcels"] == len(scr) > 0
        assert s.loc[name, "condition_a_parcels"] == (scr["condition_a_text"] == "yes").sum() > 0
        assert s.loc[name, "septic_flagged"] == sep["flagged"].sum()
        assert s.loc[name, "outfalls"] == len(net.outfalls) > 0
        assert float(s.loc[name, "seconds"]) > 0
        # parcels whose runoff leaves the DEM: those of the drainage layer's off_dem rows
        dr = read_layer(out / f"{name}.gpkg", "parcel_drainage")
        off = dr.loc[dr["target_kind"] == "off_dem", "parcel_id"].nunique()
        assert s.loc[name, "off_dem_parcels"] == off
    assert s.loc["valley", "parcels"] == 36 and s.loc["valley", "outfalls"] == 2
    assert s.loc["broken", ["parcels", "outfalls"]].isna().all()  # no counts when failed


def test_towns_whose_runoff_leaves_the_dem_are_reported(first_run, first_result):
    """The demo's DEM ends at the town's north and south edges: parcels there drain off
    it, so the run names the town and says how many parcels, and the fix."""
    _, out = first_run
    code, _, err = first_result
    n = int(summary(out).loc["alder-falls", "off_dem_parcels"])
    assert n > 100  # the rows of the north and south edges
    assert "alder-falls: ok in" in err and f"; {n} drain partly off the DEM" in err
    warning = next(line for line in err.splitlines() if line.startswith("ms4map: warning: in "))
    assert f"alder-falls ({n} parcels)" in warning and "wider margin" in warning
    valley = int(summary(out).loc["valley", "off_dem_parcels"])
    assert (f"valley ({valley} parcels)" in warning) == (valley > 0)
    assert "broken (" not in warning  # a failed town has no counts


def test_rerun_skips_unchanged_towns_and_retries_failed(first_run, first_result, capsys):
    man, out = first_run
    assert first_result[0] == 1
    stamp = {n: (out / f"{n}.gpkg").stat().st_mtime_ns for n in ("alder-falls", "valley")}
    before = summary(out)
    code = main(["batch", str(man), "--out", str(out), "--scheduler", "none"])
    assert code == 1  # broken is still broken
    s = summary(out)
    assert dict(s["status"]) == {
        "alder-falls": "skipped",
        "valley": "skipped",
        "broken": "failed",
    }
    cols = ["parcels", "condition_a_parcels", "septic_flagged", "outfalls"]
    pd.testing.assert_frame_equal(
        s.loc[["alder-falls", "valley"], cols], before.loc[["alder-falls", "valley"], cols]
    )
    for n, t in stamp.items():
        assert (out / f"{n}.gpkg").stat().st_mtime_ns == t, n
    assert "2 skipped" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------
# skip / --force / changed inputs (the small town only)
# ---------------------------------------------------------------------------------------
@pytest.fixture
def valley_batch(tmp_path):
    ws = write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "b.toml", [{"name": "v1", "workspace": "v/town.gpkg"}])
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    return ws, man, out


def test_force_recomputes_an_up_to_date_town(valley_batch):
    _, man, out = valley_batch
    t = (out / "v1.gpkg").stat().st_mtime_ns
    argv = ["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "skipped"
    assert (out / "v1.gpkg").stat().st_mtime_ns == t
    assert main([*argv, "--force"]) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    assert (out / "v1.gpkg").stat().st_mtime_ns != t


def test_changed_input_profile_or_incomplete_output_is_recomputed(valley_batch):
    ws, man, out = valley_batch
    argv = ["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]
    # a changed input file (one more septic parcel)
    parcels = gpd.read_file(ws, layer="parcels")
    parcels.loc[1, "sewer"] = "septic"
    parcels.to_file(ws, layer="parcels", driver="GPKG")
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "skipped"
    # a changed profile in the manifest
    write_manifest(man, [{"name": "v1", "workspace": "v/town.gpkg", "profile": "kingsbury"}])
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    # an output missing a layer (e.g. an older partial run) is not up to date
    import sqlite3

    with sqlite3.connect(out / "v1.gpkg") as con:
        con.execute("DELETE FROM provenance WHERE layer = 'septic'")
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    # another ms4map version
    with sqlite3.connect(out / "v1.gpkg") as con:
        n = con.execute(
            "UPDATE provenance SET value = replace(value, ?, ?)",
            (f'"version": "{__version__}"', '"version": "0.0.0"'),
        ).rowcount
    # every layer, and the traced network and surface catchments for a SWMM model (issue 33)
    assert n == len(LAYERS) + len(("structures", "conveyances", "outfalls", "surface_catchments"))
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"


# ---------------------------------------------------------------------------------------
# bad manifests: usage errors (exit 4) before any town runs
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ('[[town]]\nname = "a"\nworkspace = "nowhere/town.gpkg"\n', ["town #1 'a'", "nowhere"]),
        (
            '[[town]]\nname = "a"\nworkspace = "v/town.gpkg"\n'
            '[[town]]\nname = "A"\nworkspace = "v/town.gpkg"\n',
            ["town #2 'A'", "already used by town #1"],
        ),
        (
            '[[town]]\nname = "a"\nworkspace = "v/town.gpkg"\nprofile = "atlantis"\n',
            ["town 'a'", "Unknown profile 'atlantis'", "stillwater"],
        ),
        ('[[town]]\nname = "../a"\nworkspace = "v/town.gpkg"\n', ["'../a'", "path separators"]),
        ('[[town]]\nname = "a/b"\nworkspace = "v/town.gpkg"\n', ["'a/b'", "safe file name"]),
        ('[[town]]\nname = "Aux.1"\nworkspace = "v/town.gpkg"\n', ["'Aux.1'", "device name"]),
        ('[[town]]\nworkspace = "v/town.gpkg"\n', ["town #1", "`name` is missing"]),
        (
            '[[town]]\nname = "a"\nworkspace = "v/town.gpkg"\nprofle = "x"\n',
            ["unknown key(s) ['profle']"],
        ),
        (
            '[[town]]\nname = "a"\nworkspace = "v/town.gpkg"\nimpairments = "no.csv"\n',
            ["impairments CSV 'no.csv' does not exist"],
        ),
        (
            '[[town]]\nname = "a"\nworkspace = "v/town.gpkg"\npollutants = ["kryptonite"]\n',
            ["town 'a'", "kryptonite"],
        ),
        ('[towns]\nname = "a"\n', ["unknown key(s) ['towns']", "[[town]]"]),
        ("", ["lists no town"]),
        ('[[town]\nname = "a"\n', ["not valid TOML"]),
    ],
)
def test_bad_manifest_is_usage_error_before_any_town(tmp_path, capsys, text, expect):
    write_tiny_town(tmp_path / "v")
    man = tmp_path / "bad.toml"
    man.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code = main(["batch", str(man), "--out", str(out), "--scheduler", "none"])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "bad.toml" in err
    for e in expect:
        assert e in err, (e, err)
    assert not out.exists()  # nothing ran, nothing was written


def test_every_manifest_problem_is_listed_at_once(tmp_path):
    write_tiny_town(tmp_path / "v")
    man = write_manifest(
        tmp_path / "m.toml",
        [
            {"name": "ok", "workspace": "v/town.gpkg"},
            {"name": "x/y", "workspace": "v/town.gpkg"},
            {"name": "gone", "workspace": "gone.gpkg"},
        ],
    )
    from ms4map.core.errors import UsageError

    with pytest.raises(UsageError) as exc:
        read_manifest(man)
    msg = str(exc.value)
    assert "2 problem(s)" in msg and "'x/y'" in msg and "gone.gpkg" in msg


def test_manifest_paths_relative_to_it_and_workspace_manifest(tmp_path):
    write_tiny_town(tmp_path / "v")
    (tmp_path / "v" / "ws.toml").write_text('workspace = "town.gpkg"\n', encoding="utf-8")
    sub = tmp_path / "lists"
    sub.mkdir()
    man = write_manifest(sub / "m.toml", [{"name": "t", "workspace": "../v/ws.toml"}])
    (town,) = read_manifest(man)
    assert town.workspace == str((tmp_path / "v" / "ws.toml").resolve())
    assert town.profile == "stillwater"
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]) == 0
    assert len(read_layer(out / "t.gpkg", "screening")) == 36


def test_missing_manifest_file_exit_3(tmp_path, capsys):
    code = main(["batch", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o")])
    assert code == 3
    assert "none.toml" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "started"),
    [
        ([], True),  # local is the default
        (["--scheduler", "local:3"], True),
        (["--sched", "LOCAL"], True),  # as argparse reads it
        (["--scheduler", "none"], False),
        (["--scheduler=tcp://127.0.0.1:1"], False),
        (["--scheduler", "locl"], False),  # the parser says what is wrong
        (["--help"], False),
    ],
)
def test_the_cli_starts_the_worker_server_before_its_parser(tmp_path, monkeypatch, args, started):
    """`ms4map batch` with a local scheduler starts the workers' fork server before the
    parser is built (building it imports geopandas for the other commands), and only then."""
    import ms4map.batch
    import ms4map.cli as cli

    events = []
    monkeypatch.setattr(ms4map.batch, "start_worker_server", lambda: events.append("server"))
    build = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda: events.append("parser") or build())
    missing = str(tmp_path / "none.toml")
    code = main(["batch", missing, "--out", str(tmp_path / "o"), *args])
    assert code in (0, 3, 4)
    assert events[:2] == (["server", "parser"] if started else ["parser"])


@pytest.mark.parametrize(
    ("scheduler", "expect"),
    [("local:0", "whole number >= 1"), ("locl", "not one of local")],
)
def test_bad_scheduler_is_usage_error(tmp_path, capsys, scheduler, expect):
    write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "m.toml", [{"name": "t", "workspace": "v/town.gpkg"}])
    code = main(["batch", str(man), "--out", str(tmp_path / "o"), "--scheduler", scheduler])
    assert code == 4
    assert expect in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_unreachable_scheduler_is_usage_error_before_any_town(tmp_path, capsys):
    write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "m.toml", [{"name": "t", "workspace": "v/town.gpkg"}])
    out = tmp_path / "o"
    code = main(["batch", str(man), "--out", str(out), "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "Cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err and "Fix" in err
    assert not list(out.glob("*.gpkg"))


def test_output_over_an_input_is_refused(tmp_path, capsys):
    write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "m.toml", [{"name": "town", "workspace": "v/town.gpkg"}])
    before = (tmp_path / "v" / "town.gpkg").read_bytes()
    code = main(["batch", str(man), "--out", str(tmp_path / "v"), "--scheduler", "none"])
    err = capsys.readouterr().err
    assert code == 4
    assert "town 'town'" in err and "Refusing to write into input file 'town.gpkg'" in err
    assert (tmp_path / "v" / "town.gpkg").read_bytes() == before
    (tmp_path / "f").write_text("x")
    code = main(["batch", str(man), "--out", str(tmp_path / "f"), "--scheduler", "none"])
    assert code == 4 and "is a file" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# per-town screening options, an ms4map bug in one town
# ---------------------------------------------------------------------------------------
def test_impairments_csv_and_pollutants_as_the_screen_options(tmp_path):
    ws = write_tiny_town(tmp_path / "v")
    csv = Path(__file__).resolve().parents[1] / "data" / "waters_303d_good.csv"
    shutil.copyfile(csv, tmp_path / "v" / "303d.csv")
    man = tmp_path / "m.toml"
    man.write_text(
        '[[town]]\nname = "v"\nworkspace = "v/town.gpkg"\nimpairments = "v/303d.csv"\n'
        'pollutants = ["phosphorus", "nitrogen"]\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]) == 0
    opts = [
        "--impairments",
        str(tmp_path / "v" / "303d.csv"),
        "--pollutants",
        "phosphorus,nitrogen",
    ]
    ref = single_commands(ws, tmp_path / "ref.gpkg", *opts)
    assert_same_outputs(out / "v.gpkg", ref)
    prov = read_provenance(out / "v.gpkg", "screening")["settings"]
    assert prov["impairments"].endswith("303d.csv")
    assert "nitrogen" in prov["pollutants_of_concern"]
    # the CSV is part of what the output was made from
    argv = ["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]
    assert main(argv) == 0 and summary(out).loc["v", "status"] == "skipped"
    with open(tmp_path / "v" / "303d.csv", "a", encoding="utf-8") as fh:
        fh.write("1302-0002,Other Creek,River,Nitrogen,Urban/Storm Runoff,1,2018\n")
    assert main(argv) == 0 and summary(out).loc["v", "status"] == "ok"


def test_a_bug_in_one_town_is_reported_and_the_others_finish(tmp_path, monkeypatch, capsys):
    from ms4map.batch import town as batch

    write_tiny_town(tmp_path / "a")
    write_tiny_town(tmp_path / "b")
    man = write_manifest(
        tmp_path / "m.toml",
        [{"name": "a", "workspace": "a/town.gpkg"}, {"name": "b", "workspace": "b/town.gpkg"}],
    )
    real = batch._compute

    def compute(town, out):
        if town.name == "a":
            raise KeyError("parcel_id")
        return real(town, out)

    monkeypatch.setattr(batch, "_compute", compute)
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none"]) == 1
    s = summary(out)
    assert dict(s["status"]) == {"a": "failed", "b": "ok"}
    err = s.loc["a", "error"]
    assert "internal error (a bug in ms4map): KeyError" in err
    assert "a/town.gpkg" in err and "--debug" in err
    assert "town 'a'" in capsys.readouterr().err


def test_towns_go_to_a_cluster_largest_first(tmp_path):
    """The submission order: bytes of the workspace and its DEM, largest first (stable)."""
    from ms4map.batch import Town
    from ms4map.batch.cluster import _input_bytes

    for name, size in (("a", 10), ("b", 30), ("c", 10)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "town.gpkg").write_bytes(b"x" * size)
        (tmp_path / name / "town_dem.tif").write_bytes(b"x" * size * 2)
    (tmp_path / "m.toml").write_text('workspace = "b/town.gpkg"\ndem = "a/town_dem.tif"\n')
    towns = [Town(name=n, workspace=str(tmp_path / n / "town.gpkg")) for n in "abc"]
    towns.append(Town(name="m", workspace=str(tmp_path / "m.toml")))
    assert [_input_bytes(t) for t in towns] == [30, 90, 30, 50]
    assert [t.name for t in sorted(towns, key=_input_bytes, reverse=True)] == ["b", "m", "a", "c"]
    assert _input_bytes(Town(name="x", workspace=str(tmp_path / "none.gpkg"))) == 0


def test_the_off_dem_warning_names_ten_towns_then_counts_the_rest(tmp_path, capsys):
    """A state run may have hundreds of such towns: the closing warning names ten and
    points to the summary for the others (the valley town has 4 parcels draining off)."""
    write_tiny_town(tmp_path / "v")
    names = [f"v{i:02d}" for i in range(12)]
    man = write_manifest(
        tmp_path / "twelve.toml", [{"name": n, "workspace": "v/town.gpkg"} for n in names]
    )
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]) == 0
    err = capsys.readouterr().err
    (warning,) = [line for line in err.splitlines() if line.startswith("ms4map: warning: in ")]
    assert warning.startswith("ms4map: warning: in 12 town(s) ")
    assert all(f"{n} (4 parcels)" in warning for n in names[:10])
    assert "v10 (" not in warning and "and 2 more (summary.csv, column off_dem_parcels)" in warning
    assert (summary(out)["off_dem_parcels"] == 4).all()


def test_a_town_without_its_303d_layer_counts_undetermined_not_no(tmp_path, capsys):
    """The valley town without its impairments layer (it has no TMDL layer either): no
    parcel would be Condition A, and the summary and the progress line say that all 36
    are undetermined, so a 0 in condition_a_parcels is not read as a confident "no"."""
    write_tiny_town(tmp_path / "v")
    src, dst = tmp_path / "v" / "town.gpkg", tmp_path / "n" / "town.gpkg"
    dst.parent.mkdir()
    for layer, _ in pyogrio.list_layers(src):
        if layer != "impairments":
            pyogrio.write_dataframe(pyogrio.read_dataframe(src, layer=layer), dst, layer=layer)
    shutil.copyfile(src.with_name("town_dem.tif"), dst.with_name("town_dem.tif"))
    man = write_manifest(
        tmp_path / "two.toml",
        [
            {"name": "with", "workspace": "v/town.gpkg"},
            {"name": "without", "workspace": "n/town.gpkg"},
        ],
    )
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none"]) == 0
    err = capsys.readouterr().err
    s = summary(out)
    scr = read_layer(out / "without.gpkg", "screening")
    assert s.loc["without", "condition_a_parcels"] == 0
    assert s.loc["without", "condition_a_undetermined"] == 36 == len(scr)
    assert set(scr["method"]) <= {"missing_layer", "unknown_drainage"}
    assert "without: ok in" in err and "0 would be Condition A (36 undetermined)" in err
    # with the layer: every parcel answered (its 4 off-DEM parcels still reach the creek)
    assert s.loc["with", "condition_a_undetermined"] == 0
    assert "36 would be Condition A, " in err
