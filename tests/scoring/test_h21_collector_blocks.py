"""The cyclic collector is held off where scoring makes objects but no garbage cycles.

Issue 44 (the engine's speed reaches the user):

* :func:`prefjudge.lazy.long_lived` around reading a generations file: in the command
  line's own process the records read are then frozen, so that the collections during
  scoring no longer walk them (before, the first collections after reading walked about
  100 objects per generation, again at every full collection);
* :func:`prefjudge.lazy.collector_paused` around :func:`verify_batch` (and the whole
  verification process): checking real responses leaves not one cycle, so reference
  counting frees everything and the collector would only walk what is alive.
"""

from __future__ import annotations

import gc
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from prefjudge import lazy
from prefjudge.records import InstructionRef
from prefjudge.scoring.verify import verify_batch

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample" / "generations.jsonl"


def _read_in_a_fresh_process(own: bool) -> dict:
    code = (
        "import gc, json, sys\n"
        "from prefjudge import lazy\n"
        "from prefjudge.scoring.score import prepare_job\n"
        f"if {own}:\n"
        "    lazy.own_process()\n"
        "before = gc.get_freeze_count()\n"
        f"job = prepare_job({str(SAMPLE)!r}, {{}})\n"
        "first = job.generations[0][1]\n"
        "listed = any(o is first for o in gc.get_objects())  # frozen ones are not listed\n"
        "print(json.dumps({'added': gc.get_freeze_count() - before, 'on': gc.isenabled(),\n"
        "                  'read': len(job.generations), 'record_frozen': not listed}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def test_reading_freezes_the_records_only_in_the_command_lines_own_process() -> None:
    own = _read_in_a_fresh_process(True)
    assert own["read"] == 42 and own["on"]
    # Frozen objects are out of the collector's lists: the first record is not among them.
    assert own["added"] > 42 * 10 and own["record_frozen"]
    elsewhere = _read_in_a_fresh_process(False)
    assert elsewhere["read"] == 42 and elsewhere["on"]
    assert elsewhere["added"] == 0 and not elsewhere["record_frozen"]


def test_a_long_lived_block_inside_a_paused_collector_changes_nothing() -> None:
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        with lazy.long_lived():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with lazy.long_lived():
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # a test runner is not prefjudge's own process


def _sample_items() -> list[tuple[str, list[InstructionRef]]]:
    items = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        items.append((record["response"],
                      [InstructionRef(**ref) for ref in record["instructions"]]))
    return items


def _bigcodebench_items(shared_data: Path, n: int) -> list[tuple[str, list[InstructionRef]]]:
    """Real solutions, each with five instructions of the taxonomy's first thirty ids."""
    from prefjudge.scoring.taxonomy import load_taxonomy

    ids = load_taxonomy().ids[:30]
    path = shared_data / "benchmarks" / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"
    items = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if index == n:
                break
            task = json.loads(line)
            code = task["complete_prompt"] + task["canonical_solution"]
            refs = [InstructionRef(id=ids[(index + step) % len(ids)]) for step in range(5)]
            items.append((f"```python\n{code}\n```", refs))
    return items


def test_verify_batch_runs_without_collections_and_turns_the_collector_back_on() -> None:
    starts: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            starts.append(info["generation"])

    items = _sample_items() * 20  # 840 items: thousands of allocations per item
    gc.callbacks.append(count)
    try:
        results = verify_batch(items, workers=1)
    finally:
        gc.callbacks.remove(count)
    # Without the pause: hundreds. With it: none while it holds, and at most the one
    # young-generation pass that follows it (over what the batch left alive).
    assert starts in ([], [0])
    assert gc.isenabled()
    assert sum(len(row) for row in results) == sum(len(refs) for _, refs in items)
    assert any(check.status == "fail" for row in results for check in row)


def test_checking_real_solutions_leaves_no_garbage_cycle(shared_data: Path) -> None:
    """The premise of holding the collector off: verifying leaves nothing only it frees."""
    items = _bigcodebench_items(shared_data, 300) + _sample_items()
    gc.collect()
    gc.disable()
    try:
        results = verify_batch(items, workers=1)
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
    statuses = {check.status for row in results for check in row}
    assert {"pass", "fail"} <= statuses


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_restores_what_it_found(enabled: bool) -> None:
    if not enabled:
        gc.disable()
    try:
        with lazy.collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
