"""The ``correlate`` use case: a score table and an Elo table in, the α sweeps and files out.

Called by ``prefjudge correlate`` and ``prefjudge run`` alike; nothing here prints (the
reporter gets the messages) and the command line turns the outcome into tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from prefjudge.io import InputError
from prefjudge.plots.ranking import correlation_plot
from prefjudge.ranking import correlate as corr
from prefjudge.ranking.model_tables import read_aliases, read_model_table
from prefjudge.ranking.outputs import SettingsError, _check_outputs, _deliver, _plot, _written
from prefjudge.ranking.reports import (
    ScoreColumnsError,
    Sweep,
    complete_rows,
    correlate_joined,
    correlate_payload,
    curves_frame,
    dumps,
    read_scores,
)
from prefjudge.ranking.scored import is_scored_records
from prefjudge.reporting import Reporter, StageError
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED


@dataclass(frozen=True)
class CorrelateSettings:
    """What ``prefjudge correlate`` does (its options; defaults are the command's).

    Attributes:
        scores: A per-model score table (CSV/JSON) or ``prefjudge score`` records (JSONL).
        elo: The Elo table (CSV/JSON), or None when ``scores`` holds the ratings too.
        model_col: Model-name column (in both files).
        elo_model_col: Model-name column of the Elo file (None: ``model_col``).
        func_col: Functional score column.
        if_cols: Instruction-following columns, one sweep each.
        elo_col: Elo rating column.
        aliases: Name map from ``scores`` to the Elo file (JSON object, or CSV with
            ``score_model, elo_model``), used after exact matching.
        step: α grid step.
        n_resamples: Bootstrap resamples over models (0: no intervals).
        seed: Bootstrap seed.
        require_all: Fail when a score model has no Elo rating or lacks a score.
        output: Curves CSV (:data:`STDOUT`: returned in ``CorrelateOutcome.stdout``).
        json_path: Best α, curves, models and unmatched names as JSON.
        plot_path: Correlation against α (PNG).
        source_name: How ``scores`` is named in messages (None: its path; the command
            line passes ``-`` for stdin).
    """

    scores: Path
    elo: Path | None = None
    model_col: str = "model"
    elo_model_col: str | None = None
    func_col: str = "func"
    if_cols: tuple[str, ...] = ("if",)
    elo_col: str = "rating"
    aliases: Path | None = None
    step: float = 0.1
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    require_all: bool = False
    output: Path | None = None
    json_path: Path | None = None
    plot_path: Path | None = None
    source_name: str | None = None


@dataclass(frozen=True)
class CorrelateOutcome:
    """What :func:`correlate_file` made.

    Attributes:
        sweeps: One α sweep per IF column, in the order asked.
        match: How the score models were matched to the Elo models.
        written: Files written, in order.
        stdout: The text of the output that is :data:`STDOUT`, or None.
    """

    sweeps: tuple[Sweep, ...]
    match: corr.ModelMatch
    written: tuple[Path, ...]
    stdout: str | None


def _report_unmatched(match: corr.ModelMatch, elo_source: str, settings: CorrelateSettings,
                      reporter: Reporter) -> None:
    """Say which models were not matched; with ``require_all``, fail on a score model."""
    if match.unmatched_scores:
        reporter.warn(f"no Elo rating in {elo_source} for {len(match.unmatched_scores)} "
                      "model(s): " + ", ".join(match.unmatched_scores))
    if match.unmatched_elo and settings.elo is not None:
        reporter.warn(f"{len(match.unmatched_elo)} Elo model(s) have no scores: "
                      + ", ".join(match.unmatched_elo[:40])
                      + (" …" if len(match.unmatched_elo) > 40 else ""))
    if settings.require_all and match.unmatched_scores:
        raise StageError(
            "model(s) missing from the Elo file: " + ", ".join(match.unmatched_scores)
            + " (map names with --aliases, or drop --require-all to go on without them)"
        )


def _read_tables(settings: CorrelateSettings, if_list: list[str]
                 ) -> tuple[pd.DataFrame, pd.DataFrame, corr.ModelMatch]:
    """The score table, the Elo table and how their models match.

    Raises:
        SettingsError: On a score column scored records cannot give, or scored records
            without ``elo``.
        StageError: When a file cannot be read or the models cannot be matched.
    """
    elo_path = settings.elo or settings.scores
    try:
        score_table = read_scores(settings.scores, settings.model_col, settings.func_col,
                                  if_list)
        if settings.elo is None and is_scored_records(settings.scores):
            raise SettingsError("scored records carry no Elo rating; pass --elo")
        elo_table = read_model_table(elo_path, settings.elo_model_col or settings.model_col,
                                     [settings.elo_col])
        alias_map = read_aliases(settings.aliases) if settings.aliases else {}
        match = corr.match_models(score_table["model"].tolist(), elo_table["model"].tolist(),
                                  alias_map)
    except ScoreColumnsError as exc:
        raise SettingsError(str(exc)) from None
    except (InputError, corr.CorrelateError) as exc:
        raise StageError(str(exc)) from None
    return score_table, elo_table, match


def _sweeps(settings: CorrelateSettings, if_list: list[str], alphas: np.ndarray,
            score_table: pd.DataFrame, elo_table: pd.DataFrame, match: corr.ModelMatch,
            reporter: Reporter) -> list[Sweep]:
    """One α sweep per IF column, over the matched models that have every score.

    Raises:
        StageError: When models are incomplete under ``require_all``, or a sweep fails.
    """
    elo_of = dict(zip(elo_table["model"], elo_table[settings.elo_col], strict=True))
    by_model = score_table.set_index("model")
    sweeps: list[Sweep] = []
    for if_col in if_list:
        joined = complete_rows(match, by_model, elo_of, settings.func_col, if_col)
        if joined.incomplete:
            reporter.warn(f"{len(joined.incomplete)} matched model(s) lack {settings.func_col}, "
                          f"{if_col} or {settings.elo_col} and are left out of the {if_col} "
                          "sweep: " + ", ".join(joined.incomplete))
            if settings.require_all:
                raise StageError("incomplete scores: " + ", ".join(joined.incomplete))
        try:
            result = correlate_joined(joined, alphas=alphas, n_resamples=settings.n_resamples,
                                      seed=settings.seed)
        except corr.CorrelateError as exc:
            raise StageError(f"{if_col}: {exc}") from None
        sweeps.append(Sweep(if_col, result, joined))

    return sweeps


def _write(settings: CorrelateSettings, sweeps: list[Sweep], match: corr.ModelMatch,
           reporter: Reporter) -> dict[Path, str]:
    """Write the curves, JSON and plot asked for; the texts by path (``-`` among them).

    Raises:
        StageError: When an output cannot be written.
    """
    texts: dict[Path, str] = {}
    if settings.output:
        texts[settings.output] = curves_frame(sweeps).to_csv(index=False)
        _deliver(settings.output, texts[settings.output], reporter, "curves")
    if settings.json_path:
        payload = correlate_payload(sweeps, match, func_col=settings.func_col,
                                    elo_col=settings.elo_col, n_resamples=settings.n_resamples,
                                    seed=settings.seed)
        texts[settings.json_path] = dumps(payload)
        _deliver(settings.json_path, texts[settings.json_path], reporter, "JSON")
    if settings.plot_path:
        plot_path = settings.plot_path
        _plot(lambda: correlation_plot({s.if_col: s.result for s in sweeps}, plot_path),
              plot_path, reporter, "correlation plot")
    return texts


def correlate_file(settings: CorrelateSettings, reporter: Reporter) -> CorrelateOutcome:
    """Which blend of Func and IF best predicts Elo (what ``prefjudge correlate`` does).

    For α on a grid from 0 to 1, composite = α·IF + (1−α)·Func per model; Pearson,
    Spearman and Kendall τ-b with the Elo rating are computed for each α, with a
    bootstrap over models (:func:`prefjudge.ranking.correlate.correlate`).

    Args:
        settings: The files, the columns, the sweep and the outputs.
        reporter: Gets the unmatched and incomplete models and the files written. The
            sweeps are not shown: see
            :func:`prefjudge.ranking.tables.correlation_tables`.

    Returns:
        The sweeps, the model match and the files written.

    Raises:
        SettingsError: On a bad ``step``, a score column scored records cannot give,
            scored records without ``elo``, or two outputs that are ``-``.
        StageError: When a file cannot be read, models are missing under
            ``require_all``, a sweep is impossible, or an output cannot be written.
    """
    _check_outputs({"-o/--output": settings.output, "--json": settings.json_path,
                    "--plot": settings.plot_path})
    try:
        alphas = corr.alpha_grid(settings.step)
    except ValueError as exc:
        raise SettingsError(str(exc), option="--step") from None
    if_list = list(settings.if_cols) or ["if"]
    score_table, elo_table, match = _read_tables(settings, if_list)
    elo_name = (str(settings.elo) if settings.elo is not None
                else settings.source_name or str(settings.scores))
    _report_unmatched(match, elo_name, settings, reporter)

    sweeps = _sweeps(settings, if_list, alphas, score_table, elo_table, match, reporter)
    texts = _write(settings, sweeps, match, reporter)
    return CorrelateOutcome(sweeps=tuple(sweeps), match=match,
                            **_written(texts, settings.plot_path))
