"""The minimal root filesystem of a namespace-mode run, and the bounds of its System V IPC.

Standalone, stdlib only: loaded by ``launcher.py`` by path, after ``_pj_kernel.py`` (found
in ``sys.modules``), and re-exported there. The root is a fresh tmpfs holding, read-only,
the system directories, the interpreter's prefixes and site-packages, a few files of
``/etc``, five devices in ``/dev`` and this pid namespace's ``/proc``; fresh tmpfs on
``/tmp``, ``/var/tmp`` and ``/dev/shm``, limited in size and in files.
"""

from __future__ import annotations

import ctypes
import os
import re

from _pj_kernel import (
    MS_BIND,
    MS_MOVE,
    MS_NOATIME,
    MS_NODEV,
    MS_NODIRATIME,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_RELATIME,
    MS_REMOUNT,
    MS_STRICTATIME,
    SetupError,
    _libc,
    mount,
)

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
SCRATCH_STAGING = "/.prefjudge-scratch"  # where a zygote's run builds its fresh /tmp
SCRATCH_DIRS = ("/tmp", "/var/tmp")
SMALL_SCRATCH_FILES = 1_000  # most files on /var/tmp and /dev/shm
RESERVED_FILES = 64  # the work and harness dirs, the harness's files, the inputs


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
