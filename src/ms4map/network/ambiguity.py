"""Find the structures whose outfall the evidence cannot decide: the ``ambiguous`` answer and its candidates.

Two causes (docs/network.md "The ambiguous answer"):

- a node with one way out, which no evidence orients (its first step is an
  ``outlet_path`` line), that reaches another outlet nearly as cheaply as its own
  (:data:`ms4map.network.orient.AMBIGUITY_RATIO`; the build stores that other target
  per node in ``net._graph["alt"]``);
- a flow split whose main branch only the input order chose (``SPLIT_RULES`` bit 4)
  between branches that reach different outfalls, where a branch is a conveyance no
  evidence orients (a split the evidence draws is real: flow reaches each outfall,
  method ``split``).

Everything whose main path passes such a node is ambiguous too, with the same
candidates.
"""

from __future__ import annotations

import numpy as np

from .solve import SolvedNetwork

__all__ = ["INPUT_ORDER_BIT", "ambiguous_candidates"]

#: The SPLIT_RULES bit of a main branch chosen by the input order alone.
INPUT_ORDER_BIT = 4


def ambiguous_candidates(
    s: SolvedNetwork,
    main: np.ndarray,
    *,
    alt: np.ndarray | None,
    free_comp: np.ndarray | None = None,
) -> dict[int, list[str]]:
    """Node -> its candidate outfalls (sorted, two or more) for every ambiguous node.

    Parameters
    ----------
    s : SolvedNetwork
        The solved network.
    main : ndarray of object
        Per node, the outfall its main path reaches (None where none).
    alt : ndarray of int, optional
        Per node, the other target it reaches nearly as cheaply (-1: none).
    free_comp : ndarray of bool, optional
        Per component, its exits include a conveyance no evidence orients; only there
        is a split chosen by the input order ambiguous (a split every branch of which
        the evidence orients is a real split: flow reaches each outfall).
    """
    n = len(main)
    ncomp = s.ncomp
    seeds: dict[int, set[str]] = {}
    rule = s.split_rule if s.split_rule is not None else np.zeros(ncomp, dtype=np.int64)
    if alt is not None and len(alt) == n:
        # a node where flow splits is left to the split rules below
        for i in np.where((alt >= 0) & (rule[s.comp] == 0))[0]:
            a, m = main[alt[i]], main[i]
            if a is None or m is None or a == m or s.is_outfall[i]:
                continue
            seeds.setdefault(int(s.comp[i]), set()).update((str(a), str(m)))
    # splits whose main exit only the input order chose, among exits no evidence orients
    free = np.zeros(ncomp, dtype=bool) if free_comp is None else free_comp
    for c in np.where(((rule & INPUT_ORDER_BIT) > 0) & free)[0]:
        allo = s.all_outfalls.get(int(c))
        if allo and len(set(allo)) > 1:
            seeds.setdefault(int(c), set()).update(str(o) for o in allo)
    if not seeds:
        return {}
    first = np.full(ncomp, -1, dtype=np.int64)
    for c in seeds:
        first[c] = c
    nxt = s.next_comp if s.next_comp is not None else np.arange(ncomp)
    step = nxt.copy()
    for _ in range(64):  # pointer jumping: the first seeded component downstream
        if not (first < 0).any():
            break
        first = np.where(first >= 0, first, first[step])
        nn = step[step]
        if np.array_equal(nn, step):
            first = np.where(first >= 0, first, first[step])
            break
        step = nn
    out: dict[int, list[str]] = {}
    todo = np.where((first[s.comp] >= 0) & ~s.is_outfall)[0]
    for i in todo:
        cand = set(seeds[int(first[s.comp[i]])])
        if main[i] is not None:
            cand.add(str(main[i]))
        if len(cand) > 1:
            out[int(i)] = sorted(cand)
    return out
