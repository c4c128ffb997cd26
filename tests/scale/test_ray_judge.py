"""``judge --engine ray``: evidence facts found on a real local Ray cluster.

The cluster (``conftest.py``) has a head without CPUs and two one-CPU worker nodes marked
able to sandbox. The pairs are HumanEval+ tasks (real tests, real inputs) answered by their
reference solution and by a wrong or a deliberately slow copy of it, so that correctness
and efficiency each decide clear cases; every run is a real ``prefjudge judge`` process.
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

pytestmark = pytest.mark.slow

HUMANEVAL_PLUS = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "benchmarks"
    / "evalplus"
    / "HumanEvalPlus-v0.1.10.jsonl.gz"
)
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/4", "HumanEval/7", "HumanEval/12", "HumanEval/13")


@pytest.fixture(scope="module")
def humaneval_plus() -> Path:
    """The HumanEval+ tasks (their tests and inputs), or a skip naming the file."""
    if not HUMANEVAL_PLUS.exists():
        pytest.skip(f"{HUMANEVAL_PLUS} not found (the shared data set; see its README)")
    return HUMANEVAL_PLUS


def _slow(code: str, entry: str) -> str:
    """The same answer, doing needless work on every call (a clear efficiency loss)."""
    return (
        f"{code}\n\n_fast = {entry}\n\n\ndef {entry}(*args, **kwargs):\n"
        f"    sum(i * i for i in range(20_000))\n    return _fast(*args, **kwargs)\n"
    )


def _write_pairs(path: Path, tasks_file: Path, *, efficiency: int = 2) -> dict[str, str]:
    """Correctness and efficiency pairs of clear outcome; returns the expected winner by id."""
    from prefjudge.scoring.sources import open_task_source

    tasks, _ = open_task_source(tasks_file)
    expected, lines = {}, []
    for index, task_id in enumerate(TASKS):
        task = tasks[task_id]
        good = f"```python\n{task.canonical_solution}\n```"
        wrong = f"```python\ndef {task.entry_point}(*args, **kwargs):\n    return None\n```"
        slow = f"```python\n{_slow(task.canonical_solution or '', task.entry_point)}\n```"
        a_wins = index % 2 == 0
        cases = [("c", "correctness", wrong)]
        if index < efficiency:
            cases.append(("e", "efficiency", slow))
        for prefix, criterion, worse in cases:
            pair_id = f"{prefix}{index}"
            lines.append(
                json.dumps(
                    {
                        "pair_id": pair_id,
                        "task_id": task_id,
                        "instruction": task.prompt,
                        "response_a": good if a_wins else worse,
                        "response_b": worse if a_wins else good,
                        "model_a": "m1",
                        "model_b": "m2",
                        "criterion": criterion,
                        "label": "A" if a_wins else "B",
                    }
                )
            )
            expected[pair_id] = "A" if a_wins else "B"
    path.write_text("\n".join(lines) + "\n")
    return expected


def _judge_argv(pairs: Path, tests: Path, output: Path, *extra: str) -> list[str]:
    return cli_argv(
        "judge",
        str(pairs),
        "--method",
        "evidence",
        "--tests",
        str(tests),
        "-o",
        str(output),
        *extra,
    )


def _on_ray(address: str) -> list[str]:
    """The options that find the facts on the test cluster at ``address``."""
    return ["--engine", "ray", "--address", address]


def _by_pair(path: Path) -> dict[str, dict]:
    verdicts = rows(path)
    ids = [verdict["pair_id"] for verdict in verdicts]
    assert len(ids) == len(set(ids)), "a verdict was written twice"
    return {verdict["pair_id"]: verdict for verdict in verdicts}


def _comparable(verdict: dict) -> dict:
    """The verdict less what measuring differs in from run to run (efficiency's figures)."""
    facts = [
        fact if fact["kind"] != "efficiency" else {"kind": fact["kind"], "outcome": fact["outcome"]}
        for fact in verdict["facts"]
    ]
    reasons = {k: v for k, v in verdict["reasons"].items() if "efficiency" not in v}
    return {**verdict, "facts": facts, "reasons": reasons}


def _wait_for_verdicts(path: Path, at_least: int, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and len(rows(path)) >= at_least:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path}: fewer than {at_least} verdicts after {timeout_s} s")


def test_evidence_verdicts_on_ray_are_a_local_runs(
    ray_cluster, humaneval_plus: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    expected = _write_pairs(pairs, humaneval_plus)
    local = tmp_path / "local.jsonl"
    run_cli(*_judge_argv(pairs, humaneval_plus, local)[3:], timeout=900)
    remote = tmp_path / "ray.jsonl"
    done = run_cli(
        *_judge_argv(
            pairs,
            humaneval_plus,
            remote,
            *_on_ray(ray_cluster.address),
            "--shard-size",
            "2",
        )[3:],
        timeout=900,
    )
    assert "Ray nodes" in flat(done.stdout + done.stderr)
    theirs, ours = _by_pair(remote), _by_pair(local)
    assert set(theirs) == set(ours) == set(expected)
    for pair_id, winner in expected.items():
        assert ours[pair_id]["preferred"] == winner, ours[pair_id]["reasons"]
        assert _comparable(theirs[pair_id]) == _comparable(ours[pair_id])
    decided = {v["decided_by"] for v in theirs.values()}
    assert decided == {"evidence:correctness", "evidence:efficiency"}
    # The model-based methods have no facts to find there: refused, not run locally unasked.
    refused = run_cli(
        "judge",
        str(pairs),
        "--method",
        "monolithic",
        "-o",
        str(tmp_path / "x.jsonl"),
        "--engine",
        "ray",
        ok=False,
    )
    assert refused.returncode == 2 and "has none" in flat(refused.stderr)
    # judge-eval finds an evidence method's facts on the cluster too, with the same verdicts.
    evaluated = tmp_path / "eval"
    run_cli(
        "judge-eval",
        str(pairs),
        "--method",
        "evidence",
        "--tests",
        str(humaneval_plus),
        "-o",
        str(evaluated),
        "--bootstrap",
        "20",
        *_on_ray(ray_cluster.address),
        timeout=900,
    )
    for pair_id, verdict in _by_pair(evaluated / "verdicts-evidence.jsonl").items():
        assert _comparable(verdict) == _comparable(ours[pair_id])


def test_hybrid_on_ray_asks_the_fallback_model_from_the_driver_about_undecided_pairs(
    ray_cluster, fake_server, humaneval_plus: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    _write_pairs(pairs, humaneval_plus, efficiency=0)
    written = rows(pairs)  # c0, c1, ...: A is the reference solution in c0 and c2
    decided = written[:2]
    undecided = [  # both pass: a tie on correctness, so the model is asked
        {**pair, "pair_id": f"u{index}", "response_b": pair["response_a"] + "\n# same\n"}
        for index, pair in enumerate((written[0], written[2]))
    ]
    pairs.write_text("".join(json.dumps(pair) + "\n" for pair in decided + undecided))
    fake_server.reply = lambda body: json.dumps({"reason": "scripted", "verdict": "A"})

    def judge(output: Path, *extra: str) -> dict[str, dict]:
        fake_server.reset_counts()
        done = run_cli(
            *_judge_argv(pairs, humaneval_plus, output, *extra)[3:],
            "--method",
            "hybrid",
            "--fallback",
            "monolithic",
            "--backend",
            "openai",
            "--base-url",
            fake_server.url,
            "--model",
            "fake",
            "--cache",
            str(output.with_suffix(".sqlite")),
            timeout=900,
        )
        assert fake_server.calls == 2 * len(undecided)  # only the undecided, both orders
        assert ("Ray nodes" in flat(done.stdout + done.stderr)) == bool(extra)
        return {k: {**v, "cost": None} for k, v in _by_pair(output).items()}

    local = judge(tmp_path / "local.jsonl")
    remote = judge(
        tmp_path / "ray.jsonl",
        *_on_ray(ray_cluster.address),
        "--shard-size",
        "1",
    )
    assert remote == local
    assert {v["decided_by"] for k, v in remote.items() if k.startswith("u")} == {"llm"}
    assert {v["decided_by"] for k, v in remote.items() if k.startswith("c")} == {
        "evidence:correctness"
    }


def test_a_lost_node_costs_only_its_shards(
    ray_cluster, humaneval_plus: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    expected = _write_pairs(pairs, humaneval_plus, efficiency=len(TASKS))
    doomed = ray_cluster.add("doomed")
    output = tmp_path / "ray.jsonl"
    driver = subprocess.Popen(
        _judge_argv(
            pairs,
            humaneval_plus,
            output,
            *_on_ray(ray_cluster.address),
            "--shard-size",
            "1",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Each node runs one shard and holds one waiting: the doomed node has work in flight.
        _wait_for_verdicts(output, 2)
        ray_cluster.remove("doomed")
        printed, _ = driver.communicate(timeout=900)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, printed[-3000:]
    assert "lost on" in flat(printed) and doomed[:12] in flat(printed)
    verdicts = _by_pair(output)  # every pair once: nothing judged twice, nothing lost
    assert {k: v["preferred"] for k, v in verdicts.items()} == expected


def test_a_killed_driver_resumes(ray_cluster, humaneval_plus: Path, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    expected = _write_pairs(pairs, humaneval_plus, efficiency=len(TASKS))
    output = tmp_path / "ray.jsonl"
    argv = _judge_argv(
        pairs,
        humaneval_plus,
        output,
        *_on_ray(ray_cluster.address),
        "--shard-size",
        "1",
    )
    driver = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_verdicts(output, 2)
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    before = _by_pair(output)
    assert 2 <= len(before) < len(expected)
    done = run_cli(*argv[3:], timeout=900)
    assert f"{len(before)} verdicts already in" in flat(done.stdout + done.stderr)
    after = _by_pair(output)
    assert {k: v["preferred"] for k, v in after.items()} == expected
    assert all(after[k] == v for k, v in before.items())  # written once, kept as they were


def test_nodes_that_cannot_sandbox_are_refused_with_the_reason(
    ray_cluster, humaneval_plus: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    _write_pairs(pairs, humaneval_plus, efficiency=0)
    plain = ray_cluster.add("plain", sandbox=False)
    degraded = ray_cluster.add("degraded", env={"PREFJUDGE_SANDBOX_MODE": "rlimits"})
    try:
        done = run_cli(
            *_judge_argv(
                pairs,
                humaneval_plus,
                tmp_path / "v.jsonl",
                *_on_ray(ray_cluster.address),
            )[3:],
            timeout=600,
        )
    finally:
        ray_cluster.remove("plain")
        ray_cluster.remove("degraded")
    text = flat(done.stdout + done.stderr)
    assert plain[:12] in text and "no prefjudge_sandbox resource" in text
    assert degraded[:12] in text and "--allow-degraded accepts it" in text
    assert len(rows(tmp_path / "v.jsonl")) == len(TASKS)
    # No node at all that can: nothing judged, the reason given.
    failed = run_cli(
        *_judge_argv(
            pairs,
            humaneval_plus,
            tmp_path / "none.jsonl",
            *_on_ray(ray_cluster.address),
            "--shard-cpus",
            "64",
        )[3:],
        ok=False,
        timeout=600,
    )
    assert failed.returncode != 0 and "Nothing was judged" in flat(failed.stderr)
    assert not (tmp_path / "none.jsonl").exists() or not rows(tmp_path / "none.jsonl")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-n", "0", "-q"]))
