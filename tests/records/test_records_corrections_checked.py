"""A correction obeys the rules of the first recording (a records audit).

``records.correct`` checked each field alone: a case opened 2025-06-10 took
``closed_on`` 2025-06-01 and ``eliminated_on`` 2024-01-01 (it then counted as an
illicit discharge eliminated in 2024, before it was reported) and a notice with no
source found; a sample's date moved before its case opened; while the one correction
the deadline message asks for, a remedy deadline in the future, was refused.  By hand,
on a case opened 2025-06-10, source found 2025-06-11 (parcel P-1), notice sent
2025-06-12: each of those corrections is refused with the field and the fix, and
nothing is written; a future remedy deadline is taken; a correct closing date makes
the case ``closed``.
"""

from __future__ import annotations

import datetime as dt

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.core.errors import DataError


@pytest.fixture()
def case(tmp_path):
    r = rec.open_records(make_town(tmp_path), user="jsmith")
    cid = r.open_case("OF-1", "2025-06-10")
    r.advance_case(cid, "source_found", "2025-06-11", parcel_id="P-1")
    r.advance_case(cid, "notice_sent", "2025-06-12", deadline="2025-06-30")
    return r, cid


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"closed_on": "2025-06-01"}, "'closed_on' = 2025-06-01 is before the case opened"),
        ({"eliminated_on": "2024-01-01"}, "'eliminated_on' = 2024-01-01 is before the case"),
        ({"source_found_on": None}, "'notice_on' = 2025-06-12 needs 'source_found_on'"),
        ({"appeal_filed_on": "2025-06-11"}, "'appeal_filed_on' = 2025-06-11 is before 'notice_on'"),
        ({"remedy_deadline": "2025-06-11"}, "'remedy_deadline' = 2025-06-11 is before the notice"),
        ({"closed_on": "2025-06-11"}, "'notice_on' = 2025-06-12 is after the case closed"),
    ],
)
def test_a_correction_that_breaks_the_order_of_the_steps_is_refused(case, fields, words):
    r, cid = case
    before = len(r.cases(history=True))
    with pytest.raises(DataError, match="Fix:") as err:
        r.correct("cases", cid, **fields)
    assert words in str(err.value)
    assert len(r.cases(history=True)) == before


def test_a_future_remedy_deadline_and_a_closing_are_taken(case):
    r, cid = case
    later = (dt.date.today() + dt.timedelta(days=14)).isoformat()
    r.correct("cases", cid, remedy_deadline=later)
    row = r.cases().set_index("case_id").loc[cid]
    assert str(row["remedy_deadline"])[:10] == later and row["status"] == "notice_sent"
    r.correct("cases", cid, closed_on="2025-06-20")
    row = r.cases().set_index("case_id").loc[cid]
    assert row["status"] == "closed" and str(row["step_on"])[:10] == "2025-06-20"


def test_a_sample_date_before_its_case_opened_is_refused(case):
    r, cid = case
    sid = r.add_sample(cid, "MH-1", "2025-06-11", result="flow")
    with pytest.raises(DataError, match="before case .* opened"):
        r.correct("samples", sid, date="2025-01-01")
    assert str(r.samples(cid).set_index("sample_id").loc[sid, "date"])[:10] == "2025-06-11"


def test_a_blank_inspector_is_the_user_who_records_it(tmp_path):
    r = rec.open_records(make_town(tmp_path), user="jsmith")
    iid = r.add_inspection("OF-1", "2025-06-02", inspector="   ")
    assert r.inspections().set_index("inspection_id").loc[iid, "inspector"] == "jsmith"


def test_a_correction_on_a_version_someone_else_corrected_is_refused(tmp_path):
    """Alice reads inspection 1 at version 1; Bob corrects it (version 2); Alice's
    correction of version 1 would silently replace Bob's: with ``expected_version`` it
    is refused, naming Bob, and nothing is written."""
    town = make_town(tmp_path)
    alice = rec.open_records(town, user="alice")
    bob = rec.open_records(town, user="bob")
    iid = alice.add_inspection("OF-1", "2025-06-02", odor=1)
    seen = int(alice.inspections().set_index("inspection_id").loc[iid, "version"])
    bob.correct("inspections", iid, odor=3, expected_version=seen)
    with pytest.raises(DataError, match="changed since version 1: it is at version 2 by bob"):
        alice.correct("inspections", iid, odor=0, expected_version=seen)
    assert int(alice.inspections().set_index("inspection_id").loc[iid, "odor"]) == 3
