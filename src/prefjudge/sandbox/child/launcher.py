"""Sandbox launcher: the first process of every sandbox run (standalone, stdlib only).

The parent starts it as ``python -I -S -B launcher.py RUN_DIR REPORT_FD``, in ``namespaces`` and
``userns`` modes as pid 1 of fresh pid, mount, network, IPC and UTS namespaces (created
by ``unshare``). It reads ``RUN_DIR/config.json`` and ``RUN_DIR/in/*``, then:

1. (namespace modes) builds a minimal root filesystem and pivots into it, the way
   bubblewrap and nsjail do: a fresh tmpfs holding, read-only, the system directories
   (``/usr``, ``/bin``, ``/lib``...), the interpreter's prefixes and site-packages, a few
   files of ``/etc``, five devices in ``/dev`` and this pid namespace's ``/proc``; fresh
   tmpfs on ``/tmp``, ``/var/tmp`` and ``/dev/shm``, limited in size and in files. Nothing
   else of the host is visible (no home, project, ``/run`` sockets, or siblings of the
   interpreter's folders); the work dir is ``/tmp/work``;
2. forks the harness, which drops privileges (a per-run uid as root; no capabilities
   in a user namespace), dies with the launcher (parent-death signal), sets rlimits,
   ``no_new_privs`` and a seccomp filter (no namespaces, mounts, ptrace...) and execs
   the interpreter on ``harness.py`` with a stripped environment;
3. waits for it with a wall-clock deadline, then kills every process left (the whole
   pid namespace, or, in ``rlimits`` mode, every descendant it reaps as subreaper);
4. sends the outcome down the REPORT_FD pipe (never inherited by the harness) as one
   JSON object: exit status, whether it timed out, the CPU time the run's processes
   used (the kernel's count of its reaped children), and the raw result file the
   harness left (read without following links, size-capped).

``RUN_DIR`` (config and input files) is only read: in namespace modes it is left behind
with the rest of the host's tree when the launcher pivots into the new root.

It never runs model-written code itself and never prints unless setup fails.

Its system calls (``_pj_kernel.py``), the seccomp filter (``_pj_seccomp.py``) and the minimal
root (``_pj_root.py``) are modules of their own beside it, loaded by path (:func:`_sibling`)
and re-exported here.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import resource
import signal
import stat
import sys
import time
import types

NS_WORK_DIR = "/tmp/work"
NS_HARNESS_DIR = "/tmp/.prefjudge-harness"
RESULT_NAME = ".prefjudge-result.json"
RESULT_MAX_BYTES = 1 << 20
OUTPUTS_NAME = ".prefjudge-outputs.jsonl"  # what prefjudge compares outside (EvalPlus, stdio)
OUTPUTS_MAX_BYTES = 32 << 20
EXIT_SETUP_FAILED = 70
EXIT_EXEC_FAILED = 71


def _sibling(name: str) -> types.ModuleType:
    """Import ``name`` from this file's folder, once (``-I`` keeps it off ``sys.path``)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The system calls, the seccomp filter and the minimal root live in modules of their own,
# loaded here in this order (each later one, and the imports below, find the earlier ones in
# sys.modules); the names the zygote and the tests reach here are re-exported.
for _name in ("_pj_kernel", "_pj_seccomp", "_pj_root"):
    _sibling(_name)
del _name
from _pj_kernel import (  # noqa: E402
    CAP_VERSION_3,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    PR_SET_SECUREBITS,
    SECBIT_NOROOT_AND_LOCK,
    SetupError,
    _libc,
    prctl,
)
from _pj_root import enter_minimal_root  # noqa: E402
from _pj_root import limit_ipc as limit_ipc  # noqa: E402
from _pj_root import renew_scratch as renew_scratch  # noqa: E402
from _pj_seccomp import AUDIT_ARCH as AUDIT_ARCH  # noqa: E402
from _pj_seccomp import install_seccomp_filter  # noqa: E402
from _pj_seccomp import seccomp_program as seccomp_program  # noqa: E402


