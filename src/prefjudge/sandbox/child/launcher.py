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
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
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

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "passwd", "group", "hosts", "host.conf", "nsswitch.conf", "resolv.conf", "gai.conf",
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ssl",
    "ca-certificates", "ca-certificates.conf", "pki", "mime.types", "protocols", "services",
    "os-release", "debian_version", "lsb-release", "fonts", "alternatives", "locale.alias",
    "locale.gen", "shells", "matplotlibrc",
)
DEVICES = ("null", "zero", "full", "random", "urandom")
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
NS_WORK_DIR = "/tmp/work"
NS_HARNESS_DIR = "/tmp/.prefjudge-harness"
SCRATCH_STAGING = "/.prefjudge-scratch"  # where a zygote's run builds its fresh /tmp
SCRATCH_DIRS = ("/tmp", "/var/tmp")
RESULT_NAME = ".prefjudge-result.json"
RESULT_MAX_BYTES = 1 << 20
OUTPUTS_NAME = ".prefjudge-outputs.jsonl"  # what prefjudge compares outside (EvalPlus, stdio)
OUTPUTS_MAX_BYTES = 32 << 20
SMALL_SCRATCH_FILES = 1_000  # most files on /var/tmp and /dev/shm
RESERVED_FILES = 64  # the work and harness dirs, the harness's files, the inputs
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


# --- the seccomp filter of the harness and everything it starts ------------------------------
#
# Namespaces, mounts, tracing and a few kernel interfaces the tests never need are refused
# with EPERM: no new user (or other) namespace from inside, no mount, no ptrace or
# process_vm_readv of a neighbour, no bpf, perf events, userfaultfd, keyrings or modules.
# clone is allowed without namespace flags (threads, fork); clone3, whose flags the filter
# cannot read, answers ENOSYS, on which the C library falls back to clone. A system call
# of another ABI than the launcher's (32-bit int 0x80, x32) kills the process.

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38
# namespace flags of clone (CLONE_NEWTIME is left out: clone's low byte is a signal number)
CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 \
    | 0x20000000 | 0x40000000
REFUSED_SYSCALLS = {  # name: (x86_64, aarch64)
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "ptrace": (101, 117),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "bpf": (321, 280),
    "perf_event_open": (298, 241), "userfaultfd": (323, 282), "open_tree": (428, 428),
    "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "kexec_load": (246, 104), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106),
}
CLONE = (56, 220)
CLONE3 = (435, 435)

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter as ``(code, jt, jf, k)`` instructions for this machine's ABI.

    Raises:
        SetupError: On an architecture the filter does not know.
    """
    if machine not in AUDIT_ARCH:
        raise SetupError(f"no seccomp filter for architecture {machine!r}")
    column = 0 if machine == "x86_64" else 1
    refused = sorted({numbers[column] for numbers in REFUSED_SYSCALLS.values()})
    # Labels are resolved below: each jump is (label if true, label if false).
    program: list[tuple] = [
        (_LD_W_ABS, None, None, 4),  # seccomp_data.arch
        (_JEQ, "next", "kill", AUDIT_ARCH[machine]),
        (_LD_W_ABS, None, None, 0),  # seccomp_data.nr
    ]
    if machine == "x86_64":
        program.append((_JGE, "eperm", "next", X32_SYSCALL_BIT))
    program += [(_JEQ, "eperm", "next", number) for number in refused]
    program += [
        (_JEQ, "enosys", "next", CLONE3[column]),
        (_JEQ, "next", "allow", CLONE[column]),
        (_LD_W_ABS, None, None, 16),  # low word of args[0]: clone's flags
        (_JSET, "eperm", "allow", CLONE_NAMESPACE_FLAGS),
    ]
    targets = {"allow": SECCOMP_RET_ALLOW, "eperm": SECCOMP_RET_ERRNO | EPERM,
               "enosys": SECCOMP_RET_ERRNO | ENOSYS, "kill": SECCOMP_RET_KILL_PROCESS}
    where = {name: len(program) + index for index, name in enumerate(targets)}
    resolved = []
    for index, (code, jt, jf, k) in enumerate(program):
        if code in (_JEQ, _JGE, _JSET):
            jt, jf = (0 if label == "next" else where[label] - index - 1 for label in (jt, jf))
        resolved.append((code, jt or 0, jf or 0, k))
    return resolved + [(_RET, 0, 0, value) for value in targets.values()]


def install_seccomp_filter() -> None:
    """Install the filter on this process (inherited by everything it execs and forks).

    Needs ``no_new_privs`` first when unprivileged.
    """
    import platform

    instructions = seccomp_program(platform.machine())
    array = (_SockFilter * len(instructions))(*[_SockFilter(*ins) for ins in instructions])
    program = _SockFprog(len(instructions), array)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0):
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {os.strerror(err)}")


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


def bind_readonly(source: str, target: str) -> None:
    """Bind ``source`` (and the mounts under it) at ``target``, read-only.

    ``target`` is made first: a directory, or an empty file for a file. Symbolic links are
    copied as links, so that they resolve inside the new root as outside it.
    """
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(source, target, None, MS_BIND | MS_REC)
    remount_readonly(target)


def _outermost(paths: list[str]) -> list[str]:
    """``paths`` without those inside another one of them."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == other or path.startswith(other.rstrip("/") + "/") for other in kept):
            kept.append(path)
    return kept


