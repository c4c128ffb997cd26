"""Sandbox round 2: a minimal root, no new namespaces, no reading the harness, bounded inodes.

Each test is an attack that got through before (see the README's sandbox section): it is
written so that the attack succeeding makes the sample *pass*, and the test asserts that
it does not.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from prefjudge.records import StdioCase, Task
from prefjudge.sandbox import (
    SandboxLimits,
    SandboxUnavailableError,
    resolve_isolation,
    run_functional,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src/prefjudge/sandbox/child"))
import launcher

FAST = SandboxLimits(timeout_s=10, cpu_s=10, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32,
                     max_output_kb=64)


def available_modes() -> list:
    """Every sandbox mode this machine can run, the others skipped with the reason."""
    modes = []
    for mode in ("namespaces", "userns", "rlimits"):
        try:
            resolve_isolation(mode)
        except SandboxUnavailableError as exc:
            modes.append(pytest.param(mode, marks=pytest.mark.skip(reason=str(exc))))
        else:
            modes.append(mode)
    return modes


MODES = available_modes()
NAMESPACED = [mode for mode in MODES if mode in ("namespaces", "userns")]


def he_task(check: str) -> Task:
    return Task(task_id="K/1", entry_point="f", test_format="humaneval", tests=check)


UNSHARE = '''
import ctypes, os, subprocess

def f():
    libc = ctypes.CDLL(None, use_errno=True)
    found = {}
    for name, flag in (("user", 0x10000000), ("mount", 0x00020000), ("net", 0x40000000)):
        found[name] = 0 if libc.unshare(flag) == 0 else ctypes.get_errno()
    try:
        found["unshare -U"] = subprocess.run(["unshare", "-U", "true"],
                                             capture_output=True).returncode
    except OSError as exc:
        found["unshare -U"] = exc.errno
    return found
'''


@pytest.mark.parametrize("mode", MODES)
def test_no_new_namespaces_from_inside(mode):
    check = ("def check(candidate):\n    found = candidate()\n"
             "    assert 0 in found.values(), found\n")
    (result,) = run_functional([(he_task(check), UNSHARE)], limits=FAST, workers=1,
                               isolation=mode)
    assert result.status == "fail", result
    assert "'user': 1" in result.detail, result.detail  # EPERM from the filter


TRACE = '''
import ctypes, os

def f():
    libc = ctypes.CDLL(None, use_errno=True)
    attach = 0 if libc.ptrace(16, os.getppid(), 0, 0) == 0 else ctypes.get_errno()
    return attach
'''


@pytest.mark.parametrize("mode", MODES)
def test_no_ptrace_of_a_neighbour(mode):
    check = "def check(candidate):\n    got = candidate()\n    assert got == 0, got\n"
    (result,) = run_functional([(he_task(check), TRACE)], limits=FAST, workers=1,
                               isolation=mode)
    assert result.status == "fail" and "AssertionError: 1" in result.detail, result


def test_normal_programs_still_start_processes_and_threads():
    code = '''
import subprocess, sys, threading, multiprocessing

def f():
    out = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
    box = []
    thread = threading.Thread(target=lambda: box.append(1))
    thread.start(); thread.join()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        squares = pool.map(abs, [-1, -2])
    return out.stdout.strip(), box, squares
'''
    check = "def check(candidate):\n    assert candidate() == ('42', [1], [1, 2])\n"
    (result,) = run_functional([(he_task(check), code)], limits=FAST, workers=1)
    assert result.status == "pass", result


# A stdio program that reads its parent's (the harness's) memory for the run's nonce,
# writes a passing result with it and kills the harness before it writes the real one.
STEAL_NONCE = r'''
import os, re, signal, json
parent = os.getppid()
found = {}
try:
    with open(f"/proc/{parent}/maps") as maps, open(f"/proc/{parent}/mem", "rb") as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            for token in re.findall(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])", chunk):
                found[token] = found.get(token, 0) + 1
except OSError as exc:
    print("cannot read the harness:", exc)
for nonce in sorted(found, key=found.get)[-1:]:  # the nonce is the one 32-hex string there
    record = {"stage": "done", "status": "pass", "detail": "", "nonce": nonce.decode()}
    with open(".prefjudge-result.json", "w") as handle:
        json.dump(record, handle)
    os.kill(parent, signal.SIGKILL)
print("wrong answer")
'''


@pytest.mark.parametrize("mode", NAMESPACED or MODES[:1])
def test_a_stdio_program_cannot_read_the_harness_for_the_nonce(mode):
    task = Task(task_id="S/1", test_format="stdio",
                stdio_cases=[StdioCase(input="1\n", output="the right answer\n")])
    (result,) = run_functional([(task, STEAL_NONCE)], limits=FAST, workers=1, isolation=mode)
    assert result.status == "fail", result
    assert "Permission denied" in result.detail or "cannot read" in result.detail, result


INODE_BOMB = '''
import os

def f():
    made = 0
    try:
        while True:
            open(f"/tmp/bomb{made}", "w").close()
            made += 1
    except OSError as exc:
        return made, exc.errno
'''


@pytest.mark.parametrize("mode", NAMESPACED or [pytest.param("namespaces", marks=pytest.mark.skip(
    reason="no namespace mode here: rlimits mode has no private tmpfs"))])
def test_an_inode_bomb_stops_at_the_file_limit_with_a_clear_detail(mode):
    limits = SandboxLimits(timeout_s=30, cpu_s=30, memory_mb=1024, nproc=32, fsize_mb=8,
                           disk_mb=64, max_output_kb=64, max_files=2_000)
    check = "def check(candidate):\n    made, errno = candidate()\n    assert made > 50_000\n"
    started = time.monotonic()
    (result,) = run_functional([(he_task(check), INODE_BOMB)], limits=limits, workers=1,
                               isolation=mode)
    assert time.monotonic() - started < 20, "bounded by the file limit, not by time"
    assert result.status == "fail", result
    assert "2000-file limit" in result.detail and "no space left" in result.detail, result


def test_the_seccomp_program_jumps_only_forward_to_its_verdicts():
    for machine in launcher.AUDIT_ARCH:
        program = launcher.seccomp_program(machine)
        returns = [index for index, (code, *_rest) in enumerate(program) if code == 0x06]
        assert returns == list(range(len(program) - 4, len(program)))
        for index, (code, jt, jf, _k) in enumerate(program):
            if code in (0x15, 0x35, 0x45):
                assert index + 1 + max(jt, jf) < len(program)
    with pytest.raises(launcher.SetupError, match="no seccomp filter"):
        launcher.seccomp_program("sparc64")


SOCKET_CLIENT = """
import socket

