"""The declared import order of ms4map's packages (docs/ARCHITECTURE.md).

:data:`LAYERS` lists the packages and modules along the data flow, lowest first; the
names in one tuple are siblings.  A module may import its own package and any package
of a *lower* layer, never a sibling or a higher one.  :data:`TOP` may import anything.
``tests/test_layout_imports.py`` checks every import in ``src/ms4map`` (also those inside
functions and under ``if TYPE_CHECKING:``) against this order, and that no modules
import each other in a cycle.  Nothing imports this module at run time.
"""

from __future__ import annotations

__all__ = ["LAYERS", "TOP", "layer_of"]

#: Lowest first; each entry is ``ms4map.<entry>`` (a package or a module).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),  # errors, QA findings, schema, units, version: imports nothing of ms4map
    ("io",),  # user files in, results out: workspace, field maps, validation, styles
    ("network", "hydrology"),  # the storm network; overland flow on the DEM
    ("drainage",),  # parcel -> inlet -> outfall -> receiving water
    ("pipeline",),  # network -> overland -> drainage, cached: Result, Settings
    ("analysis",),  # questions asked of a Result: paths, outfall areas, point queries
    ("rules",),  # waters, profiles, Conditions A/B/C, septic
    ("idde",),  # illicit discharges: candidate sources, sampling plans, notices
    ("records",),  # IDDE records and the app's users
    ("outputs",),  # maps, reports, exports
    ("batch",),  # many towns at once: the chain of each town as one task (Dask)
    ("datasets",),  # the demo town: committed files and their generator
)

#: May import anything: the command line, the app, the package root and its helpers.
TOP: tuple[str, ...] = ("cli", "app", "", "__main__", "_compat", "_layout")


def layer_of(module: str) -> int | None:
    """The layer index of ``ms4map.…`` module ``module``; ``None`` for the top."""
    parts = module.split(".")
    if parts[0] != "ms4map":
        raise ValueError(f"not an ms4map module: {module!r}")
    head = parts[1] if len(parts) > 1 else ""
    if head in TOP:
        return None
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    raise KeyError(f"{module} is in no layer of ms4map._layout.LAYERS")
