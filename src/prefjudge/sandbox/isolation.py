"""Isolation modes: what each enforces, how a run is started, which paths it may see.

Three modes, best first:

``namespaces`` (prefjudge runs as root, ``unshare`` available)
    New pid, mount, network, IPC and UTS namespaces; every mount read-only; fresh tmpfs
    on /tmp, /var/tmp and /dev/shm (the work dir lives there); the code runs under a
    per-run unprivileged uid/gid with no groups and ``no_new_privs``.
``userns`` (not root, unprivileged user namespaces allowed)
    The same namespaces inside a user namespace; the code keeps the invoking user's
    uid but has no capabilities, and the home directory is hidden.
``rlimits`` (fallback)
    Resource limits, a fresh work dir, a stripped environment and a child subreaper
    that kills what the code leaves behind -- but no network or filesystem isolation.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import stat
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

MODES = ("namespaces", "userns", "rlimits")
MODE_ENV_VAR = "PREFJUDGE_SANDBOX_MODE"
UID_BASE = 1_900_000_000
MAX_SLOTS = 256
_NAMESPACE_FLAGS = [
    "--fork",
    "--pid",
    "--kill-child=SIGKILL",
    "--mount",
    "--mount-proc",
    "--net",
    "--ipc",
    "--uts",
]

_COMMON_ENFORCED = [
    "wall-clock timeout",
    "CPU-time limit per process (RLIMIT_CPU)",
    "address-space limit per process (RLIMIT_AS)",
    "file-size limit (RLIMIT_FSIZE); no core dumps",
    "bounded stdout/stderr (the run is stopped past the cap)",
    "environment stripped of the parent's variables",
    "seccomp filter: no new namespaces, mounts, ptrace or process_vm_readv, bpf, perf "
    "events, userfaultfd, keyrings or kernel modules",
    "the harness is not dumpable: programs it starts cannot read its memory",
    "HumanEval+/MBPP+ and stdin/stdout outputs are compared by prefjudge outside the "
    "sandbox; the expected outputs never enter it",
    "the run is killed when prefjudge dies, even by SIGKILL (parent-death signal)",
]
_NAMESPACE_ENFORCED = [
    "fresh work dir on a tmpfs limited in size and in files (inodes); private /tmp, "
    "/var/tmp and /dev/shm, limited too",
    "no network, loopback included (empty network namespace)",
    "a minimal root filesystem, read-only: system folders (/usr, /lib...), the "
    "interpreter's prefixes and site-packages, a few files of /etc, five devices; no "
    "home, project, /run sockets or siblings of the interpreter's folders",
    "pid namespace: every process the code starts is killed when the run ends",
    "IPC, UTS and network namespaces of each run's own (runs forked from a zygote too): "
    "nothing of a run (System V IPC objects, sockets) outlives it; System V shared memory "
    "bounded by the memory limit, message queues and semaphores bounded",
    "no_new_privs (setuid programs cannot raise privileges)",
]


@dataclass(frozen=True)
class IsolationPlan:
    """How sandbox runs are started.

    Attributes:
        mode: ``namespaces``, ``userns`` or ``rlimits``.
        unshare: Path of util-linux ``unshare`` (None in ``rlimits`` mode).
        reason: Why this mode was chosen (why better ones were not available).
        exposed: The interpreter's paths, bound read-only into the sandbox's minimal root
            filesystem (namespace modes).
        drop_uid: In ``rlimits`` mode as root: run the code under a per-run uid.
    """

    mode: str
    unshare: str | None
    reason: str
    exposed: tuple[str, ...] = ()
    drop_uid: bool = False

    def command_prefix(self) -> list[str]:
        """The ``unshare`` command that wraps the launcher (empty in ``rlimits`` mode)."""
        if self.mode == "namespaces":
            return [str(self.unshare), *_NAMESPACE_FLAGS]
        if self.mode == "userns":
            return [str(self.unshare), "--user", "--map-root-user", *_NAMESPACE_FLAGS]
        return []


def interpreter_paths() -> list[str]:
    """Real paths the sandboxed interpreter needs to read: its prefixes and site-packages.

    The prefixes (a venv and the installation it was made from), the interpreter itself,
    and the ``sys.path`` entries inside them or named ``site-packages``/``dist-packages``.
    Other entries (a project's source folder on the path of an editable install, the
    current directory) are left out: the tests never import them, and the sandbox must
    not see them.
    """
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    candidates = [os.path.dirname(sys.executable), os.path.realpath(sys.executable), *prefixes]
    real_prefixes = [os.path.realpath(prefix) for prefix in prefixes]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        inside = any(real == prefix or real.startswith(prefix + "/") for prefix in real_prefixes)
        if entry and (inside or os.path.basename(real) in ("site-packages", "dist-packages")):
            candidates.append(entry)
    paths = {os.path.realpath(path) for path in candidates if os.path.exists(path)}
    return sorted(paths)


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _closed_ancestors(exposed: list[str]) -> list[str]:
    """Folders above the interpreter's paths that other users cannot cross."""
    closed = set()
    for path in exposed:
        for ancestor in _ancestors(path):
            with contextlib.suppress(OSError):
                if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                    closed.add(ancestor)
    return sorted(
        folder for folder in closed
        if not any(folder == path or folder.startswith(path.rstrip("/") + "/") for path in exposed)
    )


