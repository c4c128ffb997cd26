"""The openai backend against a local server that fails, stalls and lies on purpose."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Literal

import pytest
from pj_backend_helpers import FakeOpenAI, ok, slow, status
from pydantic import BaseModel

from prefjudge.backends import BackendError, ResponseCache, Sampling, chat

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend

SRC = Path(__file__).resolve().parents[2] / "src"


class Verdict(BaseModel):
    winner: Literal["A", "B", "tie"]
    reason: str


GOOD = '{"winner": "A", "reason": "shorter"}'


def backend(server: FakeOpenAI, tmp_path: Path | None = None, **kwargs) -> OpenAIBackend:
    cache = ResponseCache(tmp_path / "cache.sqlite") if tmp_path is not None else None
    settings = {"max_retries": 3, "backoff_base": 0.01, "timeout": 5.0, **kwargs}
    return OpenAIBackend(model="fake", base_url=server.url, cache=cache, **settings)


def test_structured_reply_is_validated(fake_server: FakeOpenAI) -> None:
    with backend(fake_server) as b:
        [result] = b.generate([chat("r1", f"echo:{GOOD}", schema_model=Verdict)])
    assert result.ok, result.error
    assert result.parsed == Verdict(winner="A", reason="shorter")
    assert (result.prompt_tokens, result.completion_tokens) == (10, 5)
    sent = fake_server.bodies[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["name"] == "Verdict"
    assert sent["response_format"]["json_schema"]["schema"] == Verdict.model_json_schema()
    assert "strict" not in sent["response_format"]["json_schema"]
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 1024 and "seed" not in sent
    assert b.usage.as_dict() == {
        "requests": 1,
        "model_calls": 1,
        "cache_hits": 0,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "retries": 0,
        "invalid_outputs": 0,
        "errors": 0,
    }


def test_sampling_is_sent(fake_server: FakeOpenAI) -> None:
    sampling = Sampling(temperature=0.7, top_p=0.9, max_tokens=33, seed=5, stop=("END",))
    with backend(fake_server, strict_schema=True, extra_body={"top_k": 4}) as b:
        b.generate([chat("r", "echo:{}", sampling=sampling, sample=2, schema_model=Verdict)])
    sent = fake_server.bodies[0]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.7, 0.9, 33)
    assert sent["seed"] == 7 and sent["stop"] == ["END"] and sent["top_k"] == 4
    assert sent["response_format"]["json_schema"]["strict"] is True


def test_invalid_reply_is_repaired(fake_server: FakeOpenAI) -> None:
    fake_server.script(ok('{"winner": "C", "reason": "x"}'), ok(GOOD))
    with backend(fake_server) as b:
        [result] = b.generate([chat("r", "judge", schema_model=Verdict)])
    assert result.ok and result.attempts == 2
    assert result.parsed.winner == "A"
    repair = fake_server.bodies[1]["messages"]
    assert repair[1] == {"role": "assistant", "content": '{"winner": "C", "reason": "x"}'}
    assert "winner" in repair[2]["content"]
    assert b.usage.invalid_outputs == 1 and b.usage.model_calls == 2


def test_invalid_reply_is_recorded_with_raw_text_and_not_cached(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    fake_server.reply = lambda body: "I think A is better."
    with backend(fake_server, tmp_path, max_output_retries=2) as b:
        [result] = b.generate([chat("r", "judge", schema_model=Verdict)])
        assert len(b.cache) == 0  # invalid replies are never stored
    assert not result.ok and result.parsed is None
    assert result.error_kind == "invalid_output"
    assert result.text == "I think A is better."
    assert result.attempts == 3 and fake_server.calls == 3
    assert b.usage.errors == 1 and b.usage.invalid_outputs == 3
    # once the server is fixed, a re-run asks again instead of replaying the errors
    fake_server.reply = lambda body: GOOD
    with backend(fake_server, tmp_path, max_output_retries=2) as again:
        [fixed] = again.generate([chat("r", "judge", schema_model=Verdict)])
    assert fake_server.calls == 4
    assert fixed.ok and not fixed.cached and fixed.parsed == Verdict(winner="A", reason="shorter")


def test_truncated_reply(fake_server: FakeOpenAI) -> None:
    fake_server.script(ok('{"winner": "A", "rea', finish_reason="length"))
    with backend(fake_server, max_output_retries=0) as b:
        [result] = b.generate([chat("r", "judge", schema_model=Verdict)])
    assert result.error_kind == "truncated" and result.finish_reason == "length"
    assert result.text == '{"winner": "A", "rea'


def test_429_honours_retry_after(fake_server: FakeOpenAI) -> None:
    fake_server.script(status(429, retry_after="1"))
    started = time.monotonic()
    with backend(fake_server, backoff_base=0.01) as b:
        [result] = b.generate([chat("r", "echo:hi")])
    elapsed = time.monotonic() - started
    assert result.ok and result.text == "hi"
    assert elapsed >= 1.0, "Retry-After: 1 must be waited, not the 10 ms backoff"
    assert b.usage.retries == 1 and fake_server.calls == 2


def test_5xx_are_retried_then_succeed(fake_server: FakeOpenAI) -> None:
    fake_server.script(status(500), status(503))
    with backend(fake_server) as b:
        [result] = b.generate([chat("r", "echo:hi")])
    assert result.ok and b.usage.retries == 2 and fake_server.calls == 3


def test_persistent_5xx_is_recorded_and_not_cached(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    fake_server.script(*[status(500)] * 3)
    with backend(fake_server, tmp_path, max_retries=2) as b:
        [result] = b.generate([chat("r", "echo:hi")])
    assert result.error_kind == "request_failed" and "HTTP 500" in (result.error or "")
    assert "3 attempt" in (result.error or "")
    assert fake_server.calls == 3 and b.usage.errors == 1
    with backend(fake_server, tmp_path) as b:  # transient failures are retried on re-run
        [result] = b.generate([chat("r", "echo:hi")])
    assert result.ok and not result.cached and fake_server.calls == 4


def test_timeout_is_retried(fake_server: FakeOpenAI) -> None:
    fake_server.script(slow(3.0))
    with backend(fake_server, timeout=0.5) as b:
        [result] = b.generate([chat("r", "echo:late")])
    assert result.ok and result.text == "late"
    assert b.usage.retries == 1


def test_timeouts_exhausted(fake_server: FakeOpenAI) -> None:
    fake_server.delay = 2.0
    with backend(fake_server, timeout=0.3, max_retries=1) as b:
        [result] = b.generate([chat("r", "echo:late")])
    assert result.error_kind == "request_failed" and "timed out" in (result.error or "")


def test_400_is_rejected_without_retry(fake_server: FakeOpenAI) -> None:
    fake_server.script(status(400, error="context too long"))
    with backend(fake_server, max_concurrency=1) as b:
        results = b.generate([chat("r", "echo:x"), chat("s", "echo:y")])
    assert results[0].error_kind == "rejected" and "context too long" in (results[0].error or "")
    assert results[1].ok
    assert fake_server.calls == 2 and b.usage.retries == 0


def test_401_stops_the_run(fake_server: FakeOpenAI) -> None:
    fake_server.script(status(401, error="bad key"))
    with backend(fake_server) as b, pytest.raises(BackendError, match="401"):
        b.generate([chat("r", "echo:x")])


def test_concurrency_is_bounded(fake_server: FakeOpenAI) -> None:
    fake_server.delay = 0.3
    requests = [chat(f"r{i}", f"echo:{i}") for i in range(12)]
    seen: list[str] = []
    started = time.monotonic()
    with backend(fake_server, max_concurrency=4) as b:
        results = b.generate(requests, on_result=lambda r: seen.append(r.request_id))
    elapsed = time.monotonic() - started
    assert [r.text for r in results] == [str(i) for i in range(12)]  # request order
    assert sorted(seen) == sorted(r.id for r in requests)
    assert fake_server.peak == 4
    assert elapsed < 12 * 0.3 / 2


def test_rerun_hits_cache_with_zero_calls(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    requests = [
        chat(f"r{i}", f'echo:{{"winner": "B", "reason": "{i}"}}', schema_model=Verdict)
        for i in range(5)
    ]
    requests += [chat("free", "echo:free text")]
    with backend(fake_server, tmp_path) as b:
        first = b.generate(requests)
    calls = fake_server.calls
    # a new process would see the same: another backend over the same cache file,
    # with different concurrency and timeouts, which are not part of the key
    with backend(fake_server, tmp_path, max_concurrency=1, timeout=1.0) as b:
        second = b.generate(requests)
    assert fake_server.calls == calls
    assert b.usage.model_calls == 0 and b.usage.cache_hits == len(requests)
    assert all(r.cached for r in second)
    assert [r.parsed for r in second] == [r.parsed for r in first]
    assert [r.text for r in second] == [r.text for r in first]


def test_no_cache_calls_again(fake_server: FakeOpenAI) -> None:
    with backend(fake_server) as b:
        b.generate([chat("r", "echo:x")])
        b.generate([chat("r", "echo:x")])
    assert fake_server.calls == 2


STAGE = """
import json, sys
from prefjudge.backends import ResponseCache, chat
from prefjudge.backends.openai_http import OpenAIBackend

