"""``prefjudge rank`` (Bradley–Terry leaderboard) and ``prefjudge correlate`` (α sweep)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from prefjudge.cli import main
from prefjudge.cli.runs import check_output
from prefjudge.io import InputError
from prefjudge.plots.ranking import correlation_plot, forest_plot
from prefjudge.ranking import bradley_terry as rank
from prefjudge.ranking import correlate as corr
from prefjudge.ranking.inputs import (
    BattleColumns,
    ModelNameWarning,
    is_scored_records,
    parse_winner_map,
    read_aliases,
    read_battles,
    read_model_table,
    read_scored_records,
)
from prefjudge.records import Rating

stdout = Console()
stderr = Console(stderr=True)

ELO_FORMULA = "rating = BASE + 400/ln(10) * (theta - mean(theta))"
ANCHOR_FORMULA = "rating = R + 400/ln(10) * (theta - theta_M)"


RANK_HELP = """Bradley–Terry leaderboard of BATTLES (CSV/JSON/JSONL) with bootstrap intervals.

Each battle names model_a, model_b and the winner (model_a, model_b or tie), with an
optional weight and category. Battles are aggregated per model pair before the fit
(choix I-LSR; Davidson's tie model by maximum likelihood with --ties davidson).

\b
Elo scale (theta = fitted Bradley-Terry log-strength):
  rating = BASE + 400/ln(10) * (theta - mean(theta))     (400/ln 10 = 173.72)
  with --anchor M=R:  rating = R + 400/ln(10) * (theta - theta_M)
so a 400-point gap means 10:1 odds of winning.

Intervals: percentile intervals over multinomial bootstrap resamples of the
aggregated counts; the rank range is the central 95 % of each model's bootstrap rank.
A disconnected comparison graph is reported with its components, not fitted.
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


def _check_outputs(**paths: Path | None) -> None:
    """Make the output folders now, so that a bad path fails before any work is done.

    Args:
        **paths: Option name (``output``, ``json_path`` ...) → path, or None when not given.

    Raises:
        click.BadParameter: When a folder cannot be created or a path is not writable.
    """
    hints = {"output": "-o/--output", "json_path": "--json", "plot_path": "--plot"}
    for name, path in paths.items():
        check_output(path, hints.get(name, name))


def _write(path: Path, write: Any) -> None:
    """Run ``write(path)``; a failure names the file instead of raising a traceback."""
    try:
        write(path)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None


def _progress(total: int, label: str) -> Progress:
    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=total == 0 or not stderr.is_terminal,
    )


def _fmt(value: float, scale: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4f}" if scale == "bt" else f"{value:.0f}"


def _print_leaderboard(board: rank.Leaderboard, title: str, scale: str) -> None:
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
    stdout.print(table)
    notes = []
    if board.tie_strength is not None:
        notes.append(f"Davidson tie strength ν = {board.tie_strength:.3f}")
    if board.degenerate_resamples:
        notes.append(
            f"{board.degenerate_resamples} of {board.settings['bootstrap']} bootstrap resamples "
            f"had a model that never won or never lost; they were fitted with alpha = "
            f"{rank.FALLBACK_ALPHA} (few battles: treat the intervals as rough)"
        )
    if len(board.components) > 1:
        notes.append(
            f"the comparison graph has {len(board.components)} components, joined only by the "
            "regulariser: " + "; ".join(", ".join(c) for c in board.components)
        )
    for note in notes:
        stderr.print(f"[yellow]note:[/] {escape(note)}")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return _json_safe(float(value))
    return value


def _board_summary(board: rank.Leaderboard) -> dict[str, Any]:
    return {
        **board.settings,
        "n_battles": board.n_battles,
        "n_models": len(board.models),
        "tie_strength": board.tie_strength,
        "degenerate_resamples": board.degenerate_resamples,
        "components": board.components if len(board.components) > 1 else [],
    }


