"""The ``openai`` backend: any OpenAI-compatible HTTP endpoint through the official client.

This is how prefjudge reaches a ``vllm serve`` deployment, OpenAI itself, or any compatible
server. Requests run concurrently on asyncio (bounded by ``max_concurrency``); timeouts,
connection errors, 429, 5xx and malformed response bodies are retried with exponential
backoff, honouring ``Retry-After``. ``timeout`` is a deadline for a whole HTTP call
(connect, send, and every byte of the reply), so a server that trickles bytes or never ends
its body cannot stall a run. Structured requests send the standard
``response_format={"type": "json_schema", ...}``.

Connections: the backend keeps one event loop and each replica's clients for its whole
life (:class:`_Session`), so the calls of every batch (``prefjudge judge`` sends one per
chunk of pairs) reuse the connections earlier batches opened instead of opening new ones;
the clients keep ``max_concurrency`` connections idle between batches and open new ones
a few at a time (:mod:`prefjudge.backends.connections`). Opening hundreds of connections
at once per batch cost CPU on both sides and overflowed the accept queue of servers with
a short listen backlog (reset connections, retried).

Replicas: ``base_url`` may list several servers of one model (``vllm serve`` replicas, a
data-parallel deployment's front ends). Each has its own client and its own
``max_concurrency`` slots (:class:`_ReplicaPool`); every call goes to the least-loaded
replica that is up (fewest calls in flight, ties to the one given first). A replica whose
call fails with a connection error, a timeout or a 5xx is left alone for a cool-down (the
backoff delay, doubling while it keeps failing) and the call is retried on another one,
at once when one has a free slot: the same retry budget (``max_retries``) covers every
replica. The cache key names the set of replicas, never the one that answered (see
``BackendBase.identity``); which one answered is in ``Result.endpoint`` and the run's
summary (:attr:`OpenAIBackend.notice`).

Dead endpoints: until a replica has answered once, a refused connection or a host name
that does not resolve marks it unreachable, and when every replica is, the batch stops at
once with a :class:`BackendError` naming the URLs and the model (no backoff: nothing
listens there). 401, 403 and 404 stop it too, from any replica (a bad key or URL), with a
hint (the key's variable; ``is base_url missing /v1?``). Once a replica has answered, its
connection errors are retried as any others (it may be restarting). And a server that
fails every call stops the backend after ``max_failure_streak`` failed calls in a row
(:class:`~prefjudge.backends.base.FailureStreak`) instead of costing every request its
whole retry budget.

Hostile servers: a reply is untrusted bytes. Its body is read as it arrives and refused
past :data:`~prefjudge.backends.connections.MAX_BODY` bytes decoded (a compressed bomb, an
endless body), and its JSON is read here, not by the SDK (:func:`parse_reply`): at most
:data:`MAX_JSON_VALUES` values, nesting refused past the interpreter's recursion limit,
and numbers no float can hold (``1e400``) or ``NaN`` refused. Each is that request's
malformed response, retried as such; the other requests go on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import json
import math
import os
import random
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit, urlunsplit

from prefjudge.backends.base import (
    AttemptState,
    BackendBase,
    BackendError,
    Call,
    CallFailure,
    Completion,
    FailureStreak,
    OnResult,
    Request,
    Result,
)
from prefjudge.backends.cache import ResponseCache
from prefjudge.backends.connections import (
    http_client,
    replica_clients,
    root_cause,
    unreachable_reason,
)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
FATAL_STATUS = frozenset({401, 403, 404})
NO_KEY = "EMPTY"
OPENAI_URL = "https://api.openai.com/v1"

T = TypeVar("T")
Work = Callable[[list[Any]], Awaitable[T]]
"""A batch's coroutine, given the replicas' clients (in ``OpenAIBackend.replicas`` order)."""


#: JSON values (counted as commas and opening brackets, strings' included) a reply's body
#: may hold: a chat completion has tens. Each costs up to ~100 bytes once parsed, so this
#: bounds what a body of many tiny values (``[{},{},...]``, 24 times its size) costs.
MAX_JSON_VALUES = 100_000
#: Bytes the text of a reply's body may take in memory, twice (the body decoded, and the
#: strings read from it): a body whose characters need more (wide ones, 2 or 4 bytes
#: each in a Python string, e.g. one emoji among 16 MiB of text) is refused.
MAX_TEXT_BYTES = 40 << 20
#: Characters a Python string stores in more than one byte: raw (UTF-8 lead bytes of
#: U+0100 and above) or escaped (``\\uXXXX`` past U+00FF).
_WIDE = re.compile(rb"[\xc4-\xf4]|\\u(?!00)")
#: Characters stored in four bytes: raw (4-byte UTF-8) or escaped (a surrogate pair).
_ASTRAL = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")
#: What reading a malformed reply may raise, besides the SDK's own errors: ours and the
#: client's hook's (``ValueError``), and the JSON reader's (``ValueError``,
#: ``RecursionError``, ``ArithmeticError``). Each is that request's malformed response.
REPLY_ERRORS: tuple[type[Exception], ...] = (ValueError, RecursionError, ArithmeticError)


class MalformedResponse(ValueError):
    """A 2xx response whose body is not a usable chat completion (retried like a 5xx)."""


def parse_reply(body: bytes) -> Any:
    """Read a reply's JSON defensively: bounded work and memory, no exception but ours.

    The body is already at most :data:`~prefjudge.backends.connections.MAX_BODY` bytes.

    Args:
        body: The reply's body as received (decoded from its content coding).

    Returns:
        The JSON value (of any type; :func:`_completion_of` checks its shape).

    Raises:
        MalformedResponse: For more than :data:`MAX_JSON_VALUES` values, text that would
            take over :data:`MAX_TEXT_BYTES` (counted twice), nesting past the
            recursion limit, ``NaN``/``Infinity``, a number out of a float's range, or
            anything that is not JSON (invalid UTF-8 included).
    """
    values = body.count(b",") + body.count(b"[") + body.count(b"{")
    if values > MAX_JSON_VALUES:
        raise MalformedResponse(f"the body holds over {MAX_JSON_VALUES:,} JSON values")
    width = _char_width(body)
    if 2 * width * len(body) > MAX_TEXT_BYTES:
        raise MalformedResponse(
            f"the body's text would take over {MAX_TEXT_BYTES >> 20} MiB "
            f"({len(body):,} bytes of characters up to {width} bytes wide)"
        )
    try:
        return json.loads(body, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError as exc:
        raise MalformedResponse("the body's JSON nests deeper than the recursion limit") from exc
    except MalformedResponse:
        raise
    except ValueError as exc:  # not JSON, invalid UTF-8, an integer of 4,300+ digits
        raise MalformedResponse(f"the body is not JSON: {str(exc)[:200]}") from exc


def _char_width(body: bytes) -> int:
    """Bytes per character of the widest string read from ``body`` may need: 1, 2 or 4."""
    if _WIDE.search(body) is None:
        return 1
    return 4 if _ASTRAL.search(body) is not None else 2


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent; one no float can hold is refused."""
    value = float(text)
    if not math.isfinite(value):
        raise MalformedResponse(f"the body holds a number out of range: {text[:40]}")
    return value


