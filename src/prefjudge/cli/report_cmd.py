"""``prefjudge report``: one self-contained HTML page (and Markdown) from scored records."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click
from rich.console import Console

from prefjudge.cli import main
from prefjudge.cli.options import (
    bootstrap_option,
    ci_seed_option,
    old_ci_seed_option,
    renamed_option,
)
from prefjudge.cli.runs import check_output
from prefjudge.cli.streams import InputFile, OutputFile, is_stdout, one_stdout, shown, write_output
from prefjudge.io import InputError, read_records
from prefjudge.records import ScoredSample
from prefjudge.scoring.metrics import DEFAULT_RESAMPLES
from prefjudge.testbed.paper_tables import PaperTableError
from prefjudge.testbed.report import build_report, render_html, render_markdown

console = Console(stderr=True)


@main.command("report")
@click.argument("scores", type=InputFile())
@click.option("-o", "--output", type=OutputFile(stdout_ok=True),
              default=Path("report.html"), show_default=True,
              help="HTML page to write (self-contained: plots embedded as base64 PNG; "
                   "- for stdout).")
@click.option("--markdown", type=OutputFile(stdout_ok=True), default=None,
              help="Also write the report as Markdown (plots embedded the same way; "
                   "- for stdout).")
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

    Per model and protocol: pass@1, FR_k, instruction- and task-level IF by k with 95 %
    CIs; IF by position, category and instruction; a co-failure matrix; multi-turn
    retention; a plot for each. One of -o and --markdown may be - (stdout).
    """
    one_stdout(**{"-o/--output": output, "--markdown": markdown})
    for path, hint in ((output, "-o/--output"), (markdown, "--markdown")):
        if not is_stdout(path):
            check_output(path, hint)
    try:
        records, _ = read_records(scores, ScoredSample)
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    if not records and paper_dir is None:  # with --paper, the paper's own tables still show
        raise click.ClickException(f"{shown(scores)}: no scored records in the file (it is empty)")
    judge_summary = None
    if judge_eval_path is not None:
        try:
            judge_summary = json.loads(judge_eval_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"{judge_eval_path}: not a judge-eval summary ({exc})"
                                       ) from None
        if not isinstance(judge_summary, dict) or not isinstance(
                judge_summary.get("methods"), dict):
            raise click.ClickException(f"{judge_eval_path}: not a judge-eval summary.json "
                                       "(no 'methods' object)")
    try:
        report = build_report([rec for _, rec in records], title=title, source=shown(scores),
                              paper_dir=paper_dir, min_pairs=min_pairs, n_resamples=bootstrap,
                              seed=ci_seed, judge_summary=judge_summary)
    except PaperTableError as exc:
        raise click.ClickException(str(exc)) from exc
    except (UnicodeDecodeError, csv.Error) as exc:  # a paper CSV that is not UTF-8 text
        raise click.ClickException(f"{paper_dir}: a paper table cannot be read ({exc})") from exc
    write_output(output, render_html(report), "-o/--output")
    written = [output]
    if markdown:
        write_output(markdown, render_markdown(report), "--markdown")
        written.append(markdown)
    figures = sum(1 for s in report.sections if s.figure)
    names = ", ".join("stdout" if is_stdout(path) else str(path) for path in written)
    console.print(f"wrote {names}: {len(report.sections)} sections, "
                  f"{figures} plots, {len(records)} scored samples")

