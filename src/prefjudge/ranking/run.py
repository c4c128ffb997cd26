"""The ``rank`` and ``correlate`` use cases: a battles file or a score table in, rating files out.

``prefjudge rank`` and ``prefjudge correlate`` parse their options into
:class:`RankSettings` / :class:`CorrelateSettings` and call :func:`rank_file` /
:func:`correlate_file`; ``prefjudge run`` calls the same functions. Neither prints: what
they say while working (name-form warnings, skipped rows, uncounted verdicts, groups not
ranked, fit diagnostics, files written) goes to a :class:`~prefjudge.reporting.Reporter`,
the bootstrap as its progress bar. The result tables are the caller's to show: the
outcome holds the fitted leaderboards (or α sweeps), and :func:`rank_tables` /
:func:`prefjudge.ranking.tables.correlation_tables` give them as plain
:class:`~prefjudge.reporting.TextTable` cells (the command lines draw the same cells as
rich tables).

An output path of :data:`STDOUT` (``-``) is not written: its text comes back in the
outcome's ``stdout`` for the caller to write (at most one output may be ``-``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from prefjudge.io import InputError, InputIssue
from prefjudge.journal import JournalError, check_writable
from prefjudge.plots.ranking import correlation_plot, forest_plot
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking import correlate as corr
from prefjudge.ranking import style as sc
from prefjudge.ranking.inputs import (
    BattleColumns,
    BattleFile,
    ModelNameWarning,
    is_scored_records,
    no_evidence_note,
    read_aliases,
    read_battle_file,
    read_battle_tasks,
    read_model_table,
    read_task_ids,
)
from prefjudge.ranking.reports import (
    RankResult,
    ScoreColumnsError,
    Sweep,
    complete_rows,
    correlate_joined,
    correlate_payload,
    curves_frame,
    dumps,
    fit_leaderboards,
    fit_style_leaderboards,
    rank_payload,
    read_scores,
    resample_total,
)
from prefjudge.ranking.suggest import Suggestion, Uncertainty, suggest_from_battles, untried_tasks
from prefjudge.ranking.tables import (
    Scale,
    leaderboard_table,
    leaderboard_title,
    scale_name,
    style_table,
    suggestions_table,
)
from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

STDOUT = Path("-")
"""An output path meaning "give the text back" (the command line writes it to stdout)."""

Control = Literal["length", "markdown", "style"]
"""What ``--control`` takes out: a key of :data:`prefjudge.ranking.style.CONTROLS`."""

class SettingsError(StageError):
    """Settings that do not go together, found before any work (a usage error).

    Args:
        message: What is wrong, naming the options as the command line spells them.
        option: The one option at fault (``--alpha``), or None when several are.
    """

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether an output path is :data:`STDOUT` (``-``)."""
    return path is not None and os.fspath(path) == os.fspath(STDOUT)


def _check_outputs(outputs: Mapping[str, Path | None]) -> None:
    """At most one output is ``-``; the others can be written (their folders are made).

    Raises:
        SettingsError: When two outputs are ``-``.
        StageError: When a file could not be written.
    """
    dashes = [name for name, path in outputs.items() if is_stdout(path)]
    if len(dashes) > 1:
        raise SettingsError(f"only one output can go to stdout ('-'): {' and '.join(dashes)}")
    for path in outputs.values():
        if path is not None and not is_stdout(path):
            try:
                check_writable(path)
            except JournalError as exc:
                raise StageError(str(exc)) from None


def _deliver(path: Path, text: str, reporter: Reporter, what: str) -> None:
    """Write ``text`` to ``path`` and say so (nothing for :data:`STDOUT`: it is given back).

    Raises:
        StageError: When the file cannot be written.
    """
    if is_stdout(path):
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise StageError(f"cannot write {path}: {exc.strerror or exc}") from None
    reporter.note(f"{what} → {path}")


def _written(texts: Mapping[Path, str], plot: Path | None) -> dict[str, Any]:
    """An outcome's ``written`` (the files, plot last) and ``stdout`` (the text for ``-``)."""
    files = [path for path in texts if not is_stdout(path)] + ([plot] if plot else [])
    stdout = next((text for path, text in texts.items() if is_stdout(path)), None)
    return {"written": tuple(files), "stdout": stdout}


