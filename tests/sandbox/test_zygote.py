"""Zygotes: runs forked from a pre-imported process behave exactly like fresh processes.

Real zygotes throughout (real namespaces, real forks, real libraries): consecutive runs
in one zygote must not see each other's changes, outcomes must equal the fresh-process
sandbox's on real benchmark solutions, and lost or worn zygotes are replaced.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from pj_processes import descends_from
from pj_samples import in_sample_libraries

from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, resolve_isolation, run_functional
from prefjudge.sandbox.preload import imports_of, modules_to_preload
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.tasks import load_tasks, missing_libraries

FAST = SandboxLimits(
    timeout_s=20, cpu_s=20, memory_mb=2048, nproc=32, fsize_mb=8, disk_mb=32, max_output_kb=64
)
MODE = resolve_isolation().mode
needs_namespaces = pytest.mark.skipif(MODE == "rlimits", reason=f"sandbox mode here is {MODE}")
FULL = os.environ.get("PREFJUDGE_ZYGOTE_FULL") == "1"


def bcb(tests: str, task_id: str = "Z/1") -> Task:
    return Task(task_id=task_id, entry_point="task_func", test_format="bigcodebench",
                tests=tests)


# Run 1 changes everything a library user could change; it passes if each change took.
CHANGE_EVERYTHING = bcb('''
import builtins, json, os, random, sys, unittest
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

class TestCases(unittest.TestCase):
    def test_change(self):
        json.dumps = lambda *a, **k: "patched"
        np.mean = lambda *a, **k: 42
        pd.set_option("display.max_rows", 7)
        plt.figure()
        os.environ["PJ_LEAK"] = "1"
        with open("/tmp/pj-leak", "w") as handle:
            handle.write("left behind")
        with open("left-in-work-dir", "w") as handle:
            handle.write("left behind")
        builtins.pj_leak = True
        sys.modules["pj_fake"] = json
        sys.path.append("/pj-leak")
        random.seed(1)
        np.random.seed(1)
        os.chdir("/tmp")
        self.assertEqual(json.dumps(1), "patched")
''', "Z/change")

# Run 2 passes only if none of run 1's changes is visible.
SEE_NOTHING = bcb('''
import builtins, json, os, sys, unittest
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

class TestCases(unittest.TestCase):
    def test_pristine(self):
        self.assertEqual(json.dumps(1), "1")
        self.assertEqual(np.mean([1, 3]), 2)
        self.assertEqual(pd.get_option("display.max_rows"), 60)
        self.assertEqual(plt.get_fignums(), [])
        self.assertNotIn("PJ_LEAK", os.environ)
        self.assertFalse(os.path.exists("/tmp/pj-leak"))
        self.assertEqual(sorted(os.listdir(".")), [])
        self.assertFalse(hasattr(builtins, "pj_leak"))
        self.assertNotIn("pj_fake", sys.modules)
        self.assertNotIn("/pj-leak", sys.path)
        self.assertEqual(os.getcwd(), "/tmp/work")
''', "Z/pristine")

# Fails on purpose, showing its random draws in the detail.
DRAW = bcb('''
import random, unittest
import numpy as np

class TestCases(unittest.TestCase):
    def test_draw(self):
        generator = np.random.default_rng()
        self.fail(f"draws {random.random()!r} {np.random.random()!r} {generator.random()!r}")
''', "Z/draw")


@needs_namespaces
def test_consecutive_runs_in_one_zygote_do_not_see_each_others_changes():
    stats: dict = {}
    jobs = [(CHANGE_EVERYTHING, ""), (SEE_NOTHING, ""), (CHANGE_EVERYTHING, ""),
            (SEE_NOTHING, "")]
    results = run_functional(jobs, limits=FAST, workers=1, zygote=True, zygote_stats=stats)
    assert [r.status for r in results] == ["pass"] * 4, [r.detail for r in results]
    assert stats["started"] == 1 and stats["fallback"] is None  # one zygote served all four
    # the libraries were in the zygote before the runs changed them
    assert {"numpy", "pandas", "matplotlib.pyplot", "json"} <= set(stats["preloaded"])


@needs_namespaces
def test_every_run_draws_fresh_random_numbers():
    stats: dict = {}
    results = run_functional([(DRAW, "")] * 3, limits=FAST, workers=1, zygote=True,
                             zygote_stats=stats)
    pattern = re.compile(r"AssertionError: draws (\S+) (\S+) (\S+)")
    draws = [pattern.search(r.detail).groups() for r in results]
    assert stats["started"] == 1
    for which in range(3):  # Python's random, numpy's global state, a new numpy Generator
        values = [draw[which] for draw in draws]
        assert len(set(values)) == 3, values


def descendants_named(name: str) -> list[int]:
    """Our descendants (not us) whose command line mentions ``name``."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if name.encode() in cmdline and int(entry) != me and descends_from(int(entry), me):
            found.append(int(entry))
    return found


SLOW_PASS = Task(task_id="Z/slow", entry_point="f", test_format="humaneval",
                 tests="def check(candidate):\n    assert candidate() == 1\n")
SLOW_CODE = "import time\ndef f():\n    time.sleep(1.5)\n    return 1\n"


