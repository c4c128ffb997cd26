"""``prefjudge view`` on a results folder made by the real commands (see conftest.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import selectors
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pj_verdicts import evidence_verdicts, write_verdicts
from pj_view_results import HOSTILE, HOSTILE_CRITERION, HOSTILE_MODEL, LONG, SAMPLE, Built

from prefjudge.cli import main
from prefjudge.view import load_results, script_json
from prefjudge.view.load import record_kind

DATA_BLOCK = re.compile(r'<script type="application/json" id="pj-data">(.*?)</script>', re.S)


SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p",
             "section", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "details",
             "summary", "noscript", "form", "label", "select", "option", "input", "button",
             "output", "div", "script"}


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, attrs))


def payload(page: str) -> dict[str, Any]:
    found = DATA_BLOCK.search(page)
    assert found, "no data block"
    return json.loads(found.group(1))


def outside_data(page: str) -> str:
    return DATA_BLOCK.sub("", page)


def by_key(entries: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {entry["record"].get(key): entry for entry in entries}


# --------------------------------------------------------------------------- what is shown


def test_the_page_holds_every_sample_check_and_criterion_verdict(built: Built) -> None:
    page = built.page.read_text("utf-8")
    data = payload(page)
    samples = {(s["record"]["model"], s["record"]["id"]): s for s in data["samples"]}
    assert {model for model, _ in samples} == {
        "sample-strong", "sample-medium", "sample-weak", "hostile-model", "long-model"}
    assert len(data["samples"]) == 44
    for record in built.scored:  # the records as `score` wrote them, every field kept
        sample = samples[(record["model"], record["id"])]
        assert sample["record"] == record
        assert sample["file"] == "scores/scores.jsonl"
        func = record["func"]
        assert sample["status"] == (func["status"] if func else "no tests")
    reasons = {r["reason"] for rec in built.scored for r in rec["instruction_results"]}
    assert "E501 line 5: Line too long (108 > 79)" in reasons
    shown_reasons = {r["reason"] for s in data["samples"]
                     for r in s["record"]["instruction_results"]}
    assert reasons <= shown_reasons
    assert {"pass", "fail"} <= {s["status"] for s in data["samples"]}
    assert data["categories"]["style_3"] == "style"
    assert data["categories"]["doc_1"] == "documentation"
    tasks = [json.loads(line) for line in (SAMPLE / "tasks.jsonl").read_text().splitlines()]
    assert data["prompts"] == {t["task_id"]: t["prompt"] for t in tasks}  # via the binding

    pairs = by_key([p for p in data["pairs"] if p["file"] == "verdicts.jsonl"], "pair_id")
    assert set(pairs) == {"p0", "p1", "p2", "p3", "p4"}
    for verdict in built.verdicts:
        entry = pairs[verdict["pair_id"]]
        assert entry["record"] == verdict
        assert entry["pair_source"] == "pairs.jsonl"
    p1 = pairs["p1"]
    assert [pairs[p]["verdict"] for p in ("p0", "p1", "p2")] == ["tie", "A", "B"]
    assert p1["pair"]["response_b"].startswith("def f(xs):\n    return xs[0]")
    criteria = {c["criterion"]["id"]: c for c in p1["record"]["criteria"]}
    assert (criteria["c1"]["forward"], criteria["c1"]["swapped"], criteria["c1"]["outcome"]) == (
        "A", "A", "A")
    assert (criteria["c2"]["forward"], criteria["c2"]["swapped"], criteria["c2"]["outcome"]) == (
        "A", "B", None)  # did not survive the swap
    assert criteria["c3.1"]["criterion"]["parent"] == "c3"
    assert p1["record"]["decisive"] == ["c1", "c4"]
    [single] = [p for p in data["pairs"] if p["file"] == "single/pair-verdict.json"]
    assert single["record"]["method"] == "monolithic" and single["record"]["criteria"] == []
    assert single["pair"] is None and single["pair_source"].startswith("absent")

    assert "<li class=\"yes\">leaderboard.csv: found (leaderboard.csv)</li>" in page
    board = page.split('<table class="leaderboard">', 1)[1].split("</table>", 1)[0]
    assert board.count("<tr>") == 4 and '<td class="name">alpha</td>' in board
    assert '<th class="num">rating [95% CI]</th>' in board
    output = built.view.output
    assert "found: leaderboard.csv, scored samples, judge verdicts" in output
    assert re.search(r"44 scored samples, 6 judged pairs, \d+\.\d KiB", output)


def test_file_kinds_come_from_the_records_and_side_files_are_skipped(built: Built) -> None:
    results = load_results(built.root)
    kinds = {f.path: f.kind for f in results.files}
    assert kinds == {
        "leaderboard.csv": "leaderboard",
        "pairs.jsonl": "pair",
        "verdicts.jsonl": "verdict",
        "scores/more_verdicts.jsonl": "scored",  # its name says verdicts; its records do not
        "scores/scores.jsonl": "scored",
        "single/pair-verdict.json": "verdict",
    }
    assert record_kind(built.verdicts[0]) == "verdict"
    assert record_kind(built.scored[0]) == "scored"
    assert record_kind({"task_id": "t", "model": "m", "response": "r"}) == "generation"
    assert record_kind({"model_a": "a", "model_b": "b", "winner": "tie"}) == "battle"
    assert record_kind({"something": "else"}) is None


# --------------------------------------------------------------------------- hostile text


def test_hostile_record_text_is_only_ever_escaped(built: Built) -> None:
    page = built.page.read_text("utf-8")
    block = DATA_BLOCK.search(page).group(1)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in block, raw
    assert "<script>window.PWNED" not in page
    assert "</textarea>" not in page and "<img" not in page.lower() and "<b>bold" not in page
    assert page.count("<script") == 2 and page.count("</script>") == 2
    markup = outside_data(page)
    tags = Tags()
    tags.feed(page)
    assert {name for name, _ in tags.seen} <= SAFE_TAGS  # no img, iframe, link, object ...
    attributes = {attr for _, attrs in tags.seen for attr, _ in attrs}
    assert not {a for a in attributes if a in ("src", "href") or a.startswith("on")}
    assert "&quot;&gt;&lt;img src=x onerror=&quot;window.PWNED=3&quot;&gt;" in markup

    data = payload(page)  # the text itself arrives intact, as data
    samples = {s["record"]["id"]: s["record"] for s in data["samples"]}
    assert samples[built.hostile_id]["response"] == HOSTILE
    assert samples[built.hostile_id]["func"]["detail"] == HOSTILE
    pairs = {p["record"]["pair_id"]: p for p in data["pairs"]}
    assert pairs["p0"]["pair"]["response_a"] == HOSTILE
    assert pairs["p3"]["record"]["model_b"] == HOSTILE_MODEL
    texts = {c["criterion"]["text"] for c in pairs["p1"]["record"]["criteria"]}
    assert HOSTILE_CRITERION in texts

    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert policy, "no Content-Security-Policy"
    rules = dict(rule.strip().split(" ", 1) for rule in
                 policy.group(1).replace("&#x27;", "'").split(";"))
    assert rules["default-src"] == "'none'" and rules["connect-src"] == "'none'"
    script = re.search(r"<script>(.*?)</script>", markup, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert rules["script-src"] == f"'sha256-{digest}'"  # only the page's own script runs


def test_script_json_cannot_end_its_script_element() -> None:
    value = {"t": "</script><!-- <script> & \u2028\u2029 '\"", "</script>": [1.5, None, True]}
    text = script_json(value)
    assert not re.search("[<>&\u2028\u2029]", text)
    assert json.loads(text) == value


# --------------------------------------------------------------------------- problems, size


def test_unusable_lines_are_counted_and_reported(built: Built) -> None:
    output = built.view.output
    assert "2 line(s) could not be used" in output
    assert "scores/more_verdicts.jsonl:2: not valid JSON" in output
    assert "scores/more_verdicts.jsonl:4: field 'response'" in output
    page = built.page.read_text("utf-8")
    problems = page.split('<details class="problems" id="problems">', 1)[1].split("</details>")[0]
    assert "2 line(s) could not be used" in problems
    assert "scores/more_verdicts.jsonl:2: not valid JSON" in problems
    assert "scores/more_verdicts.jsonl:4: field &#x27;response&#x27;" in problems


def test_long_texts_are_cut_with_a_visible_note(built: Built, tmp_path: Path) -> None:
    data = payload(built.page.read_text("utf-8"))
    [long] = [s["record"] for s in data["samples"] if s["record"]["model"] == "long-model"]
    assert long["response"] == "x" * 20_000 + f"\n… [cut {LONG - 20_000} chars]"
    assert "1 texts cut to 20000 chars" in built.view.output
    out = tmp_path / "small.html"
    result = CliRunner().invoke(main, ["view", str(built.root), "-o", str(out),
                                       "--max-chars", "100"])
    assert result.exit_code == 0, result.output
    small = payload(out.read_text("utf-8"))
    [long] = [s["record"] for s in small["samples"] if s["record"]["model"] == "long-model"]
    assert long["response"].endswith(f"[cut {LONG - 100} chars]")
    assert out.stat().st_size < built.page.stat().st_size
    assert re.search(r"wrote .*small\.html: 44 scored samples, 6 judged pairs, [\d.]+ KiB; "
                     r"\d+ texts cut to 100 chars", " ".join(result.output.split()))


# --------------------------------------------------------------------------- one file, none


def test_one_verdict_file_finds_its_pairs_through_its_binding(built: Built,
                                                              tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in ("verdicts.jsonl", "verdicts.jsonl.journal.json"):
        (alone / name).write_bytes((built.root / name).read_bytes())
    result = CliRunner().invoke(main, ["view", str(alone / "verdicts.jsonl")])
    assert result.exit_code == 0, result.output
    assert "not found: leaderboard.csv, scored samples" in result.output
    page = (alone / "verdicts.view.html").read_text("utf-8")
    data = payload(page)
    assert data["samples"] == [] and len(data["pairs"]) == 5
    for entry in data["pairs"]:
        assert entry["pair"] is not None
        assert entry["pair_source"].startswith(str(built.root / "pairs.jsonl"))
    assert '<li class="no">leaderboard.csv: not found</li>' in page


def test_nothing_to_show_is_an_error_that_says_what_was_there(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["view", str(tmp_path)])
    assert result.exit_code == 1
    assert "nothing to show" in result.output
    (tmp_path / "generations.jsonl").write_text(
        (SAMPLE / "generations.jsonl").read_text("utf-8"), encoding="utf-8")
    result = CliRunner().invoke(main, ["view", str(tmp_path)])
    assert result.exit_code == 1
    assert "generations.jsonl: generations, 42 records — not scored: not shown" in (
        " ".join(result.output.split()))
    assert "nothing to show" in result.output
    assert not (tmp_path / "view.html").exists()


def test_a_verdict_decided_by_no_evidence_is_shown_as_no_battle(tmp_path: Path) -> None:
    """Issue 29: the page shows what rank counts; a no-evidence tie is not shown as a tie."""
    made = evidence_verdicts(decided=30, no_evidence=60, errors=1)
    write_verdicts(tmp_path / "all" / "verdicts.jsonl", made.everything())
    write_verdicts(tmp_path / "counted" / "verdicts.jsonl", made.counted())
    full, counted = (Counter(p["verdict"] for p in load_results(tmp_path / name).pairs)
                     for name in ("all", "counted"))
    assert full.pop("no evidence") == 60 and "no evidence" not in counted
    assert full == counted and counted["error"] == 1 and counted["tie"] > 0


def test_page_to_stdout(built: Built) -> None:
    result = CliRunner().invoke(main, ["view", str(built.root), "-o", "-"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == built.page.read_text("utf-8")  # the same inputs, the same page
    assert "wrote stdout" in result.stderr
    both = CliRunner().invoke(main, ["view", str(built.root), "-o", "-", "--serve"])
    assert both.exit_code == 2 and "--serve prints the page's URL on stdout" in both.output


# --------------------------------------------------------------------------- --serve


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        proc.kill()
        pytest.fail(f"no URL printed in {timeout} s: {proc.stderr.read()}")
    return proc.stdout.readline().strip()


def test_serve_serves_the_page_on_loopback_until_interrupted(built: Built) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "prefjudge", "view", str(built.root),
                             "--serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        url = _read_line(proc, 60)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), url
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode("utf-8")
            policy = response.headers["Content-Security-Policy"]
        assert body == built.page.read_text("utf-8")
        assert policy.startswith("default-src 'none'; script-src 'sha256-")
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "etc/passwd", timeout=10)
        assert missing.value.code == 404
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
