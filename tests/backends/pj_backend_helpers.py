"""Helpers for the backend tests: a misbehaving OpenAI-compatible server, vLLM settings."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any


@dataclass
class Action:
    """What the fake server does with one request."""

    status: int = 200
    headers: dict[str, str] | None = None
    delay: float = 0.0
    text: str | None = None  # None: use the server's reply function
    finish_reason: str = "stop"
    error: str = "scripted error"


def ok(text: str | None = None, **kwargs: Any) -> Action:
    return Action(text=text, **kwargs)


def status(code: int, retry_after: str | None = None, **kwargs: Any) -> Action:
    headers = {"Retry-After": retry_after} if retry_after is not None else None
    return Action(status=code, headers=headers, **kwargs)


def slow(seconds: float, text: str | None = None) -> Action:
    return Action(delay=seconds, text=text)


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

        def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
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
                text = action.text if action.text is not None else state.reply(body)
                self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": action.finish_reason,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": 10,
                            "completion_tokens": 5,
                            "total_tokens": 15,
                        },
                    },
                    action.headers,
                )
            finally:
                with state.lock:
                    state.inflight -= 1

    return Handler


def vllm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the tiny model needs little
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    return env