@main.command("rank", help=RANK_HELP)
@click.argument("battles", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Ratings CSV: model, rating, lower, upper, rank, rank_lower, rank_upper, "
                   "battles, win_rate (+ category with --by).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Ratings and fit settings as JSON.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Forest plot of ratings with their intervals (PNG).")
@click.option("--ties", type=click.Choice(rank.TIE_POLICIES), default="half", show_default=True,
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
@click.option("--base", type=float, default=rank.DEFAULT_BASE, show_default=True,
              help="Mean Elo rating when there is no --anchor.")
@click.option("--scale", type=click.Choice(["elo", "bt"]), default="elo", show_default=True,
              help="elo: Elo points; bt: strengths exp(theta) normalised to sum to 1.")
@click.option("--bootstrap", "n_resamples", type=click.IntRange(min=0), default=1000,
              show_default=True, help="Multinomial bootstrap resamples of the aggregated "
                                      "counts (0: no intervals).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--by", "by", metavar="COLUMN",
              help="One leaderboard per value of this column (e.g. category).")
@click.option("--winner-map", metavar="LABEL=TARGET,...",
              help="Extra winner labels, e.g. 'left=model_a,right=model_b' or "
                   "'0=model_a,1=model_b'. Targets: model_a, model_b, tie.")
@click.option("--model-a-col", default="model_a", show_default=True)
@click.option("--model-b-col", default="model_b", show_default=True)
@click.option("--winner-col", default="winner", show_default=True)
@click.option("--weight-col", default="weight", show_default=True,
              help="Optional battle weight column (missing: weight 1).")
@click.option("--skip-invalid", is_flag=True,
              help="Rank the valid rows and list the invalid ones instead of stopping.")
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
    n_resamples: int,
    seed: int,
    by: str | None,
    winner_map: str | None,
    model_a_col: str,
    model_b_col: str,
    winner_col: str,
    weight_col: str,
    skip_invalid: bool,
) -> None:
    """Bradley–Terry leaderboard of BATTLES (help text: :data:`RANK_HELP`)."""
    try:
        mapping = parse_winner_map(winner_map)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--winner-map") from None
    anchor_pair = _parse_anchor(anchor)
    if anchor_pair and scale == "bt":
        raise click.UsageError("--anchor applies to the Elo scale, not to --scale bt")
    if alpha < 0:
        raise click.BadParameter("must be >= 0", param_hint="--alpha")
    if allow_disconnected and alpha <= 0:
        raise click.UsageError("--allow-disconnected needs --alpha > 0 (e.g. --alpha 0.01)")
    _check_outputs(output=output, json_path=json_path, plot_path=plot_path)
    columns = BattleColumns(model_a_col, model_b_col, winner_col, weight_col, by or "category")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ModelNameWarning)
            frame, skipped = read_battles(battles, columns=columns, winner_map=mapping,
                                          skip_invalid=skip_invalid)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    for warning in caught:
        if issubclass(warning.category, ModelNameWarning):
            stderr.print(f"[yellow]warning:[/] {escape(str(warning.message))}", soft_wrap=True)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
    for issue in skipped:
        stderr.print(f"[yellow]skipped:[/] {escape(str(issue))}", soft_wrap=True)

    options: dict[str, Any] = {
        "ties": ties, "alpha": alpha, "allow_disconnected": allow_disconnected,
        "scale": scale, "anchor": anchor_pair, "base": base, "n_resamples": n_resamples,
        "seed": seed,
    }
    boards, failed = _fit_boards(frame, battles, by, options)
    scale_name = "BT strength (sums to 1)" if scale == "bt" else "Elo"
    for label, board in boards.items():
        title = f"{scale_name} leaderboard" + (f" — {by} {label}" if by else "")
        title += f" ({board.n_battles} battles, ties: {ties})"
        _print_leaderboard(board, title, scale)

    result = pd.concat(
        [b.table.assign(category=k)[["category", *b.table.columns]] if by else b.table
         for k, b in boards.items()],
        ignore_index=True,
    )
    if output:
        _write(output, lambda path: result.to_csv(path, index=False))
        stderr.print(f"ratings → {output}")
    if json_path:
        formula = "strength = exp(theta) / sum(exp(theta))" if scale == "bt" else (
            ANCHOR_FORMULA if anchor_pair else ELO_FORMULA)
        payload: dict[str, Any] = {
            "scale": scale,
            "formula": formula,
            "ratings": [Rating(**row).model_dump(mode="json")
                        for row in result.to_dict(orient="records")],
            "skipped_rows": [str(i) for i in skipped],
        }
        if by:
            payload.update(by=by, failed=failed,
                           leaderboards={k: _board_summary(b) for k, b in boards.items()})
        else:
            payload.update(_board_summary(boards[""]))
        text = json.dumps(_json_safe(payload), indent=2, ensure_ascii=False) + "\n"
        _write(json_path, lambda path: path.write_text(text, encoding="utf-8"))
        stderr.print(f"JSON → {json_path}")
    if plot_path:
        tables = {(f"{by} {k}" if by else "Leaderboard"): b.table for k, b in boards.items()}
        _write(plot_path, lambda path: forest_plot(
            tables, path, xlabel=scale_name + " (95 % bootstrap interval)"))
        stderr.print(f"forest plot → {plot_path}")


