"""Sandbox round 3: nothing of a run outlives it, and measured runs cannot share a cache.

Every test here runs twice (``conftest.py``): with runs forked from zygotes and with a
fresh process per run. Each is an attack that got through in zygote mode before: a run
leaves something behind (a System V message, a shared-memory segment...) that a later run
of the same zygote finds, or holds memory outside its limits. The tests are written so that
the attack succeeding makes the sample *pass*, and assert that it does not.
"""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest

from prefjudge.judge.facts.efficiency import compare_efficiency
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, resolve_isolation, run_functional
from prefjudge.sandbox.zygote import ZygotePool
from prefjudge.scoring.tasks import load_tasks

FAST = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=8,
                     disk_mb=32, max_output_kb=64)
MODE = resolve_isolation().mode
needs_namespaces = pytest.mark.skipif(MODE == "rlimits", reason=f"sandbox mode here is {MODE}")

# Each probe looks for what an earlier run of the same code left; finding nothing, it leaves
# something itself. A run passes only when it found nothing: three runs in a row pass only
# if nothing of one run reaches the next.
COMMON = '''
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.mq_open.restype = ctypes.c_int
KEY = 0x706A0003
IPC_CREAT, IPC_NOWAIT = 0o1000, 0o4000

def gone(result):
    """True when the look-up found nothing (ENOENT); anything else is something found."""
    return result < 0 and ctypes.get_errno() in (errno.ENOENT, errno.ECONNREFUSED)

class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
'''

PROBES = {
    "sysv_message_queue": '''
def f():
    queue = libc.msgget(KEY, 0)
    if not gone(queue):
        message = Message()
        got = libc.msgrcv(queue, ctypes.byref(message), 64, 0, IPC_NOWAIT)
        return f"found an earlier run's queue (message: {message.mtext!r}, {got})"
    queue = libc.msgget(KEY, IPC_CREAT | 0o666)
    assert queue >= 0, ctypes.get_errno()
    message = Message(1, b"the answer is 42")
    assert libc.msgsnd(queue, ctypes.byref(message), 64, IPC_NOWAIT) == 0, ctypes.get_errno()
    return "clean"
''',
    "sysv_shared_memory": '''
def f():
    segment = libc.shmget(KEY, 1 << 20, 0)
    if not gone(segment):
        return "found an earlier run's shared-memory segment"
    segment = libc.shmget(KEY, 1 << 20, IPC_CREAT | 0o666)
    assert segment >= 0, ctypes.get_errno()
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 0x2A, 1 << 20)
    libc.shmdt(ctypes.c_void_p(address))
    return "clean"
''',
    "sysv_semaphore": '''
def f():
    if not gone(libc.semget(KEY, 1, 0)):
        return "found an earlier run's semaphore set"
    assert libc.semget(KEY, 1, IPC_CREAT | 0o666) >= 0, ctypes.get_errno()
    return "clean"
''',
    "posix_message_queue": '''
def f():
    if not gone(libc.mq_open(b"/pj-round3", os.O_RDONLY)):
        return "found an earlier run's POSIX message queue"
    created = libc.mq_open(b"/pj-round3", os.O_CREAT | os.O_RDWR, 0o666, None)
    assert created >= 0, ctypes.get_errno()
    return "clean"
''',
    "abstract_unix_socket": '''
def f():
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect("\\0pj-round3")
    except OSError:
        pass
    else:
        return "an earlier run's process still listens on an abstract socket"
    finally:
        probe.close()
    if os.fork() == 0:  # a daemon that outlives this run, unless the run's end kills it
        os.setsid()
        if os.fork() == 0:
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind("\\0pj-round3")
            server.listen()
            while True:
                server.accept()[0].close()
        os._exit(0)
    os.wait()
    return "clean"
''',
    "files_in_scratch_space": '''
def f():
    places = ("/tmp/pj-round3", "/var/tmp/pj-round3", "/dev/shm/pj-round3",
              os.path.expanduser("~/pj-round3"))
    for place in places:
        if os.path.exists(place):
            return f"found {place}"
    for place in places:
        with open(place, "w") as handle:
            handle.write("left behind")
    return "clean"
''',
}


def probe_task(name: str) -> Task:
    return Task(task_id=f"R3/{name}", entry_point="f", test_format="humaneval",
                tests='def check(candidate):\n    assert candidate() == "clean"\n')


@needs_namespaces
@pytest.mark.parametrize("channel", sorted(PROBES))
def test_nothing_a_run_leaves_reaches_the_next_run(channel, sandbox_runs):
    task, code = probe_task(channel), COMMON + PROBES[channel]
    stats: dict = {}
    results = run_functional([(task, code)] * 3, limits=FAST, workers=1, zygote_stats=stats)
    assert [r.status for r in results] == ["pass"] * 3, [r.detail for r in results]
    if sandbox_runs == "zygote":  # one zygote forked all three runs
        assert stats["started"] == 1 and stats["fallback"] is None, stats