def make_plan(mode: str, unshare: str | None, reason: str) -> IsolationPlan:
    """Build the plan for ``mode`` (paths are computed from the running interpreter)."""
    exposed = interpreter_paths()
    if mode == "rlimits":
        # As root without namespaces, still run the code under a per-run uid when that
        # uid can reach the interpreter (no mount of its own can bind it in this mode).
        drop = os.geteuid() == 0 and not _closed_ancestors(exposed)
        return IsolationPlan(mode, None, reason, drop_uid=drop)
    return IsolationPlan(mode, unshare, reason, tuple(exposed))


def _user_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


def describe(plan: IsolationPlan) -> dict[str, object]:
    """What ``plan`` enforces and what it does not, for the CLI and for output records."""
    report: dict[str, object] = {
        "mode": plan.mode,
        "isolated": plan.mode != "rlimits",
        "reason": plan.reason,
        "warning": None,
    }
    if plan.mode == "namespaces":
        report["enforced"] = [
            *_COMMON_ENFORCED,
            *_NAMESPACE_ENFORCED,
            "per-run unprivileged uid/gid, no supplementary groups",
            "process limit (RLIMIT_NPROC) counted for that run's uid alone",
        ]
        report["not_enforced"] = [
            "total memory across a run's processes (RLIMIT_AS is per process; no cgroup)",
            "reading the world-readable files of that minimal root (read-only)",
        ]
    elif plan.mode == "userns":
        report["enforced"] = [
            *_COMMON_ENFORCED,
            *_NAMESPACE_ENFORCED,
            "no capabilities (user namespace)",
            "process limit (RLIMIT_NPROC) counted within the run's user namespace",
        ]
        report["not_enforced"] = [
            "a separate uid: the code runs as you (it sees only the minimal root, "
            "read-only)",
            "total memory across a run's processes (RLIMIT_AS is per process; no cgroup)",
        ]
    elif plan.drop_uid:
        report["enforced"] = [
            *_COMMON_ENFORCED,
            "fresh temporary work dir",
            "per-run unprivileged uid/gid, no supplementary groups, "
            "no_new_privs (files are protected by their permissions)",
            "process limit (RLIMIT_NPROC) counted for that run's uid alone",
            "processes it leaves are killed while the supervisor lives (child subreaper)",
        ]
        report["not_enforced"] = [
            "network isolation: the code CAN reach the network",
            "writes to world-writable places (/tmp, /dev/shm, ...) are NOT blocked",
            "pid namespace: a daemon that outlives its supervisor is not killed",
        ]
        report["warning"] = (
            f"SANDBOX ISOLATION DEGRADED ({plan.reason}). Model-written code runs under an "
            "unprivileged uid with resource limits, but WITHOUT namespaces: it can use the "
            "network and write world-writable places such as /tmp."
        )
    else:
        user = _user_name()
        report["enforced"] = [
            *_COMMON_ENFORCED,
            "fresh temporary work dir",
            "processes it leaves are killed while the supervisor lives (child subreaper)",
            "process limit (RLIMIT_NPROC) on top of your current process count (not for root)",
        ]
        report["not_enforced"] = [
            "network isolation: the code CAN reach the network",
            f"filesystem isolation: the code CAN write anything {user} can write",
            "pid namespace: a daemon that outlives its supervisor is not killed",
        ]
        report["warning"] = (
            f"SANDBOX ISOLATION UNAVAILABLE ({plan.reason}). Model-written code runs as "
            f"{user} with resource limits only: it can use the network and write any file "
            f"{user} can. Run as root with util-linux 'unshare', or enable unprivileged "
            "user namespaces, to isolate it."
        )
    return report


def sandbox_uid_range() -> range:
    """The uids this process gives its sandbox runs (distinct per process id)."""
    first = UID_BASE + (os.getpid() % 50_000) * MAX_SLOTS
    return range(first, first + MAX_SLOTS)


class UidPool:
    """Hands out distinct sandbox uids to concurrent runs (namespaces mode)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._free = list(range(MAX_SLOTS))

    @contextlib.contextmanager
    def acquire(self) -> Iterator[int]:
        """Reserve a uid for one run; it is reused only after the run ended."""
        with self._cond:
            while not self._free:
                self._cond.wait()
            slot = self._free.pop()
        try:
            yield sandbox_uid_range()[slot]
        finally:
            with self._cond:
                self._free.append(slot)
                self._cond.notify()


UID_POOL = UidPool()
