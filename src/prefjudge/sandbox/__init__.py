"""Run untrusted, model-written code against benchmark tests in an isolated sandbox.

Public API:

- :class:`SandboxLimits` -- wall/CPU time, memory, processes, file size, disk, output.
- :func:`run_functional` -- run ``(task, code)`` jobs in parallel, one sandbox each.
- :func:`isolation_report` -- what the sandbox enforces here (and loudly, what not).

How a run is isolated depends on what the machine allows (see
:mod:`prefjudge.sandbox.isolation`): as root, fresh namespaces plus a per-run
unprivileged uid; otherwise a user namespace; failing both, resource limits only,
which :func:`isolation_report` flags with a warning. Statuses are defined in
:mod:`prefjudge.sandbox.adapters`. Nothing here prints.

Each name is imported from its module when it is first asked for (module
``__getattr__``): a run that never tests (``prefjudge score --no-tests``) and only needs
:class:`SandboxLimits` does not import the runner, the zygotes and the isolation probes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefjudge.lazy import lazy_getattr

if TYPE_CHECKING:
    from prefjudge.sandbox.detect import (
        SandboxUnavailableError,
        isolation_line,
        isolation_report,
        resolve_isolation,
    )
    from prefjudge.sandbox.digest import harness_digest
    from prefjudge.sandbox.functional import run_functional, run_one
    from prefjudge.sandbox.limits import SandboxLimits

_LAZY = {
    **dict.fromkeys(("SandboxUnavailableError", "isolation_line", "isolation_report",
                     "resolve_isolation"), "prefjudge.sandbox.detect"),
    "harness_digest": "prefjudge.sandbox.digest",
    **dict.fromkeys(("run_functional", "run_one"), "prefjudge.sandbox.functional"),
    "SandboxLimits": "prefjudge.sandbox.limits",
}
"""Where each public name lives; imported on first use."""


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "SandboxLimits",
    "SandboxUnavailableError",
    "harness_digest",
    "isolation_line",
    "isolation_report",
    "resolve_isolation",
    "run_functional",
    "run_one",
]
