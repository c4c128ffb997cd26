"""Resource limits of one sandbox run."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every sandboxed run.

    Attributes:
        timeout_s: Wall-clock limit of the run (tests included), in seconds.
        cpu_s: CPU-time limit per process (RLIMIT_CPU), in seconds.
        memory_mb: Address-space limit per process (RLIMIT_AS), in MiB.
        nproc: Most processes and threads the run's user may have (RLIMIT_NPROC).
        fsize_mb: Largest file the run may write (RLIMIT_FSIZE), in MiB.
        disk_mb: Size of the run's private tmpfs (work dir and /tmp), in MiB.
        max_files: Most files and directories (inodes) on that tmpfs; /var/tmp and /dev/shm
            get at most 1,000 each.
        max_output_kb: Most stdout+stderr the run may write before it is stopped, in KiB.
        nofile: Most open file descriptors per process (RLIMIT_NOFILE).
    """

    timeout_s: float = 60.0
    cpu_s: int = 60
    memory_mb: int = 4096
    nproc: int = 128
    fsize_mb: int = 128
    disk_mb: int = 256
    max_files: int = 20_000
    max_output_kb: int = 1024
    nofile: int = 1024

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value!r}")

    def rlimits(self) -> dict[str, int]:
        """The limits the launcher applies, in the launcher's units."""
        return {
            "cpu_s": int(self.cpu_s),
            "memory_mb": int(self.memory_mb),
            "nproc": int(self.nproc),
            "fsize_mb": int(self.fsize_mb),
            "disk_mb": int(self.disk_mb),
            "max_files": int(self.max_files),
            "nofile": int(self.nofile),
        }