def _fit_boards(
    frame: pd.DataFrame, source: Path, by: str | None, options: dict[str, Any]
) -> tuple[dict[str, rank.Leaderboard], dict[str, str]]:
    """Fit one leaderboard, or one per ``--by`` group (failures listed, not dropped)."""
    n_resamples = options["n_resamples"]
    if not by:
        try:
            counts = rank.aggregate(frame["model_a"], frame["model_b"], frame["winner"],
                                    frame["weight"])
            with _progress(n_resamples, "bootstrap") as bar:
                task = bar.add_task("bootstrap", total=n_resamples)
                board = rank.leaderboard(counts, progress=lambda k: bar.advance(task, k),
                                         **options)
        except (rank.RankError, ValueError) as exc:
            raise click.ClickException(f"{source}: {exc}") from None
        return {"": board}, {}
    total = n_resamples * frame["category"].fillna("(none)").nunique()
    with _progress(total, "bootstrap") as bar:
        task = bar.add_task("bootstrap", total=total)
        outcome = rank.leaderboards_by_group(
            frame, "category", progress=lambda k: bar.advance(task, k), **options
        )
    boards: dict[str, rank.Leaderboard] = {}
    failed: dict[str, str] = {}
    for label, board in outcome.items():
        if isinstance(board, rank.Leaderboard):
            boards[label] = board
        else:
            failed[label] = str(board)
            stderr.print(f"[red]{escape(f'{by} {label!r}')} not ranked:[/] {escape(str(board))}")
    if not boards:
        raise click.ClickException("no leaderboard could be made (see the reasons above)")
    return boards, failed


def _read_scores(scores: Path, model_col: str, func_col: str, if_cols: list[str]) -> pd.DataFrame:
    if is_scored_records(scores):
        table = corr.scores_from_records(read_scored_records(scores))
        missing = [c for c in [func_col, *if_cols] if c not in table.columns]
        if missing:
            available = ", ".join(c for c in table.columns if c in ("func", "if")
                                  or c.startswith("if_"))
            raise click.UsageError(
                f"scored records give the columns {available}; {', '.join(missing)} is not one"
            )
        return table
    return read_model_table(scores, model_col, [func_col, *if_cols])


def _curve_records(result: corr.CorrelationResult) -> list[dict[str, Any]]:
    rows = []
    for row in result.curve.to_dict(orient="records"):
        item: dict[str, Any] = {"alpha": row["alpha"]}
        for kind in corr.CORRELATIONS:
            item[kind] = row[kind]
            item[f"{kind}_ci"] = [row[f"{kind}_lower"], row[f"{kind}_upper"]]
        rows.append(item)
    return rows


