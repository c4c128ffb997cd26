"""What the judging commands (``pair``, ``judge``, ``judge-eval``, ``guidance``) share.

Their common options, the settings fields those options give
(:class:`prefjudge.judge.settings.JudgeOptions`), how a stage's failure is shown, and the
printed outcome tables. The judging itself is in :mod:`prefjudge.judge.run`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prefjudge.cli.defaults import JUDGE_METHODS, JUDGE_SAMPLING, MODEL_METHODS, PAIR_FORMATS
from prefjudge.cli.options import apply_options, renamed_option
from prefjudge.reporting import (
    NAME_WIDTH,
    TEXT_WIDTH,
    StageError,
    display_name,
    display_text,
    nothing_done,
)
from prefjudge.scoring.profiles import JUDGE_PROFILE, PROFILES

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from prefjudge.backends import Backend, Sampling
    from prefjudge.judge.pairs import PairInputs
    from prefjudge.records import Verdict

__all__ = [
    "JUDGE_SAMPLING",
    "METHOD_CHOICE",
    "judge_option_values",
    "judge_options",
    "nothing_judged",
    "outcome_table",
    "pairs_format_option",
    "print_errors",
    "read_pairs_or_fail",
    "stage_failure",
    "usage_report",
]

METHOD_CHOICE = click.Choice(list(JUDGE_METHODS))


def judge_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the options every judging command shares."""
    return apply_options(func, [*_method_flags(), *_evidence_flags(), *_run_flags()])


def _method_flags() -> list[Callable[[Any], Any]]:
    """``--guidance`` to ``--templates``: what the model-based methods ask and keep."""
    return [
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
    ]


def _evidence_flags() -> list[Callable[[Any], Any]]:
    """``--criterion`` to ``--fallback``: the evidence and hybrid methods' inputs."""
    return [
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
            "--profile",
            type=click.Choice(sorted(PROFILES)),
            default=None,
            help="evidence/hybrid: the verification profile of the instruction facts, as "
            "for `prefjudge score`: 'strict' ignores # noqa and isort action comments (a "
            "response cannot silence the check it breaks), PEP 8's 79/72, target py311; "
            "'reference' gives the SWE-IF authors' verdicts. Bound in the verdict file.  "
            f"[default: {JUDGE_PROFILE}]",
        ),
        click.option(
            "--allow-undecided",
            is_flag=True,
            help="evidence/hybrid: judge even when the evidence cannot decide the pairs (e.g. "
            "correctness without --tests): the undecided pairs are ties (hybrid: go to "
            "--fallback), and a warning counts them. Without it, that is refused.",
        ),
        click.option(
            "--fallback",
            type=click.Choice(sorted(MODEL_METHODS)),
            default="criteralign",
            show_default=True,
            help="hybrid: the model-based method for the pairs the evidence leaves undecided.",
        ),
    ]


