"""Issue 28 item 16 (records): the history sorts by number, the field-tests chart shows
one date and a y axis that fits the values, the plan does not read "After no samples yet"."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("streamlit")

from ms4map.app import records_ui  # noqa: E402


def test_history_sorts_records_by_their_number() -> None:
    hist = pd.DataFrame(
        {
            "record": ["sample 10 (case 1)", "sample 2 (case 1)", "inspection 11", "inspection 3"],
            "date": ["2025-06-02"] * 4,
        }
    )
    got = records_ui.sort_history(hist)["record"].tolist()
    assert got == ["inspection 3", "inspection 11", "sample 2 (case 1)", "sample 10 (case 1)"]


def test_one_date_is_drawn_with_points_and_the_axis_fits_the_value() -> None:
    hist = pd.DataFrame(
        {"record": ["inspection 1"], "date": ["2025-06-02"], "ammonia": [1.2]}
        | {t: [None] for t in ("detergents", "fluoride", "potassium")}
    )
    spec = records_ui.field_tests_chart(hist).to_dict()
    assert spec["mark"]["type"] == "line" and spec["mark"]["point"]  # a point per date
    domain = spec["encoding"]["y"]["scale"]["domain"]
    assert domain[0] == 0 and domain[1] > 1.2
    assert records_ui.field_tests_chart(hist.assign(ammonia=[None])) is None


def test_the_first_proposal_does_not_read_after_no_samples(tmp_path) -> None:
    import ms4map
    from ms4map.records import open_records

    rec = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="smo",
        records=tmp_path / "r.gpkg",
    )
    cid = rec.open_case("OF-009", "2025-06-03")
    nxt = rec.next_sample(cid)
    assert "no samples yet" not in nxt["reason"] and nxt["reason"].startswith("First sample")
    rec.add_sample(cid, nxt["struct_id"], "2025-06-04", result="flow")
    assert rec.next_sample(cid)["reason"].startswith(f"After {nxt['struct_id']}: flow")