def scratch_tops(exposed: list[str]) -> list[str]:
    """The top folders of the interpreter's paths that lie under /tmp or /var/tmp.

    An interpreter there (a CI clone's venv) needs its parent folders made on the
    scratch tmpfs, and bound onto themselves read-only: no place for the code to write
    (in userns mode the code would own them).
    """
    tops = set()
    for path in _outermost(exposed):
        for scratch in SCRATCH_DIRS:
            if path.startswith(scratch + "/"):
                tops.add(scratch + "/" + path[len(scratch) + 1:].split("/")[0])
    return sorted(tops)


def _scratch_options(path: str, limits: dict) -> str:
    disk_mb, max_files = limits["disk_mb"], limits["max_files"]
    if path == "/tmp":
        return f"size={disk_mb}m,nr_inodes={max_files + RESERVED_FILES},mode=1777"
    return f"size={min(disk_mb, 64)}m,nr_inodes={SMALL_SCRATCH_FILES},mode=1777"


def build_root(root: str, config: dict) -> None:
    """Fill the new root: system dirs, the interpreter, a minimal /etc and /dev, /proc.

    Only these are visible to the code, read-only; no home, project, socket folder
    (/run), or sibling of the interpreter's folders. Scratch space (/tmp, /var/tmp,
    /dev/shm) is fresh tmpfs, limited in size and in files.
    """
    limits = config["limits"]
    for path in SCRATCH_DIRS:
        target = root + path
        os.makedirs(target, 0o755, exist_ok=True)
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, _scratch_options(path, limits))
    for path in SYSTEM_DIRS:
        if os.path.lexists(path):
            bind_readonly(path, root + path)
    for path in _outermost(config["exposed"]):
        if not any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS):
            bind_readonly(path, root + path)
    for top in scratch_tops(config["exposed"]):
        mount(root + top, root + top, None, MS_BIND | MS_REC)
        remount_readonly(root + top)
    os.mkdir(root + SCRATCH_STAGING, 0o755)
    os.mkdir(root + "/etc", 0o755)
    for name in ETC_ENTRIES:
        if os.path.lexists(f"/etc/{name}"):
            bind_readonly(f"/etc/{name}", f"{root}/etc/{name}")
    dev = root + "/dev"
    os.mkdir(dev, 0o755)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
    for name in DEVICES:
        os.close(os.open(f"{dev}/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
        mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    os.mkdir(dev + "/shm", 0o1777)
    mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV,
          _scratch_options("/dev/shm", limits))
    # Read-only from here: in userns mode the code is uid 0 of the namespace and would own
    # what is left writable (/dev/shm, /tmp and /var/tmp are meant to be).
    mount(None, dev, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    os.mkdir(root + "/proc", 0o555)
    mount("/proc", root + "/proc", None, MS_BIND | MS_REC)  # this pid namespace's /proc
    remount_readonly(root + "/proc")


def renew_scratch(config: dict) -> None:
    """Give a zygote's run its own scratch space and /proc, inside the zygote's root.

    Called by the run's supervisor, pid 1 of a fresh pid namespace, in a fresh mount
    namespace copied from the zygote's (so nothing mounted here reaches the zygote or
    another run). /tmp and /var/tmp are new tmpfs, built at :data:`SCRATCH_STAGING` with
    the interpreter's folders bound back in (:func:`scratch_tops`) and then moved over the
    zygote's; /dev/shm is a new tmpfs; /proc is this pid namespace's (read-only, once the
    run's System V IPC is bounded through it: :func:`limit_ipc`).
    """
    limits = config["limits"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    tops = scratch_tops(config["exposed"])
    for path in SCRATCH_DIRS:
        mount("tmpfs", SCRATCH_STAGING, "tmpfs", MS_NOSUID | MS_NODEV,
              _scratch_options(path, limits))
        for top in tops:
            if top.startswith(path + "/"):
                target = SCRATCH_STAGING + top[len(path):]
                os.mkdir(target, 0o755)
                mount(top, target, None, MS_BIND | MS_REC)
                remount_readonly(target)
        mount(SCRATCH_STAGING, path, None, MS_MOVE)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
          _scratch_options("/dev/shm", limits))
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    limit_ipc(limits)  # what it could not set, the zygote's own start already said
    remount_readonly("/proc")


def ipc_limits(limits: dict) -> dict[str, str]:
    """The System V IPC limits of a run's IPC namespace, as ``/proc/sys`` file: value.

    The kernel's defaults are near unlimited (shared memory up to 16 EiB in 4,096
    segments, 32,000 message queues of 16 KiB, a billion semaphores), and IPC objects
    are counted in no rlimit: a segment filled and detached holds its memory outside
    ``RLIMIT_AS``. Here all shared memory together holds at most the run's memory limit,
    in at most 64 segments; message queues hold at most 32 x 16 KiB; semaphores take the
    kernel's old defaults (at most 32,000). POSIX message queues are already bounded by
    ``RLIMIT_MSGQUEUE`` (800 KiB per user).
    """
    page = os.sysconf("SC_PAGE_SIZE")
    shm_bytes = int(limits["memory_mb"]) * 1024 * 1024
    return {
        "kernel/shmmax": str(shm_bytes),
        "kernel/shmall": str(max(1, shm_bytes // page)),
        "kernel/shmmni": "64",
        "kernel/msgmni": "32",
        "kernel/msgmnb": "16384",
        "kernel/msgmax": "8192",
        "kernel/sem": "250 32000 32 128",
    }


def limit_ipc(limits: dict, proc: str = "/proc") -> list[str]:
    """Bound System V IPC in this process's IPC namespace (:func:`ipc_limits`).

    Needs a writable ``proc`` and a fresh IPC namespace of the caller's own (the limits
    are the namespace's, so a run sets those of its own only). Root can always write
    them; in a user namespace, older kernels may refuse (tolerated: said in a note).

    Returns:
        The limits that could not be set, with why.
    """
    refused = []
    for name, value in ipc_limits(limits).items():
        try:
            with open(f"{proc}/sys/{name}", "w", encoding="ascii") as handle:
                handle.write(value)
        except OSError as exc:
            refused.append(f"System V IPC limit {name} not set: {exc.strerror}")
    return refused


def pivot_into(root: str) -> None:
    """Make ``root`` the root of this mount namespace and drop every other mount."""
    import platform

    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise SetupError(f"no pivot_root number for architecture {platform.machine()!r}")
    os.chdir(root)
    os.mkdir(".old-root", 0o700)
    if _libc.syscall(number, b".", b".old-root") != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"pivot_root: {os.strerror(err)}")
    if _libc.umount2(b"/.old-root", MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount2 of the old root: {os.strerror(err)}")
    os.rmdir("/.old-root")
    os.chdir("/")


def enter_minimal_root(config: dict, run_dir: str) -> list[str]:
    """Build the minimal root in ``run_dir/root`` and pivot into it (namespace modes).

    System V IPC of the (fresh) IPC namespace is bounded first (:func:`limit_ipc`), while
    ``/proc`` is still writable.

    Returns:
        The IPC limits that could not be set and the mounts that could not be made
        read-only, tolerated.

    Raises:
        SetupError: Not pid 1 of a new pid namespace, or a mount that must be read-only
            cannot be made so.
        OSError: A mount failed.
    """
    if os.getpid() != 1:
        raise SetupError("the launcher is not the first process of a new pid namespace")
    root = os.path.join(run_dir, "root")
    os.mkdir(root, 0o755)
    refused = limit_ipc(config["limits"])  # through unshare's /proc, while it is writable
    notes = refused + make_everything_readonly()  # binds of read-only mounts stay read-only
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    build_root(root, config)
    pivot_into(root)  # the host's tree, our run dir (the nonce) included, is gone
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return notes


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
