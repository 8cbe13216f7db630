"""Tamper evidence (issue 29 item 10): INSERT OR REPLACE is refused, and ``--verify``
finds a row or an audit row changed outside ms4map."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.cli import main


@pytest.fixture()
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> rec.Records:
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    r = rec.open_records(make_town(tmp_path), user="jsmith")
    r.add_inspection("OF-1", "2025-06-02", flow_present=True, odor=1)
    r.add_inspection("OF-2", "2025-06-03", flow_present=False)
    r.open_case("OF-1", "2025-06-04", origin="finding")
    return r


def _sql(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path)
    try:
        for s in statements:
            con.execute(s)
        con.commit()
    finally:
        con.close()


def _without_guards(path: Path, table: str, statement: str) -> None:
    """An edit as a user of a SQLite browser could make it: drop the trigger, change,
    put the trigger back (so the file looks as before)."""
    con = sqlite3.connect(path)
    try:
        sql = con.execute(
            "SELECT sql FROM sqlite_master WHERE name = ?", (f"{table}_no_update",)
        ).fetchone()[0]
        con.execute(f"DROP TRIGGER {table}_no_update")
        con.execute(statement)
        con.execute(sql)
        con.commit()
    finally:
        con.close()


def test_insert_or_replace_is_refused(records: rec.Records) -> None:
    """The old file let REPLACE rewrite inspection 1 and its audit row without firing the
    DELETE triggers, and integrity_check still said ok."""
    for statement in (
        "INSERT OR REPLACE INTO inspections (fid, inspection_id, version, outfall_id, "
        "date, created_at, created_by) VALUES (1, 1, 1, 'OF-1', '2025-01-01', "
        "'2025-01-01T00:00:00.000Z', 'mallory')",
        "REPLACE INTO audit (fid, role, table_name, row_id, version, action, new_values, "
        "created_at, created_by) VALUES (1, 'smo', 'inspections', 1, 1, 'insert', '{}', "
        "'2025-01-01T00:00:00.000Z', 'mallory')",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="never replaced"):
            _sql(records.path, statement)
    assert records.inspections().set_index("inspection_id").loc[1, "created_by"] == "jsmith"
    assert records.verify()["ok"]


def test_a_clean_file_verifies(records: rec.Records, capsys: pytest.CaptureFixture) -> None:
    v = records.verify()
    assert v["ok"] and v["problems"] == [] and v["chained"] == 3 and v["rows"] == 3
    assert main(["records", str(records.workspace), "--by", "jsmith", "--verify"]) == 0
    assert "ok: 3 audit row(s) chained, 3 row(s) match" in capsys.readouterr().out


def test_a_row_changed_outside_ms4map_is_found(
    records: rec.Records, capsys: pytest.CaptureFixture
) -> None:
    _without_guards(records.path, "inspections", "UPDATE inspections SET odor = 0 WHERE fid = 1")
    assert records.integrity_check() == "ok"  # SQLite itself sees nothing wrong
    v = records.verify()
    assert not v["ok"]
    assert v["problems"] == [
        "inspections 1 v1 differs from what its audit row recorded in odor: changed outside ms4map."
    ]
    assert main(["records", str(records.workspace), "--by", "jsmith", "--verify"]) == 2
    assert "CHANGED OUTSIDE MS4MAP" in capsys.readouterr().out


def test_an_audit_row_changed_outside_ms4map_breaks_the_chain(records: rec.Records) -> None:
    _without_guards(records.path, "audit", "UPDATE audit SET created_by = 'boss' WHERE fid = 2")
    problems = records.verify()["problems"]
    assert any(p.startswith("audit row 2 (insert of inspections 2 v1)") for p in problems)


def test_a_row_and_its_audit_row_removed_together_break_the_chain(records: rec.Records) -> None:
    con = sqlite3.connect(records.path)
    try:
        for t in ("inspections", "audit"):
            con.execute(f"DROP TRIGGER {t}_no_delete")
        con.execute("DELETE FROM inspections WHERE inspection_id = 2")
        con.execute("DELETE FROM audit WHERE fid = 2")
        con.commit()
    finally:
        con.close()
    problems = records.verify()["problems"]
    assert [p.split(" (")[0] for p in problems] == ["audit row 3"]


# -- issue 29 items 11 and 13: the records file's own trouble, and who may read it ----------
def test_a_new_records_file_is_the_owners_only(records: rec.Records) -> None:
    import stat

    assert stat.S_IMODE(records.path.stat().st_mode) == 0o600


def test_a_read_only_records_file_is_said_with_exit_3(
    records: rec.Records, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The old code ended in 'internal error' (exit 70). Tests run as root, whom chmod
    does not stop: the file is opened read-only as an immutable file would be."""
    from ms4map.records import gpkg

    def read_only(path: Path) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1, isolation_level=None)

    monkeypatch.setattr(gpkg, "connect", read_only)
    before = records.path.read_bytes()
    code = main(
        [
            "inspect",
            str(records.workspace),
            "--by",
            "jsmith",
            "--outfall",
            "OF-3",
            "--date",
            "2025-06-05",
        ]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "is read-only" in err and "Fix: make the file and its folder writable" in err
    assert records.path.read_bytes() == before


def test_a_records_file_that_cannot_be_created_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A disk that fills while the records file is made: no 0-byte file is left."""
    from ms4map.records import gpkg

    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    town = make_town(tmp_path)

    def full_disk(con, **kw):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(gpkg, "ensure_schema", full_disk)
    code = main(
        ["inspect", str(town), "--by", "jsmith", "--outfall", "OF-1", "--date", "2025-06-05"]
    )
    assert code in (2, 3)
    assert "disk" in capsys.readouterr().err
    assert not rec.records_path(town).exists()
