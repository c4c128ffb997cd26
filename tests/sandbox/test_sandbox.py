"""The sandbox: test formats, hostile code, isolation modes, and real benchmark data."""

from __future__ import annotations

import os
import random
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from pj_samples import in_sample_libraries

from prefjudge.records import StdioCase, Task
from prefjudge.sandbox import (
    SandboxLimits,
    SandboxUnavailableError,
    isolation_report,
    resolve_isolation,
    run_functional,
)
from prefjudge.sandbox.isolation import sandbox_uid_range
from prefjudge.scoring.tasks import load_tasks, missing_libraries

ROOT = Path(__file__).resolve().parents[2]
FAST = SandboxLimits(
    timeout_s=4, cpu_s=8, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32, max_output_kb=64
)
MODE = resolve_isolation().mode
NAMESPACED = MODE != "rlimits"
needs_namespaces = pytest.mark.skipif(not NAMESPACED, reason=f"sandbox mode here is {MODE}")

CHECK_RETURNS_ONE = "def check(candidate):\n    assert candidate() == 1\n"
GOOD = "def f():\n    return 1\n"


def he_task(check: str = CHECK_RETURNS_ONE, task_id: str = "T/1") -> Task:
    return Task(task_id=task_id, entry_point="f", test_format="humaneval", tests=check)


def bcb_task(tests: str) -> Task:
    return Task(task_id="B/1", entry_point="task_func", test_format="bigcodebench", tests=tests)


def run_then_good(code, task=None, limits=FAST, mode=None, good=None):
    """Run hostile ``code``, then a good sample: the run must go on and the good one pass."""
    task = task or he_task()
    good = good or (GOOD if task.test_format == "humaneval" else BCB_GOOD)
    hostile, after = run_functional(
        [(task, code), (task, good)], limits=limits, workers=1, isolation=mode
    )
    assert after.status == "pass", after
    return hostile