@needs_namespaces
def test_a_zygote_lost_mid_run_is_replaced_and_the_run_retried_once():
    plan = resolve_isolation()
    with ZygotePool(plan) as pool:
        results: list = []
        runner = threading.Thread(target=lambda: results.extend(run_functional(
            [(SLOW_PASS, SLOW_CODE)], limits=FAST, workers=1, pool=pool)))
        runner.start()
        deadline = time.monotonic() + 30
        while not (zygotes := descendants_named("child/zygote.py")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert zygotes, "no zygote started"
        time.sleep(0.5)  # the run is sleeping in its child now
        for pid in zygotes:  # the python zygote and its unshare: killed from outside
            os.kill(pid, signal.SIGKILL)
        runner.join(60)
        assert [r.status for r in results] == ["pass"], results
        assert (pool.stats.lost, pool.stats.retried, pool.stats.started) == (1, 1, 2)


@needs_namespaces
def test_a_zygote_is_replaced_after_its_run_budget():
    good = (SLOW_PASS, "def f():\n    return 1\n")
    with ZygotePool(resolve_isolation(), max_runs=2) as pool:
        results = run_functional([good] * 5, limits=FAST, workers=1, pool=pool)
        assert [r.status for r in results] == ["pass"] * 5
        assert (pool.stats.started, pool.stats.replaced) == (3, 2)
    assert descendants_named("child/zygote.py") == []  # closing the pool ended them


@needs_namespaces
def test_a_zygote_that_cannot_start_falls_back_to_fresh_processes_loudly():
    plan = resolve_isolation()
    broken = dataclasses.replace(plan, exposed=(*plan.exposed, "/nonexistent-prefjudge-path"))
    good = (SLOW_PASS, "def f():\n    return 1\n")
    with ZygotePool(broken) as pool, pytest.warns(RuntimeWarning,
                                                  match="SANDBOX ZYGOTE UNAVAILABLE"):
        (result,) = run_functional([good], limits=FAST, workers=1, pool=pool)
    assert "could not start" in pool.stats.fallback and pool.stats.started == 0
    # the fresh process, under the same broken plan, says why it could not run either
    assert result.status == "error" and "sandbox setup failed" in result.detail


def test_rlimits_mode_says_it_falls_back_to_fresh_processes():
    stats: dict = {}
    good = (SLOW_PASS, "def f():\n    return 1\n")
    results = run_functional([good, good], limits=FAST, workers=1, isolation="rlimits",
                             zygote=True, zygote_stats=stats)
    assert [r.status for r in results] == ["pass", "pass"]
    assert "rlimits" in stats["fallback"] and stats["started"] == 0


def test_preloads_come_from_the_benchmarks_files_only():
    task = Task(task_id="P/1", entry_point="task_func", test_format="bigcodebench",
                libs=["pandas"], prompt="import numpy as np\ndef task_func():\n    pass\n",
                canonical_solution="from matplotlib import pyplot as plt\n",
                tests="import unittest\nfrom scipy.stats import norm\nfrom . import local\n")
    entries = modules_to_preload([task, task], extra=["seaborn"])
    assert entries == sorted({"pandas", "numpy", "matplotlib", "matplotlib:pyplot", "unittest",
                              "scipy.stats", "scipy.stats:norm", "seaborn"})
    assert imports_of("this is not python") == set()
    # the model's code is never an input: a job's code cannot add a preload
    stats: dict = {}
    run_functional([(SLOW_PASS, "import antigravity\ndef f():\n    return 1\n")], limits=FAST,
                   workers=1, zygote=True, zygote_stats=stats)
    assert not any("antigravity" in entry for entry in stats["preloaded"])


# --- the same outcomes as fresh processes, on real benchmark solutions ------------------------

# Seeded samples sized for the suite (each task runs four times: right and wrong, zygote and
# fresh); PREFJUDGE_ZYGOTE_FULL=1 compares every task.
BENCHMARKS = {
    "humaneval": ("humaneval/HumanEval.jsonl.gz", 30),
    "humanevalplus": ("evalplus/HumanEvalPlus-v0.1.10.jsonl.gz", 12),
    "mbppplus": ("evalplus/MbppPlus-v0.2.0.jsonl.gz", 15),
    "bigcodebench": ("bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz", 10),
}
# Slow by design (sleeps, long computations): left out of the sample, not of the full run.
BIGCODEBENCH_SLOW = {f"BigCodeBench/{n}" for n in (195, 461, 1103, 1104, 324)}


def mutate(task: Task) -> str:
    """A wrong solution: the reference with its last return value replaced by None."""
    code = task.canonical_solution or ""
    lines = code.rstrip().splitlines()
    for index in range(len(lines) - 1, -1, -1):
        stripped = lines[index].lstrip()
        if stripped.startswith("return "):
            lines[index] = lines[index][: len(lines[index]) - len(stripped)] + "return None"
            break
    return "\n".join(lines) + "\n"


@needs_namespaces
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_zygote_outcomes_equal_fresh_process_outcomes(shared_data, name):
    path, sample = BENCHMARKS[name]
    tasks = list(load_tasks(shared_data / "benchmarks" / path).values())
    if name == "bigcodebench":
        tasks = [t for t in tasks if not missing_libraries(t) and in_sample_libraries(t)]
        if not FULL:
            tasks = [t for t in tasks if t.task_id not in BIGCODEBENCH_SLOW]
    if not FULL:
        tasks = random.Random(0).sample(tasks, min(sample, len(tasks)))
    jobs = [(t, t.canonical_solution or "") for t in tasks] + [(t, mutate(t)) for t in tasks]
    zygote = run_functional(jobs, zygote=True)
    fresh = run_functional(jobs, zygote=False)
    differences = [
        (task.task_id, z.status, f.status, z.detail[:200], f.detail[:200])
        for (task, _), z, f in zip(jobs, zygote, fresh, strict=True)
        if (z.status, z.detail) != (f.status, f.detail)
    ]
    assert differences == []
    assert sum(r.status == "pass" for r in zygote[: len(tasks)]) >= 0.9 * len(tasks)