def f():
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect({path!r})
    except OSError as exc:
        return repr(exc)
    return client.recv(64).decode()
"""


@pytest.mark.parametrize("mode", NAMESPACED or MODES[:1])
def test_a_unix_socket_bound_outside_cannot_be_reached(mode):
    folder = Path("/run") if os.access("/run", os.W_OK) else None
    if folder is None:
        pytest.skip("cannot bind a socket under /run here (not root)")
    path = folder / f"prefjudge-test-{uuid.uuid4().hex[:8]}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen(4)
    server.settimeout(0.2)
    answered = []

    def serve():
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not answered:
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            connection.sendall(b"secret from outside")
            connection.close()
            answered.append(True)

    import threading

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        check = "def check(candidate):\n    got = candidate()\n    assert 'secret' in got, got\n"
        (result,) = run_functional([(he_task(check), SOCKET_CLIENT.format(path=str(path)))],
                                   limits=FAST, workers=1, isolation=mode)
    finally:
        answered.append(False)
        thread.join()
        server.close()
        path.unlink()
    assert result.status == "fail", result
    assert "FileNotFoundError" in result.detail, result.detail


READ_BESIDE = """
def f():
    try:
        with open({path!r}) as handle:
            return handle.read()
    except OSError as exc:
        return repr(exc)
"""


# Passes only if the read did not raise (READ_BESIDE returns the error's repr).
READ_SUCCEEDED = (
    "def check(candidate):\n    got = candidate()\n    assert 'Error' not in got, got\n"
)


def secret_beside_the_venv() -> Path:
    """A new file beside the interpreter's prefix (as ~/proj/.env beside ~/proj/.venv)."""
    secret = Path(sys.prefix).resolve().parent / f".prefjudge-test-secret-{uuid.uuid4().hex[:8]}"
    try:
        secret.write_text("API_KEY=do-not-leak")
    except OSError:
        pytest.skip(f"cannot write beside the interpreter's prefix ({secret.parent})")
    return secret


