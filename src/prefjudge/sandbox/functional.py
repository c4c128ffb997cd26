"""Run many (task, code) pairs through the sandbox in parallel."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from prefjudge.records import FuncResult, Task
from prefjudge.sandbox.adapters import TaskNotRunnableError, candidate_payload, interpret
from prefjudge.sandbox.compare import DETAIL_MAX, ReferenceOutputs, judge_outside
from prefjudge.sandbox.detect import resolve_isolation
from prefjudge.sandbox.isolation import MAX_SLOTS, IsolationPlan
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.preload import modules_to_preload
from prefjudge.sandbox.process import RunOutcome, run_in_sandbox
from prefjudge.sandbox.references import reference_outputs
from prefjudge.sandbox.zygote import ZygotePool, ZygoteStats, zygote_default

OnResult = Callable[[int, FuncResult], None]
Runner = Callable[[dict[str, Any], SandboxLimits], RunOutcome]


def run_one(
    task: Task,
    code: str,
    plan: IsolationPlan,
    limits: SandboxLimits,
    runner: Runner | None = None,
) -> FuncResult:
    """Run ``code`` against ``task``'s tests in one sandbox.

    Args:
        task: The task; its ``test_format`` picks the adapter.
        code: Complete code (a full solution defining the entry point, or a program).
        plan: Isolation plan (see :func:`prefjudge.sandbox.detect.resolve_isolation`).
        limits: Resource limits; those not given follow the task format's harness
            (:meth:`SandboxLimits.for_format`). HumanEval+/MBPP+ runs get twice the time
            limits, for recording their outputs; the reference solution runs once per
            task, in a sandbox of its own, with the same.
        runner: Runs a payload (default: a fresh-process sandbox under ``plan``; a
            :class:`~prefjudge.sandbox.zygote.ZygotePool`'s ``run`` forks it instead).

    Returns:
        The functional result (never raises for bad code or bad tasks).
    """
    run = runner or (lambda payload, run_limits: run_in_sandbox(plan, payload, run_limits))
    limits = limits.for_format(task.test_format)
    if task.test_format == "evalplus":
        limits = limits.time_doubled()
    try:
        reference = None
        if task.test_format == "evalplus":
            found = reference_outputs(task, limits, run)
            if isinstance(found, FuncResult):
                return found
            reference = found
        payload = candidate_payload(
            task, code, limits, None if reference is None else reference.time_limits(task))
        outcome = run(payload, limits)
    except TaskNotRunnableError as exc:
        return FuncResult(status="error", detail=str(exc))
    except OSError as exc:  # e.g. no temporary directory, or unshare vanished
        return FuncResult(status="error", detail=f"the sandbox could not start: {exc}")
    if task.test_format in ("evalplus", "stdio"):
        return judged_outside(task, outcome, limits, reference)
    return interpret(outcome, limits)


def judged_outside(
    task: Task, outcome: RunOutcome, limits: SandboxLimits, reference: ReferenceOutputs | None
) -> FuncResult:
    """:func:`~prefjudge.sandbox.compare.judge_outside`, which never stops the whole run.

    An exception while comparing one sample's outputs (a bug, or outputs nobody thought
    of) makes that sample an ``error`` that names the exception; the other samples are
    still scored.
    """
    try:
        return judge_outside(task, outcome, limits, reference)
    except Exception as exc:  # whatever it is, it is this sample's error only
        detail = f"prefjudge could not compare this run's outputs: {type(exc).__name__}: {exc}"
        return FuncResult(status="error", detail=detail[:DETAIL_MAX])


def run_functional(
    jobs: Sequence[tuple[Task, str]],
    *,
    limits: SandboxLimits | None = None,
    workers: int | None = None,
    on_result: OnResult | None = None,
    isolation: str | None = None,
    zygote: bool | None = None,
    preload: Sequence[str] = (),
    zygote_stats: dict[str, Any] | None = None,
    pool: ZygotePool | None = None,
) -> list[FuncResult]:
    """Run each job's code against its task's tests, in parallel sandboxes.

    Args:
        jobs: ``(task, code)`` pairs; the code is already extracted from the response.
        limits: Resource limits for every run (defaults: :class:`SandboxLimits`).
        workers: Parallel runs (default: the number of CPUs).
        on_result: Called as ``on_result(index, result)`` when a job finishes, from a
            worker thread but never from two threads at once (e.g. for a progress bar).
        isolation: Sandbox mode (``auto`` when None; see
            :func:`prefjudge.sandbox.detect.resolve_isolation`).
        zygote: Fork each run from a per-worker zygote that imported the tests'
            libraries once (default: yes, unless ``PREFJUDGE_SANDBOX_ZYGOTE=0``); False
            starts a fresh process per run. Outcomes are the same either way.
        preload: Modules the zygotes import besides those the tasks' own files import.
        zygote_stats: Filled, if given, with what the zygotes did
            (:class:`~prefjudge.sandbox.zygote.ZygoteStats` as a dict; ``fallback`` says
            why runs used fresh processes, if they did).
        pool: Zygotes to use and leave open (e.g. across the chunks of one scoring
            run); its plan must be this call's. ``zygote`` and ``preload`` are then unused.

    Returns:
        One result per job, in the order of ``jobs``.
    """
    limits = limits or SandboxLimits()
    plan = resolve_isolation(isolation)
    workers = max(1, min(workers or os.cpu_count() or 1, MAX_SLOTS))
    results: list[FuncResult | None] = [None] * len(jobs)
    callback_lock = threading.Lock()
    own_pool = None
    if pool is None and jobs and (zygote_default() if zygote is None else zygote):
        own_pool = pool = ZygotePool(plan, modules_to_preload((t for t, _ in jobs), preload))

    def work(index: int) -> None:
        task, code = jobs[index]
        result = run_one(task, code, plan, limits, None if pool is None else pool.run)
        results[index] = result
        if on_result is not None:
            with callback_lock:
                on_result(index, result)

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox") as threads:
            futures = [threads.submit(work, index) for index in range(len(jobs))]
            try:
                for future in futures:
                    future.result()
            except BaseException:  # Ctrl-C, or a failing callback: run no queued job
                for future in futures:
                    future.cancel()
                raise
    finally:
        if own_pool is not None:
            own_pool.close()
        if pool is not None and zygote_stats is not None:
            zygote_stats.update(asdict(pool.stats))
    if zygote_stats is not None and pool is None:
        zygote_stats.update(asdict(ZygoteStats(fallback="zygotes were not asked for")))
    return [result for result in results if result is not None]
