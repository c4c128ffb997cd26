"""The in-process vLLM backend (``vllm.LLM``), through the embedded SmolLM2 model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from prefjudge.backends import ResponseCache, Sampling, chat

pytestmark = pytest.mark.vllm


class Verdict(BaseModel):
    winner: Literal["A", "B", "tie"]


def chats(n: int, max_tokens: int = 24) -> list:
    return [
        chat(
            f"chat-{i}",
            ("system", "You judge which of two answers is better."),
            f"Question {i}: what is {i} + {i}?\nAnswer A: {2 * i}\nAnswer B: {2 * i + 1}",
            schema_model=Verdict,
            sampling=Sampling(max_tokens=max_tokens),
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def cache_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inproc") / "cache.sqlite"


@pytest.fixture(scope="module")
def embedded(embedded_checkpoint: Path, cache_file: Path) -> Iterator:
    from pj_backend_helpers import vllm_env

    from prefjudge.backends.embedded import EmbeddedBackend

    with pytest.MonkeyPatch.context() as patch:
        for name, value in vllm_env().items():
            patch.setenv(name, value)
        backend = EmbeddedBackend(
            checkpoint_dir=embedded_checkpoint,
            cache=ResponseCache(cache_file),
            engine_args={"max_model_len": 2048},
        )
        try:
            yield backend
        finally:
            backend.close()


def test_batch_of_structured_chats(embedded) -> None:
    results = embedded.generate(chats(16))
    assert [r.request_id for r in results] == [f"chat-{i}" for i in range(16)]
    assert all(r.ok for r in results), [r.error for r in results]
    assert all(isinstance(r.parsed, Verdict) for r in results)
    assert embedded.usage.model_calls >= 16
    assert embedded.usage.prompt_tokens > 0 and embedded.usage.completion_tokens > 0
    assert "chance level" in (embedded.notice or "")


def test_free_text_and_truncation(embedded) -> None:
    free, cut = embedded.generate(
        [
            chat("free", "Write one sentence about Python.", sampling=Sampling(max_tokens=12)),
            chat("cut", "Judge.", schema_model=Verdict, sampling=Sampling(max_tokens=2)),
        ]
    )
    assert free.ok and free.text and free.parsed is None
    assert cut.error_kind == "truncated" and cut.text is not None
    assert cut.attempts == embedded.max_output_retries + 1


def test_a_bad_request_fails_alone(embedded) -> None:
    too_long = chat("long", "word " * 3000, sampling=Sampling(max_tokens=4))
    fine = chat("fine", "Say yes.", sampling=Sampling(max_tokens=4))
    long_result, fine_result = embedded.generate([too_long, fine])
    assert long_result.error_kind == "rejected" and long_result.text is None
    assert fine_result.ok and fine_result.text


def test_rerun_from_cache_starts_no_engine(embedded_checkpoint: Path, cache_file: Path) -> None:
    from prefjudge.backends.embedded import EmbeddedBackend

    with EmbeddedBackend(
        checkpoint_dir=embedded_checkpoint,
        cache=ResponseCache(cache_file),
        engine_args={"max_model_len": 2048},
    ) as again:
        results = again.generate(chats(16))
        assert again._llm is None
        assert again.usage.model_calls == 0 and again.usage.cache_hits >= 16
    assert all(r.ok and r.cached for r in results)
