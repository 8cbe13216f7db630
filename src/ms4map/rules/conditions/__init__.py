"""Condition A, B and C determinations (docs/rules.md sections 2 and 3): the door.

The rules are pure functions over a site's drainage rows (the parcel drainage table's
columns: ``target_kind, target_id, fraction, outfall_id, receiving_water, pwl_id,
method, reason``), a :class:`ms4map.rules.waters.Waters` model, a municipality profile
and the user's inputs, so they can be tested on hand-made rows:

- :func:`determine` -> :class:`Determination` for one site (:mod:`.determination`);
- :func:`screen_condition_a` -> "would a development here be Condition A?" for every
  parcel of a drainage table, vectorised (:mod:`.screening`).

:func:`evaluate_site` (:mod:`.site`) and :func:`screen_parcels` / :func:`screen_all`
(:mod:`.screening`) are the entry points on a pipeline result: they resolve a site
(parcel id(s) or a polygon with its CRS), take its drainage from the result, and call
the pure rules.  The user's inputs live in :mod:`.inputs`, a site's drainage rows in
:mod:`.summary`, the one Condition A engine in :mod:`.condition_a` and the reasons it
gives in :mod:`.reasons`.  The impaired waters are :mod:`ms4map.rules.waters`' and the
septic flags :mod:`ms4map.rules.septic`'s.

Each condition is ``True``, ``False`` or ``None`` (undetermined: the part of the site
that would decide it drains somewhere unknown), with reasons an officer can put in a
letter, and the citations of the profile.
"""

# The door's names are those of __all__.  Also importable here, not in __all__:
# "kept", public names imported from this
# path before the split (the former __all__, tests, benchmarks), which new code imports
# from their step modules.
from .condition_a import ConditionAFacts
from .condition_a import decide_condition_a as decide_condition_a  # kept: tests
from .determination import determine
from .document import DETERMINATION_SCHEMA, DETERMINATION_VERSION, Condition, Determination
from .inputs import (
    APPLICATION_FIELDS,
    CLI_LABELS,
    EXCLUDING_TYPES,
    PROJECT_TYPES,
    Inputs,
    SiteInfo,
    acres_text,
    application_info,
    validate_inputs,
)
from .inputs import SWPPP_BASIC_ITEMS as SWPPP_BASIC_ITEMS  # kept: the former __all__
from .inputs import SWPPP_POST_ITEMS as SWPPP_POST_ITEMS  # kept: the former __all__
from .inputs import guess_project_type as guess_project_type  # kept: the former __all__, tests
from .inputs import guess_site_project_type as guess_site_project_type  # kept: the former __all__
from .reasons import condition_a_physics as condition_a_physics  # kept: tests
from .screening import SCREENING_COLUMNS as SCREENING_COLUMNS  # kept: the table's columns
from .screening import Screening, screen_all, screen_condition_a, screen_parcels
from .site import evaluate_site
from .site import tmdl_hits_for as tmdl_hits_for  # kept: tests
from .summary import DRAINAGE_COLUMNS as DRAINAGE_COLUMNS  # kept: the former __all__
from .summary import combine_parcel_rows as combine_parcel_rows  # kept: the former __all__, tests
from .summary import summarize_drainage as summarize_drainage  # kept: tests

__all__ = [
    "APPLICATION_FIELDS",
    "CLI_LABELS",
    "DETERMINATION_SCHEMA",
    "DETERMINATION_VERSION",
    "EXCLUDING_TYPES",
    "PROJECT_TYPES",
    "Condition",
    "ConditionAFacts",
    "Determination",
    "Inputs",
    "Screening",
    "SiteInfo",
    "acres_text",
    "application_info",
    "determine",
    "evaluate_site",
    "screen_all",
    "screen_condition_a",
    "screen_parcels",
    "validate_inputs",
]
