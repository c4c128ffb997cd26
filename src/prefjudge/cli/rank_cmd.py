"""``prefjudge rank``: a Bradley–Terry leaderboard of battles with bootstrap intervals."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.cli import main
from prefjudge.cli.display import progress_bars
from prefjudge.cli.display import stdout as stdout_console
from prefjudge.cli.options import bootstrap_option, ci_seed_option, old_ci_seed_option
from prefjudge.cli.runs import check_output
from prefjudge.cli.streams import InputFile, OutputFile, is_stdout, one_stdout, write_output
from prefjudge.cli.suggest_output import (
    print_and_write_suggestions,
    suggest_for_rank,
    suggestion_records,
)
from prefjudge.io import InputError, InputIssue
from prefjudge.plots.ranking import forest_plot
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking import style as sc
from prefjudge.ranking.inputs import (
    BattleColumns,
    BattleFile,
    ModelNameWarning,
    no_evidence_note,
    parse_winner_map,
    read_battle_file,
)
from prefjudge.ranking.reports import (
    ANCHOR_FORMULA,
    ELO_FORMULA,
    RankResult,
    dumps,
    fit_leaderboards,
    fit_style_leaderboards,
    rank_payload,
    resample_total,
)

stderr = Console(stderr=True)

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


def _fmt(value: float, scale: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4f}" if scale == "bt" else f"{value:.0f}"


def _print_leaderboard(console: Console, board: bt.Leaderboard, title: str, scale: str) -> None:
    table = Table(title=escape(title))
    for name in ("rank", "model", "rating", "95% CI", "ranks", "battles", "win rate"):
        table.add_column(name, justify="left" if name == "model" else "right",
                         no_wrap=name != "model")
    for row in board.table.itertuples(index=False):
        battles = f"{row.battles:.0f}" if float(row.battles).is_integer() else f"{row.battles:.1f}"
        table.add_row(
            str(row.rank), escape(str(row.model)), _fmt(row.rating, scale),
            f"{_fmt(row.lower, scale)}–{_fmt(row.upper, scale)}",
            f"{row.rank_lower}–{row.rank_upper}", battles, f"{row.win_rate:.3f}",
        )
    console.print(table)
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
    for note in notes:
        stderr.print(f"[yellow]note:[/] {escape(note)}")


def _read(battles: Path, columns: BattleColumns, mapping: dict[str, str],
          skip_invalid: bool) -> BattleFile:
    """Read the battles; name-form warnings, skipped rows and uncounted verdicts go to stderr."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ModelNameWarning)
            read = read_battle_file(battles, columns=columns, winner_map=mapping,
                                    skip_invalid=skip_invalid)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    for warning in caught:
        if issubclass(warning.category, ModelNameWarning):
            stderr.print(f"[yellow]warning:[/] {escape(str(warning.message))}", soft_wrap=True)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
    for issue in read.issues:
        stderr.print(f"[yellow]skipped:[/] {escape(str(issue))}", soft_wrap=True)
    if read.no_evidence:
        stderr.print(f"[yellow]note:[/] {escape(no_evidence_note(read.no_evidence))}",
                     soft_wrap=True)
    return read


def _fit(frame: Any, source: Path, by: str | None, options: dict[str, Any],
         fitter: Callable[..., RankResult] = fit_leaderboards) -> RankResult:
    """Fit with a progress bar; errors name the input, failed groups are listed."""
    total = resample_total(frame, by, options["n_resamples"])
    try:
        with progress_bars(stderr, disable=total == 0 or not stderr.is_terminal) as bar:
            task = bar.add_task("bootstrap", total=total)
            result = fitter(frame, by, progress=lambda k: bar.advance(task, k), **options)
    except (bt.RankError, ValueError) as exc:
        raise click.ClickException(f"{source}: {exc}") from None
    for label, reason in result.failed.items():
        stderr.print(f"[red]{escape(f'{by} {label!r}')} not ranked:[/] {escape(reason)}")
    if not result.boards:
        raise click.ClickException("no leaderboard could be made (see the reasons above)")
    return result


