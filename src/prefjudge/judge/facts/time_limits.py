"""Efficiency from the tests alone: the one rule for pairs whose responses do not both pass.

Cost is measured only between two responses that pass their tests
(:mod:`prefjudge.judge.facts.efficiency`). Every other pair is decided here, from its
correctness fact, by :func:`efficiency_from_tests`; the evidence judge
(:func:`prefjudge.judge.facts.kinds.run_efficiency`),
:func:`~prefjudge.judge.facts.efficiency.compare_efficiency` and
``scripts/evidence_efficiency.py`` all apply it, so they decide such a pair alike:

- the tests could not be run (``error``): the efficiency fact is that error;
- the task has no tests prefjudge can run (``insufficient``): its cost cannot be had either;
- one side passes and the other runs out of its time limit, or of Python's recursion limit
  (a ``RecursionError``: it needed a deeper stack than the interpreter gives, where the
  other side finishes): the side that finishes is the cheaper one (:func:`time_limit_fact`);
- both run out of their time limits (and nothing else is said against them): both are
  slow, neither is wrong, so their cost is still measured (None, as for two that pass),
  on inputs both finish: the measurement sets aside the inputs both run out of time on
  (:func:`prefjudge.judge.facts.efficiency.compare_efficiency`);
- any other failure (a wrong answer, any other crash, one failing while the other times
  out): ``insufficient``, since cost is compared only between correct responses.

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

LIMITS = {"time": "its time limit", "recursion": "Python's recursion limit"}
"""The limits a side can run out of on its tests, as the fact names them."""


def limit_side(fact: Fact) -> tuple[str, str] | None:
    """The side that ran out of a limit on tests the other side passed, and which limit.

    Args:
        fact: A correctness fact (its ``status_a``/``status_b``, and ``ran_out_a``/
            ``ran_out_b`` where a failing side ran out of a limit:
            :func:`~prefjudge.judge.facts.correctness.ran_out_of`).

    Returns:
        ``(side, limit)``: ``A`` or ``B``, and ``time`` or ``recursion``; None for any
        other pair of results.
    """
    statuses = {"A": fact.detail.get("status_a"), "B": fact.detail.get("status_b")}
    for side, other in (("A", "B"), ("B", "A")):
        if statuses[other] != "pass":
            continue
        if statuses[side] == "timeout":
            return side, "time"
        limit = fact.detail.get(f"ran_out_{side.lower()}")
        if statuses[side] == "fail" and limit in LIMITS:
            return side, str(limit)
    return None


def time_limit_fact(fact: Fact) -> Fact:
    """Efficiency evidence from a limit: one side finished its tests, the other did not.

    The time limits scale with the reference solution's own time (``max(1 s, 4 x
    reference)`` per input, EvalPlus's rule), so running out of time where the other
    response finishes is a measured cost difference of at least that factor, not noise.
    Running out of Python's recursion limit where the other finishes is the same kind of
    evidence: the side needs a stack as deep as its input, the other does not.

    Args:
        fact: A correctness fact for which :func:`limit_side` names a side.

    Returns:
        The efficiency fact naming the side that finished (``counter``: ``time_limit`` or
        ``recursion_limit``).
    """
    slow, limit = limit_side(fact) or ("", "time")
    fast = "B" if slow == "A" else "A"
    detail = fact.detail.get(f"detail_{slow.lower()}", "") if slow else ""
    first = detail.strip().splitlines()[0][:160] if detail.strip() else "time limit exceeded"
    return Fact(kind="efficiency", outcome=fast,
                detail={**fact.detail, "counter": f"{limit}_limit"},
                fact=f"{slow} runs out of {LIMITS[limit]} on the task's tests where {fast} "
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
        the side that finished where the other ran out of a limit (:func:`limit_side`).
    """
    if correctness.outcome == "error":
        return correctness.model_copy(update={"kind": "efficiency"})
    if correctness.outcome == "insufficient":
        return insufficient("efficiency", correctness.fact)
    if limit_side(correctness) is not None:
        return time_limit_fact(correctness)
    statuses = (correctness.detail.get("status_a"), correctness.detail.get("status_b"))
    if statuses not in (("pass", "pass"), ("timeout", "timeout")):
        found = insufficient("efficiency", "cost is compared only between correct responses "
                             f"({correctness.fact})")
        return found.model_copy(update={"source": correctness.source}) if correctness.source \
            else found
    return None