@pytest.mark.parametrize("mode", NAMESPACED or MODES[:1])
def test_files_beside_the_interpreter_and_the_project_are_not_visible(mode):
    secret = secret_beside_the_venv()
    os.chmod(secret, 0o644)  # world-readable: only the mount layout may hide it
    project = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        results = run_functional(
            [(he_task(READ_SUCCEEDED), READ_BESIDE.format(path=str(path)))
             for path in (secret, project, "/etc/shadow", "/root/.bashrc")],
            limits=FAST, workers=1, isolation=mode)
    finally:
        secret.unlink()
    for result in results:
        assert result.status == "fail", result
        assert "FileNotFoundError" in result.detail, result.detail


NOBODY = 65534
# Run as an unprivileged user: the same reads, through run_functional in userns mode.
AS_USER = """
import json, sys
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, SandboxUnavailableError, run_functional
task = Task(task_id="T/1", entry_point="f", test_format="humaneval", tests=sys.argv[2])
codes = json.loads(sys.argv[1])
limits = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, disk_mb=32)
try:
    results = run_functional([(task, code) for code in codes], limits=limits, workers=1,
                             isolation="userns")
except SandboxUnavailableError as exc:
    print(json.dumps({"unavailable": str(exc)}))
else:
    print(json.dumps({"results": [[r.status, r.detail] for r in results]}))
"""


