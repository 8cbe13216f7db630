"""Reporting periods of the profile (issue 30 item 1): the permit year 3 January - 2
January, the interim period 3 January - 30 June, a calendar profile as before."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.records.periods import PERIOD_KINDS, period_settings
from ms4map.rules.profiles import builtin_profile_path, load_profile


def _calendar_profile(folder: Path, *, kind: str = "calendar", extra: str = "") -> Path:
    """Stillwater's profile with its ``[records]`` periods replaced."""
    text = builtin_profile_path("stillwater").read_text()
    text = text.replace('reporting_period = "permit_year"', f'reporting_period = "{kind}"')
    text = text.replace('periods = ["permit_year", "interim", "calendar"]', f"periods = []{extra}")
    path = folder / "calendar.toml"
    path.write_text(text.replace('name = "stillwater"', 'name = "calendar_town"'))
    return path


@pytest.fixture
def town(tmp_path: Path) -> Path:
    return make_town(tmp_path)


def test_ny_profiles_default_to_the_permit_year() -> None:
    for name in ("stillwater", "kingsbury", "kiryas_joel"):
        s = period_settings(load_profile(name).raw.get("records"))
        assert s.default == "permit_year"
        p = s.period(2025)
        assert (p.start, p.end) == (dt.date(2025, 1, 3), dt.date(2026, 1, 2))
        assert "permit year 2025 (3 January 2025 to 2 January 2026" in p.text()
        i = s.period(2025, "interim")
        assert (i.start, i.end) == (dt.date(2025, 1, 3), dt.date(2025, 6, 30))
        assert s.year_of(dt.date(2026, 1, 2)) == 2025
        assert s.year_of(dt.date(2026, 1, 3)) == 2026


def test_boundaries_of_the_permit_year_and_interim(town: Path) -> None:
    r = rec.open_records(town, user="jsmith")  # stillwater: the permit year
    r.add_inspection("OF-1", "2026-01-02", flow_present=True)  # permit year 2025
    r.add_inspection("OF-2", "2026-01-03", flow_present=True)  # permit year 2026
    r.add_inspection("OF-3", "2025-01-03")  # first day of 2025 and of its interim
    r.add_inspection("OF-4", "2025-07-01")  # permit year 2025, after the interim
    s25 = r.summary(2025)
    assert (s25["period"], s25["period_start"], s25["period_end"]) == (
        "permit year",
        "2025-01-03",
        "2026-01-02",
    )
    assert (s25["outfalls_screened"], s25["flowing"]) == (3, 1)  # OF-1, OF-3, OF-4
    s26 = r.summary(2026)
    assert (s26["outfalls_screened"], s26["flowing"]) == (1, 1)  # OF-2
    interim = r.summary(2025, period="interim")
    assert (interim["period_start"], interim["period_end"], interim["outfalls_screened"]) == (
        "2025-01-03",
        "2025-06-30",
        1,  # OF-3 only
    )
    cal = r.summary(2025, period="calendar")
    assert (cal["period_end"], cal["outfalls_screened"]) == ("2025-12-31", 2)  # OF-3, OF-4
    rep = r.annual_report(2026)
    assert rep["year"].tolist() == [2025, 2026]
    assert rep["period"].tolist() == ["permit year", "permit year"]
    assert rep["outfalls_screened"].tolist() == [3, 1]


def test_a_calendar_profile_counts_as_before(town: Path, tmp_path: Path) -> None:
    prof = _calendar_profile(tmp_path)
    r = rec.open_records(town, user="jsmith", profile=prof)
    r.add_inspection("OF-1", "2026-01-02")
    r.add_inspection("OF-2", "2026-01-03")
    r.add_inspection("OF-3", "2025-12-31")
    s26 = r.summary(2026)
    assert (s26["period"], s26["period_start"], s26["period_end"]) == (
        "calendar year",
        "2026-01-01",
        "2026-12-31",
    )
    assert s26["outfalls_screened"] == 2
    assert r.summary(2025)["outfalls_screened"] == 1


def test_a_fiscal_year_from_the_profile(town: Path, tmp_path: Path) -> None:
    prof = _calendar_profile(tmp_path, kind="fiscal", extra='\nfiscal_year_start = "06-01"')
    r = rec.open_records(town, user="jsmith", profile=prof)
    r.add_inspection("OF-1", "2025-05-31")  # fiscal 2024
    r.add_inspection("OF-2", "2025-06-01")  # fiscal 2025
    s = r.summary(2025)
    assert (s["period"], s["period_start"], s["period_end"], s["outfalls_screened"]) == (
        "fiscal year",
        "2025-06-01",
        "2026-05-31",
        1,
    )
    bad = _calendar_profile(tmp_path, kind="fiscal")
    with pytest.raises(UsageError, match="fiscal_year_start"):
        rec.open_records(town, user="jsmith", profile=bad)


def test_bad_periods_and_years_are_refused(town: Path, tmp_path: Path) -> None:
    r = rec.open_records(town, user="jsmith")
    r.add_inspection("OF-1", "2023-05-02")
    with pytest.raises(UsageError, match="'quarter' is not a reporting period") as e:
        r.summary(2025, period="quarter")
    assert all(k in str(e.value) for k in PERIOD_KINDS)
    with pytest.raises(UsageError, match="ends before the records begin") as e:
        r.summary(2021)
    assert "first record on 2023-05-02" in str(e.value) and "--year 2023" in str(e.value)
    with pytest.raises(UsageError, match="before the records begin"):
        r.annual_report(2022)
    assert r.summary(2023)["outfalls_screened"] == 1
    prof = _calendar_profile(tmp_path, kind="semester")
    with pytest.raises(UsageError, match="'semester' is not a reporting period"):
        rec.open_records(town, user="jsmith", profile=prof)


def test_cli_year_says_its_permit_year(town: Path, capsys) -> None:
    base = ["--by", "jsmith"]
    assert main(["inspect", str(town), *base, "--outfall", "OF-1", "--date", "2026-01-02"]) == 0
    capsys.readouterr()
    assert main(["records", str(town), "--summary", "--year", "2025"]) == 0
    out = capsys.readouterr()
    assert "Reporting period: permit year 2025 (3 January 2025 to 2 January 2026" in out.err
    assert out.out.startswith("IDDE summary, permit year 2025 (3 January 2025 to 2 January 2026")
    assert "Outfalls screened (inspected) in the period: 1" in out.out
    assert main(["records", str(town), "--summary", "--year", "2025", "--period", "interim"]) == 0
    assert "interim period 2025 (3 January 2025 to 30 June 2025" in capsys.readouterr().out
    assert main(["records", str(town), "--summary", "--year", "2025", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["period"], s["period_end"], s["outfalls_screened"]) == (
        "permit year",
        "2026-01-02",
        1,
    )
    assert main(["records", str(town), "--summary", "--year", "2025", "--period", "quarter"]) == 4
    assert "'quarter' is not a reporting period" in capsys.readouterr().err
    assert main(["records", str(town), "--summary", "--year", "2019"]) == 4
    assert "ends before the records begin" in capsys.readouterr().err
