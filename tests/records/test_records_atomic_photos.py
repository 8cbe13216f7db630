"""An inspection (or a case step, or a sample) and its photos are written together or
not at all, and a full disk says so (a records audit).

``ms4map inspect --photo`` wrote the inspection, then each photo in a transaction of
its own: when the photo failed (the disk full), the inspection stayed without it, the
user saw an internal error, and a re-run recorded the inspection twice.  Here the
photo's write fails as a full disk does (``sqlite3.OperationalError: database or disk
is full``): nothing of the inspection is written, the error names the records file,
says nothing was written and gives the fix, and the store still holds exactly the one
earlier inspection and its audit row.
"""

from __future__ import annotations

import sqlite3

import pytest
from test_records import jpeg_bytes, make_town

import ms4map.records as rec
from ms4map.cli import main
from ms4map.core.errors import DataError
from ms4map.records import writes


def _disk_full(*_a, **_k):
    raise sqlite3.OperationalError("database or disk is full")


def test_a_failed_photo_leaves_no_inspection(tmp_path, monkeypatch, capsys):
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith")
    r.add_inspection(outfall_id="OF-1", date="2025-06-02")
    photo = tmp_path / "of2.jpg"
    photo.write_bytes(jpeg_bytes())
    monkeypatch.setattr(writes, "_attach_in", _disk_full)
    with pytest.raises(DataError, match="Nothing of this change was written"):
        r.add_inspection(outfall_id="OF-2", date="2025-06-03", photos=[photo])
    code = main(
        ["inspect", str(town), "--by", "jsmith", "--outfall", "OF-2", "--date", "2025-06-03",
         "--photo", str(photo)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "disk may be full" in err and "Fix:" in err
    assert r.inspections()["outfall_id"].tolist() == ["OF-1"]
    assert len(r.audit()) == 1 and len(r.attachments()) == 0
    assert r.integrity_check() == "ok"


def test_the_photos_go_in_with_their_row(tmp_path):
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith")
    photo = jpeg_bytes()
    iid = r.add_inspection(outfall_id="OF-1", date="2025-06-02", photos=[photo, photo])
    cid = r.open_case("OF-1", "2025-06-02", photos=[photo])
    sid = r.add_sample(cid, "MH-1", "2025-06-03", result="flow", photos=[photo])
    att = r.attachments()
    got = sorted(zip(att["target_table"], att["target_id"], strict=True))
    assert got == sorted(
        [("inspections", iid), ("inspections", iid), ("cases", cid), ("samples", sid)]
    )
