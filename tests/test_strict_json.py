"""Every JSON file prefjudge writes is strict JSON: NaN and infinities are written as null.

Python's ``json`` writes bare ``NaN``/``Infinity``, which jq, JavaScript and most other
readers refuse; :func:`prefjudge.io.dumps_json` and :func:`prefjudge.io.write_json` are
the one writer, and ``prefjudge score`` on samples whose rates cannot be computed writes a
summary a strict reader reads, saying on stderr why each rate is missing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pj_cli import WIDE, flat, invoke

from prefjudge.io import dumps_json, finite_json, write_json


def strict_loads(text: str) -> Any:
    """Parse ``text`` as a strict reader does: ``NaN`` and ``Infinity`` are errors."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_strict_loads_refuses_what_python_json_writes() -> None:
    with pytest.raises(ValueError, match="not JSON: NaN"):
        strict_loads(json.dumps({"x": math.nan}))


NOT_FINITE = {
    "nan": math.nan,
    "inf": math.inf,
    "neg_inf": -math.inf,
    "np_float32_nan": np.float32("nan"),
    "np_float64_inf": np.float64("inf"),
    "nested": [{"deep": (1.5, np.float32(-np.inf), [math.nan])}],
}


def test_dumps_json_writes_null_for_every_non_finite_number() -> None:
    value = {**NOT_FINITE, "np_int": np.int64(7), "np_float": np.float32(0.5),
             "np_bool": np.bool_(True), "text": "é", "ok": 2.25}
    parsed = strict_loads(dumps_json(value, indent=2))
    assert parsed == {"nan": None, "inf": None, "neg_inf": None, "np_float32_nan": None,
                      "np_float64_inf": None, "nested": [{"deep": [1.5, None, [None]]}],
                      "np_int": 7, "np_float": 0.5, "np_bool": True, "text": "é", "ok": 2.25}
    assert dumps_json({"a": [1, 2]}, separators=(",", ":")) == '{"a":[1,2]}'
    assert "\\u00e9" in dumps_json("é", ensure_ascii=True)


def test_finite_json_leaves_the_input_alone() -> None:
    value = {"a": [math.nan, 1.0]}
    assert finite_json(value) == {"a": [None, 1.0]}
    assert math.isnan(value["a"][0])


def test_dumps_json_still_refuses_values_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        dumps_json({"when": object()})


def test_write_json_writes_strict_json_and_a_newline(tmp_path: Path) -> None:
    path = write_json(tmp_path / "out.json", NOT_FINITE)
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and "NaN" not in text and "Infinity" not in text
    assert strict_loads(text)["nested"] == [{"deep": [1.5, None, [None]]}]


GENERATIONS = [
    {"task_id": "HumanEval/0", "model": "m",
     "response": "```python\ndef f():\n    return 1\n```"},
    {"task_id": "HumanEval/2", "model": "m", "response": "", "error": "HTTP 500: busy"},
    {"task_id": "HumanEval/2", "model": "dead", "response": "", "error": "HTTP 500: busy"},
]


def test_score_without_tests_writes_a_strict_summary_and_says_why(tmp_path: Path) -> None:
    """No task file beside the samples and no --tasks: pass@1 is null, and the run says why."""
    generations = tmp_path / "samples.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    out = tmp_path / "scores.jsonl"
    result = invoke("score", generations, "-o", out, "--bootstrap", "20", env=WIDE, ok=True)
    text = out.with_name("scores.summary.json").read_text(encoding="utf-8")
    assert "NaN" not in text
    models = {row["model"]: row for row in strict_loads(text)["models"]}
    assert models["m"]["n"] == 1 and models["m"]["pass1"] is None
    assert models["m"]["pass1_lower"] is None and models["m"]["if_instruction"] is None
    assert models["dead"]["n"] == 0 and models["dead"]["gen_errors"] == 1
    shown = flat(result.output)
    assert ("pass@1 — for m: no tests for these tasks: pass --tasks (the benchmark's task "
            "file)") in shown
    assert "IF — for m: no sample had instructions to follow" in shown
    assert ("IF and pass@1 — for dead: no answers to rate: every generation failed (1, "
            "counted as 'gen err')") in shown
    assert "gen err" in flat(result.stdout)  # the table is the result: stdout
    assert "no tests for these tasks" in result.stderr  # why a rate is missing: a note
    assert "no tests for these tasks" not in result.stdout


def test_journal_lines_and_bindings_are_strict_json(tmp_path: Path) -> None:
    from prefjudge.journal import Journal, binding_path
    from prefjudge.records import Verdict

    out = tmp_path / "verdicts.jsonl"
    verdict = Verdict(pair_id="p1", task_id="t", model_a="a", model_b="b", method="monolithic",
                      winner="tie", inconsistency_rate=math.nan, scores={"A": math.inf})
    with Journal(out, Verdict, lambda v: v.pair_id, stage="judge",
                 settings={"alpha": math.nan}) as journal:
        journal.write(verdict)
    (line,) = out.read_text().splitlines()
    written = strict_loads(line)
    assert written["inconsistency_rate"] is None and written["scores"] == {"A": None}
    assert strict_loads(binding_path(out).read_text())["settings"]["alpha"] is None
