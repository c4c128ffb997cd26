"""Benchmark the sandbox's zygotes: BigCodeBench canonical solutions run three ways.

Modes, run in this order within each repetition (``--repeat``) to spread drift evenly:

``naive``
    No sandbox at all, what every harness pays: one plain ``python -c RUNNER`` per task
    that executes ``code + tests`` as module ``__test__`` (as BigCodeBench's own harness
    does) in a temporary directory and runs its ``TestCases`` with ``unittest``; pass if
    every test passes, fail otherwise, timeout past the wall limit. ``--workers`` at once.
``fresh``
    ``run_functional(jobs, zygote=False)``: a fresh sandboxed interpreter per run.
``zygote``
    ``run_functional(jobs, zygote=True)``: each worker forks its runs from a zygote that
    imported the tasks' libraries once.

Tasks whose canonical solution waits rather than computes are left out unless ``--all``
is given: those of ``WAITING_TASKS`` (they need the internet or a loopback network, or
wait for a duration) and every one whose reference solution calls ``sleep(`` (some sleep
20 s in all). No harness makes waiting cheaper: such runs measure the clock, not the
harness, and a handful of them would decide a mode's wall time.

Each mode runs in its own short-lived Python process (started by this script), so that
what ``getrusage`` reports belongs to that mode alone. Figures per mode:

- wall-clock runs/s/core: ``runs / (wall seconds * cores)`` (cores: ``--workers``, at most
  the CPU count; more workers than cores let runs that wait overlap), wall time of the whole
  ``run_functional`` call (zygote start-up included);
- CPU core-seconds per run: the increase of ``RUSAGE_CHILDREN`` (user + system) over the
  mode -- every sandbox process is waited for by its parent up the chain, and the zygotes
  are closed when ``run_functional`` returns, so all of it is counted -- plus the
  measuring process's own ``RUSAGE_SELF`` increase (its supervision work). Tests that
  sleep or wait cost wall time but no CPU: this is the figure they cannot hide;
- steady CPU core-seconds per run: the same less the CPU the zygotes spent starting
  (``zygote_stats["startup_cpu_s"]``, importing the preloaded libraries), which a real
  study, with hundreds of thousands of runs per zygote pool, spreads over all its runs;
  for ``naive`` and ``fresh``, which start nothing ahead, it equals CPU s/run;
- median wall seconds per run: the time between two consecutive results of the same
  worker thread (the first run of a worker counts from the start, start-up included);
- peak memory per worker: the zygotes' largest resident size (``zygote_stats``) for
  ``zygote``; the largest ``ru_maxrss`` of any waited-for descendant for the others.

With ``--repeat R`` the figures are medians over the repetitions. Statuses are compared
per task across every mode and repetition, and fresh vs zygote details too; everything
goes to ``--out`` as JSON.

    python scripts/bench_zygote.py --n 60
    python scripts/bench_zygote.py --n 60 --all
    python scripts/bench_zygote.py --n 200 --workers 8 --repeat 3 --out bench.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from prefjudge.records import FuncResult, Task
from prefjudge.sandbox import SandboxLimits, isolation_report, resolve_isolation, run_functional
from prefjudge.scoring.tasks import load_tasks, missing_libraries

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "benchmarks"
BIGCODEBENCH = "bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz"
MODES = ("naive", "fresh", "zygote")
STATUSES = ("pass", "fail", "timeout", "error")
MARKER = "@@bench_zygote_result@@ "
DETAIL_SHOWN = 200

# Tasks left out unless --all: their canonical solutions wait rather than compute, which no
# harness makes cheaper, and a single 60 s timeout would dominate a whole mode's wall time.
# The sandbox has no network by design, so those that need one time out or fail there.
NEEDS_NETWORK = "need the internet or a loopback network"
WAITS_LONG = "sleep or wait for long"
SLEEPS = "call sleep( in the reference solution"
WAITING_TASKS: dict[str, str] = {
    **{f"BigCodeBench/{n}": NEEDS_NETWORK for n in (176, 314, 1005, 1038, 1040)},
    **{f"BigCodeBench/{n}": WAITS_LONG for n in (195, 461, 596, 1103, 1104)},
}

# The naive runner: BigCodeBench's own way of running a sample, without any sandbox.
RUNNER = r"""
import builtins, json, os, sys, types, unittest

