"""A whole-call deadline, and malformed response bodies as one errored request each."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pj_backend_helpers import (
    Action,
    FakeOpenAI,
    completion_body,
    endless,
    ok,
    raw_body,
    trickle,
    truncated,
)

from prefjudge.backends import ResponseCache, chat

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend

DEADLINE = 0.5
SLACK = 1.5  # starting the client, the backoff, a loaded machine


def backend(server: FakeOpenAI, tmp_path: Path | None = None, **kwargs) -> OpenAIBackend:
    cache = ResponseCache(tmp_path / "cache.sqlite") if tmp_path is not None else None
    settings = {"max_retries": 1, "backoff_base": 0.01, "timeout": DEADLINE, **kwargs}
    return OpenAIBackend(model="fake", base_url=server.url, cache=cache, **settings)


# -- the deadline ---------------------------------------------------------------------------


@pytest.mark.parametrize("stall", [trickle(0.05), endless(0.05)], ids=["trickle", "endless"])
def test_a_stalling_reply_fails_within_the_deadline(fake_server: FakeOpenAI, stall: Action) -> None:
    # a byte every 50 ms never trips a per-read timeout: without a deadline for the whole
    # call, the trickle takes ~12 s per attempt and the endless body never finishes
    fake_server.script(stall, stall)
    started = time.monotonic()
    with backend(fake_server) as b:
        [result] = b.generate([chat("r", "echo:late")])
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE * 2 + SLACK, f"took {elapsed:.1f} s"
    assert result.error_kind == "request_failed" and "timed out" in (result.error or "")
    assert "2 attempt" in (result.error or "")
    assert b.usage.retries == 1 and fake_server.calls == 2


@pytest.mark.parametrize("stall", [trickle(0.05), endless(0.05)], ids=["trickle", "endless"])
def test_a_stalled_call_is_retried_and_the_batch_goes_on(
    fake_server: FakeOpenAI, stall: Action
) -> None:
    fake_server.script(stall)  # the first call stalls; its retry and the others answer
    requests = [chat(f"r{i}", f"echo:{i}") for i in range(4)]
    started = time.monotonic()
    with backend(fake_server, max_concurrency=4) as b:
        results = b.generate(requests)
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE * 2 + SLACK, f"took {elapsed:.1f} s"
    assert [r.text for r in results] == ["0", "1", "2", "3"]
    assert b.usage.retries == 1 and fake_server.calls == 5


def test_a_slow_but_steady_reply_within_the_deadline_is_fine(fake_server: FakeOpenAI) -> None:
    fake_server.script(trickle(0.001, text="ok"))
    with backend(fake_server, timeout=10.0) as b:
        [result] = b.generate([chat("r", "x")])
    assert result.ok and result.text == "ok" and b.usage.retries == 0


# -- malformed bodies -------------------------------------------------------------------------


def body_with(**changes: object) -> Action:
    return raw_body(json.dumps({**completion_body("hello"), **changes}))


MALFORMED = {
    "truncated": truncated(),
    "not json": raw_body("<html>502 Bad Gateway</html>"),
    "html page": raw_body("<html>502 Bad Gateway</html>", content_type="text/html"),
    "empty": raw_body(b""),
    "null": raw_body("null"),
    "a list": raw_body("[1, 2]"),
    "no choices": raw_body('{"object": "chat.completion"}'),
    "empty choices": body_with(choices=[]),
    "choices not a list": body_with(choices="zzz"),
    "choice not an object": body_with(choices=[5]),
    "content not text": body_with(choices=[{"message": {"content": 5}}]),
    "finish_reason not text": body_with(
        choices=[{"message": {"content": "hi"}, "finish_reason": 3}]
    ),
}


def test_a_truncated_body_fails_one_request_of_a_batch(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    fake_server.script(ok(), truncated(), ok())
    requests = [chat(f"r{i}", f"echo:{i}") for i in range(3)]
    seen: list[str] = []
    with backend(fake_server, tmp_path, max_retries=0, max_concurrency=1) as b:
        results = b.generate(requests, on_result=lambda r: seen.append(r.request_id))
        assert len(b.cache) == 2  # the failure is not stored
    assert [r.request_id for r in results] == ["r0", "r1", "r2"] == sorted(seen)
    assert results[0].ok and results[2].ok and [results[0].text, results[2].text] == ["0", "2"]
    failed = results[1]
    assert failed.error_kind == "request_failed" and failed.text is None
    assert "malformed response" in (failed.error or "")
    assert b.usage.errors == 1


@pytest.mark.parametrize("bad", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_bodies_are_retried_then_recorded(fake_server: FakeOpenAI, bad: Action) -> None:
    fake_server.script(bad, ok("fine"))
    with backend(fake_server) as b:
        [recovered] = b.generate([chat("r", "x")])
    assert recovered.ok and recovered.text == "fine" and b.usage.retries == 1
    fake_server.script(bad, bad)
    with backend(fake_server) as b:
        [failed] = b.generate([chat("s", "y")])
    assert failed.error_kind == "request_failed" and "malformed response" in (failed.error or "")
    assert "2 attempt" in (failed.error or "") and len(failed.error or "") < 1000
    assert fake_server.calls == 4


def test_odd_usage_counts_do_not_spoil_a_reply(fake_server: FakeOpenAI) -> None:
    fake_server.script(body_with(usage={"prompt_tokens": "ten", "completion_tokens": None}))
    with backend(fake_server) as b:
        [result] = b.generate([chat("r", "x")])
    assert result.ok and result.text == "hello" and result.prompt_tokens == 0
