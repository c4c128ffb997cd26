"""The verification process: same results as in this process, failures reported, no orphans."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from verify_cases import CASES

from prefjudge.records import Generation, InstructionRef
from prefjudge.scoring.score import ScoreJob, generation_keys, score_batches, score_stream
from prefjudge.scoring.taxonomy import load_taxonomy
from prefjudge.scoring.verify import verify_batch
from prefjudge.scoring.verify.process import VerifyProcess, VerifyProcessError

TAXONOMY = load_taxonomy()
SRC = Path(__file__).resolve().parents[2] / "src"


def real_items(shared_data: Path, n: int, seed: int) -> list[tuple[str, list[InstructionRef]]]:
    """``n`` BigCodeBench solutions as responses, each with 5 random valid instructions."""
    rng = random.Random(seed)
    with gzip.open(
        shared_data / "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz", "rt"
    ) as handle:
        tasks = [json.loads(line) for line in handle]
    items = []
    for index, task in enumerate(rng.sample(tasks, n)):
        code = task["complete_prompt"] + task["canonical_solution"]
        response = f"Here it is:\n```python\n{code}\n```\nDone." if index % 2 else code
        refs = []
        for instruction_id in rng.sample(TAXONOMY.ids, 5):
            params = {}
            for param in TAXONOMY.get(instruction_id).params:
                params[param.name] = (rng.randint(param.min, param.max) if param.type == "int"
                                      else rng.choice(param.choices))
            refs.append(InstructionRef(id=instruction_id, params=params))
        items.append((response, refs))
    return items


@pytest.mark.parametrize("profile", ["reference", "strict"])
def test_batches_in_flight_give_what_this_process_gives(shared_data, profile):
    items = real_items(shared_data, 120, seed=5)
    batches = [items[:50], items[50:55], items[55:]]
    with VerifyProcess(workers=2, profile=profile) as process:
        pending = [process.submit(batch) for batch in batches]  # all in flight at once
        found = [result for waiting in pending for result in waiting.result()]
    expected = verify_batch(items, workers=2, profile=profile)
    assert found == expected
    statuses = {check.status for row in found for check in row}
    assert {"pass", "fail"} <= statuses


def test_every_instruction_case_comes_back_as_in_this_process():
    items = [(case.response, [InstructionRef(id=case.instruction, params=case.params)])
             for case in CASES if case.profile == "reference"]
    with VerifyProcess(workers=1) as process:
        found = process.submit(items).result()
    assert found == verify_batch(items, workers=1)
    assert [row[0].status for row in found] == [
        case.expected for case in CASES if case.profile == "reference"]


def test_a_batch_that_fails_there_fails_alone_with_its_traceback():
    item = ("x = 1\n", [InstructionRef(id="style_1")])
    with VerifyProcess(workers=1) as process:
        process.profile = "no-such-profile"  # the process cannot verify with it
        broken = process.submit([item])
        process.profile = "reference"
        fine = process.submit([item])
        with pytest.raises(VerifyProcessError, match="no-such-profile") as caught:
            broken.result()
        assert "Traceback" in str(caught.value)
        assert [[check.status for check in row] for row in fine.result()] == [["pass"]]


def test_a_killed_process_fails_what_is_waiting_and_what_comes_after():
    code = "def f(x):\n    return x\n" * 400
    items = [(code, [InstructionRef(id="style_1")])] * 200
    process = VerifyProcess(workers=1)
    try:
        waiting = process.submit(items)
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(VerifyProcessError, match="ended before it returned") as caught:
            waiting.result()
        assert "-9" in str(caught.value) and "rerun the command to resume" in str(caught.value)
        with pytest.raises(VerifyProcessError, match="ended before it returned"):
            process.submit(items[:1]).result()
    finally:
        process.close()
    with pytest.raises(VerifyProcessError, match="closed"):
        process.submit(items[:1])


def test_the_process_ends_when_its_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from prefjudge.scoring.verify.process import VerifyProcess
        process = VerifyProcess(workers=1)
        print(process.pid, flush=True)
        time.sleep(60)
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(SRC)}, text=True)
    try:
        child = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.05)
        assert not _alive(child), "the verification process outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by init, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _job(shared_data: Path) -> ScoreJob:
    items = real_items(shared_data, 70, seed=9)
    generations = [
        Generation(id=f"g{index}", task_id="t", model="m", response=response, instructions=refs)
        for index, (response, refs) in enumerate(items)
    ]
    plain = "import os\n\n\ndef add(a, b):\n    return a + b\n"
    refs = [InstructionRef(id="doc_1"), InstructionRef(id="logic_1")]
    generations.append(Generation.model_validate({
        "id": "multi", "task_id": "t", "model": "m", "response": plain, "protocol": "multi",
        "k": 2, "instructions": [ref.model_dump() for ref in refs],
        "turns": [{"index": i + 1, "prompt": "p", "response": plain} for i in range(3)],
    }))
    return ScoreJob(generations=list(enumerate(generations, 1)),
                    keys=generation_keys(generations), tasks={})


def test_scoring_in_the_process_writes_the_records_scoring_here_writes(shared_data):
    job = _job(shared_data)
    here = [rec.model_dump(mode="json") for rec in
            score_stream(job, chunk_size=16, workers=2, separate_process=False)]
    there = [rec.model_dump(mode="json") for rec in
             score_stream(job, chunk_size=16, workers=2, separate_process=True)]
    with VerifyProcess(workers=2) as process:
        batches = list(score_batches(job, chunk_size=16, workers=2, separate_process=process))
        given = [rec.model_dump(mode="json") for batch in batches for rec in batch]
        assert process.submit([("x = 1\n", [])]).result() == [[]], "left open for its owner"
    assert there == here and given == here
    assert [len(batch) for batch in batches] == [16, 16, 16, 16, 7], "a chunk at a time"
    assert here[-1]["turn_results"] is not None


def test_a_process_with_another_profile_is_refused(shared_data):
    job = _job(shared_data)
    with VerifyProcess(profile="strict") as process, pytest.raises(ValueError, match="strict"):
        next(score_batches(job, separate_process=process))
