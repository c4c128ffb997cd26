"""`prefjudge score --profile`: recorded everywhere, never mixed in one output."""

from __future__ import annotations

import json
from pathlib import Path

from pj_cli import flat, invoke
from pj_files import write_jsonl

# Fenced usage example first, the solution after: the profiles read different code.
USAGE_FIRST = (
    "Example usage:\n\n```python\nprint(add(1, 2))\n```\n\n"
    "The solution:\n\n```python\ndef add(a, b):\n    return a + b\n```\n"
)
LONG = "def f():\n    return '" + "x" * 70 + "'\n"  # an 83-character line


def write_generations(path: Path) -> Path:
    rows = [
        {"id": "g1", "task_id": "t1", "model": "m", "response": USAGE_FIRST,
         "instructions": [{"id": "logic_1"}]},
        {"id": "g2", "task_id": "t2", "model": "m", "response": LONG,
         "instructions": [{"id": "style_1"}, {"id": "doc_2", "params": {"line_length": 60}}]},
    ]
    return write_jsonl(path, rows)


def score(*args: str):
    return invoke("score", *args)


def statuses(path: Path) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["id"]: [r["status"] for r in row["instruction_results"]] for row in rows}


def test_the_profile_is_recorded_and_changes_the_verdicts(tmp_path: Path) -> None:
    gens = write_generations(tmp_path / "gens.jsonl")
    reference, strict = tmp_path / "reference.jsonl", tmp_path / "strict.jsonl"
    first = score(str(gens), "-o", str(reference), "--no-tests")
    assert first.exit_code == 0, first.output
    assert "profile: reference" in flat(first.output)
    second = score(str(gens), "-o", str(strict), "--no-tests", "--profile", "strict")
    assert second.exit_code == 0, second.output
    # reference checks the usage example (F821: add is undefined), strict the solution;
    # the 83-character line passes Ruff's default 88 and fails PEP 8's 79.
    assert statuses(reference) == {"g1": ["fail"], "g2": ["pass", "pass"]}
    assert statuses(strict) == {"g1": ["pass"], "g2": ["fail", "pass"]}
    for path, name in ((reference, "reference"), (strict, "strict")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert {row["meta"]["profile"] for row in rows} == {name}
        summary = json.loads(Path(f"{path.with_suffix('')}.summary.json").read_text())
        assert summary["profile"] == name
        header = Path(f"{path.with_suffix('')}.summary.csv").read_text().splitlines()[0]
        assert "profile" in header.split(",")


def test_resuming_with_another_profile_is_refused(tmp_path: Path) -> None:
    gens = write_generations(tmp_path / "gens.jsonl")
    out = tmp_path / "scores.jsonl"
    assert score(str(gens), "-o", str(out), "--no-tests").exit_code == 0
    before = out.read_text()
    refused = score(str(gens), "-o", str(out), "--no-tests", "--profile", "strict")
    assert refused.exit_code != 0
    assert "profile" in flat(refused.output)
    assert out.read_text() == before
    fresh = score(str(gens), "-o", str(out), "--no-tests", "--profile", "strict",
                  "--force-new")
    assert fresh.exit_code == 0, fresh.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {row["meta"]["profile"] for row in rows} == {"strict"}


def test_resuming_after_the_verdict_code_changed_is_refused(tmp_path: Path, monkeypatch) -> None:
    # The journal records a digest of the harness and comparison code: after an upgrade
    # that changes how outcomes are decided, old and new verdicts never share a file.
    from prefjudge.sandbox import harness_digest
    from prefjudge.scoring import run as score_cmd

    assert len(harness_digest()) == 16 and harness_digest() == harness_digest()
    gens = write_generations(tmp_path / "gens.jsonl")
    out = tmp_path / "scores.jsonl"
    assert score(str(gens), "-o", str(out), "--no-tests").exit_code == 0
    before = out.read_text()
    monkeypatch.setattr(score_cmd, "harness_digest", lambda: "0123456789abcdef")
    refused = score(str(gens), "-o", str(out), "--no-tests")
    assert refused.exit_code != 0
    assert "harness" in flat(refused.output)
    assert out.read_text() == before
