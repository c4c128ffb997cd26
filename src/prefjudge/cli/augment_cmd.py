"""``prefjudge augment``: add k verifiable instructions to each benchmark task."""

from __future__ import annotations

import time
from pathlib import Path

import click
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from prefjudge.augment import dumps_summary, select_llm, select_rule, summarize
from prefjudge.backends import BackendError, create_backend
from prefjudge.benchmarks import load_tasks
from prefjudge.cli import main
from prefjudge.cli.tables import stdout
from prefjudge.config import BackendConfig, backend_options, backend_progress, report_usage
from prefjudge.io import InputError, JsonlAppender, read_existing, summary_path
from prefjudge.records import AugmentedTask, Task
from prefjudge.taxonomy import load_taxonomy

LLM_CHUNK = 64


def _resume(out: Path, k: int, seed: int) -> dict[str, AugmentedTask]:
    done: dict[str, AugmentedTask] = {}
    for number, data in enumerate(read_existing(out), start=1):
        try:
            record = AugmentedTask.model_validate(data)
        except ValidationError as exc:
            raise click.ClickException(f"{out}:{number}: not an augmented task: {exc}") from exc
        stats = record.metadata.get("augment", {})
        if record.selector_seed != seed or stats.get("k", k) != k:
            raise click.ClickException(
                f"{out} was made with seed {record.selector_seed} and k {stats.get('k')}; "
                f"this run has seed {seed} and k {k}: use another -o"
            )
        done[record.task_id] = record
    return done


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
@click.argument("tasks_path", metavar="TASKS", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Augmented task JSONL (appended; rerun to resume).")
@click.option("--k", "k", type=click.IntRange(1, 30), default=5, show_default=True,
              help="Instructions per task.")
@click.option("--selector", type=click.Choice(["rule", "llm"]),
              help="Who chooses: deterministic rules, or the configured model "
              "[llm when a model is configured, else rule].")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@backend_options(stage="augment")
def augment(
    tasks_path: str,
    output: str,
    k: int,
    selector: str | None,
    limit: int | None,
    backend_config: BackendConfig,
) -> None:
    """Choose k relevant, non-conflicting instructions with parameters for each task.

    TASKS is a BigCodeBench, HumanEval(+), MBPP+, LiveCodeBench or prefjudge task file.
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
        tasks: list[Task] = list(load_tasks(tasks_path).values())
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    if limit is not None:
        tasks = tasks[:limit]
    out = Path(output)
    done = _resume(out, k, seed)
    todo = [task for task in tasks if task.task_id not in done]
    if done:
        console.print(f"resuming: {len(done)} tasks already in {out}, {len(todo)} to do")
    taxonomy = load_taxonomy()
    new: list[AugmentedTask] = []
    with JsonlAppender(out) as writer:
        if selector == "rule":
            for task in todo:
                record = select_rule(task, k, seed, taxonomy)
                writer.write(record)
                new.append(record)
        elif todo:
            _run_llm(todo, backend_config, k, seed, taxonomy, writer, new, console)
    wanted = {task.task_id for task in tasks}
    records = [r for r in done.values() if r.task_id in wanted] + new
    summary = summarize(records, taxonomy)
    summary.update({"k": k, "seed": seed, "selector": selector, "tasks_file": tasks_path})
    summary_path(out, ".json").write_text(dumps_summary(summary) + "\n", encoding="utf-8")
    _print_summary(summary, stdout)
    console.print(f"wrote {out} and {summary_path(out, '.json')}")


def _run_llm(
    todo: list[Task],
    config: BackendConfig,
    k: int,
    seed: int,
    taxonomy: object,
    writer: JsonlAppender,
    new: list[AugmentedTask],
    console: Console,
) -> None:
    started = time.monotonic()
    try:
        backend = create_backend(config)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        sampling = config.sampling(max_tokens=512, seed=seed)
        with backend_progress(console, len(todo), "selector calls") as advance:
            for start in range(0, len(todo), LLM_CHUNK):
                chunk = todo[start : start + LLM_CHUNK]
                for record in select_llm(
                    chunk, backend, k=k, seed=seed, taxonomy=taxonomy,  # type: ignore[arg-type]
                    sampling=sampling, on_result=advance,
                ):
                    writer.write(record)
                    new.append(record)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        report_usage(console, backend, started=started)
        backend.close()
