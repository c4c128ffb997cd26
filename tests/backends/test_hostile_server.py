"""The judge's HTTP client against a hostile server: bounded memory, one request's error each.

Issue 43, items 3 to 7, each against a server on loopback that writes exactly the bytes
of the attack (``pj_hostile_server``): a gzip bomb, an endless body, an endless header
line in the reply to the connection probe, JSON nested 200,000 deep, a usage of ``1e400``
tokens. The client runs in a child process that first answers a batch from a normal
server (what a normal reply costs), then sends a batch of three to the hostile one, one
of them hostile: its peak RSS may grow by at most :data:`BOUND` over the normal batch's,
the hostile request ends as an error with its reason, and the other two are answered.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pj_cli import invoke, rows
from pj_hostile_server import DEEP, serve_hostile

pytest.importorskip("openai")

from prefjudge.backends.connections import MAX_BODY, MAX_PROBE_HEAD
from prefjudge.backends.openai_http import (
    MAX_JSON_VALUES,
    MAX_TEXT_BYTES,
    MalformedResponse,
    parse_reply,
)

BOUND = 64 << 10  # KiB: what a reply may cost over a normal one
TIMEOUT = 6.0  # seconds: the deadline of each call in the child

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from prefjudge.backends import chat
    from prefjudge.backends.openai_http import OpenAIBackend

    warm_url, url, retries, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])

    def backend(where):
        return OpenAIBackend(model="fake", base_url=where, api_key="k", max_retries=retries,
                             backoff_base=0.01, timeout=timeout, max_concurrency=4)

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB

    with backend(warm_url) as warm:
        normal = warm.generate([chat(f"w{i}", f"echo:w{i}") for i in range(3)])
    assert all(r.ok for r in normal), normal
    before = peak()
    started = time.monotonic()
    with backend(url) as hostile:
        results = hostile.generate(
            [chat("r0", "echo:0"), chat("h", "hostile: echo:h"), chat("r2", "echo:2")]
        )
    print(json.dumps({
        "grown_kib": peak() - before,
        "elapsed": time.monotonic() - started,
        "results": [{"id": r.request_id, "text": r.text, "error": r.error,
                     "kind": r.error_kind} for r in results],
    }))
    """
)


def run_child(mode: str, *, retries: int = 1, **settings: Any) -> tuple[dict[str, Any], Any]:
    """Run the child against a normal server, then a hostile one; its report and the server."""
    with serve_hostile() as warm, serve_hostile(mode, **settings) as server:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, warm.url, server.url, str(retries), str(TIMEOUT)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), server


def check_contained(report: dict[str, Any], reason: str, attempts: int = 2) -> str:
    """The hostile request is an error with ``reason``; the others answered; memory bounded."""
    by_id = {r["id"]: r for r in report["results"]}
    assert [by_id["r0"]["text"], by_id["r2"]["text"]] == ["0", "2"], report
    failed = by_id["h"]
    assert failed["kind"] == "request_failed" and failed["text"] is None, report
    error = failed["error"]
    assert reason in error and f"after {attempts} attempt(s)" in error, error
    assert "Traceback" not in error and len(error) < 1000
    grown = report["grown_kib"]
    assert grown < BOUND, f"peak RSS grew by {grown / 1024:.0f} MiB over a normal batch's"
    return str(error)


# -- the five attacks ----------------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_at_the_body_cap() -> None:
    report, server = run_child("gzip_bomb")
    error = check_contained(report, f"the reply's body is over {MAX_BODY >> 20} MiB")
    assert "malformed response" in error
    assert server.completions == 4  # retried once, as any malformed body


def test_an_endless_body_is_refused_at_the_cap_not_the_deadline() -> None:
    report, server = run_child("endless")
    error = check_contained(report, f"the reply's body is over {MAX_BODY >> 20} MiB")
    assert "malformed response" in error and "timed out" not in error
    assert report["elapsed"] < TIMEOUT, report  # refused at the cap, before the deadline
    assert server.completions == 4


def test_an_endless_probe_header_closes_the_connection_early() -> None:
    # the first connection's probe gets a header line that never ends: its request fails
    # (no retries here, or it would pass on a new connection), the others are answered
    report, server = run_child("normal", retries=0, endless_probe=True)
    by_id = {r["id"]: r for r in report["results"]}
    failed = [r for r in by_id.values() if r["error"]]
    assert len(failed) == 1, report
    error = failed[0]["error"]
    assert "connection failed" in error and "connection probe" in error, error
    assert f"{MAX_PROBE_HEAD >> 10} KiB" in error
    answered = {r["id"]: r["text"] for r in by_id.values() if not r["error"]}
    assert answered == {k: v for k, v in {"r0": "0", "h": "h", "r2": "2"}.items() if k in answered}
    assert report["elapsed"] < TIMEOUT / 2, report  # hung up at the cap, not the deadline
    assert report["grown_kib"] < BOUND, report
    assert server.hostile_sent < 16 << 20  # the socket buffers, not what the deadline allows


