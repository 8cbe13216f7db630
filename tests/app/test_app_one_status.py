"""AppTest, issue 28 item 6: one status per outfall on every page, count and PDF (the
outfalls layer's status merged with the records by ms4map.records.summary.outfall_status)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")

from test_app_records import OUTFALL, SMO, _login, _records, page  # noqa: E402
from test_app_records_forms import SMO_PW  # noqa: E402
from test_app_records_forms import with_users as with_users  # noqa: E402, F401

pytestmark = pytest.mark.slow


def _records_made(data: Path) -> None:
    smo = _records(data, SMO, "smo")
    smo.add_inspection(OUTFALL, "2025-06-02", flow_present=True, characterization="obvious")
    cid = smo.open_case(OUTFALL, "2025-06-03")
    smo.advance_case(cid, "source_found", "2025-06-04", parcel_id="106.12-2-14")
    smo.add_inspection("OF-021", "2025-06-02", flow_present=False)  # the layer said flowing


def test_inventory_counts_table_selector_and_pdf_read_one_status(
    with_users: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _records_made(with_users)
    from ms4map.app.pages import inventory

    drawn: dict[str, str] = {}

    def fake_pdf(ws, result, inv):  # what the printable map is given
        drawn.update(zip(inv["outfall_id"].astype(str), inv["status"].astype(str), strict=True))
        return b"%PDF-1.4 test"

    monkeypatch.setattr(inventory, "outfall_map_pdf", fake_pdf)
    at = _login(page("inventory").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    table = [d.value for d in at.dataframe if "sewershed_acres" in d.value.columns][0]
    status = dict(zip(table["outfall_id"], table["status"], strict=True))
    assert status[OUTFALL] == "illicit"  # the records, not the layer's "suspect"
    assert status["OF-004"] == "flowing"  # the layer's, no record
    assert status["OF-021"] == "not_flowing"  # an inspection replaced the layer's flow finding
    metric = [m for m in at.metric if m.label == "Flowing / suspect / illicit"][0]
    n = sum(v in ("flowing", "suspect", "illicit") for v in status.values())
    assert metric.value == str(n) == "2"
    [b for b in at.button if b.label == "Make the printable outfall map (PDF)"][0].click().run()
    assert drawn and drawn[OUTFALL] == "illicit" and drawn == status
    at = _login(page("investigation").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    box = at.selectbox(key="inv_outfall")
    assert any(o.startswith(f"{OUTFALL} — illicit") for o in box.options), box.options[:3]
    assert box.options[0].startswith(f"{OUTFALL} — illicit")  # illicit first


def test_map_panel_says_the_status_the_map_colours(with_users: Path) -> None:
    _records_made(with_users)
    at = _login(page("map").run(), SMO, SMO_PW)
    at.text_input(key="map_search_query").set_value("OF-004").run()
    assert not at.exception, [e.value for e in at.exception]
    line = [m.value for m in at.markdown if m.value.startswith("**Status**")]
    assert line and "**flowing**" in line[0] and "outfalls layer" in line[0]