def processes_with(token: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(f"{entry}: {cmdline.decode(errors='replace')}")
    return found


def sandbox_uid_processes() -> list[str]:
    """Processes running under the sandbox uids of this test process (not other sessions')."""
    uids = sandbox_uid_range()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid in uids:
                    found.append(entry)
            except OSError:
                continue
    return found


BCB_TESTS = """import unittest
class TestCases(unittest.TestCase):
    def test_one(self):
        self.assertEqual(task_func(), 1)
    def test_two(self):
        self.assertEqual(task_func() + 1, 2)
"""
BCB_GOOD = "def task_func():\n    return 1\n"


# --- test formats -------------------------------------------------------------------------


def test_humaneval_pass_fail_and_missing_entry_point():
    task = he_task()
    results = run_functional(
        [(task, GOOD), (task, "def f():\n    return 2\n"), (task, "def g():\n    return 1\n")],
        limits=FAST,
    )
    assert [r.status for r in results] == ["pass", "fail", "fail"]
    assert "assert candidate() == 1" in results[1].detail
    assert "no function 'f'" in results[2].detail


def test_syntax_error_and_a_missing_module_the_task_does_not_declare_fail():
    task = he_task()
    syntax, missing, wrong_name = run_functional(
        [
            (task, "def f(:\n    return 1\n"),
            (task, "import surely_not_installed_xyz\ndef f():\n    return 1\n"),
            (task, "from json import no_such_name\ndef f():\n    return 1\n"),
        ],
        limits=FAST,
    )
    assert syntax.status == "fail" and "does not compile" in syntax.detail
    # the code's own import (issue 43): a fail, not an error pass@1 would leave out
    assert missing.status == "fail" and "surely_not_installed_xyz" in missing.detail
    assert wrong_name.status == "fail"  # an installed module without that name: the code's fault


def test_bigcodebench_unittest_counts_failures():
    task = bcb_task(BCB_TESTS)
    good, bad, none = run_functional(
        [
            (task, BCB_GOOD),
            (task, "def task_func():\n    return 0\n"),
            (bcb_task("x = 1\n"), BCB_GOOD),
        ],
        limits=FAST,
    )
    assert good.status == "pass" and "2 tests passed" in good.detail
    assert bad.status == "fail" and "2 of 2 tests failed" in bad.detail
    assert none.status == "error" and "TestCases" in none.detail


def test_stdio_compares_stripped_lines_and_numbers():
    task = Task(
        task_id="S/1",
        test_format="stdio",
        stdio_cases=[
            StdioCase(input="2 3\n", output="5\n"),
            StdioCase(input="1 1\n", output="2.0\n"),
        ],
    )
    add = "a, b = map(int, input().split())\nprint(f'  {a + b}  ')\n"
    add_float = "a, b = map(int, input().split())\nprint(float(a + b))\n"
    wrong = "print(0)\n"
    slow = "import time\ntime.sleep(60)\n"
    results = run_functional(
        [(task, add), (task, add_float), (task, wrong), (task, slow)], limits=FAST
    )
    assert [r.status for r in results] == ["pass", "pass", "fail", "timeout"]
    assert "case #0: wrong answer" in results[2].detail


def test_evalplus_float_tolerance_tuples_and_reference_failures():
    task = Task(
        task_id="Mbpp/2",
        entry_point="similar",
        test_format="evalplus",
        canonical_solution="def similar(a, b):\n    return tuple(sorted(set(a) & set(b)))\n",
        base_inputs=[[[1, 2, 3], [2, 3, 4]]],
        plus_inputs=[[[5], [5, 6]]],
        atol=0,
        metadata={"evalplus_dataset": "humaneval"},
    )
    same = "def similar(a, b):\n    return tuple(x for x in sorted(a) if x in b)\n"
    as_list = "def similar(a, b):\n    return sorted(set(a) & set(b))\n"
    floats = Task(
        task_id="H/1",
        entry_point="half",
        test_format="evalplus",
        canonical_solution="def half(x):\n    return x / 2\n",
        base_inputs=[[1.0]],
        plus_inputs=[[3.3], [1e-9]],
        atol=1e-6,
    )
    close = "def half(x):\n    return x * 0.5 + 1e-9\n"
    far = "def half(x):\n    return x * 0.5 + 1e-3\n"
    broken_ref = floats.model_copy(update={"task_id": "H/2", "canonical_solution": "1/0\n"})
    results = run_functional(
        [(task, same), (task, as_list), (floats, close), (floats, far), (broken_ref, close)],
        limits=FAST,
    )
    assert [r.status for r in results] == ["pass", "fail", "pass", "fail", "error"]
    assert "reference solution" in results[4].detail, results[4]


def test_evalplus_mbpp_inputs_are_rebuilt_as_tuples():
    # Mbpp/2 takes tuples: EvalPlus stores them as JSON lists and rebuilds them.
    task = Task(
        task_id="Mbpp/2",
        entry_point="kind",
        test_format="evalplus",
        canonical_solution="def kind(a, b):\n    return type(a).__name__\n",
        base_inputs=[[[1, 2], [3]]],
        plus_inputs=[],
        metadata={"evalplus_dataset": "mbpp"},
    )
    (result,) = run_functional([(task, "def kind(a, b):\n    return 'tuple'\n")], limits=FAST)
    assert result.status == "pass", result


def test_tasks_without_tests_are_errors():
    results = run_functional(
        [(Task(task_id="N/1"), GOOD), (Task(task_id="N/2", test_format="humaneval"), GOOD)],
        limits=FAST,
    )
    assert [r.status for r in results] == ["error", "error"]


def test_runs_in_parallel_and_reports_progress():
    task = he_task()
    slow = "import time\ntime.sleep(1)\ndef f():\n    return 1\n"
    seen = []
    start = time.monotonic()
    results = run_functional(
        [(task, slow)] * 4, limits=FAST, workers=4, on_result=lambda i, r: seen.append(i)
    )
    elapsed = time.monotonic() - start
    assert all(r.status == "pass" for r in results)
    assert sorted(seen) == [0, 1, 2, 3]
    assert elapsed < 3.5, f"4 one-second runs on 4 workers took {elapsed:.1f} s"


def test_detail_is_bounded():
    task = he_task("def check(candidate):\n    assert candidate() == 1, 'x' * 100000\n")
    (result,) = run_functional([(task, "def f():\n    return 2\n")], limits=FAST)
    assert result.status == "fail" and len(result.detail) <= 2000


# --- hostile code ---------------------------------------------------------------------------


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "os._exit(0)", "raise SystemExit(0)"])
def test_exit_zero_inside_a_unittest_test_is_not_a_pass(exit_call):
    code = f"import os, sys\ndef task_func():\n    {exit_call}\n"
    result = run_then_good(code, bcb_task(BCB_TESTS))
    assert result.status == "fail", result


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "os._exit(0)"])
def test_exit_zero_in_check_or_at_import_is_not_a_pass(exit_call):
    in_call = run_then_good(f"import os, sys\ndef f():\n    {exit_call}\n")
    at_import = run_then_good(f"import os, sys\n{exit_call}\ndef f():\n    return 1\n")
    assert in_call.status == "fail" and at_import.status == "fail"
    assert "before" in in_call.detail


