"""One rule for every judging command: a run whose every result is an error judged nothing."""

from __future__ import annotations

import pytest

from prefjudge.cli.judging import nothing_judged
from prefjudge.records import Verdict
from prefjudge.reporting import StageError, nothing_done


def verdict(index: int, status: str, error: str | None = None) -> Verdict:
    return Verdict(pair_id=f"p{index}", task_id="t", model_a="a", model_b="b",
                   method="monolithic", status=status, error=error,
                   preferred="A" if status == "ok" else None)


@pytest.mark.parametrize(("total", "errors"), [(0, 0), (3, 0), (3, 2)])
def test_a_run_with_something_judged_or_nothing_asked_is_not_a_failure(total: int,
                                                                       errors: int) -> None:
    assert nothing_done(total, errors, what="verdicts", where="out.jsonl") is None


def test_a_run_whose_every_result_errs_fails_naming_output_first_error_and_rerun() -> None:
    failure = nothing_done(4, 4, what="comparisons", where="cmp.jsonl",
                           example="request_failed: refused\nsecond line", rerun="--force-new")
    assert isinstance(failure, StageError)
    message = str(failure)
    assert message.startswith("cmp.jsonl: all 4 comparisons are errors")
    assert "request_failed: refused" in message and "--force-new" in message


def test_the_example_error_is_cut_to_a_readable_length() -> None:
    failure = nothing_done(1, 1, what="verdicts", where="v", example="x" * 10_000)
    assert failure is not None and len(str(failure)) < 400


def test_verdicts_use_the_rule_with_retry_errors() -> None:
    assert nothing_judged([verdict(0, "ok"), verdict(1, "error", "bad json")], "v") is None
    failure = nothing_judged([verdict(0, "error", "bad json"), verdict(1, "error")], "v.jsonl")
    assert failure is not None
    assert "all 2 verdicts are errors (the first: bad json)" in str(failure)
    assert "--retry-errors" in str(failure)
