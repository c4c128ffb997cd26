"""The ``openai`` backend's HTTP connections: kept, sized to the concurrency, opened a few at once.

A run at ``--max-concurrency 256`` would otherwise open 256 connections in one burst. The
kernel completes every handshake at once and queues them for the server to accept; a
server listening with a short backlog (Python's ``http.server`` listens with 5) cannot
take them that fast, and the connections beyond its accept queue are reset a few seconds
later, after the request was sent: a retry each, and seconds lost. So each client opens
at most :data:`OPENING` connections at a time, and a new plain-HTTP connection counts as
open once the server has answered a ``HEAD`` of the models URL on it (answered at once by
an API server, however long its completions take: the ramp costs a round trip per
connection, once per connection). Connections then stay open for the backend's life
(:class:`~prefjudge.backends.openai_http.OpenAIBackend` keeps its clients), and each
client keeps ``max_concurrency`` of them idle between batches.

A client's pool looks through all its connections for every request it places, so a
replica's calls are spread over one client per :data:`SHARD` slots (:class:`Shards`), and
an idle connection is dropped after :data:`KEEPALIVE_EXPIRY` seconds, before a server
with uvicorn's defaults closes it. HTTPS endpoints and proxies get all but the probe
(it would have to pass TLS or the proxy first).

Replies are untrusted: every body is read whole as it arrives, decoded, and refused once
it passes :data:`MAX_BODY` bytes (:func:`read_bounded`, the clients' response hook), in a
content coding the client asked for (:data:`ACCEPT_ENCODING`, decoded a piece at a time)
or none; and the reply to the probe may hold :data:`MAX_PROBE_HEAD` bytes of head in
:data:`MAX_PROBE_LINES` lines. So a reply costs a bounded amount of memory whatever it
holds or however long it lasts: a compressed bomb or an endless body is refused at the
cap (:class:`UnreadableReply`, that request's error), not read to the deadline.

:func:`unreachable_reason` tells a dead endpoint (nothing listens on the port, or the host
name does not resolve) from the connection errors of a live one (a reset, a timeout).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

#: New connections a replica's clients open at once (fits a listen backlog of 5).
OPENING = 4
#: Calls in flight per client: its pool looks through every connection it holds for each
#: request it places (an expiry check and a poll of the socket each), so a replica at a
#: concurrency of 256 gets 8 clients of 32 connections rather than one of 256.
SHARD = 32
#: Idle connections each client keeps at least (the SDK's own default).
MIN_KEEPALIVE = 100
#: The SDK's default ceiling on a client's connections.
MAX_CONNECTIONS = 1000
#: Seconds an idle connection is kept: under uvicorn's 5 (``vllm serve``), so that the
#: client drops it before the server closes it under a request sent at that moment.
KEEPALIVE_EXPIRY = 4.0
#: Bytes of a reply's body (after decoding) that a client reads at most: a chat completion
#: is a few KiB, a long generation under 1 MiB, a runaway one of 10 MB still fits. The
#: JSON read from it is bounded too (:func:`~prefjudge.backends.openai_http.parse_reply`),
#: so a reply costs under 64 MiB more than a normal one, whatever it holds.
MAX_BODY = 16 << 20
#: The content codings the clients ask for: those ``httpx`` decodes a piece at a time.
ACCEPT_ENCODING = "gzip, deflate"
#: The codings a reply may come in (anything else was not asked for and is refused).
READABLE_ENCODINGS = frozenset({"identity", "gzip", "deflate"})
#: Bytes of head (status line and headers) the reply to the probe may have.
MAX_PROBE_HEAD = 64 << 10
#: Header lines the reply to the probe may have.
MAX_PROBE_LINES = 128


class UnreadableReply(ValueError):
    """A reply the client will not read: a body over :data:`MAX_BODY`, a coding not asked for."""


class Shards:
    """The clients of one replica, each with a pool of its own; a call goes to the least busy.

    Offers what the backend uses of an ``openai.AsyncOpenAI``: ``post`` and ``close``.

    Args:
        clients: The clients (at least one).
    """

    def __init__(self, clients: list[Any]):
        self.clients = clients
        self._inflight = [0] * len(clients)

    async def post(self, *args: Any, **kwargs: Any) -> Any:
        """``AsyncOpenAI.post`` on the client with the fewest calls in flight."""
        index = min(range(len(self.clients)), key=self._inflight.__getitem__)
        self._inflight[index] += 1
        try:
            return await self.clients[index].post(*args, **kwargs)
        finally:
            self._inflight[index] -= 1

    async def close(self) -> None:
        """Close every client (their connections)."""
        await asyncio.gather(*(client.close() for client in self.clients))


def replica_clients(
    make_client: Callable[[Any], Any], base_url: str | None, max_concurrency: int
) -> Shards:
    """The clients of one replica: one per :data:`SHARD` calls, sharing one opening gate.

    Args:
        make_client: Returns an ``openai.AsyncOpenAI`` for the ``http_client`` given.
        base_url: The replica's base URL (None: OpenAI's, over HTTPS).
        max_concurrency: Calls in flight on this replica at most.

    Returns:
        The clients.
    """
    count = -(-max_concurrency // SHARD)
    each = -(-max_concurrency // count)
    gate = OpeningGate()
    return Shards([make_client(http_client(base_url, each, gate)) for _ in range(count)])


def http_client(base_url: str | None, max_concurrency: int, gate: OpeningGate | None = None) -> Any:
    """An ``httpx`` client for the SDK: its defaults, sized, opening few connections at once.

    Args:
        base_url: The replica's base URL (None: OpenAI's, over HTTPS).
        max_concurrency: Calls in flight on this client at most.
        gate: The opening gate, shared by the clients of one replica (None: its own).

    Returns:
        An ``openai.DefaultAsyncHttpxClient`` keeping ``max(100, max_concurrency)`` idle
        connections for :data:`KEEPALIVE_EXPIRY` seconds, whose new plain-HTTP
        connections are confirmed before use, and whose replies are read by
        :func:`read_bounded`.
    """
    import httpx2
    import openai

    keep = max(MIN_KEEPALIVE, max_concurrency)
    limits = httpx2.Limits(
        max_connections=max(MAX_CONNECTIONS, keep),
        max_keepalive_connections=keep,
        keepalive_expiry=KEEPALIVE_EXPIRY,
    )
    client = openai.DefaultAsyncHttpxClient(
        limits=limits,
        headers={"Accept-Encoding": ACCEPT_ENCODING},
        event_hooks={"response": [read_bounded]},
    )
    parts = urlsplit(base_url or "")
    if parts.scheme == "http" and parts.hostname:
        path = parts.path.rstrip("/") + "/models"
        _confirm_new_connections(client, path, gate or OpeningGate())
    return client


async def read_bounded(response: Any) -> None:
    """Read a reply's body whole, decoded, refusing it past :data:`MAX_BODY` bytes.

    The clients' response hook: it runs before the client reads the body itself, which
    then finds it read (``httpx`` would join every piece however many came). ``httpx``
    decodes gzip and deflate a MiB at a time, so a compressed bomb is refused a MiB past
    the cap; a coding it does not decode that way was not asked for and is refused
    before a byte is read.

    Args:
        response: The ``httpx`` response, its body not read yet.

    Raises:
        UnreadableReply: A coding not asked for, or a body over :data:`MAX_BODY` bytes
            (the connection is closed, not reused).
    """
    codings = response.headers.get_list("content-encoding", split_commas=True)
    unknown = [c for c in (c.strip().lower() for c in codings) if c not in READABLE_ENCODINGS]
    if unknown:
        coding = unknown[0][:40]
        raise UnreadableReply(f"the reply is in a content coding not asked for: {coding!r}")
    parts: list[bytes] = []
    size = 0
    async for part in response.aiter_bytes():
        size += len(part)
        if size > MAX_BODY:
            raise UnreadableReply(f"the reply's body is over {MAX_BODY >> 20} MiB")
        parts.append(part)
    response._content = b"".join(parts)  # what ``Response.aread`` keeps: it returns this


class OpeningGate:
    """At most :data:`OPENING` connections opening at once, over the clients that share it."""

    def __init__(self) -> None:
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def semaphore(self) -> asyncio.Semaphore:
        """The semaphore (made on first use, inside the running loop)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(OPENING)
        return self._semaphore


