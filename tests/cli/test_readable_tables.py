"""Result tables a person reads at 80 columns: names cut in the middle, kept apart, safe.

The tables are the real ones (``prefjudge rank`` on a battles file, its suggestions) drawn by
the command line's reporter into a terminal 80 characters wide.
"""

from __future__ import annotations

import csv
import io
import itertools
import time
from pathlib import Path

from pj_cli import invoke
from rich.console import Console

from prefjudge.cli.reporter import ConsoleReporter
from prefjudge.ranking.run import RankSettings, rank_file, rank_tables
from prefjudge.reporting import SilentReporter, TextTable

MODELS = (
    "HuggingFaceTB/SmolLM2-135M-Instruct",
    "HuggingFaceTB/SmolLM2-360M-Instruct",
    "HuggingFaceTB/SmolLM2-1.7B-Instruct",
    "Qwen/Qwen2.5-Coder-1.5B-Instruct",
)


def _battles(path: Path, models: tuple[str, ...] = MODELS) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model_a", "model_b", "winner", "task_id"])
        pairs = list(itertools.combinations(models, 2))
        for i in range(120):
            a, b = pairs[i % len(pairs)]
            writer.writerow([a, b, ("model_a", "model_b", "tie", "model_a")[i % 4], f"t{i % 9}"])
    return path


def _drawn(table: TextTable, width: int = 80) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    ConsoleReporter(console=console, stdout=console).table(table)
    return buffer.getvalue()


def _rank_tables(tmp_path: Path, **settings: object) -> list[TextTable]:
    chosen = RankSettings(battles=_battles(tmp_path / "b.csv"), n_resamples=0, **settings)
    return rank_tables(chosen, rank_file(chosen, SilentReporter()))


def test_a_leaderboard_at_80_columns_keeps_every_model_apart(tmp_path: Path) -> None:
    board = _rank_tables(tmp_path)[0]
    text = _drawn(board)
    assert max(len(line) for line in text.splitlines()) <= 80
    shown = [line.split("│")[2].strip() for line in text.splitlines() if line.startswith("│")]
    assert len(shown) == 4 and len(set(shown)) == 4, shown  # four names, four different cells
    assert all("…" in name for name in shown if len(name) < 32)
    assert any(name.startswith("Hugging") for name in shown)  # cut in the middle


def test_the_ratings_csv_keeps_the_full_names(tmp_path: Path) -> None:
    battles = _battles(tmp_path / "b.csv")
    invoke("rank", battles, "-o", tmp_path / "r.csv", "--bootstrap", 0, ok=True)
    with (tmp_path / "r.csv").open(encoding="utf-8") as handle:
        assert {row["model"] for row in csv.DictReader(handle)} == set(MODELS)


def test_suggestions_too_wide_for_80_columns_show_one_pair_after_another(
    tmp_path: Path,
) -> None:
    tables = _rank_tables(tmp_path, suggest=2)
    suggestions = tables[-1]
    text = _drawn(suggestions)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum("model A" in line for line in lines) == 2  # one block per suggested pair
    assert all(name in text for name in MODELS if name in str(suggestions.rows))


def test_a_4_mib_name_costs_a_table_no_more_than_a_short_one() -> None:
    huge = "m" * (4 << 20)
    table = TextTable(
        "t", ["model", "score"], [[huge, "0.5"], ["small", "0.1"]], right=frozenset({"score"})
    )
    started = time.monotonic()
    text = _drawn(table)
    assert time.monotonic() - started < 2.0
    assert len(text) < 2000 and "m…m" in text


def test_names_with_control_characters_and_lone_surrogates_print_as_escapes(
    tmp_path: Path,
) -> None:
    table = TextTable("t", ["model"], [["bad\udcffname"], ["\x1b[31mred"]])
    out = tmp_path / "out.txt"
    with out.open("w", encoding="utf-8") as handle:
        console = Console(file=handle, width=80, color_system=None)
        ConsoleReporter(console=console, stdout=console).table(table)
    text = out.read_text(encoding="utf-8")
    assert "bad\\udcffname" in text and "\\x1b[31mred" in text and "\x1b" not in text


def test_display_names_moves_the_cut_until_the_names_differ() -> None:
    from prefjudge.reporting import display_name, display_names  # new in this change

    assert display_name("smollm2-135m-instruct", 16) == "smollm2…instruct"
    short = display_names(list(MODELS[:3]), 16)
    assert len(set(short)) == 3 and all(len(name) <= 16 for name in short)
