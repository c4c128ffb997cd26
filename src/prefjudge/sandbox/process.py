"""Start one sandboxed run, read its bounded output, and collect what it left."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.sandbox.isolation import UID_POOL, IsolationPlan
from prefjudge.sandbox.limits import SandboxLimits

CHILD_DIR = Path(__file__).resolve().with_name("child")
LAUNCHER = CHILD_DIR / "launcher.py"
SETUP_GRACE_S = 20.0
DRAIN_AFTER_EXIT_S = 1.0
REPORT_MAX_BYTES = 4 << 20
STARTED_MARKER = "[prefjudge-harness-started"  # as in child/harness.py
FUNC_STATUSES = ("pass", "fail", "timeout", "error")
EXIT_EXEC_FAILED = 71


@dataclass(frozen=True)
class RunOutcome:
    """What one sandboxed run produced.

    Attributes:
        stage: ``None`` (the harness never announced its start), ``started`` (it did,
            but left no valid final result) or ``done``.
        result: The harness's final, nonce-tagged record (``status``, ``detail``).
        timed_out: The wall-clock limit was reached.
        setup_error: Why the sandbox could not be set up, if it could not.
        exit_code: The harness's exit status, when it exited.
        signal: The signal that killed the harness, when one did.
        output: Captured stdout+stderr (at most the cap, decoded leniently).
        output_exceeded: The run wrote more than the cap and was stopped.
        supervisor_lost: The launcher died without reporting (e.g. the code killed it).
    """

    stage: str | None
    result: dict[str, Any] | None
    timed_out: bool
    setup_error: str | None
    exit_code: int | None
    signal: int | None
    output: str
    output_exceeded: bool
    supervisor_lost: bool


def sandbox_env(python: str) -> dict[str, str]:
    """The whole environment the code under test gets (nothing from the parent)."""
    return {
        "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
    }


def _write_inputs(run_dir: Path, payload: dict[str, Any]) -> None:
    inputs = run_dir / "in"
    inputs.mkdir(mode=0o700)
    fd = os.open(inputs / ".payload.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)


def _config(plan: IsolationPlan, limits: SandboxLimits, uid: int) -> dict:
    return {
        "mode": plan.mode,
        "uid": uid,
        "gid": uid,
        "drop_uid": plan.drop_uid,
        "python": sys.executable,
        "harness_src": str(CHILD_DIR),
        "masks": list(plan.masks),
        "exposed": list(plan.exposed),
        "timeout_s": float(limits.timeout_s),
        "limits": limits.rlimits(),
        "env": sandbox_env(sys.executable),
    }


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


@dataclass
class _Streams:
    output: bytearray
    report: bytearray
    output_exceeded: bool = False
    late: bool = False


def _read_streams(proc: subprocess.Popen, report_fd: int, deadline: float, cap: int) -> _Streams:
    """Read output (capped) and the launcher's report until both end or time is up."""
    assert proc.stdout is not None
    streams = _Streams(bytearray(), bytearray())
    targets = {proc.stdout.fileno(): streams.output, report_fd: streams.report}
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in targets:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                streams.late = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT_S:
                break  # rlimits mode: something the code left still holds the output pipe
            for key, _ in selector.select(min(deadline - now, 0.25)):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                    continue
                targets[key.fd].extend(data)
                if key.fd == report_fd and len(streams.report) > REPORT_MAX_BYTES:
                    selector.unregister(key.fd)
                    streams.report.clear()
            if len(streams.output) > cap:
                del streams.output[cap:]
                streams.output_exceeded = True
                break
    return streams


def _launch(plan: IsolationPlan, run_dir: Path, limits: SandboxLimits) -> _Streams:
    report_read, report_write = os.pipe()
    argv = [
        *plan.command_prefix(),
        sys.executable,
        "-I",
        "-S",
        "-B",
        str(LAUNCHER),
        str(run_dir),
        str(report_write),
    ]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            start_new_session=True,
            pass_fds=(report_write,),
        )
    finally:
        os.close(report_write)
    try:
        deadline = time.monotonic() + limits.timeout_s + SETUP_GRACE_S
        return _read_streams(proc, report_read, deadline, limits.max_output_kb * 1024)
    finally:
        # In rlimits mode the harness may outlive a launcher the code killed: its group
        # (the launcher's) still holds it. In namespace modes the pid namespace dies with
        # the launcher, which unshare's --kill-child takes down with it.
        if proc.poll() is None or plan.mode == "rlimits":
            _kill_group(proc)
        proc.wait()
        os.close(report_read)
        if proc.stdout is not None:
            proc.stdout.close()


def _parse_report(report: bytes) -> dict[str, Any] | None:
    try:
        outcome = json.loads(report)
    except ValueError:
        return None
    return outcome if isinstance(outcome, dict) else None


def _parse_result(raw: str | None, nonce: str) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("nonce") != nonce:
        return None
    if record.get("stage") != "done" or record.get("status") not in FUNC_STATUSES:
        return None
    record["detail"] = str(record.get("detail", ""))
    return record


def _remove_tree(path: Path) -> None:
    def make_writable(function: Any, target: str, exc_info: Any) -> None:
        with contextlib.suppress(OSError):
            parent = os.path.dirname(target)
            os.chmod(parent, stat.S_IRWXU)
            if not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            function(target)

    shutil.rmtree(path, onerror=make_writable)


def run_in_sandbox(
    plan: IsolationPlan,
    payload: dict[str, Any],
    limits: SandboxLimits,
) -> RunOutcome:
    """Run the harness on ``payload`` in a fresh sandbox and report what happened.

    Args:
        plan: How to isolate the run.
        payload: What the harness runs (``format`` plus the format's fields).
        limits: Resource limits.

    Returns:
        The run's outcome; the harness's result is trusted only with the run's nonce.
    """
    nonce = secrets.token_hex(16)
    payload = {**payload, "nonce": nonce, "output_cap": limits.max_output_kb * 1024}
    run_dir = Path(tempfile.mkdtemp(prefix="prefjudge-sandbox-"))
    try:
        with UID_POOL.acquire() as uid:
            _write_inputs(run_dir, payload)
            config = _config(plan, limits, uid)
            (run_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
            streams = _launch(plan, run_dir, limits)
    finally:
        _remove_tree(run_dir)
    marker = f"{STARTED_MARKER} {nonce}]\n".encode()
    started = marker in streams.output
    text = streams.output.replace(marker, b"").decode("utf-8", errors="replace")
    outcome = _parse_report(bytes(streams.report))
    if outcome is None:
        return RunOutcome(
            stage="started" if started else None,
            result=None,
            timed_out=streams.late,
            setup_error=None,
            exit_code=None,
            signal=None,
            output=text,
            output_exceeded=streams.output_exceeded,
            supervisor_lost=not (streams.output_exceeded or streams.late),
        )
    record = _parse_result(outcome.get("result"), nonce)
    return RunOutcome(
        stage="done" if record else "started" if started else None,
        result=record,
        timed_out=bool(outcome.get("timed_out")) or streams.late,
        setup_error=outcome.get("setup_error"),
        exit_code=outcome.get("exit_code"),
        signal=outcome.get("signal"),
        output=text,
        output_exceeded=streams.output_exceeded,
        supervisor_lost=False,
    )
