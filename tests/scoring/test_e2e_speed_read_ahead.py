"""Verifying ahead while the file is read gives the results verifying when asked gives.

The verification process reads the generations file itself and verifies its likely items
before the first batch arrives (:mod:`prefjudge.scoring.verify.prefetch`); these tests
hold the results equal to ``verify_batch``'s on real code and real Ruff runs, with lines
it guesses right, lines it cannot guess and lines it guesses differently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_verify_process import real_items

from prefjudge.scoring.score import prepare_job
from prefjudge.scoring.verify import verify_batch
from prefjudge.scoring.verify.prefetch import ReadAhead, guessed_items
from prefjudge.scoring.verify.process import VerifyProcess, start_packed, verify_packed


def _write(tmp_path: Path, shared_data: Path) -> Path:
    lines = []
    for index, (response, refs) in enumerate(real_items(shared_data, 30, seed=11)):
        line = {"id": f"g{index}", "task_id": "t", "model": "m", "response": response,
                "instructions": [ref.model_dump() for ref in refs]}
        if index == 3:  # parameters left to their defaults: resolved as the reader does
            line["instructions"] = [{"id": ref.id} for ref in refs]
        if index == 4:  # parameters in another order than the taxonomy's
            line["instructions"] = [{"id": ref.id, "params": dict(reversed(ref.params.items()))}
                                    for ref in refs]
        if index == 5:
            line.update(error="HTTP 500", response="")
        if index == 6:
            line["response_is_code"] = True
        lines.append(line)
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _packed(path: Path) -> list:
    job = prepare_job(path, {})
    return [(gen.response, [] if gen.error else [(ref.id, ref.params) for ref in gen.instructions],
             gen.response_is_code, None) for _, gen in job.generations]


def test_held_results_are_handed_out_once_and_equal_fresh_ones(tmp_path, shared_data):
    path = _write(tmp_path, shared_data)
    packed = _packed(path)
    ahead = ReadAhead(start_packed, "reference")
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", buffering=0) as requests:
            ahead.read_ahead(path, 2, requests)
    finally:
        os.close(write)
    assert ahead.held == 29, "every line but the failed one is guessed"
    fresh = verify_packed(packed, "reference", 2)
    assert ahead.verify(packed, "strict", 2) == verify_packed(packed, "strict", 2)
    assert ahead.held == 29, "another profile takes nothing held"
    assert ahead.verify(packed, "reference", 2) == fresh
    assert ahead.held == 0
    assert ahead.verify(packed[:5], "reference", 2) == fresh[:5], "then verified as usual"


def test_a_waiting_request_stops_reading_ahead(tmp_path, shared_data):
    path = _write(tmp_path, shared_data)
    ahead = ReadAhead(start_packed, "reference")
    read, write = os.pipe()
    os.write(write, b"x")
    try:
        with os.fdopen(read, "rb", buffering=0) as requests:
            ahead.read_ahead(path, 2, requests)
    finally:
        os.close(write)
    assert ahead.held == 0


def test_other_formats_are_not_guessed(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": f"HumanEval/{i}", "solution": "x = 1\n"})
                            + "\n" for i in range(100)), encoding="utf-8")
    assert list(guessed_items(path, "reference")) == []
    assert list(guessed_items(tmp_path / "missing.jsonl", "reference")) == []


def test_the_process_reading_ahead_returns_verify_batchs_results(tmp_path, shared_data):
    path = _write(tmp_path, shared_data)
    job = prepare_job(path, {})
    items = [(gen.response, [] if gen.error else gen.instructions, gen.response_is_code)
             for _, gen in job.generations]
    with VerifyProcess(workers=2, read_ahead=path) as process:
        first, second = process.submit(items[:10]), process.submit(items[10:])
        found = first.result() + second.result()
    assert found == verify_batch(items, workers=2)


def test_reading_ahead_holds_a_bounded_number_of_results(tmp_path, shared_data, monkeypatch):
    from prefjudge.scoring.verify import prefetch

    monkeypatch.setattr(prefetch, "BATCH", 4)
    monkeypatch.setattr(prefetch, "HELD_AT_MOST", 8)
    path = _write(tmp_path, shared_data)
    ahead = ReadAhead(start_packed, "reference")
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", buffering=0) as requests:
            ahead.read_ahead(path, 2, requests)
    finally:
        os.close(write)
    assert ahead.held == 8
