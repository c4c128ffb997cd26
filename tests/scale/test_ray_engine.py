"""``score --engine ray`` on a real local Ray cluster: same records, lost nodes, killed drivers.

The cluster (``conftest.py``) has a head without CPUs and two one-CPU worker nodes marked
able to sandbox; tests add and remove further nodes. Every run is a real ``prefjudge
score`` process connected to the cluster by its address.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pj_cli import cli_argv, flat, rows, run_cli

from prefjudge.records import Task
from prefjudge.scale.nodes import NodeReport, accept_nodes, verdict_versions

pytestmark = pytest.mark.slow

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "benchmarks"
BIGCODEBENCH = SHARED / "bigcodebench" / "BigCodeBench_v0.1.0_hf.jsonl.gz"


def _write_synthetic(folder: Path, n: int, sleep_s: float) -> dict[str, str]:
    """``n`` HumanEval-style tasks and one generation each; returns the expected statuses.

    Every third generation is wrong (fails its test); the others sleep ``sleep_s`` at
    import, so that shards take long enough to be caught in flight.
    """
    expected = {}
    with (folder / "tasks.jsonl").open("w") as tasks, \
            (folder / "gens.jsonl").open("w") as gens:
        for index in range(n):
            task = Task(task_id=f"S/{index}", entry_point="f", test_format="humaneval",
                        prompt="def f(x):\n",
                        tests=f"def check(candidate):\n    assert candidate({index}) == "
                              f"{index * index}\n")
            tasks.write(task.model_dump_json() + "\n")
            wrong = index % 3 == 2
            body = "return x + 1" if wrong else "return x * x"
            code = f"import time\ntime.sleep({sleep_s})\n\n\ndef f(x):\n    {body}\n"
            gens.write(json.dumps({"id": f"g{index}", "task_id": task.task_id, "model": "m",
                                   "response": f"```python\n{code}```",
                                   "instructions": [{"id": "style_1"}]}) + "\n")
            expected[f"m::g{index}"] = "fail" if wrong else "pass"
    return expected


def _score_argv(folder: Path, output: Path, cluster_address: str, *extra: str) -> list[str]:
    return cli_argv("score", str(folder / "gens.jsonl"), "--tasks", str(folder / "tasks.jsonl"),
                    "-o", str(output), "--engine", "ray", "--address", cluster_address,
                    "--bootstrap", "50", *extra)


def _by_key(path: Path) -> dict[str, dict]:
    records = rows(path)
    keys = [record["meta"]["key"] for record in records]
    assert len(keys) == len(set(keys)), "a key was written twice"
    return {record["meta"]["key"]: record for record in records}


def _without_node(record: dict) -> dict:
    return {**record, "meta": {k: v for k, v in record["meta"].items() if k != "node"}}


def _wait_for_records(path: Path, at_least: int, timeout_s: float = 120,
                      node_prefix: str | None = None) -> None:
    """Wait until ``path`` holds ``at_least`` records (from the node, when given)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            found = [record for record in rows(path) if node_prefix is None
                     or node_prefix.startswith(record["meta"]["node"]["id"])]
            if len(found) >= at_least:
                return
        time.sleep(0.2)
    raise AssertionError(f"{path}: fewer than {at_least} records after {timeout_s} s")


