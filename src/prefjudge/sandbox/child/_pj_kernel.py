"""The launcher's system calls: mount and prctl through libc, their flags, and SetupError.

Standalone, stdlib only, beside ``launcher.py``, which loads it by path (``python -I``
keeps this folder off ``sys.path``) and re-exports its names; ``_pj_seccomp.py`` and
``_pj_root.py`` build on it.
"""

from __future__ import annotations

import ctypes
import os

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
