"""Where the preferred model flips between the original prompts and a persona's rewrites.

Each :class:`~prefjudge.records.PersonaComparison` compares two models on one task, per
dimension, under one condition: ``original`` (the benchmark prompt) or ``persona`` (the
persona's rewrite). This module asks, per dimension, whether the model the judge prefers
changes between the two conditions.

Definitions:

* Orientation: every record is normalised to one fixed pair ``(model_x, model_y)``, the
  two distinct model names sorted alphabetically (``model_x`` is the first). A record that
  lists the models the other way round (``model_a == model_y``) has its ``A``/``B``
  outcomes swapped, so ``A`` always means ``model_x`` after normalisation. More than two
  distinct models in the data is an error (:class:`ValueError` naming them).
* Win rate of ``model_x`` over ``model_y`` for one condition and one dimension: over the
  comparisons with status ``ok`` whose verdict for that dimension has an outcome (not
  None), ``(wins_x + 0.5 · ties) / n``. ``n_missing`` counts the ``ok`` comparisons with
  no outcome for the dimension (outcome None, or no verdict for it at all); ``n_error``
  counts the errored comparisons of the condition, which are never counted as trials.
* The ``overall`` row pools every dimension of the table: each dimension verdict with an
  outcome is one trial (so a comparison contributes one trial per dimension).
* Confidence intervals: seeded (``numpy.random.default_rng(seed)``, :mod:`prefjudge.stats`)
  percentile bootstrap 95 % intervals that resample *tasks* with replacement within each
  condition; all the trials of a task in that condition (several comparisons, or several
  dimensions in the ``overall`` row) move together, and the resampled win rate is the
  pooled ratio of the resampled trials.
* Preferred model per condition: ``model_x`` if its win rate is above 0.5, ``model_y`` if
  below, ``"tie"`` if exactly 0.5 (decided exactly on the integer counts, comparing
  ``2·wins_x + ties`` with ``n``), None when the condition has no trials.
* Flip: both conditions prefer a model (neither is ``"tie"`` nor None) and the preferred
  models differ. Significant flip: a flip whose two intervals lie on opposite sides of 0.5
  (original interval entirely above 0.5 and persona interval entirely below, or the
  reverse).
* Paired difference ``diff`` = persona − original win rate, computed over the tasks that
  have trials in both conditions only (``paired_n`` of them; tasks present in one
  condition are left out), with a paired bootstrap interval that resamples those shared
  tasks with the same indices in both conditions. ``shift`` says whether that interval
  excludes 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.records import PersonaComparison
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval, resample_indices

LEVEL = 0.95
OVERALL = "overall"
CONDITIONS = ("original", "persona")
PREFIX = {"original": "orig", "persona": "persona"}

_SWAP = {"A": "B", "B": "A", "tie": "tie"}
_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}

FLIP_COLUMNS = [
    "dimension",
    "model_x",
    "model_y",
    "orig_n",
    "orig_win_rate",
    "orig_lo",
    "orig_hi",
    "orig_preferred",
    "persona_n",
    "persona_win_rate",
    "persona_lo",
    "persona_hi",
    "persona_preferred",
    "paired_n",
    "diff",
    "diff_lo",
    "diff_hi",
    "flip",
    "significant_flip",
    "shift",
    "orig_wins_x",
    "orig_wins_y",
    "orig_ties",
    "orig_n_missing",
    "orig_n_error",
    "persona_wins_x",
    "persona_wins_y",
    "persona_ties",
    "persona_n_missing",
    "persona_n_error",
]


def _models(comparisons: Sequence[PersonaComparison]) -> tuple[str | None, str | None]:
    """The fixed ``(model_x, model_y)`` pair of the data, alphabetically sorted.

    Raises:
        ValueError: When the comparisons name more than two distinct models.
    """
    names = sorted({name for c in comparisons for name in (c.model_a, c.model_b)})
    if len(names) > 2:
        raise ValueError(
            f"persona flips compare exactly two models; the data name {len(names)}: "
            + ", ".join(names)
        )
    if not names:
        return None, None
    if len(names) == 1:
        return names[0], names[0]
    return names[0], names[1]


def _dimension_order(
    comparisons: Sequence[PersonaComparison], dimensions: Sequence[str] | None
) -> list[str]:
    """Dimensions in the order given, else in the order of first appearance."""
    if dimensions is not None:
        return list(dict.fromkeys(dimensions))
    seen: dict[str, None] = {}
    for comparison in comparisons:
        for verdict in comparison.dimensions:
            seen.setdefault(verdict.dimension, None)
    return list(seen)


class _Cell:
    """Trials of one condition for one dimension (or the pooled ``overall``)."""

    def __init__(self) -> None:
        self.wins_x = 0
        self.wins_y = 0
        self.ties = 0
        self.n_missing = 0
        self.n_error = 0
        # task id -> [sum of model_x scores, trials]
        self.tasks: dict[str, list[float]] = {}

    def add(self, task_id: str, outcome: str) -> None:
        """Count one normalised outcome (``A`` = model_x) of a task."""
        if outcome == "A":
            self.wins_x += 1
        elif outcome == "B":
            self.wins_y += 1
        else:
            self.ties += 1
        entry = self.tasks.setdefault(task_id, [0.0, 0.0])
        entry[0] += _SCORE[outcome]
        entry[1] += 1.0

    @property
    def n(self) -> int:
        """Trials counted."""
        return self.wins_x + self.wins_y + self.ties

    @property
    def win_rate(self) -> float:
        """``(wins_x + ties / 2) / n``; NaN without trials."""
        return (self.wins_x + 0.5 * self.ties) / self.n if self.n else float("nan")

    def preferred(self, model_x: str | None, model_y: str | None) -> str | None:
        """The preferred model, ``"tie"``, or None without trials (decided exactly)."""
        if not self.n:
            return None
        doubled = 2 * self.wins_x + self.ties
        if doubled > self.n:
            return model_x
        if doubled < self.n:
            return model_y
        return "tie"


def _arrays(cell: _Cell, task_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-task score sums and trial counts of ``cell`` for ``task_ids``."""
    sums = np.array([cell.tasks[t][0] for t in task_ids], dtype=float)
    counts = np.array([cell.tasks[t][1] for t in task_ids], dtype=float)
    return sums, counts


