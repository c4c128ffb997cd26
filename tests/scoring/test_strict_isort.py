"""The strict profile does not honour isort action comments (issue 43, item 11).

Ruff's ``--ignore-noqa`` leaves isort's action comments in force, so strict neutralises them
before any check reads the code. The reference profile keeps honouring them, as the SWE-IF
reference's Ruff run does (a response can exempt its imports from style_2 there).
"""

from __future__ import annotations

import json
from pathlib import Path

from pj_cli import invoke
from pj_files import write_jsonl

from prefjudge.records import InstructionRef
from prefjudge.scoring.verify import verify_batch
from prefjudge.scoring.verify.extract import checked_code, neutralise_isort_actions

UNSORTED = "import sys\nimport os\n\nprint(os.sep, sys.argv)\n"
SORTED = "import os\nimport sys\n\nprint(os.sep, sys.argv)\n"
ACTIONS = {
    "skip_file": f"# isort: skip_file\n{UNSORTED}",
    "skip_file_no_space": f"# isort:skip_file\n{UNSORTED}",
    "ruff_skip_file": f"# ruff: isort: skip_file\n{UNSORTED}",
    "off": f"# isort: off\n{UNSORTED}",
    "ruff_off": f"# ruff: isort: off\n{UNSORTED}",
    "skip_line": "import sys  # isort: skip\nimport os\n\nprint(os.sep, sys.argv)\n",
    "split": "import sys\n\n# isort: split\nimport os\n\nprint(os.sep, sys.argv)\n",
}
"""Unsorted imports, each exempted by an isort action comment (all pass under reference)."""


def write_generations(path: Path) -> Path:
    rows = [{"id": name, "task_id": f"t-{name}", "model": "m",
             "response": f"```python\n{code}```\n", "instructions": [{"id": "style_2"}]}
            for name, code in {**ACTIONS, "unsorted": UNSORTED, "sorted": SORTED}.items()]
    return write_jsonl(path, rows)


def style_2(path: Path) -> dict[str, str]:
    found = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["id"]: row["instruction_results"][0]["status"] for row in found}


def test_score_strict_fails_unsorted_imports_whatever_isort_comment_they_carry(
    tmp_path: Path,
) -> None:
    gens = write_generations(tmp_path / "gens.jsonl")
    strict, reference = tmp_path / "strict.jsonl", tmp_path / "reference.jsonl"
    invoke("score", gens, "-o", strict, "--no-tests", "--profile", "strict", ok=True)
    invoke("score", gens, "-o", reference, "--no-tests", "--profile", "reference", ok=True)
    assert style_2(strict) == {**dict.fromkeys(ACTIONS, "fail"), "unsorted": "fail",
                               "sorted": "pass"}
    # The reference's behaviour, kept: Ruff honours the action comments.
    assert style_2(reference) == {**dict.fromkeys(ACTIONS, "pass"), "unsorted": "fail",
                                  "sorted": "pass"}


def test_neutralising_keeps_every_line_length_and_leaves_other_text_alone() -> None:
    code = ("# isort: skip_file\nimport os  # ISORT:skip\nx = '#'  # ruff: isort: off\n"
            "text = 'isort: not a comment'\n")
    done = neutralise_isort_actions(code)
    assert [len(line) for line in done.splitlines()] == [len(line) for line in code.splitlines()]
    assert "isort:" not in done.lower().replace("'isort: not a comment'", "")
    assert done.splitlines()[3] == code.splitlines()[3]
    assert checked_code(code, "reference") == code
    assert checked_code(code, "strict") == done


def test_a_neutralised_isort_comment_is_measured_like_any_comment() -> None:
    """Ruff's E501 leaves a trailing pragma comment out of a line's length; reference keeps
    that for ``# isort: skip``, strict measures the whole line (same length, 85 > 79)."""
    padded = "import os  # isort: skip " + "x" * 60 + "\n\nprint(os.sep)\n"
    refs = [InstructionRef(id="style_3", params={"line_length": 79})]
    [[strict]] = verify_batch([(padded, refs)], profile="strict")
    [[reference]] = verify_batch([(padded, refs)], profile="reference")
    assert strict.status == "fail" and "(85 > 79)" in strict.reason, strict
    assert reference.status == "pass", reference
