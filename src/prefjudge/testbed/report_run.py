"""The ``report`` use case: scored records in, one HTML page (and Markdown with PNGs) out.

``prefjudge report`` parses its options into :class:`ReportSettings` and calls
:func:`report_file`; ``prefjudge run`` calls the same function. It never prints: the
files written are said through a :class:`~prefjudge.reporting.Reporter`. The page itself
is :mod:`prefjudge.testbed.report`.

An output path of ``-`` is not written: its text comes back in
:attr:`ReportOutcome.stdout` for the caller to write (at most one output may be ``-``).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.io import InputError, parse_json, read_records
from prefjudge.journal import JournalError, check_writable
from prefjudge.records import ScoredSample
from prefjudge.reporting import Reporter, StageError, display_name
from prefjudge.scoring.metrics import DEFAULT_RESAMPLES
from prefjudge.stats import DEFAULT_SEED
from prefjudge.testbed.paper_tables import PaperTableError
from prefjudge.testbed.report import (
    build_report,
    figure_files,
    judge_summary_problem,
    render_html,
    render_markdown,
)

STDOUT = Path("-")
"""An output path meaning "give the text back" (the command line writes it to stdout)."""


@dataclass(frozen=True)
class ReportSettings:
    """What ``prefjudge report`` does (its options; defaults are the command's).

    Attributes:
        scores: Scored records (JSONL from ``prefjudge score``).
        output: The HTML page (:data:`STDOUT`: returned in ``ReportOutcome.stdout``).
        markdown: The same report as Markdown, or None; its plots are written beside it as
            ``<stem>-<section>.png`` (:func:`~prefjudge.testbed.report.figure_files`),
            none when it is :data:`STDOUT`.
        paper_dir: Folder of the SWE-IF paper's per-model CSVs, to rebuild their tables.
        min_pairs: Fewest shared samples for an instruction pair in the co-failure matrix.
        n_resamples: Bootstrap resamples over tasks.
        seed: Bootstrap seed.
        judge_eval: A ``judge-eval`` ``summary.json``, to add the judge-bias section.
        title: Page title.
        source_name: How ``scores`` is named on the page and in messages (None: its
            path; the command line passes ``-`` for stdin).
    """

    scores: Path
    output: Path = Path("report.html")
    markdown: Path | None = None
    paper_dir: Path | None = None
    min_pairs: int = 5
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    judge_eval: Path | None = None
    title: str = "prefjudge report"
    source_name: str | None = None


@dataclass(frozen=True)
class ReportOutcome:
    """What :func:`report_file` made.

    Attributes:
        sections: Sections of the report.
        figures: Sections with a plot.
        samples: Scored samples read.
        written: Files written, in order (not the one that is ``-``): the page, the
            Markdown's plots, the Markdown.
        stdout: The text of the output that is ``-``, or None.
    """

    sections: int
    figures: int
    samples: int
    written: tuple[Path, ...]
    stdout: str | None


def _is_stdout(path: str | os.PathLike[str] | None) -> bool:
    return path is not None and os.fspath(path) == os.fspath(STDOUT)


def _judge_summary(path: Path) -> dict[str, Any]:
    """Read a ``judge-eval`` ``summary.json``.

    Raises:
        StageError: When it is not one.
    """
    try:
        summary = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # JsonValueError (nesting too deep), UnicodeError
        raise StageError(f"{path}: not a judge-eval summary ({exc})") from None
    problem = judge_summary_problem(summary)
    if problem:
        field, message = problem
        raise StageError(f"{path}: field '{display_name(field)}' {message}: not a judge-eval "
                         "summary.json (--judge-eval)")
    return summary


def report_file(settings: ReportSettings, reporter: Reporter) -> ReportOutcome:
    """Write the report of scored records (what ``prefjudge report`` does).

    Per model and protocol: pass@1, FR_k, instruction- and task-level IF by k with 95 %
    CIs; IF by position, category and instruction; a co-failure matrix; multi-turn
    retention; a plot for each (:func:`prefjudge.testbed.report.build_report`).

    Args:
        settings: The scored records, the report's options and the outputs.
        reporter: Gets the files written, with the report's size.

    Returns:
        The report's size and the files written.

    Raises:
        StageError: When the records, the judge-eval summary or a paper table cannot be
            read, there are no records (and no ``paper_dir``), two outputs are ``-``, or
            an output cannot be written.
    """
    outputs = [path for path in (settings.output, settings.markdown) if path is not None]
    if sum(_is_stdout(path) for path in outputs) > 1:
        raise StageError("only one output can go to stdout ('-'): -o/--output and --markdown")
    for path in outputs:
        if not _is_stdout(path):
            try:
                check_writable(path)
            except JournalError as exc:
                raise StageError(str(exc)) from None
    source = settings.source_name or str(settings.scores)
    try:
        records, _ = read_records(settings.scores, ScoredSample)
    except InputError as exc:
        raise StageError(str(exc)) from exc
    if not records and settings.paper_dir is None:  # with a paper folder, its tables show
        raise StageError(f"{source}: no scored records in the file (it is empty)")
    judge_summary = (_judge_summary(settings.judge_eval) if settings.judge_eval is not None
                     else None)
    try:
        report = build_report([rec for _, rec in records], title=settings.title, source=source,
                              paper_dir=settings.paper_dir, min_pairs=settings.min_pairs,
                              n_resamples=settings.n_resamples, seed=settings.seed,
                              judge_summary=judge_summary)
    except PaperTableError as exc:
        raise StageError(str(exc)) from exc
    except (UnicodeDecodeError, csv.Error) as exc:  # a paper CSV that is not UTF-8 text
        raise StageError(f"{settings.paper_dir}: a paper table cannot be read ({exc})") from exc
    texts: list[tuple[Path, str | bytes]] = [(settings.output, render_html(report))]
    pictures: dict[str, Path] = {}
    if settings.markdown:
        if not _is_stdout(settings.markdown):
            pictures = figure_files(report, settings.markdown)
            figures_by_key = {section.key: section.figure for section in report.sections}
            texts += [(path, figures_by_key[key] or b"") for key, path in pictures.items()]
        markdown = render_markdown(report, None if _is_stdout(settings.markdown) else pictures)
        texts.append((settings.markdown, markdown))
    for path, text in texts:
        if not _is_stdout(path):
            _write(path, text)
    figures = sum(1 for s in report.sections if s.figure)
    pages = [(path, text) for path, text in texts if isinstance(text, str)]
    names = ", ".join("stdout" if _is_stdout(path) else str(path) for path, _ in pages)
    beside = f" (its {len(pictures)} plots as PNG files beside it)" if pictures else ""
    reporter.note(f"wrote {names}{beside}: {len(report.sections)} sections, {figures} plots, "
                  f"{len(records)} scored samples")
    return ReportOutcome(
        sections=len(report.sections), figures=figures, samples=len(records),
        written=tuple(path for path, _ in texts if not _is_stdout(path)),
        stdout=next((text for path, text in pages if _is_stdout(path)), None),
    )


def _write(path: Path, content: str | bytes) -> None:
    """Write a page (UTF-8 text) or a figure (PNG bytes).

    Raises:
        StageError: When it cannot be written.
    """
    try:
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise StageError(f"cannot write {path}: {exc.strerror or exc}") from None


__all__ = ["STDOUT", "ReportOutcome", "ReportSettings", "report_file"]