def test_forged_result_file_and_printed_pass_are_not_a_pass():
    code = (
        "import json, os\n"
        "def f():\n"
        "    rec = {'stage': 'done', 'status': 'pass', 'detail': 'ok', 'nonce': 'guess'}\n"
        "    open('.prefjudge-result.json', 'w').write(json.dumps(rec))\n"
        "    print('PASS', flush=True)\n"
        "    os._exit(0)\n"
    )
    assert run_then_good(code).status == "fail"


@pytest.mark.parametrize("victim", ["os.getppid()", "1"])
def test_killing_its_parent_is_not_a_pass(victim):
    code = f"import os, signal\ndef f():\n    os.kill({victim}, signal.SIGKILL)\n    return 1\n"
    result = run_then_good(code)
    assert result.status == "fail", result


@pytest.mark.parametrize("how", ["print", "os.write"])
def test_flooding_stdout_is_stopped_and_not_a_pass(how):
    writer = "print('x' * 1024)" if how == "print" else "os.write(1, b'x' * 1024)"
    code = (
        f"import os\ndef f():\n    for _ in range(1024 * 1024):\n        {writer}\n    return 1\n"
    )
    start = time.monotonic()
    result = run_then_good(code, limits=SandboxLimits(**{**FAST.__dict__, "timeout_s": 30}))
    assert result.status == "fail" and "output limit" in result.detail, result
    assert time.monotonic() - start < 25


@pytest.mark.parametrize("body", ["while True:\n        pass", "import time\n    time.sleep(600)"])
def test_hanging_code_times_out(body):
    start = time.monotonic()
    result = run_then_good(f"def f():\n    {body}\n")
    assert result.status == "timeout", result
    assert time.monotonic() - start < FAST.timeout_s + 5


def test_cpu_time_limit_is_a_timeout():
    limits = SandboxLimits(**{**FAST.__dict__, "timeout_s": 20, "cpu_s": 1})
    result = run_then_good("def f():\n    while True:\n        pass\n", limits=limits)
    assert result.status == "timeout" and "CPU" in result.detail, result


def test_detached_daemon_does_not_outlive_its_run(tmp_path):
    token = f"pjdaemon{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "daemon-was-here"
    os.chmod(tmp_path, 0o777)
    result = run_then_good(daemon_code(token, marker))
    assert result.status == "pass"  # the code itself is fine; its daemon must not survive
    assert processes_with(token) == []
    time.sleep(2.5)
    assert not marker.exists()
    assert processes_with(token) == []


