"""Start one sandboxed run, read its bounded output, and collect what it left."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.sandbox.isolation import UID_POOL, IsolationPlan
from prefjudge.sandbox.limits import SandboxLimits

# run dirs moved to run_dirs.py; their names are re-exported here (zygote and tests use them)
from prefjudge.sandbox.run_dirs import OWNER_FILE as OWNER_FILE
from prefjudge.sandbox.run_dirs import OWNER_MAX_BYTES as OWNER_MAX_BYTES
from prefjudge.sandbox.run_dirs import (
    RUN_DIR_PREFIX,
    _clean_orphans_once,
    _remove_tree,
    _write_owner,
)
from prefjudge.sandbox.run_dirs import UNMARKED_GRACE_S as UNMARKED_GRACE_S
from prefjudge.sandbox.run_dirs import clean_orphaned_run_dirs as clean_orphaned_run_dirs

CHILD_DIR = Path(__file__).resolve().with_name("child")
LAUNCHER = CHILD_DIR / "launcher.py"
SETUP_GRACE_S = 20.0
DRAIN_AFTER_EXIT_S = 1.0
REPORT_MAX_BYTES = 80 << 20  # a result, and outputs of up to 32 MiB
STARTED_MARKER = "[prefjudge-harness-started"  # as in child/harness.py
FUNC_STATUSES = ("pass", "fail", "timeout", "error")
# "ran": every input ran, and its outputs wait to be compared outside (EvalPlus, stdio)
HARNESS_STATUSES = (*FUNC_STATUSES, "ran")
EXIT_EXEC_FAILED = 71
PR_SET_PDEATHSIG = 1

_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
if _prctl is not None:
    _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


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
        scratch_full: Which limits of the run's tmpfs the code used up (``files``,
            ``bytes``), as the launcher found it when the run ended.
        work_replaced: The code moved, removed or replaced its work folder (the result is
            still read from the folder it was started in).
        outputs: The outputs file (JSON lines) of formats compared outside the sandbox
            (EvalPlus, stdio), as the run left it: untrusted, compared by prefjudge.
        outputs_over_cap: The run's outputs file was larger than the supervisor reads.
        cpu_s: CPU seconds (user + system) every process of the run used, counted by the
            kernel and read by the supervisor after it reaped them all: out of the code's
            reach (None when the supervisor sent no report).
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
    scratch_full: tuple[str, ...] = ()
    work_replaced: bool = False
    outputs: str | None = None
    outputs_over_cap: bool = False
    cpu_s: float | None = None


# pyarrow (imported by pandas 3 when installed) starts jemalloc's background thread as it
# loads; a zygote that imported it could not fork safely, and would drop pandas.
NO_LIBRARY_THREADS = {"JE_ARROW_MALLOC_CONF": "background_thread:false"}


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
        **NO_LIBRARY_THREADS,
    }


def _write_inputs(run_dir: Path, payload: dict[str, Any]) -> None:
    inputs = run_dir / "in"
    inputs.mkdir(mode=0o700)
    fd = os.open(inputs / ".payload.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload_json(payload))


def _config(plan: IsolationPlan, limits: SandboxLimits, uid: int) -> dict:
    return {
        "mode": plan.mode,
        "uid": uid,
        "gid": uid,
        "drop_uid": plan.drop_uid,
        "python": sys.executable,
        "harness_src": str(CHILD_DIR),
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
class Streams:
    """What a run wrote: its output, the supervisor's report, and how reading ended."""

    output: bytearray
    report: bytearray
    output_exceeded: bool = False
    late: bool = False


def read_streams(
    output_fd: int, report_fd: int, deadline: float, cap: int, exited: Callable[[], bool]
) -> Streams:
    """Read output (capped) and the supervisor's report until both end or time is up.

    Args:
        output_fd: The run's stdout+stderr pipe.
        report_fd: The supervisor's report pipe.
        deadline: ``time.monotonic()`` past which the run is late.
        cap: Most output bytes kept; past it reading stops (``output_exceeded``).
        exited: Whether the supervisor has exited (reading goes on a moment after, for
            what is still in the pipes).
    """
    streams = Streams(bytearray(), bytearray())
    targets = {output_fd: streams.output, report_fd: streams.report}
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in targets:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                streams.late = True
                break
            if exited_at is None and exited():
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


def start_entry(argv: list[str], stdout: Any, stderr: Any, pass_fd: int) -> subprocess.Popen:
    """Start a sandbox's first process (``unshare`` or, in rlimits mode, the launcher).

    It gets a session of its own, a bare ``PATH`` and nothing else of our environment, no
    stdin, and ``pass_fd`` besides its output. It gets SIGKILL if the thread starting it
    ends, even when we are SIGKILLed (see :func:`_die_with_parent`); unshare's
    ``--kill-child`` then takes the sandbox's pid namespace down with it.
    """
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **NO_LIBRARY_THREADS},
        start_new_session=True,
        pass_fds=(pass_fd,),
        preexec_fn=_die_with_parent(),
    )