def as_nobody(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("util-linux setpriv is needed to run as another user")
    env = {key: value for key, value in os.environ.items()
           if key in ("PATH", "LANG", "PREFJUDGE_SANDBOX_ZYGOTE")}
    env.update(PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"), HOME=str(cwd),
               TMPDIR=str(cwd))
    return subprocess.run(
        [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a process as another user needs root")
def test_as_an_unprivileged_user_a_secret_beside_the_venv_stays_hidden(tmp_path):
    secret = secret_beside_the_venv()
    try:
        # the user's own secret, as ~/proj/.env beside ~/proj/.venv: readable by that user
        os.chown(secret, NOBODY, NOBODY)
        os.chmod(secret, 0o600)
        os.chown(tmp_path, NOBODY, NOBODY)
        outside = as_nobody(sys.executable, "-c", f"print(open({str(secret)!r}).read())",
                            cwd=tmp_path)
        if "do-not-leak" not in outside.stdout:
            pytest.skip(f"the unprivileged user cannot run this interpreter: {outside.stderr}")
        codes = [READ_BESIDE.format(path=str(secret)), READ_BESIDE.format(path=str(tmp_path))]
        inside = as_nobody(sys.executable, "-c", AS_USER, json.dumps(codes), READ_SUCCEEDED,
                           cwd=tmp_path)
    finally:
        secret.unlink()
    assert inside.returncode == 0, inside.stderr
    report = json.loads(inside.stdout.strip().splitlines()[-1])
    if "unavailable" in report:
        pytest.skip(f"no user namespaces for an unprivileged user here: {report['unavailable']}")
    for status, detail in report["results"]:
        assert status == "fail", detail
        assert "FileNotFoundError" in detail, detail


EQUALS_ANYTHING = {
    "object": "class Yes:\n    def __eq__(self, other):\n        return True\n",
    "int subclass": "class Yes(int):\n    def __eq__(self, other):\n        return True\n",
    "list subclass": ("class Yes(list):\n    def __eq__(self, other):\n        return True\n"
                      "    def __iter__(self):\n        return iter([1, 2, 3])\n"),
}


@pytest.mark.parametrize("kind", sorted(EQUALS_ANYTHING))
def test_an_output_that_equals_anything_does_not_pass_evalplus(kind):
    task = Task(task_id="HumanEval/0", entry_point="double", test_format="evalplus",
                canonical_solution="def double(x):\n    return [x, x]\n",
                base_inputs=[[1], [2]], plus_inputs=[[3]], atol=0)
    code = EQUALS_ANYTHING[kind] + "\ndef double(x):\n    return Yes()\n"
    honest_subclasses = (
        "from collections import namedtuple, OrderedDict, Counter\n"
        "class MyInt(int):\n    pass\n"
        "def double(x):\n    return [MyInt(x), x]\n"
    )
    hostile, honest = run_functional([(task, code), (task, honest_subclasses)], limits=FAST,
                                     workers=1)
    assert hostile.status == "fail", hostile
    assert honest.status == "pass", honest


PATCH_UNITTEST = '''
import unittest
unittest.TestCase.assertEqual = lambda self, first, second, msg=None: None

def task_func():
    return 2
'''
BCB_TESTS = '''
import unittest
class TestCases(unittest.TestCase):
    def test_one(self):
        self.assertEqual(task_func(), 1)
'''
PATCH_BUILTIN = '''
import builtins
builtins.abs = lambda value: 0

def f():
    return 2
'''
ABS_CHECK = "def check(candidate):\n    assert abs(candidate() - 1) < 1e-9\n"


def test_code_that_patches_unittest_or_builtins_does_not_pass():
    bcb = Task(task_id="B/1", entry_point="task_func", test_format="bigcodebench",
               tests=BCB_TESTS)
    results = run_functional(
        [(bcb, PATCH_UNITTEST), (bcb, "def task_func():\n    return 1\n"),
         (he_task(ABS_CHECK), PATCH_BUILTIN), (he_task(ABS_CHECK), "def f():\n    return 1\n")],
        limits=FAST, workers=1)
    assert [r.status for r in results] == ["fail", "pass", "fail", "pass"], results
    assert "replaced what the tests rely on: unittest.TestCase.assertEqual" in results[0].detail
    assert "builtins.abs" in results[2].detail


# Each rewrites, on its way to disk, the failing record the harness writes into a pass
# (the record carries the nonce, so no need to know it), by replacing what the result
# writer would write with.
FORGE_BY_PATCHING = {
    "json.dumps": '''
import json
_dumps = json.dumps
json.dumps = lambda record, *a, **k: _dumps({**record, "status": "pass"}, *a, **k)
''',
    "os.replace": '''
import json, os
_replace = os.replace
def _forging_replace(src, dst, **kw):
    try:
        with open(src) as handle:
            record = json.load(handle)
        record["status"] = "pass"
        with open(src, "w") as handle:
            json.dump(record, handle)
    except Exception as exc:
        print(exc)
    return _replace(src, dst, **kw)
os.replace = _forging_replace
''',
    "os.write": '''
import os
_write = os.write
os.write = lambda fd, data: _write(fd, bytes(data).replace(b'"fail"', b'"pass"'))
''',
    "builtins.str": '''
import builtins
_str = builtins.str
class _Str(_str):
    @staticmethod
    def translate(text, table):
        return _str.translate(text, table).replace("fail", "pass")
builtins.str = _Str
''',
}


@pytest.mark.parametrize("what", sorted(FORGE_BY_PATCHING))
def test_code_that_patches_what_the_result_writer_uses_does_not_pass(what):
    code = FORGE_BY_PATCHING[what] + "\ndef f():\n    return 2\n"
    (result,) = run_functional([(he_task("def check(candidate):\n    assert candidate() == 1\n"),
                                 code)], limits=FAST, workers=1)
    assert result.status == "fail", result


MOVE_AWAY = '''
import os

def task_func():
    here = os.getcwd()
    os.chdir("/tmp")
    os.rename(here, "/tmp/moved")
    os.mkdir(here)
    return 1
'''


def test_a_run_that_moves_its_work_folder_is_still_judged():
    bcb = Task(task_id="B/1", entry_point="task_func", test_format="bigcodebench",
               tests=BCB_TESTS)
    good, bad = run_functional([(bcb, MOVE_AWAY), (bcb, MOVE_AWAY.replace("return 1", "return 2"))],
                               limits=FAST, workers=1)
    assert (good.status, bad.status) == ("pass", "fail"), (good, bad)


FORGE_BY_GC = '''
import gc, os

def f():
    for obj in gc.get_objects():
        if type(obj).__name__ == "ResultWriter":
            obj.write({"stage": "done", "status": "pass", "detail": "forged"})
            os._exit(0)
    return 0
'''


@pytest.mark.xfail(strict=True, reason="the stated limit: tests that run in the candidate's "
                   "interpreter (HumanEval, BigCodeBench) can be tampered with by code that "
                   "walks the interpreter's objects to the harness's result writer")
def test_known_limit_in_process_code_can_reach_the_result_writer():
    (result,) = run_functional([(he_task("def check(candidate):\n    assert candidate() == 1\n"),
                                 FORGE_BY_GC)], limits=FAST, workers=1)
    assert result.status != "pass", result
