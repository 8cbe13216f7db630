"""Case deadlines from the three bundled profiles, worked out by hand."""

from __future__ import annotations

import datetime as dt

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.core import calendar
from ms4map.core.errors import DataError


def _deadlines(r: rec.Records, cid: int, today: str) -> dict[str, tuple]:
    d = r.deadlines(today=today, case_id=cid)
    return {k: (due, st) for k, due, st in zip(d["deadline"], d["due"], d["status"], strict=True)}


def _case(r: rec.Records, *, deadline: str | None = None, appeal: bool = True) -> int:
    cid = r.open_case("OF-1", "2025-06-02", again=True)  # several cases of one store
    r.advance_case(cid, "source_found", "2025-06-04", parcel_id="P-1")
    r.advance_case(cid, "notice_sent", "2025-06-06", deadline=deadline)
    return cid


def test_stillwater_deadlines(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo", profile="stillwater")
    cid = _case(r, deadline="2025-06-30")
    # remedy: the date in the notice; appeal: 15 days after Fri 2025-06-06 = Sat
    # 2025-06-21, so the landowner may still appeal on Mon 2025-06-23 (GCL 25-a)
    assert _deadlines(r, cid, "2025-06-10") == {
        "remedy": ("2025-06-30", "due"),
        "appeal_window": ("2025-06-23", "window_open"),
    }
    assert _deadlines(r, cid, "2025-06-22")["appeal_window"] == ("2025-06-23", "window_open")
    assert _deadlines(r, cid, "2025-06-24")["appeal_window"] == ("2025-06-23", "window_closed")
    reason = r.deadlines(today="2025-06-22", case_id=cid).set_index("deadline")["reason"]
    assert "ends on 2025-06-21, a Saturday" in reason["appeal_window"]
    assert "section 25-a" in reason["appeal_window"]
    assert _deadlines(r, cid, "2025-07-01") == {
        "remedy": ("2025-06-30", "overdue"),
        "appeal_window": ("2025-06-23", "window_closed"),
    }
    r.advance_case(cid, "appeal_filed", "2025-06-15")
    # hearing within 30 days of filing: 2025-07-15
    assert _deadlines(r, cid, "2025-07-16")["appeal_hearing"] == ("2025-07-15", "overdue")
    r.advance_case(cid, "appeal_decided", "2025-07-10", outcome="upheld")  # a Thursday
    r.advance_case(cid, "corrected", "2025-07-18")
    r.advance_case(cid, "closed", "2025-07-20")
    d = _deadlines(r, cid, "2025-07-21")
    assert d["appeal_window"] == ("2025-06-23", "met")  # filed 06-15
    assert d["appeal_hearing"] == ("2025-07-15", "met")  # decided 07-10
    assert d["decision_filed"] == ("2025-07-15", "overdue")  # 5 days, not recorded as filed
    # 5 business days after Thu 2025-07-10: Fri 11, Mon 14, Tue 15, Wed 16, Thu 17
    assert d["corrective_action"] == ("2025-07-17", "late")  # corrected 07-18
    # the timely appeal replaced the notice's remedy deadline (corrective_action after
    # the upheld decision is the one that counts): not "late"
    assert d["remedy"] == ("2025-06-30", "appealed")
    assert d["records_retention"] == ("2028-07-20", "keep")  # 3 years
    assert _deadlines(r, cid, "2028-07-21")["records_retention"][1] == "may_discard"


def test_stillwater_remedy_left_to_the_notice(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo", profile="stillwater")
    with pytest.raises(DataError, match="needs the remedy deadline the notice sets"):
        _case(r)  # issue 28 item 16: a notice without its remedy deadline is refused
    cid = int(r.cases()["case_id"].iloc[0])
    r.advance_case(cid, "notice_sent", "2025-06-06", deadline="2025-06-20")
    d = r.deadlines(today="2025-06-10", case_id=cid).set_index("deadline")
    assert d.loc["remedy", "status"] == "due"
    assert "recorded in the notice" in d.loc["remedy", "reason"]
    r.correct("cases", cid, remedy_deadline="2025-07-01")
    assert _deadlines(r, cid, "2025-06-10")["remedy"] == ("2025-07-01", "due")


def test_kingsbury_deadlines(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo", profile="kingsbury")
    cid = _case(r)
    # 48 hours after the notice of Fri 2025-06-06 -> Sun 2025-06-08, so Mon 06-09 (GCL
    # 25-a); appeal 15 days -> Sat 06-21, so Mon 06-23
    assert _deadlines(r, cid, "2025-06-07") == {
        "remedy": ("2025-06-09", "due"),
        "appeal_window": ("2025-06-23", "window_open"),
    }
    assert r.cases()["remedy_deadline"].iloc[0] == "2025-06-09"  # as recorded
    r.advance_case(cid, "eliminated", "2025-06-09")
    r.advance_case(cid, "closed", "2025-06-30")
    d = _deadlines(r, cid, "2025-07-01")
    assert d["remedy"] == ("2025-06-09", "met")  # on the Monday: in time
    assert d["records_retention"] == ("2032-06-30", "keep")  # 7 years


def test_kiryas_joel_states_no_periods(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo", profile="kiryas_joel")
    cid = _case(r, deadline="2025-06-16")
    r.advance_case(cid, "appeal_filed", "2025-06-10")
    r.advance_case(cid, "appeal_decided", "2025-06-20", outcome="upheld")
    r.advance_case(cid, "closed", "2025-06-30")
    d = r.deadlines(today="2025-07-01", case_id=cid).set_index("deadline")
    assert d["status"].to_dict() == {
        "remedy": "overdue",
        "appeal_window": "not_stated",
        "appeal_hearing": "not_stated",
        "decision_filed": "not_stated",
        "corrective_action": "not_stated",
        "records_retention": "not_stated",
    }
    assert "appeal_days = 'not stated'" in d.loc["appeal_window", "reason"]
    assert d.drop(index="remedy")["due"].isna().all()


def test_business_days_and_bad_steps(tmp_path) -> None:
    assert calendar.add_business_days(dt.date(2025, 7, 11), 1) == dt.date(2025, 7, 14)  # Fri -> Mon
    r = rec.open_records(make_town(tmp_path), user="smo")
    cid = r.open_case("OF-1", "2025-06-02")
    with pytest.raises(DataError, match="Unknown case step 'fixed'"):
        r.advance_case(cid, "fixed", "2025-06-03")
    with pytest.raises(DataError, match="'appeal_outcome' is needed"):
        r.advance_case(cid, "appeal_decided", "2025-06-03")
    r.advance_case(cid, "source_found", "2025-06-03", parcel_id="P-1")
    with pytest.raises(DataError, match="'remedy_deadline' = 2025-06-01 is before"):
        r.advance_case(cid, "notice_sent", "2025-06-04", deadline="2025-06-01")


def test_new_york_public_holidays_by_the_statute() -> None:
    """General Construction Law section 24, worked out for 2025 by hand from a calendar."""
    assert sorted(calendar.ny_public_holidays(2025)) == [
        dt.date(2025, 1, 1),  # Wed, New Year's day
        dt.date(2025, 1, 20),  # third Monday of January
        dt.date(2025, 2, 12),  # Wed, Lincoln's birthday
        dt.date(2025, 2, 17),  # third Monday of February
        dt.date(2025, 5, 26),  # last Monday of May
        dt.date(2025, 6, 19),  # Thu, Juneteenth
        dt.date(2025, 7, 4),  # Fri
        dt.date(2025, 9, 1),  # first Monday of September
        dt.date(2025, 10, 13),  # second Monday of October
        dt.date(2025, 11, 4),  # general election: the Tuesday after Monday Nov 3
        dt.date(2025, 11, 11),  # Tue, Veterans' day
        dt.date(2025, 11, 27),  # fourth Thursday of November
        dt.date(2025, 12, 25),  # Thu
    ]
    # on a Sunday: the Monday after; on a Saturday: not moved (the statute moves only Sundays)
    assert dt.date(2022, 12, 26) in calendar.ny_public_holidays(2022)  # Christmas 2022 was a Sunday
    assert dt.date(2022, 12, 25) not in calendar.ny_public_holidays(2022)
    assert dt.date(2027, 7, 5) in calendar.ny_public_holidays(2027)  # July 4, 2027 is a Sunday
    assert calendar.is_business_day(dt.date(2026, 7, 3))  # Fri before Saturday July 4, 2026
    assert not calendar.is_business_day(dt.date(2026, 7, 4))
    assert dt.date(2019, 6, 19) not in calendar.ny_public_holidays(2019)  # Juneteenth from 2020


def test_business_days_skip_public_holidays() -> None:
    # 5 business days after Fri 2025-11-21: Mon 24, Tue 25, Wed 26, (Thu 27 Thanksgiving),
    # Fri 28, Mon Dec 1
    assert calendar.add_business_days(dt.date(2025, 11, 21), 5) == dt.date(2025, 12, 1)
    # after Fri 2025-06-27: Mon 30, Tue Jul 1, Wed 2, Thu 3, (Fri 4), Mon 7
    assert calendar.add_business_days(dt.date(2025, 6, 27), 5) == dt.date(2025, 7, 7)
    # Christmas 2022 on a Sunday: Monday the 26th is the holiday
    assert calendar.add_business_days(dt.date(2022, 12, 23), 1) == dt.date(2022, 12, 27)


def test_corrective_action_deadline_skips_thanksgiving(tmp_path) -> None:
    """Kingsbury: corrected within five business days of the decision upholding the notice.
    Decided Wed 2025-11-26: Fri 28, Mon Dec 1, Tue 2, Wed 3, Thu 4 (Thanksgiving, Thu 27,
    is not a business day)."""
    r = rec.open_records(make_town(tmp_path), user="smo", profile="kingsbury")
    cid = r.open_case("OF-1", "2025-11-03")
    r.advance_case(cid, "source_found", "2025-11-05", parcel_id="P-1")
    r.advance_case(cid, "notice_sent", "2025-11-06")
    r.advance_case(cid, "appeal_filed", "2025-11-10")
    r.advance_case(cid, "appeal_decided", "2025-11-26", outcome="upheld")
    d = r.deadlines(today="2025-12-04", case_id=cid).set_index("deadline")
    assert d.loc["corrective_action", "due"] == "2025-12-04"
    assert d.loc["corrective_action", "status"] == "due"
    assert "General Construction Law section 24" in d.loc["corrective_action", "reason"]


def test_a_period_ending_on_a_holiday_runs_to_the_next_business_day(tmp_path) -> None:
    """General Construction Law section 25-a, by hand: a Kingsbury notice of Sat
    2026-09-05 has 48 hours to Mon 2026-09-07, Labor day, so Tue 09-08; its 15 days of
    appeal end on Sun 09-20, so Mon 09-21.  The municipality's own deadlines keep the
    plain count: the hearing 30 days after an appeal filed Mon 09-21 is Wed 10-21."""
    assert calendar.last_day(dt.date(2026, 9, 7)) == dt.date(2026, 9, 8)
    assert calendar.last_day(dt.date(2026, 9, 9)) == dt.date(2026, 9, 9)  # a Wednesday
    # Christmas on a Friday, then the weekend: Mon 2026-12-28
    assert calendar.last_day(dt.date(2026, 12, 25)) == dt.date(2026, 12, 28)
    r = rec.open_records(make_town(tmp_path), user="smo", profile="kingsbury")
    cid = r.open_case("OF-1", "2026-09-01")
    r.advance_case(cid, "source_found", "2026-09-02", parcel_id="P-1")
    r.advance_case(cid, "notice_sent", "2026-09-05")
    d = r.deadlines(today="2026-09-08", case_id=cid).set_index("deadline")
    assert (d.loc["remedy", "due"], d.loc["remedy", "status"]) == ("2026-09-08", "due")
    assert "ends on 2026-09-07, Labor day" in d.loc["remedy", "reason"]
    assert (d.loc["appeal_window", "due"], d.loc["appeal_window", "status"]) == (
        "2026-09-21",
        "window_open",
    )
    r.advance_case(cid, "appeal_filed", "2026-09-21")
    d = r.deadlines(today="2026-10-22", case_id=cid).set_index("deadline")
    assert d.loc["appeal_window", "status"] == "met"
    assert (d.loc["appeal_hearing", "due"], d.loc["appeal_hearing", "status"]) == (
        "2026-10-21",
        "overdue",
    )


def test_an_old_record_of_the_plain_remedy_date_is_read_with_the_extension(tmp_path) -> None:
    """A Kingsbury case recorded before the rule, with the plain 48-hour date (Sun
    2025-06-08), reads as due on Mon 2025-06-09 like a new one; a date the officer wrote
    in the notice is kept as written."""
    r = rec.open_records(make_town(tmp_path), user="smo", profile="kingsbury")
    old = _case(r, deadline="2025-06-08")  # as ms4map recorded it before
    assert _deadlines(r, old, "2025-06-09")["remedy"] == ("2025-06-09", "due")
    own = _case(r, deadline="2025-06-14")  # a Saturday the officer chose
    assert _deadlines(r, own, "2025-06-16")["remedy"] == ("2025-06-14", "overdue")
