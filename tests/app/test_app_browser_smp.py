"""The SMPs on the Map page in chromium, offline (issue 31 item 4): a polygon practice whose
inspection is overdue is drawn in the overdue red, a point never inspected in grey, with
the legend under the map; nothing is fetched off localhost.

Same harness as ``tests/app/test_app_browser.py``.
"""

from __future__ import annotations

import datetime as dt
import os

import pytest
from shapely.geometry import Point, box
from test_app_browser import (
    ARTIFACTS,
    _browser,
    _free_port,
    _idle,
    _map_frame,
    _need_chromium,
    _serving,
    streamlit_cmd,
)

import ms4map
from ms4map.app.smp_map import SMP_COLOURS
from ms4map.records import open_records, smp

pytestmark = pytest.mark.browser


def test_the_map_draws_the_smps_by_inspection_status_offline(tmp_path) -> None:
    _need_chromium()
    data = tmp_path / "appdata"
    (data / "records").mkdir(parents=True)
    rec = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=data / "records" / "demo.records.gpkg",
    )
    x, y = rec.outfalls.geometry.iloc[0].coords[0]
    pond = smp.add_smp(
        rec, "Pond 1", "P-2", box(x + 20, y + 20, x + 80, y + 60), inspection_months=6
    )
    smp.inspect_smp(rec, pond, dt.date.today() - dt.timedelta(days=243))  # 8 months ago
    smp.add_smp(rec, "Rain garden 2", "rain_garden", Point(x - 40, y - 40))
    port = _free_port()
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    env.pop("MS4MAP_WORKSPACE", None)
    with _serving(streamlit_cmd(port), data, env, port) as url, _browser() as (page, off):
        page.goto(url)
        frame = _map_frame(page, selector=f'path[stroke="{SMP_COLOURS["overdue"]}"]')
        _idle(page)
        assert frame.locator(f'path[stroke="{SMP_COLOURS["never_inspected"]}"]').count() >= 1
        page.get_by_text("SMPs (stormwater management practices)").wait_for(timeout=30_000)
        assert page.get_by_text("inspection overdue (1)").count() >= 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "browser_map_smps.png"), full_page=True)
    assert not [u for u in off if "tile" not in u], off
