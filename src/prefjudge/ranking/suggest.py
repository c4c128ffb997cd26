"""Which model pairs to judge next: the judgments that most reduce rank uncertainty.

Pure functions over aggregated battles (:class:`~prefjudge.ranking.bradley_terry.PairCounts`);
nothing here prints or touches the disk. ``prefjudge rank --suggest N`` lists the top
pairs (:func:`suggest_pairs`), and ``prefjudge run`` with ``strategy = "suggest"``
spends a judging budget in rounds (:func:`plan_round`).

How a judgment is valued:

1. A Gaussian belief about the log-strengths θ (:class:`RatingBelief`): the fitted θ
   and a covariance ``C``, either

   * ``laplace`` (cheap, the default): the inverse Fisher information of the
     Bradley–Terry likelihood at the fit, ``C⁻¹ = Σ_pairs w_ij p_ij (1 − p_ij) u_ij
     u_ijᵀ + I / PRIOR_SD²`` with ``u_ij = e_i − e_j`` and ``w_ij`` the pair's battles.
     The weak N(0, PRIOR_SD²) prior makes it invertible, so a model with no battles gets
     a large but finite variance; or
   * ``bootstrap``: the sample covariance of bootstrap refits (the resamples of the
     leaderboard's intervals when given the same seed), with the prior variance for
     models that have no battle.

   Both see indirect evidence: two models never compared with each other but each
   compared with common opponents have a small variance of their difference.
2. Every unordered pair (k, l), compared or not, has a gap ``d = θ_k − θ_l``, its
   variance ``s² = uᵀ C u``, and ``p_flip = Φ(−|d| / s)``: the probability (normal
   approximation) that the fitted order of the two models is the wrong one — how much
   their rating distributions overlap. The expected number of misordered pairs,
   ``Σ p_flip``, is what Kendall's τ to the true order counts.
3. One more judgment of (i, j) adds the Fisher information ``I = p (1 − p)`` (``p`` the
   predicted win probability) along ``u_ij``, which shrinks the covariance by a rank-one
   update: ``C → C − I (C u)(C u)ᵀ / (1 + I s_ij²)``. It narrows not only the pair's own
   gap but every gap that involves a model of the pair or a model correlated with them.
   The judgment's value is the variance it removes from the gaps, each weighted by the
   probability that the gap's sign — the pair's order — is wrong:

       value(i, j) = Σ_(k,l) p_flip_kl × ΔVar(d_kl)

   (a weighted A-optimal design). The pair's own term is ``p_flip × s⁴ I / (1 + s² I)``:
   for a pair known only through its own ``n`` battles (``s² ≈ 1 / (n I)``) it is about
   ``p_flip × s² / (n + 1)`` — close, uncertain, rarely compared pairs are worth most,
   and a settled pair (clear gap, or many battles) next to nothing. The whole sum is
   ``I (M_ii + M_jj − 2 M_ij) / (1 + I s_ij²)`` with ``M = C L C`` and ``L`` the graph
   Laplacian of the weights ``p_flip_kl``: one O(models³) product values every pair at
   once. Weighting by the *share* of each gap's variance removed, or by the derivative
   of ``p_flip``, was tried and is worse on the simulation of ``scripts/bench_suggest.py``:
   both keep investing in nearly tied pairs whose order no budget settles.
4. Connectivity first: when the comparison graph falls apart into groups never compared
   with each other (a new model has no battle at all), their relative strengths are not
   estimable, so one pair per extra group — a middle model of the group against the
   least-used model of the rest with the closest fitted strength — comes before every
   valued pair (``kind = "connect"``).

Choosing several judgments (:func:`plan_round`; :func:`suggest_pairs` the same with at
most one per pair) is greedy: take the most valuable judgment, apply its rank-one update
to ``C`` (and so to every pair's value), and repeat; a pair can get several judgments,
with diminishing returns. The weights ``p_flip`` stay those of the round's fit (a
judgment's outcome is not known until it is made); the next round refits.

Tasks: battles that carry a ``task_id`` (``prefjudge judge`` verdicts do) tell which
tasks a pair was already judged on (in either order). Each suggestion lists the
available tasks (given, or every task id seen in the battles) that pair was not judged
on yet, so the next judgment adds a new task rather than repeating one.

The belief (step 1) is made by :mod:`prefjudge.ranking.belief`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.belief import (
    PRIOR_SD,
    UNCERTAINTIES,
    RatingBelief,
    Uncertainty,
    belief_from_counts,
    bootstrap_belief,
    counts_from_battles,
    empty_counts,
    laplace_belief,
    point_fit,
    with_models,
)

Kind = Literal["connect", "uncertain"]

#: Smallest variance of a gap (guards the divisions).
_MIN_VARIANCE = 1e-12


@dataclass(frozen=True)
class PairScores:
    """Every unordered model pair, valued (arrays in ``numpy.triu_indices`` order).

    Attributes:
        models: Model names.
        first: Index of the first model of each pair (``first < second``).
        second: Index of the second model.
        battles: Battles each pair has had (unweighted).
        p_first: Predicted probability that ``first`` beats ``second``.
        variance: Variance of the gap ``θ_first − θ_second``.
        p_flip: Probability that the fitted order of the pair is wrong.
        own: The pair's own term of ``value``: ``p_flip × s⁴ I / (1 + s² I)``.
        value: Misorder-weighted gap variance (logit²) one more judgment of the pair
            removes, summed over every pair (see the module docstring).
    """

    models: tuple[str, ...]
    first: np.ndarray
    second: np.ndarray
    battles: np.ndarray
    p_first: np.ndarray
    variance: np.ndarray
    p_flip: np.ndarray
    own: np.ndarray
    value: np.ndarray


@dataclass(frozen=True)
class Suggestion:
    """One model pair worth judging next.

    Attributes:
        model_a: The model with the higher fitted strength.
        model_b: The other model.
        score: The judgment's value when it was chosen (misorder-weighted gap variance
            it removes, in logit², after the suggestions above it); connecting pairs
            come first whatever their value.
        battles: Battles the pair has had so far.
        p_model_a_wins: Predicted probability that ``model_a`` wins the next judgment.
        p_order_flip: Probability that the fitted order of the pair is wrong.
        kind: ``connect`` (links groups never compared) or ``uncertain``.
        reason: Why, in words.
        untried_tasks: Available tasks the pair was not judged on yet (sorted), or None
            when the battles carry no task ids.
    """

    model_a: str
    model_b: str
    score: float
    battles: int
    p_model_a_wins: float
    p_order_flip: float
    kind: Kind
    reason: str
    untried_tasks: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, object]:
        """The suggestion as a JSON-ready dict (``untried_tasks`` as a list or None)."""
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "score": self.score,
            "battles": self.battles,
            "p_model_a_wins": self.p_model_a_wins,
            "p_order_flip": self.p_order_flip,
            "kind": self.kind,
            "reason": self.reason,
            "untried_tasks": None if self.untried_tasks is None else list(self.untried_tasks),
        }


# --------------------------------------------------------------------------- valuing


def _pair_index(first: np.ndarray, second: np.ndarray, n: int) -> np.ndarray:
    """Position of pairs ``(first < second)`` in ``numpy.triu_indices(n, 1)`` order."""
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    return first * n - first * (first + 1) // 2 + (second - first - 1)


def _index_of(a: int, b: int, n: int) -> int:
    """Position of the pair of model indices ``a``, ``b`` (any order) in pair arrays."""
    return int(_pair_index(np.array([min(a, b)]), np.array([max(a, b)]), n)[0])


class _Greedy:
    """The values of every pair's next judgment, kept exact under rank-one updates.

    Holds the covariance ``C`` and, per pair, ``q = uᵀ C L C u`` and ``s² = uᵀ C u``, so
    that taking a judgment costs O(models²) and re-valuing every pair O(pairs).
    """

    def __init__(self, counts: bt.PairCounts, belief: RatingBelief):
        if counts.models != belief.models:
            raise ValueError("the counts and the belief must cover the same models, in order")
        n = counts.n_models
        self.n = n
        self.first, self.second = (a.astype(np.int64) for a in np.triu_indices(n, k=1))
        self.theta = np.asarray(belief.theta, dtype=float)
        self.cov = np.array(belief.cov, dtype=float)
        f, s = self.first, self.second
        self.gap = self.theta[f] - self.theta[s]
        self.p_first = expit(self.gap)
        self.info = self.p_first * (1 - self.p_first)
        diag = np.diag(self.cov)
        self.variance = np.maximum(diag[f] + diag[s] - 2 * self.cov[f, s], _MIN_VARIANCE)
        self.p_flip = norm.cdf(-np.abs(self.gap) / np.sqrt(self.variance))
        weight = np.zeros((n, n))
        weight[f, s] = self.p_flip
        weight += weight.T
        self.laplacian = np.diag(weight.sum(axis=1)) - weight
        spread = self.cov @ self.laplacian @ self.cov
        spread_diag = np.diag(spread)
        self.q = spread_diag[f] + spread_diag[s] - 2 * spread[f, s]
        self.battles = np.zeros(len(f), dtype=np.int64)
        if len(counts.first):
            self.battles[_pair_index(counts.first, counts.second, n)] = counts.counts.sum(axis=1)

    def values(self) -> np.ndarray:
        """Misorder-weighted gap variance one more judgment removes, per pair."""
        return self.info * self.q / (1 + self.info * self.variance)

    def own(self, index: int | np.ndarray | slice = slice(None)) -> np.ndarray:
        """The pair's own term of :meth:`values` (for the pairs ``index``)."""
        variance, info = self.variance[index], self.info[index]
        return self.p_flip[index] * variance**2 * info / (1 + variance * info)

    def take(self, index: int) -> None:
        """Count one judgment of pair ``index``: the rank-one update of ``C``."""
        i, j = int(self.first[index]), int(self.second[index])
        v = self.cov[:, i] - self.cov[:, j]
        beta = self.info[index] / (1 + self.info[index] * max(v[i] - v[j], _MIN_VARIANCE))
        g = self.laplacian @ v
        w = self.cov @ g
        f, s = self.first, self.second
        dv, dw = v[f] - v[s], w[f] - w[s]
        self.q = self.q - 2 * beta * dv * dw + beta**2 * float(v @ g) * dv**2
        self.variance = np.maximum(self.variance - beta * dv**2, _MIN_VARIANCE)
        self.cov -= beta * np.outer(v, v)