def _confirm_new_connections(client: Any, path: str, gate: OpeningGate) -> None:
    """Make ``client``'s pool open connections through :class:`ConfirmedOpening`.

    Left as it is when its transport is not the plain connection pool this knows (a proxy,
    another ``httpcore`` version): connections are then opened as the pool does.
    """
    import httpcore2

    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if type(pool) is not httpcore2.AsyncConnectionPool or inner is None:
        return
    pool._network_backend = ConfirmedOpening(inner, path, gate)


class ConfirmedOpening:
    """A network backend that opens :data:`OPENING` connections at a time, each confirmed.

    A connection is confirmed when the server answers ``HEAD <path>`` on it (any status:
    the server has accepted it). A reply with a body, or one that closes the connection,
    leaves that connection unusable: it is closed and a new one is opened without a
    probe. Failures to connect or to be answered are raised as the pool's own errors.

    Args:
        inner: The pool's own network backend.
        path: The path to ``HEAD`` (the replica's models URL).
        gate: The replica's opening gate.
    """

    def __init__(self, inner: Any, path: str, gate: OpeningGate):
        self._inner = inner
        self._path = path
        self._gate = gate

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        """Open a connection once fewer than :data:`OPENING` are opening; confirm it."""
        async with self._gate.semaphore:
            stream = await self._inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address,
                socket_options=socket_options,
            )  # fmt: skip
            try:
                usable = await self._confirm(stream, host, port, timeout)
            except BaseException:
                await stream.aclose()
                raise
        if usable:
            return stream
        await stream.aclose()
        return await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address,
            socket_options=socket_options,
        )  # fmt: skip

    async def _confirm(self, stream: Any, host: str, port: int, timeout: float | None) -> bool:
        """Send the probe and read its reply's head; whether the connection is still usable."""
        probe = (
            f"HEAD {self._path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: prefjudge\r\n\r\n"
        )
        await stream.write(probe.encode("ascii"), timeout=timeout)
        head, rest = await _read_head(stream, timeout)
        closes = b"\r\nconnection: close" in head.lower()
        return not rest and not closes

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> Any:
        """A Unix socket, as the pool's own backend opens it."""  # fmt: skip
        return await self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )

    async def sleep(self, seconds: float) -> None:
        """Sleep, as the pool's own backend does."""
        await self._inner.sleep(seconds)