def test_json_nested_200000_deep_is_that_requests_error() -> None:
    # 200,000 opening brackets are over the count of values a body may hold: refused
    # before it is read (nesting within the count: see the judge test, "nested")
    assert DEEP > MAX_JSON_VALUES
    report, server = run_child("deep")
    error = check_contained(report, f"over {MAX_JSON_VALUES:,} JSON values")
    assert "RecursionError" not in error
    assert server.completions == 4


def test_json_nested_within_the_count_is_refused_for_its_depth() -> None:
    report, _ = run_child("deep", depth=MAX_JSON_VALUES // 2)
    check_contained(report, "nests deeper than the recursion limit")


def test_a_usage_of_1e400_tokens_is_that_requests_error() -> None:
    report, server = run_child("huge_number")
    check_contained(report, "a number out of range: 1e400")
    assert server.completions == 4


# -- prefjudge judge: every verdict written, with its reason -------------------------------------


def write_pairs(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            pair = {
                "pair_id": f"p{i}", "task_id": f"t{i}", "instruction": "Write add(a, b).",
                "response_a": "def add(a, b):\n    return a + b\n",
                "response_b": "def add(a, b):\n    return b + a\n",
            }  # fmt: skip
            out.write(json.dumps(pair) + "\n")


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("deep", "nests deeper"), ("huge_number", "out of range: 1e400")],
    ids=["nested", "1e400"],
)
def test_judge_writes_every_verdict_against_a_hostile_server(
    tmp_path: Path, mode: str, reason: str
) -> None:
    pairs, out = tmp_path / "pairs.jsonl", tmp_path / "verdicts.jsonl"
    write_pairs(pairs, 3)
    with serve_hostile(mode, every=True, depth=MAX_JSON_VALUES // 2) as server:
        result = invoke(
            "judge", pairs, "-o", out, "--method", "monolithic", "--backend", "openai",
            "--base-url", server.url, "--model", "fake", "--no-cache", "--max-retries", "1",
        )  # fmt: skip
    shown = f"{result.output[-3000:]}\n{result.exception!r}"
    # every result an error: the run judged nothing, so it exits 1 after writing them
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), shown
    assert "Traceback" not in result.output, shown
    verdicts = rows(out)
    assert sorted(v["pair_id"] for v in verdicts) == ["p0", "p1", "p2"], shown
    for verdict in verdicts:
        assert verdict["status"] == "error" and reason in verdict["error"], verdict
        assert "malformed response" in verdict["error"], verdict
    assert server.completions >= 6  # two orders per pair, each tried


# -- the JSON reader alone -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"usage": {"prompt_tokens": NaN}}', "NaN, which is not JSON"),
        (b'{"usage": {"prompt_tokens": -Infinity}}', "-Infinity, which is not JSON"),
        (b'{"usage": {"prompt_tokens": -1e999}}', "out of range: -1e999"),
        (b"[" + b"{}," * MAX_JSON_VALUES + b"{}]", f"over {MAX_JSON_VALUES:,} JSON values"),
        (b"[" * 5000, "nests deeper"),
        (('"' + "x" * (MAX_TEXT_BYTES // 2) + '"').encode(), f"over {MAX_TEXT_BYTES >> 20} MiB"),
        (b'"\\ud83d\\ude00' + b"x" * (MAX_TEXT_BYTES // 8) + b'"', "up to 4 bytes wide"),
        (('"中' + "x" * (MAX_TEXT_BYTES // 4) + '"').encode(), "up to 2 bytes wide"),
        (b'{"a": 1' + b"1" * 5000 + b"}", "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
    ],
    ids=[
        "nan",
        "infinity",
        "overflow",
        "many values",
        "deep",
        "long text",
        "astral text",
        "wide text",
        "long integer",
        "not utf-8",
    ],
)
def test_parse_reply_refuses_what_is_not_plain_json(body: bytes, reason: str) -> None:
    with pytest.raises(MalformedResponse, match=reason.replace("+", r"\+")):
        parse_reply(body)


def test_parse_reply_reads_a_long_reply_of_plain_text() -> None:
    text = "x" * (MAX_TEXT_BYTES // 2 - 100)  # a runaway generation of 20 MiB of ASCII
    reply = parse_reply(json.dumps({"choices": [{"message": {"content": text}}]}).encode())
    assert reply["choices"][0]["message"]["content"] == text


def test_parse_reply_reads_a_normal_completion() -> None:
    body = b'{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 1.5e1}}'
    reply = parse_reply(body)
    assert reply["choices"][0]["message"]["content"] == "hi"
    assert math.isclose(reply["usage"]["prompt_tokens"], 15.0)