def _rate_ci(cell: _Cell, *, n_resamples: int, seed: int) -> tuple[float, float]:
    """Task-level bootstrap interval of the pooled win rate of one cell."""
    task_ids = sorted(cell.tasks)
    if not task_ids or n_resamples <= 0:
        return float("nan"), float("nan")
    sums, counts = _arrays(cell, task_ids)
    idx = resample_indices(len(task_ids), n_resamples, seed)
    # every task has at least one trial, so each resampled rate is finite
    return percentile_interval(sums[idx].sum(axis=1) / counts[idx].sum(axis=1), LEVEL)


def _paired_diff(
    original: _Cell, persona: _Cell, *, n_resamples: int, seed: int
) -> tuple[int, float, float, float]:
    """Persona − original win rate over shared tasks: ``(paired_n, diff, lo, hi)``."""
    shared = sorted(set(original.tasks) & set(persona.tasks))
    if not shared:
        return 0, float("nan"), float("nan"), float("nan")
    o_sums, o_counts = _arrays(original, shared)
    p_sums, p_counts = _arrays(persona, shared)
    diff = float(p_sums.sum() / p_counts.sum() - o_sums.sum() / o_counts.sum())
    if n_resamples <= 0:
        return len(shared), diff, float("nan"), float("nan")
    idx = resample_indices(len(shared), n_resamples, seed)  # paired: same tasks in both conditions
    stats = p_sums[idx].sum(axis=1) / p_counts[idx].sum(axis=1) - o_sums[idx].sum(
        axis=1
    ) / o_counts[idx].sum(axis=1)
    low, high = percentile_interval(stats, LEVEL)
    return len(shared), diff, low, high


