"""Issue 28 item 15: the printable outfall map: close outfalls' labels apart, headers
inside their columns, no raw projected coordinates, the statuses given."""

from __future__ import annotations

import re

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import box

pytest.importorskip("matplotlib")

from ms4map.io.workspace import Workspace  # noqa: E402
from ms4map.outputs import outfall_sheet  # noqa: E402

CRS = "EPSG:26918"
X0, Y0 = 600000.0, 4760000.0


@pytest.fixture()
def ws() -> Workspace:
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P-1"]}, geometry=[box(X0 - 400, Y0 - 300, X0 + 400, Y0 + 300)], crs=CRS
    )
    return Workspace(path=None, crs=parcels.crs, layers={"parcels": parcels})


def _inventory() -> pd.DataFrame:
    # four outfalls 12 m apart (overprinted before), one far away
    xs = [X0, X0 + 12, X0, X0 + 12, X0 + 300]
    ys = [Y0, Y0, Y0 + 12, Y0 + 12, Y0 + 200]
    return pd.DataFrame(
        {
            "outfall_id": [f"OF-00{i}" for i in range(1, 6)],
            "receiving_water": ["Alder Kill"] * 5,
            "status": ["illicit", "suspect", "flowing", "not_flowing", "unknown"],
            "sewershed_acres": [1.5, 2.0, 3.0, None, 4.25],
            "septic_parcels_upstream": [0, 3, 1, 0, 2],
            "x": xs,
            "y": ys,
        }
    )


def test_labels_of_close_outfalls_do_not_overprint(ws: Workspace) -> None:
    fig = outfall_sheet.map_figure(ws, None, _inventory(), title="t")
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().startswith("OF-")]
    assert sorted(t.get_text() for t in labels) == [f"OF-00{i}" for i in range(1, 6)]
    boxes = [t.get_window_extent(r) for t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)


def test_no_raw_projected_coordinates_and_a_scale_bar(ws: Workspace) -> None:
    fig = outfall_sheet.map_figure(ws, None, _inventory(), title="t")
    fig.canvas.draw()
    ax = fig.axes[0]
    assert not [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert not [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert ax.xaxis.get_offset_text().get_text() == ""
    assert any(re.fullmatch(r"\d+(\.\d+)? (m|km)", t.get_text()) for t in ax.texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "not flowing" in legend and "illicit" in legend  # the statuses given


def test_table_headers_fit_their_columns() -> None:
    inv = _inventory()
    fig = outfall_sheet.table_figures(inv)[0]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    tab = fig.axes[0].tables[0]
    header = {c: cell for (row, c), cell in tab.get_celld().items() if row == 0}
    assert "septic\nparcels\nupstream" in [h.get_text().get_text() for h in header.values()]
    for cell in header.values():
        t, c = cell.get_text().get_window_extent(r), cell.get_window_extent(r)
        assert t.x0 >= c.x0 - 0.5 and t.x1 <= c.x1 + 0.5, cell.get_text().get_text()
        assert t.y0 >= c.y0 - 0.5 and t.y1 <= c.y1 + 0.5, cell.get_text().get_text()
