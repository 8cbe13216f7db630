"""The legal rules: Condition A/B/C determinations and screening, septic flags, profiles.

The door of :mod:`ms4map.rules`; its parts each do one job: 303(d)/TMDL waters
(:mod:`.waters`), municipality profiles (:mod:`.profiles`), Condition A/B/C
determinations and the batch screening (:mod:`.conditions`) and septic flags
(:mod:`.septic`).
"""

from . import conditions, profiles, septic, waters
from .conditions import (
    Determination,
    Screening,
    determine,
    evaluate_site,
    screen_all,
    screen_parcels,
)
from .profiles import Profile, load_profile
from .septic import flag_septic, mailing_list
from .waters import Waters

__all__ = [
    "Determination",
    "Profile",
    "Screening",
    "Waters",
    "determine",
    "evaluate_site",
    "flag_septic",
    "load_profile",
    "mailing_list",
    "screen_all",
    "screen_parcels",
    # the public modules
    "conditions",
    "profiles",
    "septic",
    "waters",
]