def test_node_acceptance_policy() -> None:
    versions = verdict_versions()

    def node(node_id: str, mode: str = "namespaces", *, cpus: float = 2, slots: float = 2,
             **changed: str) -> NodeReport:
        return NodeReport(node_id, "h", mode, "r", {**versions, **changed}, cpus, slots)

    nodes = [node("a"), node("b", "rlimits"), node("c", slots=0), node("d", ruff="0.1.0"),
             node("e", cpus=1), node("f", "unavailable")]
    strict = accept_nodes(nodes, tests=True, allow_degraded=False, cpus_per_shard=2,
                          expected=versions)
    assert [n.node_id for n in strict.accepted] == ["a"]
    why = {n.node_id: reason for n, reason in strict.refused}
    assert "--allow-degraded" in why["b"]
    assert "prefjudge_sandbox" in why["c"]
    assert "ruff 0.1.0" in why["d"]
    assert "fewer than one shard's 2" in why["e"]
    assert "no sandbox" in why["f"]
    assert strict.capacity == {"a": 1}
    lenient = accept_nodes(nodes, tests=True, allow_degraded=True, cpus_per_shard=1,
                           expected=versions)
    assert [n.node_id for n in lenient.accepted] == ["a", "b", "e"]
    assert lenient.modes() == "namespaces+rlimits"
    # Verifying instructions runs no untrusted code: every node with the versions can.
    untested = accept_nodes(nodes, tests=False, allow_degraded=False, cpus_per_shard=1,
                            expected=versions)
    assert [n.node_id for n in untested.accepted] == ["a", "b", "c", "e", "f"]


