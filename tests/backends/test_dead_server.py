"""A dead model server is found in seconds, and a server that fails every call stops a stage.

Real loopback sockets: a closed port (bound, then closed: nothing listens), an unknown host
(``.invalid`` never resolves), and the scriptable fake OpenAI server of pj_backend_helpers
answering 401, 404 or 500. The backend's default retry settings are used where the point
is that no long backoff happens.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pj_backend_helpers import FakeOpenAI, ok, serve_fake, status
from pj_cli import SAMPLE_DIR, WIDE, cli_argv, flat, invoke

from prefjudge.backends import BackendError, chat, create_backend
from prefjudge.backends.config import BackendConfig, load_backend_config

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend

FAST = 60.0  # seconds: the bound at the default settings
UNKNOWN_HOST = "http://nonexistent.invalid/v1"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def dead_url() -> str:
    return f"http://127.0.0.1:{closed_port()}/v1"


@pytest.fixture
def second_server() -> Iterator[FakeOpenAI]:
    with serve_fake() as state:
        yield state


def echoes(n: int) -> list:
    return [chat(f"r{i}", f"echo:{i}") for i in range(n)]


def default_backend(url: str | list[str]) -> Any:
    """The openai backend as a user gets it: default retries, backoff and timeout."""
    return create_backend(BackendConfig(kind="openai", model="m", base_url=url, no_cache=True))


def fast(url: str | list[str], **kwargs: Any) -> OpenAIBackend:
    settings = {"backoff_base": 0.01, "timeout": 5.0, "api_key": "k", **kwargs}
    return OpenAIBackend(model="m", base_url=url, **settings)


def generate_failing(backend: Any, requests: list) -> tuple[str, float]:
    """Run a batch that must raise BackendError: its message and the seconds it took."""
    started = time.monotonic()
    with backend, pytest.raises(BackendError) as caught:
        backend.generate(requests)
    return str(caught.value), time.monotonic() - started


# -- a dead endpoint -----------------------------------------------------------------------------


def test_a_closed_port_stops_the_batch_at_once(dead_url: str) -> None:
    message, elapsed = generate_failing(default_backend(dead_url), echoes(8))
    assert elapsed < 10, f"took {elapsed:.1f} s: the default backoff loop was run"
    assert message == f"the openai backend cannot reach {dead_url} (model 'm'): connection refused"


def test_an_unknown_host_stops_the_batch_at_once() -> None:
    message, elapsed = generate_failing(default_backend(UNKNOWN_HOST), echoes(4))
    assert elapsed < FAST
    assert message.startswith(f"the openai backend cannot reach {UNKNOWN_HOST} (model 'm'): ")
    assert "unknown host 'nonexistent.invalid'" in message


def test_every_replica_dead_stops_the_batch_naming_each(dead_url: str) -> None:
    other = f"http://127.0.0.1:{closed_port()}/v1"
    message, elapsed = generate_failing(default_backend([dead_url, other]), echoes(3))
    assert elapsed < 10
    assert "cannot reach any of its replicas (model 'm')" in message
    assert f"{dead_url}: connection refused" in message
    assert f"{other}: connection refused" in message


def test_one_dead_replica_of_two_is_not_fatal(fake_server: FakeOpenAI, dead_url: str) -> None:
    with fast([dead_url, fake_server.url], max_retries=2, max_concurrency=2) as backend:
        results = backend.generate(echoes(4))
        dead, live = backend.replicas
    assert all(r.ok for r in results), [r.error for r in results]
    assert dead.calls >= 1 and dead.answered == 0 and dead.unreachable == "connection refused"
    assert live.answered == 4 and live.unreachable is None


def test_a_server_that_answered_once_is_retried_when_it_goes_away() -> None:
    """After an answer, a refused connection is a restarting server: retried, not fatal."""
    with serve_fake() as server:
        server.script(ok(headers={"Connection": "close"}))  # no connection is kept
        backend = fast(server.url, max_retries=1, max_concurrency=1)
        [first] = backend.generate(echoes(1))
    assert first.ok  # the server answered once; now nothing listens on its port
    with backend:
        [after] = backend.generate(echoes(1))
    assert after.error_kind == "request_failed"
    assert after.error == "connection failed: connection refused (after 2 attempt(s))"
    assert backend.usage.retries == 1


# -- refusals: 404, 401 --------------------------------------------------------------------------


def without_v1(url: str) -> str:
    return url.removesuffix("/v1")


def test_a_404_without_v1_asks_whether_base_url_misses_it(fake_server: FakeOpenAI) -> None:
    fake_server.script(*[status(404, error="Not Found") for _ in range(4)])
    url = without_v1(fake_server.url)
    message, elapsed = generate_failing(default_backend(url), echoes(4))
    assert elapsed < 10
    assert message.startswith(f"{url} answered 404 for model 'm': Not Found")
    assert message.endswith("is base_url missing /v1?")


def test_a_404_with_v1_does_not_suggest_it(fake_server: FakeOpenAI) -> None:
    fake_server.script(status(404, error="The model `m` does not exist."))
    message, _ = generate_failing(fast(fake_server.url), echoes(1))
    assert message == f"{fake_server.url} answered 404 for model 'm': The model `m` does not exist."


def test_a_401_names_the_key_variable(
    fake_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PJ_TEST_KEY", "wrong")
    fake_server.script(status(401, error="bad key"))
    config = BackendConfig(
        kind="openai", model="m", base_url=fake_server.url, api_key_env="PJ_TEST_KEY",
        no_cache=True,
    )  # fmt: skip
    message, _ = generate_failing(create_backend(config), echoes(1))
    assert message.startswith(f"{fake_server.url} answered 401 for model 'm': bad key")
    assert "the key in $PJ_TEST_KEY was refused" in message


def test_a_403_without_a_key_says_none_was_sent(
    fake_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PJ_TEST_KEY", raising=False)
    fake_server.script(status(403, error="forbidden"))
    backend = OpenAIBackend(model="m", base_url=fake_server.url, api_key_env="PJ_TEST_KEY")
    message, _ = generate_failing(backend, echoes(1))
    assert "answered 403" in message and "no API key was sent: set $PJ_TEST_KEY" in message


def test_listing_models_of_a_dead_endpoint_names_it(dead_url: str) -> None:
    with fast(dead_url) as backend, pytest.raises(BackendError) as caught:
        backend.list_models()
    assert str(caught.value) == (
        f"the openai backend cannot reach {dead_url} (model 'm'): connection refused"
    )


# -- the failure streak --------------------------------------------------------------------------


def test_a_streak_of_failed_calls_stops_the_batch(fake_server: FakeOpenAI) -> None:
    fake_server.script(*[status(500, error="engine dead") for _ in range(10)])
    seen: list[str] = []
    with fast(fake_server.url, max_retries=0, max_failure_streak=3, max_concurrency=1) as b:
        with pytest.raises(BackendError) as caught:
            b.generate(echoes(10), on_result=lambda r: seen.append(r.request_id))
    message = str(caught.value)
    assert fake_server.calls == 3 < 10, "the batch went on after the streak"
    assert seen == ["r0", "r1"]  # the calls before the one that tripped it were reported
    assert message.startswith(f"3 calls in a row to {fake_server.url} (model 'm') failed")
    assert "max_failure_streak=3" in message and "HTTP 500: engine dead" in message


def test_the_streak_counts_across_batches_and_an_answer_ends_it(fake_server: FakeOpenAI) -> None:
    fake_server.script(status(500), status(500), ok("x"), status(500), status(500))
    with fast(fake_server.url, max_retries=0, max_failure_streak=3, max_concurrency=1) as b:
        for request in echoes(5):  # one per batch: failed, failed, answered, failed, failed
            b.generate([request])
        assert b.streak.count == 2
        fake_server.script(status(500))
        with pytest.raises(BackendError, match="3 calls in a row"):
            b.generate(echoes(1))


def test_scattered_failures_are_per_request_errors(fake_server: FakeOpenAI) -> None:
    """Failures with answers in between never make a streak: errors, no exception."""
    actions = [status(500) if i % 3 == 0 else ok() for i in range(12)]
    fake_server.script(*actions)
    with fast(fake_server.url, max_retries=0, max_failure_streak=2, max_concurrency=1) as b:
        results = b.generate(echoes(12))
    failed = [r for r in results if not r.ok]
    assert len(failed) == 4 and {r.error_kind for r in failed} == {"request_failed"}
    assert all("HTTP 500" in (r.error or "") for r in failed)
    assert sum(r.ok for r in results) == 8 and fake_server.calls == 12


def test_a_streak_of_zero_never_stops(fake_server: FakeOpenAI) -> None:
    fake_server.script(*[status(500) for _ in range(6)])
    with fast(fake_server.url, max_retries=0, max_failure_streak=0, max_concurrency=2) as b:
        results = b.generate(echoes(6))
    assert [r.error_kind for r in results] == ["request_failed"] * 6 and fake_server.calls == 6


def test_the_streak_with_concurrent_calls_stops_soon(fake_server: FakeOpenAI) -> None:
    """In-flight calls may finish when it trips; the rest of the batch is never sent."""
    fake_server.delay = 0.05
    fake_server.script(*[status(503) for _ in range(40)])
    with fast(fake_server.url, max_retries=0, max_failure_streak=4, max_concurrency=4) as b:
        with pytest.raises(BackendError, match="4 calls in a row"):
            b.generate(echoes(40))
    time.sleep(0.2)  # let calls still in flight reach the server's count
    assert fake_server.calls < 12


def test_max_failure_streak_from_the_file_and_the_flag(tmp_path: Path) -> None:
    config_file = tmp_path / "prefjudge.toml"
    config_file.write_text('[backend]\nmax_failure_streak = 5\n[backend.judge]\nmodel = "j"\n')
    assert load_backend_config(config_file).max_failure_streak == 5
    flagged = load_backend_config(config_file, stage="judge", overrides={"max_failure_streak": 0})
    assert flagged.max_failure_streak == 0
    assert BackendConfig().max_failure_streak == 20


# -- the CLI -------------------------------------------------------------------------------------


def test_generate_against_a_closed_port_fails_fast_naming_the_url(
    tmp_path: Path, dead_url: str
) -> None:
    out = tmp_path / "g.jsonl"
    started = time.monotonic()
    done = subprocess.run(
        cli_argv(
            "generate", str(SAMPLE_DIR / "tasks.jsonl"), "-o", str(out), "--backend", "openai",
            "--base-url", dead_url, "--model", "m", "--no-cache",
        ),
        capture_output=True, text=True, timeout=FAST,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert time.monotonic() - started < FAST
    assert f"cannot reach {dead_url} (model 'm'): connection refused" in flat(done.stderr)
    assert done.stdout == ""


def test_pair_against_a_closed_port_names_the_url(tmp_path: Path, dead_url: str) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("print('hi')\n")
    b.write_text("print('hello')\n")
    done = subprocess.run(
        cli_argv(
            "pair", str(a), str(b), "--instruction", "say hi", "--method", "monolithic",
            "--backend", "openai", "--base-url", dead_url, "--model", "m", "--no-cache",
        ),
        capture_output=True, text=True, timeout=FAST,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert f"cannot reach {dead_url} (model 'm'): connection refused" in flat(done.stderr)


def test_the_flag_is_offered() -> None:
    result = invoke("generate", "--help", env=WIDE, ok=True)
    assert "--max-failure-streak N" in result.output
