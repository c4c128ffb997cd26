"""A chunk's unit tests in sandboxes, their results handed back in input order.

:mod:`prefjudge.scoring.score` verifies a chunk's instructions and, beside it, runs the
unit tests of the chunk's generations that have any (:func:`has_tests`) here: in parallel
sandboxes, forked from zygotes that imported the job's task modules once
(:func:`zygote_pool`, :func:`job_preload`), each result given as soon as it and those
before it are finished (:func:`unit_test_results`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from prefjudge.records import FuncResult, Generation, Task, generation_failed
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.profiles import Profile
from prefjudge.scoring.verify.extract import code_of

if TYPE_CHECKING:  # the sandbox's runner and zygotes are imported where tests run
    from prefjudge.sandbox.zygote import ZygotePool

ProgressCallback = Callable[[str, int], None]
"""Called with ``(phase, n)`` as ``n`` items of a phase finish."""


def has_tests(gen: Generation, tasks: Mapping[str, Task]) -> bool:
    """Whether the generation's task is among ``tasks`` and has unit tests to run for it.

    A failed model request (:func:`~prefjudge.records.generation_failed`) has no answer
    to test.
    """
    task = tasks.get(gen.task_id)
    return task is not None and task.test_format != "none" and not generation_failed(gen)


def zygote_pool(
    todo: list[tuple[str, Generation]],
    tasks: dict[str, Task],
    zygote: bool | ZygotePool | None,
    preload: Sequence[str],
) -> ZygotePool | None:
    """Zygotes for the whole job's unit tests (None for fresh processes; a given pool as is).

    Args:
        todo: The job's ``(key, generation)`` pairs still to score.
        tasks: Tasks by id (those with tests).
        zygote: Fork from zygotes (None: the environment's default), or a pool to use.
        preload: Modules the zygotes import besides the tasks' own.

    Returns:
        The pool (the caller closes one it did not give), or None.
    """
    from prefjudge.sandbox import resolve_isolation
    from prefjudge.sandbox.zygote import ZygotePool, zygote_default

    if isinstance(zygote, ZygotePool):
        return zygote
    if not (zygote_default() if zygote is None else zygote):
        return None
    return ZygotePool(resolve_isolation(), job_preload(todo, tasks, preload))


def job_preload(todo: Sequence[tuple[str, Generation]], tasks: Mapping[str, Task],
                preload: Sequence[str]) -> list[str]:
    """What a job's zygotes import: its tasks' modules (those with tests) and ``preload``.

    Args:
        todo: The job's ``(key, generation)`` pairs.
        tasks: Tasks by id.
        preload: Modules asked for besides.

    Returns:
        Module names, as :func:`~prefjudge.sandbox.preload.modules_to_preload` gives them.
    """
    from prefjudge.sandbox.preload import modules_to_preload

    needed = {gen.task_id for _, gen in todo if gen.task_id in tasks}
    return modules_to_preload((tasks[task_id] for task_id in sorted(needed)), preload)


def unit_test_results(
    chunk: list[tuple[str, Generation]],
    tasks: dict[str, Task],
    workers: int | None,
    limits: SandboxLimits | None,
    on_progress: ProgressCallback | None,
    profile: Profile,
    pool: ZygotePool | None = None,
) -> Iterator[FuncResult | None]:
    """Yield each generation's test result (None without tests) in order, as they finish.

    The tests run in a thread of their own (:func:`~prefjudge.sandbox.run_functional`);
    a failure there is raised here.

    Args:
        chunk: ``(key, generation)`` pairs, in order.
        tasks: Tasks by id.
        workers: Parallel sandboxes.
        limits: Sandbox limits (None: the defaults).
        on_progress: Called with ``("tests", 1)`` as each test run ends.
        profile: Verification profile (which code of a response is tested).
        pool: Zygotes to fork the runs from (None: a fresh process per run).

    Yields:
        One result per generation of ``chunk``, in order.
    """
    jobs, positions = [], {}
    for index, (_, gen) in enumerate(chunk):
        if has_tests(gen, tasks):
            positions[index] = len(jobs)
            jobs.append((tasks[gen.task_id],
                         code_of(gen.response, profile, is_code=gen.response_is_code)))
    if not jobs:
        yield from [None] * len(chunk)
        return
    from prefjudge.sandbox import run_functional

    finished: queue.Queue[tuple[int, FuncResult | BaseException]] = queue.Queue()

    def collect(job_index: int, result: FuncResult) -> None:
        finished.put((job_index, result))
        if on_progress:
            on_progress("tests", 1)

    def run() -> None:
        try:
            run_functional(jobs, limits=limits or SandboxLimits(), workers=workers,
                           on_result=collect, zygote=pool is not None, pool=pool)
        except BaseException as exc:  # surfaced to the consumer below, never swallowed
            finished.put((-1, exc))

    runner = threading.Thread(target=run, name="prefjudge-tests", daemon=True)
    runner.start()
    ready: dict[int, FuncResult] = {}
    for index in range(len(chunk)):
        if index not in positions:
            yield None
            continue
        while positions[index] not in ready:
            job_index, outcome = finished.get()
            if isinstance(outcome, BaseException):
                raise outcome
            ready[job_index] = outcome
        yield ready.pop(positions[index])
    runner.join()