@pytest.mark.skipif(
    not (MODE == "namespaces" or (MODE == "userns" and os.geteuid() != 0)),
    reason="RLIMIT_NPROC binds only a per-run uid or a non-root user namespace",
)
def test_fork_bomb_is_bounded_and_cleaned_up():
    code = "import os\ndef f():\n    while True:\n        os.fork()\n"
    start = time.monotonic()
    result = run_then_good(code)
    assert result.status != "pass", result
    assert time.monotonic() - start < FAST.timeout_s + 10
    if MODE == "namespaces":
        assert sandbox_uid_processes() == []


@pytest.mark.parametrize(
    "code",
    [
        "def f():\n    x = bytearray(8 * 1024 ** 3)\n    return 1\n",
        "def f():\n    keep = []\n    while True:\n        keep.append(bytearray(50 << 20))\n",
    ],
)
def test_memory_hog_fails(code):
    result = run_then_good(code)
    # Normally a MemoryError at the address-space limit; on a machine short of real memory
    # the kernel may kill it first, or filling pages may outlast the wall-clock limit.
    assert result.status in ("fail", "timeout"), result
    if result.status == "fail":
        assert "MemoryError" in result.detail or "killed" in result.detail, result


def test_huge_file_is_refused():
    code = (
        "def f():\n"
        "    with open('big.bin', 'wb') as out:\n"
        "        for _ in range(1024):\n"
        "            out.write(b'x' * 1024 * 1024)\n"
        "    return 1\n"
    )
    result = run_then_good(code)
    assert result.status == "fail" and "File too large" in result.detail, result


@needs_namespaces
@pytest.mark.parametrize("target", ["project", "home", "etc", "shared"])
def test_cannot_write_outside_its_work_dir(target, tmp_path):
    name = f"pwned-{uuid.uuid4().hex[:8]}"
    path = {
        "project": ROOT / name,
        "home": Path(os.path.expanduser("~")) / name,
        "etc": Path("/etc") / name,
        "shared": tmp_path / name,  # a world-writable host dir
    }[target]
    os.chmod(tmp_path, 0o777)
    code = f"def f():\n    open({str(path)!r}, 'w').write('x')\n    return 1\n"
    try:
        result = run_then_good(code)
        assert result.status == "fail", result
        assert not path.exists()
    finally:
        if path.exists():
            path.unlink()


@needs_namespaces
def test_tmp_writes_stay_private():
    name = f"/tmp/pwned-{uuid.uuid4().hex[:8]}"
    code = f"def f():\n    open({name!r}, 'w').write('x')\n    return 1\n"
    assert run_then_good(code).status == "pass"  # its own /tmp is a private tmpfs
    assert not os.path.exists(name)


@pytest.fixture
def loopback_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@needs_namespaces
def test_no_network_even_to_loopback(loopback_server):
    port, accepted = loopback_server
    code = (
        "import socket\n"
        "def f():\n"
        f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    s.sendall(b'leak')\n"
        "    return 1\n"
    )
    result = run_then_good(code)
    assert result.status == "fail", result
    assert accepted == []


@needs_namespaces
@pytest.mark.parametrize("target", ["('1.1.1.1', 53)", "('example.com', 80)"])
def test_no_network_outside(target):
    code = f"import socket\ndef f():\n    socket.create_connection({target}, timeout=2)\n"
    result = run_then_good(code)
    assert result.status == "fail", result


def test_parent_environment_is_not_visible(monkeypatch):
    secret = f"s3cret-{uuid.uuid4().hex}"
    monkeypatch.setenv("PREFJUDGE_TEST_SECRET", secret)
    check = f"def check(candidate):\n    assert candidate() == {secret!r}\n"
    env_read = "import os\ndef f():\n    return os.environ.get('PREFJUDGE_TEST_SECRET')\n"
    proc_scan = (
        "import glob\n"
        "def f():\n"
        "    for path in glob.glob('/proc/*/environ'):\n"
        "        try:\n"
        "            data = open(path, 'rb').read()\n"
        "        except OSError:\n"
        "            continue\n"
        "        for item in data.split(b'\\0'):\n"
        "            if item.startswith(b'PREFJUDGE_TEST_SECRET='):\n"
        "                return item.split(b'=', 1)[1].decode()\n"
    )
    good = f"def f():\n    return {secret!r}\n"
    assert run_then_good(env_read, he_task(check), good=good).status == "fail"
    if NAMESPACED:  # without a pid namespace, root can read other processes' environ
        assert run_then_good(proc_scan, he_task(check), good=good).status == "fail"


