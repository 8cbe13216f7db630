"""Issue 28 items 4 and 16: outfall status never lowered by weaker evidence; case steps
in order; a notice needs its remedy deadline."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.core.errors import DataError
from ms4map.records.summary import STATUS_ORDER


@pytest.fixture
def records(tmp_path: Path) -> rec.Records:
    return rec.open_records(make_town(tmp_path), user="jsmith")


def _status(records: rec.Records) -> dict[str, str]:
    st = records.outfall_status()
    return dict(zip(st["outfall_id"], st["status"], strict=True))


def test_statuses_are_ordered() -> None:
    assert STATUS_ORDER.index("not_flowing") < STATUS_ORDER.index("flowing")
    assert STATUS_ORDER.index("flowing") < STATUS_ORDER.index("suspect")
    assert STATUS_ORDER.index("suspect") < STATUS_ORDER.index("illicit")


def test_sewage_or_wash_water_tests_make_the_outfall_suspect(records) -> None:
    # flow, odor 2, detergents 0.4 mg/L: the tool's own chart says sewage or wash water
    records.add_inspection("OF-1", "2025-05-01", flow_present=True, odor=2, detergents=0.4)
    st = records.outfall_status().set_index("outfall_id")
    assert st.loc["OF-1", "status"] == "suspect"
    assert "sewage or wash water" in st.loc["OF-1", "reason"]


def test_a_later_inspection_does_not_lower_suspect_or_illicit(records) -> None:
    records.add_inspection("OF-1", "2025-05-01", flow_present=True, characterization="suspect")
    records.add_inspection("OF-1", "2025-05-08", flow_present=True, detergents=0.1)
    records.add_inspection("OF-2", "2025-05-01", flow_present=True, characterization="obvious")
    records.add_inspection("OF-2", "2025-05-08", flow_present=False)
    records.add_inspection("OF-3", "2025-05-01", flow_present=True)
    records.add_inspection("OF-3", "2025-05-08", flow_present=False)  # a flow finding: replaced
    got = _status(records)
    assert got["OF-1"] == "suspect"
    assert got["OF-2"] == "illicit"
    assert got["OF-3"] == "not_flowing"
    reason = records.outfall_status().set_index("outfall_id").loc["OF-2", "reason"]
    assert "does not clear it" in reason


def test_an_active_case_never_lowers_the_inspections(records) -> None:
    records.add_inspection("OF-1", "2025-05-01", flow_present=True, characterization="obvious")
    records.open_case("OF-1", "2025-05-02")  # an open case alone says suspect
    assert _status(records)["OF-1"] == "illicit"


def test_only_a_case_clears_the_evidence(records) -> None:
    records.add_inspection("OF-1", "2025-05-01", flow_present=True, characterization="obvious")
    cid = records.open_case("OF-1", "2025-05-02")
    records.advance_case(cid, "source_found", "2025-05-03", parcel_id="P-1")
    records.advance_case(cid, "eliminated", "2025-05-10")
    assert _status(records)["OF-1"] == "eliminated"
    records.add_inspection("OF-2", "2025-05-01", flow_present=True, characterization="suspect")
    c2 = records.open_case("OF-2", "2025-05-02")
    records.advance_case(c2, "closed", "2025-05-20", reason="no source; flow is groundwater")
    assert _status(records)["OF-2"] == "flowing"  # the case cleared the suspicion, not the flow


def test_case_steps_out_of_order_are_refused(records) -> None:
    cid = records.open_case("OF-1", "2025-05-02")
    with pytest.raises(DataError, match="needs step 'source_found' first"):
        records.advance_case(cid, "corrected", "2025-05-03")
    records.advance_case(cid, "source_found", "2025-05-04", parcel_id="P-1")
    with pytest.raises(DataError, match="'investigation' dated 2025-05-05 is after step"):
        records.advance_case(cid, "investigation", "2025-05-05")
    records.advance_case(cid, "investigation", "2025-05-03")  # recorded late, in order


def test_notice_without_a_remedy_deadline_is_refused(records) -> None:
    cid = records.open_case("OF-1", "2025-05-02")
    records.advance_case(cid, "source_found", "2025-05-04", parcel_id="P-1")
    if records.profile is not None and getattr(records.profile, "remedy_period", None):
        pytest.skip("this profile states a remedy period")
    with pytest.raises(DataError, match="remedy deadline"):
        records.advance_case(cid, "notice_sent", "2025-05-05")
    records.advance_case(cid, "notice_sent", "2025-05-05", deadline="2025-06-05")
    assert str(records.cases().iloc[0]["remedy_deadline"]) == "2025-06-05"


def test_cli_inspection_with_sewage_tests_says_suspect_and_advance_needs_deadline(
    tmp_path, capsys
) -> None:
    from ms4map.cli import main

    town = make_town(tmp_path)
    base = [str(town), "--by", "jsmith"]
    main(["inspect", *base, "--outfall", "OF-1", "--date", "2025-06-01", "--flow-present", "yes",
          "--characterization", "suspect"])  # fmt: skip
    capsys.readouterr()
    code = main(["inspect", *base, "--outfall", "OF-1", "--date", "2025-06-02", "--flow-present",
                 "yes", "--odor", "2", "--detergents", "0.4"])  # fmt: skip
    assert code == 0 and "Outfall status: suspect" in capsys.readouterr().out
    assert main(["records", str(town), "--status"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "OF-1" in x)
    assert "suspect" in line
    assert main(["case", "open", *base, "--outfall", "OF-1", "--date", "2025-06-03"]) == 0
    code = main(["case", "advance", *base, "1", "--step", "source_found", "--parcel", "P-1",
                 "--date", "2025-06-04"])  # fmt: skip
    capsys.readouterr()
    code = main(["case", "advance", *base, "1", "--step", "notice_sent", "--date", "2025-06-05"])
    assert code == 2 and "--deadline" in capsys.readouterr().err
    code = main(["case", "advance", *base, "1", "--step", "investigation", "--date", "2025-06-06"])
    assert code == 2 and "after step 'source_found'" in capsys.readouterr().err
