"""The exclusive lock of a journal's output (``OUTPUT.lock``): one run writes it at a time.

An advisory ``flock`` on a file beside the output, holding the writer's pid (named in the
refusal a second run gets); the kernel releases it even when the process is killed.
:class:`prefjudge.journal.Journal` takes it before anything else and lets it go last.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from prefjudge.journal_binding import JournalError

try:  # POSIX only; prefjudge's sandbox needs Linux anyway
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = ".lock"


def lock_path(output: str | os.PathLike[str]) -> Path:
    """Return the lock file of ``output`` (``OUTPUT.lock``)."""
    output = Path(output)
    return output.with_name(output.name + LOCK_SUFFIX)


def lock_output(output: Path, hint: str) -> int | None:
    """Take ``output``'s lock, or refuse: another run writes it.

    Args:
        output: The output file.
        hint: How the user chooses another output (named in the refusal).

    Returns:
        The lock file's descriptor (closing it releases the lock: :func:`unlock_output`);
        None where there is no ``flock`` (not POSIX).

    Raises:
        JournalError: When another run holds the lock, or the lock file cannot be made.
    """
    if fcntl is None:  # pragma: no cover - not POSIX
        return None
    where = lock_path(output)
    for _ in range(20):
        try:
            fd = os.open(where, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JournalError(
                f"cannot create the lock file {where}: {exc.strerror or exc}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f" (pid {holder})" if holder else ""
            raise JournalError(
                f"{output} is being written by another prefjudge run{who}; wait for it "
                f"to finish or {hint}"
            ) from None
        # the holder before us may have removed the file between our open and our lock
        try:
            current = os.stat(where)
        except FileNotFoundError:
            os.close(fd)
            continue
        if current.st_ino != os.fstat(fd).st_ino:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd
    raise JournalError(f"cannot lock {where}: it keeps being replaced")  # pragma: no cover


def unlock_output(output: Path, fd: int) -> None:
    """Let ``output``'s lock go: remove the lock file, close its descriptor."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lock_path(output))
    os.close(fd)  # closing releases the flock


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


__all__ = ["LOCK_SUFFIX", "lock_output", "lock_path", "unlock_output"]
