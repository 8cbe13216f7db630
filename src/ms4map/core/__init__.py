"""The foundation every step shares; imports nothing else of ms4map.

Its modules are its door (each one topic, all light): errors and exit codes
(:mod:`.errors`), QA findings (:mod:`.qa`), the canonical schema (:mod:`.schema`), null
and truth values (:mod:`.nulls`), units (:mod:`.units`), business days and holidays
(:mod:`.calendar`), spreadsheet-safe CSV text (:mod:`.tables`), the manifest's file
list read without GIS libraries (:mod:`.manifest`) and the version (:mod:`.version`).  Other packages import from them
by name: ``from ms4map.core.errors import DataError``.  The door imports none of them,
so ``import ms4map.core.errors`` loads no pandas.
"""

__all__ = [  # noqa: F822
    "calendar",
    "errors",
    "manifest",
    "nulls",
    "qa",
    "schema",
    "tables",
    "units",
    "version",
]