out = os.dup(1)
payload = json.loads(sys.stdin.read())
module = types.ModuleType("__test__")
module.__dict__.update(__builtins__=builtins, __file__="__test__.py", __package__=None,
                       __doc__=None, sys=sys, os=os, environ=os.environ)
sys.modules["__test__"] = module
try:
    source = payload["code"] + "\n\n" + payload["tests"]
    exec(compile(source, "__test__.py", "exec"), module.__dict__)
    suite = unittest.TestLoader().loadTestsFromTestCase(module.TestCases)
    result = unittest.TestResult()
    suite.run(result)
    problems = result.failures + result.errors
    if problems:
        status = "fail"
        detail = (f"{len(problems)} of {result.testsRun} tests failed; first: "
                  f"{problems[0][0].id()}\n{problems[0][1][-600:]}")
    elif result.unexpectedSuccesses:
        status, detail = "fail", "a test expected to fail passed"
    elif not result.testsRun:
        status, detail = "fail", "no tests ran"
    else:
        status, detail = "pass", f"{result.testsRun} tests passed"
except BaseException as exc:
    status, detail = "fail", f"failed at import: {type(exc).__name__}: {exc}"[:1000]
line = payload["marker"] + json.dumps({"status": status, "detail": detail}) + "\n"
os.write(out, line.encode())
os._exit(0)
"""


def parse_args() -> argparse.Namespace:
    """Command-line options (the hidden ones start one mode's measuring process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="benchmarks folder")
    parser.add_argument("--n", type=int, default=60, help="tasks to sample (installed libs)")
    parser.add_argument("--all", action="store_true",
                        help="include the tasks that wait rather than compute (WAITING_TASKS)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the task sample")
    parser.add_argument("--libs", default="",
                        help="only tasks whose libs name one of these (comma-separated), e.g. "
                             "pandas,matplotlib,scipy: the ones importing heavy libraries")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0, help="wall seconds per run")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of the trio")
    parser.add_argument("--out", type=Path, default=Path("bench_zygote.json"))
    parser.add_argument("--measure", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--tasks-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n < 1 or args.workers < 1 or args.repeat < 1 or args.timeout <= 0:
        parser.error("--n, --workers, --repeat and --timeout must be positive")
    return args


def waits(task: Task) -> str:
    """Why the task's reference solution waits rather than computes ('' if it does not)."""
    if task.task_id in WAITING_TASKS:
        return WAITING_TASKS[task.task_id]
    return SLEEPS if "sleep(" in (task.canonical_solution or "") else ""


def sample_tasks(
    data: Path, n: int, seed: int, include_waiting: bool = False,
    libs: frozenset[str] = frozenset(),
) -> tuple[list[Task], int, dict[str, str]]:
    """A seeded random sample of the BigCodeBench tasks whose libraries are installed.

    The tasks that wait (:func:`waits`) are left out before sampling (unless
    ``include_waiting``), so that ``n`` counts usable tasks.

    Args:
        data: The benchmarks folder.
        n: Tasks to sample (all of them if fewer are usable).
        seed: Seed of the sample.
        include_waiting: Keep the tasks that wait rather than compute.
        libs: Only tasks whose ``libs`` name one of these (all tasks when empty).

    Returns:
        The sampled tasks in file order, how many were usable, and the runnable tasks left
        out (task id to why).
    """
    runnable = [t for t in load_tasks(data / BIGCODEBENCH).values() if not missing_libraries(t)]
    if libs:
        runnable = [t for t in runnable if libs & {lib.split(".")[0] for lib in t.libs}]
    left_out = {} if include_waiting else {
        t.task_id: waits(t) for t in runnable if waits(t)
    }
    usable = [t for t in runnable if t.task_id not in left_out]
    chosen = set(random.Random(seed).sample(range(len(usable)), min(n, len(usable))))
    return [task for i, task in enumerate(usable) if i in chosen], len(usable), left_out


class RunClock:
    """Per-run wall times from result times: the gap since the same thread's last result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[int, float] = {}
        self.started = time.monotonic()
        self.durations: list[float] = []

    def start(self) -> None:
        """Start counting (the first run of every worker counts from here)."""
        self.started = time.monotonic()

    def tick(self) -> None:
        """Record a run that just ended; call it from the worker thread that ran it."""
        now = time.monotonic()
        ident = threading.get_ident()
        with self._lock:
            self.durations.append(now - self._last.get(ident, self.started))
            self._last[ident] = now


def run_naive_one(task: Task, code: str, timeout: float) -> FuncResult:
    """Run one task's tests against ``code`` in a plain interpreter, no sandbox.

    Args:
        task: A BigCodeBench task.
        code: The code under test.
        timeout: Wall-clock limit in seconds (the process group is killed past it).

    Returns:
        pass, fail (a test failed, or the process died before reporting) or timeout.
    """
    payload = json.dumps({"code": code, "tests": task.tests, "marker": MARKER})
    with tempfile.TemporaryDirectory(prefix="bench_zygote_") as work:
        proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=work,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(payload.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            return FuncResult(status="timeout", detail=f"wall-clock limit of {timeout:g} s")
    for line in reversed(stdout.decode("utf-8", errors="replace").splitlines()):
        if line.startswith(MARKER):
            return FuncResult.model_validate_json(line[len(MARKER):])
    tail = stderr.decode("utf-8", errors="replace").strip()[-600:]
    return FuncResult(status="fail", detail=f"ended without a result (exit {proc.returncode})"
                      f"\n{tail}")


def run_naive(
    jobs: Sequence[tuple[Task, str]],
    workers: int,
    timeout: float,
    on_result: Callable[[int, FuncResult], None],
) -> list[FuncResult]:
    """Run every job with :func:`run_naive_one`, ``workers`` at a time.

    Args:
        jobs: ``(task, code)`` pairs.
        workers: Runs at once.
        timeout: Wall-clock limit per run, in seconds.
        on_result: Called as ``on_result(index, result)`` from the worker thread.

    Returns:
        One result per job, in order.
    """

    def work(index: int) -> FuncResult:
        task, code = jobs[index]
        result = run_naive_one(task, code, timeout)
        on_result(index, result)
        return result

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="naive") as threads:
        return list(threads.map(work, range(len(jobs))))


def cpu_seconds(usage: resource.struct_rusage) -> float:
    """User plus system CPU seconds of a ``getrusage`` result."""
    return usage.ru_utime + usage.ru_stime


def measure_mode(mode: str, tasks: list[Task], workers: int, timeout: float) -> dict[str, Any]:
    """Run every task's canonical solution in one mode; measure wall time, CPU and memory.

    Meant for a process of its own: ``RUSAGE_CHILDREN``'s ``ru_maxrss`` never decreases.

    Args:
        mode: ``naive``, ``fresh`` or ``zygote``.
        tasks: The tasks.
        workers: Runs at once.
        timeout: Wall-clock limit per run (also the CPU limit of sandboxed runs).

    Returns:
        The figures, per-run wall times and every result.
    """
    jobs = [(task, task.canonical_solution or "") for task in tasks]
    limits = SandboxLimits(timeout_s=timeout, cpu_s=int(timeout))
    if mode != "naive":
        resolve_isolation()  # probe the isolation mode now, outside the measured window
    clock = RunClock()
    stats: dict[str, Any] = {}
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock.start()
    if mode == "naive":
        results = run_naive(jobs, workers, timeout, lambda index, result: clock.tick())
    else:
        results = run_functional(
            jobs,
            limits=limits,
            workers=workers,
            on_result=lambda index, result: clock.tick(),
            zygote=mode == "zygote",
            zygote_stats=stats,
        )
    wall = time.monotonic() - clock.started
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_self = cpu_seconds(self_after) - cpu_seconds(self_before)
    cpu_children = cpu_seconds(children_after) - cpu_seconds(children_before)
    peak = stats.get("peak_rss_kb", 0) if mode == "zygote" else children_after.ru_maxrss
    startup = float(stats.get("startup_cpu_s") or 0.0) if mode == "zygote" else 0.0
    return {
        "mode": mode,
        "runs": len(jobs),
        "workers": workers,
        "wall_s": wall,
        "runs_per_s_per_core": len(jobs) / (wall * min(workers, os.cpu_count() or 1)),
        "cpu_s_per_run": (cpu_self + cpu_children) / len(jobs),
        "cpu_s_per_run_steady": (cpu_self + cpu_children - startup) / len(jobs),
        "startup_cpu_s": startup,
        "cpu_self_s": cpu_self,
        "cpu_children_s": cpu_children,
        "median_run_s": statistics.median(clock.durations) if clock.durations else None,
        "peak_rss_kb": int(peak),
        "children_maxrss_kb": children_after.ru_maxrss,
        "statuses": dict(collections.Counter(result.status for result in results)),
        "zygote_stats": stats if mode == "zygote" else None,
        "results": [
            {"task_id": task.task_id, "status": result.status, "detail": result.detail}
            for task, result in zip(tasks, results, strict=True)
        ],
    }


def measure_in_child(mode: str, tasks_file: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Measure one mode in a fresh Python process running this script.

    Args:
        mode: The mode.
        tasks_file: JSONL of the tasks.
        args: The options (workers, timeout).

    Returns:
        What :func:`measure_mode` returned there.
    """
    with tempfile.TemporaryDirectory(prefix="bench_zygote_") as folder:
        result_file = Path(folder) / "result.json"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--measure", mode,
            "--tasks-file", str(tasks_file), "--result-file", str(result_file),
            "--workers", str(args.workers), "--timeout", str(args.timeout),
        ]
        subprocess.run(command, check=True)
        return json.loads(result_file.read_text(encoding="utf-8"))


