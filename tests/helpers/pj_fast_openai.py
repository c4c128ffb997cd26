"""A fast OpenAI-compatible server on loopback, in a process of its own, that counts connections.

The benchmark of the judge's HTTP client (``scripts/bench_client.py``) and the client's
tests (``tests/backends/test_client_*.py``) need a server that answers at once, so that
only the client's costs show, and that says how many TCP connections it was sent. This one
is one asyncio protocol (no framework): HTTP/1.1 with keep-alive, a chat completion whose
reply is a valid monolithic verdict (``{"reason": ..., "verdict": "A"}``) for any
``POST .../chat/completions``, ``GET .../models`` (``HEAD`` too), and ``GET /stats`` (its counters;
``/stats?reset=1`` zeroes them after reading). Like uvicorn (what ``vllm serve`` runs), it
closes a connection idle for ``keep_alive`` seconds.

The listen backlog is chosen: 2048 is uvicorn's default (a realistic server), 5 is Python's
``socketserver`` default (``http.server``), whose accept queue a burst of new connections
overflows. Run it as ``python pj_fast_openai.py --backlog 5``: it prints its port on the
first line of stdout, serves until stdin closes or SIGTERM; or use :class:`FastServer`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

REPLY = json.dumps({"reason": "A handles the empty input; B raises IndexError.", "verdict": "A"})
#: uvicorn's default listen backlog (``vllm serve`` runs uvicorn).
UVICORN_BACKLOG = 2048
#: Python's ``socketserver.TCPServer.request_queue_size`` (what ``http.server`` listens with).
PYTHON_BACKLOG = 5
#: uvicorn's default ``timeout_keep_alive``.
KEEP_ALIVE = 5.0


def _response(status: str, payload: Any) -> bytes:
    body = json.dumps(payload).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


COMPLETION = _response(
    "200 OK",
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 600, "completion_tokens": 20, "total_tokens": 620},
    },
)
MODELS = _response("200 OK", {"object": "list", "data": [{"id": "fake", "object": "model"}]})
NOT_FOUND = _response("404 Not Found", {"error": {"message": "not found"}})


class Counters:
    """What the server was sent: connections (all; those that asked for completions), requests."""

    def __init__(self) -> None:
        self.connections = 0
        self.completions = 0
        self.body_bytes = 0
        self.accepted = 0
        self.heads = 0
        self.open = 0
        self.peak_open = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "connections": self.connections,
            "accepted": self.accepted,
            "heads": self.heads,
            "completions": self.completions,
            "body_bytes": self.body_bytes,
            "open": self.open,
            "peak_open": self.peak_open,
        }

    def reset(self) -> None:
        self.connections = self.accepted = self.heads = self.completions = self.body_bytes = 0
        self.peak_open = self.open


class _Connection(asyncio.Protocol):
    def __init__(self, counters: Counters, keep_alive: float, record: Any = None) -> None:
        self.counters = counters
        self.keep_alive = keep_alive
        self.record = record
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.completions = 0
        self.idle: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.counters.accepted += 1
        self.counters.open += 1
        self.counters.peak_open = max(self.counters.peak_open, self.counters.open)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.counters.open -= 1
        if self.idle is not None:
            self.idle.cancel()

    def _arm(self) -> None:
        if self.idle is not None:
            self.idle.cancel()
        loop = asyncio.get_running_loop()
        self.idle = loop.call_later(self.keep_alive, self._close_idle)

    def _close_idle(self) -> None:
        if self.transport is not None and not self.buffer:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body = bytes(self.buffer[end + 4 : total])
            del self.buffer[:total]
            self._arm()
            self._answer(head.split(" ", 2), body)

    def _answer(self, request_line: list[str], body: bytes) -> None:
        assert self.transport is not None
        method, path = request_line[0], request_line[1] if len(request_line) > 1 else "/"
        if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
            if self.completions == 0:
                self.counters.connections += 1
            self.completions += 1
            self.counters.completions += 1
            self.counters.body_bytes += len(body)
            if self.record is not None:
                self.record.write(body.decode() + "\n")
            self.transport.write(COMPLETION)
        elif method == "GET" and path.startswith("/stats"):
            stats = self.counters.as_dict()
            if "reset=1" in path:
                self.counters.reset()
            self.transport.write(_response("200 OK", stats))
        elif method == "GET" and path.rstrip("/").endswith("/models"):
            self.transport.write(MODELS)
        elif method == "HEAD":  # the head of what GET would answer; never a body
            head, _, _ = (MODELS if path.rstrip("/").endswith("/models") else NOT_FOUND).partition(
                b"\r\n\r\n"
            )
            self.counters.heads += 1
            self.transport.write(head + b"\r\n\r\n")
        else:
            self.transport.write(NOT_FOUND)


async def serve(
    backlog: int, keep_alive: float = KEEP_ALIVE, port: int = 0, record: str | None = None
) -> None:
    """Serve on 127.0.0.1 until stdin closes or SIGTERM; print the port first.

    Args:
        backlog: The listen backlog.
        keep_alive: Seconds an idle connection is kept open.
        port: The port (0: a free one).
        record: A file to write each completion request's JSON body to (a line each).
    """
    loop = asyncio.get_running_loop()
    counters = Counters()
    sink = None if record is None else open(record, "w", encoding="utf-8")
    server = await loop.create_server(
        lambda: _Connection(counters, keep_alive, sink), "127.0.0.1", port, backlog=backlog
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, lambda: stop.done() or stop.set_result(None))

    def wait_for_eof() -> None:  # stdin closed: the parent is done (or gone)
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(lambda: stop.done() or stop.set_result(None))

    threading.Thread(target=wait_for_eof, daemon=True).start()
    async with server:
        await stop
    if sink is not None:
        sink.close()


class FastServer:
    """The server in a child process; a context manager.

    Args:
        backlog: The listen backlog (:data:`UVICORN_BACKLOG`, :data:`PYTHON_BACKLOG`).
        keep_alive: Seconds an idle connection is kept open.
        record: A file the server writes each completion request's JSON body to.

    Attributes:
        url: The OpenAI base URL (``http://127.0.0.1:PORT/v1``), once started.
        pid: The server's process id.
    """

    def __init__(
        self,
        backlog: int = UVICORN_BACKLOG,
        keep_alive: float = KEEP_ALIVE,
        record: str | Path | None = None,
    ):
        self.backlog = backlog
        self.keep_alive = keep_alive
        self.record = record
        self.url = ""
        self.pid = 0
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> FastServer:
        """Start the child and wait for its port."""
        argv = [sys.executable, str(Path(__file__).resolve()), "--backlog", str(self.backlog),
                "--keep-alive", str(self.keep_alive)]  # fmt: skip
        if self.record is not None:
            argv += ["--record", str(self.record)]
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        port = self._process.stdout.readline().strip()
        if not port.isdigit():
            self.stop()
            raise RuntimeError(f"the fast fake server did not start (printed {port!r})")
        self.pid = self._process.pid
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    def stats(self, *, reset: bool = False) -> dict[str, int]:
        """The counters (connections that asked for completions, completions, body bytes)."""
        where = self.url.removesuffix("/v1") + "/stats" + ("?reset=1" if reset else "")
        with urllib.request.urlopen(where, timeout=10) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        """Stop the child (closing its stdin) and wait for it."""
        if self._process is None:
            return
        process, self._process = self._process, None
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> FastServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Run the server from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=UVICORN_BACKLOG)
    parser.add_argument("--keep-alive", type=float, default=KEEP_ALIVE)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--record")
    args = parser.parse_args()
    asyncio.run(serve(args.backlog, args.keep_alive, args.port, args.record))


if __name__ == "__main__":
    main()