def _launch(plan: IsolationPlan, run_dir: Path, limits: SandboxLimits) -> Streams:
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
        proc = start_entry(argv, subprocess.PIPE, subprocess.STDOUT, report_write)
    except BaseException:
        os.close(report_read)
        raise
    finally:
        os.close(report_write)
    try:
        deadline = time.monotonic() + limits.timeout_s + SETUP_GRACE_S
        assert proc.stdout is not None
        return read_streams(proc.stdout.fileno(), report_read, deadline,
                            limits.max_output_kb * 1024, lambda: proc.poll() is not None)
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
    if record.get("stage") != "done" or record.get("status") not in HARNESS_STATUSES:
        return None
    record["detail"] = str(record.get("detail", ""))
    return record



# --- lifetime: nothing outlives the process that started it ---------------------------------


def _die_with_parent() -> Callable[[], None] | None:
    """A Popen ``preexec_fn`` that makes the child get SIGKILL when its parent dies.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child exits, not the
    whole process. That is safe here: :func:`run_in_sandbox` is synchronous, so the
    forking thread (a worker of ``functional.py``'s thread pool, or the caller's thread)
    stays blocked in it until the child has been waited for; it can only go away when the
    whole process dies, which is exactly when the signal must fire.

    The function runs in the forked child of a multithreaded parent, before exec, which
    Python's documentation warns against in general: a lock another thread held at fork
    time stays locked in the child. It is acceptable here because the function does no
    more than one prctl call and one getppid, through a ctypes prototype and arguments
    prepared before the fork: no import, no logging, no buffered I/O, no lock of ours.

    Returns:
        The function, or None where prctl does not exist (not Linux).
    """
    if _prctl is None:
        return None
    prctl, option, kill = _prctl, PR_SET_PDEATHSIG, int(signal.SIGKILL)
    parent = os.getpid()

    def preexec() -> None:
        if prctl(option, kill, 0, 0, 0) != 0:
            # Cannot happen for a valid signal; refuse to start a sandbox that could outlive
            # us (Popen raises SubprocessError in the parent: loud, never a wrong score).
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os._exit(EXIT_EXEC_FAILED)  # the parent died before prctl: nobody to signal us

    return preexec




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
    _clean_orphans_once()
    nonce, payload = seal(payload, limits)
    run_dir = Path(tempfile.mkdtemp(prefix=RUN_DIR_PREFIX))
    try:  # removed on every way out; if we are killed, a later run's cleanup removes it
        _write_owner(run_dir)
        with UID_POOL.acquire() as uid:
            _write_inputs(run_dir, payload)
            config = _config(plan, limits, uid)
            (run_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
            streams = _launch(plan, run_dir, limits)
    finally:
        _remove_tree(run_dir)
    return outcome_of(streams, nonce)


ENCODED_KEPT = 256
"""How many encoded lists :func:`payload_json` keeps at most."""
KEPT_FIELDS = frozenset({"base_inputs", "plus_inputs", "time_limits"})
"""The payload fields whose JSON :func:`payload_json` keeps: a task's inputs (lists), and
its inputs' time limits (a dict of lists, shared by the task's samples:
``ReferenceOutputs.time_limits``)."""
_ENCODED: dict[int, tuple[Any, str]] = {}


def payload_json(payload: dict[str, Any]) -> bytes:
    """``json.dumps(payload)``, UTF-8, a task's inputs encoded once for all its runs.

    Every sample of a HumanEval+/MBPP+ task sends the task's inputs (up to thousands of
    them) and their time limits (:data:`KEPT_FIELDS`): the task's own objects, never
    changed once made. Each is encoded once and its text kept while it is the same object
    (at most :data:`ENCODED_KEPT` of them), so only the sample's own fields are encoded
    again. The text is what ``json.dumps`` writes for the whole payload.
    """
    parts = []
    for key, value in payload.items():
        if key in KEPT_FIELDS and (type(value) is dict or (type(value) is list
                                                         and len(value) >= 32)):
            held = _ENCODED.get(id(value))
            if held is None or held[0] is not value:
                if len(_ENCODED) >= ENCODED_KEPT:
                    _ENCODED.clear()
                held = _ENCODED[id(value)] = (value, json.dumps(value))
            text = held[1]
        else:
            text = json.dumps(value)
        parts.append(f"{json.dumps(key)}: {text}")
    return ("{" + ", ".join(parts) + "}").encode()


def seal(payload: dict[str, Any], limits: SandboxLimits) -> tuple[str, dict[str, Any]]:
    """A fresh nonce, and ``payload`` with it and the output cap added."""
    nonce = secrets.token_hex(16)
    return nonce, {**payload, "nonce": nonce, "output_cap": limits.max_output_kb * 1024}


def outcome_of(streams: Streams, nonce: str) -> RunOutcome:
    """What a run produced, from its streams; only a result with ``nonce`` counts."""
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
        scratch_full=tuple(str(kind) for kind in outcome.get("scratch_full") or ()
                           if kind in ("files", "bytes")),
        work_replaced=outcome.get("work_replaced") is True,
        outputs=outputs if isinstance(outputs := outcome.get("outputs"), str) else None,
        outputs_over_cap=outcome.get("outputs_over_cap") is True,
        cpu_s=_seconds(outcome.get("cpu_s")),
    )


def _seconds(value: Any) -> float | None:
    """A non-negative, finite number of seconds from a report, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < float("inf") else None
