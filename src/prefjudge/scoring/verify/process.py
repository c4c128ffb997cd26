"""Verification in a process of its own, beside a run that builds and writes records.

Scoring without unit tests is two kinds of Python work at once: verifying (planning Ruff
runs, reading their output, the checks written in Python) and turning the results into
records (building, serialising, writing them). In one process both share one interpreter
lock and each waits for the other; with verification in a second process the two use two
cores. That process runs :func:`~prefjudge.scoring.verify.engine.verify_batch` exactly as
this one would, so the results are the same (the tests and ``scripts/bench_verify.py``
compare them).

The process is ``python -m prefjudge.scoring.verify.process``, started with
:mod:`subprocess` rather than :mod:`multiprocessing`, so that it never imports the caller's
``__main__`` (a script without an ``if __name__ == "__main__"`` guard works as it would
without it). Batches go to it over its standard input and results come back over its
standard output, one pickled message each, in order. Only response texts, instruction ids
and parameters go there and only statuses and reasons come back. It loads its modules and
the taxonomy as soon as it starts, so that this overlaps whatever the caller does next; it
ends when its input closes (also when this process dies).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from prefjudge.scoring.profiles import Profile, get_profile

if TYPE_CHECKING:  # imported where used: starting the process must not wait on them
    from prefjudge.records import CheckResult
    from prefjudge.scoring.verify.engine import Item, StartedBatch
    from prefjudge.scoring.verify.prefetch import ReadAhead

_PackedItem = tuple[str, list[tuple[str, dict[str, Any]]], bool, str | None]
_PackedResult = tuple[str, dict[str, Any], str, str]


class _Ref(NamedTuple):
    """An instruction reference as verification reads it (cheaper than a pydantic model)."""

    id: str
    params: dict[str, Any]


class VerifyProcessError(RuntimeError):
    """The verification process failed or ended before it returned a batch's results."""


class PendingResults:
    """Results on their way from the process: :meth:`result` waits and unpacks them."""

    def __init__(self, future: Future[list[list[_PackedResult]]]):
        """Wrap the future the process's reader fills.

        Args:
            future: Set to the packed results, or to the process's failure.
        """
        self._future = future

    def result(self) -> list[list[CheckResult]]:
        """For each item, one CheckResult per instruction ref (as ``verify_batch``).

        Raises:
            VerifyProcessError: When the process failed or died before it finished.
        """
        from prefjudge.records import CheckResult

        packed = self.packed()
        construct = CheckResult.model_construct
        return [[construct(id=ident, params=params, status=status, reason=reason)
                 for ident, params, status, reason in row] for row in packed]

    def packed(self) -> list[list[_PackedResult]]:
        """For each item, ``(id, params, status, reason)`` per instruction ref, as sent.

        What :meth:`result` makes its models of, for a caller that needs no models.

        Raises:
            VerifyProcessError: When the process failed or died before it finished.
        """
        return self._future.result()

    def cancel(self) -> bool:
        """Give up waiting for these results (the process still verifies the batch)."""
        return self._future.cancel()


