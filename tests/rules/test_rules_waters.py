"""Impaired-waters model and the 303(d)/ATTAINS CSV importers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ms4map.core.errors import DataError, InputOpenError
from ms4map.io.impairments import (
    ImpairmentsRead,
    normalize_category,
    normalize_pollutant,
    read_303d,
    read_303d_csv,
    read_attains_csv,
    read_impairments,
    validate_impairments,
)
from ms4map.rules.waters import Waters, pollutant_in

DATA = Path(__file__).resolve().parents[1] / "data"


def test_read_303d_good():
    df = read_303d_csv(DATA / "waters_303d_good.csv")
    assert list(df["wb_id"]) == ["1302-0001", "1101-0001", "1302-0005", "1302-0005"]
    assert set(df["category"]) == {"5"}  # every NYSDEC list part is a 303(d) listing
    fish = df[df["wb_id"] == "1302-0005"]
    assert set(fish["pollutant_norm"]) == {"pathogens", "silt/sediment"}
    assert fish["list_part"].iloc[0] == "3a"
    assert df["list_year"].iloc[0] == 2018
    assert df.attrs["qa"].findings == []


def test_read_303d_bad_raises_with_every_row():
    with pytest.raises(DataError) as exc:
        read_303d_csv(DATA / "waters_303d_bad.csv")
    msg = str(exc.value)
    assert "line 3" in msg and "NNNN-NNNN" in msg  # bad PWL id
    assert "line 4" in msg and "'9z'" in msg  # unknown list part
    assert "line 5" in msg and "duplicate" in msg  # duplicate of line 2
    assert "line 6" in msg and "Cause/Pollutant is empty" in msg
    assert "line 7" not in msg


def test_read_303d_skip_keeps_good_rows():
    df = read_303d_csv(DATA / "waters_303d_bad.csv", on_error="skip")
    assert list(df["wb_id"]) == ["1302-0001", "1101-0001"]
    skipped = df.attrs["qa"].by_code("impairment_row_skipped")
    assert len(skipped) == 4 and all(f.level == "warning" for f in skipped)


def test_read_303d_missing_column(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("PWL ID,Waterbody Name\n1302-0001,Mill Creek\n")
    with pytest.raises(DataError, match=r"lacks the column\(s\).*Cause/Pollutant"):
        read_303d_csv(p)


def test_read_missing_file(tmp_path):
    with pytest.raises(InputOpenError):
        read_303d_csv(tmp_path / "nope.csv")


def test_read_attains():
    df = read_attains_csv(DATA / "waters_attains.csv")
    assert list(df["wb_id"]) == ["1302-0001", "1302-0004", "1101-0001"]
    assert list(df["category"]) == ["5", "4a", "5"]
    assert df.loc[df["wb_id"] == "1302-0004", "action_id"].iloc[0] == "NY-TMDL-RL-P"
    assert df.loc[df["wb_id"] == "1101-0001", "pollutant_norm"].iloc[0] == "pcbs"


def test_read_attains_bad():
    with pytest.raises(DataError) as exc:
        read_attains_csv(DATA / "waters_attains_bad.csv")
    msg = str(exc.value)
    assert "line 3" in msg and "NYX-12" in msg
    assert "line 4" in msg and "action id" in msg
    assert "line 5" in msg and "'7'" in msg
    df = read_attains_csv(DATA / "waters_attains_bad.csv", on_error="skip")
    assert list(df["wb_id"]) == ["1302-0001"]


def test_normalisers():
    assert normalize_pollutant("Phosphorus (Total)") == "phosphorus"
    assert normalize_pollutant("Silt/Sediment") == "silt/sediment"
    assert normalize_pollutant("Fecal Coliform") == "pathogens"
    assert normalize_pollutant("PCBs") == "pcbs"
    assert normalize_category("Part 2a") == "5"
    assert normalize_category("4A") == "4a"
    assert normalize_category("Category 5") == "5"
    assert normalize_category("6") is None
    assert pollutant_in("Phosphorus", ["nutrients"])
    assert pollutant_in("Total suspended solids", ["silt/sediment"])
    assert not pollutant_in("PCBs", ["silt/sediment", "nutrients"])


def test_validate_impairments_layer():
    good = validate_impairments(
        pd.DataFrame({"wb_id": ["1302-0001"], "pollutant": ["P"], "category": [None]})
    )
    assert good["category"].iloc[0] == "5"  # a listing without category is a 303(d) listing
    with pytest.raises(DataError, match="row 2.*PWL"):
        validate_impairments(
            pd.DataFrame(
                {"wb_id": ["1302-0001", "bad"], "pollutant": ["P", "N"], "category": ["5", "5"]}
            )
        )


def test_waters_model_queries():
    imp = read_303d_csv(DATA / "waters_303d_good.csv")
    w = Waters.from_frames(impairments=imp)
    assert w.listed_wb_ids() == {"1302-0001", "1101-0001", "1302-0005"}
    assert len(w.listings("1302-0005")) == 2
    assert w.name_of("1302-0001") == "Mill Creek"
    assert len(w.listings("9999-9999")) == 0
    assert w.tmdls_hit([]).empty


def test_read_303d_typed_is_the_frame_without_attrs():
    """:func:`read_303d` answers an :class:`ImpairmentsRead`; the old reader gives the
    same table with the three ``attrs``."""
    read = read_303d(DATA / "waters_303d_bad.csv", on_error="skip")
    frame = read_303d_csv(DATA / "waters_303d_bad.csv", on_error="skip")
    assert isinstance(read, ImpairmentsRead) and read.table.attrs == {}
    pd.testing.assert_frame_equal(read.table, frame)
    assert frame.attrs["source_file"] == read.source_file == str(DATA / "waters_303d_bad.csv")
    assert frame.attrs["skipped_rows"] == list(read.skipped_rows)
    assert {x["file"] for x in read.skipped_rows} == {"waters_303d_bad.csv"}
    assert [f.message for f in read.qa.findings] == [f.message for f in frame.attrs["qa"].findings]
    assert len(read.qa.by_code("impairment_row_skipped")) == 4
    assert repr(read).startswith("ImpairmentsRead(2 listings")
    # the header tells the two formats apart
    assert read_impairments(DATA / "waters_attains.csv").table["origin"].iloc[0] == "attains_csv"


def test_importer_names_stay_importable_from_waters():
    import ms4map.io.impairments as imp
    import ms4map.rules.waters as waters

    for name in (
        "CATEGORIES",
        "IMPAIRMENT_COLUMNS",
        "KNOWN_POLLUTANTS",
        "NY_LIST_PARTS",
        "normalize_category",
        "normalize_pollutant",
        "read_303d_csv",
        "read_attains_csv",
        "read_impairments_csv",
        "validate_impairments",
    ):
        assert getattr(waters, name) is getattr(imp, name), name
