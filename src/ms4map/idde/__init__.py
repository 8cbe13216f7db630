"""Illicit discharge detection and elimination (docs/rules.md section 5; Stillwater 174 Art. I).

A flowing, suspect outfall starts an investigation.  This package answers the
Stormwater Management Officer's questions in order:

* :func:`flow_type` (:mod:`.flow_chart`) -- what is flowing?  The residential flow-type
  chart of the CWP IDDE manual (2004) on detergents, ammonia, potassium and fluoride.
* :func:`candidate_sources` (:mod:`.candidates`) -- who might be the source?  Parcels
  draining to the outfall with a recorded septic failure, a septic flag, an industrial
  (7xx) or commercial (4xx) property class, or an on-site septic system, each with the
  share of the parcel that drains there and the rule that made it a candidate.
* :func:`sampling_plan` (:mod:`.sampling`) -- where to sample?  A bisection of the
  outfall's upstream network: each sample splits what is still suspect roughly in
  half, so the source is isolated in about ``log2(n)`` samples.
* :func:`notice_of_violation` (:mod:`.notice`) -- a printable written notice of
  violation for the landowner, with the remedy period, appeal rights, penalties,
  officer title and citations taken from the municipality profile.

The records of inspections, samples and cases are in :mod:`ms4map.records`; the septic
flags candidates read in :mod:`ms4map.rules.septic`.

Examples
--------
>>> from ms4map.idde import flow_type
>>> flow_type(detergents_mg_l=0.5, ammonia_mg_l=2.0, potassium_mg_l=1.0)[0]
'sewage'
"""

from .candidates import (
    CANDIDATE_CLASSES,
    CANDIDATE_COLUMNS,
    candidate_sources,
    candidates_for_area,
    suggest_violation,
)
from .flow_chart import (
    AMMONIA_POTASSIUM_RATIO,
    DETERGENTS_MG_L,
    FLOW_TYPES,
    FLUORIDE_MG_L,
    flow_type,
    flow_type_of,
)
from .notice import VIOLATIONS, Notice, notice_of_violation
from .sampling import PLAN_COLUMNS, PLAN_WEIGHTS, sampling_plan

__all__ = [
    "AMMONIA_POTASSIUM_RATIO",
    "CANDIDATE_CLASSES",
    "CANDIDATE_COLUMNS",
    "DETERGENTS_MG_L",
    "FLOW_TYPES",
    "FLUORIDE_MG_L",
    "PLAN_COLUMNS",
    "PLAN_WEIGHTS",
    "VIOLATIONS",
    "Notice",
    "candidate_sources",
    "candidates_for_area",
    "flow_type",
    "flow_type_of",
    "notice_of_violation",
    "sampling_plan",
    "suggest_violation",
]
