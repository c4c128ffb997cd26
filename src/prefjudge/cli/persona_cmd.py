"""``prefjudge persona``: profiles, rewrites, user-aware comparisons and preference flips.

The stages themselves are use cases in :mod:`prefjudge.persona.run`; these commands parse
the options, open the backend, call them with a console reporter and print the results.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import DEFAULT_RESAMPLES, PERSONA_SAMPLING
from prefjudge.cli.options import (
    backend_options,
    bootstrap_option,
    ci_seed_option,
    old_ci_seed_option,
    renamed_option,
)
from prefjudge.cli.runs import check_output, force_new_option, open_backend, stderr_reporter
from prefjudge.cli.streams import JOURNAL, OutputFile, is_stdout
from prefjudge.paths import check_path_name
from prefjudge.reporting import StageError, nothing_done

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.backends import Backend
    from prefjudge.backends.config import BackendConfig
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.persona.run import FlipsOutcome
    from prefjudge.records import Persona

PROFILE_SAMPLING = PERSONA_SAMPLING["profile"]
REWRITE_SAMPLING = PERSONA_SAMPLING["rewrite"]
COMPARE_SAMPLING = PERSONA_SAMPLING["compare"]

T = TypeVar("T")


def _persona(name: str) -> Persona:
    """Check ``--persona`` before any work (a usage error, as every bad option value)."""
    from prefjudge.persona.profile import PersonaError, load_persona

    try:
        return load_persona(name)
    except PersonaError as exc:
        raise click.BadParameter(str(exc), param_hint="--persona") from exc


def _plain_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--name``, checked before any model call by the one rule for names of files."""
    try:
        return check_path_name(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _run(config: BackendConfig, console: Console, stage: Callable[[Backend], T]) -> T:
    """Open the backend, run the stage, report the backend's usage and close it.

    A :class:`StageError` becomes the command's error message (exit status 1).
    """
    from prefjudge.cli.display import report_usage

    backend = open_backend(config)
    started = time.monotonic()
    try:
        return stage(backend)
    except StageError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        report_usage(console, backend, started=started)
        backend.close()


def _print_flips(reporter: ConsoleReporter, flips: FlipsOutcome) -> None:
    """The flip table and the line naming the flips, on stdout."""
    from prefjudge.cli.display import stdout

    reporter.table(flips.table)
    stdout.print(flips.message)


@main.group("persona")
def persona() -> None:
    """Personas (vibe-testing): rewrite prompts in a user's voice, judge as that user."""


@persona.command("list")
def list_personas() -> None:
    """List the built-in personas and the comparison dimensions."""
    from rich.markup import escape
    from rich.table import Table

    from prefjudge.cli.display import stdout
    from prefjudge.persona.profile import builtin_personas, load_dimensions, load_persona

    table = Table(title="built-in personas (rubrics/personas/)", title_justify="left")
    for column in ("name", "expertise", "verbosity", "explanation", "values"):
        table.add_column(column)
    for name in builtin_personas():
        p = load_persona(name)
        table.add_row(
            name,
            p.input.expertise,
            p.input.verbosity,
            p.output.explanation,
            escape("; ".join(p.output.values[:2])),
        )
    stdout.print(table)
    stdout.print("dimensions: " + ", ".join(d.id for d in load_dimensions()))


@persona.command("profile")
@click.argument("description")
@click.option(
    "--name",
    required=True,
    callback=_plain_name,
    help="The persona's name (letters, digits, _ . -).",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=OutputFile(stdout_ok=True),
    help="Persona YAML to write (- for stdout only).",
)
@backend_options(stage="persona", sampling=PROFILE_SAMPLING)
def profile(description: str, name: str, output: Path, backend_config: BackendConfig) -> None:
    """Build a structured persona profile from a short free-text DESCRIPTION.

    The YAML is printed on stdout and written to OUTPUT.
    """
    from prefjudge.cli.display import stdout
    from prefjudge.persona.run import ProfileSettings, profile_file

    console, reporter = stderr_reporter()
    if not is_stdout(output):
        check_output(output, "-o/--output")  # fail now, not after the model call
    settings = ProfileSettings(
        description=description,
        name=name,
        output=None if is_stdout(output) else Path(output),
        sampling=backend_config.sampling(**PROFILE_SAMPLING),
    )
    made = _run(backend_config, console, lambda backend: profile_file(settings, backend, reporter))
    if made.output is None:
        click.echo(made.yaml, nl=False)
        return
    stdout.print(made.yaml)
    console.print(f"wrote {made.output}")


@persona.command("rewrite")
@click.argument("tasks_path", metavar="TASKS", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--persona", "persona_name", required=True, help="Built-in persona name or a persona YAML file."
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=JOURNAL,
    help="Rewritten tasks (JSONL; rejected ones go to OUTPUT's .rejected.jsonl).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@click.option(
    "--max-attempts",
    type=click.IntRange(1, 10),
    default=3,
    show_default=True,
    help="Rewrites tried per task before it is rejected.",
)
@click.option(
    "--no-reference-check",
    is_flag=True,
    help="Skip running each task's reference solution in the sandbox.",
)
@force_new_option
@backend_options(stage="persona", sampling=REWRITE_SAMPLING)
def rewrite(
    tasks_path: str,
    persona_name: str,
    output: Path,
    limit: int | None,
    max_attempts: int,
    no_reference_check: bool,
    force_new: bool,
    backend_config: BackendConfig,
) -> None:
    """Rewrite TASKS in a persona's voice without changing what they ask for.

    Natural-language prompts are recomposed (their example lines kept verbatim); prompts
    with code context get a persona prefix and keep the code untouched. Each rewrite is
    checked by the model (same goal, same set of correct solutions) and deterministically
    (the entry point is named; the reference solution still passes the tests).
    """
    from rich.table import Table

    from prefjudge.cli.display import stdout
    from prefjudge.persona.run import RewriteSettings, rewrite_file

    console, reporter = stderr_reporter()
    _persona(persona_name)
    settings = RewriteSettings(
        tasks=Path(tasks_path),
        persona=persona_name,
        output=Path(output),
        limit=limit,
        max_attempts=max_attempts,
        reference_check=not no_reference_check,
        force_new=force_new,
        sampling=backend_config.sampling(**REWRITE_SAMPLING),
    )
    done = _run(backend_config, console, lambda backend: rewrite_file(settings, backend, reporter))
    summary = done.summary
    table = Table(title=f"persona rewrite: {summary.persona}", title_justify="left")
    for column in ("tasks", "accepted", "rejected", "accepted after retry", "full / prefix"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.tasks),
        str(summary.accepted),
        str(summary.rejected),
        str(summary.accepted_after_retry),
        f"{summary.modes.get('full', 0)} / {summary.modes.get('prefix', 0)}",
    )
    stdout.print(table)
    for kind, count in summary.rejection_reasons.items():
        stdout.print(f"rejected ({kind}): {count}")
    console.print(f"wrote {done.output}, {done.rejected} and {done.summary_file}")


