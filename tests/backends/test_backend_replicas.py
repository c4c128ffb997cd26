"""Several OpenAI-compatible replicas of one model behind one backend (``--base-url`` repeated).

Real loopback HTTP servers (the fake OpenAI server of pj_backend_helpers, and once the real
vLLM server): requests are spread over the replicas, least-loaded first, each replica with
its own ``max_concurrency``; a replica that is down is avoided and its calls are retried on
another within the retry budget; the cache identity is the set of replicas, so neither the
order of the URLs nor which replica answered changes a key, and one URL keeps the keys it
always had.
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pj_backend_helpers import FakeOpenAI, serve_fake, status
from pj_cli import SAMPLE_DIR, flat, rows
from pydantic import BaseModel

from prefjudge.backends import BackendError, ResponseCache, Sampling, chat, create_backend
from prefjudge.backends.config import BackendConfig, ConfigError, load_backend_config
from prefjudge.cli import main

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend, normalize_base_url


def make(urls: str | list[str], cache: Path | None = None, **kwargs: Any) -> OpenAIBackend:
    settings = {"max_retries": 2, "backoff_base": 0.01, "timeout": 5.0, "api_key": "k", **kwargs}
    store = ResponseCache(cache) if cache is not None else None
    return OpenAIBackend(model="fake", base_url=urls, cache=store, **settings)


def echoes(n: int, prefix: str = "") -> list:
    return [chat(f"r{i}", f"echo:{prefix}{i}") for i in range(n)]


def asked(server: FakeOpenAI) -> list[str]:
    """The echo payloads a fake server was asked for, in arrival order."""
    return [body["messages"][0]["content"].split("echo:", 1)[1] for body in server.bodies]


def within(seconds: float, function: Any, *args: Any) -> Any:
    """Run ``function(*args)``; fail (instead of hanging the suite) past ``seconds``."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args).result(timeout=seconds)


@pytest.fixture
def second_server() -> Iterator[FakeOpenAI]:
    with serve_fake() as state:
        yield state


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port that refuses connections: bound, never listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


# -- dispatch ----------------------------------------------------------------------------------


def test_requests_spread_over_replicas_each_with_its_own_limit(
    fake_server: FakeOpenAI, second_server: FakeOpenAI
) -> None:
    fake_server.delay = second_server.delay = 0.2
    requests = echoes(8)
    started = time.monotonic()
    with make([fake_server.url, second_server.url], max_concurrency=1) as backend:
        results = backend.generate(requests)
        notice = backend.notice
    elapsed = time.monotonic() - started
    assert [r.request_id for r in results] == [r.id for r in requests]  # request order
    assert [r.text for r in results] == [str(i) for i in range(8)]
    # each replica got some, never more than its one slot at a time (counted server-side)
    assert fake_server.calls >= 2 and second_server.calls >= 2
    assert fake_server.calls + second_server.calls == 8
    assert fake_server.peak == 1 and second_server.peak == 1
    assert elapsed < 8 * 0.2 * 0.8, "two replicas must serve in parallel"
    # provenance: each result names the replica that answered, matching what each saw
    by_replica = {url: [r.text for r in results if r.endpoint == url]
                  for url in (fake_server.url, second_server.url)}
    assert sorted(by_replica[fake_server.url]) == sorted(asked(fake_server))
    assert sorted(by_replica[second_server.url]) == sorted(asked(second_server))
    assert notice is not None and notice.startswith("2 replicas:")
    assert f"{fake_server.url} answered {fake_server.calls} of {fake_server.calls}" in notice


def test_dispatch_is_least_loaded_with_ties_to_the_first_given(
    fake_server: FakeOpenAI, second_server: FakeOpenAI
) -> None:
    fake_server.delay = second_server.delay = 0.2
    with make([second_server.url, fake_server.url], max_concurrency=2) as backend:
        backend.generate(echoes(3))
        # r0: both idle, the first given; r1: the idle one; r2: 1 and 1, the first given
        assert sorted(asked(second_server)) == ["0", "2"] and asked(fake_server) == ["1"]
        second_server.reset_counts()
        fake_server.reset_counts()
        fake_server.delay = second_server.delay = 0.0
        for request in echoes(3, prefix="one-by-one "):
            backend.generate([request])  # nothing in flight: always the first given
    assert len(asked(second_server)) == 3 and fake_server.calls == 0


def test_one_url_in_a_list_is_that_url(fake_server: FakeOpenAI) -> None:
    with make([fake_server.url], max_concurrency=1) as listed, make(fake_server.url) as plain:
        assert listed.identity() == plain.identity()
        [result] = listed.generate(echoes(1))
        assert result.ok and result.endpoint == fake_server.url
        assert listed.notice is None  # the replica summary is for several replicas


