"""Helpers for the backend tests: a misbehaving OpenAI-compatible server, vLLM settings."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDLESS_CAP = 60.0  # seconds: an endless body stops by itself at last (never in a passing test)


@dataclass
class Action:
    """What the fake server does with one request.

    ``raw`` replaces the whole 200 body (bytes sent as they are, ``content_type`` as the
    Content-Type): a truncated, non-JSON or wrongly shaped body. ``trickle`` sends the body
    one byte at a time with that many seconds between bytes (Content-Length set, so the
    reply is complete in the end). ``endless`` sends a chunked body that never ends: a
    chunk every ``endless`` seconds until the client goes away (or ``ENDLESS_CAP``).
    """

    status: int = 200
    headers: dict[str, str] | None = None
    delay: float = 0.0
    text: str | None = None  # None: use the server's reply function
    finish_reason: str = "stop"
    error: str = "scripted error"
    raw: bytes | None = None
    content_type: str = "application/json"
    trickle: float | None = None
    endless: float | None = None


def ok(text: str | None = None, **kwargs: Any) -> Action:
    return Action(text=text, **kwargs)


def status(code: int, retry_after: str | None = None, **kwargs: Any) -> Action:
    headers = {"Retry-After": retry_after} if retry_after is not None else None
    return Action(status=code, headers=headers, **kwargs)


def slow(seconds: float, text: str | None = None) -> Action:
    return Action(delay=seconds, text=text)


def trickle(interval: float, text: str | None = None) -> Action:
    """A 200 reply whose body arrives one byte every ``interval`` seconds."""
    return Action(trickle=interval, text=text)


def endless(interval: float = 0.05) -> Action:
    """A 200 reply with a chunked body that never ends (a chunk every ``interval`` s)."""
    return Action(endless=interval)


def raw_body(data: bytes | str, content_type: str = "application/json") -> Action:
    """A 200 reply with exactly this body (malformed on purpose)."""
    return Action(raw=data.encode() if isinstance(data, str) else data, content_type=content_type)


def completion_body(text: str, finish_reason: str = "stop", model: str = "fake") -> dict[str, Any]:
    """A well-formed chat completion with ``text`` as the reply."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def truncated(text: str = "hello") -> Action:
    """A 200 reply whose JSON body is cut in half (Content-Length matches what is sent)."""
    data = json.dumps(completion_body(text)).encode()
    return raw_body(data[: len(data) // 2])


def default_reply(body: dict[str, Any]) -> str:
    """Reply with the text after ``echo:`` in the first user message."""
    first = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return first.split("echo:", 1)[1] if "echo:" in first else "ok"


class FakeOpenAI:
    """State of the fake server; tests script it through ``queue``/``reply``/``delay``."""

    def __init__(self) -> None:
        self.queue: deque[Action] = deque()
        self.reply: Callable[[dict[str, Any]], str] = default_reply
        self.delay = 0.0
        self.bodies: list[dict[str, Any]] = []
        self.inflight = 0
        self.peak = 0
        self.lock = threading.Lock()
        self.url = ""

    def script(self, *actions: Action) -> None:
        self.queue.extend(actions)

    @property
    def calls(self) -> int:
        return len(self.bodies)

    def reset_counts(self) -> None:
        with self.lock:
            self.bodies.clear()
            self.peak = 0


def make_handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(
            self,
            code: int,
            payload: Any,
            headers: dict[str, str] | None = None,
            *,
            raw: bytes | None = None,
            content_type: str = "application/json",
            trickle: float | None = None,
        ) -> None:
            data = raw if raw is not None else json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                if trickle is None:
                    self.wfile.write(data)
                    return
                for i in range(len(data)):
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                    time.sleep(trickle)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _send_endless(self, interval: float) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"1\r\n{\r\n")
                stop = time.monotonic() + ENDLESS_CAP
                while time.monotonic() < stop:
                    time.sleep(interval)
                    self.wfile.write(b"1\r\n \r\n")
                    self.wfile.flush()
                self.close_connection = True
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": "not found"}})
                return
            with state.lock:
                state.bodies.append(body)
                action = state.queue.popleft() if state.queue else Action()
                state.inflight += 1
                state.peak = max(state.peak, state.inflight)
            try:
                time.sleep(action.delay or state.delay)
                if action.status != 200:
                    self._send(
                        action.status,
                        {"error": {"message": action.error, "code": action.status}},
                        action.headers,
                    )
                    return
                if action.endless is not None:
                    self._send_endless(action.endless)
                    return
                if action.raw is not None:
                    self._send(
                        200, None, action.headers, raw=action.raw, content_type=action.content_type
                    )
                    return
                text = action.text if action.text is not None else state.reply(body)
                payload = completion_body(text, action.finish_reason, body.get("model", "fake"))
                self._send(200, payload, action.headers, trickle=action.trickle)
            finally:
                with state.lock:
                    state.inflight -= 1

    return Handler


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) in a thread; yield its ``/v1`` URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_fake() -> Iterator[FakeOpenAI]:
    """Run another fake server (the ``fake_server`` fixture gives one per test)."""
    state = FakeOpenAI()
    with serving(make_handler(state)) as url:
        state.url = url
        yield state


def vllm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the tiny model needs little
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    return env
