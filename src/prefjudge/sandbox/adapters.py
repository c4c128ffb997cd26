"""One adapter per test format: what the harness gets, and how its outcome reads.

Statuses (the same for every format):

``pass``
    The harness finished every test and all passed.
``fail``
    A test failed or raised, the code does not compile or crashed, it exited or was
    killed before the tests finished (``sys.exit``/``os._exit`` in a test, killing its
    parent, a signal), it flooded stdout/stderr past the cap, or it ran out of memory.
``timeout``
    The wall-clock limit, the CPU-time limit, or (HumanEval+/MBPP+) the per-input time
    limit was reached.
``error``
    prefjudge could not judge the code, for reasons of the harness and the environment
    only: the sandbox could not be set up or the harness did not start, the task has no
    usable tests (tests that do not compile or load on their own, before any of the
    code runs), the reference solution fails, or a library the benchmark itself
    declares (:func:`~prefjudge.sandbox.preload.declared_modules`: its ``libs``, what its
    tests, reference solution or prompt import) is not installed here; the detail names
    the module.

Whatever the code does is its own outcome, ``pass`` or ``fail``, never ``error``: it
imports a module that is not installed (at the top, lazily, or raising
``ModuleNotFoundError`` itself) that the task does not declare, raises anything
(``ImportError``, ``SystemExit``, ``KeyboardInterrupt``), prints anything (a traceback,
lines like the harness's own), or keeps the tests from loading or running. The rule is
``_pj_common.environment_error``, which every runner calls, in both sandbox modes.
"""

from __future__ import annotations

import signal
from typing import Any

from prefjudge.records import FuncResult, Task
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.preload import declared_modules
from prefjudge.sandbox.process import EXIT_EXEC_FAILED, RunOutcome

DETAIL_MAX = 2000


class TaskNotRunnableError(ValueError):
    """The task lacks what its test format needs."""


def evalplus_dataset(task: Task) -> str:
    """``mbpp`` or ``humaneval``: which EvalPlus special oracles apply to the task."""
    dataset = task.metadata.get("evalplus_dataset")
    if dataset in ("mbpp", "humaneval"):
        return dataset
    return "mbpp" if task.task_id.lower().startswith("mbpp") else "humaneval"


def _require(condition: object, task: Task, what: str) -> None:
    if not condition:
        raise TaskNotRunnableError(f"task {task.task_id} ({task.test_format}) has no {what}")


