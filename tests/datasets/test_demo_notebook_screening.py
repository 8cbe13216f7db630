"""Execute notebooks/01_batch_screening.ipynb on the demo town (that it is stored
without outputs: tests/test_packaging.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the quick lane (-m "not slow and not browser") skips it

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "01_batch_screening.ipynb"


def test_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    demo = Path(
        os.environ.get("MS4MAP_DEMO_GPKG", "")
        or Path(__file__).resolve().parents[2] / "data" / "layers" / "demo.gpkg"
    )
    if not demo.exists():
        pytest.skip("the demo town (data/layers/demo.gpkg) is not built")
    out = tmp_path / "batch.gpkg"
    monkeypatch.setenv("MS4MAP_NOTEBOOK_OUT", str(out))
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(demo))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    assert out.exists()
    import geopandas as gpd

    scr = gpd.read_file(out, layer="screening")
    sep = gpd.read_file(out, layer="septic")
    assert len(scr) > 100 and {"yes", "no"} <= set(scr["condition_a_text"])
    assert sep["flagged"].any()
    assert os.path.getsize(out) > 0
