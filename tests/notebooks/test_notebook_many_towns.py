"""Execute notebooks/02_many_towns.ipynb: three towns made from the demo town on a local
Dask cluster of two workers, one with a broken DEM, then a rerun (that it is stored
without outputs: tests/test_packaging.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the quick lane (-m "not slow and not browser") skips it

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "02_many_towns.ipynb"
DEMO = Path(__file__).resolve().parents[2] / "data" / "layers" / "demo.gpkg"


def test_notebook_runs_the_towns_and_the_rerun_skips(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("distributed")
    import pandas as pd
    import pyogrio

    if not DEMO.exists():
        pytest.skip("the demo town (data/layers/demo.gpkg) is not built")
    out = tmp_path / "out"
    monkeypatch.setenv("MS4MAP_NOTEBOOK_OUT", str(out))
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(DEMO))
    monkeypatch.setenv("MS4MAP_SCHEDULER", "local:2")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    # summary.csv is the rerun's: the two good towns up to date, the broken one tried again
    s = pd.read_csv(out / "results" / "summary.csv").set_index("name")
    assert s["status"].to_dict() == {
        "alder-falls": "skipped",
        "alder-falls-phosphorus": "skipped",
        "broken-dem": "failed",
    }
    assert "town_dem.tif" in s.loc["broken-dem", "error"] and "Fix" in s.loc["broken-dem", "error"]
    # phosphorus only: fewer parcels would be Condition A than for every pollutant
    assert (
        0
        < s.loc["alder-falls-phosphorus", "condition_a_parcels"]
        < s.loc["alder-falls", "condition_a_parcels"]
    )
    assert s.loc["alder-falls", "off_dem_parcels"] > 0  # the DEM ends at the town's edges
    a = pyogrio.read_dataframe(out / "results" / "alder-falls.gpkg", layer="screening")
    assert (a["condition_a_text"] == "yes").sum() == s.loc["alder-falls", "condition_a_parcels"]
    assert not (out / "results" / "broken-dem.gpkg").exists()
    # the notebook printed the failure and the rerun
    texts = "\n".join(
        str(o.get("text") or o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    assert "[3/3] broken-dem: failed" in texts and "alder-falls: skipped" in texts
