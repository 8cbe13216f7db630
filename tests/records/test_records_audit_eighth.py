"""IDDE records on what the eighth session's audit found, each worked out by hand.

- A case is judged by the profile it was opened under in every later session: a town's
  own profile (a TOML file, here Kingsbury's with a 30-day appeal) through the copy the
  records file keeps, even once the file is gone; it was judged by the session's
  profile (Stillwater's 15 days). A case whose profile is not at hand says so.
- A notice recorded in a session of another profile gets the case's law's remedy date.
- A timely appeal replaces the notice's remedy deadline (the remedy showed overdue
  forever after an overturned notice); a late one does not.
- ``decision_filed`` is a step (it could not be recorded, so it went overdue).
- A corrected notice date moves a remedy date the law set, not one the officer wrote.
- A step dated before a recorded one: the row is checked whole and the status is the
  last dated step.
- A correction is checked as the first recording was (parcel, inspection, samples).
- A users-file entry without a role is a viewer (as the app reads it), not an SMO.
- An outfall whose discharge came back after its elimination is not "eliminated".
"""

from __future__ import annotations

import sqlite3

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.core.errors import DataError
from ms4map.rules.profiles import builtin_profile_path


def _dl(r: rec.Records, cid: int, today: str) -> dict[str, tuple]:
    d = r.deadlines(today=today, case_id=cid)
    return {k: (due, st) for k, due, st in zip(d["deadline"], d["due"], d["status"], strict=True)}


def _noticed(r: rec.Records, notice: str, *, deadline: str | None = None) -> int:
    cid = r.open_case("OF-1", "2025-06-01", again=True)  # several cases of one store
    r.advance_case(cid, "source_found", "2025-06-01", parcel_id="P-1")
    r.advance_case(cid, "notice_sent", notice, deadline=deadline)
    return cid


def test_a_case_keeps_its_own_profile(tmp_path) -> None:
    text = builtin_profile_path("kingsbury").read_text(encoding="utf-8")
    assert 'name = "kingsbury"' in text and "appeal_days = 15" in text
    mine = tmp_path / "mytown.toml"
    mine.write_text(
        text.replace('name = "kingsbury"', 'name = "mytown"').replace(
            "appeal_days = 15", "appeal_days = 30"
        ),
        encoding="utf-8",
    )
    ws = make_town(tmp_path)
    cid = _noticed(rec.open_records(ws, user="smo", profile=str(mine)), "2025-06-02")
    mine.unlink()  # the town's file is gone; the records keep their copy
    later = rec.open_records(ws, user="smo")  # the default profile, stillwater
    # Mon 2025-06-02 + 30 days = Wed 2025-07-02 (stillwater's 15 would be 06-17)
    assert _dl(later, cid, "2025-06-20")["appeal_window"] == ("2025-07-02", "window_open")
    # Kingsbury's 48 hours from the notice: Wed 2025-06-04
    assert _dl(later, cid, "2025-06-03")["remedy"] == ("2025-06-04", "due")
    # a records file without the copy (an older one): not judged by another law
    with sqlite3.connect(later.path) as con:
        con.execute("DELETE FROM records_meta WHERE key = 'profile:mytown'")
    d = later.deadlines(today="2025-06-20", case_id=cid)
    assert d["status"].tolist() == ["unknown"]
    assert "profile 'mytown', which is not at hand" in d["reason"].iloc[0]
    assert "--profile" in d["reason"].iloc[0]


def test_a_notice_gets_the_remedy_date_of_the_cases_law(tmp_path) -> None:
    ws = make_town(tmp_path)
    k = rec.open_records(ws, user="smo", profile="kingsbury")
    cid = k.open_case("OF-1", "2025-06-01")
    k.advance_case(cid, "source_found", "2025-06-01", parcel_id="P-1")
    s = rec.open_records(ws, user="smo")  # stillwater: the remedy is left to the notice
    s.advance_case(cid, "notice_sent", "2025-07-02")
    # Wed 07-02 + 48 hours = Fri 07-04, Independence day -> Mon 07-07 (GCL 25-a)
    assert s.cases().set_index("case_id").loc[cid, "remedy_deadline"] == "2025-07-07"
    assert _dl(s, cid, "2025-07-03")["remedy"] == ("2025-07-07", "due")


