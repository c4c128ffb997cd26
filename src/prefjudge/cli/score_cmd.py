"""``prefjudge score``: verify instructions and run unit tests for every generation.

The command parses its options into :class:`~prefjudge.scoring.run.ScoreSettings` and calls
:func:`~prefjudge.scoring.run.score_file`, which does the work and reports through a
:class:`~prefjudge.cli.reporter.ConsoleReporter`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import DEFAULT_RESAMPLES, HARNESS_HELP
from prefjudge.cli.engine_options import engine_options, scoring_engine
from prefjudge.cli.options import (
    bootstrap_option,
    ci_seed_option,
    old_ci_seed_option,
    renamed_option,
    source_options,
)
from prefjudge.cli.runs import force_new_option
from prefjudge.cli.streams import JOURNAL, InputFile, OutputFile, is_stdin
from prefjudge.reporting import StageError
from prefjudge.scoring.profiles import DEFAULT_PROFILE, PROFILES

if TYPE_CHECKING:
    from prefjudge.scoring.export import ExportTarget


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
@click.option("--test-timeout", "test_timeout", type=float, default=None,
              help="Wall-clock seconds per sample's test run "
                   f"[default: {HARNESS_HELP}].")
@click.option("--memory-mb", type=int, default=None,
              help="Address-space limit per sample's test run, in MiB "
                   "[default: the task format's own harness's, as above].")
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
@click.option("--export", "exports", multiple=True, metavar="FORMAT=DIR",
              callback=lambda _ctx, _param, values: _export_targets(values),
              help="Also write the results as a peer writes them, into DIR: 'evalplus' "
                   "(HumanEval+/MBPP+ tasks: DATASET/MODEL.jsonl and "
                   "MODEL_eval_results.json, as evalplus.evaluate) or 'bigcodebench' "
                   "(BigCodeBench tasks: MODEL--bigcodebench-SPLIT--prefjudge_eval_results"
                   ".json and _pass_at_k.json, as bigcodebench.evaluate). Repeatable; a "
                   "finished OUTPUT is exported without scoring anything again.")
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
    profile: Literal["reference", "strict"],
    model_name: str | None,
    workers: int | None,
    test_timeout: float,
    memory_mb: int,
    zygote: bool | None,
    preload: tuple[str, ...],
    bootstrap: int,
    ci_seed: int,
    summary_prefix: Path | None,
    engine: Literal["local", "ray"],
    address: str,
    allow_degraded: bool,
    shard_size: int | None,
    shard_cpus: int,
    max_in_flight: int | None,
    force_new: bool,
    exports: tuple[ExportTarget, ...],
) -> None:
    """Score GENERATIONS (JSONL, or - for stdin): instruction checks and sandboxed unit tests.

    Prints a per-model table (instruction-level IF, task-level IF, pass@1, each with a
    95 % task-bootstrap CI; EvalPlus's base and plus pass@1 for HumanEval+/MBPP+ tasks;
    unbiased pass@10 and pass@100 where every task has that many samples; and counts of
    errors and timeouts) and writes one scored record per generation to OUTPUT. With
    --export, also writes the result files EvalPlus or BigCodeBench write. Rerunning
    with the same OUTPUT resumes; OUTPUT is locked while a run writes it and bound to its
    inputs and settings (OUTPUT.journal.json).

    With --engine ray, shards of --shard-size generations are scored on the nodes of a Ray
    cluster that can sandbox (probed first); the records are the same as a local run's,
    plus meta.node (where each was scored), written as shards finish.
    """
    from prefjudge.scoring.run import ScoreSettings, ScoreUsageError, early_verifier, score_file

    settings = ScoreSettings(
        generations=generations, output=output, tasks=task_files, split=split, subset=subset,
        skip_invalid=skip_invalid, no_tests=no_tests, profile=profile,
        model=model_name, workers=workers, test_timeout=test_timeout, memory_mb=memory_mb,
        zygote=zygote, preload=preload, bootstrap=bootstrap, ci_seed=ci_seed,
        summary_prefix=summary_prefix,
        engine=scoring_engine(engine, address, allow_degraded, shard_size, shard_cpus,
                              max_in_flight),
        force_new=force_new, stdin=is_stdin(generations), exports=exports,
    )
    # Before anything heavy is imported: the process's start-up overlaps all of it.
    verifier = early_verifier(settings)
    freeze_at_exit()
    try:
        from prefjudge.cli.reporter import ConsoleReporter
        from prefjudge.scoring.export import ExportError

        try:
            score_file(settings, ConsoleReporter(), verifier=verifier)
        except ScoreUsageError as exc:
            if exc.param_hint:
                raise click.BadParameter(str(exc), param_hint=exc.param_hint) from exc
            raise click.UsageError(str(exc)) from exc
        except ExportError as exc:
            raise click.BadParameter(str(exc), param_hint=exc.param_hint) from exc
        except StageError as exc:
            raise click.ClickException(str(exc)) from exc
    finally:
        if verifier is not None:  # score_file closed it, unless it never began
            verifier.close()


_FREEZING: list[bool] = []


def freeze_at_exit() -> None:
    """Spare the interpreter's exit its garbage collections over everything still alive.

    When the interpreter ends, it collects garbage several times while it tears the
    modules down: each collection walks every object the run left alive (pandas,
    matplotlib, the records' models: a third of a second after a large run), only to free
    memory the process gives back anyway. At exit (after the command and every cleanup
    before it), :func:`gc.freeze` moves those objects out of the collector's sight; they
    are still freed as their modules are cleared. Registered once per process, so a
    process that runs commands in turn (the tests) freezes only when it ends.
    """
    if not _FREEZING:
        import atexit
        import gc

        atexit.register(gc.freeze)
        _FREEZING.append(True)


def _export_targets(values: tuple[str, ...]) -> tuple[ExportTarget, ...]:
    """Parse every ``--export FORMAT=DIR`` (a usage error names the bad one)."""
    if not values:
        return ()
    from prefjudge.scoring.export import parse_target

    try:
        return tuple(parse_target(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--export") from exc
