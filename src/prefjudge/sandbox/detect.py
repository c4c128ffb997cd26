"""Choose the best isolation mode that works here, by trying it once."""

from __future__ import annotations

import os
import shutil
import sys
import threading

from prefjudge.sandbox.isolation import MODE_ENV_VAR, MODES, IsolationPlan, describe, make_plan
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import run_in_sandbox

_PROBE_LIMITS = SandboxLimits(timeout_s=30.0, cpu_s=30)
_lock = threading.Lock()
_plans: dict[str, IsolationPlan] = {}


class SandboxUnavailableError(RuntimeError):
    """The requested isolation mode cannot run on this machine."""


def _probe(plan: IsolationPlan) -> str | None:
    """Run a trivial harness under ``plan``; return why it failed, or None."""
    outcome = run_in_sandbox(plan, {"format": "probe"}, _PROBE_LIMITS)
    if outcome.result is not None and outcome.result.get("status") == "pass":
        return None
    why = outcome.setup_error or outcome.output.strip()[-300:] or "no result"
    return f"{plan.mode} probe failed: {why}"


def _find_unshare() -> str | None:
    return shutil.which("unshare") or shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin")


def _auto_plan() -> IsolationPlan:
    if not sys.platform.startswith("linux"):
        return make_plan("rlimits", None, f"namespaces need Linux, this is {sys.platform}")
    unshare = _find_unshare()
    if unshare is None:
        return make_plan("rlimits", None, "util-linux 'unshare' was not found")
    failures = []
    candidates = []
    if os.geteuid() == 0:
        candidates.append(("namespaces", "running as root with util-linux unshare"))
    candidates.append(("userns", "not root; unprivileged user namespaces are available"))
    for mode, reason in candidates:
        plan = make_plan(mode, unshare, reason)
        failure = _probe(plan)
        if failure is None:
            return plan
        failures.append(failure)
    return make_plan("rlimits", None, "; ".join(failures))


def resolve_isolation(mode: str | None = None) -> IsolationPlan:
    """The isolation plan to use, probed once per process and mode.

    Args:
        mode: ``auto`` (default: the best that works), ``namespaces``, ``userns`` or
            ``rlimits``; when None, the ``PREFJUDGE_SANDBOX_MODE`` environment variable
            decides, else ``auto``.

    Returns:
        The plan.

    Raises:
        SandboxUnavailableError: A mode was asked for explicitly and does not work here.
        ValueError: Unknown mode.
    """
    requested = mode or os.environ.get(MODE_ENV_VAR) or "auto"
    if requested not in ("auto", *MODES):
        raise ValueError(f"unknown sandbox mode {requested!r}; use auto or one of {MODES}")
    with _lock:
        if requested in _plans:
            return _plans[requested]
        if requested == "auto":
            plan = _auto_plan()
        else:
            unshare = _find_unshare()
            if requested != "rlimits" and unshare is None:
                raise SandboxUnavailableError(f"sandbox mode {requested!r} needs 'unshare'")
            plan = make_plan(requested, unshare, f"{requested} mode requested")
            failure = _probe(plan)
            if failure is not None:
                raise SandboxUnavailableError(failure)
        _plans[requested] = plan
        return plan


def isolation_report(mode: str | None = None) -> dict[str, object]:
    """What the sandbox enforces here and what it does not.

    Args:
        mode: As for :func:`resolve_isolation`.

    Returns:
        ``mode``, ``isolated`` (False in the rlimits fallback), ``reason``, ``enforced``
        and ``not_enforced`` (lists of plain sentences) and ``warning`` (a loud message
        to print when isolation is degraded, else None).
    """
    return describe(resolve_isolation(mode))


def isolation_line(report: dict[str, object], zygote: bool) -> str:
    """The one line every scored record carries in ``meta.sandbox``.

    Args:
        report: :func:`isolation_report` of the machine that runs the tests.
        zygote: Whether runs are forked from zygotes.

    Returns:
        E.g. ``namespaces (running as root); runs forked from zygotes``.
    """
    runs = "runs forked from zygotes" if zygote else "a fresh process per run"
    return f"{report['mode']} ({report['reason']}); {runs}"