def differences(reps: list[dict[str, dict[str, Any]]]) -> tuple[list[dict], list[dict]]:
    """Tasks whose status differs anywhere, and fresh vs zygote detail differences.

    Args:
        reps: Per repetition, the measurement of each mode.

    Returns:
        ``(status differences, detail differences)``; the first lists each mode's
        statuses (one per repetition), the second each differing (repetition, task).
    """
    task_ids = [r["task_id"] for r in reps[0]["naive"]["results"]]
    status_diffs = []
    for i, task_id in enumerate(task_ids):
        seen = {mode: [rep[mode]["results"][i]["status"] for rep in reps] for mode in MODES}
        if len({s for statuses in seen.values() for s in statuses}) > 1:
            status_diffs.append({"task_id": task_id, **seen})
    detail_diffs = []
    for number, rep in enumerate(reps, 1):
        pairs = zip(rep["fresh"]["results"], rep["zygote"]["results"], strict=True)
        for fresh, zygote in pairs:
            if (fresh["status"], fresh["detail"]) != (zygote["status"], zygote["detail"]):
                detail_diffs.append({
                    "repeat": number,
                    "task_id": fresh["task_id"],
                    "fresh": {"status": fresh["status"], "detail": fresh["detail"]},
                    "zygote": {"status": zygote["status"], "detail": zygote["detail"]},
                })
    return status_diffs, detail_diffs