def _print_correlation(result: corr.CorrelationResult, if_col: str) -> None:
    table = Table(title=escape(f"Correlation with Elo of α·{if_col} + (1−α)·Func "
                               f"({len(result.models)} models)"))
    table.add_column("α (IF weight)", justify="right")
    for kind in corr.CORRELATIONS:
        table.add_column(kind, justify="right")
    best_rows = {kind: result.best[kind]["alpha"] for kind in corr.CORRELATIONS}
    for row in result.curve.itertuples(index=False):
        cells = []
        for kind in corr.CORRELATIONS:
            text = f"{getattr(row, kind):.4f}"
            if best_rows[kind] is not None and math.isclose(row.alpha, best_rows[kind]):
                text = f"[bold green]{text} ★[/]"
            cells.append(text)
        table.add_row(f"{row.alpha:.2f}", *cells)
    stdout.print(table)
    summary = Table(title="Best α per correlation type (95 % bootstrap over models)")
    for name in ("type", "best α", "r", "r 95% CI", "best-α 95% CI"):
        summary.add_column(name, justify="left" if name == "type" else "right")
    for kind in corr.CORRELATIONS:
        best = result.best[kind]
        if best["alpha"] is None:
            summary.add_row(kind, "–", "–", "–", "–")
            continue
        ci, aci = best["ci"], best["alpha_ci"]
        summary.add_row(
            kind, f"{best['alpha']:.2f}", f"{best['r']:.4f}",
            "–" if ci[0] is None else f"{ci[0]:.3f} – {ci[1]:.3f}",
            "–" if aci[0] is None else f"{aci[0]:.2f} – {aci[1]:.2f}",
        )
    stdout.print(summary)


def _report_unmatched(
    match: corr.ModelMatch, elo_source: Path, *, show_elo_side: bool, require_all: bool
) -> None:
    if match.unmatched_scores:
        stderr.print(f"[yellow]no Elo rating in {escape(str(elo_source))} for "
                     f"{len(match.unmatched_scores)} model(s):[/] "
                     + escape(", ".join(match.unmatched_scores)))
    if match.unmatched_elo and show_elo_side:
        stderr.print(f"[yellow]{len(match.unmatched_elo)} Elo model(s) have no scores:[/] "
                     + escape(", ".join(match.unmatched_elo[:40]))
                     + (" …" if len(match.unmatched_elo) > 40 else ""))
    if require_all and match.unmatched_scores:
        raise click.ClickException(
            "model(s) missing from the Elo file: " + ", ".join(match.unmatched_scores)
            + " (map names with --aliases, or drop --require-all to go on without them)"
        )


