"""Correctness evidence: run both responses against their task's tests, in the sandbox.

A response that passes every test beats one that fails or times out; two that pass, or two
that do not, are a tie on correctness. Statuses are kept apart: ``fail`` and ``timeout``
both lose to ``pass``, while ``error`` makes the fact an ``error``, never a tie or a loss.

The statuses are the sandbox's (:mod:`prefjudge.sandbox.adapters`), under its one rule:
``error`` is the harness's and the environment's only (the sandbox could not start, the
task's tests do not load on their own, a library the benchmark itself declares is not
installed); whatever a response's code does -- importing a module that is not installed,
raising ``ModuleNotFoundError`` or anything else, printing what it likes -- is its own
``fail``, so such a response loses to one that passes, and the verdict reaches ``rank``.
A pair whose task has no tests prefjudge can run is ``insufficient``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from prefjudge.judge.facts.provenance import Known, fact_source
from prefjudge.records import Fact, FuncResult, Pair, Task
from prefjudge.sandbox import SandboxLimits, run_functional
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.verify.extract import code_of

RUNNABLE_FORMATS = ("bigcodebench", "humaneval", "evalplus", "stdio")


def runnable_task(pair: Pair, tasks: Mapping[str, Task]) -> Task | None:
    """The task whose tests decide ``pair``, when prefjudge can run them.

    Args:
        pair: The pair (its ``task_id`` names the task).
        tasks: Tasks by id (from ``--tests``).

    Returns:
        The task, or None when it is unknown or has no runnable tests.
    """
    task = tasks.get(pair.task_id)
    if task is None or task.test_format not in RUNNABLE_FORMATS:
        return None
    return task


def response_code(pair: Pair, side: Literal["A", "B"]) -> str:
    """The code of one side of ``pair`` that its tests and measurements run.

    A response joined from a sample file's ``solution`` is code as a whole (a fenced
    example in one of its docstrings stays part of it); any other is Markdown, read as
    ``score`` reads it (:func:`~prefjudge.scoring.verify.extract.code_of`).
    """
    response = pair.response_a if side == "A" else pair.response_b
    return code_of(response, is_code=pair.is_code(side))


RAN_OUT = {"RecursionError": "recursion"}
"""Exceptions that end a failing run because it ran out of one of Python's limits, not
because it answered wrong, by the limit's name: a recursion deeper than the interpreter's
limit (a recursive ``factorial(1000)``). The efficiency rule reads it
(:mod:`prefjudge.judge.facts.time_limits`)."""


def ran_out_of(result: FuncResult) -> str | None:
    """The limit a failing run ran out of (see :data:`RAN_OUT`), else None.

    Read from the last line of the run's detail, where the harness puts the exception that
    ended it (the detail keeps its start and its end when it is cut).

    Args:
        result: A test result.

    Returns:
        ``recursion``, or None: the run did not fail, or failed otherwise.
    """
    if result.status != "fail":
        return None
    lines = [line for line in result.detail.splitlines() if line.strip()]
    return RAN_OUT.get(lines[-1].split(":", 1)[0].strip()) if lines else None


def correctness_fact(result_a: FuncResult, result_b: FuncResult) -> Fact:
    """The correctness fact of two test results (see the module docstring).

    Args:
        result_a: Response A's test result.
        result_b: Response B's test result.

    Returns:
        The fact: ``A``/``B`` when exactly one passes, ``tie`` when both or neither pass,
        ``error`` when either run could not be judged (the harness's or the
        environment's ``error``, never the code's doing). Its detail holds each side's
        status and the start of its detail, and ``ran_out_a``/``ran_out_b`` where a side
        failed by running out of a limit (:func:`ran_out_of`).
    """
    detail: dict[str, Any] = {
        "status_a": result_a.status, "status_b": result_b.status,
        "detail_a": result_a.detail[:300], "detail_b": result_b.detail[:300],
    }
    for side, result in (("a", result_a), ("b", result_b)):
        limit = ran_out_of(result)
        if limit is not None:  # kept only where it is so: other facts are as they were
            detail[f"ran_out_{side}"] = limit
    errored = [side for side, r in (("A", result_a), ("B", result_b)) if r.status == "error"]
    if errored:
        why = "; ".join(f"{side}: {r.detail.splitlines()[0] if r.detail else 'error'}"
                        for side, r in (("A", result_a), ("B", result_b)) if r.status == "error")
        return Fact(kind="correctness", outcome="error", detail=detail,
                    fact=f"the tests could not be run for {' and '.join(errored)} ({why})")
    passed_a, passed_b = result_a.status == "pass", result_b.status == "pass"
    if passed_a and passed_b:
        return Fact(kind="correctness", outcome="tie", fact="both pass their tests",
                    detail=detail)
    if not passed_a and not passed_b:
        return Fact(kind="correctness", outcome="tie", detail=detail,
                    fact=f"neither passes its tests (A: {result_a.status}, B: "
                    f"{result_b.status})")
    winner, loser, result = ("A", "B", result_b) if passed_a else ("B", "A", result_a)
    first_line = result.detail.strip().splitlines()[0][:200] if result.detail.strip() else ""
    reason = f": {first_line}" if first_line else ""
    return Fact(kind="correctness", outcome=winner, detail=detail,
                fact=f"{winner} passes its tests; {loser} does not ({result.status}{reason})")


def insufficient(kind: str, why: str) -> Fact:
    """A fact that cannot be had for a pair (``insufficient``)."""
    return Fact(kind=kind, outcome="insufficient", fact=why)  # type: ignore[arg-type]


Reused = Callable[[Pair, Literal["A", "B"]], Known | None]
"""A side's result found beforehand (a score record's), or None to find it here."""


def correctness_facts(
    pairs: Sequence[Pair],
    tasks: Mapping[str, Task],
    *,
    limits: SandboxLimits | None = None,
    pool: ZygotePool | Callable[[], ZygotePool | None] | None = None,
    on_run: Callable[[], None] | None = None,
    workers: int | None = None,
    reused: Reused | None = None,
) -> list[Fact]:
    """Run both responses of every pair against its task's tests (in parallel sandboxes).

    Args:
        pairs: The pairs.
        tasks: Tasks by id; a pair whose task is missing or has no tests gets an
            ``insufficient`` fact.
        limits: Sandbox limits (defaults: :class:`~prefjudge.sandbox.SandboxLimits`).
        pool: Zygotes to fork the runs from (kept open by the caller across chunks), or a
            function that gives them, called only when some side is to run.
        on_run: Called after each sandboxed run (progress).
        workers: Sandboxed runs at once (default: the number of CPUs).
        reused: A side's outcome found beforehand (a score record's: see
            :mod:`prefjudge.judge.facts.from_scores`); that side is not run, and the fact
            names its source.

    Returns:
        One fact per pair, in order.
    """
    jobs: list[tuple[Task, str]] = []
    sides: dict[int, list[FuncResult | int]] = {}  # per pair: a result, or its job's index
    sources: dict[int, tuple[str, str]] = {}
    for index, pair in enumerate(pairs):
        task = runnable_task(pair, tasks)
        if task is None:
            continue
        found = [None if reused is None else reused(pair, side) for side in ("A", "B")]
        sources[index] = tuple("" if k is None else k.source for k in found)  # type: ignore[assignment]
        sides[index] = []
        for side, known in zip(("A", "B"), found, strict=True):
            if known is not None:
                sides[index].append(known.value)
            else:
                sides[index].append(len(jobs))
                jobs.append((task, response_code(pair, side)))  # type: ignore[arg-type]
    if jobs and callable(pool) and not isinstance(pool, ZygotePool):
        pool = pool()
    results = run_functional(
        jobs, limits=limits, pool=pool, workers=workers,  # type: ignore[arg-type]
        on_result=None if on_run is None else (lambda _i, _r: on_run()),
    ) if jobs else []
    facts = []
    for index, pair in enumerate(pairs):
        if index not in sides:
            known = pair.task_id in tasks
            facts.append(insufficient(
                "correctness",
                f"task {pair.task_id!r} has no tests prefjudge can run" if known
                else f"no tests for task {pair.task_id!r} (give its benchmark with --tests)"))
            continue
        result_a, result_b = (results[r] if isinstance(r, int) else r for r in sides[index])
        fact = correctness_fact(result_a, result_b)
        source = fact_source(*sources[index])
        facts.append(fact.model_copy(update={"source": source}) if source else fact)
    return facts
