"""``prefjudge rank``: a Bradley–Terry leaderboard of battles with bootstrap intervals.

The command parses its options into :class:`~prefjudge.ranking.run.RankSettings`, calls
:func:`~prefjudge.ranking.run.rank_file` and prints its leaderboards.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import (
    ANCHOR_FORMULA,
    DEFAULT_TIES,
    ELO_FORMULA,
    RATING_BASE,
    STYLE_CONTROLS,
    STYLE_PENALTIES,
    STYLE_PENALTY,
    TIE_POLICIES,
)
from prefjudge.cli.options import bootstrap_option, ci_seed_option, old_ci_seed_option
from prefjudge.cli.runs import check_result_files, run_ranking_stage, settings_usage_error
from prefjudge.cli.streams import InputFile, OutputFile, write_output

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.ranking import style as sc
    from prefjudge.ranking.bradley_terry import TiePolicy
    from prefjudge.ranking.run import Control
    from prefjudge.ranking.tables import Scale
    from prefjudge.reporting import TextTable

__all__ = ["ANCHOR_FORMULA", "ELO_FORMULA", "RANK_HELP", "rank_command"]

RANK_HELP = """Bradley–Terry leaderboard of BATTLES (CSV/JSON/JSONL, or - for stdin) with
bootstrap intervals.

