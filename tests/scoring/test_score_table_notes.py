"""The score table says why a rate is "—", and shows the failed generations beside the rest."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from prefjudge.scoring.metrics import SUMMARY_COLUMNS
from prefjudge.scoring.run import summary_table, unrated_notes


def summary(*rows: dict[str, Any]) -> pd.DataFrame:
    """A model summary: every column NaN or 0 unless given."""
    counts = {"n", "check_errors", "func_fail", "func_timeout", "func_error", "func_missing",
              "gen_errors"}
    return pd.DataFrame([{column: (0 if column in counts else math.nan)
                          for column in SUMMARY_COLUMNS} | row for row in rows],
                        columns=SUMMARY_COLUMNS)


RATED = {"model": "rated", "n": 3, "if_instruction": 0.5, "if_instruction_lower": 0.2,
         "if_instruction_upper": 0.8, "if_task": 0.4, "if_task_lower": 0.1,
         "if_task_upper": 0.7, "pass1": 0.6, "pass1_lower": 0.3, "pass1_upper": 0.9}


def test_nothing_to_say_when_every_rate_has_a_value() -> None:
    assert unrated_notes(summary(RATED), tests=True) == []


def test_no_tests_run_says_how_to_run_them() -> None:
    frame = summary({**RATED, "pass1": math.nan}, {**RATED, "model": "other", "pass1": math.nan})
    assert unrated_notes(frame, tests=False) == [
        "pass@1 —: no tests for these tasks: pass --tasks (the benchmark's task file)"]
    assert unrated_notes(frame, tests=False, no_tests=True) == [
        "pass@1 —: unit tests were not run (--no-tests)"]


def test_each_reason_names_the_models_it_concerns() -> None:
    frame = summary(RATED,
                    {**RATED, "model": "broken", "pass1": math.nan, "func_error": 4},
                    {**RATED, "model": "untested", "pass1": math.nan},
                    {**RATED, "model": "plain", "if_instruction": math.nan},
                    {**RATED, "model": "unchecked", "if_instruction": math.nan,
                     "check_errors": 2})
    assert unrated_notes(frame, tests=True) == [
        "pass@1 — for broken: no test run ended in a verdict (4 ended in error, counted as "
        "'test err', not as failures)",
        "pass@1 — for untested: none of these tasks has tests in the task file(s) given "
        "with --tasks",
        "IF — for plain: no sample had instructions to follow (IF rates the instructions a "
        "generation was asked to follow)",
        "IF — for unchecked: no instruction check gave a verdict (2 ended in error, counted "
        "as 'check err')"]


def test_a_model_whose_every_generation_failed_has_one_note() -> None:
    frame = summary(RATED, {"model": "dead", "gen_errors": 5})
    assert unrated_notes(frame, tests=True) == [
        "IF and pass@1 — for dead: no answers to rate: every generation failed (5, counted "
        "as 'gen err')"]


def test_gen_err_is_shown_when_the_summary_counts_failed_generations() -> None:
    frame = summary(RATED, {"model": "dead", "gen_errors": 5})
    table = summary_table(frame).set_index("model")
    assert table.loc["dead", "gen err"] == 5 and table.loc["rated", "gen err"] == 0
    assert table.loc["dead", "pass@1 [95% CI]"] == "—"
    older = summary_table(frame.drop(columns=["gen_errors"]))  # a summary without the column
    assert "gen err" not in older.columns and "test err" in older.columns


def test_base_and_plus_columns_sit_beside_pass1_only_with_such_samples() -> None:
    plain = summary_table(summary(RATED))
    assert not any("base" in str(c) or "plus" in str(c) for c in plain.columns)
    evalplus = summary_table(summary({**RATED, "base_pass1": 0.8, "base_pass1_lower": 0.7,
                                      "base_pass1_upper": 0.9, "plus_pass1": 0.6,
                                      "plus_pass1_lower": 0.3, "plus_pass1_upper": 0.9}))
    columns = list(evalplus.columns)
    at = columns.index("pass@1 [95% CI]")
    assert columns[at + 1:at + 3] == ["base pass@1 [95% CI]", "plus pass@1 [95% CI]"]
    assert evalplus.loc[0, "base pass@1 [95% CI]"] == "0.800 [0.700, 0.900]"
