"""The seccomp filter of the harness and everything it starts (standalone, stdlib only).

Loaded by ``launcher.py`` by path, after ``_pj_kernel.py`` (found in ``sys.modules``),
and re-exported there.
"""

from __future__ import annotations

import ctypes
import os

from _pj_kernel import PR_SET_SECCOMP, SECCOMP_MODE_FILTER, SetupError, _libc

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