# --- isolation modes --------------------------------------------------------------------------


def test_isolation_report_says_what_is_enforced():
    report = isolation_report()
    assert report["mode"] == MODE
    assert report["enforced"] and "wall-clock timeout" in report["enforced"]
    assert (report["warning"] is None) == report["isolated"]


def daemon_code(token: str, marker: Path) -> str:
    return (
        "import os\n"
        "def f():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            os.execv('/bin/sh', ['/bin/sh', '-c', 'sleep 2; echo {token} > {marker}'])\n"
        "        os._exit(0)\n"
        "    return 1\n"
    )


def test_rlimits_fallback_warns_loudly_and_still_contains_basics(monkeypatch, tmp_path):
    report = isolation_report("rlimits")
    assert report["isolated"] is False
    assert "SANDBOX ISOLATION" in report["warning"] and "network" in report["warning"]
    monkeypatch.setenv("PREFJUDGE_TEST_SECRET", "leak")
    token = f"pjdaemon{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "daemon-was-here"
    os.chmod(tmp_path, 0o777)
    task = he_task()
    jobs = [
        (task, "import os\ndef f():\n    os._exit(0)\n"),
        (task, "def f():\n    while True:\n        pass\n"),
        (task, "import os\ndef f():\n    return int('PREFJUDGE_TEST_SECRET' not in os.environ)\n"),
        (task, "import os, signal\ndef f():\n    os.kill(os.getppid(), signal.SIGKILL)\n"),
        (task, daemon_code(token, marker)),
        (task, GOOD),
    ]
    results = run_functional(jobs, limits=FAST, isolation="rlimits")
    assert [r.status for r in results] == ["fail", "timeout", "pass", "fail", "pass", "pass"]
    assert processes_with(token) == []
    time.sleep(2.5)
    assert not marker.exists() and processes_with(token) == []


def test_userns_mode_isolates_filesystem_and_network():
    try:
        resolve_isolation("userns")
    except SandboxUnavailableError as exc:
        pytest.skip(f"user namespaces unavailable: {exc}")
    name = ROOT / f"pwned-{uuid.uuid4().hex[:8]}"
    write = f"def f():\n    open({str(name)!r}, 'w').write('x')\n    return 1\n"
    net = "import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
    assert run_then_good(write, mode="userns").status == "fail"
    assert not name.exists()
    assert run_then_good(net, mode="userns").status == "fail"


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        resolve_isolation("docker")


# --- real benchmark data ----------------------------------------------------------------------

SAMPLE = 40


def seeded_sample(tasks, size, seed=2024):
    tasks = sorted(tasks, key=lambda t: t.task_id)
    random.Random(seed).shuffle(tasks)
    return tasks[:size]


def mutate_return_none(task: Task) -> str:
    """Keep the signature and docstring; replace the body with ``return None``."""
    if task.test_format == "bigcodebench":
        return task.metadata["complete_prompt"] + "    return None\n"
    import ast

    tree = ast.parse(task.canonical_solution)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == task.entry_point:
            node.body = [ast.Return(value=ast.Constant(value=None))]
    return ast.unparse(tree)


def assert_all_pass(tasks, results, allowed=frozenset()):
    bad = {
        t.task_id: f"{r.status}: {r.detail[:300]}"
        for t, r in zip(tasks, results, strict=True)
        if r.status != "pass" and t.task_id not in allowed
    }
    assert not bad, bad


