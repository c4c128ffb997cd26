"""``prefjudge augment``: add k verifiable instructions to each benchmark task."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import SELECTOR_SAMPLING
from prefjudge.cli.options import backend_options, source_failure, source_options
from prefjudge.cli.runs import force_new_option
from prefjudge.cli.streams import JOURNAL
from prefjudge.reporting import StageError

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.backends import Backend
    from prefjudge.backends.config import BackendConfig


def create_backend(config: BackendConfig) -> Backend:
    """:func:`prefjudge.backends.create_backend` (a module attribute, so tests can replace it)."""
    from prefjudge.backends import create_backend as create

    return create(config)


def _print_summary(summary: Mapping[str, Any], console: Console) -> None:
    from rich.table import Table

    table = Table(title=f"instruction categories ({summary['tasks']} tasks)", title_justify="left")
    table.add_column("category")
    table.add_column("instructions", justify="right")
    table.add_column("share", justify="right")
    for category, count in summary["categories"].items():
        table.add_row(category, str(count), f"{summary['category_share'][category]:.1%}")
    table.add_row("[bold]all[/bold]", str(summary["instructions"]), "")
    console.print(table)
    rate = summary["invalid_param_rate"]
    shown = "n/a (no parameters assigned)" if rate is None else f"{rate:.2%}"
    console.print(
        f"invalid-parameter rate: {shown} "
        f"({summary['param_repaired']} of {summary['param_assignments']} assignments repaired)"
    )
    if summary["short_tasks"]:
        console.print(
            f"[yellow]{len(summary['short_tasks'])} tasks got fewer than k instructions "
            "(not enough applicable, non-conflicting ones)[/yellow]"
        )


@main.command("augment")
@click.argument("tasks_path", metavar="TASKS")
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=JOURNAL,
    help="Augmented task JSONL (appended; rerunning resumes).",
)
@click.option(
    "--k",
    "k",
    type=click.IntRange(1, 30),
    default=5,
    show_default=True,
    help="Instructions chosen per task: one number (`generate --k` then picks how "
    "many of them each prompt uses, e.g. 0..5).",
)
@click.option(
    "--selector",
    type=click.Choice(["rule", "llm"]),
    help="Who chooses: deterministic rules, or the configured model "
    "[default: llm when a model is configured, else rule].",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@source_options("TASKS")
@force_new_option
@backend_options(
    stage="augment",
    sampling=SELECTOR_SAMPLING,
    seed_help="Permutation seed of the selector; with --selector llm also the model's "
    "sampling seed.",
)
def augment(
    tasks_path: str,
    output: str,
    k: int,
    selector: str | None,
    limit: int | None,
    split: str | None,
    subset: str | None,
    force_new: bool,
    backend_config: BackendConfig,
) -> None:
    """Choose k relevant, non-conflicting instructions with parameters for each task.

    TASKS is a BigCodeBench, HumanEval(+), MBPP+, LiveCodeBench or prefjudge task file, a
    dataset folder, or a hub dataset: bigcodebench, humaneval, humanevalplus, mbppplus,
    livecodebench (or OWNER/NAME; hub:OWNER/NAME for any other), with --split and --subset.
    --seed is the permutation seed (default 0; with --selector llm also the sampling seed).
    Writes AugmentedTask JSONL (resumes by task_id) and OUTPUT's .summary.json; prints the
    category distribution and the invalid-parameter rate.
    """
    from rich.console import Console

    from prefjudge.backends import BackendError
    from prefjudge.cli.display import report_usage, stdout
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.scoring.sources import SourceError
    from prefjudge.testbed.augment.run import AugmentSettings, augment_file

    console = Console(stderr=True)
    if selector is None:
        configured = backend_config.model is not None or backend_config.kind == "embedded"
        selector = "llm" if configured else "rule"
    settings = AugmentSettings(
        source=tasks_path,
        output=Path(output),
        selector="llm" if selector == "llm" else "rule",
        k=k,
        seed=backend_config.seed if backend_config.seed is not None else 0,
        limit=limit,
        split=split,
        subset=subset,
        force_new=force_new,
    )
    backend: Backend | None = None
    if settings.selector == "llm":
        settings = replace(settings, sampling=backend_config.sampling(**SELECTOR_SAMPLING))
        try:
            backend = create_backend(backend_config)
        except BackendError as exc:
            raise click.ClickException(str(exc)) from exc
    started = time.monotonic()
    try:
        try:
            outcome = augment_file(settings, backend, ConsoleReporter(console))
        except StageError as exc:
            if backend is not None and isinstance(exc.__cause__, BackendError):
                report_usage(console, backend, started=started)
            if isinstance(exc.__cause__, SourceError):
                raise source_failure(exc.__cause__, "TASKS") from exc.__cause__
            raise click.ClickException(str(exc)) from exc
        if backend is not None and outcome.selector_calls:
            report_usage(console, backend, started=started)
    finally:
        if backend is not None:
            backend.close()
    _print_summary(outcome.summary, stdout)
    console.print(f"wrote {outcome.output} and {outcome.summary_file}")
