"""What the judging commands (``pair``, ``judge``, ``judge-eval``, ``guidance``) share.

Options and settings from flags, progress bars around :mod:`prefjudge.judge.run`, and the
printed outcome tables.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.backends import Backend, BackendError, Result
from prefjudge.backends.config import BackendConfig
from prefjudge.cli.display import progress_bars, report_usage
from prefjudge.cli.options import renamed_option, source_failure
from prefjudge.cli.runs import open_journal
from prefjudge.io import InputError
from prefjudge.journal import Journal, file_fingerprint
from prefjudge.judge import METHODS, MODEL_METHODS, JudgeSettings
from prefjudge.judge.facts.judge import CriterionError, parse_criterion
from prefjudge.judge.facts.versions import decider_versions
from prefjudge.judge.guidance import Guidance, GuidanceError, load_guidance
from prefjudge.judge.pairs import open_preference_source, pairs_from_generations
from prefjudge.judge.prompts import METHOD_STAGES, TemplateError, check_templates
from prefjudge.judge.run import judge_plan, plan_judging, verdict_journal
from prefjudge.records import Pair, Verdict
from prefjudge.scoring.sources import SourceError, open_task_source

METHOD_CHOICE = click.Choice(sorted(METHODS))
JUDGE_SAMPLING = {"max_tokens": 2048, "seed": 0}
"""Sampling defaults of the judging commands (``backend_options(sampling=...)`` shows them)."""


def judge_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the options every judging command shares."""
    options = [
        click.option(
            "--guidance",
            "guidance_dir",
            type=click.Path(exists=True, file_okay=False),
            help="HPAG guidance folder (from `prefjudge guidance build`).",
        ),
        click.option(
            "--evidence",
            is_flag=True,
            help="Give the judge the pairs' deterministic evidence (verifier and "
            "unit-test results) as facts it may cite.",
        ),
        click.option(
            "--min-criteria",
            type=click.IntRange(1, 24),
            default=16,
            show_default=True,
            help="Fewest criteria to ask for (criteralign, pointwise).",
        ),
        click.option(
            "--max-criteria",
            type=click.IntRange(1, 24),
            default=20,
            show_default=True,
            help="Most criteria kept.",
        ),
        click.option("--no-refine", is_flag=True, help="Skip stage 4 (tie refinement)."),
        click.option(
            "--max-refine",
            type=click.IntRange(0, 24),
            default=8,
            show_default=True,
            help="Most tied criteria refined per pair.",
        ),
        click.option(
            "--templates",
            type=click.Path(exists=True, file_okay=False),
            help="Folder of prompt templates overriding rubrics/judge/.",
        ),
        click.option(
            "--criterion",
            metavar="KINDS",
            help="evidence/hybrid: what decides every pair, overriding the pairs' own "
            "criterion: correctness, instructions, efficiency or security, or several in "
            "order (correctness,efficiency).  [default: the pair's criterion, else "
            "correctness,instructions,efficiency,security]",
        ),
        click.option(
            "--tests",
            "tests_sources",
            metavar="FILE|DATASET",
            multiple=True,
            help="evidence/hybrid: tasks whose tests and inputs the correctness and "
            "efficiency evidence run, by task_id (repeatable: e.g. the HumanEval+ and "
            "MBPP+ files).",
        ),
        click.option(
            "--fallback",
            type=click.Choice(sorted(MODEL_METHODS)),
            default="criteralign",
            show_default=True,
            help="hybrid: the model-based method for the pairs the evidence leaves undecided.",
        ),
        click.option(
            "--tokenizer",
            metavar="MODEL",
            help="Whose tokenizer counts each response's length (the token_len style "
            "feature written with every verdict, for `rank --control`): a model name in "
            "the local Hugging Face cache or a folder with tokenizer.json; never "
            "downloaded.  [default: words and punctuation marks]",
        ),
        click.option(
            "--chunk-size",
            type=click.IntRange(1),
            default=32,
            show_default=True,
            help="Pairs per batch (each stage is one batch of requests).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def make_settings(
    method: str, config: BackendConfig, guidance: Guidance | None, opts: dict[str, Any]
) -> JudgeSettings:
    """Build judge settings from the shared options."""
    if opts["min_criteria"] > opts["max_criteria"]:
        raise click.UsageError("--min-criteria must not exceed --max-criteria")
    model_method = opts["fallback"] if method == "hybrid" else method
    if model_method in METHOD_STAGES:
        try:  # every template the method uses, checked before any model call
            check_templates(METHOD_STAGES[model_method], opts["templates"])
        except TemplateError as exc:
            raise click.ClickException(str(exc)) from exc
    if opts["criterion"]:
        try:
            parse_criterion(opts["criterion"])
        except CriterionError as exc:
            raise click.BadParameter(str(exc), param_hint="--criterion") from None
    tests: dict[str, Any] = {}
    if method in ("evidence", "hybrid"):
        tests = load_tests(opts["tests_sources"])
    elif opts["tests_sources"] or opts["criterion"]:
        raise click.UsageError("--tests and --criterion apply to --method evidence or hybrid")
    return JudgeSettings(
        method=method,
        min_criteria=opts["min_criteria"],
        max_criteria=opts["max_criteria"],
        refine=not opts["no_refine"] and opts["max_refine"] > 0,
        max_refine=opts["max_refine"],
        evidence=opts["evidence"],
        guidance=guidance,
        templates=opts["templates"],
        sampling=config.sampling(**JUDGE_SAMPLING),
        criterion=opts["criterion"],
        tests=tests,
        fallback=opts["fallback"],
        tokenizer=opts["tokenizer"],
    )


def load_tests(sources: Sequence[str]) -> dict[str, Any]:
    """Tasks by id from ``--tests`` sources (files, folders or hub datasets), merged.

    Raises:
        click.ClickException: When a source cannot be read, or two give the same task.
    """
    tasks: dict[str, Any] = {}
    for source in sources:
        try:
            loaded, _where = open_task_source(source)
        except SourceError as exc:
            raise source_failure(exc, "--tests") from exc
        except InputError as exc:
            raise click.ClickException(str(exc)) from exc
        for task_id, task in loaded.items():
            if task_id in tasks:
                raise click.ClickException(f"--tests: task {task_id!r} is in two sources")
            tasks[task_id] = task
    return tasks


def evidence_binding(settings: JudgeSettings, sources: Sequence[str]) -> dict[str, Any]:
    """What evidence verdicts depend on besides the model: for the verdict journal.

    Args:
        settings: The judge settings.
        sources: The ``--tests`` sources.

    Returns:
        ``{}`` for the model-based methods; else the criterion, the fallback (hybrid), the
        test sources' content digests, and the versions of the code that decides
        (sandbox harness, Ruff, the security analyser).
    """
    if settings.method not in ("evidence", "hybrid"):
        return {}
    return {
        "criterion": settings.criterion,
        "fallback": settings.fallback if settings.method == "hybrid" else None,
        "tests": [file_fingerprint(s)["sha256"] if Path(s).is_file() else s for s in sources],
        "deciders": decider_versions(),
    }


def open_guidance(folder: str | None) -> Guidance | None:
    """Load a guidance folder or fail with a usage error."""
    if folder is None:
        return None
    try:
        return load_guidance(folder)
    except GuidanceError as exc:
        raise click.ClickException(str(exc)) from exc


@contextmanager
def judging_progress(
    console: Console, pairs: int, method: str
) -> Iterator[tuple[Callable[[Result], None], Callable[[], None]]]:
    """Two progress rows: pairs done, and backend requests answered so far."""
    progress = progress_bars(console)
    pair_task = progress.add_task(f"{method}: pairs", total=pairs)
    call_task = progress.add_task(f"{method}: requests", total=None)

    def on_result(_result: Result) -> None:
        progress.advance(call_task)

    def on_verdict() -> None:
        progress.advance(pair_task)

    with progress:
        yield on_result, on_verdict


def run_judging(
    pairs: Sequence[Pair],
    journal: Journal[Verdict] | None,
    settings: JudgeSettings,
    backend: Backend,
    console: Console,
    *,
    chunk_size: int,
    retry_errors: bool = False,
    report: bool = True,
) -> list[Verdict]:
    """Judge pairs with progress bars: the resume note, two progress rows, the usage table.

    Args:
        pairs: The pairs.
        journal: An open verdict journal, or None to keep verdicts in memory only.
        settings: Judge settings.
        backend: The judge model.
        console: Where progress and notes go.
        chunk_size: Pairs per batch.
        retry_errors: Judge again the pairs whose earlier verdict is an error, asking the
            model again (no cached reply is reused for them).
        report: Print the backend's usage table at the end.

    Returns:
        One verdict per pair, in input order (earlier ones included).
    """
    plan = plan_judging(pairs, journal, retry_errors=retry_errors)
    if plan.done or plan.retry:
        where = journal.path if journal is not None else ""
        again = f" ({len(plan.retry)} errored ones again)" if plan.retry else ""
        console.print(
            f"resuming: {len(pairs) - len(plan.todo)} verdicts already in {where}, "
            f"{len(plan.todo)} to judge{again}"
        )
    started = time.monotonic()
    try:
        with judging_progress(console, len(plan.todo), settings.method) as (on_result, on_verdict):
            return judge_plan(
                plan,
                journal,
                settings,
                backend,
                chunk_size=chunk_size,
                on_result=on_result,
                on_verdict=lambda _verdict: on_verdict(),
            )
    except BackendError as exc:
        raise click.ClickException(f"{exc} (verdicts written so far are kept)") from exc
    finally:
        if report:
            report_usage(console, backend, started=started)


def judge_to_file(
    pairs: Sequence[Pair],
    out: Path,
    settings: JudgeSettings,
    backend: Backend,
    console: Console,
    *,
    stage: str,
    inputs: dict[str, Any],
    extra: dict[str, Any] | None = None,
    force_new: bool = False,
    chunk_size: int,
    retry_errors: bool = False,
    report: bool = True,
) -> list[Verdict]:
    """Judge pairs into a verdict file through its journal (see :func:`verdict_journal`).

    Returns:
        One verdict per pair, in input order (earlier ones included).
    """
    journal = verdict_journal(
        out, settings, backend, stage=stage, inputs=inputs, extra=extra, force_new=force_new
    )
    with open_journal(journal, console):
        return run_judging(
            pairs,
            journal,
            settings,
            backend,
            console,
            chunk_size=chunk_size,
            retry_errors=retry_errors,
            report=report,
        )


def outcome_table(verdicts: Sequence[Verdict], title: str) -> Table:
    """Counts of verdict outcomes (A, B, tie, error) and the position-consistency rate."""
    counts = Counter(v.preferred if v.status == "ok" else "error" for v in verdicts)
    ok = [v for v in verdicts if v.status == "ok" and v.position_consistent is not None]
    table = Table(title=title, title_justify="left")
    for name in ("pairs", "A", "B", "tie", "error", "position-consistent"):
        table.add_column(name, justify="right")
    rate = f"{sum(v.position_consistent for v in ok) / len(ok):.1%}" if ok else "n/a"
    table.add_row(
        str(len(verdicts)), *(str(counts.get(k, 0)) for k in ("A", "B", "tie", "error")), rate
    )
    return table


def print_errors(console: Console, verdicts: Sequence[Verdict], limit: int = 5) -> None:
    """Print the first few errored verdicts with their reasons."""
    errors = [v for v in verdicts if v.status == "error"]
    for verdict in errors[:limit]:
        console.print(
            f"[red]error[/red] {escape(verdict.pair_id)}: {escape(verdict.error or '')}",
            soft_wrap=True,
        )
    if len(errors) > limit:
        console.print(f"... and {len(errors) - limit} more errors (see the verdict file)")


@dataclass
class PairInputs:
    """The pairs a judging command works on, and what its journal binds them to.

    Attributes:
        pairs: The pairs.
        files: Local input files by role (``pairs``, ``tasks``), hashed by the journal.
        sources: Identities of hub datasets and dataset folders by role (``pairs_source``,
            ``tasks_source``), bound as settings; empty when every input is a file.
    """

    pairs: list[Pair]
    files: dict[str, list[Path]] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_pair_inputs(
    paths: tuple[str, ...],
    tasks_path: str | None,
    fmt: str,
    skip_invalid: bool,
    console: Console,
    *,
    split: str | None = None,
    subset: str | None = None,
) -> PairInputs:
    """Load the pairs a judging command works on, printing notes and skipped rows.

    Args:
        paths: One pair source (a file, a dataset folder or a hub dataset, see
            :func:`prefjudge.judge.pairs.load_preference_source`), or two generation files
            (joined on task id, and on protocol, k and sample when both files carry them).
        tasks_path: A task source (file, folder or hub dataset) giving the instructions for
            two generation files.
        fmt: Format of a pair file (``auto`` to detect it).
        skip_invalid: Skip unusable rows (listed) instead of stopping.
        console: Where notes go.
        split: Split of a hub dataset or folder among the sources.
        subset: Subset of a hub dataset among the sources.

    Returns:
        The pairs, with the files and source identities their journal binds.
    """
    try:
        if len(paths) == 2:
            for index, path in enumerate(paths):
                if not Path(path).is_file():
                    hint = "GENERATIONS_B" if index else "PAIRS"
                    raise click.BadParameter(
                        f"{path}: no such file (two arguments are generation files)",
                        param_hint=hint,
                    )
            inputs = PairInputs([], {"pairs": [Path(p) for p in paths]})
            tasks = None
            if tasks_path:
                try:
                    loaded, where = open_task_source(tasks_path, split=split, subset=subset)
                except SourceError as exc:
                    raise source_failure(exc, "--tasks") from exc
                tasks = {t.task_id: t.prompt for t in loaded.values()}
                inputs.files["tasks"] = list(where.paths)
                if where.identity:
                    inputs.sources["tasks_source"] = dict(where.identity)
            inputs.pairs, notes = pairs_from_generations(paths[0], paths[1], tasks=tasks)
            for note in notes:
                console.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True)
            return inputs
        try:
            pairs, issues, origin = open_preference_source(
                paths[0], fmt=fmt, split=split, subset=subset, skip_invalid=skip_invalid  # type: ignore[arg-type]
            )
        except SourceError as exc:
            raise source_failure(exc, "PAIRS") from exc
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    for issue in issues:
        console.print(f"[yellow]skipped:[/yellow] {escape(str(issue))}", soft_wrap=True)
    inputs = PairInputs(pairs, {"pairs": list(origin.paths)})
    if origin.identity:
        inputs.sources["pairs_source"] = dict(origin.identity)
    return inputs


FORMAT_CHOICE = click.Choice(
    ["auto", "prefjudge", "codeprefbench", "copilot_arena", "bigcodereward"]
)


def pairs_format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--pairs-format`` (the command receives ``fmt``); ``--format`` is its old name."""
    func = click.option(
        "--pairs-format",
        "fmt",
        type=FORMAT_CHOICE,
        default="auto",
        show_default=True,
        help="Format of the pair file (auto: told from its content).",
    )(func)
    return renamed_option(
        "--format",
        "--pairs-format",
        "fmt",
        type=FORMAT_CHOICE,
        note="--format means what a command prints (table or json)",
    )(func)
