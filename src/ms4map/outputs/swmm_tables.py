"""The documented tables and defaults of a SWMM model export: Manning's n by material, percent impervious by NY property class, the design storm.

Every value here is a planning default, not data: the model marks each element that uses
one (docs/exports.md, "SWMM models", lists them all with their sources).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DEFAULTS",
    "MANNING_N",
    "NY_CLASS_IMPERVIOUS",
    "TYPE_II_24H",
    "design_storm",
    "manning_n",
    "pct_impervious",
]

#: Manning's n of a conduit by its material (upper case; EPA SWMM 5.2 Reference Manual
#: Vol. II, Table A-8 "Manning's n for closed conduits", and Table A-9 for channels).
MANNING_N: dict[str, float] = {
    "RCP": 0.013,  # concrete pipe
    "CONCRETE": 0.013,
    "PVC": 0.011,
    "HDPE": 0.012,  # smooth-lined (corrugated single wall: 0.024, use CMP)
    "CPP": 0.024,  # corrugated plastic
    "CMP": 0.024,  # corrugated metal
    "VCP": 0.013,  # vitrified clay
    "DIP": 0.013,  # cement-lined ductile iron
    "CIP": 0.013,
    "BRICK": 0.015,
    "STONE": 0.017,
    "GRASS": 0.035,  # grassed swale or ditch
    "EARTH": 0.025,
    "RIPRAP": 0.040,
}
#: Defaults used where the data has no value (each element using one is tagged).
DEFAULTS: dict[str, float] = {
    "n_pipe": 0.013,  # a pipe of unknown material: as concrete
    "n_channel": 0.035,  # an open channel of unknown material: as grass
    "diameter_m": 0.305,  # a pipe without a diameter: 12 in
    "channel_depth_m": 0.6,  # an open channel's trapezoid: 0.6 m deep,
    "channel_bottom_m": 0.6,  # 0.6 m bottom width,
    "channel_side_slope": 3.0,  # 3 horizontal : 1 vertical sides
    "node_depth_m": 1.5,  # rim above invert where neither the data nor the DEM says
    "storage_area_m2": 100.0,  # a storage unit's constant surface area
    "slope_pct": 1.0,  # a subcatchment without a DEM slope
    "pct_imperv_unknown": 30.0,  # a parcel whose class the table does not list
    "pct_imperv_outside_parcels": 60.0,  # streets and rights of way
    "n_imperv": 0.012,  # SWMM manual Table A-6: smooth asphalt 0.011, concrete 0.012
    "n_perv": 0.15,  # short prairie grass
    "s_imperv_mm": 1.27,  # depression storage, Table A-5: 0.05 in impervious,
    "s_perv_mm": 5.08,  # 0.20 in lawns
    "pct_zero": 25.0,  # impervious area without depression storage (SWMM's default)
    "horton_max_mm_h": 76.2,  # Horton (Table A-3 guidance): 3 in/h dry,
    "horton_min_mm_h": 7.62,  # 0.3 in/h saturated (hydrologic soil group B),
    "horton_decay_h": 4.0,  # decay 4 /h,
    "horton_dry_days": 7.0,  # 7 days to dry
}

#: Percent impervious by NY ORPTS property class code (exact code first, then its first
#: two digits + "0", then its first digit + "00"); planning-level values after TR-55
#: (NRCS 1986) Table 2-2a: residential districts by lot size, commercial 85 %, industrial 72 %.
NY_CLASS_IMPERVIOUS: dict[str, float] = {
    "100": 5.0,  # agricultural
    "200": 30.0,  # residential (other)
    "210": 30.0,  # one family year-round (1/3 - 1/2 acre lots: 25-30 %)
    "215": 35.0,  # one family with accessory apartment
    "220": 38.0,  # two family (1/4 acre lots)
    "230": 45.0,  # three family
    "240": 12.0,  # rural residence with acreage (2 acre lots)
    "250": 15.0,  # estate
    "260": 12.0,  # seasonal residence
    "270": 35.0,  # mobile home
    "280": 45.0,  # multiple residences
    "300": 5.0,  # vacant land
    "312": 10.0,  # vacant with small improvements
    "314": 2.0,  # rural vacant < 10 acres
    "322": 2.0,  # rural vacant > 10 acres
    "330": 10.0,  # vacant commercial
    "340": 10.0,  # vacant industrial
    "400": 85.0,  # commercial
    "411": 65.0,  # apartments
    "500": 30.0,  # recreation and entertainment
    "590": 10.0,  # parks
    "600": 50.0,  # community services
    "700": 72.0,  # industrial
    "800": 40.0,  # public services
    "900": 2.0,  # wild, forested, conservation lands and public parks
}

#: NRCS 24-hour Type II rainfall distribution (TR-55, 1986, Table B-2): hours -> cumulative
#: fraction of the day's depth.  NYSDEC's design manual uses Type II for most of New York
#: (Type III on Long Island and the lower Hudson: replace the time series there).
TYPE_II_24H: tuple[tuple[float, float], ...] = (
    (0.0, 0.0),
    (2.0, 0.022),
    (4.0, 0.048),
    (6.0, 0.080),
    (7.0, 0.098),
    (8.0, 0.120),
    (8.5, 0.133),
    (9.0, 0.147),
    (9.5, 0.163),
    (9.75, 0.172),
    (10.0, 0.181),
    (10.5, 0.204),
    (11.0, 0.235),
    (11.5, 0.283),
    (11.75, 0.357),
    (12.0, 0.663),
    (12.5, 0.735),
    (13.0, 0.772),
    (13.5, 0.799),
    (14.0, 0.820),
    (16.0, 0.880),
    (20.0, 0.952),
    (24.0, 1.0),
)

#: The rain gage's recording interval (minutes) of the design storm's intensities.
STORM_STEP_MIN = 15


def design_storm(depth: float) -> list[tuple[float, float]]:
    """The Type II 24-hour storm of ``depth`` as intensities per 15 minutes.

    Parameters
    ----------
    depth : float
        The 24-hour depth (in the model's rain unit: millimetres or inches).

    Returns
    -------
    list of (hours, intensity per hour)
        One entry per 15-minute step from 0 to 23.75 h; the intensities sum to ``depth``
        over the day (linear between the table's points).
    """
    hours, frac = np.array(TYPE_II_24H).T
    step = STORM_STEP_MIN / 60.0
    t = np.arange(0.0, 24.0 + step / 2, step)
    cum = np.interp(t, hours, frac) * depth
    rate = np.diff(cum) / step
    return [(float(h), float(r)) for h, r in zip(t[:-1], rate, strict=True)]


def manning_n(material: str | None, *, is_open: bool) -> tuple[float, bool]:
    """Manning's n for ``material`` and whether it is a default (material not listed)."""
    key = str(material or "").strip().upper()
    if key in MANNING_N:
        return MANNING_N[key], False
    return (DEFAULTS["n_channel"] if is_open else DEFAULTS["n_pipe"]), True


def pct_impervious(class_areas: str | None, total_m2: float) -> float:
    """Area-weighted percent impervious of a catchment.

    Parameters
    ----------
    class_areas : str or None
        ``"210:1234.5;311:20.0"``: square metres of each parcel property class in it.
    total_m2 : float
        The catchment's area; the part no parcel covers counts as streets
        (``DEFAULTS["pct_imperv_outside_parcels"]``).
    """
    acc, covered = 0.0, 0.0
    for part in str(class_areas or "").split(";"):
        if ":" not in part:
            continue
        code, _, a = part.rpartition(":")
        area = float(a)
        covered += area
        acc += area * _class_pct(code)
    rest = max(float(total_m2) - covered, 0.0)
    acc += rest * DEFAULTS["pct_imperv_outside_parcels"]
    total = covered + rest
    return round(acc / total, 2) if total > 0 else DEFAULTS["pct_imperv_outside_parcels"]


def _class_pct(code: str) -> float:
    code = code.strip()
    for key in (code, code[:2] + "0", code[:1] + "00"):
        if len(code) >= 3 and key in NY_CLASS_IMPERVIOUS:
            return NY_CLASS_IMPERVIOUS[key]
    return DEFAULTS["pct_imperv_unknown"]
