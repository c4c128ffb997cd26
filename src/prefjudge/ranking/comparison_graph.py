"""Whether battles identify Bradley–Terry strengths: the comparison graph and the ranking errors.

A disconnected comparison graph (:class:`DisconnectedGraphError`, unless a regularised
joint fit is asked for) and a group of models that never lost (or never won) against the
rest (:class:`UnboundedStrengthError`, unless ``alpha > 0``) are found before fitting, by
:func:`check_fit_possible`.
"""

from __future__ import annotations

from collections.abc import Sequence
from graphlib import TopologicalSorter

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from prefjudge.ranking.pair_counts import FIRST_WINS, SECOND_WINS, TIE, PairCounts, TiePolicy
from prefjudge.ranking.ties import counts_ties

REGULARISE = ("regularise the fit with --alpha > 0 (e.g. --alpha 0.01; in an experiment, "
              "alpha in its [rank] table)")
"""How a message tells a person to regularise the fit: by the option's name."""


class RankError(ValueError):
    """The battles cannot give the leaderboard asked for."""


class TooFewModelsError(RankError):
    """Fewer than two models appear in the battles."""


class DisconnectedGraphError(RankError):
    """The comparison graph falls apart into groups never compared with each other.

    Attributes:
        components: Model names per connected component, largest first.
    """

    def __init__(self, components: list[list[str]]):
        self.components = components
        shown = "; ".join(_preview(group) for group in components[:10])
        super().__init__(
            f"the comparison graph has {len(components)} disconnected components, so their "
            f"relative strengths cannot be estimated: {shown}. Add battles between the "
            "components, rank each component separately, or opt into a regularised joint "
            "fit (--allow-disconnected with --alpha > 0; the gaps between components then "
            "come from the regulariser, not from evidence)."
        )


class UnboundedStrengthError(RankError):
    """Some group of models never lost (or never won) against the rest: no finite MLE.

    Attributes:
        groups: Model names per strongly connected group, from the top group (never
            lost to anyone outside it) to the bottom group (never beat anyone outside).
    """

    def __init__(self, groups: list[list[str]]):
        self.groups = groups
        top, bottom = groups[0], groups[-1]
        super().__init__(
            f"no finite Bradley–Terry fit: the models split into {len(groups)} groups where "
            "every battle between groups was won by the higher group "
            f"(top: {_preview(top)} never lost to anyone outside it; bottom: "
            f"{_preview(bottom)} never beat anyone outside it). Add battles, or "
            f"{REGULARISE}."
        )


def _preview(models: Sequence[str], limit: int = 6) -> str:
    names = ", ".join(models[:limit])
    more = f", … (+{len(models) - limit})" if len(models) > limit else ""
    return f"[{names}{more}]"


def _edge_mask(counts: PairCounts, ties: TiePolicy) -> tuple[np.ndarray, np.ndarray]:
    """Whether first beat second / second beat first in each pair (ties: both, unless drop)."""
    w = counts.weights
    tie = w[:, TIE] > 0 if counts_ties(ties) else np.zeros(len(w), dtype=bool)
    return (w[:, FIRST_WINS] > 0) | tie, (w[:, SECOND_WINS] > 0) | tie


def _beats_graph(counts: PairCounts, ties: TiePolicy) -> sparse.csr_matrix:
    forward, backward = _edge_mask(counts, ties)
    rows = np.concatenate([counts.first[forward], counts.second[backward]])
    cols = np.concatenate([counts.second[forward], counts.first[backward]])
    data = np.ones(len(rows))
    n = counts.n_models
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, n))


def comparison_components(counts: PairCounts, ties: TiePolicy = "half") -> list[list[str]]:
    """Connected components of the comparison graph (models linked by any battle).

    Args:
        counts: Aggregated battles.
        ties: Under ``drop`` a tie links nobody.

    Returns:
        Model names per component, largest first (one component when connected).
    """
    n_comp, labels = connected_components(_beats_graph(counts, ties), connection="weak")
    groups = [sorted(counts.models[i] for i in np.flatnonzero(labels == c)) for c in range(n_comp)]
    return sorted(groups, key=lambda g: (-len(g), g))


def strength_groups(counts: PairCounts, ties: TiePolicy = "half") -> list[list[str]]:
    """Strongly connected groups of the "beat or tied" graph, from the top down.

    The maximum-likelihood fit is finite exactly when there is one group (on a
    connected graph). With several, every battle between two groups was won by the
    higher one.

    Args:
        counts: Aggregated battles.
        ties: Tie policy (a tie links both ways unless ``drop``).

    Returns:
        Model names per group in topological order (top first).
    """
    n_comp, labels = connected_components(_beats_graph(counts, ties), connection="strong")
    if n_comp == 1:
        return [sorted(counts.models)]
    forward, backward = _edge_mask(counts, ties)
    above: dict[int, set[int]] = {c: set() for c in range(n_comp)}
    for winners, losers, mask in (
        (counts.first, counts.second, forward),
        (counts.second, counts.first, backward),
    ):
        for win, lose in zip(labels[winners[mask]], labels[losers[mask]], strict=True):
            if win != lose:
                above[int(lose)].add(int(win))
    order = list(TopologicalSorter(above).static_order())
    return [sorted(counts.models[i] for i in np.flatnonzero(labels == c)) for c in order]


def _has_finite_mle(counts: PairCounts, ties: TiePolicy) -> bool:
    n_comp, _ = connected_components(_beats_graph(counts, ties), connection="strong")
    return n_comp == 1


def check_fit_possible(
    counts: PairCounts,
    ties: TiePolicy = "half",
    alpha: float = 0.0,
    *,
    allow_disconnected: bool = False,
) -> list[list[str]]:
    """Check that the battles identify the strengths (see the module docstring).

    Args:
        counts: Aggregated battles.
        ties: Tie policy.
        alpha: Regularisation strength.
        allow_disconnected: Opt into a regularised fit across disconnected components.

    Returns:
        The connected components (one when the graph is connected).

    Raises:
        TooFewModelsError: Fewer than two models.
        DisconnectedGraphError: Disconnected and not opted in.
        UnboundedStrengthError: No finite maximum-likelihood fit and ``alpha == 0``.
        ValueError: ``allow_disconnected`` with ``alpha <= 0``, or a negative alpha.
    """
    if alpha < 0:
        raise ValueError("alpha must be >= 0")
    if counts.n_models < 2:
        only = f" ({counts.models[0]})" if counts.models else ""
        raise TooFewModelsError(
            f"a leaderboard needs at least two models; the battles name {counts.n_models}{only}"
        )
    components = comparison_components(counts, ties)
    if len(components) > 1:
        if not allow_disconnected:
            raise DisconnectedGraphError(components)
        if alpha <= 0:
            raise ValueError(
                "a joint fit of a disconnected graph (--allow-disconnected) needs --alpha > 0"
            )
    if alpha == 0:
        groups = strength_groups(counts, ties)
        if len(groups) > 1:
            raise UnboundedStrengthError(groups)
    return components
