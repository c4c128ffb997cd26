"""The viewer shows a verdict's evidence facts, and an efficiency fact's cost curves.

The results folder (:mod:`pj_h10_facts`) holds one verdict judged for real by
``prefjudge judge --method evidence`` and verdicts the evidence judge's code made from facts
of every kind, one of them an efficiency fact measured on three input scales. The page data
test needs no browser; the others render the page in headless Chromium (``--dump-dom``)
and skip when it is not installed (``bash scripts/setup_chromium.sh``).
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from pj_h10_facts import HOSTILE_FACT, HOSTILE_SOURCE, FactsBuilt, build_facts_results

from prefjudge.view import load_results
from prefjudge.view.page import SCRIPTS, build_page

CHROMIUM = Path("/usr/bin/chromium")
DATA_BLOCK = re.compile(r'<script type="application/json" id="pj-data">(.*?)</script>', re.S)
browser = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless Chromium not installed at /usr/bin/chromium (run scripts/setup_chromium.sh)",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> FactsBuilt:
    return build_facts_results(tmp_path_factory.mktemp("facts"), tmp_path_factory.mktemp("w"))


def dump(page: Path, pair: str, tmp_path: Path) -> str:
    """The DOM after the page's script ran, with ``pair`` opened from the URL."""
    url = page.as_uri() + "#" + urllib.parse.urlencode({"pair": pair})
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", "--virtual-time-budget=2000",
         url], capture_output=True, text=True, timeout=90, check=False)
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


class Shown(HTMLParser):
    """What an opened pair shows: its tables' rows (by table class) and its plot's parts."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[str, list[str]]]] = {}
        self.svg: list[tuple[str, dict[str, str | None]]] = []
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._row_class = ""
        self._in_svg = False
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "table":
            self._table = next((c for c in classes if c != "grid"), "grid")
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table:
            self._row, self._row_class = [], found.get("class") or ""
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "svg":
            self._in_svg = True
        if self._in_svg:
            self.svg.append((tag, found))

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row and self._table:
            self.tables[self._table].append((self._row_class, self._row))
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._in_svg = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def polylines(self) -> dict[str, list[tuple[float, float]]]:
        lines = {}
        for tag, attrs in self.svg:
            if tag == "polyline":
                points = [tuple(map(float, p.split(","))) for p in (attrs["points"] or "").split()]
                lines[str(attrs["data-side"])] = points
        return lines


def opened(dom: str, pair: str) -> str:
    """The markup of the opened pair (details do not nest in the page)."""
    match = re.search(rf'<details class="item pair"[^>]*data-id="{re.escape(pair)}"[^>]*'
                      r'\sopen=""[^>]*>(.*?)</details>', dom, re.S)
    assert match, f"pair {pair} is not open"
    return match.group(1)


def test_the_page_data_carries_each_verdicts_facts_whole(built: FactsBuilt) -> None:
    results = load_results(built.root)
    page = build_page(results)
    data = json.loads(DATA_BLOCK.search(page.html).group(1))
    shown = {entry["record"]["pair_id"]: entry["record"] for entry in data["pairs"]}
    assert shown.keys() == built.verdicts.keys() and len(shown) == 5
    for pair_id, written in built.verdicts.items():
        assert shown[pair_id]["facts"] == written["facts"], pair_id
        assert shown[pair_id]["decided_by"] == written["decided_by"]
    efficiency = shown["curve"]["facts"][2]
    assert efficiency["kind"] == "efficiency" and efficiency["outcome"] == "B"
    assert [s["factor"] for s in efficiency["detail"]["scales"]] == [16, 64, 256]
    assert efficiency["detail"]["perf_inputs"]["factors"] == [16, 64, 256]
    assert round(efficiency["detail"]["growth"]["A"], 1) == 2.0
    assert efficiency["fact"].startswith("per call, x16 -> x256 input: A: 1.9 ms -> 30.4 ms")
    [real] = [v for k, v in shown.items() if k.startswith("sample/is_palindrome")]
    assert real["facts"][0]["kind"] == "correctness" and real["facts"][0]["outcome"] == "A"
    # the facts section's script is in the page's one script element, which the policy allows
    script = re.search(r"<script>(.*?)</script>", page.html, re.S).group(1)
    assert "pjEvidenceFacts" in script and len(SCRIPTS) == 2
    assert "<img" not in DATA_BLOCK.sub("", page.html)  # the hostile fact is data, not markup


def test_a_long_fact_text_is_cut_like_any_text_and_its_facts_stay(built: FactsBuilt) -> None:
    page = build_page(load_results(built.root), max_chars=60)
    data = json.loads(DATA_BLOCK.search(page.html).group(1))
    [hostile] = [e["record"] for e in data["pairs"] if e["record"]["pair_id"] == "hostile"]
    fact = hostile["facts"][0]["fact"]
    assert fact.startswith(HOSTILE_FACT[:60]) and "[cut " in fact
    assert len(hostile["facts"]) == 2 and page.cut_fields > 0


def _rows(shown: Shown, table: str) -> list[tuple[str, list[str]]]:
    assert table in shown.tables, f"no {table} (tables: {list(shown.tables)})"
    return shown.tables[table]


@browser
def test_the_facts_table_lists_every_kind_with_its_outcome_and_source(
        built: FactsBuilt, tmp_path: Path) -> None:
    body = opened(dump(built.page, "curve", tmp_path), "curve")
    rows = _rows(Shown(body), "facts-table")
    fact = built.verdicts["curve"]["facts"][2]["fact"]
    assert [cells for _, cells in rows] == [
        ["correctness", "tie", "both pass their tests", "A: scores m1.jsonl; B: scores m2.jsonl"],
        ["instructions", "tie", "both follow the 2 instructions", "judged here"],
        ["efficiency", "B", fact, "judged here"],
    ]
    assert [cls for cls, _ in rows] == ["fact", "fact", "fact decisive"]  # decided_by's kind
    assert "evidence:efficiency" in body

    failed = Shown(opened(dump(built.page, "failed", tmp_path), "failed"))
    assert [cells[:2] for _, cells in _rows(failed, "facts-table")] == [
        ["security", "insufficient"], ["correctness", "error"]]
    assert "curve-table" not in failed.tables and not failed.svg

    [real_id] = [k for k in built.verdicts if k.startswith("sample/is_palindrome")]
    real = Shown(opened(dump(built.page, real_id, tmp_path), real_id))
    [(_, cells)] = _rows(real, "facts-table")
    assert cells[:2] == ["correctness", "A"] and cells[2].startswith("A passes its tests")


def _fact_times(fact: str, side: str) -> list[str]:
    """The times the fact's text gives a side: ``A: 1.9 ms -> 30.4 ms -> 486.4 ms``."""
    found = re.search(rf"\b{side}: ((?:[\d.]+ (?:us|ms|s)(?: -> )?)+)", fact)
    assert found, fact
    return found.group(1).split(" -> ")