def _no_constant(name: str) -> float:
    """``NaN``, ``Infinity``, ``-Infinity``: not JSON, refused."""
    raise MalformedResponse(f"the body holds {name}, which is not JSON")


def normalize_base_url(base_url: str | None) -> str:
    """Return the endpoint as it identifies answers in the cache.

    Args:
        base_url: ``--base-url``; None means what the ``openai`` client uses then:
            ``$OPENAI_BASE_URL``, else OpenAI's own API.

    Returns:
        The URL with surrounding spaces and trailing slashes removed and the scheme and
        host lower-cased, e.g. ``http://127.0.0.1:8000/v1``.
    """
    url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).strip()
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        url = urlunsplit(
            (parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment)
        )
    return url.rstrip("/")


def replica_urls(base_url: str | Sequence[str] | None) -> list[str]:
    """Return the replicas' URLs as given: none (OpenAI's default), one, or several.

    Args:
        base_url: ``--base-url`` (repeatable): None, one URL, or a list of URLs.

    Returns:
        The URLs in the order given (an empty list for None).

    Raises:
        ValueError: When the list is empty or names one endpoint twice (after
            :func:`normalize_base_url`: ``http://H/v1/`` and ``http://h/v1`` are one).
    """
    if base_url is None:
        return []
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    if not urls:
        raise ValueError("no base URL given (give at least one, or none for the default)")
    seen: dict[str, str] = {}
    for url in urls:
        if not isinstance(url, str) or not url.strip():
            raise ValueError(f"not a base URL: {url!r}")
        key = normalize_base_url(url)
        if key in seen:
            raise ValueError(f"{url!r} and {seen[key]!r} are the same endpoint; give it once")
        seen[key] = url
    return urls


