"""The judging commands list errored verdicts quickly, whatever the size of a pair's id.

Found by the fuzzer (issue 31): ``judge-eval`` on a pair file whose pair id is 2 MiB long,
every verdict an error (the judge model unreachable), spent over a minute in rich's
highlighter printing the id in full.
"""

from __future__ import annotations

import io
import time

from rich.console import Console

from prefjudge.cli.judging import print_errors
from prefjudge.records import Verdict


def test_errored_verdicts_with_huge_ids_print_fast_and_short() -> None:
    huge = "p" + "x" * (16 * 1024)
    verdicts = [
        Verdict(
            pair_id=f"{huge}{i}",
            task_id="t",
            model_a="a",
            model_b="b",
            method="monolithic",
            status="error",
            error="request_failed: " + "e" * 2_000,
        )
        for i in range(3)
    ]
    out = io.StringIO()
    started = time.monotonic()
    print_errors(Console(file=out, width=100), verdicts, limit=3)
    assert time.monotonic() - started < 5
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and all(line.startswith("error p") for line in lines)
    assert all(len(line) < 1000 and "…" in line for line in lines)
