"""303(d) CSVs as people save them (issue 28 item 12): semicolon or tab separated,
columns named otherwise (aliases, and a field map: ``--field impairments.wb_id=...``)."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from ms4map.cli import main
from ms4map.core.errors import DataError
from ms4map.io.impairments import read_303d, read_impairments
from ms4map.io.listcsv import sniff_delimiter

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD = DATA / "waters_303d_good.csv"


def _rows() -> list[list[str]]:
    with open(GOOD, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _write(path: Path, rows: list[list[str]], delimiter: str) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    return path


def _table(read) -> pd.DataFrame:
    return read.table.drop(columns=["line"]).reset_index(drop=True)


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_semicolon_and_tab_files_read_like_the_comma_file(tmp_path, delimiter):
    p = _write(tmp_path / "list.csv", _rows(), delimiter)
    # "Pathogens; Silt/Sediment" is quoted in the semicolon file
    pd.testing.assert_frame_equal(_table(read_303d(p)), _table(read_303d(GOOD)))
    pd.testing.assert_frame_equal(_table(read_impairments(p)), _table(read_impairments(GOOD)))


def test_a_comma_file_with_semicolons_in_its_cells_stays_a_comma_file():
    text = GOOD.read_text(encoding="utf-8")
    assert ";" in text  # "Pathogens; Silt/Sediment"
    assert sniff_delimiter(text) == ","
    assert len(read_303d(GOOD).table) == 4


def test_other_column_names_are_mapped_by_the_field_map(tmp_path):
    rows = _rows()
    rows[0] = ["Water ID", "Water", "Kind", "What is wrong", "Where from", "Part", "List Year"]
    p = _write(tmp_path / "other.csv", rows, ",")
    with pytest.raises(DataError, match=r"--field impairments\.wb_id=COLUMN") as err:
        read_303d(p)
    assert "--field impairments.pollutant=COLUMN" in str(err.value)
    cols = {"wb_id": "Water ID", "pollutant": "what is wrong", "category": "Part"}
    got = read_303d(p, columns=cols)
    want = _table(read_303d(GOOD)).drop(columns=["name", "wb_type", "source"])
    assert _table(got).drop(columns=["name", "wb_type", "source"]).equals(want)
    with pytest.raises(DataError, match="no such column"):
        read_303d(p, columns={**cols, "source": "Nope"})


def test_more_header_aliases_are_known(tmp_path):
    rows = _rows()
    rows[0] = [
        "PWL Segment ID",
        "Water Body Name",
        "Water Body Type",
        "Cause of Impairment",
        "Source of Impairment",
        "Listing Part",
        "Listing Year",
    ]
    p = _write(tmp_path / "aliases.csv", rows, ";")
    assert _table(read_303d(p)).equals(_table(read_303d(GOOD)))


def test_screen_reads_a_renamed_tab_separated_list_with_field(tmp_path, demo_copy, capsys):
    rows = _rows()
    rows[0] = ["Water ID", "Water", "Kind", "What is wrong", "Where from", "Part", "List Year"]
    p = _write(tmp_path / "other.csv", rows, "\t")
    base = ["screen", str(demo_copy), "--site", "107.12-2-11", "--acres", "2"]
    base += ["--type", "commercial", "--impairments", str(p)]
    assert main(base) == 2
    assert "--field impairments.wb_id=COLUMN" in capsys.readouterr().err
    fields = [
        "--field",
        "impairments.wb_id=Water ID",
        "--field",
        "impairments.pollutant=What is wrong",
    ]
    fields += ["--field", "impairments.category=Part"]
    code = main(base + fields)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "SWPPP required" in out.out


def test_a_file_that_is_no_303d_list_is_not_echoed(tmp_path: Path) -> None:
    """Issue 29 item 14: a batch given another CSV put its first line into summary.csv."""
    p = tmp_path / "payroll.csv"
    p.write_text("employee,salary,ssn\nJ Doe,50000,123-45-6789\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_303d(p)
    said = str(err.value)
    assert "none of its 3 column(s) is a column of such a list" in said
    assert "salary" not in said and "ssn" not in said
