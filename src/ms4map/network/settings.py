"""Default tolerances of the storm network (metres), importable without the network code.

The command-line parser reads them to show defaults; importing :mod:`ms4map.network`
there would load scipy and geopandas before any command runs.
"""

from __future__ import annotations

#: Default snap tolerance in metres (5 US ft); chosen by measurement, see docs/network.md.
DEFAULT_SNAP_M = 1.524
#: Default distance (metres) within which a terminal node counts as "at water".
DEFAULT_WATER_M = 10.0
#: A from/to id is trusted when its structure lies within this distance (metres) of the
#: conveyance end it names; farther away the geometry wins and a QA finding is raised.
DEFAULT_ID_MATCH_M = 15.0
#: A structure that no conveyance reaches is assumed to drain through an unmapped lateral
#: to the nearest conveyance within this distance (metres); 0 turns the inference off.
DEFAULT_LATERAL_M = 15.0
