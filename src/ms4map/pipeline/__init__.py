"""One orchestrator for the chain validate -> network -> overland -> drainage, with caching.

:func:`run` (in :mod:`.run`) takes a workspace and its :class:`Settings` (:mod:`.settings`)
and returns a :class:`Result` (:mod:`.result`); :mod:`.cache` keeps each step's result; :mod:`.model_layers` gives the traced network
and the catchments' slope and flow length for a model.
The questions asked of a result are in :mod:`ms4map.analysis`.
"""

from .cache import clear_cache, workspace_key
from .model_layers import model_layers
from .result import PipelineResult, Result, outfall_points
from .run import drainage_shares, run
from .settings import DEFAULT_SETTINGS, Settings, command_settings

__all__ = [
    "DEFAULT_SETTINGS",
    "PipelineResult",
    "Result",
    "Settings",
    "clear_cache",
    "command_settings",
    "drainage_shares",
    "model_layers",
    "outfall_points",
    "run",
    "workspace_key",
]
