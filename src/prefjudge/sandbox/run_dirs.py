"""Run dirs: their owner markers, their removal, and cleaning what dead runs left behind.

Every sandbox run works in a ``prefjudge-sandbox-*`` dir of the temp dir, marked with who
made it (``owner.json``); a later run removes the dirs whose maker provably died.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

RUN_DIR_PREFIX = "prefjudge-sandbox-"
OWNER_FILE = "owner.json"
OWNER_MAX_BYTES = 4096
UNMARKED_GRACE_S = 3600.0

_cleanup_lock = threading.Lock()
_cleanup_started = False


def _remove_tree(path: Path) -> None:
    """Remove a run's folder, making what the run left unwritable writable on the way.

    Permissions are changed only inside ``path`` (and on ``path`` itself), never on the
    folder that holds it: ``/tmp`` must keep its mode even when the folder vanished under
    us (another prefjudge process removing the same orphan: ``lstat`` fails on the top).
    """
    top = os.path.abspath(path)

    def make_writable(function: Any, target: str, exc_info: Any) -> None:
        if isinstance(exc_info[1], FileNotFoundError):
            return  # already gone
        target = os.path.abspath(target)
        with contextlib.suppress(OSError):
            parent = os.path.dirname(target)
            if parent == top or parent.startswith(top + os.sep):
                os.chmod(parent, stat.S_IRWXU)
            if not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            function(target)

    shutil.rmtree(path, onerror=make_writable)



def _read_small(path: str, cap: int) -> bytes | None:
    """Read a small regular file without following links; None if not possible."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(cap + 1)[:cap]


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time since boot): None if gone or a zombie.

    Together with the pid it names one process: a reused pid has a later start time.
    """
    raw = _read_small(f"/proc/{pid}/stat", OWNER_MAX_BYTES)
    if raw is None:
        return None
    fields = raw.rsplit(b")", 1)[-1].split()  # the command name may hold spaces
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def _boot_id() -> str | None:
    raw = _read_small("/proc/sys/kernel/random/boot_id", OWNER_MAX_BYTES)
    return None if raw is None else raw.decode("ascii", errors="replace").strip()


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _owner_record() -> dict[str, Any]:
    """Who creates a run dir now: enough to prove later whether that process is gone."""
    pid = os.getpid()
    return {
        "pid": pid,
        "start_time": _start_time(pid),
        "boot_id": _boot_id(),
        "pid_namespace": _pid_namespace(),
    }


def _write_owner(run_dir: Path) -> None:
    fd = os.open(run_dir / OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(_owner_record(), handle)


def _read_owner(run_dir: Path) -> dict[str, Any] | None:
    """The run dir's owner record, or None if it has no complete, well-formed one."""
    raw = _read_small(str(run_dir / OWNER_FILE), OWNER_MAX_BYTES)
    if raw is None:
        return None
    try:
        owner = json.loads(raw)
    except ValueError:
        return None  # e.g. being written right now
    if not isinstance(owner, dict):
        return None
    if not all(isinstance(owner.get(key), int) for key in ("pid", "start_time")):
        return None
    return owner


def _owner_is_gone(owner: dict[str, Any]) -> bool:
    """Whether the owner process provably no longer exists (False when we cannot tell)."""
    boot = owner.get("boot_id")
    if boot is not None and _boot_id() not in (None, boot):
        return True  # written before a reboot
    if owner.get("pid_namespace") != _pid_namespace():
        return False  # its pid means something else here (another container)
    return _start_time(owner["pid"]) != owner["start_time"]


def _is_orphaned(run_dir: Path, info: os.stat_result, now: float) -> bool:
    owner = _read_owner(run_dir)
    if owner is not None:
        return _owner_is_gone(owner)
    # No readable marker: a dir being set up right now (between mkdtemp and the marker), or
    # one from before markers existed. Only age tells them apart (a run adds files to its
    # dir as it starts, which moves the dir's mtime).
    return now - info.st_mtime > UNMARKED_GRACE_S


def _own_run_dirs(root: Path) -> list[tuple[Path, os.stat_result]]:
    """Run dirs directly in ``root`` that are real directories owned by our uid."""
    found = []
    with os.scandir(root) as entries:
        for entry in entries:
            if not entry.name.startswith(RUN_DIR_PREFIX):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
                    found.append((root / entry.name, info))
    return found


def _run_dir_names_in_use() -> set[str]:
    """Names of run dirs that a live process names on its command line (e.g. a launcher)."""
    names = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            for arg in os.fsdecode(cmdline).split("\0"):
                names.update(p for p in arg.split("/") if p.startswith(RUN_DIR_PREFIX))
    return names


def clean_orphaned_run_dirs(tmp_root: Path | None = None) -> list[Path]:
    """Remove run dirs whose creating process provably died without removing them.

    A ``prefjudge-sandbox-*`` dir directly in ``tmp_root`` is removed only if it is a
    real directory owned by our uid, no live process names it on its command line, and

    * its owner marker (``owner.json``: pid, start time, boot id, pid namespace) names a
      process that is gone: that pid no longer runs (or is a zombie), runs with another
      start time (a reused pid), or the machine rebooted since; or
    * it has no readable marker and was last changed more than an hour ago
      (its mtime; :data:`UNMARKED_GRACE_S`): a younger one may be a run being set up.

    A dir whose owner is alive, or whose owner lives in another pid namespace (its pid
    cannot be checked from here), is never removed.

    Args:
        tmp_root: Where to look (default: :func:`tempfile.gettempdir`, where runs are made).

    Returns:
        The run dirs removed.

    Raises:
        OSError: ``tmp_root`` cannot be listed.
    """
    root = Path(tmp_root) if tmp_root is not None else Path(tempfile.gettempdir())
    now = time.time()
    orphans = [path for path, info in _own_run_dirs(root) if _is_orphaned(path, info, now)]
    if not orphans:
        return []
    in_use = _run_dir_names_in_use()
    removed = []
    for path in orphans:
        if path.name in in_use:
            continue
        _remove_tree(path)
        if not os.path.lexists(path):
            removed.append(path)
    return removed


def _clean_orphans_once() -> None:
    """On this process's first sandbox run (of any thread), clean what dead runs left."""
    global _cleanup_started
    with _cleanup_lock:
        if _cleanup_started:
            return
        _cleanup_started = True
    # Best effort: a temp dir that cannot be listed must not stop the run (mkdtemp will say).
    with contextlib.suppress(OSError):
        clean_orphaned_run_dirs()
