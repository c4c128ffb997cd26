"""The viewer reads like a report: leaderboard numbers and names for a person, notes that
are true, a leaderboard that fits a 1,400-pixel window, unreadable files as problems.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from pj_cli import flat, invoke
from pj_scripted_backend import ScriptedBackend
from pj_view_results import SAMPLE, Built, scripted_judge
from test_view_browser import CHROMIUM, chromium

from prefjudge.experiment.leaderboard import COLUMNS as RUN_COLUMNS

LONG_FLOAT = re.compile(r"\d\.\d{5,}")


def _leaderboard(page: str) -> str:
    return page.split('<table class="leaderboard">', 1)[1].split("</table>", 1)[0]


def _cells(board: str) -> list[str]:
    return re.findall(r"<td[^>]*>([^<]*)</td>", board)


def test_the_rank_leaderboard_shows_labels_and_three_digits(built: Built) -> None:
    board = _leaderboard(built.page.read_text(encoding="utf-8"))
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", board)
    assert headers == ["model", "rating [95% CI]", "rank (95% range)", "battles", "win rate"]
    assert not any(LONG_FLOAT.search(cell) for cell in _cells(board))  # no 0.16666666666666666
    with (built.root / "leaderboard.csv").open(encoding="utf-8") as handle:
        first = next(csv.DictReader(handle))
    assert f'title="{first["rating"]} [{first["lower"]}, ' in board  # as written, on hover
    assert f"{float(first['win_rate']):.3g}" in _cells(board)


def _run_leaderboard(root: Path) -> Path:
    """A leaderboard.csv with the columns ``prefjudge run`` writes and long model names."""
    root.mkdir(parents=True, exist_ok=True)
    models = [
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "HuggingFaceTB/SmolLM2-360M-Instruct",
        "Qwen/Qwen2.5-Coder-7B-Instruct-GPTQ-Int4-with-a-long-suffix",
    ]
    path = root / "leaderboard.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=RUN_COLUMNS)
        writer.writeheader()
        for i, model in enumerate(models):
            writer.writerow(
                {
                    "model": model,
                    "elo": 1000.123456789 + 37 * i,
                    "elo_lower": 950.5 + 37 * i,
                    "elo_upper": 1049.25 + 37 * i,
                    "rank": 3 - i,
                    "rank_lower": 1,
                    "rank_upper": 3,
                    "pass1": 1 / 6,
                    "if_instruction": 0.7142857142857143,
                    "if_task": 0.35714285714285715,
                    "composite": 0.4404761904761905,
                    "battles": 120,
                    "judge_errors": 0,
                    "generation_errors": 1,
                    "n": 14,
                }
            )
    return path


def test_the_run_leaderboard_folds_intervals_and_names_columns(tmp_path: Path) -> None:
    _run_leaderboard(tmp_path / "results")
    invoke("view", tmp_path / "results", ok=True)
    board = _leaderboard((tmp_path / "results" / "view.html").read_text(encoding="utf-8"))
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", board)
    assert headers[:4] == ["model", "Elo [95% CI]", "rank (95% range)", "pass@1"]
    assert "IF (instruction)" in headers and "elo_lower" not in headers
    cells = _cells(board)
    assert "1000 [950, 1049]" in cells and "0.167" in cells and "3 (1–3)" in cells
    assert not any(LONG_FLOAT.search(cell) for cell in cells)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium not installed")
def test_the_run_leaderboard_fits_1400_pixels_without_scrolling(tmp_path: Path) -> None:
    _run_leaderboard(tmp_path / "results")
    invoke("view", tmp_path / "results", ok=True)
    page = (tmp_path / "results" / "view.html").read_text(encoding="utf-8")
    # the measuring script is the test's: the page's policy would (rightly) block it
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    measure = (
        "<script>const r = document.documentElement;"
        "const t = document.querySelector('table.leaderboard').getBoundingClientRect();"
        "r.dataset.scroll = r.scrollWidth; r.dataset.client = r.clientWidth;"
        "r.dataset.table = Math.ceil(t.right);</script>"
    )
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", measure + "</body>"), encoding="utf-8")
    done = chromium(
        ["--window-size=1400,900", "--dump-dom", measured.as_uri()], tmp_path / "profile"
    )
    found = re.search(r'data-scroll="(\d+)" data-client="(\d+)" data-table="(\d+)"', done.stdout)
    assert found, done.stderr[-2000:]
    scroll, client, table = map(int, found.groups())
    assert scroll <= client and table <= client, (scroll, client, table)


def test_a_pair_file_note_says_whether_the_responses_are_shown(tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    rows = [json.loads(line) for line in (SAMPLE / "generations.jsonl").read_text().splitlines()]
    for model in ("sample-strong", "sample-weak"):
        (root / f"{model}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows if r["model"] == model), encoding="utf-8"
        )
    backend = ScriptedBackend(scripted_judge)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("prefjudge.cli.judge_cmd.open_backend", lambda config: backend)
        invoke(
            "judge",
            root / "sample-strong.jsonl",
            root / "sample-weak.jsonl",
            "--tasks",
            SAMPLE / "tasks.jsonl",
            "--method",
            "monolithic",
            "-o",
            root / "verdicts.jsonl",
            ok=True,
        )
    for model in ("sample-strong", "sample-weak"):
        invoke(
            "score",
            root / f"{model}.jsonl",
            "--tasks",
            SAMPLE / "tasks.jsonl",
            "-o",
            root / f"{model}.scored.jsonl",
            "--no-tests",
            ok=True,
        )
    text = flat(invoke("view", root, ok=True).output)
    assert "its responses are not shown" not in text
    assert (
        f"pair file {root / 'sample-strong.jsonl'} (named by verdicts.jsonl.journal.json) "
        "is not prefjudge pair JSONL: not read; the responses of 14 of the 14 judged pairs "
        "are shown from other files"
    ) in text


def test_a_leaderboard_that_is_not_utf8_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    (root / "leaderboard.csv").write_bytes("model,rating\ncafé,1000\n".encode("cp1252"))
    invoke(
        "score", SAMPLE / "generations.jsonl", "-o", root / "scores.jsonl", "--no-tests", ok=True
    )
    text = flat(invoke("view", root, ok=True).output)
    assert "leaderboard.csv:2: not valid UTF-8 (byte 0xe9 at column 4)" in text
    assert "not found: leaderboard.csv" in text


def test_an_empty_leaderboard_or_a_short_row_is_a_problem_line(tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    invoke(
        "score", SAMPLE / "generations.jsonl", "-o", root / "scores.jsonl", "--no-tests", ok=True
    )
    (root / "leaderboard.csv").write_text("", encoding="utf-8")
    text = flat(invoke("view", root, ok=True).output)
    assert "leaderboard.csv:1: no header: the file is empty" in text
    assert "not found: leaderboard.csv" in text
    (root / "leaderboard.csv").write_text("model,rating\na,1000\nb,990\njunk\n", encoding="utf-8")
    text = flat(invoke("view", root, ok=True).output)
    assert "leaderboard.csv:4: 1 cell(s) where the header has 2: row left out" in text
    board = _leaderboard((root / "view.html").read_text(encoding="utf-8"))
    assert board.count("<tr>") == 3 and "junk" not in board
