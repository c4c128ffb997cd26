"""What ``rank`` and ``correlate`` hand back: fitted leaderboards, joined score tables, JSON.

The commands parse options and print; this module fits one leaderboard or one per
group (plain, or style-controlled with :mod:`prefjudge.ranking.style`), joins a score
table to an Elo table model by model, and builds the JSON payloads of both commands
(non-finite numbers become ``null``). Nothing here prints or writes
files; errors are :class:`RankError`, :class:`~prefjudge.ranking.correlate.CorrelateError`
or :class:`~prefjudge.io.InputError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.io import dumps_json, finite_json
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking import correlate as corr
from prefjudge.ranking import style as sc
from prefjudge.ranking.inputs import is_scored_records, read_model_table, read_scored_records
from prefjudge.records import Rating

ELO_FORMULA = "rating = BASE + 400/ln(10) * (theta - mean(theta))"
ANCHOR_FORMULA = "rating = R + 400/ln(10) * (theta - theta_M)"
BT_FORMULA = "strength = exp(theta) / sum(exp(theta))"


class ScoreColumnsError(corr.CorrelateError):
    """Scored records cannot give a score column that was asked for."""


json_safe = finite_json
"""A value with NumPy scalars as Python numbers and NaN/inf as None (the one rule is
:func:`prefjudge.io.finite_json`; the name is kept for the ranking code that used it)."""


def dumps(payload: Mapping[str, Any]) -> str:
    """A JSON payload as indented strict JSON text with a final newline.

    NumPy scalars become Python numbers and NaN/infinities ``null``
    (:func:`prefjudge.io.dumps_json`).

    Args:
        payload: The payload.

    Returns:
        The text.
    """
    return dumps_json(dict(payload), indent=2) + "\n"


# --------------------------------------------------------------------------- rank


@dataclass
class RankResult:
    """Leaderboards of one ``rank`` run.

    Attributes:
        boards: Group label → leaderboard (the one label ``""`` without ``by``).
        failed: Group label → why it could not be ranked (with ``by`` only).
        by: The column the battles were split by, or None.
    """

    boards: dict[str, bt.Leaderboard]
    failed: dict[str, str] = field(default_factory=dict)
    by: str | None = None

    def table(self) -> pd.DataFrame:
        """All ratings in one table (with a leading ``category`` column when split)."""
        if not self.by:
            return next(iter(self.boards.values())).table if self.boards else pd.DataFrame()
        return pd.concat(
            [b.table.assign(category=k)[["category", *b.table.columns]]
             for k, b in self.boards.items()],
            ignore_index=True,
        )


def fit_leaderboards(
    frame: pd.DataFrame,
    by: str | None,
    *,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> RankResult:
    """Fit one leaderboard, or one per value of the ``category`` column when ``by`` is set.

    Args:
        frame: Battles from :func:`~prefjudge.ranking.inputs.read_battles` (the ``by``
            column is read into ``category``).
        by: The user's name of the split column, or None for one leaderboard.
        progress: Called with the number of bootstrap resamples done.
        **options: Passed to :func:`~prefjudge.ranking.bradley_terry.leaderboard`.

    Returns:
        The leaderboards; with ``by``, groups that cannot be ranked are listed in
        ``failed`` (the result may then hold no leaderboard at all).

    Raises:
        RankError: Without ``by``, when the battles cannot be ranked.
        ValueError: When an option is out of range.
    """
    if not by:
        counts = bt.aggregate(frame["model_a"], frame["model_b"], frame["winner"],
                              frame["weight"])
        return RankResult({"": bt.leaderboard(counts, progress=progress, **options)})
    outcome = bt.leaderboards_by_group(frame, "category", progress=progress, **options)
    boards = {k: v for k, v in outcome.items() if isinstance(v, bt.Leaderboard)}
    failed = {k: str(v) for k, v in outcome.items() if not isinstance(v, bt.Leaderboard)}
    return RankResult(boards, failed, by)


def fit_style_leaderboards(
    frame: pd.DataFrame,
    by: str | None,
    control: str,
    *,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> RankResult:
    """Style-controlled :func:`fit_leaderboards` (``rank --control``).

    Args:
        frame: Battles with the features of ``control`` (every row).
        by: The user's name of the split column, or None for one leaderboard.
        control: ``length``, ``markdown`` or ``style``.
        progress: Called with the number of bootstrap resamples done.
        **options: Passed to :func:`~prefjudge.ranking.style.style_leaderboard`.

    Returns:
        The leaderboards (:class:`~prefjudge.ranking.style.StyleLeaderboard`); with
        ``by``, groups that cannot be ranked are listed in ``failed``.

    Raises:
        RankError: Without ``by``, when the battles cannot be ranked.
        ValueError: When an option is out of range.
    """
    if not by:
        return RankResult({"": sc.style_leaderboard(frame, control, progress=progress,
                                                    **options)})
    outcome = sc.style_leaderboards_by_group(frame, "category", control, progress=progress,
                                             **options)
    boards: dict[str, bt.Leaderboard] = {
        k: v for k, v in outcome.items() if isinstance(v, sc.StyleLeaderboard)}
    failed = {k: str(v) for k, v in outcome.items() if not isinstance(v, sc.StyleLeaderboard)}
    return RankResult(boards, failed, by)


def resample_total(frame: pd.DataFrame, by: str | None, n_resamples: int) -> int:
    """How many bootstrap fits :func:`fit_leaderboards` makes (for a progress bar)."""
    groups = frame["category"].fillna("(none)").nunique() if by else 1
    return n_resamples * groups


def style_summary(board: sc.StyleLeaderboard) -> dict[str, Any]:
    """The ``style_control`` entry of ``rank --json``: the style coefficients and their fit.

    Args:
        board: A style-controlled leaderboard.

    Returns:
        Control, penalty, formula, the tokenizers named by the features, resamples left
        out, and one row per feature: ``feature, coef, lower, upper, elo_per_sd, mean,
        std, estimable`` (``coef`` and its interval in log-odds per standard deviation).
    """
    return {
        "control": board.control,
        "penalty": board.penalty,
        "C": sc.L2_C if board.penalty == "l2" else None,
        "formula": sc.STYLE_FORMULA,
        "coef_unit": "log-odds per standard deviation of z",
        "tokenizers": board.tokenizers,
        "incomplete_resamples": board.incomplete_resamples,
        "coefficients": sc.style_records(board),
        "model_coef": dict(zip(board.models, board.coef.tolist(), strict=True)),
    }


def board_summary(board: bt.Leaderboard) -> dict[str, Any]:
    """A leaderboard's fit settings and diagnostics, as in ``rank --json``."""
    summary: dict[str, Any] = {
        **board.settings,
        "n_battles": board.n_battles,
        "n_models": len(board.models),
        "tie_strength": board.tie_strength,
        "degenerate_resamples": board.degenerate_resamples,
        "components": board.components if len(board.components) > 1 else [],
    }
    if isinstance(board, sc.StyleLeaderboard):
        summary["style_control"] = style_summary(board)
    return summary