def _plot(draw: Any, path: Path, reporter: Reporter, what: str) -> None:
    """Draw a PNG plot to ``path`` and say so.

    Raises:
        StageError: When the file cannot be written.
    """
    try:
        draw()
    except OSError as exc:
        raise StageError(f"cannot write {path}: {exc.strerror or exc}") from None
    reporter.note(f"{what} → {path}")


# --------------------------------------------------------------------------- rank


@dataclass(frozen=True)
class RankSettings:
    """What ``prefjudge rank`` does (its options; defaults are the command's).

    Attributes:
        battles: The battles file (CSV/JSON/JSONL; verdicts of ``prefjudge judge``).
        output: Ratings CSV (:data:`STDOUT`: returned in ``RankOutcome.stdout``).
        json_path: Ratings and fit settings as JSON (``rank --json``).
        plot_path: Forest plot (PNG).
        ties: Tie policy of the fit.
        alpha: Regularisation (0: maximum likelihood).
        allow_disconnected: Fit a disconnected comparison graph jointly.
        anchor: ``(model, rating)`` pinned on the Elo scale, or None to centre on ``base``.
        base: Mean Elo rating without an anchor.
        scale: ``elo`` or ``bt``.
        n_resamples: Bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        by: One leaderboard per value of this column, or None.
        winner_map: Extra winner labels → ``model_a``, ``model_b`` or ``tie``.
        model_a_col: Column naming the first model.
        model_b_col: Column naming the second model.
        winner_col: Column naming the winner.
        weight_col: Column of the optional battle weight.
        skip_invalid: Rank the valid rows and list the invalid ones instead of stopping.
        control: Style control, or None for the plain Bradley–Terry fit.
        control_penalty: Objective of the style-controlled fit.
        suggest: Also list this many model pairs worth judging next, or None.
        tasks: With ``suggest``: files whose ``task_id`` values a judgment may use (their
            union; ``--tasks``, repeatable).
    """

    battles: Path
    output: Path | None = None
    json_path: Path | None = None
    plot_path: Path | None = None
    ties: bt.TiePolicy = "half"
    alpha: float = 0.0
    allow_disconnected: bool = False
    anchor: tuple[str, float] | None = None
    base: float = bt.DEFAULT_BASE
    scale: Scale = "elo"
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    by: str | None = None
    winner_map: Mapping[str, str] = field(default_factory=dict)
    model_a_col: str = "model_a"
    model_b_col: str = "model_b"
    winner_col: str = "winner"
    weight_col: str = "weight"
    skip_invalid: bool = False
    control: Control | None = None
    control_penalty: sc.Penalty = sc.DEFAULT_PENALTY
    suggest: int | None = None
    tasks: tuple[Path, ...] = ()

    @property
    def columns(self) -> BattleColumns:
        """Where the battle fields are in the file (``by`` is read as the category)."""
        return BattleColumns(self.model_a_col, self.model_b_col, self.winner_col,
                             self.weight_col, self.by or "category")


@dataclass(frozen=True)
class RankOutcome:
    """What :func:`rank_file` made.

    Attributes:
        result: The fitted leaderboards (one per group with ``by``).
        skipped: Rows left out (invalid rows, battles without the control's features).
        no_evidence: Verdicts decided by no evidence, not counted as battles.
        suggestions: The pairs worth judging next, best first (None without ``suggest``).
        written: Files written, in order.
        stdout: The text of the output that is :data:`STDOUT`, or None.
    """

    result: RankResult
    skipped: tuple[InputIssue, ...]
    no_evidence: int
    suggestions: tuple[Suggestion, ...] | None
    written: tuple[Path, ...]
    stdout: str | None


