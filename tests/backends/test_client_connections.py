"""The openai backend's connections, counted by a real server on loopback in its own process.

The server (``pj_fast_openai``) answers at once and counts the TCP connections it was
sent completions on, and the new connections it was asked ``HEAD`` on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pj_fast_openai import PYTHON_BACKLOG, FastServer

from prefjudge.backends import Request, chat
from prefjudge.judge.schemas import MonolithicReply

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend


@pytest.fixture(scope="module")
def server() -> Iterator[FastServer]:
    with FastServer() as running:
        yield running


def verdicts(n: int, prefix: str = "") -> list[Request]:
    return [
        chat(f"{prefix}{i}", ("system", "Judge the pair."), f"pair {prefix}{i}",
             schema_model=MonolithicReply)
        for i in range(n)
    ]  # fmt: skip


def backend(url: str, concurrency: int) -> OpenAIBackend:
    return OpenAIBackend(model="fake", base_url=url, max_concurrency=concurrency, timeout=30.0)


def test_batches_reuse_the_connections_of_earlier_ones(server: FastServer) -> None:
    """Ten batches (a judge run's chunks) of 40 calls at concurrency 8: 8 connections in all."""
    server.stats(reset=True)
    with backend(server.url, 8) as client:
        for batch in range(10):
            results = client.generate(verdicts(40, f"b{batch}-"))
            assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
        assert client.usage.retries == 0
        stats = server.stats()
    assert stats["completions"] == 400
    assert stats["connections"] <= 8, stats
    assert stats["heads"] == stats["connections"]  # each new one confirmed before use


def test_close_closes_the_connections(server: FastServer) -> None:
    with backend(server.url, 4) as client:
        client.generate(verdicts(12))
        assert server.stats(reset=True)["open"] >= 2  # kept between batches (+ this request)
    deadline = time.monotonic() + 5
    while (still := server.stats()["open"]) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the server may see the closes a moment later
    assert still == 1  # only the stats request's own connection


def test_no_retry_at_concurrency_256_against_a_default_backlog_server() -> None:
    """256 connections wanted at once by a server that queues 5 unaccepted: none reset."""
    with FastServer(backlog=PYTHON_BACKLOG) as small, backend(small.url, 256) as client:
        results = client.generate(verdicts(768))
        stats = small.stats()
        assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
        assert client.usage.retries == 0
    assert stats["completions"] == 768
    assert 1 <= stats["connections"] <= 256, stats


def test_a_batch_from_a_second_thread_while_one_runs(server: FastServer) -> None:
    """The kept loop runs one batch at a time; another thread's batch runs beside it."""
    from concurrent.futures import ThreadPoolExecutor

    with backend(server.url, 4) as client, ThreadPoolExecutor(max_workers=2) as threads:
        runs = [threads.submit(client.generate, verdicts(60, f"t{k}-")) for k in range(2)]
        results = [result for run in runs for result in run.result()]
    assert len(results) == 120 and all(r.ok for r in results)