def candidate_payload(
    task: Task, code: str, limits: SandboxLimits,
    time_limits: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """Payload running ``code`` against ``task``'s tests.

    For HumanEval+/MBPP+ and stdin/stdout tasks it holds the inputs only: the expected
    outputs stay outside the sandbox, where ``prefjudge.sandbox.compare`` judges the
    outputs the run sends back. Its ``libraries`` are the modules the task declares
    (:func:`~prefjudge.sandbox.preload.declared_modules`): the harness notes which are
    missing before the code runs, and only a failure for want of one of them is an
    ``error``.

    Args:
        task: The task (its ``test_format`` picks the adapter).
        code: Complete code defining the entry point (or the stdin/stdout program).
        limits: Limits of the run (the stdin/stdout adapter uses the timeout per case).
        time_limits: HumanEval+/MBPP+ only: per input set, each input's CPU-time limit
            (from the reference's times; see ``ReferenceOutputs.time_limits``).

    Returns:
        The harness payload.

    Raises:
        TaskNotRunnableError: The task lacks what its format needs.
    """
    payload = _format_payload(task, code, limits, time_limits)
    payload["libraries"] = declared_modules(task)
    return payload


def _format_payload(
    task: Task, code: str, limits: SandboxLimits, time_limits: dict[str, list[float]] | None
) -> dict[str, Any]:
    fmt = task.test_format
    if fmt == "bigcodebench":
        _require(task.tests, task, "tests")
        return {"format": "bigcodebench", "code": code, "tests": task.tests}
    if fmt == "humaneval":
        _require(task.tests, task, "tests")
        _require(task.entry_point, task, "entry_point")
        return {
            "format": "humaneval",
            "code": code,
            "tests": task.tests,
            "entry_point": task.entry_point,
        }
    if fmt == "evalplus":
        return {**_evalplus_inputs(task), "role": "candidate", "code": code,
                "time_limits": time_limits}
    if fmt == "stdio":
        _require(task.stdio_cases, task, "stdio_cases")
        return {
            "format": "stdio",
            "code": code,
            "inputs": [case.input for case in task.stdio_cases],
            "case_timeout_s": float(limits.timeout_s),
        }
    raise TaskNotRunnableError(f"task {task.task_id} has no tests (test_format {fmt!r})")


def _evalplus_inputs(task: Task) -> dict[str, Any]:
    _require(task.entry_point, task, "entry_point")
    _require(task.canonical_solution, task, "canonical_solution to compare against")
    _require(task.base_inputs or task.plus_inputs, task, "base_inputs/plus_inputs")
    return {
        "format": "evalplus",
        "task_id": task.task_id,
        "entry_point": task.entry_point,
        "dataset": evalplus_dataset(task),
        "base_inputs": task.base_inputs or [],
        "plus_inputs": task.plus_inputs or [],
    }


def reference_payload(task: Task) -> dict[str, Any]:
    """Payload running a HumanEval+/MBPP+ task's reference solution on all its inputs.

    Raises:
        TaskNotRunnableError: The task lacks what its format needs.
    """
    return {**_evalplus_inputs(task), "role": "reference", "code": task.canonical_solution}


def perf_payload(
    task: Task, code: str | None, inputs: list[list[Any]], rounds: int,
    warm_imports: list[str] | None = None,
) -> dict[str, Any]:
    """Payload calling a HumanEval+/MBPP+ function on ``inputs``, ``rounds`` times over.

    Its run's cost is what counts (``RunOutcome.cpu_s``, measured by the supervisor); the
    measured calls' outputs are written as a test run writes them and checked against the
    reference outside the sandbox (``child/_pj_perf.py``,
    :func:`prefjudge.judge.facts.efficiency.measured_outputs_problem`).

    Args:
        task: The task (entry point, dataset, MBPP+ number for its input types).
        code: Complete code defining the entry point; None for a baseline run, which
            does everything but execute and call the code.
        inputs: Argument lists, as the task stores them (a subset of its inputs).
        rounds: How many times the code is executed afresh and called on every input.
        warm_imports: Modules imported before the rounds (the same for every run of a
            comparison, so that import costs cancel out).

    Raises:
        TaskNotRunnableError: The task has no entry point, or ``rounds`` is below 1.
    """
    _require(task.entry_point, task, "entry_point")
    _require(rounds >= 1, task, "positive number of rounds")
    return {
        "format": "perf",
        "task_id": task.task_id,
        "entry_point": task.entry_point,
        "dataset": evalplus_dataset(task),
        "code": code,
        "inputs": inputs,
        "rounds": int(rounds),
        "warm_imports": sorted(warm_imports or []),
        "libraries": declared_modules(task),
    }


def _tail(text: str, size: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= size else "..." + text[-size:]


def _how_it_ended(outcome: RunOutcome) -> str:
    if outcome.signal is not None:
        try:
            name = signal.Signals(outcome.signal).name
        except ValueError:
            name = f"signal {outcome.signal}"
        return f"killed by {name}"
    if outcome.exit_code is not None:
        return f"exit status {outcome.exit_code}"
    return "no exit status"


def _scratch_full(outcome: RunOutcome, limits: SandboxLimits) -> str:
    """What the code used up of its tmpfs, said plainly ('' when nothing)."""
    parts = []
    if "files" in outcome.scratch_full:
        parts.append(f"the sandbox's {limits.max_files}-file limit")
    if "bytes" in outcome.scratch_full:
        parts.append(f"the sandbox's {limits.disk_mb} MiB disk")
    return f"no space left: the code used up {' and '.join(parts)}" if parts else ""


def interpret(outcome: RunOutcome, limits: SandboxLimits) -> FuncResult:
    """Turn a run's outcome into a status and a bounded detail message.

    Args:
        outcome: What the sandboxed run produced.
        limits: The limits it ran under (quoted in details).

    Returns:
        The functional result; only a nonce-tagged ``done`` record can yield ``pass``.
    """
    if outcome.setup_error:
        return FuncResult(status="error", detail=f"sandbox setup failed: {outcome.setup_error}")
    if outcome.output_exceeded:
        return FuncResult(
            status="fail",
            detail=f"output limit exceeded: more than {limits.max_output_kb} KiB on stdout/stderr",
        )
    if outcome.timed_out:
        return FuncResult(
            status="timeout", detail=f"wall-clock limit of {limits.timeout_s:g} s exceeded"
        )
    full = _scratch_full(outcome, limits)
    if outcome.result is not None:
        detail = str(outcome.result.get("detail", ""))[:DETAIL_MAX]
        if full and outcome.result["status"] != "pass":
            # the code used up its tmpfs: its own doing, whatever the harness made of it
            return FuncResult(status="fail", detail=f"{full}\n{detail}"[:DETAIL_MAX])
        return FuncResult(status=outcome.result["status"], detail=detail)
    if full:
        tail = _tail(outcome.output)
        return FuncResult(status="fail", detail=f"{full}\n{tail}" if tail else full)
    if outcome.signal == signal.SIGXCPU:
        return FuncResult(status="timeout", detail=f"CPU-time limit of {limits.cpu_s} s exceeded")
    if outcome.supervisor_lost:
        return FuncResult(
            status="fail",
            detail="the sandbox supervisor ended before the tests finished (in rlimits mode "
            "the code can kill it)\n" + _tail(outcome.output),
        )
    if outcome.stage == "started":
        detail = f"the program ended before its tests finished ({_how_it_ended(outcome)})"
        if outcome.work_replaced:
            detail += "; it had moved or replaced its work folder"
        tail = _tail(outcome.output)
        return FuncResult(status="fail", detail=f"{detail}\n{tail}" if tail else detail)
    why = "could not start" if outcome.exit_code == EXIT_EXEC_FAILED else _how_it_ended(outcome)
    return FuncResult(status="error", detail=f"the test harness {why}\n{_tail(outcome.output)}")