def _run_flags() -> list[Callable[[Any], Any]]:
    """``--tokenizer`` and ``--chunk-size``: the length feature and the batch size."""
    return [
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


def read_pairs_or_fail(
    paths: tuple[str, ...],
    tasks: tuple[str, ...],
    fmt: str,
    skip_invalid: bool,
    console: Console,
    *,
    split: str | None = None,
    subset: str | None = None,
) -> PairInputs:
    """Read the pairs a command names, failing as click does when they cannot be used.

    :func:`prefjudge.judge.pairs.read_pair_inputs` with a console reporter, its stage
    errors turned into click errors.

    Args:
        paths: One pair source, or two generation files.
        tasks: Task sources for two generation files (``--tasks``).
        fmt: Format of a pair file (``auto`` to detect it).
        skip_invalid: Skip unusable rows (listed) instead of stopping.
        console: Where notes go.
        split: Split of a hub dataset or folder among the sources.
        subset: Subset of a hub dataset among the sources.

    Returns:
        The pairs, with the files and source identities their journal binds.

    Raises:
        click.ClickException: When an input cannot be used (a usage error naming the
            argument when it names no file or dataset).
    """
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.judge.pairs import read_pair_inputs

    try:
        return read_pair_inputs(
            paths,
            tasks,
            fmt,
            skip_invalid,
            ConsoleReporter(console),
            split=split,
            subset=subset,
        )
    except StageError as exc:
        raise stage_failure(exc) from exc


def outcome_table(verdicts: Sequence[Verdict], title: str) -> Table:
    """Counts of verdict outcomes (A, B, tie, error) and the position-consistency rate."""
    from rich.table import Table

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
    """Print the first few errored verdicts with their reasons (long ids and reasons cut)."""
    from rich.markup import escape

    errors = [v for v in verdicts if v.status == "error"]
    for verdict in errors[:limit]:
        pair_id = display_name(verdict.pair_id, NAME_WIDTH)
        error = display_text(verdict.error or "", TEXT_WIDTH)
        console.print(
            f"[red]error[/red] {escape(pair_id)}: {escape(error)}",
            soft_wrap=True,
            highlight=False,
        )
    if len(errors) > limit:
        console.print(f"... and {len(errors) - limit} more errors (see the verdict file)")


def judge_option_values(
    opts: dict[str, Any], *, guidance_dir: str | None, chunk_size: int, sampling: Sampling
) -> dict[str, Any]:
    """The :class:`~prefjudge.judge.settings.JudgeOptions` fields from the shared flags.

    Args:
        opts: The flags of :func:`judge_options` the command received as ``**opts``.
        guidance_dir: ``--guidance``.
        chunk_size: ``--chunk-size``.
        sampling: The judge's sampling (``backend_config.sampling(**JUDGE_SAMPLING)``).

    Returns:
        Keyword arguments for a settings class deriving from ``JudgeOptions``.
    """
    return {
        "fallback": opts["fallback"],
        "criterion": opts["criterion"],
        "tests": tuple(opts["tests_sources"]),
        "profile": opts["profile"],
        "allow_undecided": opts["allow_undecided"],
        "guidance": None if guidance_dir is None else Path(guidance_dir),
        "evidence": opts["evidence"],
        "min_criteria": opts["min_criteria"],
        "max_criteria": opts["max_criteria"],
        "refine": not opts["no_refine"],
        "max_refine": opts["max_refine"],
        "templates": None if opts["templates"] is None else Path(opts["templates"]),
        "tokenizer": opts["tokenizer"],
        "chunk_size": chunk_size,
        "sampling": sampling,
    }


def figure_text(value: float | None) -> str:
    """A figure with three decimals, ``n/a`` when there is none."""
    return "n/a" if value is None else f"{value:.3f}"


def interval_text(ci: list[float] | None) -> str:
    """An interval as ``[low, high]`` with three decimals, empty when there is none."""
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def nothing_judged(verdicts: Sequence[Verdict], output: object) -> StageError | None:
    """:func:`prefjudge.reporting.nothing_done` for verdicts (rerun: ``--retry-errors``)."""
    errors = [v for v in verdicts if v.status == "error"]
    example = next((v.error for v in errors if v.error), "")
    return nothing_done(len(verdicts), len(errors), what="verdicts", where=output,
                        example=example, rerun="--retry-errors")


def stage_failure(exc: StageError) -> click.ClickException:
    """The click error that shows a judging stage's failure.

    Args:
        exc: The stage's error.

    Returns:
        A usage error (naming the option when the error names one) for a
        :class:`~prefjudge.judge.settings.JudgeOptionError`, else a plain failure.
    """
    from prefjudge.judge.settings import JudgeOptionError

    if isinstance(exc, JudgeOptionError):
        if exc.option:
            return click.BadParameter(str(exc), param_hint=exc.option)
        return click.UsageError(str(exc))
    return click.ClickException(str(exc))


def usage_report(console: Console, backend: Backend | None, started: float, *, done: bool) -> None:
    """Print the judge model's usage table, unless no model took part or nothing was asked.

    Args:
        console: Where to print.
        backend: The judge model, or None when the method asks none.
        started: ``time.monotonic()`` when judging began.
        done: The stage finished (the table is printed even when the cache answered all).
    """
    if backend is not None and (done or backend.usage.requests):
        from prefjudge.cli.display import report_usage

        report_usage(console, backend, started=started)


FORMAT_CHOICE = click.Choice(["auto", *PAIR_FORMATS])


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
