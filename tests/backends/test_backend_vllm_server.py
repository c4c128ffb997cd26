"""The openai backend end to end against a real vLLM OpenAI server (SmolLM2-135M on CPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, Field

from prefjudge.backends import BackendError, ResponseCache, Sampling, chat

pytestmark = pytest.mark.vllm
openai = pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend  # noqa: E402
from prefjudge.cli import main  # noqa: E402


class Verdict(BaseModel):
    winner: Literal["A", "B", "tie"]
    confidence: int = Field(ge=1, le=5)


PAIRS = [
    ("def add(a, b): return a + b", "def add(a, b): return sum([a, b])"),
    ("print('hi')", "print ( 'hi' )"),
    ("x = [i for i in range(3)]", "x = []\nfor i in range(3): x.append(i)"),
    ("import os", "from os import *"),
    ("def f(): pass", "def f():\n    '''Does nothing.'''"),
    ("a = 1", "a=1"),
    ("while True: break", "for _ in range(1): break"),
    ("s = 'a' + 'b'", "s = ''.join(['a', 'b'])"),
]


def judge_requests(max_tokens: int = 40) -> list:
    system = "You compare two Python snippets and say which is better."
    return [
        chat(
            f"pair-{i}",
            ("system", system),
            f"Snippet A:\n{a}\n\nSnippet B:\n{b}\n\nWhich is better?",
            schema_model=Verdict,
            sampling=Sampling(max_tokens=max_tokens),
        )
        for i, (a, b) in enumerate(PAIRS)
    ]


def make(server, cache: ResponseCache | None, **kwargs) -> OpenAIBackend:
    return OpenAIBackend(model=server.model, base_url=server.url, cache=cache, **kwargs)


def test_structured_output_concurrency_and_cache(vllm_server, tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.sqlite"
    order: list[str] = []
    with make(vllm_server, ResponseCache(cache_path), max_concurrency=4) as backend:
        results = backend.generate(judge_requests(), on_result=lambda r: order.append(r.request_id))
        usage = backend.usage
    assert [r.request_id for r in results] == [f"pair-{i}" for i in range(len(PAIRS))]
    assert sorted(order) == sorted(r.request_id for r in results)
    assert all(r.ok for r in results), [r.error for r in results]
    assert all(isinstance(r.parsed, Verdict) for r in results)
    assert usage.requests == len(PAIRS) and usage.errors == 0
    assert usage.model_calls >= len(PAIRS) and usage.cache_hits == 0
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    # re-running the finished stage: zero model calls, same answers
    with make(vllm_server, ResponseCache(cache_path), max_concurrency=1) as again:
        replay = again.generate(judge_requests())
        assert again.usage.model_calls == 0
        assert again.usage.cache_hits == len(PAIRS)  # one hit per request, repairs or not
    assert [r.parsed for r in replay] == [r.parsed for r in results]
    assert all(r.cached for r in replay)


def test_server_enforces_the_schema_for_a_tiny_model(vllm_server) -> None:
    """Without the schema, SmolLM2 does not write this JSON; with it, every reply parses."""
    with make(vllm_server, None) as backend:
        [free] = backend.generate([chat("free", "Say hello.", sampling=Sampling(max_tokens=20))])
        [forced] = backend.generate(
            [chat("forced", "Say hello.", schema_model=Verdict, sampling=Sampling(max_tokens=40))]
        )
    assert free.ok and free.parsed is None and free.text
    assert forced.ok and isinstance(forced.parsed, Verdict)


def test_truncated_replies_are_recorded_as_errors(vllm_server, tmp_path: Path) -> None:
    requests = judge_requests(max_tokens=3)[:2]
    with make(vllm_server, ResponseCache(tmp_path / "c.sqlite"), max_output_retries=1) as b:
        results = b.generate(requests)
        assert b.usage.errors == 2 and b.usage.invalid_outputs == 4
    for result in results:
        assert not result.ok and result.parsed is None
        assert result.error_kind == "truncated" and result.finish_reason == "length"
        assert result.text  # the raw text is kept
        assert result.attempts == 2


def test_unknown_model_stops_with_a_clear_error(vllm_server) -> None:
    backend = OpenAIBackend(model="no-such-model", base_url=vllm_server.url, max_retries=0)
    with backend, pytest.raises(BackendError, match="no-such-model"):
        backend.generate([chat("r", "hello")])


def test_models_check_command(vllm_server) -> None:
    args = ["models", "check", "--backend", "openai", "--base-url", vllm_server.url]
    result = CliRunner().invoke(main, [*args, "--model", vllm_server.model, "--format", "json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["answers"] is True and found["json_schema"] is True
    assert found["model_listed"] is True
    bad = CliRunner().invoke(main, [*args, "--model", "missing", "--format", "json"])
    assert bad.exit_code == 1
    assert json.loads(bad.stdout)["model_listed"] is False
