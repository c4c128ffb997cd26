"""``prefjudge augment``: add k verifiable instructions to each benchmark task."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from prefjudge.backends import Backend, BackendError, Sampling, create_backend
from prefjudge.backends.config import BackendConfig
from prefjudge.cli import main
from prefjudge.cli.display import backend_progress, report_usage, stdout
from prefjudge.cli.options import backend_options, source_failure, source_options
from prefjudge.cli.runs import force_new_option, open_journal
from prefjudge.cli.streams import JOURNAL
from prefjudge.io import InputError, summary_path
from prefjudge.journal import Journal, content_digest, model_settings
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, Task
from prefjudge.scoring.sources import SourceError, open_task_source
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.testbed.augment import dumps_summary, select_llm, select_rule, summarize

LLM_CHUNK = 64
SAMPLING = {"max_tokens": 512, "seed": 0}


def _print_summary(summary: dict, console: Console) -> None:
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
@click.option("-o", "--output", "output", required=True, type=JOURNAL,
              help="Augmented task JSONL (appended; rerunning resumes).")
@click.option("--k", "k", type=click.IntRange(1, 30), default=5, show_default=True,
              help="Instructions chosen per task: one number (`generate --k` then picks how "
              "many of them each prompt uses, e.g. 0..5).")
@click.option("--selector", type=click.Choice(["rule", "llm"]),
              help="Who chooses: deterministic rules, or the configured model "
              "[default: llm when a model is configured, else rule].")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@source_options("TASKS")
@force_new_option
@backend_options(
    stage="augment",
    sampling=SAMPLING,
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
    console = Console(stderr=True)
    seed = backend_config.seed if backend_config.seed is not None else 0
    if selector is None:
        configured = backend_config.model is not None or backend_config.kind == "embedded"
        selector = "llm" if configured else "rule"
    try:
        loaded, origin = open_task_source(tasks_path, split=split, subset=subset, limit=limit)
    except SourceError as exc:
        raise source_failure(exc, "TASKS") from exc
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    tasks: list[Task] = list(loaded.values())
    out = Path(output)
    taxonomy = load_taxonomy()
    backend = None
    if selector == "llm":
        try:
            backend = create_backend(backend_config)
        except BackendError as exc:
            raise click.ClickException(str(exc)) from exc
    settings: dict[str, object] = {
        "k": k, "seed": seed, "selector": selector,
        "taxonomy": content_digest(data_dir("rubrics") / "vericode.yaml"),
    }
    if origin.identity:  # a hub dataset or folder: no input file to hash
        settings["tasks_source"] = dict(origin.identity)
    if backend is not None:
        sampling = backend_config.sampling(**SAMPLING)
        settings.update(model_settings(backend, sampling))
        settings["prompt"] = content_digest(data_dir("rubrics") / "prompts" / "augment_selector.md")
    journal = Journal(out, AugmentedTask, lambda record: record.task_id, stage="augment",
                      inputs={"tasks": list(origin.paths)}, settings=settings,
                      force_new=force_new)
    try:
        with open_journal(journal, console):
            todo = [task for task in tasks if task.task_id not in journal.done]
            if journal.resumed:
                console.print(f"resuming: {len(journal.done)} tasks already in {out}, "
                              f"{len(todo)} to do")
            if backend is None:
                for task in todo:
                    journal.write(select_rule(task, k, seed, taxonomy))
            elif todo:
                _run_llm(todo, backend, sampling, k, seed, taxonomy, journal, console)
            wanted = {task.task_id for task in tasks}
            records = [r for r in journal.records() if r.task_id in wanted]
    finally:
        if backend is not None:
            backend.close()
    summary = summarize(records, taxonomy)
    shown_tasks = origin.label if origin.identity else tasks_path
    summary.update({"k": k, "seed": seed, "selector": selector, "tasks_file": shown_tasks})
    summary_path(out, ".json").write_text(dumps_summary(summary) + "\n", encoding="utf-8")
    _print_summary(summary, stdout)
    console.print(f"wrote {out} and {summary_path(out, '.json')}")


def _run_llm(
    todo: list[Task],
    backend: Backend,
    sampling: Sampling,
    k: int,
    seed: int,
    taxonomy: Taxonomy,
    journal: Journal[AugmentedTask],
    console: Console,
) -> None:
    started = time.monotonic()
    try:
        with backend_progress(console, len(todo), "selector calls") as advance:
            for start in range(0, len(todo), LLM_CHUNK):
                chunk = todo[start : start + LLM_CHUNK]
                for record in select_llm(
                    chunk, backend, k=k, seed=seed, taxonomy=taxonomy,
                    sampling=sampling, on_result=advance,
                ):
                    journal.write(record)
    except BackendError as exc:
        raise click.ClickException(f"{exc} (tasks written so far are kept)") from exc
    finally:
        report_usage(console, backend, started=started)
