"""``prefjudge correlate``: which blend of Func and IF best predicts Elo (the α sweep).

The command parses its options into :class:`~prefjudge.ranking.run.CorrelateSettings`,
calls :func:`~prefjudge.ranking.run.correlate_file` and prints its sweeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from prefjudge.cli import main
from prefjudge.cli.options import bootstrap_option, ci_seed_option, old_ci_seed_option
from prefjudge.cli.runs import check_result_files, run_ranking_stage
from prefjudge.cli.streams import InputFile, OutputFile, shown, write_output

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.ranking.reports import Sweep


def _best_in_green(cell: str) -> str:
    """A cell as rich markup; the best α of each type in bold green."""
    from rich.markup import escape

    from prefjudge.ranking.tables import BEST_MARK

    if cell.endswith(BEST_MARK):
        return f"[bold green]{escape(cell.removesuffix(BEST_MARK))}{BEST_MARK}[/]"
    return escape(cell)


def _print_correlation(console: Console, sweep: Sweep) -> None:
    from prefjudge.cli.display import rich_table
    from prefjudge.ranking.tables import correlation_tables

    for table in correlation_tables(sweep):
        console.print(rich_table(table, console.width, markup=_best_in_green))


@main.command("correlate")
@click.argument("scores", type=InputFile())
@click.option("--elo", "elo_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Elo table (CSV/JSON: e.g. an LMArena coding_<date>.csv or the output of "
                   "prefjudge rank). [default: SCORES itself]")
@click.option("--model-col", default="model", show_default=True,
              help="Model-name column (in both files).")
@click.option("--elo-model-col", default=None, help="Model-name column of the Elo file "
                                                    "[default: --model-col].")
@click.option("--func-col", default="func", show_default=True, help="Functional score column.")
@click.option("--if-col", "if_cols", multiple=True,
              help="Instruction-following column; repeat for IF at several instruction counts "
                   "[default: if].")
@click.option("--elo-col", default="rating", show_default=True, help="Elo rating column.")
@click.option("--aliases", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Name map from SCORES to the Elo file: a JSON object, or a CSV with columns "
                   "score_model, elo_model. Used after exact matching.")
@click.option("--step", type=float, default=0.1, show_default=True, help="α grid step.")
@bootstrap_option(help="Bootstrap resamples over models (0: no intervals).")
@old_ci_seed_option
@ci_seed_option
@click.option("--require-all", is_flag=True,
              help="Fail when a SCORES model has no Elo rating or lacks a score, instead of "
                   "listing it and going on.")
@click.option("-o", "--output", type=OutputFile(stdout_ok=True),
              help="Curves as CSV (one row per α and IF column; - for stdout).")
@click.option("--json", "json_path", type=OutputFile(stdout_ok=True),
              help="Best α, curves, models and unmatched names as a JSON file (- for stdout).")
@click.option("--plot", "plot_path",
              type=OutputFile(why="a PNG picture is not written to stdout; name a file"),
              help="Correlation vs α, one panel per correlation type (PNG).")
def correlate_command(
    scores: Path,
    elo_path: Path | None,
    model_col: str,
    elo_model_col: str | None,
    func_col: str,
    if_cols: tuple[str, ...],
    elo_col: str,
    aliases: Path | None,
    step: float,
    bootstrap: int,
    ci_seed: int,
    require_all: bool,
    output: Path | None,
    json_path: Path | None,
    plot_path: Path | None,
) -> None:
    """Which blend of functional correctness and IF best predicts Elo (Vibe Checker §4.5).

    For α on a grid from 0 to 1, composite = α·IF + (1−α)·Func per model (α is the
    weight on IF); Pearson, Spearman and Kendall τ-b with the Elo rating are computed
    for each α, and the best α per type is reported (ties: the largest α). A bootstrap
    over models gives 95 % intervals on each correlation and on the best α.

    SCORES is a per-model table (CSV/JSON) or the scored records of `prefjudge score`
    (JSONL; aggregated per model: func = share of records whose tests pass, if = mean
    if_instruction, if_<k> = the same over records with k instructions), or - for stdin.
    Names are matched exactly, then through --aliases; unmatched models are listed on
    both sides. One of -o and --json may be - (stdout); the tables then print on stderr.
    """
    from rich.console import Console

    from prefjudge.cli.display import stdout as stdout_console
    from prefjudge.ranking.run import CorrelateSettings, correlate_file

    stderr = Console(stderr=True)
    settings = CorrelateSettings(
        scores=scores, elo=elo_path, model_col=model_col, elo_model_col=elo_model_col,
        func_col=func_col, if_cols=tuple(if_cols) or ("if",), elo_col=elo_col, aliases=aliases,
        step=step, n_resamples=bootstrap, seed=ci_seed, require_all=require_all,
        output=output, json_path=json_path, plot_path=plot_path, source_name=shown(scores),
    )
    piped = check_result_files(output, json_path, plot_path)
    outcome = run_ranking_stage(correlate_file, settings, stderr)
    tables = stderr if piped else stdout_console  # stdout carries the file asked for
    for sweep in outcome.sweeps:
        _print_correlation(tables, sweep)
    if outcome.stdout is not None:
        write_output(Path("-"), outcome.stdout)