def endpoint_identity(base_url: str | Sequence[str] | None, endpoint_id: str | None = None) -> str:
    """Return the endpoint as the cache keys and output bindings know it.

    One URL: its normalised form (what every earlier prefjudge used, so existing caches
    keep answering). Several replicas: their normalised URLs, sorted and joined by
    ``", "``, so that neither the order they were given in nor which replica answered
    changes a key. ``endpoint_id`` (``--endpoint-id``) replaces either: a name for the
    deployment, e.g. to keep one identity while replicas come and go.

    Args:
        base_url: None, one URL, or the replicas' URLs.
        endpoint_id: An explicit identity (normalised like a URL when it is one).

    Returns:
        The endpoint identity.
    """
    if endpoint_id is not None and endpoint_id.strip():
        return normalize_base_url(endpoint_id)
    urls = replica_urls(base_url)
    if len(urls) <= 1:
        return normalize_base_url(urls[0] if urls else None)
    return ", ".join(sorted(normalize_base_url(url) for url in urls))


def parse_retry_after(headers: Any) -> float | None:
    """Read a server's requested delay from ``Retry-After`` / ``retry-after-ms`` headers.

    Args:
        headers: A mapping of response headers (case-insensitive lookups tried both ways).

    Returns:
        Seconds to wait, or None when the headers say nothing usable.
    """
    if headers is None:
        return None

    def header(name: str) -> str | None:
        value = headers.get(name)
        return value if value is not None else headers.get(name.title())

    ms = header("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = header("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class Replica:
    """One server of the model, and what it did over the backend's lifetime.

    Attributes:
        url: The base URL as given (None: the ``openai`` client's default).
        endpoint: Its normalised form (the ``Result.endpoint`` of the replies it gave).
        calls: HTTP calls sent to it.
        answered: Calls it answered (a reply, a refusal or a rejection such as a 400).
        failed: Calls that failed (timeouts, connection errors, 429, 5xx, malformed bodies).
        failures_in_a_row: Connection errors, timeouts and 5xx since its last answer; its
            cool-down doubles with each.
        down_until: ``time.monotonic()`` before which no call goes to it while another
            replica is up.
        unreachable: Why no connection could be made to it (refused, unknown host), while
            it has never answered; None once it has, or while nothing says it is dead.
    """

    url: str | None
    endpoint: str
    calls: int = 0
    answered: int = 0
    failed: int = 0
    failures_in_a_row: int = 0
    down_until: float = 0.0
    unreachable: str | None = None

    @property
    def where(self) -> str:
        """The URL as given, or the one the client uses when none was given."""
        return self.url or self.endpoint


@dataclass
class _ReplicaPool:
    """The replicas during one ``generate`` call: their clients, slots and dispatch.

    Each replica has ``limit`` slots (its own semaphore, in effect). :meth:`acquire` takes
    a slot on the least-loaded replica that is up (fewest calls in flight; ties go to the
    replica given first, so dispatch is deterministic). When none has a free slot the
    caller waits in one queue, first come first served, and each freed slot goes to the
    first waiter that may use it. A retry gives its slot back and comes to the front of
    the queue, preferring another replica than the one that failed it. With one replica
    this is exactly one semaphore of ``limit`` held for a whole call, backoff included.

    A replica is down (skipped while another is up) for a cool-down after a connection
    error, a timeout or a 5xx: ``backoff_base`` doubled per failure in a row, at most
    ``backoff_max``. When every replica is down, calls go to them all as usual.

    Every answer also ends the backend's ``streak`` of failed calls.
    """

    replicas: list[Replica]
    clients: list[Any]
    limit: int
    backoff_base: float
    backoff_max: float
    streak: FailureStreak | None = None
    stopped: bool = False
    inflight: list[int] = field(init=False)
    waiters: deque[tuple[asyncio.Future[int], int | None]] = field(default_factory=deque)
    timers: dict[int, asyncio.TimerHandle] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.inflight = [0] * len(self.replicas)

    def _up(self) -> list[int]:
        now = time.monotonic()
        return [i for i, replica in enumerate(self.replicas) if replica.down_until <= now]

    def _choice(self, avoid: int | None = None) -> int | None:
        """The replica the next call goes to now, or None when it has to wait."""
        pool = self._up() or list(range(len(self.replicas)))
        if avoid is not None and avoid in pool and len(pool) > 1:
            pool.remove(avoid)
        free = [i for i in pool if self.inflight[i] < self.limit]
        return min(free, key=lambda i: (self.inflight[i], i)) if free else None

    def other_free(self, index: int) -> bool:
        """Whether another replica than ``index`` is up and has a free slot now."""
        return any(i != index and self.inflight[i] < self.limit for i in self._up())

    async def acquire(self, *, held: int | None = None) -> int:
        """Take a slot and return its replica's index.

        Args:
            held: A retry's slot: given back first, and its replica avoided while another
                is up (kept when it is the only choice, e.g. with one replica).

        Returns:
            The replica's index; :meth:`release` it when the call is over.
        """
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if held is None:
            self.waiters.append((future, None))
        else:
            self.inflight[held] -= 1
            self.waiters.appendleft((future, held))
        self._dispatch()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(future.result())
            future.cancel()  # a waiter that is gone: dropped from the queue at its turn
            raise

    def release(self, index: int) -> None:
        """Give back a slot taken with :meth:`acquire`."""
        self.inflight[index] -= 1
        self._dispatch()

    def stop(self) -> None:
        """Give no more slots: the batch is over (a fatal error), its waiters are cancelled."""
        self.stopped = True

    def _dispatch(self) -> None:
        """Give the free slots to the first waiters that may use them (none once stopped)."""
        while not self.stopped and self.waiters and self._choice() is not None:
            found = self._next_waiter()
            if found is None:
                return  # the free slots are on replicas that every waiter avoids
            position, index = found
            future, _ = self.waiters[position]
            del self.waiters[position]
            if index is not None:
                self.inflight[index] += 1
                future.set_result(index)

    def _next_waiter(self) -> tuple[int, int | None] | None:
        """The first waiter that is gone (no slot) or may take a free slot now (that slot)."""
        for position, (future, avoid) in enumerate(self.waiters):
            if future.done():
                return position, None
            index = self._choice(avoid)
            if index is not None:
                return position, index
        return None

    def answered(self, index: int) -> None:
        """Record that a replica answered (it is up)."""
        replica = self.replicas[index]
        replica.answered += 1
        replica.failures_in_a_row = 0
        replica.down_until = 0.0
        replica.unreachable = None
        if self.streak is not None:
            self.streak.answered()

    def failed(self, index: int, *, down: bool) -> None:
        """Record a failed call; ``down``: a connection error, timeout or 5xx."""
        replica = self.replicas[index]
        replica.failed += 1
        if not down or len(self.replicas) < 2:
            return
        replica.failures_in_a_row += 1
        steps = min(replica.failures_in_a_row - 1, 30)
        cool_down = min(self.backoff_max, self.backoff_base * 2**steps)
        replica.down_until = time.monotonic() + cool_down
        if index in self.timers:
            self.timers[index].cancel()  # its cool-down now ends later
        self.timers[index] = asyncio.get_running_loop().call_later(cool_down, self._dispatch)
        self._dispatch()  # when every replica is down now, waiters may go to any of them

    def close(self) -> None:
        """Cancel the timers that would wake waiters when a replica's cool-down ends."""
        for timer in self.timers.values():
            timer.cancel()


class _Session:
    """One event loop for the backend's whole life, and the replicas' clients on it.

    ``asyncio.run`` per batch would close the loop, and with it every connection, after
    each ``generate`` call. The loop is an :class:`asyncio.Runner` (Ctrl-C cancels the
    batch as under ``asyncio.run``); the clients are made on first use and closed by
    :meth:`close`. One batch at a time: :meth:`run` returns None without running anything
    when another thread's batch holds the session (or in a forked child, whose copy of
    the parent's connections it must not use), and the caller runs that batch on a loop
    of its own.

    Args:
        make_clients: Returns one new client per replica.
    """

    def __init__(self, make_clients: Callable[[], list[Any]]):
        self._make_clients = make_clients
        self._runner: Any = asyncio.Runner()  # type: ignore[attr-defined]
        self._clients: list[Any] | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def run(self, work: Work[T]) -> tuple[T] | None:
        """Run one batch on the kept loop and clients.

        Args:
            work: The batch, given the clients.

        Returns:
            ``(its result,)``, or None when the session is busy or not this process's.
        """
        if os.getpid() != self._pid or not self._lock.acquire(blocking=False):
            return None
        try:
            return (_off_running_loop(lambda: self._runner.run(self._with_clients(work))),)
        finally:
            self._lock.release()

    async def _with_clients(self, work: Work[T]) -> T:
        if self._clients is None:
            self._clients = self._make_clients()
        return await work(self._clients)

    def close(self) -> None:
        """Close the clients (their connections) and the loop."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            clients, self._clients = self._clients, None

            async def close_clients() -> None:
                await asyncio.gather(*(client.close() for client in clients or []))

            try:
                if clients:
                    _off_running_loop(lambda: self._runner.run(close_clients()))
            finally:
                _off_running_loop(self._runner.close)


class OpenAIBackend(BackendBase):
    """Chat completions over HTTP with the official ``openai`` client.

    Args:
        model: Model name the server serves (``--model``).
        base_url: Endpoint, e.g. ``http://127.0.0.1:8000/v1``; None means OpenAI's. A list
            of URLs names replicas of one model (``--base-url`` given several times): each
            call goes to the least-loaded one, and a failed call is retried on another.
        api_key_env: Name of the environment variable holding the API key. A local
            endpoint (``base_url`` set) works without one.
        api_key: The key itself (overrides ``api_key_env``; for tests and embedding).
        model_id: Model name in results and cache keys; defaults to ``model``. The endpoint
            (``base_url``) is part of every cache key already, so the same name on two
            servers never shares answers; set ``model_id`` when one URL serves different
            weights over time under the same name (e.g. a server restarted with another
            checkpoint), which nothing else can tell apart.
        endpoint_id: The endpoint as cache keys and output bindings know it, instead of
            the URL (or the replicas' sorted URLs); see :func:`endpoint_identity`.
        cache: Response cache, or None for no caching.
        max_concurrency: Most requests in flight at once, per replica.
        timeout: Deadline in seconds for one whole HTTP call (connect, send and the complete
            reply); a call past it is abandoned and retried like any timeout.
        max_retries: Transport retries per call (timeouts, connection errors, 429, 5xx), on
            whichever replicas they go to.
        max_failure_streak: Calls failed in a row (each after its retries) with no answer
            in between that stop the backend with a :class:`BackendError`; 0 never stops.
        backoff_base: First backoff delay in seconds (doubles per retry, with jitter); also
            the first cool-down of a failing replica.
        backoff_max: Longest single wait, ``Retry-After`` included, and longest cool-down.
        max_output_retries: Repair attempts for a structured reply that fails validation.
        strict_schema: Send ``"strict": true`` with the JSON schema (OpenAI's strict mode
            needs every property required and ``additionalProperties: false``).
        extra_body: Extra JSON fields for every request (part of the cache key).

    Raises:
        BackendError: Without an API key for OpenAI's own endpoint, or when ``base_url``
            is an empty list or names one endpoint twice.
        ValueError: When ``max_concurrency`` is below 1 or ``max_failure_streak`` below 0.
    """

    kind: ClassVar[str] = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | Sequence[str] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        model_id: str | None = None,
        endpoint_id: str | None = None,
        cache: ResponseCache | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 6,
        max_failure_streak: int = 20,
        backoff_base: float = 0.5,
        backoff_max: float = 60.0,
        max_output_retries: int = 2,
        strict_schema: bool = False,
        extra_body: dict[str, Any] | None = None,
    ):
        super().__init__(
            model_id=model_id or model, cache=cache, max_output_retries=max_output_retries
        )
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise BackendError(
                "the openai backend needs the `openai` package: pip install 'prefjudge[backends]'"
            ) from exc
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        try:
            urls = replica_urls(base_url)
        except ValueError as exc:
            raise BackendError(f"--base-url: {exc}") from exc
        key = api_key or os.environ.get(api_key_env)
        if not key:
            if not urls:
                raise BackendError(
                    f"no API key: set the environment variable {api_key_env} "
                    "(or name another one with --api-key-env)"
                )
            key = NO_KEY
        self.model = model
        self.base_url = base_url
        self.replicas = [Replica(url, normalize_base_url(url)) for url in urls or [None]]
        self.endpoint = endpoint_identity(base_url, endpoint_id)
        self._api_key = key
        self.api_key_env = api_key_env
        self._key_given = api_key is not None
        self.streak = FailureStreak(max_failure_streak)
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.strict_schema = strict_schema
        self.extra_body = dict(extra_body or {})
        self._session: _Session | None = None

    def output_options(self) -> dict[str, Any]:
        """Settings that change outputs: strict schema mode and extra request fields."""
        return {"strict": self.strict_schema, "extra_body": self.extra_body}

    def _endpoint_identity(self) -> str:
        return self.endpoint

    @property
    def notice(self) -> str | None:  # type: ignore[override]
        """With several replicas, the calls each answered: shown in the run's summary.

        Which replica answered is provenance of the run, not of its records: a record is
        the same whichever replica gave it (and a cached one came from none), so records
        and cache keys never name it. None with one endpoint, or before any call.
        """
        if len(self.replicas) < 2 or not any(r.calls for r in self.replicas):
            return None
        parts = []
        for replica in self.replicas:
            part = f"{replica.endpoint} answered {replica.answered} of {replica.calls} call(s)"
            if replica.failed:
                part += f" ({replica.failed} failed)"
            parts.append(part)
        return f"{len(self.replicas)} replicas: " + "; ".join(parts)

    # -- public ----------------------------------------------------------------------------

    def generate(
        self, requests: Sequence[Request], *, on_result: OnResult | None = None
    ) -> list[Result]:
        """Answer every request concurrently; see :meth:`Backend.generate`.

        Results come back in request order whichever replica answered each.

        Raises:
            BackendError: On 401/403/404 from any replica (bad key, forbidden, unknown model
                or URL); when no replica could ever be reached (connection refused, unknown
                host) before one answered; or after ``max_failure_streak`` failed calls in
                a row. Requests finished before it have had their ``on_result``.
        """
        if not requests:
            return []
        batch = list(requests)
        return self._run(lambda clients: self._generate(batch, clients, on_result))

    def close(self) -> None:
        """Close the connections and the event loop, then the cache."""
        session, self._session = self._session, None
        try:
            if session is not None:
                session.close()
        finally:
            super().close()

    def list_models(self) -> list[str]:
        """Return the model names the endpoint lists (``GET /models``).

        With several replicas: the names every replica lists, in the first one's order.

        Raises:
            BackendError: When an endpoint cannot be reached or refuses.
        """

        async def one(url: str | None) -> list[str]:
            import openai

            client = self._client(url, http_client(url, 1))
            try:
                page = await asyncio.wait_for(client.models.list(), self.timeout)
                return [m.id for m in page.data]
            except asyncio.TimeoutError as exc:
                raise BackendError(
                    f"cannot list models at {self._where(url)}: no answer in {self.timeout:g} s"
                ) from exc
            except openai.APIStatusError as exc:
                raise BackendError(
                    f"cannot list models: {self._refusal(url, exc.status_code, _error_detail(exc))}"
                ) from exc
            except openai.APIConnectionError as exc:
                reason = unreachable_reason(exc, url)
                if reason is None:
                    raise BackendError(f"cannot list models at {self._where(url)}: {exc}") from exc
                raise BackendError(self._unreachable([(self._where(url), reason)])) from exc
            except (openai.OpenAIError, TypeError, AttributeError, *REPLY_ERRORS) as exc:
                detail = f"{type(exc).__name__}: {str(exc)[:300]}"
                raise BackendError(f"cannot list models at {self._where(url)}: {detail}") from exc
            finally:
                await client.close()

        async def run() -> list[str]:
            listed = [await one(replica.url) for replica in self.replicas]
            return [name for name in listed[0] if all(name in other for other in listed[1:])]

        return _run_sync(run())

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _where(url: str | None) -> str:
        """The endpoint's URL as given, or the one the client uses when none was given."""
        return url or normalize_base_url(None)

    def _unreachable(self, dead: Sequence[tuple[str, str]]) -> str:
        """The message of endpoints no connection could be made to: ``(URL, reason)`` each."""
        if len(dead) == 1:
            url, reason = dead[0]
            return f"the openai backend cannot reach {url} (model {self.model!r}): {reason}"
        each = "; ".join(f"{url}: {reason}" for url, reason in dead)
        return f"the openai backend cannot reach any of its replicas (model {self.model!r}): {each}"

    def _refusal(self, url: str | None, status: int, detail: str) -> str:
        """The message of a 401, 403 or 404: the URL, the model, and what to check."""
        where = self._where(url)
        message = f"{where} answered {status} for model {self.model!r}: {detail}"
        if status == 404 and not urlsplit(where).path.rstrip("/").endswith("/v1"):
            return f"{message}; is base_url missing /v1?"
        if status in (401, 403):
            if self._key_given:
                return f"{message}; the API key given was refused"
            if self._api_key == NO_KEY:
                return (
                    f"{message}; no API key was sent: set ${self.api_key_env} (or name "
                    "another variable with --api-key-env)"
                )
            return f"{message}; the key in ${self.api_key_env} was refused"
        return message

    def _check_reachable(
        self, replica: Replica, replicas: Sequence[Replica], exc: Exception
    ) -> str:
        """Note a connection error; stop when no replica was ever reachable.

        Args:
            replica: The replica the call went to.
            replicas: Every replica.
            exc: The connection error.

        Returns:
            What to say of the failed call (it is retried as usual).

        Raises:
            BackendError: When every replica is unreachable (refused or an unknown host)
                and none has answered yet.
        """
        reason = unreachable_reason(exc, replica.url)
        if reason is not None and not replica.answered:
            replica.unreachable = reason
            if all(r.unreachable is not None for r in replicas):
                dead = [(r.where, r.unreachable or "") for r in replicas]
                raise BackendError(self._unreachable(dead)) from exc
        return f"connection failed: {reason or root_cause(exc)}"

    def _client(self, base_url: str | None, http: Any = None) -> Any:
        import openai

        return openai.AsyncOpenAI(
            base_url=base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            max_retries=0,
            http_client=http,
        )

    def _clients(self) -> list[Any]:
        """Each replica's clients (:func:`~prefjudge.backends.connections.replica_clients`)."""
        return [
            replica_clients(
                lambda http, url=replica.url: self._client(url, http),
                replica.url,
                self.max_concurrency,
            )
            for replica in self.replicas
        ]

    def _run(self, work: Work[T]) -> T:
        """Run a batch on the kept session; on a loop and clients of its own when it is busy.

        Python 3.10 has no :class:`asyncio.Runner`: each batch has its own loop and clients.
        """
        if self._session is None and hasattr(asyncio, "Runner"):
            self._session = _Session(self._clients)
        done = None if self._session is None else self._session.run(work)
        if done is not None:
            return done[0]

        async def alone() -> T:
            clients = self._clients()
            try:
                return await work(clients)
            finally:
                await asyncio.gather(*(client.close() for client in clients))

        return _run_sync(alone())

    async def _generate(
        self, requests: list[Request], clients: list[Any], on_result: OnResult | None
    ) -> list[Result]:
        pool = _ReplicaPool(
            replicas=self.replicas,
            clients=clients,
            limit=self.max_concurrency,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
            streak=self.streak,
        )

        async def one(request: Request) -> Result:
            state = AttemptState(self, request)
            while state.result is None:
                completion = self._lookup(state.call)
                if completion is None:
                    outcome = await self._complete(pool, state.call)
                    if isinstance(outcome, CallFailure):
                        state.fail(outcome)
                        break
                    completion = outcome
                state.take(completion)
            assert state.result is not None
            if on_result is not None:
                on_result(state.result)
            return state.result

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            pool.close()

    def _request_body(self, call: Call) -> dict[str, Any]:
        """The JSON body of one chat completion (``extra_body`` merged in, as the SDK does)."""
        request = call.request
        sampling = request.sampling
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": call.messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        seed = request.effective_seed()
        if seed is not None:
            kwargs["seed"] = seed
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        schema = request.json_schema()
        if schema is not None:
            json_schema: dict[str, Any] = {"name": request.response_format_name(), "schema": schema}
            if self.strict_schema:
                json_schema["strict"] = True
            kwargs["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        return {**kwargs, **self.extra_body}

    async def _complete(self, pool: _ReplicaPool, call: Call) -> Completion | CallFailure:
        """One call with transport retries; never raises for per-request problems.

        Each HTTP call gets ``timeout`` seconds in all. A 2xx response with a malformed body
        (truncated or not JSON, no choices, wrong types) is retried like a 5xx: it is most
        often a cut connection or a proxy's error page. Every attempt takes a slot from
        ``pool``; a retry goes to another replica when there is one, at once when one is
        up with a free slot, else after the backoff (which keeps the failed slot, as one
        replica's semaphore always did).

        The body goes with the client's ``post`` (the SDK's way to send a request as it
        is): ``chat.completions.create`` would first walk the whole body, response schema
        included, through its parameter transform, which took longer than the rest of
        the SDK's work per call, to send the same bytes. The reply comes back as the
        HTTP response (its body read, bounded, by the client's hook) and its JSON is read
        by :func:`parse_reply`, not by the SDK.
        """
        import httpx2
        import openai

        body = self._request_body(call)
        last = "no attempt made"
        several = len(pool.replicas) > 1
        tried: set[str] = set()
        index: int | None = await pool.acquire()
        try:
            for attempt in range(self.max_retries + 1):
                replica = pool.replicas[index]
                replica.calls += 1
                retry_after: float | None = None
                down = True  # a connection error, a timeout or a 5xx: the replica's fault
                try:
                    response = await _within(
                        self.timeout,
                        pool.clients[index].post(
                            "/chat/completions", body=body, cast_to=httpx2.Response
                        ),
                    )
                    outcome = _completion_of(parse_reply(response.content))
                except (asyncio.TimeoutError, openai.APITimeoutError):
                    last = f"timed out after {self.timeout:g} s"
                except openai.APIConnectionError as exc:
                    last = self._check_reachable(replica, pool.replicas, exc)
                except openai.APIStatusError as exc:
                    status = exc.status_code
                    detail = _error_detail(exc)
                    if status in FATAL_STATUS:
                        raise BackendError(self._refusal(replica.url, status, detail)) from exc
                    if status not in RETRYABLE_STATUS and status < 500:
                        pool.answered(index)
                        return CallFailure("rejected", f"HTTP {status}: {detail}")
                    last = f"HTTP {status}: {detail}"
                    retry_after = parse_retry_after(exc.response.headers)
                    down = status >= 500
                except (openai.APIError, *REPLY_ERRORS) as exc:
                    last = f"malformed response: {type(exc).__name__}: {str(exc)[:300]}"
                    down = False
                else:
                    pool.answered(index)
                    if isinstance(outcome, Completion):
                        outcome.endpoint = replica.endpoint
                    return outcome
                pool.failed(index, down=down)
                if several:
                    tried.add(replica.endpoint)
                    last = f"{replica.endpoint}: {last}"
                if attempt == self.max_retries:
                    break
                self.usage.retries += 1
                if not pool.other_free(index):
                    await asyncio.sleep(self._delay(attempt, retry_after))
                held, index = index, None
                index = await pool.acquire(held=held)
            where = f" on {len(tried)} of {len(pool.replicas)} replicas" if several else ""
            message = f"{last} (after {self.max_retries + 1} attempt(s){where})"
            urls = ", ".join(replica.where for replica in pool.replicas)
            self.streak.failed(message, where=urls, model=self.model)
        except BackendError:
            pool.stop()  # before the slot is given back: no other call goes out
            raise
        finally:
            if index is not None:
                pool.release(index)
        return CallFailure("request_failed", message)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return ceiling * (0.5 + random.random() / 2)


def _off_running_loop(function: Callable[[], T]) -> T:
    """Call ``function`` here, or in a thread of its own when this thread runs an event loop.

    A loop cannot be run from inside another one (a notebook's, an async caller's).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function).result()


async def _within(seconds: float, awaitable: Awaitable[T]) -> T:
    """Await with a deadline (:class:`TimeoutError` past it), without a task of its own.

    ``asyncio.timeout`` (Python 3.11) cancels in place; ``asyncio.wait_for`` wraps the
    awaitable in a task per call, and is what Python 3.10 has.
    """
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(seconds):  # type: ignore[attr-defined]
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def _run_sync(coroutine: Any) -> Any:
    """Run a coroutine to completion, also from code that already runs an event loop."""
    return _off_running_loop(lambda: asyncio.run(coroutine))


def _error_detail(exc: Any) -> str:
    """What an error reply says: its ``message`` when that is text, else the SDK's summary."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or body.get("error", {})
        if isinstance(message, dict):
            message = message.get("message")
        if isinstance(message, str) and message:
            return message[:500]
    return str(getattr(exc, "message", exc))[:500]


def _tokens(usage: Any, name: str) -> int:
    """A token count from the usage block; 0 when missing or not a count (never fatal)."""
    value = usage.get(name) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _completion_of(reply: Any) -> Completion | CallFailure:
    """Read the reply out of a response's JSON (:func:`parse_reply`), checking its shape.

    Anything may arrive here (a string, None, a list, fields of the wrong type).

    Raises:
        MalformedResponse: When the body is not a usable chat completion.
    """
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices:
        what = "no choices" if not choices else f"choices of type {type(choices).__name__}"
        raise MalformedResponse(f"the server answered with {what}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedResponse("the server answered with a choice without a message")
    text = message.get("content")
    refusal = message.get("refusal")
    if text is None:
        if refusal:
            said = refusal if isinstance(refusal, str) else type(refusal).__name__
            return CallFailure("rejected", f"the model refused: {said[:500]}")
        text = ""
    if not isinstance(text, str):
        raise MalformedResponse(f"the reply's content is {type(text).__name__}, not text")
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise MalformedResponse(f"finish_reason is {type(finish_reason).__name__}, not text")
    usage = reply.get("usage")
    return Completion(
        text=text,
        finish_reason=finish_reason,
        prompt_tokens=_tokens(usage, "prompt_tokens"),
        completion_tokens=_tokens(usage, "completion_tokens"),
    )
