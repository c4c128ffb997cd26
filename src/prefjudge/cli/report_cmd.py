"""``prefjudge report``: one self-contained HTML page (and Markdown with PNG files) from scores.

The command parses its options into :class:`~prefjudge.testbed.report_run.ReportSettings`
and calls :func:`~prefjudge.testbed.report_run.report_file`.
"""

from __future__ import annotations

from pathlib import Path

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import DEFAULT_RESAMPLES
from prefjudge.cli.options import (
    bootstrap_option,
    ci_seed_option,
    old_ci_seed_option,
    renamed_option,
)
from prefjudge.cli.runs import check_output
from prefjudge.cli.streams import InputFile, OutputFile, is_stdout, one_stdout, shown, write_output
from prefjudge.reporting import StageError


@main.command("report")
@click.argument("scores", type=InputFile())
@click.option("-o", "--output", type=OutputFile(stdout_ok=True),
              default=Path("report.html"), show_default=True,
              help="HTML page to write (self-contained: plots embedded as base64 PNG; "
                   "- for stdout).")
@click.option("--markdown", type=OutputFile(stdout_ok=True), default=None,
              help="Also write the report as Markdown, its plots as PNG files beside it "
                   "(NAME-SECTION.png, linked; - for stdout: the plots are left out).")
@click.option("--paper", "paper_dir", type=click.Path(exists=True, file_okay=False,
                                                       path_type=Path),
              default=None, help="Folder of the SWE-IF paper's per-model CSVs: rebuild their "
                                 "tables (FR_k, functional scores) in the report.")
@click.option("--min-pairs", type=int, default=5, show_default=True,
              help="Fewest shared samples for an instruction pair in the co-failure matrix.")
@renamed_option("--resamples", "--bootstrap", "bootstrap", type=int)
@bootstrap_option(DEFAULT_RESAMPLES, help="Bootstrap resamples over tasks.")
@old_ci_seed_option
@ci_seed_option
@click.option("--judge-eval", "judge_eval_path", type=click.Path(exists=True, dir_okay=False,
                                                                  path_type=Path),
              default=None, help="A `judge-eval` summary.json: add the judge-bias section "
                                 "(first-shown, longer, more formatted picks beside the humans').")
@click.option("--title", default="prefjudge report", show_default=True, help="Page title.")
def report_command(scores: Path, output: Path, markdown: Path | None, paper_dir: Path | None,
                   min_pairs: int, bootstrap: int, ci_seed: int, title: str,
                   judge_eval_path: Path | None) -> None:
    """Write a report of SCORES (scored JSONL from ``prefjudge score``, or - for stdin).

    Per model and protocol: pass@1, unbiased pass@10 and pass@100 where every task has
    that many samples, EvalPlus's base and plus for HumanEval+/MBPP+ tasks, FR_k,
    instruction- and task-level IF by k with 95 % CIs; IF by position, category and
    instruction; a co-failure matrix; multi-turn retention; a plot for each. One of -o
    and --markdown may be - (stdout).
    """
    from rich.console import Console

    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.testbed.report_run import ReportSettings, report_file

    one_stdout(**{"-o/--output": output, "--markdown": markdown})
    for path, hint in ((output, "-o/--output"), (markdown, "--markdown")):
        if not is_stdout(path):
            check_output(path, hint)
    settings = ReportSettings(
        scores=scores, output=output, markdown=markdown, paper_dir=paper_dir,
        min_pairs=min_pairs, n_resamples=bootstrap, seed=ci_seed, judge_eval=judge_eval_path,
        title=title, source_name=shown(scores),
    )
    try:
        outcome = report_file(settings, ConsoleReporter(Console(stderr=True)))
    except StageError as exc:
        raise click.ClickException(str(exc)) from None
    if outcome.stdout is not None:
        write_output(Path("-"), outcome.stdout)
