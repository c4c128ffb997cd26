"""Only valid replies are cached; fresh_calls skips the cache; repair turns stay small."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from pj_backend_helpers import FakeOpenAI, ok, status
from pydantic import BaseModel

from prefjudge.backends import ResponseCache, Sampling, chat
from prefjudge.backends.base import REPAIR_QUOTE_CHARS

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend


class Verdict(BaseModel):
    winner: Literal["A", "B", "tie"]
    reason: str


GOOD = '{"winner": "A", "reason": "shorter"}'
BAD = '{"winner": "C", "reason": "x"}'
HUGE = 10_000_000


def backend(server: FakeOpenAI, tmp_path: Path, **kwargs) -> OpenAIBackend:
    settings = {"max_retries": 1, "backoff_base": 0.01, "timeout": 30.0, **kwargs}
    cache = ResponseCache(tmp_path / "cache.sqlite")
    return OpenAIBackend(model="fake", base_url=server.url, cache=cache, **settings)


def judge(request_id: str = "r", prompt: str = "judge") -> object:
    return chat(request_id, prompt, schema_model=Verdict)


def test_a_repaired_request_reruns_from_the_cache(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    fake_server.script(ok(BAD), ok(BAD), ok(GOOD))
    with backend(fake_server, tmp_path) as b:
        [first] = b.generate([judge()])
        assert len(b.cache) == 1  # the final valid reply only, none of the invalid ones
    assert first.ok and first.attempts == 3 and fake_server.calls == 3
    with backend(fake_server, tmp_path) as again:
        [second] = again.generate([judge()])
        assert again.usage.model_calls == 0 and again.usage.cache_hits == 1
    assert fake_server.calls == 3
    assert second.ok and second.cached and second.parsed == first.parsed
    assert second.text == GOOD and second.attempts == 1
    assert (second.prompt_tokens, second.completion_tokens) == (0, 0)


def test_only_failed_requests_of_a_batch_are_asked_again(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    def reply(body: dict) -> str:
        return BAD if "broken" in body["messages"][0]["content"] else GOOD

    fake_server.reply = reply
    requests = [judge("a", "judge a"), judge("b", "judge broken b"), judge("c", "judge c")]
    requests.append(chat("cut", "judge cut", schema_model=Verdict, sampling=Sampling(seed=1)))
    fake_server.script(ok(), ok(), ok(), ok('{"winner": "A', finish_reason="length"))
    with backend(fake_server, tmp_path, max_output_retries=0, max_concurrency=1) as b:
        first = b.generate(requests)
        assert len(b.cache) == 2
    assert [r.error_kind for r in first] == [None, "invalid_output", None, "truncated"]
    fake_server.reset_counts()
    fake_server.reply = lambda body: GOOD  # the server is fixed
    with backend(fake_server, tmp_path, max_output_retries=0) as again:
        second = again.generate(requests)
    assert all(r.ok for r in second)
    assert [r.cached for r in second] == [True, False, True, False]
    assert fake_server.calls == 2


def test_failed_calls_are_not_stored(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    fake_server.script(status(503), status(503), status(400, error="nope"))
    with backend(fake_server, tmp_path, max_concurrency=1) as b:
        failed, rejected = b.generate([chat("a", "echo:x"), chat("b", "echo:y")])
        assert len(b.cache) == 0
    assert failed.error_kind == "request_failed" and rejected.error_kind == "rejected"


def test_fresh_calls_skip_reading_but_still_write(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    request = chat("r", "tell me")
    fake_server.reply = lambda body: "first answer"
    with backend(fake_server, tmp_path) as b:
        [first] = b.generate([request])
        [cached] = b.generate([request])
        assert cached.cached and fake_server.calls == 1
        fake_server.reply = lambda body: "second answer"
        with b.fresh_calls():
            [fresh] = b.generate([request])
            with b.fresh_calls():  # nesting is fine
                pass
            [fresh_again] = b.generate([request])
        assert not fresh.cached and fresh.text == "second answer"
        assert not fresh_again.cached and fake_server.calls == 3
        [after] = b.generate([request])  # reading again: the fresh answer replaced the old
    assert after.cached and after.text == "second answer" and fake_server.calls == 3
    assert first.text == "first answer"


def test_fresh_calls_repair_and_store_under_the_first_key(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    fake_server.script(ok(BAD), ok(GOOD))
    with backend(fake_server, tmp_path) as b:
        with b.fresh_calls():
            [result] = b.generate([judge()])
        assert result.ok and result.attempts == 2
        [rerun] = b.generate([judge()])
    assert rerun.cached and rerun.parsed == result.parsed and fake_server.calls == 2


def test_a_huge_invalid_reply_is_quoted_as_an_excerpt(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    huge = '{"winner": "C", "reason": "' + "x" * HUGE + '"}'
    fake_server.script(ok(huge), ok("y" * HUGE), ok(GOOD))
    with backend(fake_server, tmp_path, max_output_retries=2) as b:
        [result] = b.generate([judge()])
        size = b.cache.size_bytes()
    assert result.ok and result.attempts == 3
    assert fake_server.calls == 3
    for body in fake_server.bodies[1:]:  # the repair turns
        assert len(json.dumps(body)) < 3 * REPAIR_QUOTE_CHARS
        quoted = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
        assert all(len(q) < REPAIR_QUOTE_CHARS + 100 and "characters cut" in q for q in quoted)
        assert "10,000,0" in body["messages"][-1]["content"]  # says how long the reply was
    assert quoted[0].startswith('{"winner": "C", "reason": "xxx') and quoted[0].endswith('x"}')
    assert size < 200_000, f"the cache grew to {size:,} bytes"


def test_a_huge_invalid_reply_that_stays_invalid(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    huge = '{"winner": "C", "reason": "' + "x" * HUGE + '"}'
    fake_server.reply = lambda body: huge
    with backend(fake_server, tmp_path, max_output_retries=1) as b:
        [result] = b.generate([judge()])
        assert len(b.cache) == 0 and b.cache.size_bytes() < 200_000
    assert result.error_kind == "invalid_output"
    assert len(result.error or "") < 2000  # the error names the problem, not the reply
    assert result.text == huge  # the raw reply itself is kept whole for the caller
