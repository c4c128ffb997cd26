"""The verification process is kept busy with large batches, and the run ends sooner.

Reading ahead verifies whole batches of the command's (so that a batch asked for is held
whole or not at all) in about doubling sizes; the command asks the process for several
chunks at once and verifies a long run's last chunk itself, beside the process. Real code,
real Ruff runs: the results stay those of ``verify_batch``.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from test_verify_process import real_items

from prefjudge.scoring import score
from prefjudge.scoring.score import _chunks, prepare_job, scored_batches
from prefjudge.scoring.verify import prefetch, verify_batch
from prefjudge.scoring.verify.prefetch import ReadAhead, batch_sizes
from prefjudge.scoring.verify.process import VerifyProcess, start_packed, verify_packed


def _generations(tmp_path: Path, shared_data: Path, n: int) -> Path:
    path = tmp_path / "gens.jsonl"
    lines = [{"id": f"g{index}", "task_id": "t", "model": "m", "response": response,
              "instructions": [ref.model_dump() for ref in refs]}
             for index, (response, refs) in enumerate(real_items(shared_data, n, seed=3))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_batches_verified_ahead_are_whole_batches_of_the_commands() -> None:
    assert (prefetch.FIRST_CHUNK, prefetch.LARGEST_CHUNK) == (score.CHUNK, score.VERIFY_CHUNK)
    sizes = list(itertools.islice(batch_sizes(), 6))
    assert sizes[:3] == [768, 3072, 4096]
    assert all(size <= prefetch.LARGEST_BATCH for size in sizes)
    todo = [(str(index), None) for index in range(30_000)]
    command = set(itertools.accumulate(len(chunk) for chunk in _chunks(todo, None, False)))
    ahead = list(itertools.accumulate(sizes))
    assert all(boundary in command for boundary in ahead), (ahead, sorted(command))


def test_reading_ahead_holds_the_first_batch_whole(tmp_path, shared_data, monkeypatch):
    monkeypatch.setattr(prefetch, "BATCH", 2)
    monkeypatch.setattr(prefetch, "FIRST_CHUNK", 2)
    monkeypatch.setattr(prefetch, "LARGEST_CHUNK", 4)
    monkeypatch.setattr(prefetch, "HELD_AT_MOST", 6)  # the first batch: 2 + 4 generations
    path = _generations(tmp_path, shared_data, 12)
    ahead = ReadAhead(start_packed, "reference")
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", buffering=0) as requests:
            ahead.read_ahead(path, 2, requests)
    finally:
        os.close(write)
    assert ahead.held == 6
    job = prepare_job(path, {})
    packed = [(gen.response, [(ref.id, ref.params) for ref in gen.instructions], False, None)
              for _, gen in job.generations]
    assert ahead.verify(packed, "reference", 2) == verify_packed(packed, "reference", 2)
    assert ahead.held == 0


def test_the_last_chunk_is_verified_here_beside_the_process(tmp_path, shared_data):
    path = _generations(tmp_path, shared_data, 26)
    job = prepare_job(path, {})
    asked: list[int] = []
    with VerifyProcess(workers=2, profile="reference") as process:
        submit = process.submit

        def counting(items):
            asked.append(len(items))
            return submit(items)

        process.submit = counting  # type: ignore[method-assign]
        batches = list(scored_batches(job, chunk_size=5, workers=2, run_tests=False,
                                      separate_process=process))
    assert asked == [5, 5, 5, 5, 5], "six chunks: the last (1 generation) verified here"
    found = [item.sample().instruction_results for batch in batches for item in batch]
    assert found == verify_batch([(gen.response, gen.instructions)
                                  for _, gen in job.generations], workers=2)
    lines = [item.line() for batch in batches for item in batch]
    assert [json.loads(line)["id"] for line in lines] == [f"g{index}" for index in range(26)]
