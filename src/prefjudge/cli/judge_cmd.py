"""``prefjudge pair``, ``prefjudge judge`` and ``prefjudge judge-eval``."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.backends.config import BackendConfig
from prefjudge.cli import main
from prefjudge.cli.display import stdout
from prefjudge.cli.engine_options import check_judging_engine, engine_options, judging_engine
from prefjudge.cli.judging import (
    JUDGE_SAMPLING,
    METHOD_CHOICE,
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
from prefjudge.cli.reporter import ConsoleReporter
from prefjudge.cli.runs import check_output, force_new_option, open_backend
from prefjudge.cli.streams import JOURNAL, OutputFile, is_stdout
from prefjudge.io import InputError, read_text
from prefjudge.judge import method_traits
from prefjudge.judge.run import (
    JudgeFileSettings,
    PairSettings,
    judge_file,
    judge_pair,
    prepare_judge_file,
    prepare_pair,
)
from prefjudge.records import Verdict
from prefjudge.reporting import StageError, display_name
from prefjudge.stats import DEFAULT_RESAMPLES

SIDE_NAMES = {"A": "A", "B": "B", "tie": "tie", None: "—"}


def _read_text(source: str, what: str) -> str:
    """Read a response (or instruction) file, or stdin for ``-``, as UTF-8 text.

    Raises:
        click.BadParameter: Naming ``what`` and the file, when it does not exist, cannot be
            read, is not UTF-8 or is binary (holds NUL bytes).
    """
    if source == "-":
        try:
            return sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise click.BadParameter(
                f"stdin: not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start}); pass a text file",
                param_hint=what,
            ) from None
    path = Path(source)
    if not path.is_file():
        raise click.BadParameter(f"{source}: no such file", param_hint=what)
    try:
        text = read_text(path)
    except InputError as exc:
        problem = "; ".join(str(issue) for issue in exc.issues)
        raise click.BadParameter(f"{problem}; expected a text file", param_hint=what) from None
    if "\x00" in text:
        raise click.BadParameter(
            f"{source}: a binary file (it holds NUL bytes); expected a text file", param_hint=what
        )
    return text


_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")


def _print_verdict(verdict: Verdict, top: int, console: Console = stdout) -> None:
    if verdict.status == "error":
        console.print(f"[red]error[/red]: {escape(verdict.error or '')}")
        return
    name = {"A": "A wins", "B": "B wins", "tie": "tie"}[verdict.preferred or "tie"]
    orders = ", ".join(f"{k}: {SIDE_NAMES[v]}" for k, v in verdict.orders.items())
    how = "; ".join(filter(None, [verdict.method, orders]))
    console.print(f"[bold]verdict: {name}[/bold]  ({how})")
    for order, reason in verdict.reasons.items():
        if order == "evidence":
            continue  # the facts table below says it
        if reason:
            console.print(f"  reason ({order}): {escape(reason)}", soft_wrap=True)
    shown = [c for c in verdict.criteria if c.criterion.id in verdict.decisive] or [
        c for c in verdict.criteria if c.outcome in ("A", "B")
    ]
    if shown:
        table = Table(title="decisive criteria", title_justify="left")
        for column in ("id", "criterion", "outcome", "reason"):
            table.add_column(column)
        for cv in shown[:top]:
            table.add_row(
                cv.criterion.id,
                escape(cv.criterion.text),
                SIDE_NAMES[cv.outcome],
                escape(cv.reason_forward),
            )
        console.print(table)
    if verdict.inconsistency_rate is not None:
        console.print(
            f"criterion verdicts flipped by the order swap: {verdict.inconsistency_rate:.0%}"
            f"; tied criteria refined: {verdict.refined}"
        )
    if verdict.facts:
        table = Table(title=f"evidence (decided by: {verdict.decided_by})", title_justify="left")
        for column in ("kind", "outcome", "fact"):
            table.add_column(column)
        for fact in verdict.facts:
            table.add_row(fact.kind, fact.outcome, escape(fact.fact))
        console.print(table)
    for warning in verdict.warnings:
        console.print(f"[yellow]warning[/yellow]: {escape(warning)}")


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
    if instruction != "-" and Path(instruction).is_file():
        text = _read_text(instruction, "--instruction")
    elif not any(c.isspace() for c in instruction) and (
        "/" in instruction or os.sep in instruction or _EXTENSION.search(instruction)
    ):
        raise click.BadParameter(
            f"{instruction}: no such file. To use this as the instruction text itself, add "
            f"a space at its end: --instruction '{instruction} '",
            param_hint="--instruction",
        )
    else:
        text = instruction
    text_a, text_b = _read_text(response_a, "A"), _read_text(response_b, "B")
    to_stdout = is_stdout(output)
    if not to_stdout:
        check_output(output, "-o/--output")  # fail now, not after the model calls
    console = Console(stderr=True)
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
    reporter = ConsoleReporter(console)
    try:
        prepared = prepare_pair(settings, reporter)
        needs_model = method_traits(method, settings.fallback).needs_model
        backend = open_backend(backend_config) if needs_model else None
        started = time.monotonic()
        try:
            verdict = judge_pair(settings, backend, reporter, prepared=prepared)
        finally:
            usage_report(console, backend, started, done=True)
            if backend is not None:
                backend.close()
    except StageError as exc:
        raise stage_failure(exc) from exc
    _print_verdict(verdict, top, console if to_stdout else stdout)
    payload = verdict.model_dump_json(indent=2) + "\n"
    if to_stdout:
        click.echo(payload, nl=False)
    elif output is not None:
        try:
            output.write_text(payload, encoding="utf-8")
        except OSError as exc:
            click.echo(payload, nl=False)  # the verdict is not lost: it goes to stdout
            raise click.ClickException(
                f"cannot write {output} ({exc.strerror or exc}); the verdict JSON was printed above"
            ) from None
        console.print(f"wrote {output}")
    if verdict.status == "error":
        raise SystemExit(1)


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
    limit: int | None,
    skip_invalid: bool,
    retry_errors: bool,
    bootstrap: int,
    ci_seed: int,
    force_new: bool,
    guidance_dir: str | None,
    backend_config: BackendConfig,
    chunk_size: int,
    engine: str,
    address: str,
    allow_degraded: bool,
    shard_size: int | None,
    shard_cpus: int,
    max_in_flight: int | None,
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
    console = Console(stderr=True)
    reporter = ConsoleReporter(console)
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
        limit=limit,
        skip_invalid=skip_invalid,
        retry_errors=retry_errors,
        force_new=force_new,
        bootstrap=bootstrap,
        ci_seed=ci_seed,
        engine=judging_engine(
            engine, address, allow_degraded, shard_size, shard_cpus, max_in_flight
        ),
        **judge_option_values(
            opts,
            guidance_dir=guidance_dir,
            chunk_size=chunk_size,
            sampling=backend_config.sampling(**JUDGE_SAMPLING),
        ),
    )
    check_judging_engine(engine, (method,), settings.fallback)
    try:
        prepared = prepare_judge_file(settings, reporter)
        needs_model = method_traits(method, settings.fallback).needs_model
        backend = open_backend(backend_config) if needs_model else None
        started, outcome = time.monotonic(), None
        try:
            outcome = judge_file(settings, backend, reporter, prepared=prepared)
        finally:
            usage_report(console, backend, started, done=outcome is not None)
            if backend is not None:
                backend.close()
    except StageError as exc:
        raise stage_failure(exc) from exc
    verdicts = outcome.verdicts
    stdout.print(outcome_table(verdicts, f"{method} verdicts ({len(verdicts)} pairs)"))
    print_errors(console, verdicts)
    if outcome.agreement is not None:
        result = outcome.agreement
        stdout.print(
            f"agreement with human labels: accuracy {_fmt(result['accuracy'])} "
            f"{_ci(result['accuracy_ci'])}, macro-F1 {_fmt(result['macro_f1'])}"
        )
    console.print(f"wrote {output}")
    failure = nothing_judged(verdicts, output)
    if failure is not None:
        raise stage_failure(failure)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _confusion_table(method: str, confusion: dict[str, dict[str, int]]) -> Table:
    columns = sorted(
        {c for row in confusion.values() for c in row}, key=["A", "B", "tie", "error"].index
    )
    table = Table(
        title=f"{method}: human label (rows) × judge verdict (columns)", title_justify="left"
    )
    table.add_column("human")
    for column in columns:
        table.add_column(column, justify="right")
    for gold, row in confusion.items():
        table.add_row(gold, *(str(row.get(c, 0)) for c in columns))
    return table


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
    guidance_dir: str | None,
    backend_config: BackendConfig,
    chunk_size: int,
    engine: str,
    address: str,
    allow_degraded: bool,
    shard_size: int | None,
    shard_cpus: int,
    max_in_flight: int | None,
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
    from prefjudge.cli.judge_splits import bias_table, methods_table, split_table
    from prefjudge.judge.judge_eval import (
        DEFAULT_METHODS,
        JudgeEvalSettings,
        evaluate_judges,
        prepare_judge_eval,
    )

    if output is None:
        raise click.MissingParameter(param_type="option", param_hint="'-o' / '--output'")
    console = Console(stderr=True)
    reporter = ConsoleReporter(console)
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
        engine=judging_engine(
            engine, address, allow_degraded, shard_size, shard_cpus, max_in_flight
        ),
        **judge_option_values(
            opts,
            guidance_dir=guidance_dir,
            chunk_size=chunk_size,
            sampling=backend_config.sampling(**JUDGE_SAMPLING),
        ),
    )
    check_judging_engine(engine, tuple(settings.methods), settings.fallback)
    try:
        prepared = prepare_judge_eval(settings, reporter)
        needs_model = any(method_traits(m, settings.fallback).needs_model for m in settings.methods)
        backend = open_backend(backend_config) if needs_model else None
        started, outcome = time.monotonic(), None
        try:
            outcome = evaluate_judges(settings, backend, reporter, prepared=prepared)
        finally:
            if outcome is not None:
                for method in outcome.methods:
                    print_errors(console, outcome.verdicts[method], limit=3)
            usage_report(console, backend, started, done=outcome is not None)
            if backend is not None:
                backend.close()
    except StageError as exc:
        raise stage_failure(exc) from exc
    results, methods = outcome.results, outcome.methods
    stdout.print(
        methods_table(
            results,
            f"judge agreement with human labels ({outcome.pairs} pairs, "
            f"{escape(display_name(outcome.judge_model))})",
        )
    )
    for method in methods:
        stdout.print(_confusion_table(method, results[method]["confusion"]))
    stdout.print(bias_table({m: results[m]["bias"] for m in methods}))
    if outcome.by_split:
        stdout.print(split_table(outcome.by_split, outcome.criteria))
    for method in methods[1:]:
        diff = outcome.paired[f"{method} - {methods[0]}"]
        if diff["n"]:
            stdout.print(
                f"{method} − {methods[0]}: accuracy difference {diff['difference']:+.3f} "
                f"{_ci(diff['difference_ci'])} on {diff['n']} pairs both judged, "
                f"McNemar p = {diff['p_value']:.3g}"
            )
    console.print(f"wrote {outcome.summary_json}, {outcome.summary_csv} and {outcome.summary_png}")
    # A method that judged nothing measured nothing: every such method is named.
    found = (nothing_judged(outcome.verdicts[method], f"{method} ({output})") for method in methods)
    failures = [str(failure) for failure in found if failure is not None]
    if failures:
        raise stage_failure(StageError("\n".join(failures)))