# -- failures ----------------------------------------------------------------------------------


def test_a_replica_that_is_down_is_avoided(fake_server: FakeOpenAI, refused_url: str) -> None:
    fake_server.delay = 0.05
    requests = echoes(6)
    # the dead replica first: ties go to it, so it is tried, fails, and is left alone
    with make([refused_url, fake_server.url], max_concurrency=2, max_retries=1) as backend:
        results = within(30, backend.generate, requests)
        dead, live = backend.replicas
    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.text for r in results] == [str(i) for i in range(6)]
    assert {r.endpoint for r in results} == {fake_server.url}
    assert fake_server.calls == 6 and live.answered == 6  # each request answered once
    assert dead.calls >= 1 and dead.answered == 0 and dead.failed == dead.calls
    # one retry each is enough: a retry goes to another replica than the one that failed it
    assert backend.usage.retries == dead.calls <= 6 and backend.usage.errors == 0


def test_a_failed_replica_is_left_alone_for_its_cool_down(
    fake_server: FakeOpenAI, refused_url: str
) -> None:
    started = time.monotonic()
    with make([refused_url, fake_server.url], backoff_base=5.0) as backend:
        for request in echoes(3):  # one at a time: ties would send each to the dead one
            [result] = backend.generate([request])
            assert result.ok and result.endpoint == fake_server.url
        dead, _ = backend.replicas
    assert dead.calls == 1 and backend.usage.retries == 1 and fake_server.calls == 3
    assert time.monotonic() - started < 4.0  # the retry went to the live replica at once


def test_a_5xx_is_retried_on_another_replica_at_once(
    fake_server: FakeOpenAI, second_server: FakeOpenAI
) -> None:
    fake_server.script(status(503))
    started = time.monotonic()
    with make([fake_server.url, second_server.url], backoff_base=5.0) as backend:
        [result] = backend.generate(echoes(1))
    assert result.ok and result.text == "0" and result.endpoint == second_server.url
    assert fake_server.calls == 1 and second_server.calls == 1 and backend.usage.retries == 1
    assert time.monotonic() - started < 3.0, "a free healthy replica needs no backoff"


