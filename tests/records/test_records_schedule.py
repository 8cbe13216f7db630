"""Outfall priority and the five-year screening schedule (issue 30 item 4), on designed sets."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_records_pack import make_designed, seed

import ms4map.records as rec
from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.records.schedule import (
    DEFAULT_WEIGHTS,
    priority_scores,
    priority_weights,
    screening_schedule,
    upstream_counts,
)


def _scores(rows: list[tuple[str, float, str | None]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"outfall_id": o, "priority": p, "last_screened": d, "why": "w"} for o, p, d in rows]
    )


#: never screened first (E before A: priority), then priority (D), then the oldest
#: screening (C, 2018, before B, 2020, at equal priority)
DESIGNED = _scores(
    [
        ("A", 0.0, None),
        ("B", 10.0, "2020-05-01"),
        ("C", 10.0, "2018-05-01"),
        ("D", 50.0, "2025-05-01"),
        ("E", 3.0, None),
    ]
)


def test_schedule_follows_the_documented_order() -> None:
    plan, warnings = screening_schedule(DESIGNED, start=2026, years=5, per_year=2)
    assert warnings == []
    assert plan["outfall_id"].tolist() == ["E", "A", "D", "C", "B"] * 2
    assert plan["year"].tolist() == [2026, 2026, 2027, 2027, 2028, 2028, 2029, 2029, 2030, 2030]
    first = plan.drop_duplicates("outfall_id")
    assert set(first["outfall_id"]) == set(DESIGNED["outfall_id"])  # all within five years
    assert plan.loc[plan["outfall_id"] == "E", "visit"].tolist() == [1, 2]
    assert plan["why"].iloc[0].startswith("never screened")


def test_a_crew_too_small_is_reported_not_dropped() -> None:
    plan, warnings = screening_schedule(DESIGNED, start=2026, years=3, per_year=1)
    assert plan["outfall_id"].tolist() == ["E", "A", "D", "C", "B"]  # every outfall is a row
    assert plan["year"].tolist()[:3] == [2026, 2027, 2028]
    assert plan["year"].iloc[3:].isna().all()
    assert plan["why"].iloc[3].startswith("NOT COVERED")
    assert len(warnings) == 1 and "reach 3 of 5 outfalls" in warnings[0]
    assert "--per-year 2" in warnings[0]
    with pytest.raises(UsageError, match="at least one year"):
        screening_schedule(DESIGNED, start=2026, years=0, per_year=1)


def test_priority_components_and_weights_hand_worked(tmp_path: Path) -> None:
    path = make_designed(tmp_path)
    r = rec.open_records(path, user="jsmith")
    seed(r)
    weights, classes = priority_weights(r.profile.raw.get("records"))
    assert weights == DEFAULT_WEIGHTS and classes == ("4*", "7*")
    drainage = pd.DataFrame(
        {
            "parcel_id": ["p1", "p2", "p3", "p4", "p5", "p6", "p1"],
            "outfall_id": ["OF-1", "OF-1", "OF-1", "OF-2", "OF-2", "OF-2", "OF-1"],
        }
    )
    parcels = pd.DataFrame(
        {
            "parcel_id": ["p1", "p2", "p3", "p4", "p5", "p6"],
            "sewer": ["septic", "Septic", "public", "public", "public", "public"],
            "prop_class": ["210", "220", "484", "411", "710", "449"],
        }
    )
    up = upstream_counts(drainage, parcels, classes=classes).set_index("outfall_id")
    assert up.loc["OF-1"].tolist() == [2, 1]  # p1 counted once
    assert up.loc["OF-2"].tolist() == [0, 3]
    s = priority_scores(
        r.outfalls,
        r.inspections(),
        r.cases(),
        upstream=up.reset_index(),
        impaired={"OF-1", "OF-2", "OF-4"},
        weights=weights,
    ).set_index("outfall_id")
    # OF-1: septic 2x1 + classes 1x1 + flowing 2x2 + suspect 1x4 + case 1x3 + impaired 5 = 19
    # OF-2: classes 3x1 + flowing 1x2 + obvious 1x4 + case 1x3 + complaint 1x3 + impaired 5 = 20
    # OF-3: case 1x3 + complaint 1x3 = 6; OF-4: TMDL watershed 5
    assert s["priority"].to_dict() == {"OF-1": 19.0, "OF-2": 20.0, "OF-3": 6.0, "OF-4": 5.0}
    assert "septic parcels tributary 2 x 1" in s.loc["OF-1", "why"]
    assert "complaints 1 x 3" in s.loc["OF-2", "why"]
    # the records' own priorities, without the network: upstream not known, said so
    own = r.priorities().set_index("outfall_id")
    assert own["priority"].to_dict() == {"OF-1": 16.0, "OF-2": 17.0, "OF-3": 6.0, "OF-4": 5.0}
    assert "upstream trace not known" in own.loc["OF-1", "why"]
    _scores_, plan, _w = r.schedule(2026, years=5, per_year=1)
    # all screened: priority high to low
    assert plan["outfall_id"].tolist()[:4] == ["OF-2", "OF-1", "OF-3", "OF-4"]


def test_schedule_cli(tmp_path: Path, capsys) -> None:
    path = make_designed(tmp_path)
    seed(rec.open_records(path, user="jsmith"))
    out = tmp_path / "plan.csv"
    code = main(
        ["outfalls", "schedule", str(path), "--start", "2026", "--years", "5",
         "--per-year", "1", "--out", str(out), "--no-network"]
    )  # fmt: skip
    assert code == 0
    plan = pd.read_csv(out)
    assert plan["outfall_id"].tolist() == ["OF-2", "OF-1", "OF-3", "OF-4", "OF-2"]
    assert plan["year"].tolist() == [2026, 2027, 2028, 2029, 2030]
    code = main(
        ["outfalls", "schedule", str(path), "--start", "2026", "--years", "2",
         "--per-year", "1", "--no-network"]
    )  # fmt: skip
    said = capsys.readouterr()
    assert code == 0 and "cannot screen every outfall" in said.err
    assert "NOT COVERED" in said.out


def test_demo_schedule_from_the_upstream_traces(tmp_path: Path) -> None:
    import shutil

    import ms4map.datasets as datasets

    demo = tmp_path / "demo.gpkg"
    shutil.copy(datasets.get_path("alder_falls"), demo)
    r = rec.open_records(demo, user="jsmith")
    ids = r.outfalls["outfall_id"].astype(str).tolist()
    r.add_inspection(ids[0], "2025-06-01", flow_present=True)  # screened: after the others
    scores, plan, warnings = r.schedule(2026, years=5, per_year=5, network=True)
    assert warnings == []
    assert set(plan.drop_duplicates("outfall_id")["outfall_id"]) == set(ids)  # every outfall
    first = plan.drop_duplicates("outfall_id")["outfall_id"].tolist()
    assert first[-1] == ids[0]  # the one screened comes after every one never screened
    never = scores[scores["last_screened"].isna()].sort_values(
        ["priority", "outfall_id"], ascending=[False, True]
    )
    assert first[:-1] == never["outfall_id"].tolist()
    assert (scores["septic_parcels"] > 0).any()  # the traces count septic parcels upstream


def test_off_plan_samples_count_in_the_track_down(demo_result, tmp_path: Path) -> None:
    import ms4map.datasets as datasets
    from ms4map import idde
    from ms4map.network import trace_downstream, trace_upstream

    _ws, result = demo_result
    r = rec.open_records(
        datasets.get_path("alder_falls"), user="jsmith", records=tmp_path / "d.records.gpkg"
    )
    cid = r.open_case("OF-009", "2025-06-02", origin="finding")
    plan = idde.sampling_plan(result, "OF-009", max_samples=1, weight="structures")
    first = str(plan.iloc[0]["struct_id"])
    # a structure downstream of the plan's first sample, off the plan: found clean, it
    # clears everything above it, the plan's first sample included
    down = trace_downstream(result.network, first).nodes["struct_id"].dropna().astype(str)
    off = next(s for s in down if s not in (first,) and not s.startswith("OF"))
    above = set(trace_upstream(result.network, off).nodes["struct_id"].dropna().astype(str))
    assert first in above
    r.add_sample(cid, off, "2025-06-03", result="clean")
    nxt = r.next_sample(cid, result, weight="structures")
    assert nxt["unused"] == [f"{off}: clean"]
    assert "counted in the track-down" in nxt["reason"]
    assert nxt["struct_id"] is None or nxt["struct_id"] not in above  # old code: `first`