def rank_formula(scale: str, anchored: bool) -> str:
    """The formula from fitted log-strengths to the reported ratings."""
    if scale == "bt":
        return BT_FORMULA
    return ANCHOR_FORMULA if anchored else ELO_FORMULA


def rank_payload(
    result: RankResult, *, scale: str, anchored: bool, skipped: Sequence[object] = (),
    no_evidence: int = 0,
) -> dict[str, Any]:
    """The ``rank --json`` document.

    Args:
        result: The fitted leaderboards.
        scale: ``elo`` or ``bt``.
        anchored: Whether one model's rating was pinned.
        skipped: Input rows left out (``--skip-invalid``), listed as text.
        no_evidence: Verdicts decided by no evidence, not counted as battles.

    Returns:
        Scale, formula, ratings, skipped rows, ``no_evidence_verdicts`` (only when some
        verdicts were decided by no evidence) and the fit summary (per group with ``by``);
        a style-controlled fit adds ``style_control`` (:func:`style_summary`) to it.
    """
    payload: dict[str, Any] = {
        "scale": scale,
        "formula": rank_formula(scale, anchored),
        "ratings": [Rating(**row).model_dump(mode="json")
                    for row in result.table().to_dict(orient="records")],
        "skipped_rows": [str(issue) for issue in skipped],
    }
    if no_evidence:
        payload["no_evidence_verdicts"] = no_evidence
    if result.by:
        payload.update(by=result.by, failed=result.failed,
                       leaderboards={k: board_summary(b) for k, b in result.boards.items()})
    else:
        payload.update(board_summary(result.boards[""]))
    return payload


# --------------------------------------------------------------------------- correlate


def read_scores(
    scores: str | os.PathLike[str], model_col: str, func_col: str, if_cols: Sequence[str]
) -> pd.DataFrame:
    """Read a per-model score table, or aggregate ``prefjudge score`` records per model.

    Args:
        scores: A per-model table (CSV/JSON) or scored records (JSONL).
        model_col: Model-name column of a table.
        func_col: Functional score column.
        if_cols: Instruction-following columns.

    Returns:
        Columns ``model``, ``func_col`` and the ``if_cols`` (and more for records).

    Raises:
        ScoreColumnsError: When scored records cannot give a column asked for.
        InputError: When the file cannot be read.
    """
    if is_scored_records(scores):
        table = corr.scores_from_records(read_scored_records(scores))
        missing = [c for c in [func_col, *if_cols] if c not in table.columns]
        if missing:
            available = ", ".join(c for c in table.columns if c in ("func", "if")
                                  or c.startswith("if_"))
            raise ScoreColumnsError(
                f"scored records give the columns {available}; {', '.join(missing)} is not one"
            )
        return table
    return read_model_table(scores, model_col, [func_col, *if_cols])


