"""Zygotes: one pre-imported, sandboxed process per worker that forks every run.

A fresh-process run spends most of its time importing the libraries its tests use
(pandas, numpy, matplotlib, scipy: about 1.8 of 2.1 core-seconds on BigCodeBench). A
zygote (``child/zygote.py``) imports them once, inside the same minimal root and
namespaces a run gets, and forks one child per run; the child enters a fresh mount and
pid namespace with fresh scratch space and confines itself exactly as a fresh harness
does before any untrusted code runs. Nothing of a run ever lives in the zygote: the
payload (code, tests, nonce) goes straight to the run as a file descriptor.

A :class:`ZygotePool` lends each worker of :func:`prefjudge.sandbox.run_functional` an
idle zygote per run (one zygote per worker in practice); zygotes die with the pool and with
prefjudge, even by SIGKILL. A zygote is replaced after :attr:`ZygotePool.max_runs` runs
or when it grows by more than :attr:`ZygotePool.max_growth_mb`; one that dies is replaced
and its run retried once.
Where no zygote can start (``rlimits`` mode, or a failing start), runs use fresh
processes and :attr:`ZygotePool.fallback` says why.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.sandbox.isolation import UID_POOL, IsolationPlan
from prefjudge.sandbox.limits import SandboxLimits
from prefjudge.sandbox.process import (
    CHILD_DIR,
    RUN_DIR_PREFIX,
    SETUP_GRACE_S,
    RunOutcome,
    _clean_orphans_once,
    _config,
    _remove_tree,
    _write_owner,
    outcome_of,
    payload_json,
    read_streams,
    run_in_sandbox,
    seal,
    start_entry,
)

ZYGOTE_SCRIPT = CHILD_DIR / "zygote.py"
START_TIMEOUT_S = 300.0
ACK_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0
LOST_CHECK_S = 0.2
MESSAGE_MAX_BYTES = 1 << 20
LOG_TAIL_BYTES = 2000
ZYGOTE_ENV_VAR = "PREFJUDGE_SANDBOX_ZYGOTE"
MAX_STARTERS = 64


class ZygoteError(RuntimeError):
    """A zygote could not be started, or stopped answering."""


class ThreadedPreloadError(ZygoteError):
    """A preloaded module started a thread; the zygote can start without it."""

    def __init__(self, message: str, module: str):
        super().__init__(message)
        self.module = module


@dataclass
class ZygoteStats:
    """What a pool's zygotes did (for records and benchmarks).

    Attributes:
        started: Zygotes started.
        replaced: Zygotes retired after their run or memory budget.
        lost: Zygotes that died or stopped answering during a run.
        retried: Runs retried on a new zygote after their zygote was lost.
        peak_rss_kb: Largest resident size a zygote reported.
        startup_cpu_s: CPU seconds the zygotes spent starting (imports included), in all.
        preloaded: Modules the zygotes imported before forking.
        skipped: Modules asked for but not preloaded, and why.
        fallback: Why runs used fresh processes instead, if they did.
    """

    started: int = 0
    replaced: int = 0
    lost: int = 0
    retried: int = 0
    peak_rss_kb: int = 0
    startup_cpu_s: float = 0.0
    preloaded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    fallback: str | None = None


def zygote_default() -> bool:
    """Whether runs use zygotes when the caller does not say (``PREFJUDGE_SANDBOX_ZYGOTE``)."""
    return os.environ.get(ZYGOTE_ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def _recv(sock: socket.socket, timeout_s: float) -> dict[str, Any] | None:
    """One JSON message from the zygote, or None if it closed or said nothing in time."""
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            return None
    try:
        data = sock.recv(MESSAGE_MAX_BYTES)
    except OSError:
        return None
    if not data:
        return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


class Zygote:
    """One zygote process and the socket it is driven by."""

    def __init__(self, plan: IsolationPlan, preload: Sequence[str], limits: SandboxLimits):
        """Start the zygote and wait until it has imported ``preload``.

        Args:
            plan: The isolation plan (a namespace mode).
            preload: Modules to import before forking.
            limits: Limits of the runs (the zygote's own scratch space is sized by them).

        Raises:
            ZygoteError: It could not start; the message says why.
        """
        self.runs = 0
        self._log = tempfile.TemporaryFile()
        zygote_dir = Path(tempfile.mkdtemp(prefix=RUN_DIR_PREFIX))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        try:
            _write_owner(zygote_dir)
            config = {**_config(plan, limits, os.getuid()), "preload": list(preload)}
            (zygote_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
            argv = [*plan.command_prefix(), sys.executable, "-I", "-S", "-B",
                    str(ZYGOTE_SCRIPT), str(zygote_dir), str(theirs.fileno())]
            # Started by a thread of its pool, which lives until the pool is closed: the
            # zygote dies then, or with prefjudge.
            self._proc = start_entry(argv, self._log, self._log, theirs.fileno())
            theirs.close()
            ready = _recv(ours, START_TIMEOUT_S)
        except BaseException:
            theirs.close()
            self.close()
            raise
        finally:
            _remove_tree(zygote_dir)  # read before pivoting: nothing in it is needed now
        if not ready or not ready.get("ready"):
            why = (ready or {}).get("setup_error") or "it ended or said nothing"
            self.close()
            message = f"the sandbox zygote could not start: {why}"
            if isinstance((ready or {}).get("threaded"), str):
                raise ThreadedPreloadError(message, ready["threaded"])
            raise ZygoteError(message + self._tail())
        self.ready = ready
        self.start_rss_kb = int(ready.get("rss_kb") or 0)
        self.rss_kb = self.start_rss_kb

    def _tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0, os.SEEK_END)
            size = self._log.tell()
            self._log.seek(max(0, size - LOG_TAIL_BYTES))
            text = self._log.read().decode("utf-8", errors="replace").strip()
            return f"\n{text}" if text else ""
        return ""

    def alive(self) -> bool:
        """Whether the zygote process still runs."""
        return self._proc.poll() is None

    def run(self, payload: dict[str, Any], nonce: str, limits: SandboxLimits,
            uid: int) -> RunOutcome | None:
        """Fork one run of ``payload``; None if the zygote was lost before it reported.

        A run the zygote's child cannot stop by itself (late past the setup grace, or
        flooding its output) is stopped by killing the whole zygote: the caller then
        gets the outcome and the zygote is replaced.
        """
        out_read, out_write = os.pipe()
        report_read, report_write = os.pipe()
        payload_fd = os.memfd_create("prefjudge-payload", os.MFD_CLOEXEC)
        theirs = [out_write, report_write, payload_fd]
        try:
            with os.fdopen(os.dup(payload_fd), "wb") as handle:
                handle.write(payload_json(payload))
            os.lseek(payload_fd, 0, os.SEEK_SET)
            request = {"uid": uid, "gid": uid, "timeout_s": float(limits.timeout_s),
                       "limits": limits.rlimits()}
            try:
                socket.send_fds(self._sock, [json.dumps(request).encode()], theirs)
            except OSError:
                return None
            finally:
                for fd in theirs:
                    os.close(fd)
            ack = _recv(self._sock, ACK_TIMEOUT_S)
            if ack is not None and ack.get("forked") is False:
                self.kill()  # it answers, but cannot fork a run here: no use retrying
                raise ZygoteError(f"the sandbox zygote cannot fork a run: {ack.get('why')}")
            if not ack or not ack.get("forked"):
                self.kill()
                return None
            self.runs += 1
            self.rss_kb = int(ack.get("rss_kb") or self.rss_kb)
            deadline = time.monotonic() + limits.timeout_s + SETUP_GRACE_S
            streams = read_streams(out_read, report_read, deadline,
                                   limits.max_output_kb * 1024, lambda: False)
        finally:
            os.close(out_read)
            os.close(report_read)
        if streams.late or streams.output_exceeded:
            self.kill()  # the only way to reach the run from here; the pool replaces us
        elif not streams.report and self._gone():
            return None
        return outcome_of(streams, nonce)

    def _gone(self) -> bool:
        """Whether the zygote died (its socket closed, or its process ended)."""
        try:
            peeked = self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            peeked = None
        except OSError:
            return True
        if peeked == b"":
            return True
        try:
            self._proc.wait(timeout=LOST_CHECK_S)
        except subprocess.TimeoutExpired:
            return False
        return True

    def kill(self) -> None:
        """Kill the zygote and every run it has (its pid namespace dies with it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        self._proc.wait()

    def close(self) -> None:
        """Ask the zygote to end (closing its socket), and make sure it did."""
        with contextlib.suppress(OSError):
            self._sock.close()
        proc = getattr(self, "_proc", None)
        if proc is not None:
            try:
                proc.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(OSError):
            self._log.close()


class ZygotePool:
    """Zygotes lent to one run at a time, started on first use, replaced as needed.

    Zygotes are started by the pool's own threads (the parent-death signal fires when
    the thread that forked a process ends), so they outlive the worker threads of one
    :func:`~prefjudge.sandbox.run_functional` call and serve the next one; they end with
    :meth:`close`, or with prefjudge.
    """

    def __init__(
        self,
        plan: IsolationPlan,
        preload: Sequence[str] = (),
        *,
        max_runs: int = 1000,
        max_growth_mb: int = 256,
    ):
        """Prepare a pool (no zygote starts before the first run).

        Args:
            plan: The isolation plan. In ``rlimits`` mode no zygote is used.
            preload: Modules every zygote imports before forking (see
                :func:`prefjudge.sandbox.preload.modules_to_preload`).
            max_runs: Runs after which a zygote is replaced.
            max_growth_mb: Growth of a zygote's resident memory after which it is replaced.
        """
        self.plan = plan
        self.preload = list(dict.fromkeys(preload))
        self.max_runs = max_runs
        self.max_growth_mb = max_growth_mb
        self.stats = ZygoteStats()
        self.fallback: str | None = None
        if plan.mode == "rlimits":
            self.fallback = "zygotes need a namespace sandbox mode (this is rlimits)"
            self.stats.fallback = self.fallback
        self._lock = threading.Lock()
        self._idle: list[Zygote] = []
        self._all: list[Zygote] = []
        self._starters = ThreadPoolExecutor(max_workers=MAX_STARTERS,
                                            thread_name_prefix="prefjudge-zygote")
        self._closed = False

    def __enter__(self) -> ZygotePool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, payload: dict[str, Any], limits: SandboxLimits) -> RunOutcome:
        """Run ``payload`` in a child of an idle zygote (a fresh process on fallback)."""
        if self.fallback is not None:
            return run_in_sandbox(self.plan, payload, limits)
        _clean_orphans_once()
        nonce, sealed = seal(payload, limits)
        for attempt in range(2):
            zygote = self._acquire(limits)
            if zygote is None:
                return run_in_sandbox(self.plan, payload, limits)
            try:
                with UID_POOL.acquire() as uid:
                    outcome = zygote.run(sealed, nonce, limits, uid)
            except ZygoteError as exc:
                self._drop(zygote)
                self._fall_back(exc)
                return run_in_sandbox(self.plan, payload, limits)
            except BaseException:
                self._drop(zygote)
                raise
            if outcome is not None:
                self._release(zygote)
                return outcome
            with self._lock:
                self.stats.lost += 1
                self.stats.retried += attempt == 0
            self._drop(zygote)
        return RunOutcome(stage=None, result=None, timed_out=False,
                          setup_error="the sandbox zygote died twice during this run",
                          exit_code=None, signal=None, output="", output_exceeded=False,
                          supervisor_lost=False)

    def _acquire(self, limits: SandboxLimits) -> Zygote | None:
        while True:
            with self._lock:
                if self._closed:
                    raise ZygoteError("the zygote pool is closed")
                zygote = self._idle.pop() if self._idle else None
            if zygote is None:
                break
            if zygote.alive():
                return zygote
            self._drop(zygote)
        try:
            zygote = self._starters.submit(self._start, limits).result()
        except ZygoteError as exc:
            self._fall_back(exc)
            return None
        with self._lock:
            self._all.append(zygote)
            self.stats.started += 1
            self.stats.peak_rss_kb = max(self.stats.peak_rss_kb, zygote.rss_kb)
            self.stats.startup_cpu_s += float(zygote.ready.get("cpu_s") or 0.0)
            self.stats.preloaded = list(zygote.ready.get("preloaded") or [])
            self.stats.skipped.update(zygote.ready.get("skipped") or {})
        return zygote

    def _fall_back(self, exc: ZygoteError) -> None:
        """From now on, runs use fresh processes; say so once, loudly."""
        with self._lock:
            if self.fallback is None:
                self.fallback = self.stats.fallback = str(exc)
                warnings.warn(f"SANDBOX ZYGOTE UNAVAILABLE, runs use fresh processes: {exc}",
                              RuntimeWarning, stacklevel=4)

    def _start(self, limits: SandboxLimits) -> Zygote:
        """Start a zygote, leaving out (for good) preloads that start threads."""
        while True:
            with self._lock:
                preload = list(self.preload)
            try:
                return Zygote(self.plan, preload, limits)
            except ThreadedPreloadError as exc:
                with self._lock:
                    if exc.module in self.preload:
                        self.preload.remove(exc.module)
                    self.stats.skipped[exc.module] = "starts a thread at import"

    def _release(self, zygote: Zygote) -> None:
        grown = zygote.rss_kb - zygote.start_rss_kb > self.max_growth_mb * 1024
        with self._lock:
            self.stats.peak_rss_kb = max(self.stats.peak_rss_kb, zygote.rss_kb)
            retire = zygote.runs >= self.max_runs or grown or self._closed
            if not retire and zygote.alive():
                self._idle.append(zygote)
                return
            if retire and zygote.alive() and not self._closed:
                self.stats.replaced += 1
        self._drop(zygote)

    def _drop(self, zygote: Zygote) -> None:
        with self._lock:
            if zygote in self._all:
                self._all.remove(zygote)
        zygote.close()

    def close(self) -> None:
        """End every zygote of the pool (runs in progress are killed with theirs)."""
        with self._lock:
            self._closed = True
            zygotes, self._all, self._idle = self._all, [], []
        for zygote in zygotes:
            zygote.close()
        self._starters.shutdown(wait=True)
