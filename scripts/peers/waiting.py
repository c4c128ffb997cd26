"""Which BigCodeBench tasks mostly wait: wall time far above CPU time of the canonical solution.

A task is a *candidate* when its canonical solution or tests mention something that waits
(``sleep(``, ``subprocess``, sockets, HTTP, threads, ``timeout`` ...). Each candidate's
canonical solution runs once with its tests in the BigCodeBench venv, without a sandbox, the
way BigCodeBench's harness runs it (code and tests as module ``__test__`` in a temporary
folder, ``unittest``), two at a time; wall (measured here) and CPU (user + system of the
process and every descendant it waited for, reported by the process itself at its end; a
run that times out has no CPU figure and counts as waiting) are recorded. The task *waits* when
``wall >= WAIT_MIN_S`` and ``wall >= WAIT_RATIO * cpu``. Results are kept in
``<peers>/bigcodebench_timing.json`` (keyed by task id and a digest of its code and tests),
so only new candidates are measured on a later run. Tasks that are not candidates count
as computing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

WAIT_MIN_S = 2.0
WAIT_RATIO = 3.0
MEASURE_TIMEOUT_S = 150.0

CANDIDATE = re.compile(r"sleep\(|subprocess|Popen|socket|requests|urllib|http|smtplib|ftplib|"
                       r"threading|multiprocessing|asyncio|wait\(|timeout|select\.")

RUNNER = r"""
import builtins, json, os, resource, sys, types, unittest
payload = json.loads(sys.stdin.read())
out = os.dup(1)
module = types.ModuleType("__test__")
module.__dict__.update(__builtins__=builtins, __file__="__test__.py", __package__=None,
                       __doc__=None, sys=sys, os=os, environ=os.environ)
sys.modules["__test__"] = module
devnull = os.open(os.devnull, os.O_WRONLY)
os.dup2(devnull, 1)
os.dup2(devnull, 2)
status = "fail"
try:
    exec(compile(payload["code"] + "\n" + payload["test"], "__test__.py", "exec"), module.__dict__)
    result = unittest.TestResult()
    unittest.TestLoader().loadTestsFromTestCase(module.TestCases).run(result)
    status = "pass" if result.wasSuccessful() else "fail"
except BaseException:
    status = "fail"
cpu = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                            resource.getrusage(resource.RUSAGE_CHILDREN)))
os.write(out, json.dumps({"status": status, "cpu": cpu}).encode())
os._exit(0)
"""


def digest(task: dict) -> str:
    """A digest of what decides a task's timing (its code and tests)."""
    text = task["complete_prompt"] + task["canonical_solution"] + task["test"]
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def measure(python: Path, task: dict, env: dict[str, str]) -> dict:
    """Run a task's canonical solution with its tests once; its wall and CPU seconds.

    Args:
        python: The interpreter (the BigCodeBench venv's).
        task: The task.
        env: The environment.

    Returns:
        ``{"wall": s, "cpu": s, "status": "pass"|"fail"|"timeout", "digest": ...}``.
    """
    payload = json.dumps({"code": task["complete_prompt"] + "\n" + task["canonical_solution"],
                          "test": task["test"]})
    with tempfile.TemporaryDirectory(prefix="bench_peers_wait_") as work:
        start = time.perf_counter()
        proc = subprocess.Popen([str(python), "-c", RUNNER], cwd=work, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        status, cpu = "fail", None
        try:
            out, _ = proc.communicate(payload.encode(), timeout=MEASURE_TIMEOUT_S)
            report = json.loads(out or b"{}")
            status, cpu = report.get("status", "fail"), report.get("cpu", cpu)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            status = "timeout"
        except json.JSONDecodeError:
            status = "fail"
        wall = time.perf_counter() - start
    return {"wall": round(wall, 3), "cpu": None if cpu is None else round(cpu, 3),
            "status": status,
            "digest": digest(task)}


def waits(timing: dict) -> bool:
    """Whether a measured task mostly waits (wall >> CPU)."""
    if timing["status"] == "timeout":
        return True
    if timing["cpu"] is None:
        return False
    return timing["wall"] >= WAIT_MIN_S and timing["wall"] >= WAIT_RATIO * timing["cpu"]


def _known(cache: Path) -> dict[str, dict]:
    return json.loads(cache.read_text(encoding="utf-8")) if cache.exists() else {}


def to_measure(tasks: dict[str, dict], task_ids: list[str], cache: Path) -> list[str]:
    """The candidates among ``task_ids`` that the cache has no current timing for."""
    known = _known(cache)
    return [t for t in task_ids
            if CANDIDATE.search(tasks[t]["canonical_solution"] + tasks[t]["test"])
            and known.get(t, {}).get("digest") != digest(tasks[t])]


def classify(tasks: dict[str, dict], task_ids: list[str], python: Path, env: dict[str, str],
             cache: Path, progress: Callable[[str, dict], None]) -> dict[str, dict]:
    """Measure every candidate among ``task_ids`` (cached), and return all timings.

    Args:
        tasks: Every task by id.
        task_ids: The tasks to consider.
        python: The BigCodeBench venv's interpreter.
        env: Its environment.
        cache: The JSON file keeping earlier measurements.
        progress: Called with (task id, timing) as each measurement ends.

    Returns:
        Task id → timing, for the candidates (with ``"waits"`` set).
    """
    known = _known(cache)
    candidates = [t for t in task_ids
                  if CANDIDATE.search(tasks[t]["canonical_solution"] + tasks[t]["test"])]
    todo = to_measure(tasks, task_ids, cache)

    def one(task_id: str) -> tuple[str, dict]:
        return task_id, measure(python, tasks[task_id], env)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for task_id, timing in pool.map(one, todo):
            known[task_id] = timing
            progress(task_id, timing)
            cache.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
    return {t: {**known[t], "waits": waits(known[t])} for t in candidates}
