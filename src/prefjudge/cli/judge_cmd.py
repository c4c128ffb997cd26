"""``prefjudge pair``, ``prefjudge judge`` and ``prefjudge judge-eval``.

The judge stage loads when a command runs, not when this module is imported: ``--help``
and the listing import no model client, no pydantic records and no numeric library.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import DEFAULT_RESAMPLES, JUDGE_SAMPLING
from prefjudge.cli.engine_options import check_judging_engine, engine_options, judging_engine
from prefjudge.cli.judging import (
    METHOD_CHOICE,
    figure_text,
    interval_text,
    judge_option_values,
    judge_options,
    nothing_judged,
    outcome_table,
    pairs_format_option,
    print_errors,
    stage_failure,
    usage_report,
)
from prefjudge.cli.options import (
    backend_options,
    bootstrap_option,
    ci_seed_option,
    renamed_option,
    source_options,
)
from prefjudge.cli.pair_io import instruction_text, print_verdict, read_text_arg, write_verdict
from prefjudge.cli.runs import check_output, force_new_option, open_backend, stderr_reporter
from prefjudge.cli.streams import JOURNAL, OutputFile, is_stdout
from prefjudge.reporting import StageError

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.backends import Backend
    from prefjudge.backends.config import BackendConfig


@main.command("pair")
@click.argument("response_a", metavar="A")
@click.argument("response_b", metavar="B")
@click.option(
    "--instruction",
    "instruction",
    required=True,
    help="The instruction both responses answer: text, or a file holding it. A value "
    "without spaces that looks like a path (holds a / or ends in an extension such as "
    ".md, .txt or .py) must name an existing file; to pass such a value as the text "
    "itself, add a space at its end (instructions are stripped), e.g. "
    "--instruction 'main.py '.",
)
@click.option("--method", type=METHOD_CHOICE, default="criteralign", show_default=True)
@click.option(
    "--task-id",
    help="evidence/hybrid: the task both responses answer (its tests come from --tests).  "
    "[default: the task of --tests whose prompt is the instruction]",
)
@click.option(
    "--top",
    type=click.IntRange(1),
    default=5,
    show_default=True,
    help="Decisive criteria to print.",
)
@click.option(
    "-o",
    "--output",
    type=OutputFile(stdout_ok=True),
    help="Write the verdict JSON (- for stdout; the verdict table then prints on stderr).",
)
@judge_options
@backend_options(stage="judge", sampling=JUDGE_SAMPLING)
def pair(
    response_a: str,
    response_b: str,
    instruction: str,
    method: str,
    task_id: str | None,
    top: int,
    output: Path | None,
    guidance_dir: str | None,
    backend_config: BackendConfig,
    chunk_size: int,
    **opts: Any,
) -> None:
    """Judge which of two responses a user would prefer.

    A and B are files (code or a full response) or `-` for stdin (one of them at most).
    """
    if response_a == "-" and response_b == "-":
        raise click.UsageError("only one of A and B can be read from stdin")
    from prefjudge.judge.run import PairSettings, judge_pair, prepare_pair

    text = instruction_text(instruction)
    text_a, text_b = read_text_arg(response_a, "A"), read_text_arg(response_b, "B")
    to_stdout = is_stdout(output)
    if not to_stdout:
        check_output(output, "-o/--output")  # fail now, not after the model calls
    console, reporter = stderr_reporter()
    settings = PairSettings(
        instruction=text,
        response_a=text_a,
        response_b=text_b,
        method=method,  # type: ignore[arg-type]
        task_id=task_id,
        **judge_option_values(
            opts,
            guidance_dir=guidance_dir,
            chunk_size=chunk_size,
            sampling=backend_config.sampling(**JUDGE_SAMPLING),
        ),
    )
    try:
        prepared = prepare_pair(settings, reporter)
        verdict = _judge_with_backend(
            backend_config, (method,), settings.fallback, console,
            lambda backend: judge_pair(settings, backend, reporter, prepared=prepared),
            report_failed=True,
        )
    except StageError as exc:
        raise stage_failure(exc) from exc
    print_verdict(verdict, top, console if to_stdout else _stdout())
    write_verdict(verdict.model_dump_json(indent=2) + "\n", output, to_stdout, console)
    if verdict.status == "error":
        raise SystemExit(1)


def _stdout() -> Console:
    """The console of results (stdout), loaded with rich when a command prints."""
    from prefjudge.cli.display import stdout

    return stdout


def _judge_with_backend(
    backend_config: BackendConfig,
    methods: tuple[str, ...],
    fallback: str,
    console: Console,
    work: Callable[[Backend | None], Any],
    *,
    report_failed: bool = False,
    before_usage: Callable[[Any], None] | None = None,
    model_wanted: bool = False,
) -> Any:
    """Open the judge model when a method asks one, run ``work`` with it, report, close.

    Args:
        backend_config: The judge model.
        methods: The methods judged (the model opens when one of them needs it).
        fallback: hybrid's fallback method.
        console: Where the usage table goes.
        work: The judging, given the model (None when no method asks one).
        report_failed: Print the usage table even when ``work`` failed.
        before_usage: Called with the outcome (None on failure) before the usage table.
        model_wanted: Open the model even when no method asks one (``--perf-inputs model``:
            the model writes the efficiency fact's input generators).

    Returns:
        What ``work`` returned.
    """
    from prefjudge.judge import method_traits

    needs_model = model_wanted or any(method_traits(m, fallback).needs_model for m in methods)
    backend = open_backend(backend_config) if needs_model else None
    started, outcome = time.monotonic(), None
    try:
        outcome = work(backend)
    finally:
        if before_usage is not None:
            before_usage(outcome)
        usage_report(console, backend, started, done=report_failed or outcome is not None)
        if backend is not None:
            backend.close()
    return outcome


def _run_options(opts: dict[str, Any], backend_config: BackendConfig) -> dict[str, Any]:
    """The settings ``judge`` and ``judge-eval`` share: the engine and the judge options.

    Args:
        opts: The command's remaining flags (engine options and :func:`judge_options`);
            the engine's are taken out.
        backend_config: The judge model (its sampling).
    """
    engine = [opts.pop(name) for name in ENGINE_PARAMS]
    return {
        "engine": judging_engine(*engine),
        **judge_option_values(
            opts,
            guidance_dir=opts.pop("guidance_dir"),
            chunk_size=opts.pop("chunk_size"),
            sampling=backend_config.sampling(**JUDGE_SAMPLING),
        ),
    }


def _check_engine(engine: str, method: str, fallback: str, perf_inputs: str) -> None:
    """Refuse an engine that cannot judge ``method`` (or make model-written perf inputs)."""
    check_judging_engine(engine, (method,), fallback)
    if perf_inputs == "model" and engine == "ray":
        raise click.UsageError("--perf-inputs model is found on this machine only "
                               "(--engine local)")


ENGINE_PARAMS = ("engine", "address", "allow_degraded", "shard_size", "shard_cpus",
                 "max_in_flight")
"""The parameters :func:`engine_options` gives, in :func:`judging_engine`'s order."""


@main.command("judge")
@click.argument("inputs", metavar="PAIRS [GENERATIONS_B]", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    required=True,
    type=JOURNAL,
    help="Verdict JSONL (appended; rerunning resumes). Usable as battles by `prefjudge rank`.",
)
@click.option("--method", type=METHOD_CHOICE, default="criteralign", show_default=True)
@pairs_format_option
@click.option(
    "--tasks",
    "task_sources",
    metavar="FILE|DATASET",
    multiple=True,
    help="Tasks giving the instructions when judging two generation files (and the prompts "
    "completion-style samples continue), as `prefjudge score` reads them: a task file, a "
    "dataset folder or a hub dataset (e.g. bigcodebench). Repeatable: e.g. the HumanEval+ "
    "and MBPP+ files.",
)
@source_options("PAIRS or --tasks")
@click.option(
    "--scored-a",
    type=click.Path(exists=True, dir_okay=False),
    help="`prefjudge score` output for side A (evidence; implies --evidence).",
)
@click.option(
    "--scored-b",
    type=click.Path(exists=True, dir_okay=False),
    help="`prefjudge score` output for side B.",
)
@click.option(
    "--scores",
    "scores",
    metavar="FILE",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="`prefjudge score` outputs whose test outcomes and instruction checks the evidence "
    "and hybrid methods take instead of running them again (each fact says where it came "
    "from); facts they lack are found as usual.",
)
@click.option(
    "--perf-inputs",
    type=click.Choice(["scaled", "model"]),
    default="scaled",
    show_default=True,
    help="evidence/hybrid: the efficiency fact's performance-exercising inputs: grown from "
    "the task's own (scaled), or made by a generator the judge model (--backend) writes, "
    "accepted as the scaled ones are (model; the scaled ones where it gives none).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N pairs.")
@click.option(
    "--skip-invalid", is_flag=True, help="Skip unusable input rows (listed) instead of stopping."
)
@click.option(
    "--retry-errors",
    is_flag=True,
    help="Judge again pairs whose verdict is an error, asking the model again.",
)
@bootstrap_option(
    DEFAULT_RESAMPLES,
    minimum=10,
    help="Bootstrap resamples for the agreement intervals (pairs with human labels).",
)
@ci_seed_option
@force_new_option
@judge_options
@backend_options(stage="judge", sampling=JUDGE_SAMPLING)
@engine_options
def judge(
    inputs: tuple[str, ...],
    output: Path,
    method: str,
    fmt: str,
    task_sources: tuple[str, ...],
    split: str | None,
    subset: str | None,
    scored_a: str | None,
    scored_b: str | None,
    scores: tuple[str, ...],
    perf_inputs: str,
    limit: int | None,
    skip_invalid: bool,
    retry_errors: bool,
    bootstrap: int,
    ci_seed: int,
    force_new: bool,
    backend_config: BackendConfig,
    **opts: Any,
) -> None:
    """Judge many pairs.

    PAIRS is a pair file (prefjudge pairs, CodePrefBench, Copilot Arena CSV or BigCodeReward
    JSONL), a dataset folder, or a hub dataset: codeprefbench, bigcodereward (or
    OWNER/NAME; hub:OWNER/NAME for any other), with --split and --subset. With two
    arguments, they are generation files of two models joined on task_id, and on protocol,
    k and sample when both carry them (instructions from --tasks or a `prompt` field).

    --engine ray finds the facts of --method evidence|hybrid on a Ray cluster's
    sandbox-capable nodes, in shards of --shard-size pairs; hybrid's fallback model is asked
    from this machine. The verdicts are a local run's, so a run may switch engines and resume.
    """
    from prefjudge.judge.run import JudgeFileSettings, judge_file, prepare_judge_file

    console, reporter = stderr_reporter()
    engine = opts["engine"]
    settings = JudgeFileSettings(
        inputs=inputs,
        output=Path(output),
        method=method,  # type: ignore[arg-type]
        pairs_format=fmt,  # type: ignore[arg-type]
        tasks=task_sources,
        split=split,
        subset=subset,
        scored_a=None if scored_a is None else Path(scored_a),
        scored_b=None if scored_b is None else Path(scored_b),
        scores=tuple(Path(path) for path in scores),
        perf_inputs=perf_inputs,
        limit=limit,
        skip_invalid=skip_invalid,
        retry_errors=retry_errors,
        force_new=force_new,
        bootstrap=bootstrap,
        ci_seed=ci_seed,
        **_run_options(opts, backend_config),
    )
    _check_engine(engine, method, settings.fallback, perf_inputs)
    try:
        prepared = prepare_judge_file(settings, reporter)
        outcome = _judge_with_backend(
            backend_config, (method,), settings.fallback, console,
            lambda backend: judge_file(settings, backend, reporter, prepared=prepared),
            model_wanted=perf_inputs == "model",
        )
    except StageError as exc:
        raise stage_failure(exc) from exc
    verdicts, stdout = outcome.verdicts, _stdout()
    stdout.print(outcome_table(verdicts, f"{method} verdicts ({len(verdicts)} pairs)"))
    print_errors(console, verdicts)
    if outcome.agreement is not None:
        result = outcome.agreement
        stdout.print(
            f"agreement with human labels: accuracy {figure_text(result['accuracy'])} "
            f"{interval_text(result['accuracy_ci'])}, macro-F1 {figure_text(result['macro_f1'])}"
        )
    console.print(f"wrote {output}")
    failure = nothing_judged(verdicts, output)
    if failure is not None:
        raise stage_failure(failure)


@main.command("judge-eval")
@click.argument("pairs_paths", metavar="LABELLED_PAIRS...", nargs=-1, required=True)
@click.option(
    "--method",
    "methods",
    type=METHOD_CHOICE,
    multiple=True,
    help="Method(s) to evaluate (repeatable) [default: the three model-based ones].",
)
@renamed_option("--output-dir", "-o/--output", "output", type=OutputFile(folder=True))
@click.option(
    "-o",
    "--output",
    type=OutputFile(folder=True),
    help="Folder for per-method verdicts (resumable), summary JSON/CSV and plot.  [required]",
)
@pairs_format_option
@source_options("LABELLED_PAIRS")
@click.option(
    "--held-out",
    is_flag=True,
    help="With --guidance: evaluate only the pairs not used to build it.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Only the first N labelled pairs (of each, with several sources).",
)
@renamed_option("--n-boot", "--bootstrap", "bootstrap", type=click.IntRange(min=10))
@bootstrap_option(DEFAULT_RESAMPLES, minimum=10)
@ci_seed_option
@click.option("--skip-invalid", is_flag=True, help="Skip unusable input rows (listed).")
@click.option(
    "--retry-errors",
    is_flag=True,
    help="Judge again pairs whose verdict is an error, asking the model again.",
)
@force_new_option
@judge_options
@backend_options(stage="judge", sampling=JUDGE_SAMPLING)
@engine_options
def judge_eval(
    pairs_paths: tuple[str, ...],
    methods: tuple[str, ...],
    output: Path | None,
    fmt: str,
    split: str | None,
    subset: str | None,
    held_out: bool,
    limit: int | None,
    bootstrap: int,
    ci_seed: int,
    skip_invalid: bool,
    retry_errors: bool,
    force_new: bool,
    backend_config: BackendConfig,
    **opts: Any,
) -> None:
    """Measure judges against human labels, side by side per method.

    LABELLED_PAIRS is a pair file, a dataset folder, or a hub dataset (codeprefbench,
    bigcodereward; hub:OWNER/NAME for another), with --split and --subset; several
    (e.g. the four CodePrefBench files) are evaluated together and reported per split,
    with the published human figures beside them. Reports accuracy (ties as half) and
    macro-F1 with bootstrap CIs, position consistency, tie rate, confusion matrix and
    cost; verdicts are journaled per method, so a rerun resumes.
    --seed is the judge's sampling seed; --ci-seed only reseeds the intervals.
    --engine ray finds the facts of evidence|hybrid on a Ray cluster (as for judge); the
    model-based methods judge from this machine.
    """
    # Here, not at the top: scipy and pandas (bias, the split tables) cost `judge` and
    # `pair` a second of start-up they never use.
    from prefjudge.judge.judge_eval import (
        DEFAULT_METHODS,
        JudgeEvalSettings,
        evaluate_judges,
        prepare_judge_eval,
    )

    if output is None:
        raise click.MissingParameter(param_type="option", param_hint="'-o' / '--output'")
    console, reporter = stderr_reporter()
    engine = opts["engine"]
    settings = JudgeEvalSettings(
        sources=pairs_paths,
        output=Path(output),
        methods=methods or DEFAULT_METHODS,  # type: ignore[arg-type]
        pairs_format=fmt,  # type: ignore[arg-type]
        split=split,
        subset=subset,
        held_out=held_out,
        limit=limit,
        bootstrap=bootstrap,
        ci_seed=ci_seed,
        skip_invalid=skip_invalid,
        retry_errors=retry_errors,
        force_new=force_new,
        **_run_options(opts, backend_config),
    )
    check_judging_engine(engine, tuple(settings.methods), settings.fallback)

    def errors_first(outcome: Any) -> None:
        for method in outcome.methods if outcome is not None else ():
            print_errors(console, outcome.verdicts[method], limit=3)

    try:
        prepared = prepare_judge_eval(settings, reporter)
        outcome = _judge_with_backend(
            backend_config, tuple(settings.methods), settings.fallback, console,
            lambda backend: evaluate_judges(settings, backend, reporter, prepared=prepared),
            before_usage=errors_first,
        )
    except StageError as exc:
        raise stage_failure(exc) from exc
    _print_judge_eval(outcome, output, console)


def _print_judge_eval(outcome: Any, output: Path, console: Console) -> None:
    """Print judge-eval's tables and files; fail naming every method that judged nothing."""
    from prefjudge.cli.judge_splits import print_judge_eval

    print_judge_eval(outcome, _stdout())
    console.print(f"wrote {outcome.summary_json}, {outcome.summary_csv} and {outcome.summary_png}")
    # A method that judged nothing measured nothing: every such method is named.
    found = (nothing_judged(outcome.verdicts[method], f"{method} ({output})")
             for method in outcome.methods)
    failures = [str(failure) for failure in found if failure is not None]
    if failures:
        raise stage_failure(StageError("\n".join(failures)))
