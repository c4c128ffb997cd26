"""Evidence that cannot decide is refused, or counted alike in both tables (issue 31, item 3).

``judge-eval --method evidence`` on CodePrefBench's correctness pairs without ``--tests``
used to judge every pair a tie and print accuracy 0.000 in one table and 50.0 % in the
other, exit 0. Now it is refused (naming ``--tests``) unless ``--allow-undecided``, which
warns with the count; and both tables show the same two accuracies under the same names.
"""

from __future__ import annotations

import re
from pathlib import Path

from pj_cli import WIDE, flat, invoke

CORRECTNESS = ("preferences", "codeprefbench", "correctness-alignment.jsonl.gz")


def judge_eval(pairs: Path, out: Path, *extra: str) -> object:
    return invoke(
        "judge-eval",
        pairs,
        "--method",
        "evidence",
        "--limit",
        "6",
        "--bootstrap",
        "20",
        "-o",
        out,
        *extra,
        env=WIDE,
    )


def test_evidence_without_tests_is_refused(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    result = judge_eval(shared_data.joinpath(*CORRECTNESS), out)
    assert result.exit_code == 1, result.output
    message = flat(result.output)
    assert "cannot decide these 6 pair(s)" in message
    assert "no --tests was given" in message and "Add --tests" in message
    assert "--allow-undecided" in message
    assert not (out / "summary.json").exists()


def _row(table: str, method: str) -> list[str]:
    """The cells of ``method``'s row in a printed rich table."""
    for line in table.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] == method:
            return cells
    raise AssertionError(f"no row for {method} in:\n{table}")


def test_allow_undecided_warns_and_both_tables_count_alike(
    shared_data: Path, tmp_path: Path
) -> None:
    result = judge_eval(shared_data.joinpath(*CORRECTNESS), tmp_path / "eval", "--allow-undecided")
    assert result.exit_code == 0, result.output
    warning = flat(result.stderr)
    assert "warning: judging anyway (--allow-undecided)" in warning
    assert "6 of 6 pair(s) have no evidence" in warning
    methods_part, split_part = result.stdout.split("accuracy per split")
    header = _row(methods_part, "method")
    methods = dict(zip(header, _row(methods_part, "evidence"), strict=True))
    split_header = _row(split_part, "method")
    split = dict(zip(split_header, _row(split_part, "evidence"), strict=True))
    for name in ("accuracy", "strict accuracy", "ties", "errors", "undecided"):
        assert methods[name] == split[name], name
    assert methods["accuracy"] == "50.0 %" and methods["strict accuracy"] == "0.0 %"
    assert methods["undecided"] == "6"
