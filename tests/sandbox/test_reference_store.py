"""Reference outputs kept on disk, content-addressed (issue 30: evalplus keeps its own).

A second scoring run of the same HumanEval+/MBPP+ tasks reads the reference's outputs
and CPU times back instead of running the reference again; whatever the file holds is
checked as the harness's own output would be, and anything else is run again.
"""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from prefjudge.records import FuncResult, Task
from prefjudge.sandbox import SandboxLimits, run_functional
from prefjudge.sandbox import references as refs
from prefjudge.sandbox.references import REFERENCES, ReferenceCache, ReferenceStore, store_name

FAST = SandboxLimits(timeout_s=20, cpu_s=20, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32,
                     max_output_kb=64)
GOOD = "def f(x):\n    return [x] * 3\n"
WRONG = "def f(x):\n    return [x] * 2\n"


def ep_task(task_id: str = "HumanEval/7") -> Task:
    return Task(task_id=task_id, entry_point="f", test_format="evalplus",
                canonical_solution="def f(x):\n    return [x, x, x]\n",
                base_inputs=[[1], [2]], plus_inputs=[["a"], [[1, 2]]],
                metadata={"evalplus_dataset": "humaneval"})


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "references"
    monkeypatch.setenv("PREFJUDGE_REFERENCE_CACHE", str(folder))
    REFERENCES.clear()
    yield folder
    REFERENCES.clear()


def score(task: Task) -> list[FuncResult]:
    return run_functional([(task, GOOD), (task, WRONG)], limits=FAST, workers=1)


def counting_reference_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the reference's sandbox runs (the real runs still happen)."""
    calls: list[str] = []
    real = refs.reference_from

    def counted(task, outcome, limits):
        calls.append(task.task_id)
        return real(task, outcome, limits)

    monkeypatch.setattr(refs, "reference_from", counted)
    return calls


def test_a_second_run_reads_the_reference_back_and_judges_the_same(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = counting_reference_runs(monkeypatch)
    first = score(ep_task())
    assert [r.status for r in first] == ["pass", "fail"]
    assert runs == ["HumanEval/7"]
    (kept,) = store.glob("*.json.gz")
    assert kept.name == store_name(ep_task())
    REFERENCES.clear()  # as a new process would start
    hits = REFERENCES.disk_hits
    second = score(ep_task())
    assert runs == ["HumanEval/7"], "the reference ran again"
    assert REFERENCES.disk_hits == hits + 1
    assert second == first


def test_changed_task_data_or_harness_is_a_new_name(store: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    task = ep_task()
    other_inputs = task.model_copy(update={"plus_inputs": [["a"]]})
    other_code = task.model_copy(update={"canonical_solution": "def f(x):\n    return [x]*3\n"})
    names = {store_name(t) for t in (task, other_inputs, other_code)}
    assert len(names) == 3
    monkeypatch.setattr(refs, "harness_digest", lambda: "0" * 16)
    assert store_name(task) not in names


@pytest.mark.parametrize("spoil", ["truncated", "not gzip", "other task", "edited line"])
def test_a_spoiled_file_is_ignored_with_a_warning_and_run_again(
        store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        spoil: str) -> None:
    task = ep_task()
    first = score(task)
    path = store / store_name(task)
    data = gzip.decompress(path.read_bytes())
    if spoil == "truncated":
        path.write_bytes(gzip.compress(data)[:-20])
    elif spoil == "not gzip":
        path.write_bytes(b"{}")
    elif spoil == "other task":
        record = json.loads(data)
        record["key"] = "f" * 64
        path.write_bytes(gzip.compress(json.dumps(record).encode()))
    else:
        record = json.loads(data)
        del record["lines"][1]["cpu"]
        path.write_bytes(gzip.compress(json.dumps(record).encode()))
    REFERENCES.clear()
    runs = counting_reference_runs(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="prefjudge.sandbox.references"):
        again = score(task)
    assert runs == ["HumanEval/7"]
    assert again == first
    assert any("ignoring kept reference outputs" in m for m in caplog.messages)
    assert ReferenceStore(store).load(task) is not None  # written again, whole


def test_off_keeps_nothing_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFJUDGE_REFERENCE_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    REFERENCES.clear()
    assert refs.store_dir() is None
    assert [r.status for r in score(ep_task("HumanEval/8"))] == ["pass", "fail"]
    assert not any(tmp_path.rglob("*.json.gz"))


def test_an_error_is_never_kept(tmp_path: Path) -> None:
    cache = ReferenceCache(ReferenceStore(tmp_path))
    error = FuncResult(status="error", detail="the reference solution failed")
    assert cache.get(ep_task(), lambda: error) == error
    assert not any(tmp_path.iterdir())


def test_an_unwritable_folder_is_a_warning_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PREFJUDGE_REFERENCE_CACHE", str(blocker / "references"))
    REFERENCES.clear()
    with caplog.at_level(logging.WARNING, logger="prefjudge.sandbox.references"):
        assert [r.status for r in score(ep_task("HumanEval/9"))] == ["pass", "fail"]
    assert any("could not keep the reference outputs" in m for m in caplog.messages)


def test_a_task_whose_data_was_replaced_is_asked_for_anew(tmp_path: Path) -> None:
    """The key kept per task object follows a field replaced on that same object."""
    from prefjudge.sandbox.compare import ReferenceOutputs

    cache = ReferenceCache(ReferenceStore(tmp_path))
    task = ep_task()
    first = ReferenceOutputs(({"set": "base", "i": 0, "t": "x", "d": "1", "n": 1, "cpu": 0.0},))
    second = ReferenceOutputs(({"set": "base", "i": 0, "t": "y", "d": "2", "n": 1, "cpu": 0.0},))
    assert cache.get(task, lambda: first) is first
    assert cache.get(task, lambda: pytest.fail("asked again")) is first
    task.plus_inputs = [["b"]]
    assert cache.get(task, lambda: second) is second
    assert refs.reference_key(task) != refs.reference_key(ep_task())


def test_a_payload_is_written_as_json_dumps_writes_it() -> None:
    """A task's inputs are encoded once; the payload's text is json.dumps's all the same."""
    from prefjudge.sandbox.process import payload_json

    inputs = [[i, "é\n", [1.5, None]] for i in range(40)]
    first = {"format": "evalplus", "base_inputs": inputs, "plus_inputs": [], "code": "x"}
    assert payload_json(first) == json.dumps(first).encode()
    second = {**first, "code": "y", "nonce": "0f"}
    assert payload_json(second) == json.dumps(second).encode()
    replaced = {**second, "base_inputs": [*inputs[:-1], ["changed"]]}
    assert payload_json(replaced) == json.dumps(replaced).encode()
