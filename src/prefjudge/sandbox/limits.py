"""Resource limits of one sandbox run, and each benchmark harness's own defaults."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

GENERIC_DEFAULTS: dict[str, Any] = {"timeout_s": 60.0, "cpu_s": 60, "memory_mb": 4096}
"""The limits a run gets when neither the user nor its task format's harness sets them."""

HARNESS_DEFAULTS: dict[str, dict[str, Any]] = {
    # bigcodebench 0.2.5 (bigcodebench.evaluate, eval/__init__.py untrusted_check): a
    # sample's whole test class gets max(240 s, the ground truth's time) of wall time
    # (BIGCODEBENCH_TIMEOUT_PER_TASK), no CPU-time limit, and a 30 GiB address space.
    # prefjudge's CPU limit is set to the same 240 s.
    "bigcodebench": {"timeout_s": 240.0, "cpu_s": 240, "memory_mb": 30 * 1024},
}
"""Per task format, the limits of that benchmark's reference harness, where they differ from
:data:`GENERIC_DEFAULTS`. EvalPlus (HumanEval+/MBPP+) runs already follow evalplus 0.3.1:
each input gets ``max(1 s, 4 x`` the reference's time``)`` (in CPU time here), within a
60 s run, in 4 GiB, its defaults."""

HARNESS_HELP = ("the task format's own harness: 240 s (CPU and wall) and 30 GiB for "
                "BigCodeBench, as bigcodebench.evaluate; 60 s and 4 GiB otherwise "
                "(HumanEval+/MBPP+ inputs get max(1 s, 4x the reference's CPU time), "
                "as evalplus.evaluate)")
"""What ``--test-timeout``/``--memory-mb`` do when not given, for ``--help``."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every sandboxed run.

    ``timeout_s``, ``cpu_s`` and ``memory_mb`` left out (or None) follow the task format's
    reference harness (:data:`HARNESS_DEFAULTS`, through :meth:`for_format`), else
    :data:`GENERIC_DEFAULTS`; a value given is used for every format.

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
        unset: Which of ``timeout_s``, ``cpu_s``, ``memory_mb`` were not given (they
            follow the task format's harness).
    """

    timeout_s: float = None  # type: ignore[assignment]  # None: the harness's (see above)
    cpu_s: int = None  # type: ignore[assignment]
    memory_mb: int = None  # type: ignore[assignment]
    nproc: int = 128
    fsize_mb: int = 128
    disk_mb: int = 256
    max_files: int = 20_000
    max_output_kb: int = 1024
    nofile: int = 1024
    unset: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        unset = set(self.unset)
        for name, value in GENERIC_DEFAULTS.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
                unset.add(name)
            elif getattr(self, name) != value:  # given, or changed by dataclasses.replace
                unset.discard(name)
        object.__setattr__(self, "unset", frozenset(unset))
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name != "unset" and value <= 0:
                raise ValueError(f"SandboxLimits.{item.name} must be positive, got {value!r}")

    def for_format(self, test_format: str) -> SandboxLimits:
        """These limits for a task of ``test_format``: its harness's where none was given."""
        chosen = {name: value for name, value in HARNESS_DEFAULTS.get(test_format, {}).items()
                  if name in self.unset}
        if not chosen:
            return self
        return replace(self, **chosen, unset=self.unset - chosen.keys())

    def time_doubled(self) -> SandboxLimits:
        """These limits with twice the wall and CPU time: what an EvalPlus run gets.

        Copying and digesting a large output costs about what computing it did (a few
        tasks return hundreds of MB), so a HumanEval+/MBPP+ run that records its outputs,
        the reference's included, gets the budget twice.
        """
        return replace(self, timeout_s=2 * self.timeout_s, cpu_s=2 * self.cpu_s)

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