def _check_control_options(control: str | None, ties: str, alpha: float) -> None:
    """Options that do not apply to a style-controlled fit are usage errors."""
    if not control:
        return
    if ties not in sc.STYLE_TIES:
        raise click.UsageError(f"--control handles ties as {' or '.join(sc.STYLE_TIES)}, "
                               f"not {ties}")
    if alpha != 0:
        raise click.UsageError("--alpha is the plain fit's regulariser; with --control, the "
                               "penalty is --control-penalty (l2 or none)")


def _fit_controlled(frame: Any, source: Path, by: str | None, options: dict[str, Any],
                    control: str, penalty: str,
                    skip_invalid: bool) -> tuple[RankResult, list[InputIssue]]:
    """The --control path: battles without features stop the run (or are skipped), then fit.

    Returns:
        The leaderboards and the battles skipped for lack of features.
    """
    issues = sc.feature_issues(frame, control, str(source))
    if issues and not skip_invalid:
        raise click.ClickException(
            f"{InputError(issues)}\n(rank only the battles that have features with "
            "--skip-invalid)")
    for issue in issues:
        stderr.print(f"[yellow]skipped:[/] {escape(str(issue))}", soft_wrap=True)
    frame = frame[~sc.missing_features(frame, control)]
    if frame.empty:
        raise click.ClickException(f"{source}: no battle has the features of --control "
                                   f"{control}")
    style_options = {key: options[key] for key in ("ties", "allow_disconnected", "scale",
                                                    "anchor", "base", "n_resamples", "seed")}
    style_options.update(control=control, penalty=penalty)
    return _fit(frame, source, by, style_options, fit_style_leaderboards), issues


