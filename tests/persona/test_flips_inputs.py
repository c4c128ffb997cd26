"""``persona flips`` on a comparisons file that cannot show a flip: a message, exit status 1.

A flip compares the original prompts with the persona's, so an empty file, or one holding
the comparisons of one condition only, is refused with what is missing.
"""

from __future__ import annotations

from pathlib import Path

from pj_cli import flat, invoke
from pj_files import write_jsonl


def _rows(*conditions: str) -> list[dict]:
    return [
        {
            "task_id": f"t{i}",
            "condition": condition,
            "persona": "beginner",
            "model_a": "m1",
            "model_b": "m2",
            "dimensions": [
                {"dimension": "clarity", "forward": "A", "swapped": "A", "outcome": "A"}
            ],
        }
        for i in range(4)
        for condition in conditions
    ]


def test_flips_on_an_empty_file_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "cmp.jsonl"
    empty.write_text("", encoding="utf-8")
    result = invoke("persona", "flips", empty, "--bootstrap", 10, ok=False)
    assert f"{empty}: no comparisons in the file (it is empty)" in flat(result.output)
    assert not list(tmp_path.glob("cmp.flips.*"))


def test_flips_with_one_condition_only_names_the_missing_one(tmp_path: Path) -> None:
    only = write_jsonl(tmp_path / "cmp.jsonl", _rows("persona"))
    result = invoke("persona", "flips", only, "--bootstrap", 10, ok=False)
    assert "no comparison with condition 'original'" in flat(result.output)
    assert "--original" in flat(result.output)
    both = write_jsonl(tmp_path / "both.jsonl", _rows("original", "persona"))
    invoke("persona", "flips", both, "--bootstrap", 10, ok=True)
