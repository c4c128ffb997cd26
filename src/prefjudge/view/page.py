r"""Build the viewer's one self-contained HTML page from what :mod:`.load` read.

Record text never reaches the HTML as markup: what the page renders itself is escaped with
:func:`html.escape` (``quote=True``), and the records go to the page's script as JSON in a
``<script type="application/json">`` block with ``<``, ``>``, ``&``, U+2028 and U+2029
written as ``\uXXXX`` escapes (:func:`script_json`); the script puts every text into the
page with ``textContent``. A Content-Security-Policy allows the page's own script and style
(by their SHA-256) and nothing else: no other script, and no network request of any kind.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

from prefjudge import __version__
from prefjudge.view.leaderboard import leaderboard_table
from prefjudge.view.load import KIND_NAMES, LEADERBOARD, Results

DEFAULT_MAX_CHARS = 20_000
"""Longest text embedded per field; longer ones are cut, with a visible ``[cut N chars]``."""

MAX_PROBLEMS_SHOWN = 100
"""Problem lines listed on the page (all are counted)."""

SCRIPTS = ("view_facts.js", "view.js")
"""The page's script files, in order, joined into its one script element (``view.js``
hands ``view_facts.js`` its building blocks)."""


@dataclass(frozen=True)
class Page:
    """The built page and what went into it.

    Attributes:
        html: The whole page.
        samples: Scored samples embedded.
        pairs: Verdicts embedded.
        cut_fields: Texts cut to the length limit.
        max_chars: The length limit.
        policy: The page's Content-Security-Policy (also in its ``<meta>`` tag; a server
            sends it as a header too).
    """

    html: str
    samples: int
    pairs: int
    cut_fields: int
    max_chars: int
    policy: str

    @property
    def size(self) -> int:
        """Size of the page in bytes (UTF-8)."""
        return len(self.html.encode("utf-8"))


def escape(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute (``html.escape``, quote=True)."""
    return html.escape(str(value), quote=True)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def _script_safe(text: str) -> str:
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def script_json(value: Any) -> str:
    r"""JSON safe to put inside ``<script type="application/json">``.

    Nothing in the result can end the script element or open a comment: ``<``, ``>`` and
    ``&`` are written as ``\u003c``, ``\u003e`` and ``\u0026`` (they only occur inside
    JSON strings, where the escapes mean the same characters). Every other character
    outside ASCII is a ``\uXXXX`` escape too (U+2028 and U+2029 among them, so the text is
    also a valid JavaScript literal).

    Args:
        value: JSON-serialisable data (no NaN or infinity).

    Returns:
        The JSON text (ASCII only).
    """
    return _script_safe(_json(value))


class _Capper:
    """Copies data for embedding: texts cut to ``max_chars``, non-finite floats as text."""

    def __init__(self, max_chars: int):
        self.max_chars = max_chars
        self.cut = 0

    def items_json(self, items: list[dict[str, Any]]) -> str:
        """A JSON list of the items, each copied and cut only when it holds a long text.

        An item whose whole JSON text is no longer than the limit holds no text over the
        limit: it is written as it is (the usual case: one serialisation, no copy).
        """
        parts = []
        for item in items:
            try:
                text = _json(item)
            except ValueError:  # NaN or infinity somewhere
                text = None
            if text is None or len(text) > self.max_chars:
                text = _json(self(item))
            parts.append(text)
        return "[" + ",".join(parts) + "]"

    def text(self, value: str) -> str:
        if len(value) <= self.max_chars:
            return value
        self.cut += 1
        left = len(value) - self.max_chars
        return f"{value[:self.max_chars]}\n… [cut {left} chars]"

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.text(str(value))


