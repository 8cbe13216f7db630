"""The legal rules: 303(d)/TMDL waters (:mod:`.waters`), municipality profiles
(:mod:`.profiles`), Condition A/B/C screening (:mod:`.conditions`) and septic flags
(:mod:`.septic`)."""
