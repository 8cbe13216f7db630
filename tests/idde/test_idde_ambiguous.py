"""An outfall's investigation counts the parcels that may drain to it on an ambiguous path."""

from __future__ import annotations

from types import SimpleNamespace

import geopandas as gpd
import pandas as pd
from ambiguous_builders import inlet_rows, patch_network, y_network
from network_builders import UTM, ws_of
from shapely.geometry import box

from ms4map.analysis import outfall_area
from ms4map.drainage import network_join
from ms4map.drainage.join import join_rows
from ms4map.idde.candidates import candidates_for_area


def _result(monkeypatch):
    patch_network(monkeypatch)
    net = y_network()
    join = network_join(net)
    sure = join_rows(inlet_rows(("P2", "A", 1.0)), join).assign(
        outfall_id="O1", outfall_candidates="", candidate_waters=""
    )  # as if P2's inlet were decided
    drainage = pd.concat([join_rows(inlet_rows(("P1", "A", 1.0)), join), sure])
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2"], "sewer": ["septic", "septic"], "prop_class": ["210", "210"]},
        geometry=[box(-30, -10, -10, 10), box(-30, 20, -10, 40)],
        crs=UTM,
    )
    ws = ws_of(parcels=parcels)
    return SimpleNamespace(workspace=ws, drainage=drainage, network=None, sewersheds=None)


def test_parcel_on_an_ambiguous_path_may_drain_to_each_candidate(monkeypatch):
    result = _result(monkeypatch)
    o2 = outfall_area(result, "O2")
    assert list(o2.parcels["parcel_id"]) == ["P1"]
    assert o2.parcels["may_drain"].tolist() == ["O1 or O2"]
    assert "1 of them only may" in o2.reason
    o1 = outfall_area(result, "O1").parcels.set_index("parcel_id")
    assert o1.loc["P1", "may_drain"] == "O1 or O2" and o1.loc["P2", "may_drain"] == ""
    cands = candidates_for_area(outfall_area(result, "O2")).set_index("parcel_id")
    assert cands.loc["P1", "reason"] == (
        "on-site septic system that may be tributary to outfall O2; 100% of the parcel may "
        "drain to O2 (the network cannot tell whether it reaches O1 or O2)"
    )