class _Deadline(BaseException):
    """Raised by the SIGALRM handler when the wall-clock limit is reached."""


def scratch_exhausted(path: str) -> list[str]:
    """Which of the scratch tmpfs's limits the run used up: ``files``, ``bytes`` (or none)."""
    try:
        info = os.statvfs(path)
    except OSError:
        return []
    full = []
    if info.f_files and info.f_ffree == 0:
        full.append("files")
    if info.f_blocks and info.f_bfree == 0:
        full.append("bytes")
    return full


def write_files(
    directory: str, files: dict[str, bytes], owner: tuple[int, int] | None, mode: int
) -> None:
    """Write ``files`` into ``directory`` (flat names only) with the given owner and mode."""
    for name, data in files.items():
        path = os.path.join(directory, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if owner is not None:
            os.chown(path, *owner)


def read_dir(path: str) -> dict[str, bytes]:
    """Read every regular file directly inside ``path``."""
    out = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full) and not name.startswith("__"):
            with open(full, "rb") as handle:
                out[name] = handle.read()
    return out


def drop_capabilities() -> None:
    """Drop every capability for good (user-namespace mode, where we stay uid 0)."""
    prctl(PR_SET_SECUREBITS, SECBIT_NOROOT_AND_LOCK)
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1:
            break
    with contextlib.suppress(OSError):
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _libc.capset(header, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")


def count_tasks_of(uid: int) -> int:
    """Number of threads (what RLIMIT_NPROC counts) the user ``uid`` runs now."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    total += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return total


def set_limits(limits: dict[str, int], shared_uid: bool, extra_memory: int = 0) -> None:
    """Apply the run's rlimits to this (harness) process.

    With ``shared_uid`` (rlimits mode: the code runs as the invoking user), the process
    limit is added on top of what that user already runs, since RLIMIT_NPROC counts
    every process of the user. ``extra_memory`` bytes are added to the address-space
    limit (see :func:`confine`).
    """
    mib = 1024 * 1024
    nproc = limits["nproc"] + (count_tasks_of(os.getuid()) if shared_uid else 0)
    pairs = {
        resource.RLIMIT_CPU: (limits["cpu_s"], limits["cpu_s"] + 1),
        resource.RLIMIT_AS: (limits["memory_mb"] * mib + extra_memory,) * 2,
        resource.RLIMIT_NPROC: (nproc, nproc),
        resource.RLIMIT_FSIZE: (limits["fsize_mb"] * mib,) * 2,
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_NOFILE: (limits["nofile"],) * 2,
    }
    for which, (soft, hard) in pairs.items():
        _, old_hard = resource.getrlimit(which)
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        resource.setrlimit(which, (soft, hard))


def confine(config: dict, work_dir: str, launcher: int, extra_memory: int = 0) -> None:
    """In a run's harness process: drop privileges, die with ``launcher``, limit, filter.

    Args:
        config: The run's configuration (mode, uid/gid, rlimits).
        work_dir: Where the harness runs.
        launcher: The pid of the run's supervisor (the parent to outlive never).
        extra_memory: Bytes added to the address-space limit (a zygote's child starts
            with the preloaded libraries already mapped; the limit is for the run's own).
    """
    os.chdir(work_dir)
    mode = config["mode"]
    if mode != "rlimits":
        os.setsid()
    if mode == "namespaces" or config["drop_uid"]:
        uid, gid = config["uid"], config["gid"]
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    elif mode == "userns":
        drop_capabilities()
    # Dies with the launcher (set after the uid change, which clears it): in rlimits
    # mode nothing else would end it when prefjudge and so the launcher are killed.
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != launcher:
        os._exit(EXIT_EXEC_FAILED)  # the launcher died before the line above
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    set_limits(config["limits"], shared_uid=mode == "rlimits" and not config["drop_uid"],
               extra_memory=extra_memory)
    install_seccomp_filter()


def exec_harness(
    config: dict, work_dir: str, harness_dir: str, env: dict[str, str], launcher: int
) -> None:
    """In the forked child: confine it, then exec the harness. Never returns.

    Args:
        config: The run's configuration.
        work_dir: Where the harness runs.
        harness_dir: Where the harness's files are.
        env: Its whole environment.
        launcher: The launcher's pid (the parent to outlive never).
    """
    try:
        confine(config, work_dir, launcher)
        python = config["python"]
        os.execve(python, [python, "-I", "-B", os.path.join(harness_dir, "harness.py")], env)
    except BaseException as exc:
        os.write(2, f"prefjudge sandbox: cannot start the harness: {exc!r}\n".encode())
    os._exit(EXIT_EXEC_FAILED)


def _child_pids(parent: int) -> list[int]:
    """Pids whose parent is ``parent`` (scanning /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            pids.append(int(entry))
    return pids


def _reap_all(block: bool) -> None:
    flags = 0 if block else os.WNOHANG
    while True:
        try:
            pid, _ = os.waitpid(-1, flags)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_everything(in_pid_namespace: bool) -> None:
    """Kill every process the run started (and reap them)."""
    if in_pid_namespace and os.getpid() == 1:
        # pid 1 of our own pid namespace: kill(-1) reaches exactly the namespace's processes.
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        _reap_all(block=True)
        return
    # rlimits mode: we are a child subreaper, so orphaned descendants become our children.
    me = os.getpid()
    quiet_rounds = 0
    for _ in range(500):
        victims = _child_pids(me)
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap_all(block=False)
        quiet_rounds = 0 if victims else quiet_rounds + 1
        if quiet_rounds >= 3:
            return
        time.sleep(0.01)


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every process of the run, as the kernel counted them.

    Read by the supervisor once every process of the run is reaped: the harness is its
    child, and what the harness started and left is reaped here too (pid 1 of the run's
    pid namespace, or the subreaper in rlimits mode), so the count covers the whole run,
    threads included. It is the kernel's count, out of reach of the code under test,
    which can replace its own timers but not this. A supervisor forked from a zygote
    starts from zero (counts are not inherited across fork).
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def read_capped(directory: int, name: str, cap: int) -> bytes | None:
    """Read a regular file the sandbox wrote, never following links, at most ``cap`` bytes.

    Args:
        directory: A descriptor of the folder (opened before the code ran, so that a
            folder the code renamed or replaced is still the one read).
        name: The file's name in it.
        cap: Most bytes read.
    """
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        return handle.read(cap + 1)[:cap]


def open_dir(path: str) -> int:
    """A descriptor of the folder ``path`` (not inherited by what the run execs)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def replaced(path: str, directory: int) -> bool:
    """Whether ``path`` no longer names the folder ``directory`` was opened on."""
    try:
        now, then = os.stat(path, follow_symlinks=False), os.fstat(directory)
    except OSError:
        return True
    return (now.st_dev, now.st_ino) != (then.st_dev, then.st_ino)


def wait_for(pid: int, timeout_s: float) -> tuple[int | None, bool]:
    """Reap children until ``pid`` exits or the deadline passes: (wait status, timed out)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise _Deadline

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(timeout_s, 0.01))
    try:
        while True:
            reaped, status = os.waitpid(-1, 0)
            if reaped == pid:
                return status, False
    except _Deadline:
        return None, True
    except ChildProcessError:
        return None, False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def prepare(config: dict, run_dir: str) -> tuple[str, str, dict[str, str], list[str]]:
    """Set up the filesystem view; return (work dir, harness dir, env, notes)."""
    mode = config["mode"]
    inputs = read_dir(os.path.join(run_dir, "in"))
    harness_files = read_dir(config["harness_src"])
    env = dict(config["env"])
    notes: list[str] = []
    if mode == "rlimits":
        work, harness, tmp = (os.path.join(run_dir, name) for name in ("work", "harness", "tmp"))
        owner = (config["uid"], config["gid"]) if config["drop_uid"] else None
        os.mkdir(harness, 0o755)
        write_files(harness, harness_files, None, 0o644)
        for path in (work, tmp):
            os.mkdir(path, 0o700)
            if owner is not None:
                os.chown(path, *owner)
        if owner is not None:
            os.chmod(run_dir, 0o711)  # the sandbox uid may cross it, not list it
        write_files(work, inputs, owner, 0o600)
        env.update(HOME=work, TMPDIR=tmp)
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        return work, harness, env, notes
    notes = enter_minimal_root(config, run_dir)
    os.mkdir(NS_HARNESS_DIR, 0o755)
    write_files(NS_HARNESS_DIR, harness_files, None, 0o644)
    os.mkdir(NS_WORK_DIR, 0o700)
    owner = (config["uid"], config["gid"]) if mode == "namespaces" else None
    if owner is not None:
        os.chown(NS_WORK_DIR, *owner)
    write_files(NS_WORK_DIR, inputs, owner, 0o600)
    env.update(HOME=NS_WORK_DIR, TMPDIR="/tmp")
    return NS_WORK_DIR, NS_HARNESS_DIR, env, notes


def send_outcome(report_fd: int, outcome: dict) -> None:
    """Send the outcome down the report pipe as one JSON object."""
    with os.fdopen(report_fd, "wb") as handle:
        handle.write(json.dumps(outcome).encode())


def new_outcome() -> dict:
    """The report of a run before anything happened."""
    return {
        "setup_error": None,
        "exit_code": None,
        "signal": None,
        "timed_out": False,
        "result": None,
        "notes": [],
    }


def supervise(
    pid: int, config: dict, work: str, directory: int, report_fd: int, outcome: dict
) -> None:
    """Wait for the harness ``pid``, end the run, and send the outcome on ``report_fd``.

    The result is read from the work folder the harness was started in, through
    ``directory``, a descriptor of it opened before the harness was forked
    (:func:`open_dir`), whatever the code did to the path since; that it moved or
    replaced the folder is reported too.
    """
    status, outcome["timed_out"] = wait_for(pid, config["timeout_s"])
    kill_everything(in_pid_namespace=config["mode"] != "rlimits")
    outcome["cpu_s"] = children_cpu_s()
    if status is not None:
        if os.WIFSIGNALED(status):
            outcome["signal"] = os.WTERMSIG(status)
        else:
            outcome["exit_code"] = os.waitstatus_to_exitcode(status)
    raw = read_capped(directory, RESULT_NAME, RESULT_MAX_BYTES)
    outcome["result"] = None if raw is None else raw.decode("utf-8", errors="replace")
    outputs = read_capped(directory, OUTPUTS_NAME, OUTPUTS_MAX_BYTES)
    outcome["outputs"] = None if outputs is None else outputs.decode("utf-8", errors="replace")
    if outputs is None:
        with contextlib.suppress(OSError):
            size = os.stat(OUTPUTS_NAME, dir_fd=directory, follow_symlinks=False).st_size
            outcome["outputs_over_cap"] = size > OUTPUTS_MAX_BYTES
    outcome["work_replaced"] = replaced(work, directory)
    if config["mode"] != "rlimits":
        outcome["scratch_full"] = scratch_exhausted(work)
    os.close(directory)
    send_outcome(report_fd, outcome)


def main() -> int:
    """Run one sandboxed harness as described in the module docstring."""
    run_dir, report_fd = sys.argv[1], int(sys.argv[2])
    os.set_inheritable(report_fd, False)
    # Not dumpable: in userns mode the code runs under the launcher's own uid, and must not
    # read its memory (the nonce, the inputs) through /proc/1/mem or attach to it.
    prctl(PR_SET_DUMPABLE, 0)
    with open(os.path.join(run_dir, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    outcome = new_outcome()
    try:
        work, harness_dir, env, outcome["notes"] = prepare(config, run_dir)
    except (OSError, SetupError, KeyError, ValueError) as exc:
        outcome["setup_error"] = str(exc)
        send_outcome(report_fd, outcome)
        return EXIT_SETUP_FAILED
    launcher = os.getpid()
    directory = open_dir(work)
    pid = os.fork()
    if pid == 0:
        exec_harness(config, work, harness_dir, env, launcher)
    supervise(pid, config, work, directory, report_fd, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