def test_every_replica_down_stops_the_batch_naming_each(refused_url: str) -> None:
    """Both replicas refuse before either ever answered: the endpoint is dead, not flaky."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.bind(("127.0.0.1", 0))
        second = f"http://127.0.0.1:{other.getsockname()[1]}/v1"
        with make([refused_url, second], max_retries=2, max_concurrency=1) as backend:
            started = time.monotonic()
            with pytest.raises(BackendError, match="cannot reach any of its replicas") as caught:
                backend.generate(echoes(3))
            assert time.monotonic() - started < 30
    assert refused_url in str(caught.value) and second in str(caught.value)


def test_a_401_from_any_replica_stops_the_run(
    fake_server: FakeOpenAI, second_server: FakeOpenAI
) -> None:
    second_server.script(status(401, error="bad key"))
    fake_server.delay = 0.2  # r0 stays on the first replica; r1 goes to the second
    with make([fake_server.url, second_server.url]) as backend, pytest.raises(
        BackendError, match=f"{second_server.url} answered 401"
    ):
        backend.generate(echoes(2))


# -- the cache identity ------------------------------------------------------------------------


class Verdict(BaseModel):  # the same name and fields as when the digests below were taken
    winner: str


# Keys of the code before replicas existed, for base_url "http://127.0.0.1:8000/v1/", model
# "m": printed by BackendBase.cache_key at commit fc4ba6c (before this change). A single-URL
# run must keep them byte for byte, or every existing cache would stop answering.
KEY_STRUCTURED = "452686766347074759d5d26a95f24327baae193bc19c10e1b53df7a3087282d5"
KEY_FREE_TEXT = "ba9fb81633eff937d766b8dceb9cf1b24313e129a359c9705dc718386db131cc"
KEY_MODEL_ID = "7a069642906e5cc34f1aacdefb8b72482474ae4f9081b5fcf3b2397239d199b4"


def key(backend: OpenAIBackend, request: Any) -> str:
    return backend.cache_key(request, [m.model_dump() for m in request.messages])


def test_single_url_keys_are_the_keys_of_before() -> None:
    url = "http://127.0.0.1:8000/v1/"
    structured = chat("r1", ("system", "You judge."), "Which is better?",
                      sampling=Sampling(max_tokens=8, seed=3), schema_model=Verdict)
    free = chat("r2", "plain text please")
    for given in (url, [url]):
        backend = OpenAIBackend(model="m", base_url=given, api_key="k")
        assert key(backend, structured) == KEY_STRUCTURED
        assert key(backend, free) == KEY_FREE_TEXT
        assert backend.identity()["endpoint"] == "http://127.0.0.1:8000/v1"
        named = OpenAIBackend(model="m", base_url=given, api_key="k", model_id="m@ckpt")
        assert key(named, free) == KEY_MODEL_ID
    # built the way the commands build it, from a one-URL flag or file setting
    via_config = create_backend(BackendConfig(base_url=[url], model="m", no_cache=True))
    assert isinstance(via_config, OpenAIBackend) and key(via_config, free) == KEY_FREE_TEXT
    # an explicit endpoint identity equal to the URL is that URL's identity
    same = OpenAIBackend(model="m", base_url=["http://a/v1", "http://b/v1"], api_key="k",
                         endpoint_id=url)
    assert key(same, free) == KEY_FREE_TEXT


def test_a_cache_filled_through_replicas_answers_them_in_any_order(
    fake_server: FakeOpenAI, second_server: FakeOpenAI, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    fake_server.delay = second_server.delay = 0.05
    requests = echoes(6)
    with make([fake_server.url, second_server.url], cache, max_concurrency=1) as forward:
        first = forward.generate(requests)
        identity = forward.identity()
    assert fake_server.calls and second_server.calls  # both replicas filled the cache
    assert identity["endpoint"] == ", ".join(
        sorted([normalize_base_url(fake_server.url), normalize_base_url(second_server.url)]))
    fake_server.reset_counts()
    second_server.reset_counts()
    with make([second_server.url + "/", fake_server.url], cache) as backward:
        assert backward.identity() == identity
        again = backward.generate(requests)
        assert backward.usage.cache_hits == 6 and backward.usage.model_calls == 0
    assert fake_server.calls == 0 and second_server.calls == 0
    assert [r.text for r in again] == [r.text for r in first] and all(r.cached for r in again)
    assert all(r.endpoint is None for r in again)  # a cached reply came from no replica
    # the set is the identity: one of the replicas alone is another endpoint
    with make(fake_server.url, cache) as alone:
        [single] = alone.generate(requests[:1])
    assert not single.cached and fake_server.calls == 1
    with ResponseCache(cache) as store:
        endpoints = {group.endpoint for group in store.stats().groups}
    assert endpoints == {identity["endpoint"], normalize_base_url(fake_server.url)}


# -- configuration and the command line --------------------------------------------------------


def test_configuration_accepts_a_string_or_a_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefjudge.experiment.config import BackendSpec
    from prefjudge.experiment.plan import stage_backend

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "prefjudge.toml"
    config.write_text('[backend]\nbase_url = "http://a:8000/v1"\n')
    assert load_backend_config().base_url == "http://a:8000/v1"
    config.write_text('[backend]\nbase_url = ["http://a:8000/v1", "http://b:8000/v1"]\n')
    assert load_backend_config().base_url == ["http://a:8000/v1", "http://b:8000/v1"]
    config.write_text('[backend]\nbase_url = ["http://a:8000/v1"]\n')
    assert load_backend_config().base_url == "http://a:8000/v1"
    for bad in ('["http://a:8000/v1", "http://A:8000/v1/"]', "[]"):
        config.write_text(f"[backend]\nbase_url = {bad}\n")
        with pytest.raises(ConfigError, match="base_url"):
            load_backend_config()
    spec = BackendSpec(model="m", base_url=["http://a/v1", "http://b/v1"])
    replicas = stage_backend(spec, tmp_path / "c.sqlite")
    assert (replicas.kind, replicas.model) == ("openai", "m")
    assert replicas.base_url == ["http://a/v1", "http://b/v1"]
    single = stage_backend(BackendSpec(model="m", base_url="http://a/v1"), tmp_path / "c",
                           max_tokens=5)
    assert single.base_url == "http://a/v1" and single.max_tokens == 5
    assert BackendSpec(base_url=["http://a/v1"]).base_url == "http://a/v1"


@pytest.fixture
def augmented(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(SAMPLE_DIR / "tasks.jsonl", data / "tasks.jsonl")
    path = data / "augmented.jsonl"
    made = CliRunner().invoke(main, ["augment", str(data / "tasks.jsonl"), "-o", str(path),
                                     "--k", "1", "--selector", "rule", "--limit", "4"])
    assert made.exit_code == 0, made.output
    return path


def test_generate_command_with_two_replicas(
    fake_server: FakeOpenAI, second_server: FakeOpenAI, augmented: Path, tmp_path: Path
) -> None:
    fake_server.delay = second_server.delay = 0.05
    out, cache = tmp_path / "gens.jsonl", tmp_path / "cache.sqlite"

    def generate(*urls: str, extra: tuple[str, ...] = ()) -> Any:
        flags = [arg for url in urls for arg in ("--base-url", url)]
        return CliRunner().invoke(main, [
            "generate", str(augmented), "-o", str(out), "--k", "0..1", "--protocol", "single",
            "--backend", "openai", "--model", "fake", "--max-concurrency", "1",
            "--cache", str(cache), *flags, *extra])

    first = generate(fake_server.url, second_server.url)
    assert first.exit_code == 0, first.output
    records = rows(out)
    assert len(records) == 8 and all(r.get("error") is None for r in records)
    assert fake_server.calls and second_server.calls
    assert fake_server.calls + second_server.calls == 8
    assert fake_server.peak == 1 and second_server.peak == 1
    summary = flat(first.output)
    assert "2 replicas:" in summary and fake_server.url in summary and second_server.url in summary
    fake_server.reset_counts()
    second_server.reset_counts()
    # the other order is the same endpoint: the journal resumes, and the cache answers
    resumed = generate(second_server.url, fake_server.url)
    assert resumed.exit_code == 0, resumed.output
    assert "0 generation(s) to go" in flat(resumed.output)
    again = generate(second_server.url, fake_server.url, extra=("--force-new",))
    assert again.exit_code == 0, again.output
    assert fake_server.calls == 0 and second_server.calls == 0
    assert rows(out) == records
    twice = generate(fake_server.url, fake_server.url + "/")
    assert twice.exit_code == 2 and "same endpoint" in flat(twice.output)


def test_endpoint_id_keeps_a_run_going_when_a_replica_is_added(
    fake_server: FakeOpenAI, second_server: FakeOpenAI, augmented: Path, tmp_path: Path
) -> None:
    out, cache = tmp_path / "gens.jsonl", tmp_path / "cache.sqlite"

    def generate(ks: str, *flags: str) -> Any:
        return CliRunner().invoke(main, [
            "generate", str(augmented), "-o", str(out), "--k", ks, "--protocol", "single",
            "--backend", "openai", "--model", "fake", "--cache", str(cache),
            "--base-url", fake_server.url, *flags])

    begun = generate("0")
    assert begun.exit_code == 0, begun.output
    assert len(rows(out)) == 4 and fake_server.calls == 4
    # the set of replicas is another endpoint: the output bound to one URL is not resumed
    grown = generate("0..1", "--base-url", second_server.url)
    assert grown.exit_code == 1 and "setting model" in flat(grown.output)
    # named after the URL it began on, the deployment keeps its identity as it grows
    named = generate("0..1", "--base-url", second_server.url, "--endpoint-id", fake_server.url)
    assert named.exit_code == 0, named.output
    assert "4 record(s) there, 4 generation(s) to go" in flat(named.output)
    assert fake_server.calls + second_server.calls == 8 and len(rows(out)) == 8


def test_models_check_lists_what_every_replica_serves(
    fake_server: FakeOpenAI, second_server: FakeOpenAI
) -> None:
    done = CliRunner().invoke(main, [
        "models", "check", "--backend", "openai", "--model", "fake", "--format", "json",
        "--base-url", fake_server.url, "--base-url", second_server.url])
    found = json.loads(done.stdout)
    assert found["base_url"] == [fake_server.url, second_server.url]
    assert found["model_listed"] is True and found["answers"] is True
    assert done.exit_code == 1  # the fake server does not enforce JSON schemas
    assert fake_server.calls + second_server.calls == 2


# -- the real vLLM server ----------------------------------------------------------------------


@pytest.mark.vllm
def test_two_urls_of_the_real_vllm_server(vllm_server: Any, tmp_path: Path) -> None:
    """Two names of one vLLM server as two replicas: both serve, and the cache is one."""
    port = vllm_server.url.rsplit(":", 1)[1].split("/", 1)[0]
    urls = [f"http://127.0.0.1:{port}/v1", f"http://localhost:{port}/v1"]
    requests = [chat(f"q{i}", f"Name the number {i} in one word.",
                     sampling=Sampling(max_tokens=8)) for i in range(4)]
    cache = tmp_path / "cache.sqlite"

    def backend(given: list[str]) -> OpenAIBackend:
        return OpenAIBackend(model=vllm_server.model, base_url=given, api_key="k",
                             cache=ResponseCache(cache), max_concurrency=1, timeout=60.0)

    with backend(urls) as forward:
        results = forward.generate(requests)
        calls = [replica.answered for replica in forward.replicas]
    assert [r.request_id for r in results] == [r.id for r in requests]
    assert all(r.ok and r.text is not None for r in results), [r.error for r in results]
    assert {r.endpoint for r in results} == set(urls) and calls[0] and calls[1]
    with backend(urls[::-1]) as backward:
        replay = backward.generate(requests)
        assert backward.usage.model_calls == 0 and backward.usage.cache_hits == 4
    assert [r.text for r in replay] == [r.text for r in results]
