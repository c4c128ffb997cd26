"""Efficiency from the tests alone: the one rule for pairs whose responses do not both pass.

Cost is measured only between two responses that pass their tests
(:mod:`prefjudge.judge.facts.efficiency`). Every other pair is decided here, from its
correctness fact, by :func:`efficiency_from_tests`; the evidence judge
(:func:`prefjudge.judge.facts.kinds.run_efficiency`),
:func:`~prefjudge.judge.facts.efficiency.compare_efficiency` and
``scripts/evidence_efficiency.py`` all apply it, so they decide such a pair alike:

- the tests could not be run (``error``): the efficiency fact is that error;
- the task has no tests prefjudge can run (``insufficient``): its cost cannot be had either;
- one side passes and the other runs out of its time limit: the side that finishes is the
  cheaper one (:func:`time_limit_fact`);
- both run out of their time limits (and nothing else is said against them): both are
  slow, neither is wrong, so their cost is still measured (None, as for two that pass),
  on inputs both finish: the measurement sets aside the inputs both run out of time on
  (:func:`prefjudge.judge.facts.efficiency.compare_efficiency`);
- any other failure (a wrong answer, a crash, one failing while the other times out):
  ``insufficient``, since cost is compared only between correct responses.

Between two responses that both pass, the measurement has one more rule of the same kind,
on the tasks' scaled inputs (:mod:`prefjudge.judge.facts.perf_inputs.measure`): a side
that fails there (a wrong output, a raise, its time limit) where the other returns the
reference's output loses efficiency; both failing there sends the pair back to the task's
own inputs.

A fact decided from the tests keeps the correctness fact's ``source`` (the test outcomes it
rests on may be the score stage's: :mod:`prefjudge.judge.facts.from_scores`).
"""

from __future__ import annotations

from prefjudge.judge.facts.correctness import insufficient
from prefjudge.records import Fact


def timed_out_side(fact: Fact) -> str | None:
    """The side that ran out of time on tests the other side passed, if exactly that.

    Args:
        fact: A correctness fact (its ``status_a`` and ``status_b``).

    Returns:
        ``A`` or ``B``, or None for any other pair of statuses.
    """
    statuses = (fact.detail.get("status_a"), fact.detail.get("status_b"))
    if statuses == ("timeout", "pass"):
        return "A"
    if statuses == ("pass", "timeout"):
        return "B"
    return None


def time_limit_fact(fact: Fact) -> Fact:
    """Efficiency evidence from a time limit: one side finished its tests, the other did not.

    The limits scale with the reference solution's own time (``max(1 s, 4 x reference)``
    per input, EvalPlus's rule), so running out of time where the other response finishes
    is a measured cost difference of at least that factor, not noise.

    Args:
        fact: A correctness fact for which :func:`timed_out_side` names a side.

    Returns:
        The efficiency fact naming the side that finished (``counter = "time_limit"``).
    """
    slow = timed_out_side(fact)
    fast = "B" if slow == "A" else "A"
    detail = fact.detail.get(f"detail_{slow.lower()}", "") if slow else ""
    first = detail.strip().splitlines()[0][:160] if detail.strip() else "time limit exceeded"
    return Fact(kind="efficiency", outcome=fast, detail={**fact.detail, "counter": "time_limit"},
                fact=f"{slow} runs out of its time limit on the task's tests where {fast} "
                f"finishes ({first})", source=fact.source)


def efficiency_from_tests(correctness: Fact) -> Fact | None:
    """What a pair's test results alone say about its cost (see the module docstring).

    Args:
        correctness: The pair's correctness fact, as
            :func:`~prefjudge.judge.facts.correctness.correctness_fact` or
            :func:`~prefjudge.judge.facts.correctness.correctness_facts` builds it.

    Returns:
        None when both responses pass, or both only ran out of time (their cost is to be
        measured), else the pair's ``efficiency`` fact: ``error``, ``insufficient``, or
        the side that finished where the other ran out of time.
    """
    if correctness.outcome == "error":
        return correctness.model_copy(update={"kind": "efficiency"})
    if correctness.outcome == "insufficient":
        return insufficient("efficiency", correctness.fact)
    if timed_out_side(correctness) is not None:
        return time_limit_fact(correctness)
    statuses = (correctness.detail.get("status_a"), correctness.detail.get("status_b"))
    if statuses not in (("pass", "pass"), ("timeout", "timeout")):
        found = insufficient("efficiency", "cost is compared only between correct responses "
                             f"({correctness.fact})")
        return found.model_copy(update={"source": correctness.source}) if correctness.source \
            else found
    return None