def score_pairs(counts: bt.PairCounts, belief: RatingBelief) -> PairScores:
    """Value one more judgment of every unordered model pair (see the module docstring).

    Args:
        counts: Aggregated battles over the same models as ``belief``.
        belief: Fitted log-strengths and their covariance.

    Returns:
        One entry per pair, compared or not.

    Raises:
        ValueError: When ``counts`` and ``belief`` name different models.
    """
    greedy = _Greedy(counts, belief)
    return PairScores(counts.models, greedy.first, greedy.second, greedy.battles,
                      greedy.p_first, greedy.variance, greedy.p_flip, greedy.own(),
                      greedy.values())


def connecting_pairs(counts: bt.PairCounts, belief: RatingBelief,
                     ties: bt.TiePolicy = "half",
                     allowed: np.ndarray | None = None) -> list[tuple[int, int, int, int]]:
    """Pairs that join the comparison graph's groups into one, one per extra group.

    Groups are taken largest first; each later group is joined to everything before it
    by its middle model (median fitted strength) against the model already joined that
    has been used least as a link so far and, among those, has the closest fitted
    strength (the most even, so most informative, first judgment).

    Args:
        counts: Aggregated battles (models without battles are groups of one).
        belief: The fitted strengths.
        ties: Tie policy (under ``drop`` a tie links nobody).
        allowed: Optional boolean mask over pairs (``triu_indices`` order); pairs with
            ``False`` (e.g. nothing left to judge) are not used, and a group none of
            whose pairs is allowed stays apart.

    Returns:
        ``(member, partner, size of the member's group, models joined before it)`` per
        link, as model indices.
    """
    n = counts.n_models
    if n < 2:
        return []
    position = {name: k for k, name in enumerate(counts.models)}
    groups = [[position[name] for name in group]
              for group in bt.comparison_components(counts, ties)]
    if len(groups) == 1:
        return []
    theta = belief.theta
    joined = list(groups[0])
    uses = np.zeros(n, dtype=np.int64)
    links = []
    for group in groups[1:]:
        by_strength = sorted(group, key=lambda k: (theta[k], k))
        middle = by_strength[(len(by_strength) - 1) // 2]
        link = None
        for member in [middle, *(m for m in by_strength if m != middle)]:
            partners = sorted(joined, key=lambda k, x=member: (
                uses[k], abs(theta[k] - theta[x]), k))
            for partner in partners:
                if allowed is None or allowed[_index_of(member, partner, n)]:
                    link = (member, partner)
                    break
            if link is not None:
                break
        if link is not None:
            links.append((link[0], link[1], len(group), len(joined)))
            uses[list(link)] += 1
            joined += group
    return links


def untried_tasks(pairs: Sequence[tuple[str, str]], judged_tasks: pd.DataFrame | None,
                  available_tasks: Iterable[str] | None = None
                  ) -> list[tuple[str, ...] | None]:
    """Per model pair, the available tasks it was not judged on yet.

    A pair judged on a task in either order counts as judged there.

    Args:
        pairs: Model pairs (either order).
        judged_tasks: Battles with ``model_a``, ``model_b`` and ``task_id`` columns; None
            (or no ``task_id`` column) when the battles carry no task ids.
        available_tasks: Task ids a judgment may use; default: every task id in
            ``judged_tasks``.

    Returns:
        Per pair, the untried task ids in sorted order; None per pair when there are no
        task ids to go by.
    """
    if judged_tasks is None or "task_id" not in judged_tasks.columns:
        return [None] * len(pairs)
    frame = judged_tasks.dropna(subset=["task_id"])
    tasks = frame["task_id"].astype(str)
    available = (sorted({str(t) for t in available_tasks}) if available_tasks is not None
                 else sorted(set(tasks)))
    a, b = frame["model_a"].astype(str), frame["model_b"].astype(str)
    key = np.where(a < b, a + "\0" + b, b + "\0" + a)
    done: dict[str, set[str]] = {}
    for pair_key, task in zip(key, tasks, strict=True):
        done.setdefault(pair_key, set()).add(task)
    out: list[tuple[str, ...] | None] = []
    for x, y in pairs:
        seen = done.get("\0".join(sorted((x, y))), set())
        out.append(tuple(t for t in available if t not in seen))
    return out


@dataclass(frozen=True)
class _Pick:
    """One judgment the greedy choice took (reasons are worded only for suggestions)."""

    index: int
    kind: Kind
    value: float
    own_share: float = 1.0
    link: tuple[int, int, int] | None = None  # connect: (member, group size, joined)


def _greedy_picks(greedy: _Greedy, counts: bt.PairCounts, budget: int, room: np.ndarray,
                  ties: bt.TiePolicy) -> list[_Pick]:
    """Spend ``budget`` judgments: links first, then the most valuable, one at a time."""
    room = room.copy()
    picks: list[_Pick] = []
    current = RatingBelief(counts.models, greedy.theta, greedy.cov, "")
    for member, partner, size, rest in connecting_pairs(counts, current, ties,
                                                        allowed=room > 0):
        if len(picks) >= budget:
            break
        index = _index_of(member, partner, counts.n_models)
        picks.append(_Pick(index, "connect", float(greedy.values()[index]),
                           link=(member, size, rest)))
        greedy.take(index)
        room[index] -= 1
    while len(picks) < budget:
        values = np.where(room > 0, greedy.values(), -np.inf)
        index = int(np.argmax(values))
        value = float(values[index])
        if not np.isfinite(value):
            break
        share = 1.0 if value <= 0 else min(float(greedy.own(index)) / value, 1.0)
        picks.append(_Pick(index, "uncertain", value, own_share=share))
        greedy.take(index)
        room[index] -= 1
    return picks


def _reason(pick: _Pick, names: tuple[str, ...], pair: tuple[int, int], p_flip: float,
            battles: int, sd_elo: np.ndarray, model_battles: np.ndarray) -> str:
    """Why a suggestion was made, in words."""
    if pick.link is not None:
        member, size, rest = pick.link
        group = names[member] if size == 1 else f"a group of {size} models ({names[member]}'s)"
        return (f"never compared: links {group} to the other {rest} model(s), to which no "
                "battle connects it yet")
    compared = "never compared directly" if battles == 0 else (
        f"{battles} battle{'s' if battles != 1 else ''} so far")
    i, j = pair
    return (f"{p_flip:.0%} chance their order is wrong; {compared}; ±{sd_elo[i]:.0f}/"
            f"±{sd_elo[j]:.0f} Elo (1 sd) over {model_battles[i]:.0f}/{model_battles[j]:.0f} "
            f"battles; value {pick.own_share:.0%} this pair, {1 - pick.own_share:.0%} their "
            "other pairs")


def suggest_pairs(
    counts: bt.PairCounts,
    belief: RatingBelief,
    n: int,
    *,
    ties: bt.TiePolicy = "half",
    judged_tasks: pd.DataFrame | None = None,
    available_tasks: Iterable[str] | None = None,
) -> list[Suggestion]:
    """The ``n`` model pairs whose next judgments most reduce rank uncertainty.

    Pairs that connect groups never compared come first (see :func:`connecting_pairs`),
    then the greedy choice of the module docstring, at most one judgment per pair (so
    the list is the first ``n`` judgments of a round, each pair once).

    Args:
        counts: Aggregated battles over the belief's models.
        belief: Fitted log-strengths and covariance.
        n: How many pairs (fewer when there are fewer pairs).
        ties: Tie policy (for the comparison graph).
        judged_tasks: Battles with ``model_a``, ``model_b`` and ``task_id`` columns (e.g.
            the battles frame of verdict files), to list the tasks each pair still lacks.
        available_tasks: The task ids a judgment may use; default: every task id in
            ``judged_tasks``.

    Returns:
        Suggestions, best first; ``model_a`` is the pair's stronger model.

    Raises:
        ValueError: When ``n`` is below 1, or the counts and belief differ in models.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    greedy = _Greedy(counts, belief)
    p_first, p_flip, battles = greedy.p_first, greedy.p_flip, greedy.battles
    sd_elo = np.sqrt(np.maximum(np.diag(belief.cov), 0.0)) * bt.ELO_PER_LOGIT
    model_battles = counts.model_battles()
    picks = _greedy_picks(greedy, counts, n, np.ones(len(greedy.first), dtype=np.int64), ties)
    names = counts.models
    pairs = [(int(greedy.first[p.index]), int(greedy.second[p.index])) for p in picks]
    untried = untried_tasks([(names[i], names[j]) for i, j in pairs], judged_tasks,
                            available_tasks)
    suggestions = []
    for pick, (i, j), tasks in zip(picks, pairs, untried, strict=True):
        k = pick.index
        p = float(p_first[k])
        if belief.theta[j] > belief.theta[i]:
            i, j, p = j, i, 1 - p
        reason = _reason(pick, names, (i, j), float(p_flip[k]), int(battles[k]), sd_elo,
                         model_battles)
        suggestions.append(Suggestion(
            model_a=names[i], model_b=names[j], score=pick.value, battles=int(battles[k]),
            p_model_a_wins=p, p_order_flip=float(p_flip[k]), kind=pick.kind, reason=reason,
            untried_tasks=tasks))
    return suggestions


def suggest_from_battles(
    battles: pd.DataFrame,
    n: int,
    *,
    models: Iterable[str] | None = None,
    ties: bt.TiePolicy = "half",
    alpha: float = 0.0,
    uncertainty: Uncertainty = "laplace",
    n_resamples: int = 200,
    seed: int = 0,
    available_tasks: Iterable[str] | None = None,
) -> list[Suggestion]:
    """Aggregate, fit and suggest in one call (what ``prefjudge rank --suggest`` does).

    Args:
        battles: ``model_a, model_b, winner`` [, ``weight``, ``task_id``] per battle.
        n: How many pairs.
        models: Models to rank even without battles (they are connected first).
        ties: Tie policy of the fit.
        alpha: Regularisation asked for (see :func:`point_fit`).
        uncertainty: ``laplace`` or ``bootstrap`` (see :class:`RatingBelief`).
        n_resamples: Bootstrap resamples (``bootstrap`` only).
        seed: Bootstrap seed.
        available_tasks: Task ids a judgment may use (default: those in ``battles``).

    Returns:
        Suggestions, best first (fewer than ``n`` when there are fewer pairs).

    Raises:
        bt.TooFewModelsError: With fewer than two models.
    """
    counts = counts_from_battles(battles, models)
    if counts.n_models < 2:
        raise bt.TooFewModelsError(
            f"suggesting pairs needs at least two models; there are {counts.n_models}")
    belief = belief_from_counts(counts, ties=ties, alpha=alpha, uncertainty=uncertainty,
                                n_resamples=n_resamples, seed=seed)
    judged = battles if "task_id" in battles.columns else None
    return suggest_pairs(counts, belief, n, ties=ties, judged_tasks=judged,
                         available_tasks=available_tasks)


# --------------------------------------------------------------------------- rounds


def _pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def plan_round(
    counts: bt.PairCounts,
    belief: RatingBelief,
    budget: int,
    *,
    ties: bt.TiePolicy = "half",
    capacity: Mapping[tuple[str, str], int] | None = None,
) -> dict[tuple[str, str], int]:
    """Choose the next round's judgments: model pairs, with multiplicity.

    Connecting pairs come first (one judgment each), then the greedy choice of the
    module docstring, one judgment at a time.

    Args:
        counts: Aggregated battles over the belief's models.
        belief: Fitted log-strengths and covariance.
        budget: Judgments to spend (0 or more).
        ties: Tie policy (for the comparison graph).
        capacity: Most judgments each pair may still get, keyed by the two model names in
            either order; a pair missing from it gets none. None: no limit.

    Returns:
        ``(model, model)`` (names sorted) → judgments, summing to ``budget`` unless the
        capacity runs out first; pairs with no judgment are left out.

    Raises:
        ValueError: On a negative budget, or counts and belief that differ in models.
    """
    if budget < 0:
        raise ValueError("the budget cannot be negative")
    greedy = _Greedy(counts, belief)
    names = counts.models
    if capacity is None:
        room = np.full(len(greedy.first), budget, dtype=np.int64)
    else:
        limits = {_pair_key(*key): int(value) for key, value in capacity.items()}
        room = np.array([max(limits.get((names[i], names[j]), 0), 0)
                         for i, j in zip(greedy.first, greedy.second, strict=True)],
                        dtype=np.int64)
    taken: dict[tuple[str, str], int] = {}
    for pick in _greedy_picks(greedy, counts, budget, room, ties):
        key = (names[int(greedy.first[pick.index])], names[int(greedy.second[pick.index])])
        taken[key] = taken.get(key, 0) + 1
    return dict(sorted(taken.items()))


__all__ = [
    "PRIOR_SD",
    "UNCERTAINTIES",
    "PairScores",
    "RatingBelief",
    "Suggestion",
    "Uncertainty",
    "belief_from_counts",
    "bootstrap_belief",
    "connecting_pairs",
    "counts_from_battles",
    "empty_counts",
    "laplace_belief",
    "plan_round",
    "point_fit",
    "score_pairs",
    "suggest_from_battles",
    "suggest_pairs",
    "untried_tasks",
    "with_models",
]