class VerifyProcess:
    """A second process that verifies batches: :meth:`submit` is ``verify_batch`` there.

    Use it as a context manager; the process ends with the block::

        with VerifyProcess(workers=2, profile="reference") as process:
            first, second = process.submit(items_1), process.submit(items_2)
            results_1 = first.result()
    """

    def __init__(self, *, workers: int | None = None, profile: str | Profile | None = None,
                 read_ahead: str | os.PathLike[str] | None = None):
        """Start the process; it loads its modules and the taxonomy at once.

        Args:
            workers: Ruff processes the verification process runs in parallel.
            profile: Verification profile, ``reference`` (default) or ``strict``.
            read_ahead: A generations file the first batches will come from: until the
                first batch arrives, the process verifies the file's likely items itself
                (:mod:`prefjudge.scoring.verify.prefetch`; results are the same either way).
        """
        self.workers = workers
        self.profile = get_profile(profile).name
        self._stderr = tempfile.TemporaryFile()  # closed in close()
        command = [sys.executable, "-m", "prefjudge.scoring.verify.process"]
        if read_ahead is not None:
            command += [os.fspath(read_ahead), self.profile, str(workers or 0)]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=_child_env(),
        )
        self._waiting: deque[Future[list[list[_PackedResult]]]] = deque()
        self._lock = threading.Lock()
        self._closed = self._finishing = False
        self._failure: str | None = None  # why it can take no more batches
        self._reach: int | None = None  # how far reading ahead got, once a reply told
        # Requests are written by a thread: a request waits in the pipe until the process
        # has finished the batch before it, and the caller should not wait with it.
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="prefjudge-verify-writer",
                                        daemon=True)
        self._reader = threading.Thread(target=self._read, name="prefjudge-verify-reader",
                                        daemon=True)
        self._writer.start()
        self._reader.start()

    def submit(self, items: Sequence[Item]) -> PendingResults:
        """Send ``(response text, instruction refs[, is_code[, code]])`` items to be verified.

        Args:
            items: As for ``verify_batch``.

        Returns:
            The pending results; batches are verified in the order submitted.

        Raises:
            VerifyProcessError: When the process is closed.
        """
        from prefjudge.scoring.verify.engine import item_code, item_is_code

        packed: list[_PackedItem] = [
            (item[0], [(ref.id, ref.params) for ref in item[1]], item_is_code(item),
             item_code(item))
            for item in items
        ]
        message = pickle.dumps((packed, self.profile, self.workers),
                               protocol=pickle.HIGHEST_PROTOCOL)
        future: Future[list[list[_PackedResult]]] = Future()
        with self._lock:
            if self._closed or self._finishing:
                raise VerifyProcessError("the verification process is closed")
            if self._failure is not None:
                future.set_exception(VerifyProcessError(self._failure))
            else:
                self._waiting.append(future)
                self._outbox.put(message)
        return PendingResults(future)

    @property
    def pid(self) -> int:
        """The process id of the verification process."""
        return self._process.pid

    @property
    def read_ahead_reach(self) -> int | None:
        """How far into its file the process read ahead, as its replies tell.

        Every line up to this one (1-based) that it could guess was verified before it was
        asked for (:attr:`~prefjudge.scoring.verify.prefetch.ReadAhead.reach`): asked for
        now, it comes back at once. 0 when it read nothing ahead; None until the first
        reply came back (the process stops reading ahead when the first batch arrives, so
        the number does not change after).
        """
        return self._reach

    def _write(self) -> None:
        """In a thread: requests to the process's input, then close it (at ``None``)."""
        stdin = self._process.stdin
        assert stdin is not None
        try:
            while (message := self._outbox.get()) is not None:
                stdin.write(message)
                stdin.flush()
        except OSError:  # it died: the reader sees its output end and reports why
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self) -> None:
        """In a thread: each reply into its waiting future; when replies end, fail the rest.

        A batch whose verification raised fails alone (with the process's traceback); the
        process goes on with the next.
        """
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            try:
                status, payload, reach = pickle.load(stdout)
            except EOFError:
                failure = self._died("it ended")
                break
            except (OSError, pickle.UnpicklingError, ValueError) as exc:
                failure = self._died(f"its output could not be read ({exc})")
                break
            with self._lock:
                future = self._waiting.popleft() if self._waiting else None
                self._reach = reach
            if future is None:
                failure = "the verification process sent results nobody asked for"
                break
            if status == "ok":
                _settle(future, result=payload)
            else:
                _settle(future, exception=VerifyProcessError(
                    f"verifying a batch failed in the verification process:\n{payload}"))
        with self._lock:
            self._failure = failure
            waiting, self._waiting = list(self._waiting), deque()
        for future in waiting:
            _settle(future, exception=VerifyProcessError(failure))

    def _died(self, how: str) -> str:
        code = self._process.wait()
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode("utf-8", "replace").strip()
        detail = f" (exit status {code})" + (f":\n{tail}" if tail else "")
        return (f"the verification process ended before it returned all results: {how}"
                f"{detail}. Records written before are kept: rerun the command to resume")

    def finish(self) -> None:
        """Take no more batches: the process ends once it has answered those asked.

        Does not wait, so that the process's end overlaps what the caller does next;
        :meth:`close` waits for it.
        """
        with self._lock:
            if self._finishing:
                return
            self._finishing = True
            self._outbox.put(None)

    def close(self) -> None:
        """End the process (results not yet returned are given up) and wait for it."""
        self.finish()
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._writer.join()
        self._reader.join()
        self._process.wait()
        self._stderr.close()

    def __enter__(self) -> VerifyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _child_env() -> dict[str, str]:
    """This environment, with the folder prefjudge was imported from first on the path.

    The process must import the same prefjudge as this one, also when it was found through
    a path set at run time rather than an installation.
    """
    import prefjudge

    here = str(Path(prefjudge.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": here + (os.pathsep + path if path else "")}


def _settle(future: Future[Any], *, result: Any = None,
            exception: BaseException | None = None) -> None:
    """Set a future's outcome unless its waiter gave up on it."""
    if not future.set_running_or_notify_cancel():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)


def verify_packed(
    packed: list[_PackedItem], profile: str, workers: int | None
) -> list[list[_PackedResult]]:
    """Verify one batch of packed items and pack the results (what the process does).

    Args:
        packed: ``(response text, [(instruction id, parameters), ...], is_code, code)``
            per item.
        profile: Verification profile name.
        workers: Ruff processes run in parallel.

    Returns:
        ``(id, params, status, reason)`` per check, per item.
    """
    return start_packed(packed, profile, workers).finish()


class StartedPacked:
    """A batch of packed items being verified: :meth:`finish` gives its packed results."""

    def __init__(self, started: StartedBatch) -> None:
        self._started = started

    def finish(self) -> list[list[_PackedResult]]:
        """Wait for the batch: ``(id, params, status, reason)`` per check, per item."""
        return [[(check.id, check.params, check.status, check.reason) for check in row]
                for row in self._started.finish()]


def start_packed(packed: list[_PackedItem], profile: str, workers: int | None) -> StartedPacked:
    """Start verifying one batch of packed items (:func:`verify_packed` in two steps).

    Args:
        packed: As for :func:`verify_packed`.
        profile: Verification profile name.
        workers: Ruff processes run in parallel.

    Returns:
        The started batch (its Python checks done, its Ruff runs going on).
    """
    from prefjudge.scoring.verify.engine import start_verify_batch

    items: list[Item] = [
        (text, [_Ref(ident, params) for ident, params in refs], is_code, code)
        for text, refs, is_code, code in packed]
    return StartedPacked(start_verify_batch(items, workers=workers, profile=profile))


def serve(requests: BinaryIO, replies: BinaryIO, read_ahead: list[str] | None = None) -> None:
    """The process's loop: verify each batch read from ``requests``, until it closes.

    Batches overlap: the next batch, when one is waiting, is started (its Ruff runs begun,
    its Python checks done) before this one's Ruff runs are waited for, so that Python
    checks and Ruff run side by side. Replies still go out one per request, in order.

    Args:
        requests: Pickled ``(packed items, profile, workers)`` messages.
        replies: Where ``("ok", results, reach)`` or ``("error", traceback, reach)`` go, one
            per request (``reach``: how far reading ahead got, :class:`ReadAhead`'s).
        read_ahead: ``[generations file, profile, workers]`` to verify ahead until the
            first request arrives (:class:`~prefjudge.scoring.verify.prefetch.ReadAhead`).
    """
    from prefjudge.scoring.taxonomy import load_taxonomy
    from prefjudge.scoring.verify.prefetch import ReadAhead

    load_taxonomy()  # before the first batch arrives
    ahead = ReadAhead(start_packed, read_ahead[1] if read_ahead else "")
    if read_ahead:
        with contextlib.suppress(Exception):  # a guess gone wrong is only time lost
            ahead.read_ahead(read_ahead[0], int(read_ahead[2]) or None, requests)
    inbox = _Inbox(requests)
    in_flight: _Answer | None = None
    while True:
        message = inbox.take(wait=in_flight is None)
        if message is _Inbox.NOTHING_YET:
            assert in_flight is not None
            in_flight.send(replies, ahead.reach)
            in_flight = None
            continue
        if message is None or isinstance(message, BaseException):  # input ended or broke
            if in_flight is not None:  # the batch before is answered first, as it was asked
                in_flight.send(replies, ahead.reach)
            if message is None:
                return
            raise message
        packed, profile, workers = message
        started = _Answer.start(ahead, packed, profile, workers)
        if in_flight is not None:
            in_flight.send(replies, ahead.reach)
        in_flight = started


class _Answer:
    """A request being answered: its batch started, or the traceback of why it could not."""

    def __init__(self, started: Any = None, failure: str | None = None) -> None:
        self._started, self._failure = started, failure

    @classmethod
    def start(cls, ahead: ReadAhead, packed: list[_PackedItem], profile: str,
              workers: int | None) -> _Answer:
        import traceback

        try:
            return cls(ahead.start(packed, profile, workers))
        except Exception:  # reported to the caller, which raises it there
            return cls(failure=traceback.format_exc())

    def send(self, replies: BinaryIO, reach: int) -> None:
        """Wait for the batch's results and write the reply."""
        import traceback

        reply: tuple[str, Any] = ("error", self._failure)
        if self._failure is None:
            try:
                reply = ("ok", self._started.finish())
            except Exception:  # reported to the caller, which raises it there
                reply = ("error", traceback.format_exc())
        pickle.dump((*reply, reach), replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


class _Inbox:
    """The process's requests, read by a thread as they come (the loop looks without waiting)."""

    NOTHING_YET = object()

    def __init__(self, requests: BinaryIO) -> None:
        self._messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._requests = requests
        threading.Thread(target=self._read, name="prefjudge-verify-inbox", daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                self._messages.put(pickle.load(self._requests))
        except EOFError:
            self._messages.put(None)
        except BaseException as exc:  # raised by the loop, in its own thread
            self._messages.put(exc)

    def take(self, *, wait: bool) -> Any:
        """The next request.

        Returns:
            The request; None once the input ended; what reading it raised, when it
            could not be read; :data:`NOTHING_YET` when none is waiting and ``wait`` is
            False.
        """
        try:
            return self._messages.get(block=wait)
        except queue.Empty:
            return self.NOTHING_YET


def _main() -> None:
    # Replies get a descriptor of their own; anything else printed goes to stderr.
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from prefjudge.lazy import collector_paused

    # Verifying, reading ahead and (un)pickling make no garbage cycles (a failed batch's
    # traceback may: the run stops at it): the collector would only walk what is alive.
    try:
        with collector_paused():
            serve(sys.stdin.buffer, replies, sys.argv[1:4] or None)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the caller reports
        os._exit(130)
    # Its work is done: the exit's garbage collections need not walk what is left alive
    # (the caller waits for this process to end).
    import gc

    gc.freeze()


if __name__ == "__main__":
    _main()
