"""A generation whose model call failed is an error of its own in `score`, never an answer.

It is neither verified nor tested: its record has status ``error`` and the reason, the
summary counts it in ``gen_errors`` and leaves it out of ``n`` and of every rate. Once the
failed generation is made again (the same file, ``--retry-errors``), a rerun scores it and
keeps every other record; any other change of the generations file is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from pj_cli import SAMPLE_DIR, flat, invoke, rows


def failed_copy(path: Path, failed: set[int]) -> list[dict]:
    """The sample's generations with those at ``failed`` (line indexes) made failures."""
    records = [json.loads(line) for line in (SAMPLE_DIR / "generations.jsonl").read_text()
               .splitlines() if line.strip()]
    out = [{**r, "response": "", "error": "HTTP 500 after 7 attempt(s)"} if i in failed else r
           for i, r in enumerate(records)]
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return records


def test_failed_generations_are_errors_in_no_rate_and_are_scored_once_made(
    tmp_path: Path,
) -> None:
    gens, out = tmp_path / "gens.jsonl", tmp_path / "scores.jsonl"
    tasks = SAMPLE_DIR / "tasks.jsonl"
    records = failed_copy(gens, {0, 3, 4})
    invoke("score", gens, "--tasks", tasks, "-o", out, "--bootstrap", "0", ok=True)
    scored = rows(out)
    errors = [r for r in scored if r.get("status") == "error"]
    assert [r["id"] for r in errors] == [records[i]["id"] for i in (0, 3, 4)]
    assert all(r["instruction_results"] == [] and r["func"] is None and r["if_task"] is None
               and r["error"].startswith("HTTP 500") for r in errors)
    summary = {m["model"]: m for m in json.loads(
        out.with_name("scores.summary.json").read_text())["models"]}
    for model, row in summary.items():
        failed = sum(1 for r in errors if r["model"] == model)
        assert row["gen_errors"] == failed
        assert row["n"] == sum(1 for r in records if r["model"] == model) - failed
        assert row["func_fail"] + row["func_timeout"] + row["func_error"] <= row["n"]

    # Rates are those of the answers alone: the same as scoring the answers by themselves.
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for i, r in enumerate(records)
                               if i not in {0, 3, 4}))
    alone = tmp_path / "alone.jsonl"
    invoke("score", answers, "--tasks", tasks, "-o", alone, "--bootstrap", "0", ok=True)
    by_model = {m["model"]: m for m in json.loads(
        alone.with_name("alone.summary.json").read_text())["models"]}
    for model, row in by_model.items():
        for figure in ("n", "pass1", "if_instruction", "if_task"):
            assert row[figure] == summary[model][figure], (model, figure)

    # The failed generations made again: only they are scored; the rest stays as it was.
    before = out.read_text().splitlines()
    failed_copy(gens, set())
    again = invoke("score", gens, "--tasks", tasks, "-o", out, "--bootstrap", "0", ok=True)
    assert "3 record(s) are scored again" in flat(again.output)
    after = out.read_text().splitlines()
    assert [line for line in before if '"status": "error"' not in line] == after[:len(after) - 3]
    assert not [r for r in rows(out) if r.get("status") == "error"] and len(after) == len(before)

    # Any other change of the generations file is refused, naming a record that did not fail.
    changed = [json.loads(line) for line in gens.read_text().splitlines()]
    changed[1]["response"] += "\n# edited"
    gens.write_text("".join(json.dumps(r) + "\n" for r in changed))
    refused = invoke("score", gens, "--tasks", tasks, "-o", out, "--bootstrap", "0", ok=False)
    said = flat(refused.output)
    assert "in generations that did not fail" in said and changed[1]["id"] in said, said
    assert out.read_text().splitlines() == after
