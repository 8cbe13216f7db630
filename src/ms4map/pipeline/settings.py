"""The settings of the drainage chain: one typed field per setting, with its unit, help and default.

:class:`Settings` is the one source of the defaults (the overland ones come from
:data:`ms4map.hydrology.DEFAULTS`, the network ones are ``None``: the network
module's own defaults, :mod:`ms4map.network.settings`), of the units and help texts the
``ms4map drainage`` command shows (``cli/drainage.py`` builds its options from the fields)
and of the settings in the step cache's keys.  :data:`DEFAULT_SETTINGS` and
:func:`command_settings` are computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..core.errors import UsageError
from ..drainage import DEFAULT_FALLBACK_M
from ..hydrology import DEFAULTS

__all__ = [
    "DEFAULT_SETTINGS",
    "DRAINAGE_KEYS",
    "NETWORK_KEYS",
    "OVERLAND_KEYS",
    "Settings",
    "command_settings",
]


def _setting(default: float | None, unit: str, help: str, step: str) -> Any:  # noqa: A002
    """A :class:`Settings` field: its default, and its unit, help text and step as metadata."""
    return field(default=default, metadata={"unit": unit, "help": help, "step": step})


@dataclass(frozen=True)
class Settings:
    """Every setting of :func:`ms4map.pipeline.run`, in metres / square metres.

    Each field's metadata holds its ``unit`` (``"m"`` or ``"m2"``), ``help`` (the text of
    the ``ms4map drainage`` option) and ``step`` (``network``, ``overland`` or
    ``drainage``: the step whose cache key it is part of, with those of the steps before).
    Values are kept as given (``5`` stays an int), so the cache keys are those of the
    same settings passed as keywords.

    Raises
    ------
    UsageError
        A setting that is not a non-negative number.
    """

    snap_tolerance_m: float | None = _setting(
        None, "m", "network snap tolerance (default: the network's)", "network"
    )
    water_tolerance_m: float | None = _setting(
        None,
        "m",
        "a network terminal this near a waterbody is an outfall (default: the network's)",
        "network",
    )
    lateral_tolerance_m: float | None = _setting(
        None,
        "m",
        "a structure no conveyance reaches drains to the nearest conveyance within this "
        "distance (default: the network's)",
        "network",
    )
    min_depth_m: float = _setting(
        DEFAULTS["min_depth_m"], "m", "a closed depression at least this deep is kept", "overland"
    )
    min_area_m2: float = _setting(
        DEFAULTS["min_area_m2"], "m2", "... and at least this large, in m2", "overland"
    )
    burn_depth_m: float = _setting(
        DEFAULTS["burn_depth_m"],
        "m",
        "waterbodies and open conveyances are lowered this much",
        "overland",
    )
    inlet_depth_m: float = _setting(
        DEFAULTS["inlet_depth_m"], "m", "inlet cells are lowered this much", "overland"
    )
    fallback_distance_m: float = _setting(
        DEFAULT_FALLBACK_M, "m", "without a DEM: nearest inlet within this distance", "drainage"
    )

    def __post_init__(self) -> None:
        for k, v in self.as_dict().items():
            if v is not None and (not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0):
                raise UsageError(f"Setting {k} must be a non-negative number, got {v!r}.")

    @classmethod
    def factory(cls, val: Settings | dict[str, Any] | None) -> Settings:
        """Settings from a :class:`Settings` (itself), a dict of some settings or ``None``.

        Raises
        ------
        UsageError
            An unknown setting, or a value that is not a non-negative number.
        """
        if isinstance(val, cls):
            return val
        if val is None:
            return cls()
        if isinstance(val, dict):
            unknown = sorted(set(val) - set(DEFAULT_SETTINGS))
            if unknown:
                raise UsageError(
                    f"Unknown setting(s) {unknown}; select from {sorted(DEFAULT_SETTINGS)}."
                )
            return cls(**val)
        raise UsageError(f"settings must be a Settings, a dict or None; got {type(val).__name__}.")

    def as_dict(self) -> dict[str, Any]:
        """``{name: value}`` of every setting, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _keys(step: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(Settings) if f.metadata["step"] == step)


#: The settings of each step (the cache key of a step holds those of the steps before it).
NETWORK_KEYS = _keys("network")
OVERLAND_KEYS = _keys("overland")
DRAINAGE_KEYS = _keys("drainage")

#: Every setting :func:`ms4map.pipeline.run` accepts, with its default (metres / square
#: metres; ``None``: the network module's default).
DEFAULT_SETTINGS: dict[str, Any] = {f.name: f.default for f in fields(Settings)}


def command_settings() -> dict[str, float]:
    """The settings ``ms4map drainage`` runs with when no option changes them.

    The command's option defaults (``cli/drainage.py``) and ``ms4map batch`` read them
    here, so a batch town's layers are made exactly as the command makes them.
    """
    return {k: float(v) for k, v in DEFAULT_SETTINGS.items() if v is not None}
