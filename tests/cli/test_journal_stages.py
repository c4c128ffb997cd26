"""Every resumable model stage, run as the real command against a real HTTP server.

Each stage (augment, generate, judge, judge-eval, persona rewrite, persona compare) is
killed with SIGKILL mid-run, run again, and its records compared with an uninterrupted run
(judge costs aside: they report what each run spent). The server answers every request
with a deterministic, schema-valid reply (pj_schema_reply), so two runs that ask the same
questions get the same answers. Also here: a second writer is refused, a different model
cannot resume another model's output, and `--retry-errors` asks the model again.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pj_backend_helpers import FakeOpenAI
from pj_cli import SAMPLE_DIR as SAMPLE
from pj_cli import cli_argv, flat, rows
from pj_files import write_jsonl
from pj_schema_reply import schema_reply

from prefjudge.cli import main
from prefjudge.journal import lock_path
from prefjudge.records import Pair

pytestmark = pytest.mark.slow






def without_cost(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "cost"} for r in records]


def by_key(path: Path, key: Callable[[dict[str, Any]], str]) -> dict[str, dict[str, Any]]:
    records = without_cost(rows(path))
    keyed = {key(r): r for r in records}
    assert len(keyed) == len(records), f"{path} holds duplicate records"
    return keyed


def backend(server: FakeOpenAI, cache: Path, model: str = "fake") -> list[str]:
    return ["--backend", "openai", "--base-url", server.url, "--model", model,
            "--cache", str(cache), "--max-concurrency", "1"]




def run_ok(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cli_argv(*args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def kill_when(args: list[str], ready: Callable[[], bool], limit: float = 120.0) -> None:
    """Start the command, SIGKILL it as soon as ``ready()`` holds (it must still be running)."""
    process = subprocess.Popen(cli_argv(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + limit
    try:
        while not ready():
            assert process.poll() is None, f"finished before the kill: {process.stderr.read()}"
            assert time.monotonic() < deadline, "the run never got far enough"
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


def lines_at_least(path: Path, count: int) -> Callable[[], bool]:
    return lambda: path.exists() and path.read_text().count("\n") >= count


def calls_at_least(server: FakeOpenAI, count: int) -> Callable[[], bool]:
    return lambda: server.calls >= count


def interrupted_equals_whole(
    server: FakeOpenAI,
    tmp_path: Path,
    make_args: Callable[[Path, Path], list[str]],
    outputs: Callable[[Path], list[Path]],
    key: Callable[[dict[str, Any]], str],
    ready: Callable[[Path], Callable[[], bool]],
) -> tuple[int, str]:
    """Run whole, then killed + resumed; records must match. Returns (lines kept, log)."""
    whole, part = tmp_path / "whole", tmp_path / "part"
    whole.mkdir()
    part.mkdir()
    run_ok(make_args(whole, whole / "cache.sqlite"))
    server.reset_counts()
    server.delay = 0.05
    kill_when(make_args(part, part / "cache.sqlite"), ready(part))
    kept = sum(p.read_text().count("\n") for p in outputs(part) if p.exists())
    server.delay = 0.0
    resumed = run_ok(make_args(part, part / "cache.sqlite"))
    for got, want in zip(outputs(part), outputs(whole), strict=True):
        assert by_key(got, key) == by_key(want, key), f"{got.name} differs after the resume"
    return kept, flat(resumed.stderr)


@pytest.fixture
def server(fake_server: FakeOpenAI) -> FakeOpenAI:
    fake_server.reply = schema_reply
    return fake_server


@pytest.fixture
def sample(tmp_path: Path) -> dict[str, Path]:
    """The bundled sample as per-model generation files, tasks and augmented tasks."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(SAMPLE / "tasks.jsonl", data / "tasks.jsonl")
    gens = rows(SAMPLE / "generations.jsonl")
    paths = {"tasks": data / "tasks.jsonl"}
    for model in ("sample-strong", "sample-weak"):
        mine = [g for g in gens if g["model"] == model]
        paths[model] = write_jsonl(data / f"{model}.jsonl", mine)
    augmented = data / "augmented.jsonl"
    made = CliRunner().invoke(main, ["augment", str(paths["tasks"]), "-o", str(augmented),
                                     "--k", "2", "--selector", "rule", "--limit", "6"])
    assert made.exit_code == 0, made.output
    paths["augmented"] = augmented
    pairs = [Pair(pair_id=f"p{i}", task_id=a["task_id"], instruction="Solve the task.",
                  response_a=a["response"], response_b=b["response"], model_a=a["model"],
                  model_b=b["model"], label="A" if i % 3 else "B")
             for i, (a, b) in enumerate(zip(rows(paths["sample-strong"]),
                                            rows(paths["sample-weak"]), strict=True))]
    paths["pairs"] = data / "pairs.jsonl"
    paths["pairs"].write_text("".join(p.model_dump_json() + "\n" for p in pairs[:8]))
    return paths


