"""Septic systems tributary to the MS4 (docs/rules.md section 4; Stillwater 174-6 and 174-7).

- :mod:`.flags`: the ``septic`` layer of a pipeline result (:func:`septic_flags` ->
  :class:`SepticFlags`; :func:`flag_septic` gives today's frame with ``attrs``);
- :mod:`.assess`: its steps (septic parcels, tributary test, special conditions,
  setbacks, priority);
- :mod:`.reasons`: each parcel's reason, and why special conditions are open;
- :mod:`.failures`: the six failure conditions of Stillwater 174-6;
- :mod:`.letters`: the owners' mailing list.

The 303(d) listings and TMDL watersheds the special conditions read are in
:mod:`ms4map.rules.waters`; Condition A in :mod:`ms4map.rules.conditions`.
"""

from .assess import SEPTIC_COLUMNS
from .failures import FAILURE_CONDITIONS, parse_failure_codes
from .flags import SepticFlags, assess_septic, flag_septic, flag_septic_table, septic_flags
from .letters import mailing_list, write_mailing_list
from .reasons import undetermined_causes

__all__ = [
    "FAILURE_CONDITIONS",
    "SEPTIC_COLUMNS",
    "SepticFlags",
    "assess_septic",
    "flag_septic",
    "flag_septic_table",
    "mailing_list",
    "parse_failure_codes",
    "septic_flags",
    "undetermined_causes",
    "write_mailing_list",
]