@dataclass
class JoinedModels:
    """Matched models with all three numbers for one IF column.

    Attributes:
        rows: ``{"model", "elo_model", "match", "func", "if", "elo"}`` per model.
        incomplete: Matched models lacking the functional score, the IF score or Elo.
    """

    rows: list[dict[str, Any]]
    incomplete: list[str]


def complete_rows(
    match: corr.ModelMatch,
    scores: pd.DataFrame,
    elo_of: Mapping[str, float],
    func_col: str,
    if_col: str,
) -> JoinedModels:
    """Join matched models to their scores and Elo rating; list those lacking one.

    Args:
        match: How score models map to Elo models.
        scores: Score table indexed by model.
        elo_of: Elo model → rating.
        func_col: Functional score column.
        if_col: Instruction-following column.

    Returns:
        The complete rows and the incomplete models.
    """
    rows, incomplete = [], []
    for score_name, elo_name, how in match.pairs:
        values = (scores.at[score_name, func_col], scores.at[score_name, if_col],
                  elo_of[elo_name])
        if any(pd.isna(v) for v in values):
            incomplete.append(score_name)
            continue
        func, if_score, elo = map(float, values)
        rows.append({"model": score_name, "elo_model": elo_name, "match": how, "func": func,
                     "if": if_score, "elo": elo})
    return JoinedModels(rows, incomplete)


def correlate_joined(
    joined: JoinedModels, *, alphas: np.ndarray, n_resamples: int, seed: int
) -> corr.CorrelationResult:
    """Run the α sweep on joined models (see :func:`prefjudge.ranking.correlate.correlate`)."""
    rows = joined.rows
    return corr.correlate(
        [r["model"] for r in rows], [r["func"] for r in rows], [r["if"] for r in rows],
        [r["elo"] for r in rows], alphas=alphas, n_resamples=n_resamples, seed=seed,
    )


def curve_records(result: corr.CorrelationResult) -> list[dict[str, Any]]:
    """The α curve as JSON rows: ``alpha``, each correlation and its ``<type>_ci``."""
    rows = []
    for row in result.curve.to_dict(orient="records"):
        item: dict[str, Any] = {"alpha": row["alpha"]}
        for kind in corr.CORRELATIONS:
            item[kind] = row[kind]
            item[f"{kind}_ci"] = [row[f"{kind}_lower"], row[f"{kind}_upper"]]
        rows.append(item)
    return rows


@dataclass
class Sweep:
    """The α sweep of one IF column with the models it used."""

    if_col: str
    result: corr.CorrelationResult
    joined: JoinedModels

    def as_dict(self) -> dict[str, Any]:
        """The ``per_if`` entry of ``correlate --json``."""
        return {
            "if_col": self.if_col,
            "best": self.result.best,
            "curve": curve_records(self.result),
            "models": self.joined.rows,
            "incomplete": self.joined.incomplete,
            "undefined_resamples": self.result.undefined_resamples,
        }


def curves_frame(sweeps: Sequence[Sweep]) -> pd.DataFrame:
    """Every sweep's curve in one table, ``if_col`` first (``correlate -o``)."""
    frames = [s.result.curve.assign(if_col=s.if_col) for s in sweeps]
    curves = pd.concat(frames, ignore_index=True)
    return curves[["if_col", *[c for c in curves.columns if c != "if_col"]]]


def correlate_payload(
    sweeps: Sequence[Sweep],
    match: corr.ModelMatch,
    *,
    func_col: str,
    elo_col: str,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The ``correlate --json`` document: the first IF column at the top, all in ``per_if``.

    Args:
        sweeps: One sweep per IF column (at least one).
        match: How the models were matched (its unmatched names are listed).
        func_col: Functional score column.
        elo_col: Elo rating column.
        n_resamples: Bootstrap resamples over models.
        seed: Bootstrap seed.

    Returns:
        The document.
    """
    per_if = [s.as_dict() for s in sweeps]
    first = per_if[0]
    return {
        "alpha_is": "weight on IF",
        "composite": "alpha * IF + (1 - alpha) * Func",
        "func_col": func_col,
        "if_col": first["if_col"],
        "elo_col": elo_col,
        "best": first["best"],
        "curve": first["curve"],
        "models": first["models"],
        "unmatched": {"scores": match.unmatched_scores, "elo": match.unmatched_elo},
        "incomplete": first["incomplete"],
        "bootstrap": {"resamples": n_resamples, "seed": seed, "level": 0.95, "unit": "models"},
        "per_if": per_if,
    }
