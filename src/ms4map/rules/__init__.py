"""The legal rules: 303(d)/TMDL waters (:mod:`.waters`), municipality profiles
(:mod:`.profiles`), Condition A/B/C screening (:mod:`.conditions`) and septic flags
(:mod:`.septic`)."""

from ..core.lazy import lazy_submodules

__getattr__ = lazy_submodules(__name__, ("conditions", "profiles", "septic", "waters"))
