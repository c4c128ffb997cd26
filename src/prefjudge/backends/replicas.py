"""The replicas of one model: their URLs, identity, and how calls are spread over them.

``base_url`` may list several servers of one model (``vllm serve`` replicas, a
data-parallel deployment's front ends): :func:`replica_urls` checks the list,
:func:`endpoint_identity` is the name cache keys know them by (never the one that
answered), :class:`Replica` what each did, and :class:`ReplicaPool` gives each call a slot
on the least-loaded replica that is up, with cool-downs for failing ones.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from prefjudge.backends.base import FailureStreak

OPENAI_URL = "https://api.openai.com/v1"
"""The endpoint the ``openai`` client uses when no URL is given (nor ``$OPENAI_BASE_URL``)."""


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
class ReplicaPool:
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


