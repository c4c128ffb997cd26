"""A long run's last chunk: what the process verified ahead is asked of it, the rest made here.

The verification process tells with every reply how far into the file it read ahead; the
command verifies its last chunk itself beside the process, but asks the process for the
part it already holds instead of verifying it twice, and makes the lines of the part it
verified in the thread that verified it. The process is let go (``finish``) as soon as
scoring ends, so that its end overlaps the summary. Real code, real Ruff runs, a real
verification process: the results stay those of ``verify_batch``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from test_verify_process import real_items

from prefjudge.scoring import rows, score
from prefjudge.scoring.score import prepare_job, scored_batches
from prefjudge.scoring.verify import verify_batch
from prefjudge.scoring.verify.prefetch import ReadAhead
from prefjudge.scoring.verify.process import (
    VerifyProcess,
    VerifyProcessError,
    start_packed,
)


def _generations(path: Path, shared_data: Path, n: int) -> Path:
    lines = [{"id": f"g{index}", "task_id": "t", "model": "m", "response": response,
              "instructions": [ref.model_dump() for ref in refs]}
             for index, (response, refs) in enumerate(real_items(shared_data, n, seed=7))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _read_ahead_whole(path: Path, lines: int) -> VerifyProcess:
    """A process that read all of ``path`` ahead before its first request (which it answers).

    Reading ahead stops when a request arrives: on a busy machine the first one may come
    before the process has read anything, so it is started again, given longer each time.
    """
    for wait in (1, 3, 9, 27):
        process = VerifyProcess(workers=2, profile="reference", read_ahead=path)
        time.sleep(wait)
        process.submit([]).packed()  # only its reply's reach
        if process.read_ahead_reach == lines:
            return process
        process.close()
    raise AssertionError("the process never read its file ahead")


def test_reading_ahead_tells_the_last_line_it_verified(tmp_path, shared_data, monkeypatch):
    from prefjudge.scoring.verify import prefetch

    path = _generations(tmp_path / "gens.jsonl", shared_data, 12)
    with path.open("a", encoding="utf-8") as handle:  # a line it cannot guess: read past
        handle.write(json.dumps({"id": "bad", "task_id": "t", "model": "m",
                                 "response": "x = 1\n", "instructions": [{"id": "nope"}]}) + "\n")
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", buffering=0) as requests:
            whole = ReadAhead(start_packed, "reference")
            assert whole.reach == 0
            whole.read_ahead(path, 2, requests)
            monkeypatch.setattr(prefetch, "BATCH", 2)
            monkeypatch.setattr(prefetch, "HELD_AT_MOST", 6)
            bounded = ReadAhead(start_packed, "reference")
            bounded.read_ahead(path, 2, requests)
    finally:
        os.close(write)
    assert (whole.held, whole.reach) == (12, 13)
    assert (bounded.held, bounded.reach) == (6, 6), "it stops after line 6: 6 held"


def test_the_held_part_of_the_last_chunk_is_asked_of_the_process(tmp_path, shared_data,
                                                                 monkeypatch):
    path = _generations(tmp_path / "gens.jsonl", shared_data, 26)
    ahead = tmp_path / "ahead.jsonl"  # what the process reads ahead: the first 25 lines
    ahead.write_text("".join(path.read_text(encoding="utf-8").splitlines(True)[:25]),
                     encoding="utf-8")
    job = prepare_job(path, {})
    here: list[int] = []

    def counting_here(items, **kwargs):
        here.append(len(items))
        return verify_batch(items, **kwargs)

    monkeypatch.setattr(score, "verify_batch", counting_here)
    process = _read_ahead_whole(ahead, 25)
    try:
        submit, asked = process.submit, []

        def counting(items):
            asked.append(len(items))
            return submit(items)

        process.submit = counting  # type: ignore[method-assign]
        batches = list(scored_batches(job, chunk_size=4, workers=2, run_tests=False,
                                      separate_process=process, prepare_lines=True))
    finally:
        process.close()
    # Seven chunks: 6 x 4, then g24 and g25. The process holds g24 (line 25): it is asked
    # for it; only g25 is verified here.
    assert asked == [4, 4, 4, 4, 4, 4, 1]
    assert here == [1]
    found = [item.sample().instruction_results for batch in batches for item in batch]
    assert found == verify_batch([(gen.response, gen.instructions)
                                  for _, gen in job.generations], workers=2)
    lines = [json.loads(item.line()) for batch in batches for item in batch]
    assert [line["id"] for line in lines] == [f"g{index}" for index in range(26)]


def test_a_last_chunk_the_process_holds_whole_is_not_verified_here(tmp_path, shared_data,
                                                                   monkeypatch):
    path = _generations(tmp_path / "gens.jsonl", shared_data, 26)
    job = prepare_job(path, {})
    here: list[int] = []
    monkeypatch.setattr(score, "verify_batch",
                        lambda items, **kwargs: here.append(len(items)) or verify_batch(
                            items, **kwargs))
    process = _read_ahead_whole(path, 26)
    try:
        batches = list(scored_batches(job, chunk_size=4, workers=2, run_tests=False,
                                      separate_process=process))
    finally:
        process.close()
    assert here == [], "every chunk, the last too, came from the process"
    found = [item.sample().instruction_results for batch in batches for item in batch]
    assert found == verify_batch([(gen.response, gen.instructions)
                                  for _, gen in job.generations], workers=2)


def test_the_last_chunks_lines_are_made_in_the_thread_that_verified_it(tmp_path, shared_data,
                                                                       monkeypatch):
    path = _generations(tmp_path / "gens.jsonl", shared_data, 26)
    job = prepare_job(path, {})
    made: list[tuple[str, str]] = []
    prepare = rows.Scored.prepare

    def recording(item):
        made.append((item.key, threading.current_thread().name))
        prepare(item)

    monkeypatch.setattr(rows.Scored, "prepare", recording)
    with VerifyProcess(workers=2, profile="reference") as process:
        ready = [[(item.key, item.line(), item.row()) for item in batch]
                 for batch in scored_batches(job, chunk_size=5, workers=2, run_tests=False,
                                             separate_process=process, prepare_lines=True)]
        assert [key for key, _ in made] == ["m::g25"], "the last chunk (one generation)"
        assert made[0][1].startswith("prefjudge-verify")
        plain = [[(item.key, item.line(), item.row()) for item in batch]
                 for batch in scored_batches(job, chunk_size=5, workers=2, run_tests=False,
                                             separate_process=process)]
    assert len(made) == 1, "without prepare_lines nothing is made ahead"
    assert ready == plain


def test_a_finished_process_answers_what_was_asked_then_ends(shared_data):
    items = real_items(shared_data, 6, seed=2)
    process = VerifyProcess(workers=2, profile="reference")
    try:
        pending = process.submit(items)
        process.finish()
        process.finish()  # once is enough; again changes nothing
        with pytest.raises(VerifyProcessError, match="closed"):
            process.submit(items)
        assert pending.result() == verify_batch(items, workers=2)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # it ends by itself (and is waited for)
            try:
                os.kill(process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the finished process did not end")
    finally:
        process.close()
    process.close()