def test_a_timely_appeal_replaces_the_remedy_deadline(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo")  # stillwater
    # notice Fri 06-06, remedy 06-30; appeal window 06-06 + 15 = Sat 06-21 -> Mon 06-23
    cid = _noticed(r, "2025-06-06", deadline="2025-06-30")
    r.advance_case(cid, "appeal_filed", "2025-06-15")
    r.advance_case(cid, "appeal_decided", "2025-07-10", outcome="overturned")
    r.advance_case(cid, "closed", "2025-07-11")
    d = _dl(r, cid, "2025-08-01")
    assert d["remedy"] == ("2025-06-30", "appealed")  # it was "overdue" for ever
    assert (
        "overturned the notice: no remedy is owed"
        in r.deadlines(today="2025-08-01", case_id=cid)
        .set_index("deadline")
        .loc["remedy", "reason"]
    )
    late = _noticed(r, "2025-06-06", deadline="2025-06-30")
    r.advance_case(late, "appeal_filed", "2025-06-25")  # after the window (06-23)
    assert _dl(r, late, "2025-07-01")["remedy"] == ("2025-06-30", "overdue")


def test_decision_filed_is_a_step(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo", profile="kingsbury")
    cid = _noticed(r, "2025-07-02")
    with pytest.raises(DataError, match="needs step 'appeal_decided' first"):
        r.advance_case(cid, "decision_filed", "2025-07-23")
    r.advance_case(cid, "appeal_filed", "2025-07-03")
    r.advance_case(cid, "appeal_decided", "2025-07-21", outcome="upheld")
    r.advance_case(cid, "decision_filed", "2025-07-23")
    # filed within 5 days of Mon 07-21: due Sat 07-26 (a municipal act, plain count)
    assert _dl(r, cid, "2025-08-01")["decision_filed"] == ("2025-07-26", "met")


def test_a_corrected_notice_date_moves_the_laws_remedy_date(tmp_path) -> None:
    ws = make_town(tmp_path)
    k = rec.open_records(ws, user="smo", profile="kingsbury")
    cid = _noticed(k, "2025-07-02")
    assert _dl(k, cid, "2025-07-03")["remedy"] == ("2025-07-07", "due")
    k.correct("cases", cid, notice_on="2025-06-30")  # Mon + 48 hours = Wed 07-02
    assert _dl(k, cid, "2025-07-03")["remedy"] == ("2025-07-02", "overdue")
    s = rec.open_records(ws, user="smo")  # stillwater: the officer's date stays
    own = _noticed(s, "2025-07-02", deadline="2025-07-31")
    s.correct("cases", own, notice_on="2025-06-30")
    assert _dl(s, own, "2025-07-03")["remedy"] == ("2025-07-31", "due")


def test_steps_recorded_late_are_checked_on_the_whole_row(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo")
    cid = r.open_case("OF-1", "2025-06-01")
    r.advance_case(cid, "eliminated", "2025-06-10")
    with pytest.raises(DataError, match="'eliminated_on' = 2025-06-10 is after the case closed"):
        r.advance_case(cid, "closed", "2025-06-05")
    r.correct("cases", cid, notes="still correctable")
    other = r.open_case("OF-2", "2025-06-01")
    r.advance_case(other, "source_found", "2025-06-05", parcel_id="P-1")
    r.advance_case(other, "investigation", "2025-06-03")  # recorded late
    assert r.cases().set_index("case_id").loc[other, "status"] == "source_found"


def test_a_correction_is_checked_as_the_first_recording(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo")
    cid = r.open_case("OF-1", "2025-06-01")
    r.add_sample(cid, "MH-1", "2025-06-03", result="flow")
    with pytest.raises(DataError, match="'P-9' is not a parcel"):
        r.correct("cases", cid, source_parcel_id="P-9")
    with pytest.raises(DataError, match="'inspection_id' = 99: no such inspection"):
        r.correct("cases", cid, inspection_id=99)
    with pytest.raises(DataError, match="after the case's first sample \\(2025-06-03\\)"):
        r.correct("cases", cid, opened_on="2025-06-10")
    assert int(r.cases().set_index("case_id").loc[cid, "version"]) == 1  # nothing written


def test_a_listed_user_without_a_role_is_a_viewer(tmp_path) -> None:
    ws = make_town(tmp_path)
    rec.open_records(ws, user="smo").add_inspection("OF-1", "2025-06-01", flow_present=False)
    users = tmp_path / "users.toml"
    users.write_text('[users.clerk]\npassword_hash = "x"\n', encoding="utf-8")
    clerk = rec.open_records(ws, user="clerk", users_file=users)
    assert clerk.role == "viewer"
    with pytest.raises(PermissionError, match="--role smo --replace"):
        clerk.add_inspection("OF-1", "2025-06-02", flow_present=False)
    assert len(clerk.inspections()) == 1


def test_a_discharge_back_after_elimination(tmp_path) -> None:
    r = rec.open_records(make_town(tmp_path), user="smo")
    for oid in ("OF-1", "OF-2"):
        cid = r.open_case(oid, "2025-01-01")
        r.advance_case(cid, "eliminated", "2025-02-01")
    r.add_inspection("OF-1", "2025-03-01", flow_present=True, characterization="unlikely")
    r.add_inspection("OF-1", "2025-04-01", flow_present=False)
    r.add_inspection("OF-2", "2025-03-01", flow_present=False)
    st = r.outfall_status().set_index("outfall_id")
    # OF-1: the 03-01 inspection found flow after the elimination (rule 2 fails), the
    # latest found none (rule 3); OF-2: nothing but no flow since (rule 2)
    assert st.loc["OF-1", "status"] == "not_flowing"
    assert st.loc["OF-2", "status"] == "eliminated"


def test_a_records_file_that_cannot_be_created_is_exit_3_with_the_fix(tmp_path, monkeypatch):
    """A workspace in a read-only folder: the default records file beside it cannot be
    created (sqlite: "unable to open database file"); it was exit 70, an internal error."""
    from contextlib import contextmanager

    from ms4map.cli import main
    from ms4map.core.errors import OutputError
    from ms4map.records import gpkg

    ws = make_town(tmp_path)

    @contextmanager
    def read_only(_path):
        raise sqlite3.OperationalError("unable to open database file")
        yield

    monkeypatch.setattr(gpkg, "write_tx", read_only)
    with pytest.raises(OutputError, match="cannot be created .* Fix: keep the records elsewhere"):
        rec.open_records(ws, user="smo")
    args = ["inspect", str(ws), "--outfall", "OF-1", "--date", "2025-06-02", "--by", "smo"]
    assert main([*args, "--flow-present", "no"]) == 3


def test_implausible_readings_and_dates_are_refused(tmp_path) -> None:
    """A field test far beyond raw sewage (ammonia 20 - 60 mg/L) or sea water
    (conductivity ~50,000 uS/cm) is a typo, and so is an inspection dated 1900 or a
    remedy deadline in 2099: refused with the field and the fix, nothing written."""
    r = rec.open_records(make_town(tmp_path), user="smo")
    r.add_inspection("OF-1", "2025-06-01", flow_present=True, ammonia=45.0, conductivity=900)
    for kw, match in (
        (dict(ammonia=4500.0), "'ammonia' = 4500 is outside 0 to 1000 \\(mg/L\\)"),
        (dict(conductivity=1e308), "'conductivity' = 1e\\+308 is outside 0 to 100000"),
    ):
        with pytest.raises(DataError, match=match):
            r.add_inspection("OF-1", "2025-06-02", flow_present=True, **kw)
    with pytest.raises(DataError, match="1900-06-01 is before 1972"):
        r.add_inspection("OF-1", "1900-06-01", flow_present=False)
    cid = r.open_case("OF-1", "2025-06-01")
    r.advance_case(cid, "source_found", "2025-06-02", parcel_id="P-1")
    with pytest.raises(DataError, match="more than ten years ahead"):
        r.advance_case(cid, "notice_sent", "2025-06-03", deadline="2099-06-30")
    assert len(r.inspections()) == 1


def test_a_case_opened_twice_is_one_case(tmp_path) -> None:
    """`ms4map case open` run twice (the same outfall, day, origin and description)
    recorded two cases; the second is refused, naming the first, unless --again."""
    from ms4map.cli import main

    ws = make_town(tmp_path)
    args = ["case", "open", str(ws), "--outfall", "OF-1", "--date", "2025-06-03", "--by", "smo"]
    assert main([*args, "--description", "grey water"]) == 0
    assert main([*args, "--description", "grey water"]) == 2  # refused, nothing written
    r = rec.open_records(ws, user="smo")
    assert len(r.cases()) == 1
    assert main([*args, "--description", "a second source"]) == 0  # another case
    assert main([*args, "--description", "grey water", "--again"]) == 0
    with pytest.raises(DataError, match="Case 1 was opened at outfall OF-1 on 2025-06-03"):
        r.open_case("OF-1", "2025-06-03", description="grey water")
    assert len(r.cases()) == 3


def test_a_sample_recorded_twice_is_one_sample(tmp_path) -> None:
    """`ms4map case sample` run twice (the same structure, day and readings) added two
    samples, and the bisection plan read both; the second is refused unless --again,
    and a sample with another reading is a new one."""
    from ms4map.cli import main

    ws = make_town(tmp_path)
    r = rec.open_records(ws, user="smo")
    cid = r.open_case("OF-1", "2025-06-03")
    args = ["case", "sample", str(ws), str(cid), "--structure", "MH-1", "--date", "2025-06-04"]
    args += ["--by", "smo", "--result", "flow", "--ammonia", "1.5"]
    assert main(args) == 0
    assert main(args) == 2  # the same sample: refused, nothing written
    assert len(r.samples(cid)) == 1
    with pytest.raises(DataError, match="Sample 1 of case 1 at MH-1 on 2025-06-04"):
        r.add_sample(cid, "MH-1", "2025-06-04", result="flow", ammonia=1.5, sampler="smo")
    r.add_sample(cid, "MH-1", "2025-06-04", result="flow", ammonia=2.0)  # another reading
    assert main([*args, "--again"]) == 0
    assert len(r.samples(cid)) == 3