def _row(
    dimension: str,
    cells: dict[str, _Cell],
    model_x: str | None,
    model_y: str | None,
    *,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """One table row from the two conditions' cells."""
    row: dict[str, Any] = {"dimension": dimension, "model_x": model_x, "model_y": model_y}
    preferred: dict[str, str | None] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for condition in CONDITIONS:
        cell, prefix = cells[condition], PREFIX[condition]
        low, high = _rate_ci(cell, n_resamples=n_resamples, seed=seed)
        preferred[condition] = cell.preferred(model_x, model_y)
        bounds[condition] = (low, high)
        row.update(
            {
                f"{prefix}_n": cell.n,
                f"{prefix}_win_rate": cell.win_rate,
                f"{prefix}_lo": low,
                f"{prefix}_hi": high,
                f"{prefix}_preferred": preferred[condition],
                f"{prefix}_wins_x": cell.wins_x,
                f"{prefix}_wins_y": cell.wins_y,
                f"{prefix}_ties": cell.ties,
                f"{prefix}_n_missing": cell.n_missing,
                f"{prefix}_n_error": cell.n_error,
            }
        )
    paired_n, diff, diff_lo, diff_hi = _paired_diff(
        cells["original"], cells["persona"], n_resamples=n_resamples, seed=seed
    )
    decided = {model_x, model_y} - {None}
    flip = (
        preferred["original"] in decided
        and preferred["persona"] in decided
        and preferred["original"] != preferred["persona"]
        and model_x != model_y
    )
    (o_lo, o_hi), (p_lo, p_hi) = bounds["original"], bounds["persona"]
    opposite = (o_lo > 0.5 and p_hi < 0.5) or (o_hi < 0.5 and p_lo > 0.5)
    row.update(
        {
            "paired_n": paired_n,
            "diff": diff,
            "diff_lo": diff_lo,
            "diff_hi": diff_hi,
            "flip": bool(flip),
            "significant_flip": bool(flip and opposite),
            "shift": bool(diff_lo > 0.0 or diff_hi < 0.0),
        }
    )
    return row


def flip_table(
    comparisons: Sequence[PersonaComparison],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    dimensions: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per dimension, model_x's win rate under both conditions and whether it flips.

    Args:
        comparisons: Persona comparisons of the two conditions (any order, any mix).
        n_resamples: Bootstrap resamples per interval.
        seed: RNG seed; every interval uses a fresh ``default_rng(seed)``.
        dimensions: Dimensions to report, in this order (default: every dimension, in
            order of first appearance). The ``overall`` row pools these dimensions only.

    Returns:
        One row per dimension, then a last row with ``dimension == "overall"``; columns
        :data:`FLIP_COLUMNS` (see the module docstring for the definitions). Rates and
        bounds are NaN and ``*_preferred`` None for a condition without trials.
        ``frame.attrs`` holds ``models`` (``[model_x, model_y]``) and ``personas``
        (sorted distinct persona names of the records).

    Raises:
        ValueError: When the comparisons name more than two distinct models.
    """
    model_x, model_y = _models(comparisons)
    order = _dimension_order(comparisons, dimensions)
    wanted = set(order)
    names = [*order, OVERALL]
    cells = {name: {c: _Cell() for c in CONDITIONS} for name in names}
    for comparison in comparisons:
        condition = comparison.condition
        if comparison.status != "ok":
            for name in names:
                cells[name][condition].n_error += 1
            continue
        flipped = comparison.model_a != model_x
        outcomes: dict[str, str | None] = {}
        for verdict in comparison.dimensions:
            if verdict.dimension not in wanted:
                continue
            outcome = verdict.outcome
            if outcome is not None and flipped:
                outcome = _SWAP[outcome]
            # a repeated dimension keeps its first verdict with an outcome
            if outcomes.get(verdict.dimension) is None:
                outcomes[verdict.dimension] = outcome
        for dimension in order:
            outcome = outcomes.get(dimension)
            for name in (dimension, OVERALL):
                if outcome is None:
                    cells[name][condition].n_missing += 1
                else:
                    cells[name][condition].add(comparison.task_id, outcome)
    rows = [_row(name, cells[name], model_x, model_y, n_resamples=n_resamples, seed=seed)
            for name in names]
    frame = pd.DataFrame(rows, columns=FLIP_COLUMNS)
    frame.attrs["models"] = [m for m in dict.fromkeys((model_x, model_y)) if m is not None]
    frame.attrs["personas"] = sorted({c.persona for c in comparisons if c.persona is not None})
    return frame


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy types to Python, NaN to None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def flips_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """A JSON-ready summary of :func:`flip_table` (no NaN anywhere).

    Args:
        frame: Output of :func:`flip_table`.

    Returns:
        ``{"models", "model_x", "model_y", "personas", "rows", "flipped",
        "significant_flips", "shifted", "overall"}``: ``rows`` holds every row as a dict
        (NaN as None); ``flipped``, ``significant_flips`` and ``shifted`` list the
        per-dimension names (the ``overall`` row excluded) with ``flip``,
        ``significant_flip`` and ``shift`` set; ``overall`` is the overall row or None.
    """
    rows = [
        {str(key): _plain(value) for key, value in record.items()}
        for record in frame.to_dict(orient="records")
    ]
    per_dimension = [row for row in rows if row["dimension"] != OVERALL]
    overall = next((row for row in rows if row["dimension"] == OVERALL), None)
    first = rows[0] if rows else {}
    models = frame.attrs.get("models")
    if models is None:
        models = [m for m in (first.get("model_x"), first.get("model_y")) if m is not None]
    return {
        "models": list(models),
        "model_x": first.get("model_x"),
        "model_y": first.get("model_y"),
        "personas": list(frame.attrs.get("personas", [])),
        "rows": rows,
        "flipped": [row["dimension"] for row in per_dimension if row["flip"]],
        "significant_flips": [row["dimension"] for row in per_dimension if row["significant_flip"]],
        "shifted": [row["dimension"] for row in per_dimension if row["shift"]],
        "overall": overall,
    }
