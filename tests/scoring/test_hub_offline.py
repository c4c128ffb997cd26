"""A hub name without a network fails at once with the message that says how to run offline.

Without ``HF_HUB_OFFLINE`` and with no way to the hub, the libraries retry for about 25 s
before they give up; a quick connection check (:func:`hub_unreachable`) runs them in their
offline mode instead, so a dataset not in the cache is refused in a few seconds.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from pj_cli import cli_argv, flat

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A local port nothing listens on (connecting is refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_check_tells_a_refused_connection_from_a_listening_one() -> None:
    from prefjudge.scoring.sources import hub_unreachable

    port = closed_port()
    said = hub_unreachable(endpoint=f"http://127.0.0.1:{port}")
    assert said is not None and said.startswith(f"cannot connect to 127.0.0.1:{port}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert hub_unreachable(endpoint=f"http://127.0.0.1:{port}") is None


def test_run_with_an_unreachable_hub_fails_at_once_with_how_to_run_offline(tmp_path) -> None:
    text = (ROOT / "examples" / "smoke.toml").read_text()
    text = text.replace(
        'source = "../datasets/sample/tasks.jsonl"', 'source = "hub:evalplus/humanevalplus"'
    )
    path = tmp_path / "exp.toml"
    path.write_text(text.replace('results = "../results"', f'results = "{tmp_path / "r"}"'))
    port = closed_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=f"http://127.0.0.1:{port}")
    started = time.monotonic()
    done = subprocess.run(
        cli_argv("run", str(path), "--dry-run"),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    took = time.monotonic() - started
    said = flat(done.stderr)
    assert done.returncode == 1 and "Traceback" not in said, said
    assert f"{path}:15: field 'benchmark.source': hub:evalplus/humanevalplus[test]" in said
    assert f"not in the local cache ({tmp_path / 'hf'}" in said
    assert f"cannot be reached (cannot connect to 127.0.0.1:{port}" in said, said
    assert "HF_HUB_OFFLINE=1" in said
    assert took < 15, f"{took:.1f} s"  # the libraries' retries alone take about 25 s