def _complete_rows(
    match: corr.ModelMatch,
    scores: pd.DataFrame,
    elo_of: dict[str, float],
    func_col: str,
    if_col: str,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Matched models with all three numbers, and the matched models lacking one."""
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
    return rows, incomplete


@main.command("correlate")
@click.argument("scores", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--elo", "elo_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Elo table (CSV/JSON: e.g. an LMArena coding_<date>.csv or the output of "
                   "prefjudge rank). Default: SCORES itself.")
@click.option("--model-col", default="model", show_default=True,
              help="Model-name column (in both files).")
@click.option("--elo-model-col", default=None, help="Model-name column of the Elo file "
                                                    "(default: --model-col).")
@click.option("--func-col", default="func", show_default=True, help="Functional score column.")
@click.option("--if-col", "if_cols", multiple=True,
              help="Instruction-following column; repeat for IF at several instruction counts "
                   "(default: if).")
@click.option("--elo-col", default="rating", show_default=True, help="Elo rating column.")
@click.option("--aliases", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Name map from SCORES to the Elo file: a JSON object, or a CSV with columns "
                   "score_model, elo_model. Used after exact matching.")
@click.option("--step", type=float, default=0.1, show_default=True, help="α grid step.")
@click.option("--bootstrap", "n_resamples", type=click.IntRange(min=0), default=1000,
              show_default=True, help="Bootstrap resamples over models.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--require-all", is_flag=True,
              help="Fail when a SCORES model has no Elo rating or lacks a score, instead of "
                   "listing it and going on.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Curves as CSV (one row per α and IF column).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Best α, curves, models and unmatched names as JSON.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
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
    n_resamples: int,
    seed: int,
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
    if_instruction, if_<k> = the same over records with k instructions). Names are
    matched exactly, then through --aliases; unmatched models are listed on both sides.
    """
    if_list = list(if_cols) or ["if"]
    _check_outputs(output=output, json_path=json_path, plot_path=plot_path)
    try:
        alphas = corr.alpha_grid(step)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--step") from None
    try:
        score_table = _read_scores(scores, model_col, func_col, if_list)
        if elo_path is None and is_scored_records(scores):
            raise click.UsageError("scored records carry no Elo rating; pass --elo")
        elo_table = read_model_table(elo_path or scores, elo_model_col or model_col, [elo_col])
        alias_map = read_aliases(aliases) if aliases else {}
        match = corr.match_models(score_table["model"].tolist(), elo_table["model"].tolist(),
                                  alias_map)
    except (InputError, corr.CorrelateError) as exc:
        raise click.ClickException(str(exc)) from None
    _report_unmatched(match, elo_path or scores, show_elo_side=elo_path is not None,
                      require_all=require_all)

    elo_of = dict(zip(elo_table["model"], elo_table[elo_col], strict=True))
    results: dict[str, corr.CorrelationResult] = {}
    per_if: list[dict[str, Any]] = []
    for if_col in if_list:
        rows, incomplete = _complete_rows(match, score_table.set_index("model"), elo_of,
                                          func_col, if_col)
        if incomplete:
            what = escape(f"{func_col}, {if_col} or {elo_col} and are left out of the {if_col}")
            stderr.print(f"[yellow]{len(incomplete)} matched model(s) lack {what} sweep:[/] "
                         + escape(", ".join(incomplete)))
            if require_all:
                raise click.ClickException("incomplete scores: " + ", ".join(incomplete))
        try:
            result = corr.correlate(
                [r["model"] for r in rows], [r["func"] for r in rows], [r["if"] for r in rows],
                [r["elo"] for r in rows], alphas=alphas, n_resamples=n_resamples, seed=seed,
            )
        except corr.CorrelateError as exc:
            raise click.ClickException(f"{if_col}: {exc}") from None
        results[if_col] = result
        _print_correlation(result, if_col)
        per_if.append({
            "if_col": if_col,
            "best": result.best,
            "curve": _curve_records(result),
            "models": rows,
            "incomplete": incomplete,
            "undefined_resamples": result.undefined_resamples,
        })

    if output:
        frames = [r.curve.assign(if_col=k) for k, r in results.items()]
        curves = pd.concat(frames, ignore_index=True)
        curves = curves[["if_col", *[c for c in curves.columns if c != "if_col"]]]
        _write(output, lambda path: curves.to_csv(path, index=False))
        stderr.print(f"curves → {output}")
    if json_path:
        first = per_if[0]
        payload: dict[str, Any] = {
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
            "bootstrap": {"resamples": n_resamples, "seed": seed, "level": 0.95,
                          "unit": "models"},
            "per_if": per_if,
        }
        text = json.dumps(_json_safe(payload), indent=2, ensure_ascii=False) + "\n"
        _write(json_path, lambda path: path.write_text(text, encoding="utf-8"))
        stderr.print(f"JSON → {json_path}")
    if plot_path:
        _write(plot_path, lambda path: correlation_plot(results, path))
        stderr.print(f"correlation plot → {plot_path}")
