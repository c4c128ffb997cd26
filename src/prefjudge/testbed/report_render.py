"""A :class:`~prefjudge.testbed.report_types.Report` written as HTML or Markdown.

:func:`render_html` writes one self-contained page (CSS inline, figures embedded as
base64 PNG data URIs, no external asset); :func:`render_markdown` writes the same content
as Markdown that links its figures as PNG files beside it (:func:`figure_files`).
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any
from urllib.parse import quote

from prefjudge.reporting import TEXT_WIDTH, display_text
from prefjudge.testbed.report_types import Report, ReportTable, _fmt

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { border-bottom: 2px solid #ccc; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
caption { caption-side: top; font-weight: bold; text-align: left; padding: 4px 0; }
img { max-width: 100%; display: block; margin: 0.5em 0; }
.facts { color: #555; } nav a { margin-right: 1em; }
"""


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _html_table(table: ReportTable) -> str:
    frame = table.display
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    if frame.empty:
        body = f'<tr><td colspan="{max(len(frame.columns), 1)}">no rows</td></tr>'
    return (f"<table><caption>{html.escape(table.caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>")


def render_html(report: Report) -> str:
    """One self-contained HTML page: inline CSS, figures as base64 PNG data URIs.

    Args:
        report: Output of :func:`build_report`.

    Returns:
        The page.
    """
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(report.title)}</h1>"]
    parts += [f'<p class="facts">{html.escape(fact)}</p>' for fact in report.facts]
    parts.append("<nav>" + "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>'
                                   for s in report.sections) + "</nav>")
    for section in report.sections:
        parts.append(f'<section id="{section.key}"><h2>{html.escape(section.title)}</h2>')
        if section.text:
            parts.append(f"<p>{html.escape(section.text)}</p>")
        if section.figure:
            parts.append(f'<img alt="{html.escape(section.title)}" '
                         f'src="{_data_uri(section.figure)}">')
        parts += [_html_table(table) for table in section.tables]
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _cell(value: Any) -> str:
    """A table cell as the page shows it: at most :data:`TEXT_WIDTH` characters."""
    return display_text(_fmt(value), TEXT_WIDTH)


def _md_cell(value: Any) -> str:
    return _cell(value).replace("|", "\\|").replace("\n", " ")


def _md_table(table: ReportTable) -> str:
    frame = table.display
    lines = [f"**{table.caption}**", ""]
    if frame.empty:
        return "\n".join([*lines, "_no rows_", ""])
    lines.append("| " + " | ".join(_md_cell(c) for c in frame.columns) + " |")
    lines.append("|" + "|".join("---" for _ in frame.columns) + "|")
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join([*lines, ""])


def figure_files(report: Report, markdown: Path) -> dict[str, Path]:
    """Where the Markdown report's figures go: next to it, ``<stem>-<section>.png``.

    Args:
        report: Output of :func:`build_report`.
        markdown: The Markdown file.

    Returns:
        Section key → PNG file, for the sections with a figure.
    """
    return {section.key: markdown.with_name(f"{markdown.stem}-{section.key}.png")
            for section in report.sections if section.figure}


NO_FIGURE_FILES = "_(plot left out: the Markdown went to stdout; the HTML report has it)_"
"""What the Markdown shows in place of a plot when it has no folder to link the file from."""


def render_markdown(report: Report, figures: dict[str, Path] | None = None) -> str:
    """The report as Markdown; its figures are PNG files it links to.

    Args:
        report: Output of :func:`build_report`.
        figures: Section key → PNG file holding that section's figure
            (:func:`figure_files`), linked by its name (the Markdown is in the same
            folder); None: no file to link (the Markdown goes to stdout), a line says
            the plot is in the HTML report.

    Returns:
        The Markdown text.
    """
    lines = [f"# {report.title}", ""]
    lines += [f"- {fact}" for fact in report.facts]
    lines.append("")
    for section in report.sections:
        lines += [f"## {section.title}", ""]
        if section.text:
            lines += [section.text, ""]
        if section.figure:
            link = None if figures is None else figures.get(section.key)
            image = f"![{section.title}]({quote(link.name)})" if link else NO_FIGURE_FILES
            lines += [image, ""]
        lines += [_md_table(table) for table in section.tables]
    return "\n".join(lines)