def test_augment_llm(server: FakeOpenAI, sample: dict[str, Path], tmp_path: Path) -> None:
    def args(folder: Path, cache: Path) -> list[str]:
        return ["augment", str(sample["tasks"]), "-o", str(folder / "aug.jsonl"), "--k", "3",
                "--selector", "llm", *backend(server, cache)]

    kept, log = interrupted_equals_whole(
        server, tmp_path, args, lambda d: [d / "aug.jsonl"], lambda r: r["task_id"],
        lambda d: calls_at_least(server, 5))
    assert "resuming" in log or kept == 0  # one chunk of 64: the cache kept the calls made
    assert len(rows(tmp_path / "part" / "aug.jsonl")) == 14


def test_generate(server: FakeOpenAI, sample: dict[str, Path], tmp_path: Path) -> None:
    def args(folder: Path, cache: Path) -> list[str]:
        return ["generate", str(sample["augmented"]), "-o", str(folder / "gens.jsonl"),
                "--k", "0..2", *backend(server, cache)]

    kept, log = interrupted_equals_whole(
        server, tmp_path, args, lambda d: [d / "gens.jsonl"], lambda r: r["id"],
        lambda d: lines_at_least(d / "gens.jsonl", 1))
    assert 0 < kept < 36 and f"{kept} record(s) there" in log
    assert len(rows(tmp_path / "part" / "gens.jsonl")) == 36


def test_judge(server: FakeOpenAI, sample: dict[str, Path], tmp_path: Path) -> None:
    def args(folder: Path, cache: Path) -> list[str]:
        return ["judge", str(sample["sample-strong"]), str(sample["sample-weak"]),
                "--tasks", str(sample["tasks"]), "-o", str(folder / "verdicts.jsonl"),
                "--chunk-size", "1", "--min-criteria", "3", "--max-criteria", "4",
                *backend(server, cache)]

    kept, log = interrupted_equals_whole(
        server, tmp_path, args, lambda d: [d / "verdicts.jsonl"], lambda r: r["pair_id"],
        lambda d: lines_at_least(d / "verdicts.jsonl", 2))
    assert 2 <= kept < 14 and f"resuming: {kept} verdicts already" in log
    assert len(rows(tmp_path / "part" / "verdicts.jsonl")) == 14


def test_judge_eval(server: FakeOpenAI, sample: dict[str, Path], tmp_path: Path) -> None:
    def args(folder: Path, cache: Path) -> list[str]:
        return ["judge-eval", str(sample["pairs"]), "-o", str(folder / "eval"),
                "--method", "monolithic", "--method", "pointwise", "--chunk-size", "1",
                "--min-criteria", "3", "--max-criteria", "4", "--bootstrap", "20",
                *backend(server, cache)]

    def outputs(folder: Path) -> list[Path]:
        return [folder / "eval" / f"verdicts-{m}.jsonl" for m in ("monolithic", "pointwise")]

    kept, _ = interrupted_equals_whole(
        server, tmp_path, args, outputs, lambda r: r["pair_id"],
        lambda d: lines_at_least(d / "eval" / "verdicts-pointwise.jsonl", 1))
    assert 8 < kept < 16  # monolithic done, pointwise under way


