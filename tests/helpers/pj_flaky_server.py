"""An OpenAI-compatible server on loopback that fails some requests for good, until healed.

A request fails (HTTP 500, every time it is asked) when a hash of its model and messages
falls in the failing share (one in three by default) while ``failing`` is on, so a
server-side fault hits the same requests on every retry, as a broken replica or a prompt
that crashes the server would. Replies are :func:`pj_schema_reply.schema_reply`'s (a
schema-valid verdict for a structured request, a short Python answer otherwise). The
server counts the calls it answered and failed, split into generations (free text) and
structured requests (judging).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from pj_backend_helpers import completion_body, serving
from pj_schema_reply import schema_reply


class FlakyServer:
    """State of the flaky server: whether it fails, and what it was asked."""

    def __init__(self, share: int = 3) -> None:
        self.share = share
        self.failing = True
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.url = ""

    def fails(self, body: dict[str, Any]) -> bool:
        """Whether this request fails while the server is failing (the same every time)."""
        blob = json.dumps([body.get("model"), body.get("messages")], sort_keys=True).encode()
        return self.failing and int(hashlib.sha256(blob).hexdigest(), 16) % self.share == 0

    def count(self, kind: str) -> int:
        """Calls of a kind so far: ``generate`` or ``judge``, each ``ok`` or ``failed``."""
        return self.calls[kind]

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()


def _handler(state: FlakyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "flaky", "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            kind = "judge" if body.get("response_format") else "generate"
            failed = state.fails(body)
            with state.lock:
                state.calls[kind] += 1
                state.calls[f"{kind} {'failed' if failed else 'ok'}"] += 1
            if failed:
                self._send(500, {"error": {"message": "replica crashed", "code": 500}})
                return
            self._send(200, completion_body(schema_reply(body), "stop", body.get("model", "x")))

    return Handler


@contextmanager
def serve_flaky(share: int = 3) -> Iterator[FlakyServer]:
    """Run a flaky server on 127.0.0.1 (a free port) for the ``with`` block."""
    state = FlakyServer(share)
    with serving(_handler(state)) as url:
        state.url = url
        yield state
