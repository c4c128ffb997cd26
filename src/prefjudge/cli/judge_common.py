"""Shared plumbing of the judge commands: settings, resumable judging, progress, printing."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.backends import Backend, BackendError, Result, create_backend
from prefjudge.config import BackendConfig, progress_bars, report_usage
from prefjudge.guidance import Guidance, GuidanceError, load_guidance
from prefjudge.io import JsonlAppender, read_existing
from prefjudge.judge import METHODS, JudgeSettings, judge_pairs
from prefjudge.records import Pair, Verdict

METHOD_CHOICE = click.Choice(sorted(METHODS))


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
    seed = config.seed if config.seed is not None else 0
    return JudgeSettings(
        method=method,
        min_criteria=opts["min_criteria"],
        max_criteria=opts["max_criteria"],
        refine=not opts["no_refine"] and opts["max_refine"] > 0,
        max_refine=opts["max_refine"],
        evidence=opts["evidence"],
        guidance=guidance,
        templates=opts["templates"],
        sampling=config.sampling(max_tokens=2048, seed=seed),
    )


def open_guidance(folder: str | None) -> Guidance | None:
    """Load a guidance folder or fail with a usage error."""
    if folder is None:
        return None
    try:
        return load_guidance(folder)
    except GuidanceError as exc:
        raise click.ClickException(str(exc)) from exc


def open_backend(config: BackendConfig) -> Backend:
    """Create the backend or fail with a clear message."""
    try:
        return create_backend(config)
    except BackendError as exc:
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


def resume_verdicts(out: Path, method: str, settings: JudgeSettings) -> dict[str, Verdict]:
    """Read the verdicts an earlier run of the same method left in ``out``."""
    done: dict[str, Verdict] = {}
    wanted = settings.guidance.label if settings.guidance else None
    for number, data in enumerate(read_existing(out), start=1):
        try:
            verdict = Verdict.model_validate(data)
        except ValidationError as exc:
            raise click.ClickException(f"{out}:{number}: not a verdict: {exc}") from exc
        if verdict.method != method:
            raise click.ClickException(
                f"{out}:{number}: written by method {verdict.method!r}, this run is {method!r}; "
                "use another -o"
            )
        if verdict.guidance != wanted:
            raise click.ClickException(
                f"{out}:{number}: written with guidance {verdict.guidance!r}, this run uses "
                f"{wanted!r}; use another -o"
            )
        done[verdict.pair_id] = verdict
    return done


def run_judging(
    pairs: Sequence[Pair],
    out: Path | None,
    settings: JudgeSettings,
    backend: Backend,
    console: Console,
    *,
    chunk_size: int,
    retry_errors: bool = False,
    report: bool = True,
) -> list[Verdict]:
    """Judge pairs, journaling verdicts to ``out`` as chunks finish; resume from ``out``.

    Args:
        pairs: The pairs.
        out: Verdict JSONL (appended), or None to keep verdicts in memory only.
        settings: Judge settings.
        backend: The judge model.
        console: Where progress and notes go.
        chunk_size: Pairs per batch.
        retry_errors: Judge again the pairs whose earlier verdict is an error.
        report: Print the backend's usage table at the end.

    Returns:
        One verdict per pair, in input order (earlier ones included).
    """
    done = resume_verdicts(out, settings.method, settings) if out else {}
    if retry_errors:
        done = {k: v for k, v in done.items() if v.status == "ok"}
    todo = [p for p in pairs if p.pair_id not in done]
    if done:
        console.print(
            f"resuming: {len(pairs) - len(todo)} verdicts already in {out}, {len(todo)} to judge"
        )
    fresh: dict[str, Verdict] = {}
    started = time.monotonic()
    try:
        with judging_progress(console, len(todo), settings.method) as (on_result, on_verdict):
            writer = JsonlAppender(out) if out else None
            try:
                for verdict in judge_pairs(
                    todo, backend, settings, chunk_size=chunk_size, on_result=on_result
                ):
                    if writer:
                        writer.write(verdict)
                    fresh[verdict.pair_id] = verdict
                    on_verdict()
            finally:
                if writer:
                    writer.close()
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if report:
            report_usage(console, backend, started=started)
    merged = {**done, **fresh}
    return [merged[p.pair_id] for p in pairs if p.pair_id in merged]


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
