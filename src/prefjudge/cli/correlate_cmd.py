"""``prefjudge correlate``: which blend of Func and IF best predicts Elo (the α sweep)."""

from __future__ import annotations

import math
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.cli import main
from prefjudge.cli.display import stdout as stdout_console
from prefjudge.cli.options import bootstrap_option, ci_seed_option, old_ci_seed_option
from prefjudge.cli.runs import check_output
from prefjudge.cli.streams import (
    InputFile,
    OutputFile,
    is_stdout,
    one_stdout,
    shown,
    write_output,
)
from prefjudge.io import InputError
from prefjudge.plots.ranking import correlation_plot
from prefjudge.ranking import correlate as corr
from prefjudge.ranking.inputs import is_scored_records, read_aliases, read_model_table
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

stderr = Console(stderr=True)


def _print_correlation(console: Console, result: corr.CorrelationResult, if_col: str) -> None:
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
    console.print(table)
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
    console.print(summary)


def _report_unmatched(
    match: corr.ModelMatch, elo_source: str, *, show_elo_side: bool, require_all: bool
) -> None:
    if match.unmatched_scores:
        stderr.print(f"[yellow]no Elo rating in {escape(elo_source)} for "
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
    if_list = list(if_cols) or ["if"]
    piped = one_stdout(**{"-o/--output": output, "--json": json_path})
    for path, hint in ((output, "-o/--output"), (json_path, "--json"), (plot_path, "--plot")):
        if not is_stdout(path):
            check_output(path, hint)
    try:
        alphas = corr.alpha_grid(step)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--step") from None
    try:
        score_table = read_scores(scores, model_col, func_col, if_list)
        if elo_path is None and is_scored_records(scores):
            raise click.UsageError("scored records carry no Elo rating; pass --elo")
        elo_table = read_model_table(elo_path or scores, elo_model_col or model_col, [elo_col])
        alias_map = read_aliases(aliases) if aliases else {}
        match = corr.match_models(score_table["model"].tolist(), elo_table["model"].tolist(),
                                  alias_map)
    except ScoreColumnsError as exc:
        raise click.UsageError(str(exc)) from None
    except (InputError, corr.CorrelateError) as exc:
        raise click.ClickException(str(exc)) from None
    _report_unmatched(match, shown(elo_path or scores), show_elo_side=elo_path is not None,
                      require_all=require_all)

    tables = stderr if piped else stdout_console  # stdout carries the file asked for
    elo_of = dict(zip(elo_table["model"], elo_table[elo_col], strict=True))
    by_model = score_table.set_index("model")
    sweeps: list[Sweep] = []
    for if_col in if_list:
        joined = complete_rows(match, by_model, elo_of, func_col, if_col)
        if joined.incomplete:
            what = escape(f"{func_col}, {if_col} or {elo_col} and are left out of the {if_col}")
            stderr.print(f"[yellow]{len(joined.incomplete)} matched model(s) lack {what} sweep:[/] "
                         + escape(", ".join(joined.incomplete)))
            if require_all:
                raise click.ClickException("incomplete scores: " + ", ".join(joined.incomplete))
        try:
            result = correlate_joined(joined, alphas=alphas, n_resamples=bootstrap, seed=ci_seed)
        except corr.CorrelateError as exc:
            raise click.ClickException(f"{if_col}: {exc}") from None
        sweeps.append(Sweep(if_col, result, joined))
        _print_correlation(tables, result, if_col)

    if output:
        write_output(output, curves_frame(sweeps).to_csv(index=False), "-o/--output")
        if not is_stdout(output):
            stderr.print(f"curves → {output}")
    if json_path:
        payload = correlate_payload(sweeps, match, func_col=func_col, elo_col=elo_col,
                                    n_resamples=bootstrap, seed=ci_seed)
        write_output(json_path, dumps(payload), "--json")
        if not is_stdout(json_path):
            stderr.print(f"JSON → {json_path}")
    if plot_path:
        try:
            correlation_plot({s.if_col: s.result for s in sweeps}, plot_path)
        except OSError as exc:
            raise click.ClickException(f"cannot write {plot_path}: {exc.strerror or exc}") from None
        stderr.print(f"correlation plot → {plot_path}")