def check_rank_settings(settings: RankSettings) -> None:
    """Fail on settings that do not go together (before anything is read).

    Args:
        settings: The settings.

    Raises:
        SettingsError: Naming the options at fault.
    """
    if settings.tasks and not settings.suggest:
        raise SettingsError("--tasks goes with --suggest")
    if settings.suggest is not None and settings.suggest < 1:
        raise SettingsError("must be >= 1", option="--suggest")
    if settings.anchor and settings.scale == "bt":
        raise SettingsError("--anchor applies to the Elo scale, not to --scale bt")
    if settings.alpha < 0:
        raise SettingsError("must be >= 0", option="--alpha")
    if settings.control:
        if settings.ties not in sc.STYLE_TIES:
            raise SettingsError(f"--control handles ties as {' or '.join(sc.STYLE_TIES)}, "
                                f"not {settings.ties}")
        if settings.alpha != 0:
            raise SettingsError("--alpha is the plain fit's regulariser; with --control, the "
                                "penalty is --control-penalty (l2 or none)")
        if settings.allow_disconnected and settings.control_penalty != "l2":
            raise SettingsError("--allow-disconnected with --control needs "
                                "--control-penalty l2")
    elif settings.allow_disconnected and settings.alpha <= 0:
        raise SettingsError("--allow-disconnected needs --alpha > 0 (e.g. --alpha 0.01)")