def test_without_ray_the_error_names_the_extra(monkeypatch, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from prefjudge.cli import main

    _write_synthetic(tmp_path, 2, 0)
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    result = CliRunner().invoke(main, ["score", str(tmp_path / "gens.jsonl"), "--engine", "ray",
                                       "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code != 0
    assert "pip install 'prefjudge[ray]'" in flat(result.output)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.shared_data
def test_ray_records_equal_local_records_on_bigcodebench(ray_cluster, tmp_path: Path) -> None:
    if not BIGCODEBENCH.exists():
        pytest.skip(f"needs ../shared/data: {BIGCODEBENCH} is absent")
    from pj_samples import in_sample_libraries

    from prefjudge.scoring.tasks import load_tasks, missing_libraries

    tasks = [task for _, task in sorted(load_tasks(BIGCODEBENCH).items())
             if in_sample_libraries(task) and not missing_libraries(task)
             and "sleep(" not in (task.canonical_solution or "")]
    chosen = tasks[::max(1, len(tasks) // 16)][:16]
    with (tmp_path / "tasks.jsonl").open("w") as out:
        out.writelines(task.model_dump_json() + "\n" for task in chosen)
    with (tmp_path / "gens.jsonl").open("w") as out:
        for index, task in enumerate(chosen):
            # The reference solution, and a broken one: passes and failures both.
            code = task.canonical_solution if index % 4 else "def task_func(*a, **k):\n    0/0\n"
            out.write(json.dumps({"task_id": task.task_id, "model": "ref",
                                  "response": f"```python\n{code}\n```",
                                  "instructions": [{"id": "style_1"}, {"id": "doc_1"}]}) + "\n")
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run_cli("score", str(tmp_path / "gens.jsonl"), "-o", str(local), "--bootstrap", "50")
    done = subprocess.run(_score_argv(tmp_path, remote, ray_cluster.address,
                                      "--shard-size", "3"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    mine, theirs = _by_key(local), _by_key(remote)
    assert set(mine) == set(theirs) and len(mine) == len(chosen)
    for key, record in mine.items():
        assert _without_node(theirs[key]) == record, key
    statuses = {record["func"]["status"] for record in mine.values()}
    assert {"pass", "fail"} <= statuses | {"error"} and "pass" in statuses
    nodes = {record["meta"]["node"]["id"] for record in theirs.values()}
    assert nodes == {node_id[:12] for node_id in
                     (ray_cluster.nodes["a"].node_id, ray_cluster.nodes["b"].node_id)}
    mode = {record["meta"]["node"]["mode"] for record in theirs.values()}
    assert mode == {mine[next(iter(mine))]["meta"]["sandbox"].split(" ")[0]}


def test_nodes_without_the_sandbox_resource_or_isolation_get_no_shards(
        ray_cluster, tmp_path: Path) -> None:
    plain = ray_cluster.add("plain", sandbox=False)
    degraded = ray_cluster.add("degraded", env={"PREFJUDGE_SANDBOX_MODE": "rlimits"})
    try:
        expected = _write_synthetic(tmp_path, 12, 0)
        strict = tmp_path / "strict.jsonl"
        done = subprocess.run(_score_argv(tmp_path, strict, ray_cluster.address,
                                          "--shard-size", "2"),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        text = flat(done.stdout + done.stderr)
        assert f"{plain[:12]}" in text and "no prefjudge_sandbox resource" in text
        assert "rlimits fallback" in text and "--allow-degraded accepts it" in text
        records = _by_key(strict)
        assert {key: r["func"]["status"] for key, r in records.items()} == expected
        used = {r["meta"]["node"]["id"] for r in records.values()}
        assert used and not used & {plain[:12], degraded[:12]}
        engine = json.loads((tmp_path / "strict.summary.json").read_text())["engine"]
        assert engine["name"] == "ray" and {n["id"] for n in engine["nodes"]} == used
        assert {n["id"] for n in engine["refused"]} == {plain[:12], degraded[:12]}

        lenient = tmp_path / "lenient.jsonl"
        done = subprocess.run(_score_argv(tmp_path, lenient, ray_cluster.address,
                                          "--shard-size", "2", "--allow-degraded"),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        records = _by_key(lenient)
        assert {key: r["func"]["status"] for key, r in records.items()} == expected
        on_degraded = [r for r in records.values() if r["meta"]["node"]["id"] == degraded[:12]]
        assert on_degraded, "the degraded node, accepted, got no shard"
        for record in on_degraded:  # each record says where and how weakly it was isolated
            assert record["meta"]["node"]["mode"] == "rlimits"
            assert record["meta"]["sandbox"].startswith("rlimits")
        assert not any(r["meta"]["node"]["id"] == plain[:12] for r in records.values())
    finally:
        ray_cluster.remove("plain")
        ray_cluster.remove("degraded")


def test_no_acceptable_node_is_a_clear_error(ray_cluster, tmp_path: Path) -> None:
    _write_synthetic(tmp_path, 2, 0)
    done = subprocess.run(_score_argv(tmp_path, tmp_path / "out.jsonl", ray_cluster.address,
                                      "--shard-cpus", "4"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    text = flat(done.stdout + done.stderr)
    assert "no node of the Ray cluster can take shards" in text
    assert "fewer than one shard's 4" in text and "Nothing was scored" in text
    assert not (tmp_path / "out.jsonl").exists()


def test_a_lost_node_costs_only_its_shards(ray_cluster, tmp_path: Path) -> None:
    doomed = ray_cluster.add("doomed")
    expected = _write_synthetic(tmp_path, 16, 1.0)
    output = tmp_path / "out.jsonl"
    driver = subprocess.Popen(_score_argv(tmp_path, output, ray_cluster.address,
                                          "--shard-size", "2"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Its first shard done, the node is running the one that waited behind it.
        _wait_for_records(output, 2, node_prefix=doomed)
        ray_cluster.remove("doomed")
        printed, _ = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, printed[-3000:]
    assert "lost on" in flat(printed) and doomed[:12] in flat(printed)
    records = _by_key(output)
    assert {key: r["func"]["status"] for key, r in records.items()} == expected
    assert sum(r["meta"]["node"]["id"] == doomed[:12] for r in records.values()) >= 2


def test_a_killed_driver_resumes(ray_cluster, tmp_path: Path) -> None:
    expected = _write_synthetic(tmp_path, 12, 1.0)
    output = tmp_path / "out.jsonl"
    driver = subprocess.Popen(_score_argv(tmp_path, output, ray_cluster.address,
                                          "--shard-size", "2"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_records(output, 2)
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    before = _by_key(output)
    assert 2 <= len(before) < len(expected)
    done = subprocess.run(_score_argv(tmp_path, output, ray_cluster.address, "--shard-size", "2"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(before)} already scored" in flat(done.stdout + done.stderr)
    after = _by_key(output)  # every key once: nothing scored twice, nothing lost
    assert {key: r["func"]["status"] for key, r in after.items()} == expected
    for key, record in before.items():
        assert after[key] == record
