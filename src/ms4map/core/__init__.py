"""The foundation every step shares: errors and exit codes (:mod:`.errors`), QA findings
(:mod:`.qa`), the canonical schema and value normalisers (:mod:`.schema`) and the one
units helper (:mod:`.units`).  Imports nothing else of ms4map."""

from .lazy import lazy_submodules

__getattr__ = lazy_submodules(__name__, ("errors", "lazy", "qa", "schema", "units", "version"))
