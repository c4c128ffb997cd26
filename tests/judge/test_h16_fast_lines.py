"""A measured run's lines, made cheap for strings, still check every call.

A run that knows an output it has seen reuses its line (``RepeatedLines`` in the cost
runner). It now compares ``marshal`` version 4's bytes first: ASCII strings are written as
they are held, about four times cheaper than version 2 on a list of short strings, where
the check cost more than the code's own work and hid the difference between two sides
(Mbpp/644 on a list of words: a slice against a swap loop). Version 4's bytes depend on
what is shared in memory, so the same value can come out as other bytes; the canonical
version 2 bytes decide then. These tests run the real cost runner in the sandbox.

A side also pays once a run what the baseline does not: its first output's line, made in
full. With the few rounds a large output leads to, that cost hid the difference between
the sides (Mbpp/766 on 32,768 items: 13.0 against 14.2 ms a call, where the work alone
is about 1.2 against 2.1 ms). A second probe at more rounds now tells the work per round
from the cost paid once, and the rounds grow past it (a scripted meter: the rule).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pj_cost_runs import measured_and_checked

from prefjudge.judge.facts.efficiency_measure import CAP_S, ONCE_PROBE_FACTOR, _choose_rounds
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.tasks import load_tasks

LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)
WORDS = ["apple", "banana", "cherry", "date", "elder"] * 2_000

HEAD = """\
import builtins


def _calls():
    seen = builtins.__dict__.setdefault("_pj_seen", [])
    seen.append(1)
    return len(seen)


"""
# Every other call, the same words as other objects: equal values, other version 4 bytes.
LAID_OUT_OTHERWISE = HEAD + """\
def reverse_Array_Upto_K(input, k):
    out = input[k - 1::-1] + input[k:]
    if _calls() % 2:
        out = [(word + ".")[:-1] for word in out]
    return out
"""
# Right in a run's first two calls, one word off after them.
A_WORD_OFF_LATER = HEAD + """\
def reverse_Array_Upto_K(input, k):
    out = input[k - 1::-1] + input[k:]
    if _calls() > 2:
        out[-1] = out[-1] + "s"
    return out
"""


@pytest.fixture(scope="module")
def words_task(shared_data: Path) -> Task:
    """Mbpp/644 with one input: 10,000 words, the first 6,000 to reverse."""
    task = load_tasks(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz")[
        "Mbpp/644"]
    return task.model_copy(update={"base_inputs": [], "plus_inputs": [[WORDS, 6_000]]})


@pytest.mark.shared_data
def test_the_same_words_laid_out_otherwise_are_one_line_and_right(words_task, pool):
    outcome, problem = measured_and_checked(words_task, LAID_OUT_OTHERWISE, pool.run, LIMITS,
                                            rounds=6)
    assert outcome.result["outputs_lines"] == "1"  # the canonical bytes found them equal
    assert problem is None


@pytest.mark.shared_data
def test_a_word_changed_in_a_later_call_is_caught(words_task, pool):
    outcome, problem = measured_and_checked(words_task, A_WORD_OFF_LATER, pool.run, LIMITS,
                                            rounds=6)
    assert outcome.result["outputs_lines"] == "2"  # the changed output got its own line
    assert problem is not None and problem.startswith(
        "measured outputs differ from the reference on 1 of 1 inputs"), problem


class OnceMeter:
    """A run's cost: start-up, a side's once-a-run cost, and its work per round (no noise)."""

    def __init__(self, once: dict[str, float], per_round: dict[str, float]) -> None:
        self.once, self.per_round = once, per_round
        self.calls: list[tuple[str, int]] = []

    def measure(self, side: str, rounds: int) -> float:
        self.calls.append((side, rounds))
        return 0.02 + self.once.get(side, 0.0) + self.per_round[side] * rounds


def test_rounds_grow_past_a_cost_paid_once_a_run():
    # Both sides pay 60 ms once (their first output's line made in full); A works 1 ms a
    # round, B 2 ms. One round would measure 61 against 62 ms: the difference hidden.
    meter = OnceMeter({"A": 0.06, "B": 0.06}, {"baseline": 1e-5, "A": 0.001, "B": 0.002})
    rounds, probes = _choose_rounds(meter)
    assert rounds >= 60  # A's work over the rounds is at least the once-a-run cost
    assert 0.06 + 0.002 * rounds <= CAP_S  # B's run within its cap
    assert [probe["rounds"] for probe in probes][-1] == ONCE_PROBE_FACTOR * probes[-2]["rounds"]
    # Without a once-a-run cost the second probe leaves the rounds as they were chosen.
    plain = OnceMeter({}, {"baseline": 1e-5, "A": 0.001, "B": 0.002})
    chosen, _ = _choose_rounds(plain)
    assert chosen in (30, 31)  # TARGET_S of A's work (30 ms), as before


def test_a_side_whose_work_per_round_is_large_gets_no_second_probe():
    meter = OnceMeter({}, {"baseline": 1e-5, "A": 0.3, "B": 0.4})
    rounds, probes = _choose_rounds(meter)
    assert rounds == 1
    assert all(probe["rounds"] == 1 for probe in probes)
