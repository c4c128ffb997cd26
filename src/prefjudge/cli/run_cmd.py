"""``prefjudge run``: one experiment file, from models to leaderboard."""

from __future__ import annotations

from pathlib import Path

import click

from prefjudge.cli import main
from prefjudge.cli.engine_options import engine_options, judging_engine, scoring_engine
from prefjudge.reporting import StageError


@main.command("run")
@click.argument("experiment_file", metavar="EXPERIMENT", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True,
              help="Print the stages with the model requests each makes (failed ones apart) "
                   "and check that each backend's libraries are installed; run nothing.")
@click.option("--retry-errors", is_flag=True,
              help="Make the failed model requests of every stage again (generations, "
                   "verdicts) and no other model call; redo only what depends on them.")
@engine_options
def run_command(experiment_file: str, dry_run: bool, retry_errors: bool, engine: str,
                address: str, allow_degraded: bool, shard_size: int | None, shard_cpus: int,
                max_in_flight: int | None) -> None:
    """Run EXPERIMENT (a TOML file): augment → generate → score → judge → rank → report.

    Each stage is the use case of the command of the same name, writing into
    results/<experiment>/ with its own journal: a rerun resumes where the last one stopped
    and, once everything is finished, makes no model call; a changed model gets new files
    and its pairs are judged again, the rest is kept. Stages that ask the same model share
    one backend (the embedded model starts once). Ends with the merged leaderboard
    (leaderboard.csv/.json/.png) and manifest.json (versions, hashes, settings, model calls
    per stage). The plan and the result tables go to stdout, progress to stderr.

    --engine ray scores on a Ray cluster (the score stages get the engine's options; the
    records are the same as a local run's, so a study may switch engines and resume), and
    judge stages of method evidence|hybrid find their facts there (hybrid's fallback model
    is asked from this machine; --shard-size counts pairs there).

    A failed model request is kept as an error, never scored or ranked: the run finishes
    what it can, shows the failures per stage and exits 1 saying how many failed;
    --retry-errors makes exactly those requests again.
    """
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.runner import failure_line, run_experiment
    from prefjudge.io import InputError

    try:
        experiment, base = load_experiment(experiment_file)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        manifest = run_experiment(
            experiment, base, Path(experiment_file).resolve(), ConsoleReporter(),
            dry_run=dry_run, retry_errors=retry_errors,
            score_engine=scoring_engine(engine, address, allow_degraded, shard_size,
                                        shard_cpus, max_in_flight),
            judge_engine=judging_engine(engine, address, allow_degraded, shard_size,
                                        shard_cpus, max_in_flight))
    except InputError as exc:  # the benchmark cannot be read: nothing has been made
        raise click.ClickException(str(exc)) from None
    except StageError as exc:
        raise click.ClickException(str(exc)) from None
    line = failure_line(manifest.get("failures") or {}, f"prefjudge run {experiment_file}")
    if line is not None:
        raise click.ClickException(line)