@browser
def test_an_efficiency_fact_on_scaled_inputs_shows_its_cost_curves(
        built: FactsBuilt, tmp_path: Path) -> None:
    body = opened(dump(built.page, "curve", tmp_path), "curve")
    shown = Shown(body)
    rows = [cells for _, cells in _rows(shown, "curve-table")]
    assert [(r[0], r[1], r[2], r[6]) for r in rows] == [
        ("x16", "1.9 ms", "800 us", "B"), ("x64", "30.4 ms", "3.2 ms", "B"),
        ("x256", "486.4 ms", "12.8 ms", "B")]
    fact = built.verdicts["curve"]["facts"][2]["fact"]
    assert [r[1] for r in rows] == _fact_times(fact, "A")  # formatted as the fact writes them
    assert [r[2] for r in rows] == _fact_times(fact, "B")
    assert "growth of A" in body and "about n^2.0" in body and "about n^1.0" in body

    lines = shown.polylines()
    assert sorted(lines) == ["A", "B"] and all(len(points) == 3 for points in lines.values())
    for points in lines.values():
        xs = [x for x, _ in points]
        assert xs == sorted(xs) and xs[0] < xs[-1]
    (ax0, ay0), (ax2, ay2) = lines["A"][0], lines["A"][-1]
    (bx0, by0), (bx2, by2) = lines["B"][0], lines["B"][-1]
    assert ay2 < by2  # A is dearer at x256: higher on the plot (SVG y grows downwards)
    slope_a, slope_b = (ay0 - ay2) / (ax2 - ax0), (by0 - by2) / (bx2 - bx0)
    assert slope_a / slope_b == pytest.approx(2.0, rel=0.05)  # n^2 against n^1 on log-log
    assert any(tag == "title" for tag, _ in shown.svg)

    one = Shown(opened(dump(built.page, "one-scale", tmp_path), "one-scale"))
    assert [cells[0] for _, cells in _rows(one, "facts-table")] == ["efficiency"]
    assert "curve-table" not in one.tables and not one.svg  # one scale: no curve


@browser
def test_hostile_fact_text_shows_as_text_only(built: FactsBuilt, tmp_path: Path) -> None:
    dom = dump(built.page, "hostile", tmp_path)
    assert "data-pwned" not in re.search(r"<html[^>]*>", dom).group(0)
    assert "<img" not in dom.lower() and "<script>window.PWNED" not in dom
    body = opened(dom, "hostile")
    shown = Shown(body)
    facts: list[Any] = [cells for _, cells in _rows(shown, "facts-table")]
    assert facts[0] == ["correctness", "tie", HOSTILE_FACT, HOSTILE_SOURCE]  # the text, as text
    assert facts[1][:3] == ["efficiency", "A", HOSTILE_FACT]
    assert "&lt;script&gt;window.PWNED=7" in body and "&lt;img src=x onerror=" in body
    curve = [cells for _, cells in _rows(shown, "curve-table")]
    assert curve[0][1:3] == ["800 us", "absent"] and curve[0][7] == HOSTILE_FACT
    lines = shown.polylines()
    assert len(lines["A"]) == 3 and len(lines["B"]) == 2  # the missing time is not plotted
    assert 'data-ready="1"' in dom  # the page's own script ran to the end
