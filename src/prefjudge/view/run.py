"""The ``view`` use case: a results folder (or file) in, one self-contained HTML page out.

``prefjudge view`` parses its options into :class:`ViewSettings` and calls
:func:`view_folder`; ``prefjudge run`` calls the same function. It never prints: what it
found (each file with its kind, the parts not found, the lines it could not use) and the
file written are said through a :class:`~prefjudge.reporting.Reporter`. Serving the page
(``view --serve``) stays with the command: the outcome holds the page.

An output path of ``-`` is not written: its text comes back in
:attr:`ViewOutcome.stdout` for the caller to write.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from prefjudge.journal import JournalError, check_writable
from prefjudge.reporting import Reporter, StageError
from prefjudge.view.load import KIND_NAMES, Results, load_results
from prefjudge.view.page import DEFAULT_MAX_CHARS, Page, build_page

STDOUT = Path("-")
"""An output path meaning "give the text back" (the command line writes it to stdout)."""

PROBLEMS_SHOWN = 5
"""Unusable lines listed through the reporter (the page lists them all)."""


def default_output(results: Path) -> Path:
    """Where the page goes without ``-o``: ``RESULTS/view.html``, or ``NAME.view.html``.

    Args:
        results: The results folder, or one results file.

    Returns:
        The folder's ``view.html``, or ``<stem>.view.html`` beside a single file.
    """
    if results.is_dir():
        return results / "view.html"
    name = results.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
    return results.with_name(f"{name}.view.html")


@dataclass(frozen=True)
class ViewSettings:
    """What ``prefjudge view`` does (its options; defaults are the command's).

    Attributes:
        results: A results folder (read with one folder down), or one results file.
        output: The page (None: :func:`default_output`; ``-``: returned in
            ``ViewOutcome.stdout``).
        write: False to build the page only (``view --serve`` without ``-o``).
        max_chars: Longest text kept per field.
        title: Page title.
    """

    results: Path
    output: Path | None = None
    write: bool = True
    max_chars: int = DEFAULT_MAX_CHARS
    title: str = "prefjudge results"


@dataclass(frozen=True)
class ViewOutcome:
    """What :func:`view_folder` made.

    Attributes:
        page: The page (its HTML, size and counts; what ``view --serve`` serves).
        output: The file written, ``-`` when the page is in ``stdout``, or None.
        summary: The page in a few words (samples, pairs, size, texts cut).
        stdout: The page's HTML when ``output`` is ``-``, else None.
    """

    page: Page
    output: Path | None
    summary: str
    stdout: str | None


def _is_stdout(path: Path) -> bool:
    return os.fspath(path) == os.fspath(STDOUT)


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


def _report_found(results: Results, reporter: Reporter) -> None:
    """Say what each file held, which parts were found and which lines were not used."""
    for source in results.files:
        kind = KIND_NAMES.get(source.kind, source.kind)
        unit = "rows" if source.kind == "leaderboard" else "records"
        counts = f"{source.records} {unit}" if source.kind != "skipped" else "skipped"
        bad = f", {source.problems} unusable lines" if source.problems else ""
        note = f" — {source.note}" if source.note else ""
        reporter.note(f"  {source.path}: {kind}, {counts}{bad}{note}")
    found = results.found()
    have = [what for what, ok in found.items() if ok]
    missing = [what for what, ok in found.items() if not ok]
    reporter.note(f"found: {', '.join(have) or 'nothing to show'}"
                  + (f"; not found: {', '.join(missing)}" if missing else ""))
    for note in results.notes:
        reporter.warn(f"note: {note}")
    if results.problem_count:
        reporter.warn(f"{results.problem_count} line(s) could not be used (listed on the page):")
        for issue in results.problems[:PROBLEMS_SHOWN]:
            reporter.note(f"  {issue}")
        if results.problem_count > PROBLEMS_SHOWN:
            reporter.note(f"  ... and {results.problem_count - PROBLEMS_SHOWN} more")


def view_folder(settings: ViewSettings, reporter: Reporter) -> ViewOutcome:
    """Build the page of a results folder and write it (what ``prefjudge view`` does).

    Reads ``leaderboard.csv``, scored samples and judge verdicts (with the pairs and
    tasks they name), in the folder and one folder down (:func:`prefjudge.view.load_results`),
    and builds one self-contained page (:func:`prefjudge.view.build_page`).

    Args:
        settings: The results, the page's options and where it goes.
        reporter: Gets what was found, the lines not used and the file written.

    Returns:
        The page, where it went and its summary.

    Raises:
        StageError: When nothing in ``results`` can be shown, or the page cannot be
            written.
    """
    output = (settings.output or default_output(settings.results)) if settings.write else None
    if output is not None and not _is_stdout(output):
        try:
            check_writable(output)
        except JournalError as exc:
            raise StageError(str(exc)) from None
    reporter.note(f"reading {settings.results}")
    found = load_results(settings.results)
    _report_found(found, reporter)
    if not any(found.found().values()):
        raise StageError(
            f"{settings.results}: nothing to show (no leaderboard.csv, scored samples or judge "
            "verdicts found)")
    page = build_page(found, title=settings.title, max_chars=settings.max_chars)
    cut = (f"; {page.cut_fields} texts cut to {settings.max_chars} chars" if page.cut_fields
           else "")
    summary = (f"{page.samples} scored samples, {page.pairs} judged pairs, "
               f"{_size(page.size)}{cut}")
    stdout = None
    if output is not None:
        if _is_stdout(output):
            stdout = page.html
        else:
            try:
                output.write_text(page.html, encoding="utf-8")
            except OSError as exc:
                raise StageError(f"cannot write {output}: {exc.strerror or exc}") from None
        where = "stdout" if _is_stdout(output) else str(output)
        reporter.note(f"wrote {where}: {summary}")
    return ViewOutcome(page=page, output=output, summary=summary, stdout=stdout)


__all__ = ["PROBLEMS_SHOWN", "STDOUT", "ViewOutcome", "ViewSettings", "default_output",
           "view_folder"]