def test_persona_rewrite(server: FakeOpenAI, sample: dict[str, Path], tmp_path: Path) -> None:
    def args(folder: Path, cache: Path) -> list[str]:
        return ["persona", "rewrite", str(sample["tasks"]), "--persona", "beginner",
                "-o", str(folder / "rw.jsonl"), "--no-reference-check",
                *backend(server, cache)]

    def outputs(folder: Path) -> list[Path]:
        return [folder / "rw.jsonl", folder / "rw.rejected.jsonl"]

    interrupted_equals_whole(server, tmp_path, args, outputs, lambda r: r["task_id"],
                             lambda d: calls_at_least(server, 10))
    part = tmp_path / "part"
    done = rows(part / "rw.jsonl") + rows(part / "rw.rejected.jsonl")
    assert sorted(r["task_id"] for r in done) == sorted(r["task_id"]
                                                        for r in rows(sample["tasks"]))


def test_persona_compare(server: FakeOpenAI, sample: dict[str, Path], tmp_path: Path) -> None:
    def args(folder: Path, cache: Path) -> list[str]:
        gens = [str(sample["sample-strong"]), str(sample["sample-weak"])]
        return ["persona", "compare", *gens, "--persona", "beginner",
                "--tasks", str(sample["tasks"]), "--original", *gens,
                "--original-tasks", str(sample["tasks"]), "-o", str(folder / "cmp.jsonl"),
                "--bootstrap", "20", *backend(server, cache)]

    interrupted_equals_whole(
        server, tmp_path, args, lambda d: [d / "cmp.jsonl"],
        lambda r: f"{r['condition']}::{r['task_id']}", lambda d: calls_at_least(server, 30))
    assert len(rows(tmp_path / "part" / "cmp.jsonl")) == 28


