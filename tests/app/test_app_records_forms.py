"""AppTest, issue 28 items 1-3 and 16: the sample box holds the plan's proposal after each
save, a step stays on the chosen case, a refused form keeps what was typed, a saved sample
is confirmed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")

from test_app_records import (  # noqa: E402
    OUTFALL,
    SMO,
    SMO_PW,
    VIEWER,
    VIEWER_PW,
    _button,
    _login,
    _records,
    _texts,
    page,
)

from ms4map.records import users  # noqa: E402


@pytest.fixture()
def with_users(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo town with an SMO and a viewer, no users file nor records from the env."""
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    from ms4map.app import auth

    auth.reset_rate_limit()
    users.add_user(SMO, "smo", SMO_PW)
    users.add_user(VIEWER, "viewer", VIEWER_PW)
    return app_env


pytestmark = pytest.mark.slow


def test_each_sample_is_taken_at_the_structure_the_heading_proposes(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    cid = smo.open_case(OUTFALL, "2025-07-01", origin="complaint")
    at = _login(page("cases").run(), SMO, SMO_PW)
    taken = []
    for i in range(3):
        assert not at.exception, [e.value for e in at.exception]
        proposed = _records(with_users).next_sample(cid)["struct_id"]
        if not proposed:
            break
        assert f"Next structure to sample: {proposed}" in _texts(at)
        box = at.text_input(key="cases_sample_struct")
        assert box.value == proposed, (i, box.value, proposed)  # the box follows the heading
        at.selectbox(key="cases_sample_result").set_value("flow" if i % 2 == 0 else "clean")
        at = _button(at, "Save the sample").click().run()
        taken.append(proposed)
        assert f"Sample {i + 1} saved: {proposed}" in _texts(at)  # a confirmation
    assert len(taken) >= 2
    assert _records(with_users).samples(cid)["struct_id"].tolist() == taken


def test_a_step_is_recorded_on_the_chosen_case_and_the_choice_stays(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    ids = [
        smo.open_case(OUTFALL, f"2025-07-0{d}", origin="complaint", again=True) for d in (1, 2, 3)
    ]
    at = _login(page("cases").run(), SMO, SMO_PW)
    assert at.selectbox(key="cases_case").value == ids[-1]  # the newest first
    at.selectbox(key="cases_case").set_value(ids[1]).run()
    at.selectbox(key="cases_step").set_value("investigation").run()
    at = _button(at, "Record the step").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="cases_case").value == ids[1]  # still the chosen case
    assert f"Case {ids[1]}: investigation recorded" in _texts(at)
    # the box's labels stay (a changing label reset the box now and then in the
    # browser); the case's current step is said under it, not stale
    assert f"Case {ids[1]} is at the step: investigation." in _texts(at)
    at.selectbox(key="cases_step").set_value("source_found").run()
    at.text_input(key="cases_parcel").set_value("106.12-2-14")
    at = _button(at, "Record the step").click().run()
    assert not at.exception, [e.value for e in at.exception]
    cases = _records(with_users).cases().set_index("case_id")["status"].to_dict()
    assert cases == {ids[0]: "opened", ids[1]: "source_found", ids[2]: "opened"}


def test_a_refused_inspection_keeps_the_field_sheet(with_users: Path) -> None:
    at = _login(page("investigation").run(), SMO, SMO_PW)
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    at.selectbox(key="inv_f_flow_present").set_value("yes")
    at.selectbox(key="inv_f_odor").set_value(2)
    at.number_input(key="inv_f_detergents").set_value(0.4)
    at.number_input(key="inv_f_ammonia").set_value(5000.0)  # a typo
    at.text_area(key="inv_f_notes").set_value("grey water at the headwall")
    at = _button(at, "Save the inspection").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("ammonia" in e.value for e in at.error)  # names the bad field
    # everything else is still there
    assert at.selectbox(key="inv_f_flow_present").value == "yes"
    assert at.selectbox(key="inv_f_odor").value == 2
    assert at.number_input(key="inv_f_detergents").value == pytest.approx(0.4)
    assert at.text_area(key="inv_f_notes").value == "grey water at the headwall"
    at.number_input(key="inv_f_ammonia").set_value(5.0)
    at = _button(at, "Save the inspection").click().run()
    assert f"Inspection 1 of {OUTFALL} recorded" in _texts(at)
    assert at.text_area(key="inv_f_notes").value == ""  # a saved sheet starts empty
    ins = _records(with_users).inspections()
    assert ins["notes"].tolist() == ["grey water at the headwall"]
    assert ins["ammonia"].tolist() == [5.0]


def test_a_refused_sample_and_case_keep_what_was_typed(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    smo.open_case(OUTFALL, "2025-07-01", origin="complaint")
    at = _login(page("cases").run(), SMO, SMO_PW)
    at.text_input(key="cases_sample_struct").set_value("NO-SUCH-1")
    at.selectbox(key="cases_sample_result").set_value("clean")
    at.number_input(key="cases_sample_det").set_value(0.2)
    at = _button(at, "Save the sample").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.error and "NO-SUCH-1" in at.error[0].value
    assert at.text_input(key="cases_sample_struct").value == "NO-SUCH-1"
    assert at.selectbox(key="cases_sample_result").value == "clean"
    assert at.number_input(key="cases_sample_det").value == pytest.approx(0.2)
    # the same case twice (same day, origin, description) is refused; the form stays
    import datetime as dt

    smo.open_case(OUTFALL, dt.date.today(), origin="complaint", description="soap smell")
    at = _login(page("investigation").run(), SMO, SMO_PW)
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    at.selectbox(key="inv_case_origin").set_value("complaint")
    at.text_input(key="inv_case_desc").set_value("soap smell")
    at = _button(at, "Open the case").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("recorded twice" in e.value for e in at.error)
    assert at.text_input(key="inv_case_desc").value == "soap smell"
    assert at.selectbox(key="inv_case_origin").value == "complaint"


def test_the_chosen_case_is_in_the_address_and_a_new_session_keeps_it(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    ids = [smo.open_case(OUTFALL, f"2025-07-0{d}", origin="complaint", again=True) for d in (1, 2)]
    at = _login(page("cases").run(), SMO, SMO_PW)
    at.selectbox(key="cases_case").set_value(ids[0]).run()
    assert at.query_params["case"] == [str(ids[0])] or at.query_params["case"] == str(ids[0])
    fresh = page("cases")  # a reload: a new session with the same address
    fresh.query_params["case"] = str(ids[0])
    fresh = _login(fresh.run(), SMO, SMO_PW)
    assert fresh.selectbox(key="cases_case").value == ids[0]


def test_a_confirmation_stays_through_reruns_until_the_form_is_sent_again(
    with_users: Path,
) -> None:
    """A save's confirmation outlives reruns that only redraw the page (in the browser the
    map answering after a save reran the page and took the confirmation away); the next
    submission of the form replaces it, here with its refusal."""
    smo = _records(with_users, SMO, "smo")
    cid = smo.open_case(OUTFALL, "2025-07-01", origin="complaint")
    at = _login(page("cases").run(), SMO, SMO_PW)
    sid = _records(with_users).next_sample(cid)["struct_id"]
    at.selectbox(key="cases_sample_result").set_value("clean")
    at = _button(at, "Save the sample").click().run()
    said = f"Sample 1 saved: {sid}"
    assert said in _texts(at)
    at = at.run()  # a rerun that only redraws the page
    assert said in _texts(at)
    at.selectbox(key="cases_step").set_value("investigation").run()  # another widget
    assert said in _texts(at)
    at.text_input(key="cases_sample_struct").set_value("NO-SUCH-1")
    at = _button(at, "Save the sample").click().run()
    assert at.error and "NO-SUCH-1" in at.error[0].value
    assert said not in _texts(at)  # the refusal is the answer now, not the old save