@pytest.mark.slow
@pytest.mark.one_run_mode
@pytest.mark.parametrize(
    "name",
    [
        "humaneval/HumanEval.jsonl.gz",
        "evalplus/HumanEvalPlus-v0.1.10.jsonl.gz",
        "evalplus/MbppPlus-v0.2.0.jsonl.gz",
    ],
)
def test_canonical_solutions_pass_and_mutants_fail(shared_data, name):
    tasks = seeded_sample(load_tasks(shared_data / "benchmarks" / name).values(), SAMPLE)
    jobs = [(t, t.canonical_solution) for t in tasks] + [(t, mutate_return_none(t)) for t in tasks]
    results = run_functional(jobs)
    assert_all_pass(tasks, results[:SAMPLE])
    mutants = zip(tasks, results[SAMPLE:], strict=True)
    mutants_passing = [t.task_id for t, r in mutants if r.status == "pass"]
    assert len(mutants_passing) <= 2, mutants_passing  # a few tasks do expect None


# Stdlib-only BigCodeBench tasks whose canonical solutions cannot pass in the sandbox by
# design: they need the internet (176, 314, 1005) or a loopback network (1038, 1040).
# 201 fails with today's numpy/pandas in or out of the sandbox. Two more are left out only
# for time: 195 takes ~45 s and 1104 needs more than the default 60 s (it sleeps 62 s).
# scripts/canonical_passrate.py runs them all.
BIGCODEBENCH_LEFT_OUT = {f"BigCodeBench/{n}" for n in (176, 314, 1005, 1038, 1040, 201, 195, 1104)}


def bigcodebench_runnable(shared_data):
    path = shared_data / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
    tasks = [t for t in load_tasks(path).values() if not missing_libraries(t)]
    return [t for t in tasks if t.task_id not in BIGCODEBENCH_LEFT_OUT]


def stdlib_only(task: Task) -> bool:
    return all(lib.split(".")[0] in sys.stdlib_module_names for lib in task.libs)


@pytest.mark.slow
@pytest.mark.one_run_mode
def test_bigcodebench_stdlib_canonical_solutions_pass_and_mutants_fail(shared_data):
    tasks = seeded_sample([t for t in bigcodebench_runnable(shared_data) if stdlib_only(t)], SAMPLE)
    jobs = [(t, t.canonical_solution) for t in tasks] + [(t, mutate_return_none(t)) for t in tasks]
    results = run_functional(jobs)
    assert_all_pass(tasks, results[:SAMPLE])
    mutants = zip(tasks, results[SAMPLE:], strict=True)
    assert [t.task_id for t, r in mutants if r.status == "pass"] == []


@pytest.mark.slow
@pytest.mark.one_run_mode
def test_bigcodebench_third_party_canonical_solutions_mostly_pass(shared_data):
    # BigCodeBench v0.1.0 targets pandas 2.0 / numpy 1.x; newer versions break a few
    # reference solutions (e.g. DataFrame.applymap is gone), so expect most, not all.
    candidates = [t for t in bigcodebench_runnable(shared_data)
                  if not stdlib_only(t) and in_sample_libraries(t)]
    tasks = seeded_sample(candidates, SAMPLE // 2)
    jobs = [(t, t.canonical_solution) for t in tasks] + [(t, mutate_return_none(t)) for t in tasks]
    results = run_functional(jobs)
    canonical = results[: len(tasks)]
    passed = sum(r.status == "pass" for r in canonical)
    assert passed >= 0.8 * len(tasks), [
        (t.task_id, r.detail[-200:])
        for t, r in zip(tasks, canonical, strict=True)
        if r.status != "pass"
    ]
    assert not any(r.status == "error" and "sandbox" in r.detail for r in canonical)
    mutants = zip(tasks, results[len(tasks) :], strict=True)
    assert [t.task_id for t, r in mutants if r.status == "pass"] == []
