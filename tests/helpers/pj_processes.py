"""Who is whose child, read from /proc (for the sandbox's lifetime tests)."""

from __future__ import annotations

from pathlib import Path

MAX_HOPS = 64


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid``, or None if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is ``pid`` or one of its ancestors."""
    for _ in range(MAX_HOPS):
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
        pid = parent_of(pid) or 0
    return False