def _read_battles(settings: RankSettings, reporter: Reporter) -> BattleFile:
    """Read the battles; name-form warnings, skipped rows and uncounted verdicts are reported."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ModelNameWarning)
            read = read_battle_file(settings.battles, columns=settings.columns,
                                    winner_map=settings.winner_map,
                                    skip_invalid=settings.skip_invalid)
    except InputError as exc:
        raise StageError(str(exc)) from None
    for warning in caught:
        if issubclass(warning.category, ModelNameWarning):
            reporter.warn(f"warning: {warning.message}")
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
    for issue in read.issues:
        reporter.warn(f"skipped: {issue}")
    if read.no_evidence:
        reporter.warn(f"note: {no_evidence_note(read.no_evidence)}")
    return read


def _fit(frame: pd.DataFrame, settings: RankSettings, reporter: Reporter) -> RankResult:
    """Fit with a progress bar; errors name the input, failed groups are reported."""
    by = settings.by
    options: dict[str, Any] = {
        "ties": settings.ties, "allow_disconnected": settings.allow_disconnected,
        "scale": settings.scale, "anchor": settings.anchor, "base": settings.base,
        "n_resamples": settings.n_resamples, "seed": settings.seed,
    }
    if settings.control:
        fitter = fit_style_leaderboards
        options.update(control=settings.control, penalty=settings.control_penalty)
    else:
        fitter = fit_leaderboards
        options["alpha"] = settings.alpha
    total = resample_total(frame, by, settings.n_resamples)
    try:
        with reporter.progress("bootstrap", total) as advance:
            result = fitter(frame, by, progress=advance, **options)
    except (bt.RankError, ValueError) as exc:
        raise StageError(f"{settings.battles}: {exc}") from None
    for label, reason in result.failed.items():
        reporter.warn(f"{by} {label!r} not ranked: {reason}")
    if not result.boards:
        raise StageError("no leaderboard could be made (see the reasons above)")
    return result


def _with_features(frame: pd.DataFrame, settings: RankSettings,
                   reporter: Reporter) -> tuple[pd.DataFrame, list[InputIssue]]:
    """The ``control`` path: battles without features stop the run (or are skipped).

    Returns:
        The battles that have the features, and the issues of those that do not.
    """
    control = settings.control
    assert control is not None
    issues = sc.feature_issues(frame, control, str(settings.battles))
    if issues and not settings.skip_invalid:
        raise StageError(f"{InputError(issues)}\n(rank only the battles that have features "
                         "with --skip-invalid)")
    for issue in issues:
        reporter.warn(f"skipped: {issue}")
    frame = frame[~sc.missing_features(frame, control)]
    if frame.empty:
        raise StageError(f"{settings.battles}: no battle has the features of --control "
                         f"{control}")
    return frame, issues


def board_notes(board: bt.Leaderboard) -> list[str]:
    """What to know about a fitted leaderboard besides its table (tie strength, weak fits).

    Args:
        board: A leaderboard (plain or style-controlled).

    Returns:
        Plain-text notes, possibly none.
    """
    notes = []
    if board.tie_strength is not None:
        notes.append(f"Davidson tie strength ν = {board.tie_strength:.3f}")
    if board.degenerate_resamples:
        fallback = ("the l2 penalty" if isinstance(board, sc.StyleLeaderboard)
                    else f"alpha = {bt.FALLBACK_ALPHA}")
        notes.append(
            f"{board.degenerate_resamples} of {board.settings['bootstrap']} bootstrap resamples "
            f"had a model that never won or never lost; they were fitted with {fallback} "
            "(few battles: treat the intervals as rough)"
        )
    if len(board.components) > 1:
        notes.append(
            f"the comparison graph has {len(board.components)} components, joined only by the "
            "regulariser: " + "; ".join(", ".join(c) for c in board.components)
        )
    if isinstance(board, sc.StyleLeaderboard):
        if board.incomplete_resamples:
            notes.append(f"{board.incomplete_resamples} bootstrap resamples left out a model "
                         "entirely; they are not in the intervals")
        if len(board.tokenizers) > 1:
            notes.append("token_len was counted by several tokenizers: "
                         + ", ".join(board.tokenizers))
    return notes


def suggest_for_rank(
    frame: pd.DataFrame,
    battles_path: Path,
    n: int,
    *,
    columns: BattleColumns | None = None,
    ties: bt.TiePolicy = "half",
    alpha: float = 0.0,
    tasks: Sequence[Path] = (),
    uncertainty: Uncertainty = "laplace",
    n_resamples: int = 200,
    seed: int = 0,
) -> list[Suggestion]:
    """What ``prefjudge rank --suggest N`` lists for the battles it read.

    The uncertainty is the Laplace approximation by default (see
    :mod:`prefjudge.ranking.suggest`): cheap, and it covers pairs never compared. When
    the battles carry ``task_id``, each pair comes with the tasks it was not judged on.

    Args:
        frame: The battles as ``rank`` read them (``model_a, model_b, winner, weight``).
        battles_path: Their file (read again for ``task_id``, which the frame drops).
        n: How many pairs.
        columns: The battle file's column names.
        ties: Tie policy of the fit.
        alpha: Regularisation asked for.
        tasks: Files whose ``task_id`` values are the tasks a judgment may use, their
            union in order of first appearance (default: every task id in the battles).
        uncertainty: ``laplace`` or ``bootstrap``.
        n_resamples: Bootstrap resamples (``bootstrap`` only).
        seed: Bootstrap seed.

    Returns:
        The suggestions, best first.

    Raises:
        StageError: When the files cannot be read or the battles name fewer than two
            models.
    """
    try:
        judged = read_battle_tasks(battles_path, columns)
        available = (
            list(dict.fromkeys(t for path in tasks for t in read_task_ids(path)))
            if tasks
            else None
        )
    except InputError as exc:
        raise StageError(str(exc)) from None
    battles = frame[["model_a", "model_b", "winner", "weight"]]
    try:
        suggestions = suggest_from_battles(battles, n, ties=ties, alpha=alpha,
                                           uncertainty=uncertainty, n_resamples=n_resamples,
                                           seed=seed)
    except (bt.RankError, ValueError) as exc:
        raise StageError(f"{battles_path}: {exc}") from None
    if judged.empty and available is None:
        return suggestions
    pairs = [(s.model_a, s.model_b) for s in suggestions]
    tasks = untried_tasks(pairs, judged, available)
    return [replace(s, untried_tasks=t) for s, t in zip(suggestions, tasks, strict=True)]


def suggestion_records(suggestions: Sequence[Suggestion]) -> list[dict[str, Any]]:
    """The suggestions as JSON-ready dicts, best first (what ``rank --json`` holds)."""
    return [s.as_dict() for s in suggestions]


def rank_file(settings: RankSettings, reporter: Reporter) -> RankOutcome:
    """Rank the battles of a file and write the ratings (what ``prefjudge rank`` does).

    Args:
        settings: The battles file, the fit and the outputs.
        reporter: Gets name-form warnings, skipped rows, uncounted verdicts, groups not
            ranked, fit notes (:func:`board_notes`), the files written and the bootstrap's
            progress bar. The leaderboards are not shown: see :func:`rank_tables`.

    Returns:
        The leaderboards, what was left out, the suggestions and the files written.

    Raises:
        SettingsError: On settings that do not go together (:func:`check_rank_settings`)
            or two outputs that are ``-``.
        StageError: When the battles cannot be read or ranked, or an output not written.
    """
    check_rank_settings(settings)
    _check_outputs({"-o/--output": settings.output, "--json": settings.json_path,
                    "--plot": settings.plot_path})
    read = _read_battles(settings, reporter)
    frame, skipped = read.frame, list(read.issues)
    if settings.control:
        frame, no_features = _with_features(frame, settings, reporter)
        skipped += no_features
    result = _fit(frame, settings, reporter)
    for board in result.boards.values():
        for note in board_notes(board):
            reporter.warn(f"note: {note}")
    suggestions = None
    if settings.suggest:
        suggestions = suggest_for_rank(read.frame, settings.battles, settings.suggest,
                                       columns=settings.columns, ties=settings.ties,
                                       alpha=settings.alpha, tasks=settings.tasks)

    texts: dict[Path, str] = {}
    if settings.output:
        texts[settings.output] = result.table().to_csv(index=False)
        _deliver(settings.output, texts[settings.output], reporter, "ratings")
    if settings.json_path:
        payload = rank_payload(result, scale=settings.scale, anchored=settings.anchor is not None,
                               skipped=skipped, no_evidence=read.no_evidence)
        if suggestions is not None:
            payload["suggestions"] = suggestion_records(suggestions)
        texts[settings.json_path] = dumps(payload)
        _deliver(settings.json_path, texts[settings.json_path], reporter, "JSON")
    if settings.plot_path:
        by = settings.by
        boards = {(f"{by} {k}" if by else "Leaderboard"): b.table
                  for k, b in result.boards.items()}
        plot_path = settings.plot_path
        _plot(lambda: forest_plot(boards, plot_path, xlabel=scale_name(settings.scale)
                                  + " (95 % bootstrap interval)"),
              plot_path, reporter, "forest plot")
    return RankOutcome(result=result, skipped=tuple(skipped), no_evidence=read.no_evidence,
                       suggestions=None if suggestions is None else tuple(suggestions),
                       **_written(texts, settings.plot_path))


def rank_tables(settings: RankSettings, outcome: RankOutcome) -> list[TextTable]:
    """The result tables of a :func:`rank_file` run, in the order ``prefjudge rank`` shows them.

    Args:
        settings: The settings it ran with.
        outcome: What it made.

    Returns:
        Per leaderboard its table (and its style coefficients when style-controlled), then
        the suggestions.
    """
    tables = []
    for label, board in outcome.result.boards.items():
        title = leaderboard_title(board, label, scale=settings.scale, by=settings.by,
                                  control=settings.control, ties=settings.ties)
        tables.append(leaderboard_table(board, title, settings.scale))
        if isinstance(board, sc.StyleLeaderboard):
            tables.append(style_table(board))
    if outcome.suggestions is not None:
        tables.append(suggestions_table(outcome.suggestions))
    return tables


# --------------------------------------------------------------------------- correlate


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
    elo_name = (str(settings.elo) if settings.elo is not None
                else settings.source_name or str(settings.scores))
    _report_unmatched(match, elo_name, settings, reporter)

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
    return CorrelateOutcome(sweeps=tuple(sweeps), match=match,
                            **_written(texts, settings.plot_path))


__all__ = [
    "STDOUT",
    "Control",
    "CorrelateOutcome",
    "CorrelateSettings",
    "RankOutcome",
    "RankSettings",
    "SettingsError",
    "board_notes",
    "check_rank_settings",
    "correlate_file",
    "is_stdout",
    "rank_file",
    "rank_tables",
    "suggest_for_rank",
    "suggestion_records",
]