def _asset(name: str) -> str:
    return resources.files("prefjudge.view").joinpath("static", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def content_security_policy(script: str, style: str) -> str:
    """The page's policy: its own script and style (by hash), nothing else, no network.

    Args:
        script: The exact text of the page's one script element.
        style: The exact text of its one style element.

    Returns:
        The policy, for a ``<meta http-equiv="Content-Security-Policy">`` tag or a header.
    """
    return (f"default-src 'none'; script-src 'sha256-{_sha256(script)}'; "
            f"style-src 'sha256-{_sha256(style)}'; img-src 'none'; connect-src 'none'; "
            "base-uri 'none'; form-action 'none'")


def _found_section(results: Results) -> str:
    parts = ['<section id="found"><h2>What was found</h2><ul class="found">']
    for what, found in results.found().items():
        files = [f.path for f in results.files
                 if (f.kind == "leaderboard" and what == LEADERBOARD)
                 or KIND_NAMES.get(f.kind) == what]
        where = f" ({escape(', '.join(files))})" if found and files else ""
        parts.append(f'<li class="{"yes" if found else "no"}">{escape(what)}: '
                     f'{"found" if found else "not found"}{where}</li>')
    parts.append("</ul>")
    if results.files:
        parts.append('<table class="files"><thead><tr><th>file</th><th>read as</th>'
                     "<th>records / rows</th><th>unusable lines</th><th>note</th></tr></thead>"
                     "<tbody>")
        for f in results.files:
            kind = KIND_NAMES.get(f.kind, f.kind)
            parts.append(f"<tr><td>{escape(f.path)}</td><td>{escape(kind)}</td>"
                         f"<td>{f.records}</td><td>{f.problems}</td><td>{escape(f.note)}</td></tr>")
        parts.append("</tbody></table>")
    else:
        parts.append('<p class="note">No results files were found.</p>')
    if results.prompt_sources:
        parts.append(f'<p class="note">task prompts from: '
                     f'{escape("; ".join(results.prompt_sources))}</p>')
    parts += [f'<p class="note">{escape(note)}</p>' for note in results.notes]
    if results.problem_count:
        shown = results.problems[:MAX_PROBLEMS_SHOWN]
        parts.append(f'<details class="problems" id="problems"><summary>{results.problem_count} '
                     f'line(s) could not be used (not shown)</summary><ul>')
        parts += [f"<li>{escape(issue)}</li>" for issue in shown]
        if results.problem_count > len(shown):
            parts.append(f"<li>… and {results.problem_count - len(shown)} more</li>")
        parts.append("</ul></details>")
    parts.append("</section>")
    return "".join(parts)


def _leaderboard_section(results: Results, cap: _Capper) -> str:
    board = results.leaderboard
    if board is None:
        return (f'<section id="leaderboard"><h2>Leaderboard</h2><p class="absent">'
                f"No {LEADERBOARD} in the results.</p></section>")
    parts = [f'<section id="leaderboard"><h2>Leaderboard</h2><p class="note">'
             f'{escape(board["file"])}: numbers to 3 significant digits (hover a cell for '
             "the value as written)</p>",
             leaderboard_table(board["columns"], board["rows"], cap.text)]
    if board["cut"]:
        parts.append(f'<p class="note">[cut {board["cut"]} more rows]</p>')
    parts.append("</section>")
    return "".join(parts)


_FILTERS = (("f-model", "model"), ("f-task", "task"),
            ("f-cat", "instruction category (samples)"), ("f-status", "test status (samples)"),
            ("f-checks", "instruction checks (samples)"), ("f-verdict", "verdict (pairs)"))

_SELECT = '<label>{label}<select id="{ident}"><option value="">all</option></select></label>'
_BROWSE = "\n".join([
    '<section id="browse">',
    "<noscript><p class=\"absent\">The samples and pairs are listed by the page's own script: "
    "turn JavaScript on to browse them (the sections above need no script).</p></noscript>",
    '<form id="filters" class="filters" autocomplete="off">',
    *(_SELECT.format(ident=ident, label=label) for ident, label in _FILTERS),
    '<label>search<input type="search" id="f-q" placeholder="any text in a record"></label>',
    '<button type="button" id="f-clear">clear filters</button>',
    "</form>",
    '<output id="pj-state" data-ready="0"></output>',
    '<h2>Scored samples</h2><p class="count" id="samples-count"></p>',
    '<div id="samples" class="list"></div>',
    '<button type="button" class="more" id="samples-more" hidden></button>',
    '<h2>Judged pairs</h2><p class="count" id="pairs-count"></p>',
    '<div id="pairs" class="list"></div>',
    '<button type="button" class="more" id="pairs-more" hidden></button>',
    "</section>",
])


def build_page(results: Results, *, title: str = "prefjudge results",
               max_chars: int = DEFAULT_MAX_CHARS) -> Page:
    """Build the viewer page.

    Args:
        results: What :func:`prefjudge.view.load.load_results` read.
        title: The page title.
        max_chars: Longest text embedded per field (longer texts end in ``[cut N chars]``).

    Returns:
        The page, with counts of what it holds.

    Raises:
        ValueError: When ``max_chars`` is not positive.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    cap = _Capper(max_chars)
    head = _json({
        "title": cap.text(title),
        "source": cap.text(results.source),
        "prompts": cap(results.prompts),
        "categories": cap(results.categories),
        "max_chars": max_chars,
    })
    data = _script_safe(f'{head[:-1]},"samples":{cap.items_json(results.samples)},'
                        f'"pairs":{cap.items_json(results.pairs)}}}')
    leaderboard = _leaderboard_section(results, cap)
    script = "".join(_asset(name) for name in SCRIPTS)
    style = _asset("view.css")
    policy = content_security_policy(script, style)
    facts = (f"{escape(results.source)} · {len(results.samples)} scored samples · "
             f"{len(results.pairs)} judged pairs · prefjudge {escape(__version__)}")
    page = "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy)}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{escape(title)}</title>\n<style>{style}</style></head>\n<body>\n",
        f'<header><h1>{escape(title)}</h1><p class="facts-line">{facts}</p></header>\n',
        _found_section(results), "\n", leaderboard, "\n", _BROWSE, "\n",
        f'<script type="application/json" id="pj-data">{data}</script>\n',
        f"<script>{script}</script>\n</body></html>\n",
    ])
    return Page(html=page, samples=len(results.samples), pairs=len(results.pairs),
                cut_fields=cap.cut, max_chars=max_chars, policy=policy)