OPEN_DESCRIPTORS = '''
import os

def f():
    found = {}
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        try:
            found[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass  # the descriptor os.listdir itself had open, closed since
    return found
'''


@needs_namespaces
def test_a_run_holds_only_its_own_descriptors(sandbox_runs):
    """Nothing of the zygote (its socket, log, libraries' files) is open in a forked run."""
    task = Task(task_id="R3/fds", entry_point="f", test_format="humaneval",
                tests="def check(candidate):\n    assert False, repr(candidate())\n")
    [result] = run_functional([(task, OPEN_DESCRIPTORS)], limits=FAST, workers=1)
    found = ast.literal_eval(result.detail.rsplit("AssertionError: ", 1)[1].strip())
    assert set(found) == {0, 1, 2, 3}, found
    assert found[0] == "/dev/null" and found[1] == found[2] and found[1].startswith("pipe:")
    assert found[3] == "/tmp/work", found  # the result writer's hold on the work folder


HOARD_SHARED_MEMORY = COMMON + '''
def f():
    """Fill 64 MiB segments, detaching each (so no address space holds it); MiB held."""
    held = 0
    for index in range(24):
        segment = libc.shmget(KEY + index, 64 << 20, IPC_CREAT | 0o600)
        if segment < 0:
            break
        address = libc.shmat(segment, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            break
        ctypes.memset(address, 0x2A, 64 << 20)
        libc.shmdt(ctypes.c_void_p(address))
        held += 64
    return held
'''


@needs_namespaces
def test_shared_memory_a_run_fills_stays_within_its_memory_limit(sandbox_runs):
    limits = SandboxLimits(timeout_s=30, cpu_s=30, memory_mb=256, nproc=32, fsize_mb=8,
                           disk_mb=32, max_output_kb=64)
    task = Task(task_id="R3/hoard", entry_point="f", test_format="humaneval",
                tests="def check(candidate):\n    held = candidate()\n"
                      "    assert held > 256, f'held {held} MiB'\n")
    [result] = run_functional([(task, HOARD_SHARED_MEMORY)], limits=limits, workers=1)
    assert result.status == "fail", result.detail
    assert "held 256 MiB" in result.detail, result.detail


# --- the efficiency evidence: no cache shared by the measured runs of one side ----------------

SHM_CACHE = '''
import builtins, ctypes, json, os

_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_SIZE = 1 << 20
if not hasattr(builtins, "_pj_run"):  # one token per run (rounds of a run share builtins)
    builtins._pj_run = os.urandom(8).hex()


def _segment():
    shmid = _libc.shmget(0x706A0247, _SIZE, 0o1666)
    address = _libc.shmat(shmid, None, 0) if shmid >= 0 else None
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    return (ctypes.c_char * _SIZE).from_address(address)


def _cache():
    segment = _segment()
    if segment is None or segment[0] != b"{":
        return segment, {}
    return segment, json.loads(segment.value.decode())


def lps(str1):
    """The answer an EARLIER run left in shared memory, or four times the work."""
    segment, cache = _cache()
    if cache.get("run") not in (None, builtins._pj_run) and str1 in cache["answers"]:
        return cache["answers"][str1]
    for _ in range(3):
        _lps(str1)
    answer = _lps(str1)
    if segment is not None:
        answers = cache.get("answers", {}) if cache.get("run") == builtins._pj_run else {}
        answers[str1] = answer
        text = json.dumps({"run": builtins._pj_run, "answers": answers}).encode()
        if len(text) < _SIZE:
            segment.value = text
    return answer
'''


@pytest.fixture(scope="module")
def mbpp_247(shared_data: Path) -> Task:
    path = shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz"
    return load_tasks(path)["Mbpp/247"]


def canonical(path: Path, task_id: str) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["task_id"] == task_id:
                return row["canonical_solution"]
    raise LookupError(task_id)


@needs_namespaces
@pytest.mark.shared_data
def test_a_cache_kept_between_measured_runs_does_not_make_more_work_look_cheaper(
        mbpp_247, shared_data, sandbox_runs):
    solution = canonical(shared_data / "benchmarks" / "evalplus" / "MbppPlus-v0.2.0.jsonl.gz",
                         "Mbpp/247")
    honest = solution
    cheat = solution.replace("def lps(", "def _lps(") + SHM_CACHE
    plan = resolve_isolation()
    limits = SandboxLimits(timeout_s=30.0, cpu_s=30)
    if sandbox_runs == "zygote":
        with ZygotePool(plan) as pool:
            decision = compare_efficiency(mbpp_247, honest, cheat, plan=plan, limits=limits,
                                          runner=pool.run)
            assert pool.stats.started >= 1 and pool.fallback is None
    else:
        decision = compare_efficiency(mbpp_247, honest, cheat, plan=plan, limits=limits)
    assert decision.outcome == "A", decision.fact
    assert decision.stats["net_s"]["B"] > 2 * decision.stats["net_s"]["A"], decision.stats