@persona.command("compare")
@click.argument("gen_a", type=click.Path(exists=True, dir_okay=False))
@click.argument("gen_b", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--persona", "persona_name", required=True, help="Built-in persona name or a persona YAML file."
)
@click.option(
    "--tasks",
    "tasks_paths",
    required=True,
    multiple=True,
    type=click.Path(exists=True),
    help="The persona's rewritten tasks (the prompts GEN_A and GEN_B answered). Repeatable: "
    "merged by task id.",
)
@click.option(
    "--original",
    nargs=2,
    type=click.Path(exists=True, dir_okay=False),
    help="ORIG_A ORIG_B: the same two models' generations on the original prompts.",
)
@click.option(
    "--original-tasks",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The original tasks (required with --original). Repeatable: merged by task id.",
)
@click.option(
    "--original-judging",
    type=click.Choice(["generic", "persona"]),
    default="generic",
    show_default=True,
    help="Judge original-prompt answers as a generic developer (the benchmark's "
    "view) or with the persona's preferences (isolates the prompt's effect).",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=JOURNAL,
    help="Comparisons JSONL (appended; rerunning resumes).",
)
@renamed_option("--n-boot", "--bootstrap", "bootstrap", type=click.IntRange(min=10))
@bootstrap_option(
    DEFAULT_RESAMPLES,
    minimum=10,
    help="Bootstrap resamples for the flip intervals (with --original).",
)
@ci_seed_option
@force_new_option
@backend_options(stage="persona", sampling=COMPARE_SAMPLING)
def compare_cmd(
    gen_a: str,
    gen_b: str,
    persona_name: str,
    tasks_paths: tuple[str, ...],
    original: tuple[str, str] | None,
    original_tasks: tuple[str, ...],
    original_judging: str,
    output: Path,
    bootstrap: int,
    ci_seed: int,
    force_new: bool,
    backend_config: BackendConfig,
) -> None:
    """Compare two models per dimension as the persona would.

    GEN_A and GEN_B answered the persona's prompts; with --original, the same models'
    answers to the original prompts are compared too, and the command reports where the
    preferred model flips between the two. --seed is the judge's sampling seed;
    --ci-seed only reseeds the flip intervals.
    """
    from prefjudge.cli.display import stdout
    from prefjudge.persona.run import CompareSettings, compare_files

    console, reporter = stderr_reporter()
    _persona(persona_name)
    if original and not original_tasks:
        raise click.UsageError("--original needs --original-tasks")
    settings = CompareSettings(
        gen_a=Path(gen_a),
        gen_b=Path(gen_b),
        persona=persona_name,
        tasks=tuple(Path(path) for path in tasks_paths),
        output=Path(output),
        original=(Path(original[0]), Path(original[1])) if original else None,
        original_tasks=tuple(Path(path) for path in original_tasks),
        original_judging="persona" if original_judging == "persona" else "generic",
        bootstrap=bootstrap,
        ci_seed=ci_seed,
        force_new=force_new,
        sampling=backend_config.sampling(**COMPARE_SAMPLING),
    )
    done = _run(backend_config, console, lambda backend: compare_files(settings, backend, reporter))
    stdout.print(done.message)
    if done.flips is not None:
        _print_flips(reporter, done.flips)
    failure = nothing_done(done.comparisons, done.errors, what="comparisons", where=done.output,
                           rerun="--force-new")
    if failure is not None:
        raise click.ClickException(str(failure))


@persona.command("flips")
@click.argument("comparisons", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    "prefix",
    type=OutputFile(why="it is the prefix of three files (.flips.csv/.json/.png)"),
    help="Prefix of the .flips.{csv,json,png} files [default: COMPARISONS without .jsonl].",
)
@renamed_option("--n-boot", "--bootstrap", "bootstrap", type=click.IntRange(min=10))
@bootstrap_option(DEFAULT_RESAMPLES, minimum=10)
@old_ci_seed_option
@ci_seed_option
def flips(comparisons: str, prefix: Path | None, bootstrap: int, ci_seed: int) -> None:
    """Per-dimension win rates, original vs persona prompts, with bootstrap intervals."""
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.persona.run import FlipsSettings, flips_file

    settings = FlipsSettings(
        comparisons=Path(comparisons),
        prefix=Path(prefix) if prefix else None,
        bootstrap=bootstrap,
        ci_seed=ci_seed,
    )
    reporter = ConsoleReporter()
    try:
        done = flips_file(settings, reporter)
    except StageError as exc:
        raise click.ClickException(str(exc)) from exc
    _print_flips(reporter, done)
