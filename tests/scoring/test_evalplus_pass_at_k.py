"""The ``pass_at_k`` block of the EvalPlus export, as ``evalplus.evaluate`` 0.3.1 writes it."""

from __future__ import annotations

from math import comb
from typing import Any

import pytest

from prefjudge.scoring.export import EVALPLUS_KS, evalplus_pass_at_k, mean_pass_at_k


def oracle(n: int, c: int, k: int) -> float:
    """pass@k by its definition: 1 - C(n-c, k) / C(n, k)."""
    return 1.0 - comb(n - c, k) / comb(n, k)


def entries(statuses: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    return [{"task_id": "t", "solution": "", "base_status": base, "plus_status": plus,
             "base_fail_tests": [], "plus_fail_tests": []} for base, plus in statuses]


def test_base_and_plus_blocks_with_pass_at_10() -> None:
    by_task = {
        # 10 samples: 6 pass base, 3 of them pass plus too; a plus 'pass' after a base
        # 'fail' counts for neither (EvalPlus needs base_status == plus_status == "pass")
        "HumanEval/0": entries([("pass", "pass")] * 3 + [("pass", "fail")] * 3
                               + [("fail", "pass")] * 2 + [("fail", "fail")] * 2),
        "HumanEval/1": entries([("pass", "pass")] * 10 + [("fail", "fail")] * 2),
    }
    block = evalplus_pass_at_k(by_task)
    assert list(block) == ["base", "plus"]
    assert list(block["base"]) == ["pass@1", "pass@10"]  # 10 samples at least: no pass@100
    assert block["base"]["pass@1"] == pytest.approx((6 / 10 + 10 / 12) / 2)
    assert block["plus"]["pass@1"] == pytest.approx((3 / 10 + 10 / 12) / 2)
    assert block["base"]["pass@10"] == pytest.approx((oracle(10, 6, 10) + oracle(12, 10, 10)) / 2)
    assert block["plus"]["pass@10"] == pytest.approx((oracle(10, 3, 10) + oracle(12, 10, 10)) / 2)
    assert all(isinstance(v, float) for part in block.values() for v in part.values())


def test_a_base_only_file_has_no_plus_block() -> None:
    block = evalplus_pass_at_k({"Mbpp/2": entries([("pass", None), ("fail", None)])})
    assert block == {"base": {"pass@1": 0.5}}


def test_k_is_kept_only_when_every_task_has_that_many_samples() -> None:
    counts = [(100, 1), (9, 9)]
    assert list(mean_pass_at_k(counts, EVALPLUS_KS)) == ["pass@1"]
    assert mean_pass_at_k([], EVALPLUS_KS) == {}
    assert mean_pass_at_k([(100, 1)], EVALPLUS_KS)["pass@100"] == pytest.approx(1.0)
