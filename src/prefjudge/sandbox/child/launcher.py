"""Sandbox launcher: the first process of every sandbox run (standalone, stdlib only).

The parent starts it as ``python -I -S -B launcher.py RUN_DIR REPORT_FD``, in ``namespaces`` and
``userns`` modes as pid 1 of fresh pid, mount, network, IPC and UTS namespaces (created
by ``unshare``). It reads ``RUN_DIR/config.json`` and ``RUN_DIR/in/*``, then:

1. (namespace modes) makes every mount read-only, hides directories the sandbox must
   not see (re-exposing the interpreter's paths read-only), and mounts fresh,
   size-limited tmpfs on ``/tmp``, ``/var/tmp`` and ``/dev/shm``; the work dir is
   ``/tmp/work`` on that tmpfs;
2. forks the harness, which drops privileges (a per-run uid as root; no capabilities
   in a user namespace), sets rlimits and ``no_new_privs`` and execs the interpreter
   on ``harness.py`` with a stripped environment;
3. waits for it with a wall-clock deadline, then kills every process left (the whole
   pid namespace, or, in ``rlimits`` mode, every descendant it reaps as subreaper);
4. sends the outcome down the REPORT_FD pipe (never inherited by the harness) as one
   JSON object: exit status, whether it timed out, and the raw result file the
   harness left (read without following links, size-capped).

``RUN_DIR`` (config and input files) is only read: in namespace modes it becomes
read-only and hidden like the rest of the host's /tmp.

It never runs model-written code itself and never prints unless setup fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import resource
import signal
import stat
import sys
import time

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24

PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECBIT_NOROOT_AND_LOCK = 0x3
CAP_VERSION_3 = 0x20080522

PSEUDO_FILESYSTEMS = {
    "autofs",
    "binfmt_misc",
    "bpf",
    "cgroup",
    "cgroup2",
    "configfs",
    "debugfs",
    "devpts",
    "devtmpfs",
    "efivarfs",
    "fusectl",
    "hugetlbfs",
    "mqueue",
    "nsfs",
    "proc",
    "pstore",
    "rpc_pipefs",
    "securityfs",
    "sysfs",
    "tracefs",
}

NS_WORK_DIR = "/tmp/work"
NS_HARNESS_DIR = "/tmp/.prefjudge-harness"
RESULT_NAME = ".prefjudge-result.json"
RESULT_MAX_BYTES = 1 << 20
EXIT_SETUP_FAILED = 70
EXIT_EXEC_FAILED = 71

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]


class SetupError(Exception):
    """The sandbox could not be set up as configured."""


class _Deadline(BaseException):
    """Raised by the SIGALRM handler when the wall-clock limit is reached."""


def _encode(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    """Mount a filesystem (the mount system call), raising OSError on failure."""
    if _libc.mount(_encode(source), _encode(target), _encode(fstype), flags, _encode(data)):
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def prctl(option: int, arg: int = 0) -> int:
    """Call the prctl system call with one argument, raising OSError on failure."""
    res = _libc.prctl(option, arg, 0, 0, 0)
    if res == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")
    return res


def _mount_flags_of(path: str) -> int:
    """Per-mount flags to keep when remounting ``path`` (locked in user namespaces)."""
    f_flag = os.statvfs(path).f_flag
    flags = 0
    for st_flag, ms_flag in (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
        (os.ST_NOATIME, MS_NOATIME),
        (os.ST_NODIRATIME, MS_NODIRATIME),
        (os.ST_RELATIME, MS_RELATIME),
    ):
        if f_flag & st_flag:
            flags |= ms_flag
    if not f_flag & (os.ST_NOATIME | os.ST_RELATIME):
        flags |= MS_STRICTATIME
    return flags


def remount_readonly(path: str) -> None:
    """Make the mount at ``path`` read-only in this mount namespace."""
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _mount_flags_of(path))


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def list_mounts() -> list[tuple[str, str]]:
    """Return ``(mount point, filesystem type)`` for every mount visible here."""
    mounts = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            sep = fields.index("-")
            mounts.append((_unescape(fields[4]), fields[sep + 1]))
    return mounts


def make_everything_readonly() -> list[str]:
    """Remount every mount read-only; return the ones that could not be (tolerated)."""
    tolerated = []
    for point, fstype in list_mounts():
        try:
            remount_readonly(point)
        except OSError as exc:
            try:
                already_ro = bool(os.statvfs(point).f_flag & os.ST_RDONLY)
            except OSError:
                already_ro = True  # hidden under another mount: unreachable anyway
            if not (already_ro or fstype in PSEUDO_FILESYSTEMS):
                raise SetupError(f"cannot make {point} read-only: {exc}") from exc
            tolerated.append(f"{point} ({fstype}): {exc.strerror}")
    return tolerated


def open_exposures(masks: list[str], exposed: list[str]) -> dict[str, dict[str, int]]:
    """Open O_PATH handles to what each mask must re-expose, before anything is hidden."""
    plan: dict[str, dict[str, int]] = {}
    for mask in masks:
        children: dict[str, int] = {}
        for path in exposed:
            if path.startswith(mask.rstrip("/") + "/"):
                name = path[len(mask.rstrip("/")) + 1 :].split("/", 1)[0]
                if name not in children:
                    with contextlib.suppress(OSError):
                        children[name] = os.open(os.path.join(mask, name), os.O_PATH)
        plan[mask] = children
    return plan


def apply_masks(plan: dict[str, dict[str, int]]) -> None:
    """Hide each mask dir under an empty read-only tmpfs, binding back what it exposes."""
    for mask in sorted(plan, key=lambda p: p.count("/")):
        mount("tmpfs", mask, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755")
        bind_back(mask, plan[mask])
        mount(None, mask, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def bind_back(directory: str, children: dict[str, int]) -> None:
    """Bind each O_PATH handle back, read-only, as ``directory/<name>`` on a fresh mount."""
    for name, handle in children.items():
        target = os.path.join(directory, name)
        if stat.S_ISDIR(os.fstat(handle).st_mode):
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        mount(f"/proc/self/fd/{handle}", target, None, MS_BIND | MS_REC)
        remount_readonly(target)
        os.close(handle)


def mount_scratch(disk_mb: int, exposed: list[str]) -> None:
    """Fresh, size-limited tmpfs on /tmp, /var/tmp and /dev/shm.

    An interpreter that lives under one of them (a venv in /tmp, as CI clones may have)
    is bound back read-only on the fresh tmpfs, so the sandbox can still start it.
    """
    scratch = [path for path in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(path)]
    keep = open_exposures(scratch, exposed)
    for path in scratch:
        size = disk_mb if path == "/tmp" else min(disk_mb, 64)
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size}m,mode=1777")
        bind_back(path, keep[path])


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


def set_limits(limits: dict[str, int], shared_uid: bool) -> None:
    """Apply the run's rlimits to this (harness) process.

    With ``shared_uid`` (rlimits mode: the code runs as the invoking user), the process
    limit is added on top of what that user already runs, since RLIMIT_NPROC counts
    every process of the user.
    """
    mib = 1024 * 1024
    nproc = limits["nproc"] + (count_tasks_of(os.getuid()) if shared_uid else 0)
    pairs = {
        resource.RLIMIT_CPU: (limits["cpu_s"], limits["cpu_s"] + 1),
        resource.RLIMIT_AS: (limits["memory_mb"] * mib,) * 2,
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


def exec_harness(config: dict, work_dir: str, harness_dir: str, env: dict[str, str]) -> None:
    """In the forked child: drop privileges, limit, and exec the harness. Never returns."""
    try:
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
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        set_limits(config["limits"], shared_uid=mode == "rlimits" and not config["drop_uid"])
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


def read_capped(directory: str, name: str, cap: int) -> bytes | None:
    """Read a regular file the sandbox wrote, never following links, at most ``cap`` bytes."""
    try:
        fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        return handle.read(cap + 1)[:cap]


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
    if os.getpid() != 1:
        raise SetupError("the launcher is not the first process of a new pid namespace")
    plan = open_exposures(config["masks"], config["exposed"])
    plan.setdefault(os.path.realpath(run_dir), {})  # hide our inputs (the nonce) from the code
    notes = make_everything_readonly()
    apply_masks(plan)
    mount_scratch(config["limits"]["disk_mb"], config["exposed"])
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


def main() -> int:
    """Run one sandboxed harness as described in the module docstring."""
    run_dir, report_fd = sys.argv[1], int(sys.argv[2])
    os.set_inheritable(report_fd, False)
    with open(os.path.join(run_dir, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    outcome: dict = {
        "setup_error": None,
        "exit_code": None,
        "signal": None,
        "timed_out": False,
        "result": None,
        "notes": [],
    }
    try:
        work, harness_dir, env, outcome["notes"] = prepare(config, run_dir)
    except (OSError, SetupError, KeyError, ValueError) as exc:
        outcome["setup_error"] = str(exc)
        send_outcome(report_fd, outcome)
        return EXIT_SETUP_FAILED
    pid = os.fork()
    if pid == 0:
        exec_harness(config, work, harness_dir, env)
    status, outcome["timed_out"] = wait_for(pid, config["timeout_s"])
    kill_everything(in_pid_namespace=config["mode"] != "rlimits")
    if status is not None:
        if os.WIFSIGNALED(status):
            outcome["signal"] = os.WTERMSIG(status)
        else:
            outcome["exit_code"] = os.waitstatus_to_exitcode(status)
    raw = read_capped(work, RESULT_NAME, RESULT_MAX_BYTES)
    outcome["result"] = None if raw is None else raw.decode("utf-8", errors="replace")
    send_outcome(report_fd, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