def _print_style(console: Console, board: sc.StyleLeaderboard) -> None:
    """The style coefficients of a style-controlled leaderboard, with their intervals."""
    table = Table(title=f"Style coefficients ({board.control}, penalty {board.penalty})",
                  caption="coef: log-odds per SD of z")
    for name in ("feature", "coef", "95% CI", "Elo per SD"):
        table.add_column(name, justify="left" if name == "feature" else "right")
    for row in board.style.itertuples(index=False):
        if not row.estimable:
            table.add_row(row.feature, "–", "–", "same in every battle: not estimable")
            continue
        interval = "–" if math.isnan(row.lower) else f"{row.lower:+.4f} – {row.upper:+.4f}"
        table.add_row(row.feature, f"{row.coef:+.4f}", interval, f"{row.elo_per_sd:+.1f}")
    console.print(table)
    if board.incomplete_resamples:
        stderr.print(f"[yellow]note:[/] {board.incomplete_resamples} bootstrap resamples "
                     "left out a model entirely; they are not in the intervals")
    if len(board.tokenizers) > 1:
        stderr.print("[yellow]note:[/] token_len was counted by several tokenizers: "
                     f"{escape(', '.join(board.tokenizers))}")


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
@click.option("--ties", type=click.Choice(bt.TIE_POLICIES), default="half", show_default=True,
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
@click.option("--base", type=float, default=bt.DEFAULT_BASE, show_default=True,
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
@click.option("--control", type=click.Choice(list(sc.CONTROLS)),
              help="Style control: take out the effect of response length (length), of "
                   "markdown headers, lists and bold (markdown), or of both (style). "
                   "Battles need features_a/features_b.")
@click.option("--control-penalty", type=click.Choice(sc.PENALTIES), default=sc.DEFAULT_PENALTY,
              show_default=True,
              help="l2: arena-hard-auto's objective (scikit-learn LogisticRegression, C=1); "
                   "none: plain maximum likelihood.")
@click.option("--suggest", type=click.IntRange(min=1), metavar="N",
              help="Also list the N model pairs whose next judgments most reduce rank "
                   "uncertainty, with the tasks each was not judged on (--json: suggestions).")
@click.option("--tasks", "tasks_path", type=click.Path(exists=True, dir_okay=False,
                                                      path_type=Path),
              help="With --suggest: a file whose task_id values a judgment may use "
                   "(default: the task ids in BATTLES).")
def rank_command(
    battles: Path,
    output: Path | None,
    json_path: Path | None,
    plot_path: Path | None,
    ties: str,
    alpha: float,
    allow_disconnected: bool,
    anchor: str | None,
    base: float,
    scale: str,
    bootstrap: int,
    ci_seed: int,
    by: str | None,
    winner_map: str | None,
    model_a_col: str,
    model_b_col: str,
    winner_col: str,
    weight_col: str,
    skip_invalid: bool,
    control: str | None,
    control_penalty: str,
    suggest: int | None,
    tasks_path: Path | None,
) -> None:
    """Bradley–Terry leaderboard of BATTLES (help text: :data:`RANK_HELP`)."""
    try:
        mapping = parse_winner_map(winner_map)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--winner-map") from None
    if tasks_path is not None and not suggest:
        raise click.UsageError("--tasks goes with --suggest")
    anchor_pair = _parse_anchor(anchor)
    if anchor_pair and scale == "bt":
        raise click.UsageError("--anchor applies to the Elo scale, not to --scale bt")
    if alpha < 0:
        raise click.BadParameter("must be >= 0", param_hint="--alpha")
    _check_control_options(control, ties, alpha)
    if control and allow_disconnected and control_penalty != "l2":
        raise click.UsageError("--allow-disconnected with --control needs --control-penalty l2")
    if allow_disconnected and alpha <= 0 and not control:
        raise click.UsageError("--allow-disconnected needs --alpha > 0 (e.g. --alpha 0.01)")
    piped = one_stdout(**{"-o/--output": output, "--json": json_path})
    for path, hint in ((output, "-o/--output"), (json_path, "--json"), (plot_path, "--plot")):
        if not is_stdout(path):
            check_output(path, hint)
    columns = BattleColumns(model_a_col, model_b_col, winner_col, weight_col, by or "category")
    read = _read(battles, columns, mapping, skip_invalid)
    frame, skipped = read.frame, read.issues

    options: dict[str, Any] = {
        "ties": ties, "alpha": alpha, "allow_disconnected": allow_disconnected,
        "scale": scale, "anchor": anchor_pair, "base": base, "n_resamples": bootstrap,
        "seed": ci_seed,
    }
    if control:
        result, no_features = _fit_controlled(frame, battles, by, options, control,
                                              control_penalty, skip_invalid)
        skipped = [*skipped, *no_features]
    else:
        result = _fit(frame, battles, by, options)
    tables = stderr if piped else stdout_console  # stdout carries the file asked for
    scale_name = "BT strength (sums to 1)" if scale == "bt" else "Elo"
    for label, board in result.boards.items():
        title = f"{scale_name} leaderboard" + (f" — {by} {label}" if by else "")
        title += f", style-controlled ({control})" if control else ""
        title += f" ({board.n_battles} battles, ties: {ties})"
        _print_leaderboard(tables, board, title, scale)
        if isinstance(board, sc.StyleLeaderboard):
            _print_style(tables, board)
    suggestions = suggest_for_rank(frame, battles, suggest, columns=columns, ties=ties,
                                   alpha=alpha, tasks_path=tasks_path) if suggest else None
    if suggestions is not None:
        print_and_write_suggestions(tables, suggestions, None)

    if output:
        write_output(output, result.table().to_csv(index=False), "-o/--output")
        if not is_stdout(output):
            stderr.print(f"ratings → {output}")
    if json_path:
        payload = rank_payload(result, scale=scale, anchored=anchor_pair is not None,
                               skipped=skipped, no_evidence=read.no_evidence)
        if suggestions is not None:
            payload["suggestions"] = suggestion_records(suggestions)
        write_output(json_path, dumps(payload), "--json")
        if not is_stdout(json_path):
            stderr.print(f"JSON → {json_path}")
    if plot_path:
        boards = {(f"{by} {k}" if by else "Leaderboard"): b.table
                  for k, b in result.boards.items()}
        try:
            forest_plot(boards, plot_path, xlabel=scale_name + " (95 % bootstrap interval)")
        except OSError as exc:
            raise click.ClickException(f"cannot write {plot_path}: {exc.strerror or exc}") from None
        stderr.print(f"forest plot → {plot_path}")
