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

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from prefjudge.io import InputError, InputIssue
from prefjudge.plots.ranking import forest_plot
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking import style as sc
from prefjudge.ranking.correlate_run import CorrelateOutcome, CorrelateSettings, correlate_file
from prefjudge.ranking.inputs import (
    BattleColumns,
    BattleFile,
    ModelNameWarning,
    no_evidence_note,
    read_battle_file,
    read_battle_tasks,
    read_task_ids,
)
from prefjudge.ranking.outputs import (
    STDOUT,
    SettingsError,
    _check_outputs,
    _deliver,
    _plot,
    _written,
    is_stdout,
)
from prefjudge.ranking.reports import (
    RankResult,
    dumps,
    fit_leaderboards,
    fit_style_leaderboards,
    rank_payload,
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

Control = Literal["length", "markdown", "style"]
"""What ``--control`` takes out: a key of :data:`prefjudge.ranking.style.CONTROLS`."""


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