async def _read_head(stream: Any, timeout: float | None) -> tuple[bytes, bytes]:
    """Read a reply's head (up to the blank line) off a new connection: ``(head, what follows)``.

    Raises:
        httpcore2.ConnectError: When the server closes the connection first.
        httpcore2.RemoteProtocolError: When the head passes :data:`MAX_PROBE_HEAD` bytes
            or :data:`MAX_PROBE_LINES` lines (an endless header: the connection is closed).
    """
    import httpcore2

    reply = bytearray()
    lines = 0
    while len(reply) <= MAX_PROBE_HEAD and lines < MAX_PROBE_LINES:
        chunk = await stream.read(65536, timeout=timeout)
        if not chunk:
            raise httpcore2.ConnectError("the server closed a new connection at once")
        start = len(reply)
        reply += chunk
        end = reply.find(b"\r\n\r\n", max(0, start - 3))  # it may straddle two reads
        if end < 0:
            lines += chunk.count(b"\n")
            continue
        lines += reply.count(b"\n", start, end)
        if end <= MAX_PROBE_HEAD and lines < MAX_PROBE_LINES:
            return bytes(reply[:end]), bytes(reply[end + 4 :])
        break
    raise httpcore2.RemoteProtocolError(
        f"the reply to the connection probe has a head over {MAX_PROBE_HEAD >> 10} KiB "
        f"or {MAX_PROBE_LINES} lines"
    )


def unreachable_reason(exc: BaseException, base_url: str | None) -> str | None:
    """Why no connection to an endpoint could be made at all, or None for any other failure.

    The client wraps the socket's error in its own (``openai.APIConnectionError`` over
    ``httpx``'s and ``httpcore``'s ``ConnectError``); the causes are searched for it.

    Args:
        exc: The error a call raised.
        base_url: The endpoint's base URL (None: OpenAI's), to name its host.

    Returns:
        ``connection refused`` (nothing listens on the port), ``unknown host 'NAME'
        (...)`` (the name does not resolve), or None (a reset, a timeout, anything else:
        a live server's trouble, retried).
    """
    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            host = urlsplit(base_url or "").hostname or "?"
            detail = cause.strerror or str(cause)
            return f"unknown host {host!r} ({detail})"
    return None


def root_cause(exc: BaseException) -> str:
    """What an error was raised from at the bottom, e.g. the socket's or the probe's error.

    The client's ``Connection error.`` says nothing; the error it wraps (through
    ``httpx`` and ``httpcore``) says what happened.

    Args:
        exc: The error a call raised.

    Returns:
        ``"TYPE: message"`` of the last error in its chain of ``raise ... from`` causes
        (``exc`` itself when it has none), at most 300 characters of message. Errors
        merely handled before (``__context__``) are not followed: they may be unrelated.
    """
    seen = {id(exc)}
    while True:
        cause = exc.__cause__
        if cause is None or id(cause) in seen:
            return f"{type(exc).__name__}: {str(exc)[:300]}"
        seen.add(id(cause))
        exc = cause


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every error it was raised from or during, groups' members included."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        error = stack.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        stack.extend(e for e in (error.__cause__, error.__context__) if e is not None)
        members = getattr(error, "exceptions", None)
        if isinstance(members, (list, tuple)):
            stack.extend(e for e in members if isinstance(e, BaseException))