FIGURES = ("wall_s", "runs_per_s_per_core", "cpu_s_per_run", "cpu_s_per_run_steady",
           "startup_cpu_s", "cpu_self_s", "cpu_children_s", "median_run_s", "peak_rss_kb",
           "children_maxrss_kb")


def summarise(reps: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per mode: the median of every figure over the repetitions, and all statuses.

    Args:
        reps: Per repetition, the measurement of each mode.

    Returns:
        Per mode, the median figures and the status counts summed over repetitions.
    """
    summary = {}
    for mode in MODES:
        measured = [rep[mode] for rep in reps]
        figures = {}
        for name in FIGURES:
            values = [m[name] for m in measured if m[name] is not None]
            figures[name] = statistics.median(values) if values else None
        statuses: collections.Counter[str] = collections.Counter()
        for m in measured:
            statuses.update(m["statuses"])
        summary[mode] = {"runs": sum(m["runs"] for m in measured), **figures,
                         "statuses": dict(statuses)}
    return summary


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """How many times better zygotes do than fresh processes and than the naive runner.

    Args:
        summary: What :func:`summarise` returned.

    Returns:
        Per comparison, the throughput ratio (zygote runs/s/core over the other's), the
        CPU ratio (the other's CPU s/run over zygote's), the same on steady CPU (zygote
        start-up left out) and the median run time ratio (the other's over zygote's):
        above 1, zygotes do better.
    """

    def ratio(top: float | None, bottom: float | None) -> float | None:
        return top / bottom if top and bottom else None

    zygote = summary["zygote"]
    return {
        f"zygote vs {other}": {
            "throughput_x": ratio(zygote["runs_per_s_per_core"],
                                  summary[other]["runs_per_s_per_core"]),
            "cpu_x": ratio(summary[other]["cpu_s_per_run"], zygote["cpu_s_per_run"]),
            "cpu_steady_x": ratio(summary[other]["cpu_s_per_run_steady"],
                                  zygote["cpu_s_per_run_steady"]),
            "median_run_x": ratio(summary[other]["median_run_s"], zygote["median_run_s"]),
        }
        for other in ("fresh", "naive")
    }


def _number(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def shorten(text: str, size: int = DETAIL_SHOWN) -> str:
    """``text`` on one line, cut to ``size`` characters."""
    flat = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= size else flat[: size - 3] + "..."


def report(console: Console, report_data: dict[str, Any]) -> None:
    """Print the figures, the ratios and the differences between modes.

    Args:
        console: Where to print.
        report_data: What is written to ``--out``.
    """
    summary, config = report_data["summary"], report_data["config"]
    repeat = config["repeat"]
    title = (f"{config['n']} BigCodeBench canonical solutions, {config['workers']} workers, "
             f"{config['isolation']} isolation" + (f", median of {repeat}" if repeat > 1 else ""))
    table = Table(title=title)
    for column in ("mode", "runs", "wall s", "runs/s/core", "CPU s/run", "CPU s/run steady",
                   "parent CPU s/run", "median run s", "statuses", "peak RSS/worker MiB"):
        table.add_column(column, justify="left" if column in ("mode", "statuses") else "right")
    for mode in MODES:
        s = summary[mode]
        statuses = " ".join(f"{k} {s['statuses'][k]}" for k in STATUSES if s["statuses"].get(k))
        table.add_row(
            mode, str(s["runs"]), _number(s["wall_s"], ".1f"),
            _number(s["runs_per_s_per_core"], ".3f"), _number(s["cpu_s_per_run"], ".3f"),
            _number(s["cpu_s_per_run_steady"], ".3f"),
            _number(s["cpu_self_s"] / (s["runs"] / repeat), ".3f"),
            _number(s["median_run_s"], ".2f"), statuses,
            _number(s["peak_rss_kb"] / 1024, ".0f"),
        )
    console.print(table)
    ratio_table = Table(title="ratios (above 1: zygotes do better)")
    for column in ("comparison", "wall runs/s/core", "CPU s/run", "CPU s/run steady",
                   "median run s"):
        ratio_table.add_column(column, justify="left" if column == "comparison" else "right")
    for name, r in report_data["ratios"].items():
        ratio_table.add_row(name, *(_number(r[key], ".2f") + "x" for key in
                                    ("throughput_x", "cpu_x", "cpu_steady_x", "median_run_x")))
    console.print(ratio_table)
    stats = report_data["zygote_stats"]
    for number, st in enumerate(stats, 1):
        label = f" (repeat {number})" if repeat > 1 else ""
        console.print(
            f"zygotes{label}: started {st.get('started')}, replaced {st.get('replaced')}, "
            f"lost {st.get('lost')}, retried {st.get('retried')}, start-up CPU "
            f"{_number(st.get('startup_cpu_s'), '.1f')} s, preloaded "
            f"{len(st.get('preloaded') or [])} modules, skipped {st.get('skipped') or {}}",
            highlight=False,
        )
        if st.get("fallback"):
            console.print(f"[bold red]zygote runs fell back to fresh processes: "
                          f"{st['fallback']}[/]")
    status_diffs, detail_diffs = report_data["status_differences"], report_data[
        "detail_differences"]
    n = config["n"]
    if status_diffs:
        console.print(f"[bold red]statuses differ between modes for {len(status_diffs)} of "
                      f"{n} tasks:[/]")
        for d in status_diffs:
            console.print(f"  {d['task_id']:<18} "
                          + "  ".join(f"{m}={','.join(d[m])}" for m in MODES), highlight=False)
    else:
        console.print(f"statuses identical in all three modes for all {n} tasks")
    if detail_diffs:
        console.print(f"[bold red]fresh vs zygote: status or detail differs for "
                      f"{len(detail_diffs)} runs:[/]")
        for d in detail_diffs:
            where = f" (repeat {d['repeat']})" if repeat > 1 else ""
            console.print(f"  {d['task_id']}{where}", highlight=False)
            for mode in ("fresh", "zygote"):
                console.print(f"    {mode:<6} {d[mode]['status']:<7} "
                              f"{shorten(d[mode]['detail'])}", highlight=False, soft_wrap=True)
    else:
        console.print(f"fresh vs zygote: statuses and details identical for all {n} tasks")


def child_main(args: argparse.Namespace) -> None:
    """Measure the mode ``--measure`` over the tasks of ``--tasks-file``."""
    lines = args.tasks_file.read_text(encoding="utf-8").splitlines()
    tasks = [Task.model_validate_json(line) for line in lines if line.strip()]
    measured = measure_mode(args.measure, tasks, args.workers, args.timeout)
    args.result_file.write_text(json.dumps(measured), encoding="utf-8")


def main() -> None:
    """Run the benchmark: sample, measure every mode ``--repeat`` times, report."""
    args = parse_args()
    if args.measure:
        child_main(args)
        return
    console = Console(width=None if sys.stdout.isatty() else 150)
    isolation = isolation_report()
    if isolation["warning"]:
        console.print(f"[bold red]{isolation['warning']}[/]")
    libs = frozenset(name for name in (args.libs or "").split(",") if name)
    tasks, usable, left_out = sample_tasks(args.data, args.n, args.seed, args.all, libs)
    args.n = len(tasks)
    reasons = collections.Counter(left_out.values())
    why = "; ".join(f"{count} {reason}" for reason, count in reasons.items())
    left = (f"{len(left_out)} left out that wait rather than compute ({why}; --all keeps them)"
            if left_out else "none left out (--all)")
    only = f" using {', '.join(sorted(libs))}" if libs else ""
    console.print(f"{len(tasks)} of {usable} usable BigCodeBench tasks{only} (seed {args.seed}), "
                  f"{left}; {args.workers} workers on {os.cpu_count()} CPUs; sandbox mode "
                  f"{isolation['mode']}", highlight=False)
    reps: list[dict[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="bench_zygote_") as folder:
        tasks_file = Path(folder) / "tasks.jsonl"
        tasks_file.write_text("".join(t.model_dump_json() + "\n" for t in tasks),
                              encoding="utf-8")
        for number in range(1, args.repeat + 1):
            rep = {}
            for mode in MODES:
                rep[mode] = measure_in_child(mode, tasks_file, args)
                m = rep[mode]
                console.print(
                    f"  repeat {number}/{args.repeat} {mode:<6} {m['wall_s']:7.1f} s wall, "
                    f"{m['cpu_s_per_run']:.3f} CPU s/run ({m['cpu_s_per_run_steady']:.3f} "
                    f"steady), {m['statuses']}", highlight=False)
            reps.append(rep)
    summary = summarise(reps)
    status_diffs, detail_diffs = differences(reps)
    report_data = {
        "config": {
            "n": args.n, "seed": args.seed, "workers": args.workers, "timeout_s": args.timeout,
            "repeat": args.repeat, "cpus": os.cpu_count(), "isolation": isolation["mode"],
            "python": sys.version.split()[0], "include_waiting": args.all,
            "libs": sorted(libs),
            "left_out": left_out, "tasks": [t.task_id for t in tasks],
        },
        "summary": summary,
        "ratios": ratios(summary),
        "zygote_stats": [rep["zygote"]["zygote_stats"] or {} for rep in reps],
        "status_differences": status_diffs,
        "detail_differences": detail_diffs,
        "repeats": reps,
    }
    report(console, report_data)
    args.out.write_text(json.dumps(report_data, indent=1), encoding="utf-8")
    console.print(f"written to {args.out}", highlight=False)


if __name__ == "__main__":
    main()
