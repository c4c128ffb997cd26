"""The persona ``flips`` use case: comparisons in, the flip table (CSV, JSON, plot) out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from prefjudge.io import InputError, read_records, write_json
from prefjudge.persona.flips import DEFAULT_RESAMPLES, flip_table, flips_summary
from prefjudge.persona.profile import load_dimensions
from prefjudge.plots.persona import plot_flips
from prefjudge.records import PersonaComparison
from prefjudge.reporting import Reporter, StageError, TextTable
from prefjudge.stats import DEFAULT_SEED


@dataclass(frozen=True)
class FlipsOutcome:
    """Where the preferred model flips between original and persona prompts.

    Attributes:
        table: Per dimension (and ``overall``): both conditions' win rates with their
            intervals, the paired difference and the flips, as shown to a person.
        summary: The JSON summary written to ``json_file``
            (:func:`prefjudge.persona.flips.flips_summary`).
        message: One line naming the flipped dimensions and those outside the intervals.
        csv_file: The whole flip table (every column of
            :data:`prefjudge.persona.flips.FLIP_COLUMNS`).
        json_file: The summary.
        png_file: The chart.
    """

    table: TextTable
    summary: dict[str, Any]
    message: str
    csv_file: Path
    json_file: Path
    png_file: Path


SHOWN_COLUMNS = ["dimension", "original [95% CI]", "persona [95% CI]", "difference", "flip"]
"""The columns of the flip table shown to a person (the CSV holds every column, by name:
``orig_win_rate, orig_lo, orig_hi, persona_win_rate, ..., diff, flip, significant_flip``)."""


def _rate(value: float, lower: float, upper: float) -> str:
    if pd.isna(value):
        return "–"
    if pd.isna(lower) or pd.isna(upper):
        return f"{value:.3f}"
    return f"{value:.3f} [{lower:.3f}, {upper:.3f}]"


def flips_table(frame: pd.DataFrame, title: str) -> TextTable:
    """The flip table as a person reads it: each win rate with its interval in one cell.

    Args:
        frame: Output of :func:`prefjudge.persona.flips.flip_table`.
        title: The table's title.

    Returns:
        The table (:data:`SHOWN_COLUMNS`); a flip is ``yes``, or ``yes, outside the
        intervals`` when significant; ``–`` marks a rate with no trials.
    """
    rows = []
    for row in frame.itertuples(index=False):
        flip = "yes, outside the intervals" if row.significant_flip else "yes" if row.flip else "no"
        diff = "–" if pd.isna(row.diff) else f"{row.diff:+.3f}"
        rows.append(
            [
                str(row.dimension),
                _rate(row.orig_win_rate, row.orig_lo, row.orig_hi),
                _rate(row.persona_win_rate, row.persona_lo, row.persona_hi),
                diff,
                flip,
            ]
        )
    return TextTable(title, SHOWN_COLUMNS, rows, right=frozenset(SHOWN_COLUMNS[1:4]))


def write_flips(
    comparisons: Sequence[PersonaComparison],
    prefix: Path,
    *,
    bootstrap: int = DEFAULT_RESAMPLES,
    ci_seed: int = DEFAULT_SEED,
    title: str,
) -> FlipsOutcome:
    """Compute the flip table and write ``<prefix>.flips.{json,csv,png}``.

    Args:
        comparisons: Persona comparisons of both conditions.
        prefix: Path prefix of the three files.
        bootstrap: Bootstrap resamples of the intervals.
        ci_seed: Seed of the intervals.
        title: Names the persona(s) in the table and chart titles.

    Returns:
        The shown table, the summary and the files written.

    Raises:
        ValueError: When the comparisons name more than two models.
    """
    dims = [d.id for d in load_dimensions()]
    frame = flip_table(comparisons, n_resamples=bootstrap, seed=ci_seed, dimensions=dims)
    x, y = frame["model_x"].iloc[0], frame["model_y"].iloc[0]
    table = flips_table(frame, f"{title}: win rate of {x} over {y} (ties half)")
    summary = flips_summary(frame)
    json_file = prefix.with_name(prefix.name + ".flips.json")
    csv_file = prefix.with_name(prefix.name + ".flips.csv")
    png_file = prefix.with_name(prefix.name + ".flips.png")
    write_json(json_file, summary)
    frame.to_csv(csv_file, index=False)
    plot_flips(frame, png_file, title=title)
    flipped = summary.get("flipped", [])
    message = (
        f"preference flips: {', '.join(flipped) or 'none'}; outside the intervals: "
        f"{', '.join(summary.get('significant_flips', [])) or 'none'}"
    )
    return FlipsOutcome(
        table=table,
        summary=summary,
        message=message,
        csv_file=csv_file,
        json_file=json_file,
        png_file=png_file,
    )


@dataclass(frozen=True)
class FlipsSettings:
    """What ``persona flips`` reads and writes.

    Attributes:
        comparisons: A ``persona compare`` output (both conditions).
        prefix: Prefix of the ``.flips.{csv,json,png}`` files (None: COMPARISONS without
            its suffix).
        bootstrap: Bootstrap resamples of the intervals.
        ci_seed: Seed of the intervals.
    """

    comparisons: Path
    prefix: Path | None = None
    bootstrap: int = DEFAULT_RESAMPLES
    ci_seed: int = DEFAULT_SEED


def flips_file(settings: FlipsSettings, reporter: Reporter) -> FlipsOutcome:
    """Per-dimension win rates, original vs persona prompts, of a comparisons file.

    Args:
        settings: The comparisons file, the output prefix and the intervals.
        reporter: Unused today (no notes); taken as every stage takes one.

    Returns:
        The shown table, the summary and the files written.

    Raises:
        StageError: When the file holds an invalid comparison or more than two models, or
            lacks the comparisons of one condition (it is empty, or was made without the
            original prompts): a flip needs both.
    """
    del reporter
    try:
        rows = [row for _, row in read_records(settings.comparisons, PersonaComparison)[0]]
    except InputError as exc:
        raise StageError(str(exc)) from exc
    if not rows:
        raise StageError(f"{settings.comparisons}: no comparisons in the file (it is empty)")
    missing = sorted({"original", "persona"} - {row.condition for row in rows})
    if missing:
        raise StageError(
            f"{settings.comparisons}: no comparison with condition {missing[0]!r}: flips "
            "compare the original prompts with the persona's, so the file needs both "
            "(persona compare writes both when given --original)"
        )
    personas = sorted({c.persona for c in rows if c.condition == "persona" and c.persona})
    base = settings.prefix if settings.prefix else settings.comparisons.with_suffix("")
    try:
        return write_flips(
            rows,
            base,
            bootstrap=settings.bootstrap,
            ci_seed=settings.ci_seed,
            title=f"persona {', '.join(personas) or '?'}",
        )
    except ValueError as exc:
        raise StageError(f"{settings.comparisons}: {exc}") from exc
