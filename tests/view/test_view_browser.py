"""The viewer page in headless Chromium: URL filters, an opened pair, hostile text, pixels.

Chromium runs the page from a file: URL with ``--dump-dom`` (the DOM after the page's
script ran) and ``--screenshot``. Skips with the reason when Chromium is not installed
(``bash scripts/setup_chromium.sh`` installs it; CI does).
"""

from __future__ import annotations

import re
import struct
import subprocess
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pj_view_results import HOSTILE, Built

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless Chromium not installed at /usr/bin/chromium (run scripts/setup_chromium.sh)",
)


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
               *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)


def dump(url: str, tmp_path: Path) -> str:
    """The DOM after the page's script ran (and after 2 s of virtual time for late events)."""
    done = chromium(["--dump-dom", "--virtual-time-budget=2000", url], tmp_path / "profile")
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


def at(page: Path, **fragment: str) -> str:
    return page.as_uri() + "#" + urllib.parse.urlencode(fragment, quote_via=urllib.parse.quote)


class Items(HTMLParser):
    """The listed items (``details.item``) and the state element of a dumped DOM."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.samples: list[dict[str, str | None]] = []
        self.pairs: list[dict[str, str | None]] = []
        self.state: dict[str, str | None] = {}
        self.title = ""
        self._in_title = False
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "details" and "item" in classes:
            (self.samples if "sample" in classes else self.pairs).append(found)
        elif tag == "output" and found.get("id") == "pj-state":
            self.state = found
        self._in_title = tag == "title"

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False


def opened(dom: str, kind: str, ident: str) -> str:
    """The markup of the opened item ``ident`` (details do not nest in the page)."""
    match = re.search(rf'<details class="item {kind}"[^>]*data-id="{re.escape(ident)}"[^>]*'
                      rf"\sopen=\"\"[^>]*>(.*?)</details>", dom, re.S)
    assert match, f"{kind} {ident} is not open"
    return match.group(1)


def test_a_model_filter_in_the_url_lists_only_that_models_items(built: Built,
                                                                 tmp_path: Path) -> None:
    everything = Items(dump(built.page.as_uri(), tmp_path))
    assert everything.state["data-ready"] == "1"
    assert everything.state["data-samples-matched"] == "44"
    assert len(everything.samples) == 44 and len(everything.pairs) == 6

    weak = Items(dump(at(built.page, model="sample-weak"), tmp_path))
    assert [s["data-model"] for s in weak.samples] == ["sample-weak"] * 14
    assert weak.pairs == []
    assert weak.state["data-samples-matched"] == "14" and weak.state["data-pairs-matched"] == "0"
    assert "(filtered)" in weak.title  # the page's script wrote it

    alpha_wins = Items(dump(at(built.page, model="alpha", verdict="A"), tmp_path))
    assert alpha_wins.samples == []
    assert {p["data-id"] for p in alpha_wins.pairs} == {"p1", "p3"}
    for pair in alpha_wins.pairs:
        assert "alpha" in (pair["data-model-a"], pair["data-model-b"])
        assert pair["data-verdict"] == "A"

    failing = Items(dump(at(built.page, status="fail", cat="documentation"), tmp_path))
    assert failing.samples and all(s["data-status"] == "fail" for s in failing.samples)
    assert len(failing.samples) < 44


def test_a_pair_in_the_url_opens_with_its_criteria_and_both_responses(built: Built,
                                                                      tmp_path: Path) -> None:
    dom = dump(at(built.page, pair="p1"), tmp_path)
    body = opened(dom, "pair", "p1")
    for text in ("Handles the empty list", "Shown first is better", "c3.1 (refines c3)",
                 "dropped: the orders disagree", "because of c1 &lt;/textarea&gt;",
                 "response A — alpha", "response B — beta", "# GOOD: handles the empty list",
                 "return xs[0] + sum(xs[1:])", "decisive criteria", "c1: Handles the empty list",
                 "position-consistent", "responses from: pairs.jsonl"):
        assert text in body, text
    rows = re.findall(r"<tr( class=\"decisive\")?><td><span>(c[\d.]+)", body)
    assert [cid for _, cid in rows] == ["c1", "c2", "c3", "c4", "c3.1", "c3.2"]
    assert {cid for decisive, cid in rows if decisive} == {"c1", "c4"}
    closed = re.search(r'<details class="item pair"[^>]*data-id="p2"[^>]*>', dom)
    assert closed and "open" not in closed.group(0)

    sample = dump(at(built.page, sample="sample-weak/sample/running_mean"), tmp_path)
    body = opened(sample, "sample", "sample-weak/sample/running_mean")
    for text in ("prompt (the task's)", "Write a function running_mean(values)",
                 "Sure! Here is a simple solution:", "functional tests", "documentation",
                 "style_3"):
        assert text in body, text


def test_hostile_text_shows_as_text_and_never_runs(built: Built, tmp_path: Path) -> None:
    dom = dump(at(built.page, sample=built.hostile_id, pair="p0"), tmp_path)
    assert "data-pwned" not in re.search(r"<html[^>]*>", dom).group(0)
    assert "<img" not in dom.lower() and "<b>bold" not in dom
    sample = opened(dom, "sample", built.hostile_id)
    escaped = "&lt;/script&gt;&lt;script&gt;window.PWNED=1;"
    assert sample.count(escaped) == 2  # the response and the test output, as text
    assert "&lt;/textarea&gt;" in sample
    assert "reason &lt;/script&gt;&lt;script&gt;window.PWNED=5" in sample
    pair = opened(dom, "pair", "p0")
    assert escaped in pair and "Avoids &lt;/script&gt;&lt;script&gt;window.PWNED=4" in pair
    state = Items(dom)
    assert state.state["data-ready"] == "1"  # the page's own script ran to the end

    # the check can fail: the same text put in a page raw does run
    unsafe = tmp_path / "unsafe.html"
    unsafe.write_text(f"<!DOCTYPE html><html><body><div>{HOSTILE}</div></body></html>")
    assert "data-pwned" in re.search(r"<html[^>]*>", dump(unsafe.as_uri(), tmp_path)).group(0)


def test_screenshot_is_a_page_not_a_blank(built: Built, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "view.png"
    done = chromium(["--window-size=1200,900", "--hide-scrollbars", f"--screenshot={shot}",
                     built.page.as_uri()], tmp_path / "profile")
    assert shot.exists(), done.stderr[-2000:]
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and header[12:16] == b"IHDR"
    assert struct.unpack(">II", header[16:24]) == (1200, 900)
    with Image.open(shot) as image:
        grey = list(image.convert("L").tobytes())
    mean = sum(grey) / len(grey)
    spread = (sum((v - mean) ** 2 for v in grey) / len(grey)) ** 0.5
    dark = sum(v < 128 for v in grey) / len(grey)
    assert spread > 10 and 0.005 < dark < 0.5, (spread, dark)  # text and tables on white
