"""A hostile OpenAI-compatible server on loopback, writing exactly the bytes a test chooses.

Raw asyncio streams, not ``http.server``: the attacks are in the framing itself (a gzip
bomb under a small Content-Length, a chunked body that never ends, a header line that
never ends). One server answers HTTP/1.1 with keep-alive:

* ``HEAD`` (the client's connection probe): an empty 200, or with ``endless_probe``
  a header line that never ends on the first connection the server accepts;
* ``POST .../chat/completions``: the reply of ``mode`` when the request is hostile (its
  messages hold :data:`HOSTILE`, or every request with ``every=True``), else a normal
  completion echoing the text after ``echo:`` in the last message;
* ``GET .../models``: one model, ``fake``.

Modes: ``gzip_bomb`` (256 MiB of zeros gzipped to ~254 KiB), ``endless`` (a chunked body
of spaces that never ends), ``deep`` (JSON nested 200,000 deep, or ``depth``), ``huge_number`` (a
well-formed completion whose usage holds ``1e400`` tokens), ``normal``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

HOSTILE = "hostile"
MODES = ("normal", "gzip_bomb", "endless", "deep", "huge_number")
BOMB_ZEROS = 256 << 20
DEEP = 200_000
CAP_SECONDS = 30.0  # an endless reply stops by itself at last (never in a passing test)
CHUNK = 1 << 20


@functools.cache
def gzip_bomb() -> bytes:
    """256 MiB of zero bytes, gzipped (made once per process, a MiB at a time)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    zeros = bytes(CHUNK)
    parts = [packer.compress(zeros) for _ in range(BOMB_ZEROS // CHUNK)]
    return b"".join(parts) + packer.flush()


def completion(text: str, usage: str = '{"prompt_tokens": 10, "completion_tokens": 5}') -> bytes:
    """A chat completion answering ``text``, its usage block given as raw JSON text."""
    message = json.dumps({"role": "assistant", "content": text})
    return (
        '{"id": "c", "object": "chat.completion", "model": "fake", "choices": [{"index": 0, '
        f'"message": {message}, "finish_reason": "stop"}}], "usage": {usage}}}'
    ).encode()


@dataclass
class Hostile:
    """The server's settings and what it saw.

    Attributes:
        mode: What a hostile request gets (one of :data:`MODES`).
        every: Every completion request is hostile, not only those naming :data:`HOSTILE`.
        endless_probe: The first connection's probe gets a header line that never ends.
        depth: How deep the ``deep`` mode's JSON nests.
        url: The ``/v1`` base URL once serving.
        completions: Completion requests received.
        hostile_sent: Bytes written in hostile replies (bodies, or the endless probe head)
            before the client went away.
    """

    mode: str = "normal"
    every: bool = False
    endless_probe: bool = False
    depth: int = DEEP
    url: str = ""
    completions: int = 0
    hostile_sent: int = 0
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one connection until the client closes it (or a reply ends it)."""
        with self.lock:
            self.connections += 1
            first = self.connections == 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path, headers = _parse_head(head)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "HEAD":
                    if first and self.endless_probe:
                        await self._endless_header(writer)
                        return
                    await _reply(writer, 200, b"", head_only=True)
                elif method == "GET" and path.rstrip("/").endswith("/models"):
                    await _reply(writer, 200, b'{"object": "list", "data": [{"id": "fake"}]}')
                elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                    if not await self._completion(writer, json.loads(body)):
                        return
                else:
                    await _reply(writer, 404, b'{"error": {"message": "not found"}}')
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _completion(self, writer: asyncio.StreamWriter, request: dict) -> bool:
        """Answer one completion; whether the connection stays usable."""
        with self.lock:
            self.completions += 1
        said = json.dumps(request.get("messages", []))
        if self.mode == "normal" or not (self.every or HOSTILE in said):
            last = request["messages"][-1]["content"]
            await _reply(writer, 200, completion(last.split("echo:", 1)[-1]))
            return True
        if self.mode == "endless":
            await self._endless_body(writer)
            return False
        body, extra = {
            "gzip_bomb": (gzip_bomb, "Content-Encoding: gzip\r\n"),
            "deep": (lambda: b"[" * self.depth + b"]" * self.depth, ""),
            "huge_number": (lambda: completion("A", '{"prompt_tokens": 1e400}'), ""),
        }[self.mode]
        data = body()
        await _reply(writer, 200, data, extra=extra)
        with self.lock:
            self.hostile_sent += len(data)
        return True

    async def _endless_body(self, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"%x\r\n" % CHUNK + b" " * CHUNK + b"\r\n"
        await self._forever(writer, chunk)

    async def _endless_header(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
        await self._forever(writer, b"a" * 65536)

    async def _forever(self, writer: asyncio.StreamWriter, piece: bytes) -> None:
        """Write ``piece`` as fast as the client reads, until it goes away (or the cap)."""
        loop = asyncio.get_running_loop()
        stop = loop.time() + CAP_SECONDS
        while loop.time() < stop:
            writer.write(piece)
            await writer.drain()
            with self.lock:
                self.hostile_sent += len(piece)


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


async def _reply(
    writer: asyncio.StreamWriter, status: int, body: bytes, *, extra: str = "",
    head_only: bool = False,
) -> None:  # fmt: skip
    head = (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    )
    writer.write(head.encode("latin-1") + (b"" if head_only else body))
    await writer.drain()


@contextmanager
def serve_hostile(mode: str = "normal", **settings: Any) -> Iterator[Hostile]:
    """Run a :class:`Hostile` server on 127.0.0.1 (a free port) in a thread of its own.

    Args:
        mode: What hostile requests get.
        **settings: ``every``, ``endless_probe``, ``depth``.

    Yields:
        The server's state, ``url`` set.
    """
    state = Hostile(mode=mode, **settings)
    if mode == "gzip_bomb":
        gzip_bomb()  # made before serving: the first reply is not late by its making
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    server: list[Any] = []

    async def start() -> None:
        server.append(await asyncio.start_server(state.handle, "127.0.0.1", 0))
        state.url = f"http://127.0.0.1:{server[0].sockets[0].getsockname()[1]}/v1"
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    ready.wait(10)
    try:
        yield state
    finally:

        async def stop() -> None:
            server[0].close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
