"""The screening page shows only the answer for the inputs on screen (issue 10, part 2).

AppTest on the bundled demo town, as ``tests/app/test_app.py``: a determination is cleared
with its downloads as soon as the site or the project changes; messages use the form's
words; a polygon typed as longitude, latitude gets a hint; the search says when a query
matches something that is not a parcel.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

PLAZA = "107.12-2-11"
TMDL_LOT = "102.15-2-9"


def _shown(text: str) -> str:
    """What a reader sees of a Markdown text: the app escapes values from the data."""
    return re.sub(r"\\(.)", r"\1", str(text))


def page() -> AppTest:
    return AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('screening')", default_timeout=120
    ).run()


def _screen(at: AppTest) -> AppTest:
    at.button(key="screen_submit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _downloads(at: AppTest) -> set[str]:
    return {b.label for b in at.get("download_button")}


def test_changing_the_parcel_clears_the_old_determination(app_env) -> None:
    at = page()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.number_input(key="screen_acres").set_value(1.0).run()
    _screen(at)
    assert _metrics(at)["Condition A"] == "YES"
    assert "Download report (PDF)" in _downloads(at)
    assert PLAZA in _shown(" ".join(m.value for m in at.markdown))
    at.text_input(key="screen_parcel_ids").set_value(TMDL_LOT).run()
    assert not _metrics(at) and not _downloads(at)  # nothing left from the plaza
    assert PLAZA not in _shown(" ".join(m.value for m in at.markdown))
    assert any("changed after the last screening" in i.value for i in at.info)
    at.number_input(key="screen_acres").set_value(0.5).run()
    at.number_input(key="screen_plan").set_value(3.0).run()
    _screen(at)
    assert _metrics(at)["Condition A"] == "YES"  # the TMDL lot, screened anew
    assert any(_shown(m.value).startswith(f"**Site:** {TMDL_LOT} (") for m in at.markdown)
    assert "Download JSON" in _downloads(at)


def test_changing_the_acres_clears_the_determination(app_env) -> None:
    at = page()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    _screen(at)
    assert _metrics(at)
    at.number_input(key="screen_acres").set_value(1.5).run()
    assert not _metrics(at) and not _downloads(at)
    at.selectbox(key="screen_type").set_value("commercial").run()
    _screen(at)
    assert _metrics(at)["Condition C"] == "YES"


def test_acreage_message_uses_the_form_words(app_env) -> None:
    at = page()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.number_input(key="screen_acres").set_value(50.0).run()
    _screen(at)
    msg = " ".join(e.value for e in at.error)
    assert "'Disturbed acres' (50 acres) is larger than the site itself" in msg
    assert "'Common plan of development acres'" in msg
    assert "disturbed_acres" not in msg and "common_plan_acres" not in msg


def test_polygon_typed_as_lon_lat_gets_a_hint(app_env) -> None:
    import ms4map

    ws = ms4map.open_workspace(ms4map.datasets.get_path("alder_falls"))
    p = ws.parcels[ws.parcels["parcel_id"] == PLAZA].to_crs(4326).geometry.iloc[0]
    c = p.representative_point()
    d = 0.0002
    corners = [(c.x - d, c.y - d), (c.x + d, c.y - d), (c.x + d, c.y + d)]
    at = page()
    at.radio(key="screen_mode").set_value("polygon").run()
    # longitude first: the mistake
    at.text_area(key="screen_vertices").set_value(
        "\n".join(f"{x:.6f}, {y:.6f}" for x, y in corners)
    ).run()
    at.number_input(key="screen_acres").set_value(0.1).run()
    _screen(at)
    msg = " ".join(e.value for e in at.error)
    assert "outside the town" in msg and "'latitude, longitude'" in msg
    assert "np.float64" not in msg and "EPSG" not in msg
    assert not _metrics(at)


def test_search_on_the_screening_page_says_what_a_structure_id_is(app_env) -> None:
    at = page()
    search = at.text_input(key="screen_search_query")
    assert "structure" not in search.label.lower()
    search.set_value("CB-0170").run()
    text = _shown(" ".join(c.value for c in at.caption))
    assert "CB-0170" in text and "not a parcel" in text
    assert "Nothing matches" not in text


def test_the_report_is_made_once_per_determination(app_env, monkeypatch) -> None:
    """The report bytes come from ``outputs.report_html`` / ``report_pdf`` (no file), made
    once for a determination, not again on each rerun; new application fields make a new
    determination, hence a new report."""
    from ms4map.app.pages import screening

    made: list[str] = []
    for kind in ("html", "pdf"):
        real = getattr(screening, f"report_{kind}")

        def counted(det, _real=real, _kind=kind):
            made.append(_kind)
            return _real(det)

        monkeypatch.setattr(screening, f"report_{kind}", counted)
    at = page()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    _screen(at)
    assert {"Download report (HTML)", "Download report (PDF)"} <= _downloads(at)
    assert sorted(made) == ["html", "pdf"]
    at.run()
    at.radio(key="screen_mode").set_value("parcels").run()
    assert sorted(made) == ["html", "pdf"]  # reruns reuse the report
    at.text_input(key="screen_applicant").set_value("Jane Roe").run()
    assert sorted(made) == ["html", "html", "pdf", "pdf"]
    assert at.session_state["screen_det"].doc["application"]["applicant"] == "Jane Roe"


def test_words_for_people_profiles_and_receiving_waters(app_env) -> None:
    """Municipality profiles by their municipality, not their file code; a receiving water
    reached through the storm sewer in words, not the code 'ms4'."""
    at = page()
    profiles = at.selectbox(key="screen_profile")
    assert "Village of Kiryas Joel" in profiles.options
    assert not [o for o in profiles.options if "_" in o], profiles.options
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.number_input(key="screen_acres").set_value(2.0).run()
    _screen(at)
    text = " ".join(m.value for m in at.markdown)
    assert "through the storm sewer (MS4)" in text
    assert "via ms4" not in text and "['ms4']" not in text
    assert "**Project:** 2 acres disturbed" in text
