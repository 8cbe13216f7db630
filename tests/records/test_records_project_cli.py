"""Issue 31: ``ms4map project`` on a tiny town (exit codes, messages naming the field)."""

from __future__ import annotations

import json

from test_records import make_town
from test_records_projects import determination

from ms4map.cli import main
from ms4map.records import open_records
from ms4map.records import projects as P


def test_project_commands(tmp_path, capsys) -> None:
    town = make_town(tmp_path)
    det = tmp_path / "det.json"
    det.write_text(json.dumps(determination(town.resolve())), encoding="utf-8")
    base = [str(town), "--by", "jsmith"]

    def run(*args: str) -> int:
        return main(["project", args[0], *base, *args[1:]])

    assert run("new", "--determination", str(det), "--date", "2026-03-02") == 0
    assert "Project 1 'Acme lot' saved" in capsys.readouterr().out
    # out of order: exit 2, the allowed step named, nothing written
    assert run("advance", "1", "--step", "approved", "--date", "2026-03-04") == 2
    assert "allowed next step is 'swppp_submitted'" in capsys.readouterr().err
    assert run("advance", "1", "--step", "swppp_submitted", "--date", "2026-03-04") == 0
    assert run("advance", "1", "--step", "approved", "--date", "2026-03-05") == 2
    assert "'approved_by'" in capsys.readouterr().err
    code = run(
        "advance", "1", "--step", "approved", "--date", "2026-03-05", "--approved-by", "Board"
    )
    assert code == 0
    capsys.readouterr()
    code = run(
        "notify",
        "1",
        "--stage",
        "start_of_construction",
        "--stage-at",
        "2026-03-10T08:00",
        "--notified-at",
        "2026-03-08T09:00",
    )
    assert code == 0 and "(47 hours ahead) LATE" in capsys.readouterr().out
    code = run(
        "notify",
        "1",
        "--stage",
        "erosion_controls_installed",
        "--stage-at",
        "2026-03-10T08:00",
        "--notified-at",
        "2026-03-08T08:00",
    )
    out = capsys.readouterr().out
    assert code == 0 and "(48 hours ahead)." in out and "LATE" not in out
    assert run("notify", "1", "--stage", "paving", "--stage-at", "2026-03-10",
               "--notified-at", "2026-03-08") == 2  # fmt: skip
    assert "'stage' = 'paving'" in capsys.readouterr().err
    assert run("stop-work", "1", "--date", "2026-03-09", "--reason", "no silt fence") == 0
    assert "site stabilization only" in capsys.readouterr().out
    assert run("update", "1", "--guarantee-kind", "cash_escrow", "--co-hold") == 0
    capsys.readouterr()
    assert main(["project", "list", str(town), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(p["project_id"], p["status"]) for p in listed] == [(1, "approved")]
    assert main(["project", "show", str(town), "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["state"]["stop_work_orders"] == [3] and shown["state"]["co_hold"] is True
    assert shown["state"]["late_notices"] == 1
    assert run("lift", "1", "--date", "2026-03-10") == 0
    # a viewer is refused (exit 4) and nothing is written
    code = main(["project", "advance", str(town), "1", "--by", "guest", "--role", "viewer",
                 "--step", "under_construction", "--date", "2026-03-10"])  # fmt: skip
    assert code == 4 and "viewer role" in capsys.readouterr().err
    r = open_records(town, user="jsmith")
    assert P.project(r, 1)["status"] == "approved"
    assert main(["project", "show", str(town), "7"]) == 2
    assert "no such project" in capsys.readouterr().err


def test_project_new_screens_a_site_of_the_demo(demo_copy, capsys) -> None:
    """``project new --site ID --acres N`` screens the site (as ms4map screen) and saves
    the determination; without a site or a file the command says what to give."""
    from ms4map.datasets import alder_falls

    scenarios = alder_falls.SCENARIO_PARCELS or alder_falls.build_layers().info["scenarios"]
    parcel = scenarios["a"]["parcel_id"]
    site = ["--site", parcel, "--acres", "6", "--type", "residential"]
    code = main(["project", "new", str(demo_copy), "--by", "jsmith", *site, "--applicant", "A. H."])
    assert code == 0, capsys.readouterr().err
    r = open_records(demo_copy, user="jsmith")
    p = P.project(r, 1)
    assert (p["parcel_ids"], p["applicant"], bool(p["facility_required"])) == (
        parcel,
        "A. H.",
        True,
    )
    assert P.determination_of(r, 1)["inputs"]["disturbed_acres"] == 6
    capsys.readouterr()
    assert main(["project", "new", str(demo_copy), "--by", "jsmith"]) == 4
    assert "--determination FILE.json" in capsys.readouterr().err
