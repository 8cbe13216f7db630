"""The storm network's defaults and closed lists: tolerances in metres, outfall methods, the rank of terminals.

A module without imports: the build ranks terminals, the trace prefers the best one,
and the command-line parser of ``ms4map trace`` shows the defaults.  Importing it runs
the :mod:`ms4map.network` door first, which loads scipy and geopandas.
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
#: Outfall methods that are *real* outlets (mapped, or where water is known to leave).
REAL_OUTFALL_METHODS = (
    "outfalls_layer",
    "outfall_structure",
    "terminal_at_water",
    "headwall_at_end",
)
#: How an outfall was found (``outfalls.method``), in order of precedence.
OUTFALL_METHODS = (*REAL_OUTFALL_METHODS, "terminal_at_structure", "terminal_loose_end")
#: Rank of a terminal by its outfall method: 0 real outlets, 1 a terminal at a
#: structure, 2 a bare line end.  Where flow splits, the branch reaching the best
#: rank is the main one.
OUTFALL_RANK = {
    "outfalls_layer": 0,
    "outfall_structure": 0,
    "terminal_at_water": 0,
    "headwall_at_end": 0,
    "terminal_no_water_layer": 1,
    "terminal_at_structure": 1,
    "terminal_loose_end": 2,
}