Each battle names model_a, model_b and the winner (model_a, model_b or tie), with an
optional weight and category. Battles are aggregated per model pair before the fit
(choix I-LSR; Davidson's tie model by maximum likelihood with --ties davidson).
A prefjudge verdict (a row with pair_id and method) is its own battle: a failed
verdict is an invalid row, and one decided by no evidence (decided_by evidence:none)
is not a battle; those are counted on stderr and in --json (no_evidence_verdicts).

\b
Elo scale (theta = fitted Bradley-Terry log-strength):
  rating = BASE + 400/ln(10) * (theta - mean(theta))     (400/ln 10 = 173.72)
  with --anchor M=R:  rating = R + 400/ln(10) * (theta - theta_M)
so a 400-point gap means 10:1 odds of winning.

Intervals: percentile intervals over multinomial bootstrap resamples of the
aggregated counts; the rank range is the central 95 % of each model's bootstrap rank.
A disconnected comparison graph is reported with its components, not fitted.
One of -o and --json may be - (stdout); the leaderboard then prints on stderr.

\b
Style control (--control length|markdown|style), as arena-hard-auto:
  P(a beats b) = 1 / (1 + exp(-(ln(10)*(w_a - w_b) + sum_k gamma_k * z_k)))
  z_k = (f_a - f_b) / (f_a + f_b + 1) standardised over the battles, for
  length: token_len; markdown: header_count, list_count, bold_count; style: all four.
  rating = 400 * w + offset, on the same scale and anchoring as above.
Each battle then needs features_a and features_b (objects of counts, nested
objects summed, as prefjudge.features.features_record writes them; or
arena-hard's conv_metadata). Ties count half a win each way (--ties drop leaves
them out). --control-penalty l2 (default) is arena-hard's objective, scikit-learn's
LogisticRegression(C=1): 0.5*|coefficients|^2 + sum of log-losses over the battles
counted twice; none is plain maximum likelihood. The bootstrap resamples battles;
the style coefficients (log-odds per standard deviation of z) get intervals too.
"""


def _parse_anchor(value: str | None) -> tuple[str, float] | None:
    if not value:
        return None
    if "=" not in value:
        raise click.BadParameter("expected MODEL=RATING, e.g. gpt-4o=1200", param_hint="--anchor")
    name, rating = value.rsplit("=", 1)
    try:
        return name.strip(), float(rating)
    except ValueError:
        raise click.BadParameter(f"{rating!r} is not a number", param_hint="--anchor") from None


def _print_leaderboard(console: Console, table: TextTable) -> None:
    from prefjudge.cli.display import rich_table

    console.print(rich_table(table, console.width))


def _print_style(console: Console, table: TextTable) -> None:
    from prefjudge.cli.display import rich_table
    from prefjudge.ranking.tables import STYLE_CAPTION

    console.print(rich_table(table, console.width, caption=STYLE_CAPTION))


@main.command("rank", help=RANK_HELP)
@click.argument("battles", type=InputFile())
@click.option("-o", "--output", type=OutputFile(stdout_ok=True),
              help="Ratings CSV (- for stdout): model, rating, lower, upper, rank, rank_lower, "
                   "rank_upper, battles, win_rate (+ category with --by).")
@click.option("--json", "json_path", type=OutputFile(stdout_ok=True),
              help="Ratings and fit settings as a JSON file (- for stdout).")
@click.option("--plot", "plot_path",
              type=OutputFile(why="a PNG picture is not written to stdout; name a file"),
              help="Forest plot of ratings with their intervals (PNG).")
@click.option("--ties", type=click.Choice(TIE_POLICIES), default=DEFAULT_TIES, show_default=True,
              help="half: a tie is half a win each way; drop: ignore ties; davidson: "
                   "Davidson's tie model (fits a tie strength ν).")
@click.option("--alpha", type=float, default=0.0, show_default=True,
              help="Regularisation (0 = maximum likelihood). Needed when some model never "
                   "lost or never won, and for --allow-disconnected; e.g. 0.01.")
@click.option("--allow-disconnected", is_flag=True,
              help="Fit a disconnected comparison graph jointly (needs --alpha > 0); the gaps "
                   "between components then come from the regulariser only.")
@click.option("--anchor", metavar="MODEL=RATING",
              help="Pin one model's Elo rating instead of centring the mean on --base.")
@click.option("--base", type=float, default=RATING_BASE, show_default=True,
              help="Mean Elo rating when there is no --anchor.")
@click.option("--scale", type=click.Choice(["elo", "bt"]), default="elo", show_default=True,
              help="elo: Elo points; bt: strengths exp(theta) normalised to sum to 1.")
@bootstrap_option(help="Multinomial bootstrap resamples of the aggregated counts "
                       "(0: no intervals).")
@old_ci_seed_option
@ci_seed_option
@click.option("--by", "by", metavar="COLUMN",
              help="One leaderboard per value of this column (e.g. category).")
@click.option("--winner-map", metavar="LABEL=TARGET,...",
              help="Extra winner labels, e.g. 'left=model_a,right=model_b' or "
                   "'0=model_a,1=model_b'. Targets: model_a, model_b, tie.")
@click.option("--model-a-col", default="model_a", show_default=True,
              help="Column naming the first model.")
@click.option("--model-b-col", default="model_b", show_default=True,
              help="Column naming the second model.")
@click.option("--winner-col", default="winner", show_default=True,
              help="Column naming the winner.")
@click.option("--weight-col", default="weight", show_default=True,
              help="Optional battle weight column (missing: weight 1).")
@click.option("--skip-invalid", is_flag=True,
              help="Rank the valid rows and list the invalid ones instead of stopping.")
@click.option("--control", type=click.Choice(list(STYLE_CONTROLS)),
              help="Style control: take out the effect of response length (length), of "
                   "markdown headers, lists and bold (markdown), or of both (style). "
                   "Battles need features_a/features_b.")
@click.option("--control-penalty", type=click.Choice(STYLE_PENALTIES), default=STYLE_PENALTY,
              show_default=True,
              help="l2: arena-hard-auto's objective (scikit-learn LogisticRegression, C=1); "
                   "none: plain maximum likelihood.")
@click.option("--suggest", type=click.IntRange(min=1), metavar="N",
              help="Also list the N model pairs whose next judgments most reduce rank "
                   "uncertainty, with the tasks each was not judged on (--json: suggestions).")
@click.option("--tasks", "tasks", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --suggest: a file whose task_id values a judgment may use "
                   "(default: the task ids in BATTLES). Repeatable: their union.")
def rank_command(
    battles: Path,
    output: Path | None,
    json_path: Path | None,
    plot_path: Path | None,
    ties: TiePolicy,
    alpha: float,
    allow_disconnected: bool,
    anchor: str | None,
    base: float,
    scale: Scale,
    bootstrap: int,
    ci_seed: int,
    by: str | None,
    winner_map: str | None,
    model_a_col: str,
    model_b_col: str,
    winner_col: str,
    weight_col: str,
    skip_invalid: bool,
    control: Control | None,
    control_penalty: sc.Penalty,
    suggest: int | None,
    tasks: tuple[Path, ...],
) -> None:
    """Bradley–Terry leaderboard of BATTLES (help text: :data:`RANK_HELP`)."""
    from rich.console import Console

    from prefjudge.cli.display import stdout as stdout_console
    from prefjudge.cli.suggest_output import print_and_write_suggestions
    from prefjudge.ranking import style as sc
    from prefjudge.ranking.inputs import parse_winner_map
    from prefjudge.ranking.run import RankSettings, SettingsError, check_rank_settings, rank_file
    from prefjudge.ranking.tables import leaderboard_table, leaderboard_title, style_table

    stderr = Console(stderr=True)
    try:
        mapping = parse_winner_map(winner_map)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--winner-map") from None
    settings = RankSettings(
        battles=battles, output=output, json_path=json_path, plot_path=plot_path,
        ties=ties, alpha=alpha, allow_disconnected=allow_disconnected,
        anchor=_parse_anchor(anchor), base=base, scale=scale,
        n_resamples=bootstrap, seed=ci_seed, by=by, winner_map=mapping,
        model_a_col=model_a_col, model_b_col=model_b_col, winner_col=winner_col,
        weight_col=weight_col, skip_invalid=skip_invalid, control=control,
        control_penalty=control_penalty, suggest=suggest,
        tasks=tasks,
    )
    try:
        check_rank_settings(settings)
    except SettingsError as exc:
        raise settings_usage_error(exc) from None
    piped = check_result_files(output, json_path, plot_path)
    outcome = run_ranking_stage(rank_file, settings, stderr)
    tables = stderr if piped else stdout_console  # stdout carries the file asked for
    for label, board in outcome.result.boards.items():
        title = leaderboard_title(board, label, scale=scale, by=by, control=control, ties=ties)
        _print_leaderboard(tables, leaderboard_table(board, title, scale))
        if isinstance(board, sc.StyleLeaderboard):
            _print_style(tables, style_table(board))
    if outcome.suggestions is not None:
        print_and_write_suggestions(tables, outcome.suggestions, None)
    if outcome.stdout is not None:
        write_output(Path("-"), outcome.stdout)