def test_a_second_judge_run_on_one_output_is_refused(server: FakeOpenAI,
                                                     sample: dict[str, Path],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "verdicts.jsonl"
    args = ["judge", str(sample["pairs"]), "-o", str(out), "--method", "monolithic",
            "--chunk-size", "1", *backend(server, tmp_path / "cache.sqlite")]
    server.delay = 0.5  # 16 calls one at a time: the first run outlasts the second's start
    first = subprocess.Popen(cli_argv(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not lock_path(out).exists():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    second = subprocess.run(cli_argv(*args), capture_output=True, text=True, timeout=120)
    assert second.returncode == 1
    assert f"being written by another prefjudge run (pid {first.pid})" in flat(second.stderr)
    assert first.wait(timeout=120) == 0
    assert sorted(r["pair_id"] for r in rows(out)) == sorted(f"p{i}" for i in range(8))


def test_another_model_cannot_resume_a_generations_file(server: FakeOpenAI,
                                                        sample: dict[str, Path],
                                                        tmp_path: Path) -> None:
    out = tmp_path / "generations.jsonl"
    cache = tmp_path / "cache.sqlite"
    base = ["generate", str(sample["augmented"]), "-o", str(out), "--k", "0"]
    first = CliRunner().invoke(main, [*base, *backend(server, cache, "model-one")])
    assert first.exit_code == 0, first.output
    calls = server.calls
    second = CliRunner().invoke(main, [*base, *backend(server, cache, "model-two")])
    assert second.exit_code == 1 and server.calls == calls
    message = flat(second.output)
    assert "setting name" in message and "model-two" in message and "--force-new" in message
    assert {r["model"] for r in rows(out)} == {"model-one"}


def test_generate_retry_errors_makes_failed_generations_again(server: FakeOpenAI,
                                                              sample: dict[str, Path],
                                                              tmp_path: Path) -> None:
    from pj_backend_helpers import status

    out = tmp_path / "generations.jsonl"
    args = ["generate", str(sample["augmented"]), "-o", str(out), "--k", "0",
            "--protocol", "single", *backend(server, tmp_path / "cache.sqlite")]
    server.script(status(400, error="context too long"), status(400, error="context too long"))
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert sum(r.get("error") is not None for r in rows(out)) == 2
    resumed = CliRunner().invoke(main, args)
    assert "0 generation(s) to go" in flat(resumed.output)
    retried = CliRunner().invoke(main, [*args, "--retry-errors"])
    assert retried.exit_code == 0, retried.output
    final = rows(out)
    assert len(final) == 6 and len({r["id"] for r in final}) == 6
    assert all(r.get("error") is None and r["response"] for r in final)


def test_judge_retry_errors_asks_the_model_again(server: FakeOpenAI, sample: dict[str, Path],
                                                 tmp_path: Path) -> None:
    """Invalid replies are not cached as answers: after the fix, --retry-errors succeeds."""
    out = tmp_path / "verdicts.jsonl"
    args = ["judge", str(sample["pairs"]), "-o", str(out), "--method", "monolithic",
            "--max-output-retries", "0", *backend(server, tmp_path / "cache.sqlite")]
    server.reply = lambda body: "not json at all"
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 1, first.output  # judged nothing: a failure, not a result
    assert "all 8 verdicts are errors" in flat(first.output), first.output
    assert "--retry-errors" in first.output
    assert {r["status"] for r in rows(out)} == {"error"}
    server.reply = schema_reply
    server.reset_counts()
    retried = CliRunner().invoke(main, [*args, "--retry-errors"])
    assert retried.exit_code == 0, retried.output
    assert server.calls == 16  # two orders for each of the 8 pairs: asked again
    final = rows(out)
    assert len(final) == 8 and {r["status"] for r in final} == {"ok"}


def test_judge_eval_fails_naming_the_method_that_judged_nothing(server: FakeOpenAI,
                                                               sample: dict[str, Path],
                                                               tmp_path: Path) -> None:
    """Every reply unusable: the tables and files are written, then the run fails."""
    folder = tmp_path / "eval"
    server.reply = lambda body: "not json at all"
    result = CliRunner().invoke(main, [
        "judge-eval", str(sample["pairs"]), "-o", str(folder), "--method", "monolithic",
        "--method", "pointwise", "--max-output-retries", "0", "--bootstrap", "20",
        *backend(server, tmp_path / "cache.sqlite")])
    assert result.exit_code == 1, result.output
    message = flat(result.output)
    for method in ("monolithic", "pointwise"):  # both named, not only the first
        assert f"{method} (" in message, message
        assert {r["status"] for r in rows(folder / f"verdicts-{method}.jsonl")} == {"error"}
    assert message.count("all 8 verdicts are errors") == 2, message
    assert (folder / "summary.json").exists()


def test_persona_compare_fails_when_every_comparison_errs(server: FakeOpenAI,
                                                         sample: dict[str, Path],
                                                         tmp_path: Path) -> None:
    out = tmp_path / "cmp.jsonl"
    gens = [str(sample["sample-strong"]), str(sample["sample-weak"])]
    server.reply = lambda body: "not json at all"
    result = CliRunner().invoke(main, [
        "persona", "compare", *gens, "--persona", "beginner", "--tasks", str(sample["tasks"]),
        "-o", str(out), "--max-retries", "0", *backend(server, tmp_path / "cache.sqlite")])
    assert result.exit_code == 1, result.output
    compared = rows(out)
    assert compared and {r["status"] for r in compared} == {"error"}
    assert f"all {len(compared)} comparisons are errors" in flat(result.output), result.output


def test_judge_with_the_model_unreachable_fails(sample: dict[str, Path],
                                                tmp_path: Path) -> None:
    """A closed port (nothing listens): the endpoint is dead, so the command stops at once.

    (Before a dead server was found in seconds, each request failed in turn and the run
    ended with "all 8 verdicts are errors"; that ending is still tested with unusable
    replies, below.)
    """
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    out = tmp_path / "verdicts.jsonl"
    done = subprocess.run(cli_argv(
        "judge", str(sample["pairs"]), "-o", str(out), "--method", "monolithic",
        "--backend", "openai", "--base-url", f"http://127.0.0.1:{closed}/v1", "--model", "m",
        "--no-cache", "--max-retries", "0"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    said = flat(done.stderr)
    assert f"cannot reach http://127.0.0.1:{closed}/v1 (model 'm')" in said, done.stderr
    assert not out.exists() or rows(out) == []  # no request was made: nothing to keep


def test_one_model_name_on_two_servers_never_shares_answers(server: FakeOpenAI,
                                                            sample: dict[str, Path],
                                                            tmp_path: Path) -> None:
    """Two checkpoints behind one served name: the second server is asked, not the cache."""
    import threading
    from http.server import ThreadingHTTPServer

    from pj_backend_helpers import make_handler

    other = FakeOpenAI()
    other.reply = lambda body: "answer from the second server"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(other))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    other.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        server.reply = lambda body: "answer from the first server"
        cache = tmp_path / "shared-cache.sqlite"
        base = ["generate", str(sample["augmented"]), "--k", "0", "--protocol", "single",
                "--model", "same-name", "--backend", "openai", "--cache", str(cache)]
        one = CliRunner().invoke(main, [*base, "--base-url", server.url,
                                        "-o", str(tmp_path / "one.jsonl")])
        assert one.exit_code == 0, one.output
        two = CliRunner().invoke(main, [*base, "--base-url", other.url,
                                        "-o", str(tmp_path / "two.jsonl")])
        assert two.exit_code == 0, two.output
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert other.calls == 6
    assert {r["response"] for r in rows(tmp_path / "one.jsonl")} == {
        "answer from the first server"}
    assert {r["response"] for r in rows(tmp_path / "two.jsonl")} == {
        "answer from the second server"}


def test_a_truncated_body_errs_one_verdict_and_the_run_goes_on(server: FakeOpenAI,
                                                               sample: dict[str, Path],
                                                               tmp_path: Path) -> None:
    from pj_backend_helpers import truncated

    out = tmp_path / "verdicts.jsonl"
    server.script(truncated())
    result = CliRunner().invoke(main, [
        "judge", str(sample["pairs"]), "-o", str(out), "--method", "monolithic",
        "--max-retries", "0", *backend(server, tmp_path / "cache.sqlite")])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    verdicts = rows(out)
    assert len(verdicts) == 8
    failed = [v for v in verdicts if v["status"] == "error"]
    assert len(failed) == 1 and "request_failed" in failed[0]["error"]


def test_ctrl_c_says_how_to_resume_and_the_rerun_does(server: FakeOpenAI,
                                                      sample: dict[str, Path],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "gens.jsonl"
    args = ["generate", str(sample["augmented"]), "-o", str(out), "--k", "0..2",
            *backend(server, tmp_path / "cache.sqlite")]
    server.delay = 0.1
    process = subprocess.Popen(cli_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    ready = lines_at_least(out, 2)
    deadline = time.monotonic() + 120
    while not ready():
        assert process.poll() is None, f"finished before Ctrl-C: {process.stderr.read()}"
        assert time.monotonic() < deadline, "the run never got far enough"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _stdout, stderr = process.communicate(timeout=60)
    server.delay = 0.0
    assert process.returncode == 130, stderr
    assert "Aborted!" not in stderr and "Traceback" not in stderr, stderr
    assert "every record written so far is kept" in flat(stderr)
    assert f"prefjudge generate {sample['augmented']} -o {out}" in flat(stderr)
    kept = len(rows(out))
    assert 0 < kept < 36
    resumed = run_ok(args)
    assert f"{kept} record(s) there" in flat(resumed.stderr)
    assert len(rows(out)) == 36
