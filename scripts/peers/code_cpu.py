"""The candidates' own CPU: what any faithful harness must spend on a HumanEval+/MBPP+ sample.

Both tools call each sample's function on every input of the task (base, then plus; a set
stops at its first input that raises or runs out of time), so the CPU those calls take is
common to both; what each tool adds on top (processes, sandboxing, encoding, comparing)
is its overhead. This measures the common part with no harness at all: each sample in a
forked child of this process, its function called on every input (MBPP+ inputs rebuilt as
EvalPlus rebuilds them), each call limited to EvalPlus's time (``max(1 s, 4 x the
reference's)``, here CPU time), output to /dev/null, nothing compared. Only the calls are
timed (``time.process_time`` around each), summed over all samples. A sample is *tight*
(:data:`TIGHT`) when one of its calls comes near its limit, or reaches it: the peer's
wall-clock limit can fail it under load while prefjudge's CPU-time limit passes it, and a
call stopped at a wall-clock limit takes less CPU than one stopped at a CPU-time limit
when the machine is loaded.

Run as a script (``python -m peers.code_cpu TASKS SAMPLES``) so that the samples' side
effects stay out of the benchmark's process; prints one JSON object.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src" / "prefjudge" / "sandbox"
                       / "child"))
from _pj_evalplus import deserialize_mbpp_inputs

MIN_LIMIT_S, FACTOR = 1.0, 4.0
TIGHT = 0.25
"""A sample whose slowest call takes this share of its limit, or more, is *tight*: with two
runs sharing two cores and the machine's other load, its wall time can pass a wall-clock
limit that its CPU time stays well inside."""


class _Late(BaseException):
    pass


def _late(signum: int, frame: Any) -> None:
    raise _Late


def _sets(task: dict) -> list[list]:
    sets = [task.get("base_input") or [], task.get("plus_input") or []]
    if task["task_id"].lower().startswith("mbpp"):
        number = int(task["task_id"].rsplit("/", 1)[-1])
        sets = [deserialize_mbpp_inputs(number, inputs) for inputs in sets]
    return sets


def _calls(code: str, entry_point: str, sets: list[list], limits: list[list[float]] | None
           ) -> tuple[float, list[list[float]]]:
    """CPU seconds of the calls, and each call's CPU (in a forked child: side effects)."""
    namespace: dict[str, Any] = {"__name__": "__solution__"}
    try:
        exec(compile(code, "solution.py", "exec"), namespace)
    except BaseException:
        return 0.0, []
    function = namespace.get(entry_point)
    if not callable(function):
        return 0.0, []
    total, times = 0.0, []
    signal.signal(signal.SIGPROF, _late)
    for index, inputs in enumerate(sets):
        times.append([])
        for position, inp in enumerate(inputs):
            limit = limits[index][position] if limits else 0.0
            start = time.process_time()
            try:
                signal.setitimer(signal.ITIMER_PROF, limit)
                function(*inp)
            except _Late:  # a call that reached its limit: as tight as can be
                total += time.process_time() - start
                times[-1].append(limit)
                break
            except BaseException:
                total += time.process_time() - start
                break
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            elapsed = time.process_time() - start
            total += elapsed
            times[-1].append(elapsed)
    return total, times


def _in_child(code: str, entry_point: str, sets: list[list],
              limits: list[list[float]] | None) -> tuple[float, list[list[float]]]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            result = json.dumps(_calls(code, entry_point, sets, limits)).encode()
            os.write(write, result)
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    try:
        total, times = json.loads(b"".join(chunks))
    except ValueError:  # the child died (its own doing): its calls are not counted
        return 0.0, []
    return float(total), times


def code_cpu(tasks_file: Path, samples_file: Path) -> dict[str, float]:
    """The samples' own CPU seconds, and the references' (measured first, for the limits)."""
    tasks = {}
    for line in tasks_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            task = json.loads(line)
            tasks[task["task_id"]] = task
    limits, reference_cpu = {}, 0.0
    for task_id, task in tasks.items():
        sets = _sets(task)
        spent, times = _in_child(task["prompt"] + task["canonical_solution"],
                                 task["entry_point"], sets, None)
        reference_cpu += spent
        limits[task_id] = [[max(MIN_LIMIT_S, FACTOR * t) for t in each] + [MIN_LIMIT_S] * (
            len(inputs) - len(each)) for each, inputs in zip(times or [[], []], sets,
                                                               strict=True)]
    samples_cpu, tight, seen = 0.0, [], {}
    for line in samples_file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        sample = json.loads(line)
        task_id = sample["task_id"]
        index = seen[task_id] = seen.get(task_id, -1) + 1
        spent, times = _in_child(sample["solution"], tasks[task_id]["entry_point"],
                                 _sets(tasks[task_id]), limits[task_id])
        samples_cpu += spent
        closest = max((t / limit for each, bounds in zip(times, limits[task_id], strict=False)
                       for t, limit in zip(each, bounds, strict=False)), default=0.0)
        if closest >= TIGHT:
            tight.append(f"{task_id}#{index}")
    return {"samples_cpu_s": round(samples_cpu, 3), "reference_cpu_s": round(reference_cpu, 3),
            "tight": tight}


if __name__ == "__main__":
    print(json.dumps(code_cpu(Path(sys.argv[1]), Path(sys.argv[2]))))
