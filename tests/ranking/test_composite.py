"""The one IF/Func composite (prefjudge.ranking.composite) and the scored-record rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prefjudge.ranking.composite import composite_score
from prefjudge.ranking.correlate import composite
from prefjudge.ranking.scored import SCORED_FIELDS, is_scored_record, is_scored_records


def test_composite_score_weights_if_by_alpha():
    assert composite_score(0.2, 0.8, 0.0) == 0.2
    assert composite_score(0.2, 0.8, 1.0) == 0.8
    assert composite_score(0.2, 0.8, 0.25) == pytest.approx(0.25 * 0.8 + 0.75 * 0.2)


def test_the_array_composite_is_the_scalar_one_per_alpha_and_model():
    func = np.array([0.3, 0.5, 0.9])
    if_score = np.array([0.7, 0.1, 0.4])
    alphas = np.linspace(0, 1, 11)
    grid = composite(func, if_score, alphas)
    assert grid.shape == (11, 3)
    for i, alpha in enumerate(alphas):
        for m in range(3):
            # bit for bit: the same operations in the same order
            assert grid[i, m] == composite_score(func[m], if_score[m], alpha)


def test_the_composite_module_imports_no_numeric_library():
    code = ("import sys, prefjudge.ranking.composite, prefjudge.ranking.scored; "
            "print(sorted(m for m in ('numpy', 'pandas', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_scored_record_has_a_scored_field_and_a_generation_has_none():
    generation = {"task_id": "t", "model": "m", "response": "x"}
    assert not is_scored_record(generation)
    for field in sorted(SCORED_FIELDS):
        assert is_scored_record({**generation, field: None}), field


def test_a_file_is_scored_records_by_its_first_record(tmp_path: Path):
    scored = tmp_path / "scored.jsonl"
    scored.write_text(json.dumps({"task_id": "t", "model": "m", "if_task": True}) + "\n")
    generations = tmp_path / "generations.jsonl"
    generations.write_text(json.dumps({"task_id": "t", "model": "m", "response": ""}) + "\n")
    table = tmp_path / "scores.csv"
    table.write_text("model,func,if\nm,0.5,0.5\n")
    assert is_scored_records(scored)
    assert not is_scored_records(generations)
    assert not is_scored_records(table)
