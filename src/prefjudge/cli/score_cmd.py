"""``prefjudge score``: verify instructions and run unit tests for every generation."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape

from prefjudge.cli import main
from prefjudge.cli.display import print_frame, progress_bars
from prefjudge.cli.engine_options import engine_options, print_nodes, ray_settings
from prefjudge.cli.options import (
    bootstrap_option,
    ci_seed_option,
    old_ci_seed_option,
    renamed_option,
    source_failure,
    source_options,
)
from prefjudge.cli.runs import force_new_option, open_journal
from prefjudge.cli.streams import JOURNAL, InputFile, OutputFile, is_stdin, shown
from prefjudge.io import InputError, summary_path
from prefjudge.journal import Journal
from prefjudge.records import ScoredSample, Task, model_name_warnings
from prefjudge.sandbox import SandboxLimits, harness_digest, isolation_line, isolation_report
from prefjudge.sandbox.zygote import zygote_default
from prefjudge.scale.ray_engine import (
    RayEngineError,
    RayRun,
    RaySettings,
    connect,
    ray_score_batches,
)
from prefjudge.scoring.formats import SampleFormatWarning
from prefjudge.scoring.profiles import DEFAULT_PROFILE, PROFILES, get_profile
from prefjudge.scoring.rows import sample_row
from prefjudge.scoring.score import has_tests, prepare_job, score_batches
from prefjudge.scoring.sources import SourceError, open_task_source
from prefjudge.scoring.verify import ruff_version
from prefjudge.scoring.verify.process import VerifyProcess
from prefjudge.stats import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    import pandas as pd

console = Console(stderr=True)


def _load_all_tasks(
    task_files: tuple[str, ...], generations: Path, split: str | None, subset: str | None
) -> tuple[dict[str, Task], str, list[Path], list[dict]]:
    """Load ``--tasks`` sources, or the ``tasks.jsonl`` beside the generations file.

    Returns the tasks, where they came from (printed), the local files to bind as inputs,
    and the identities of the hub datasets and folders among the sources (bound as a
    setting: they have no file to hash).
    """
    sources: list[str] = list(task_files)
    origin = "--tasks"
    if not sources:
        if is_stdin(generations):
            return {}, "none (GENERATIONS is stdin: name the tasks with --tasks)", [], []
        sibling = generations.parent / "tasks.jsonl"
        if not sibling.exists():
            return {}, "none", [], []
        sources, origin = [str(sibling)], "tasks.jsonl beside the generations file"
    tasks: dict[str, Task] = {}
    paths: list[Path] = []
    identities: list[dict] = []
    labels: list[str] = []
    for source in sources:
        try:
            loaded, where = open_task_source(source, split=split, subset=subset)
        except SourceError as exc:
            raise source_failure(exc, "--tasks") from exc
        paths.extend(where.paths)
        if where.identity:
            identities.append(dict(where.identity))
        labels.append(where.label)
        for task_id, task in loaded.items():
            if task_id in tasks:
                raise click.UsageError(f"task {task_id!r} appears in more than one --tasks file")
            tasks[task_id] = task
    names = ", ".join(labels)
    return tasks, f"{len(tasks)} tasks from {names} ({origin})", paths, identities


@main.command("score")
@click.argument("generations", type=InputFile())
@click.option("-o", "--output", type=JOURNAL,
              default=Path("scores.jsonl"), show_default=True,
              help="Scored records (JSONL), written as they finish; rerunning resumes.")
@click.option("--tasks", "task_files", multiple=True, metavar="FILE|DATASET",
              help="Tasks with tests: BigCodeBench, HumanEval, HumanEval+, MBPP+ files as "
                   "distributed (.jsonl/.jsonl.gz) or prefjudge task JSONL, a dataset folder, "
                   "or a hub dataset (bigcodebench, humaneval, humanevalplus, mbppplus, "
                   "livecodebench; hub:OWNER/NAME for another). Repeatable. "
                   "[default: tasks.jsonl beside GENERATIONS, if present]")
@source_options("--tasks")
@click.option("--skip-invalid", is_flag=True,
              help="Score the valid lines and list the invalid ones instead of stopping.")
@click.option("--no-tests", is_flag=True, help="Only verify instructions; skip unit tests.")
@click.option("--profile", type=click.Choice(sorted(PROFILES)), default=DEFAULT_PROFILE,
              show_default=True,
              help="Verification profile: 'reference' gives the SWE-IF authors' verdicts "
                   "(first fenced block, # noqa honoured, Ruff defaults); 'strict' is "
                   "hardened (last Python block, noqa ignored, PEP 8 79/72, py311). "
                   "Recorded in every record; one output never mixes profiles.")
@click.option("--model", "model_name", default=None,
              help="Model name for sample files without one (EvalPlus, BigCodeBench, "
                   "SWE-IF formats); default: the file name.")
@click.option("--workers", type=int, default=None,
              help="Parallel Ruff groups and sandboxes (the local engine; on Ray, "
                   "--shard-cpus) [default: CPU count].")
@renamed_option("--timeout", "--test-timeout", "test_timeout", type=float,
                note="the sandbox wall time of each sample's tests")
@click.option("--test-timeout", "test_timeout", type=float, default=SandboxLimits().timeout_s,
              show_default=True, help="Wall-clock seconds per sample's test run.")
@click.option("--memory-mb", type=int, default=SandboxLimits().memory_mb, show_default=True,
              help="Address-space limit per sample's test run.")
@click.option("--zygote/--no-zygote", "zygote", default=None,
              help="Fork each test run from a per-worker zygote that imported the tests' "
                   "libraries once (much cheaper; same outcomes), or start a fresh process "
                   "per run [default: zygote, unless PREFJUDGE_SANDBOX_ZYGOTE=0].")
@click.option("--preload", "preload", multiple=True, metavar="MODULE",
              help="A module the zygotes import besides those the tasks' own files import "
                   "(repeatable).")
@bootstrap_option(DEFAULT_RESAMPLES, help="Task-bootstrap resamples for the intervals.")
@old_ci_seed_option
@ci_seed_option
@click.option("--summary", "summary_prefix",
              type=OutputFile(why="it is the prefix of three files (.csv, .json, .png)"),
              default=None, help="Prefix for the summary files (.csv, .json, .png) "
                                 "[default: OUTPUT without its extension + '.summary'].")
@engine_options
@force_new_option
def score_command(
    generations: Path,
    output: Path,
    task_files: tuple[str, ...],
    split: str | None,
    subset: str | None,
    skip_invalid: bool,
    no_tests: bool,
    profile: str,
    model_name: str | None,
    workers: int | None,
    test_timeout: float,
    memory_mb: int,
    zygote: bool | None,
    preload: tuple[str, ...],
    bootstrap: int,
    ci_seed: int,
    summary_prefix: Path | None,
    engine: str,
    address: str,
    allow_degraded: bool,
    shard_size: int,
    shard_cpus: int,
    max_in_flight: int | None,
    force_new: bool,
) -> None:
    """Score GENERATIONS (JSONL, or - for stdin): instruction checks and sandboxed unit tests.

    Prints a per-model table (instruction-level IF, task-level IF, pass@1, each with a
    95 % task-bootstrap CI, and counts of errors and timeouts) and writes one scored
    record per generation to OUTPUT. Rerunning with the same OUTPUT resumes; OUTPUT is
    locked while a run writes it and bound to its inputs and settings (OUTPUT.journal.json).

    With --engine ray, shards of --shard-size generations are scored on the nodes of a Ray
    cluster that can sandbox (probed first); the records are the same as a local run's,
    plus meta.node (where each was scored), written as shards finish.
    """
    try:
        tasks, tasks_origin, task_paths, task_sources = _load_all_tasks(
            task_files, generations, split, subset)
        verifier = _early_verifier(generations, not no_tests and bool(tasks),
                                   workers or os.cpu_count(), profile)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SampleFormatWarning)
            job = prepare_job(generations, tasks, skip_invalid=skip_invalid, model=model_name)
    except InputError as exc:
        raise click.ClickException(f"{exc}\nNothing was scored (use --skip-invalid to score "
                                   "the valid lines).") from exc
    if not job.generations and not job.skipped:
        raise click.ClickException(
            f"{shown(generations)}: no generation records (the file is empty)"
        )
    for warning in caught:
        if issubclass(warning.category, SampleFormatWarning):
            console.print(f"[yellow]warning: {escape(str(warning.message))}[/]")
    console.print(f"[bold]tasks:[/] {escape(tasks_origin)}")
    console.print(f"[bold]profile:[/] {profile} — {escape(get_profile(profile).summary)}")
    for warning in model_name_warnings({gen.model for _, gen in job.generations}):
        console.print(f"[yellow]warning: {shown(generations)}: {escape(warning)}[/]")
    if job.skipped:
        console.print(f"[yellow]skipped {len(job.skipped)} invalid input problem(s):[/]")
        for issue in job.skipped:
            console.print(f"  [yellow]{issue}[/]")

    tests_on = not no_tests and bool(tasks)
    ray_run = None
    if engine == "ray":
        ray_run = _connect_ray(ray_settings(address, allow_degraded, shard_size, shard_cpus,
                                            max_in_flight), tests_on)
    isolation = isolation_mode = ""
    if ray_run is not None:
        isolation_mode = ray_run.acceptance.modes() if tests_on else ""
        isolation = (f"Ray: {len(ray_run.acceptance.accepted)} node(s), {isolation_mode}"
                     if tests_on else "")
    elif tests_on:
        report = isolation_report()
        isolation_mode = str(report["mode"])
        use_zygote = zygote_default() if zygote is None else zygote
        isolation = isolation_line(report, use_zygote)
        if report["isolated"]:
            console.print(f"[green]sandbox: {isolation}[/]")
        else:
            console.print(f"[bold red]sandbox: {report['warning'] or isolation}[/]")
            for item in report["not_enforced"]:
                console.print(f"[bold red]  not enforced: {item}[/]")

    limits = SandboxLimits(timeout_s=test_timeout, memory_mb=memory_mb)
    journal = Journal(
        output, ScoredSample, lambda rec: str(rec.meta.get("key")), stage="score",
        inputs={"generations": generations, "tasks": task_paths},
        settings={"tests": tests_on, "timeout_s": test_timeout,
                  "memory_mb": memory_mb, "ruff_version": ruff_version(),
                  "sandbox": isolation_mode, "harness": harness_digest(), "profile": profile,
                  "model": model_name,
                  **({"tasks_sources": task_sources} if task_sources else {})},
        force_new=force_new,
    )
    if ray_run is not None:
        click.get_current_context().call_on_close(ray_run.close)
    with open_journal(journal, console):
        loading = _load_summary_meanwhile()
        done = set(journal.done)
        todo = sum(key not in done for key in job.keys)
        if journal.resumed:
            console.print(f"resuming {output}: {len(job.keys) - todo} already scored, "
                          f"{todo} to go")
        with_tests = 0 if no_tests else sum(
            1 for key, (_, gen) in zip(job.keys, job.generations, strict=True)
            if key not in done and has_tests(gen, tasks)
        )
        scored: list[tuple[object, tuple]] = []
        with progress_bars(console, transient=False) as progress:
            bars = {"verify": progress.add_task("instructions", total=todo)}
            if with_tests:
                bars["tests"] = progress.add_task("unit tests  ", total=with_tests)
            advance = lambda phase, n: progress.advance(bars[phase], n)  # noqa: E731
            if ray_run is None:
                batches = score_batches(
                    job, done=done, workers=workers or os.cpu_count(), limits=limits,
                    run_tests=not no_tests, isolation=isolation, profile=profile,
                    separate_process=verifier, zygote=zygote, preload=preload,
                    on_progress=advance)
            else:
                batches = ray_score_batches(
                    ray_run, job.keys, [gen for _, gen in job.generations],
                    tasks if tests_on else {}, done=done, limits=limits, profile=profile,
                    zygote=zygote, preload=preload, on_progress=advance,
                    on_event=lambda line: progress.console.print(
                        f"[yellow]{escape(line)}[/]"))
            try:
                for batch in batches:
                    # Written, then let go: the summary needs only a small row per record, so
                    # memory does not grow by a whole record (response, results) per
                    # generation.
                    journal.write_many(batch, keep=False)
                    scored += [(record.meta.get("key"), sample_row(record)) for record in batch]
            except RayEngineError as exc:
                raise click.ClickException(
                    f"{exc}\n{len(scored)} record(s) scored in this run are in {output}; "
                    "rerun the command to resume.") from exc
        # The summary's rows, in the output's order: the records it held, then the new ones.
        wanted = set(job.keys)
        rows = [sample_row(rec) for rec in journal.done.values() if rec.meta.get("key") in wanted]
        rows += [row for key, row in scored if key in wanted]
        del scored
    loading.join()
    from prefjudge.plots.score import save_summary_plot
    from prefjudge.scoring.metrics import model_summary, rows_frame

    summary = model_summary(rows_frame(rows), n_resamples=bootstrap, seed=ci_seed)
    source = shown(generations)
    print_frame(summary_table(summary),
                title=f"prefjudge score — {Path(source).name} — profile {profile}")
    prefix = summary_prefix or summary_path(output)
    summary.assign(profile=profile).to_csv(Path(f"{prefix}.csv"), index=False)
    Path(f"{prefix}.json").write_text(
        json.dumps({"generations": source, "tasks": tasks_origin, "seed": ci_seed,
                    "bootstrap": bootstrap, "profile": profile,
                    "ruff_version": ruff_version(),
                    "sandbox": isolation, "engine": _engine_summary(ray_run),
                    "models": summary.to_dict(orient="records")},
                   indent=2, default=float)
    )
    save_summary_plot(summary, Path(f"{prefix}.png"))
    console.print(f"wrote {output} ({len(rows)} records), {prefix}.csv/.json/.png")
    if summary["check_errors"].sum() or summary["func_error"].sum():
        console.print("[yellow]some checks or test runs ended in error: they are counted apart, "
                      "not as failures — see the 'reason'/'detail' fields.[/]")


def _engine_summary(run: RayRun | None) -> dict[str, object]:
    """Where the scoring ran, for the summary file: local, or the Ray nodes and their modes."""
    if run is None:
        return {"name": "local"}
    return {"name": "ray", "address": run.settings.address,
            "shard_size": run.settings.shard_size, "cpus_per_shard": run.settings.cpus_per_shard,
            "nodes": [{"id": node.short_id, "host": node.host, "mode": node.mode,
                       "shards_at_once": run.acceptance.capacity[node.node_id],
                       "versions": dict(node.versions)} for node in run.acceptance.accepted],
            "refused": [{"id": node.short_id, "host": node.host, "mode": node.mode,
                         "why": why} for node, why in run.acceptance.refused]}


def _connect_ray(settings: RaySettings, tests: bool) -> RayRun:
    """Connect to the Ray cluster and print its nodes; a clear error when none can score."""
    try:
        run = connect(settings, tests=tests)
    except RayEngineError as exc:
        raise click.ClickException(f"{exc}\nNothing was scored.") from exc
    print_nodes(run, console)
    return run


EARLY_VERIFIER_BYTES = 1_000_000
"""Inputs from this size (about 1,000 generations) are verified in a second process started
before the file is read (see :mod:`prefjudge.scoring.verify.process`)."""


def _early_verifier(
    generations: Path, tests: bool, workers: int | None, profile: str
) -> VerifyProcess | None:
    """A verification process, started now, for a large input scored without unit tests.

    Its start-up then overlaps reading and validating the input. Smaller inputs and stdin
    are left to :func:`~prefjudge.scoring.score.score_batches`, which starts one itself
    when the run has more than one chunk. The process ends with the command.
    """
    if tests or is_stdin(generations):
        return None
    try:
        if os.stat(generations).st_size < EARLY_VERIFIER_BYTES:
            return None
    except OSError:  # reading it reports the problem
        return None
    verifier = VerifyProcess(workers=workers, profile=profile)
    click.get_current_context().call_on_close(verifier.close)
    return verifier


def _load_summary_meanwhile() -> threading.Thread:
    """Import what the summary needs (pandas, matplotlib: a second of CPU) while scoring runs.

    Scoring mostly waits on Ruff, the verification process or unit tests; the summary and
    its plot are the last step, and without this their imports would come after
    everything else. Not a daemon thread: an import is never cut off at exit. A failed
    import is left to the summary, which imports again and reports it.
    """

    def load() -> None:
        with contextlib.suppress(Exception):
            import prefjudge.plots.score
            import prefjudge.scoring.metrics

            prefjudge.plots.pyplot()

    thread = threading.Thread(target=load, name="prefjudge-load-summary")
    thread.start()
    return thread


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Format the model summary for printing: values with their 95 % CIs."""
    import pandas as pd

    def fmt(row: pd.Series, name: str) -> str:
        value = row[name]
        if pd.isna(value):
            return "—"
        return f"{value:.3f} [{row[f'{name}_lower']:.3f}, {row[f'{name}_upper']:.3f}]"

    rows = []
    for _, row in summary.iterrows():
        rows.append({
            "model": row["model"],
            "n": int(row["n"]),
            "IF instr. [95% CI]": fmt(row, "if_instruction"),
            "IF task [95% CI]": fmt(row, "if_task"),
            "pass@1 [95% CI]": fmt(row, "pass1"),
            "check err": int(row["check_errors"]),
            "timeouts": int(row["func_timeout"]),
            "test err": int(row["func_error"]),
        })
    return pd.DataFrame(rows)