url, cache_path, out_path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if __name__ == "__main__":
    backend = OpenAIBackend(model="fake", base_url=url, cache=ResponseCache(cache_path),
                            max_concurrency=1)
    requests = [chat(f"r{i}", f"echo:reply {i}") for i in range(n)]
    results = backend.generate(requests, on_result=lambda r: print(r.request_id, flush=True))
    with open(out_path, "w") as handle:
        for result in results:
            handle.write(json.dumps(result.model_dump(mode="json")) + "\\n")
    backend.close()
"""


def test_killed_stage_resumes_without_repeating_calls(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    script = tmp_path / "stage.py"
    script.write_text(textwrap.dedent(STAGE))
    cache_path, out_path, n = tmp_path / "cache.sqlite", tmp_path / "out.jsonl", 12
    fake_server.delay = 0.15
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    args = [sys.executable, str(script), fake_server.url, str(cache_path), str(out_path), str(n)]
    stage = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)
    assert stage.stdout is not None
    for _ in range(4):  # four calls finished
        assert stage.stdout.readline().strip()
    stage.send_signal(signal.SIGKILL)
    stage.wait(timeout=10)
    stage.stdout.close()
    assert not out_path.exists()
    with ResponseCache(cache_path) as cache:
        finished = len(cache)
    assert 4 <= finished < n
    first_run_calls = fake_server.calls
    fake_server.reset_counts()
    fake_server.delay = 0.0
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    asked = [b["messages"][0]["content"] for b in fake_server.bodies]
    assert len(asked) == n - finished, "finished calls must not be repeated"
    assert len(set(asked)) == len(asked)
    assert first_run_calls - finished <= 1  # at most the call in flight was lost
    rows = [json.loads(line) for line in out_path.read_text().splitlines()]
    assert [row["text"] for row in rows] == [f"reply {i}" for i in range(n)]
    assert sum(row["cached"] for row in rows) == finished
    fake_server.reset_counts()
    again = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert again.returncode == 0 and fake_server.calls == 0


def test_generate_inside_a_running_event_loop(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    """Notebooks and async callers already run a loop; generate still works there."""
    import asyncio

    async def caller() -> list:
        with backend(fake_server, tmp_path) as b:
            return b.generate([chat("r", f"echo:{GOOD}", schema_model=Verdict)])

    [result] = asyncio.run(caller())
    assert result.ok
    dumped = result.model_dump(mode="json")
    assert dumped["parsed"] == {"winner": "A", "reason": "shorter"}
    assert json.loads(json.dumps(dumped))["request_id"] == "r"


def test_models_check_command_offline(fake_server: FakeOpenAI) -> None:
    from click.testing import CliRunner

    from prefjudge.cli import main

    args = ["models", "check", "--backend", "openai", "--base-url", fake_server.url]
    args += ["--model", "fake", "--format", "json"]
    # a server that ignores response_format: answers, but the schema is not enforced
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert found["answers"] is True and found["json_schema"] is False
    assert found["model_listed"] is True and "schema_error" in found
    # a server that enforces it
    fake_server.reply = lambda body: '{"token": "pj7f3"}' if "response_format" in body else "ready"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["json_schema"] is True
    human = CliRunner().invoke(main, args[:-2])
    assert human.exit_code == 0 and "JSON-schema output" in human.output
