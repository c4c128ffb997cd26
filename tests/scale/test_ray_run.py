"""``prefjudge run --engine ray``: an experiment's score stages run on the Ray cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pj_cli import flat, rows, run_cli
from pj_experiment import fake_experiment

pytestmark = pytest.mark.slow


def test_run_scores_on_ray_with_the_records_of_a_local_score(
        ray_cluster, fake_server, tmp_path: Path) -> None:
    experiment = fake_experiment(tmp_path / "e", fake_server.url, judge=False)
    done = run_cli("run", str(experiment), "--engine", "ray", "--address", ray_cluster.address,
                   "--shard-size", "3", timeout=900)
    assert "Ray nodes" in flat(done.stdout + done.stderr)
    root = tmp_path / "e" / "results" / "fake"
    nodes = {ray_cluster.nodes[name].node_id[:12] for name in ("a", "b")}
    score_files = sorted((root / "scores").glob("model-*.jsonl"))
    assert len(score_files) == 2
    for scored in score_files:
        remote = {r["meta"]["key"]: r for r in rows(scored)}
        assert len(remote) == 4 * 2  # 4 tasks x k in {0, 1}
        assert {r["meta"]["node"]["id"] for r in remote.values()} <= nodes
        local = tmp_path / f"{scored.stem}.local.jsonl"
        run_cli("score", str(root / "generations" / scored.name), "--tasks",
                str(root / "augmented.jsonl"), "-o", str(local), "--bootstrap", "20")
        for record in rows(local):
            theirs = remote[record["meta"]["key"]]
            assert {**theirs, "meta": {k: v for k, v in theirs["meta"].items()
                                       if k != "node"}} == record
    manifest = json.loads((root / "manifest.json").read_text())
    engines = [stage["settings"]["engine"] for stage in manifest["stages"]
               if stage["kind"] == "score"]
    assert len(engines) == 2 and all(
        engine["settings"]["address"] == ray_cluster.address
        and engine["settings"]["shard_size"] == 3 for engine in engines), engines


def test_run_finds_the_evidence_of_its_judge_stages_on_ray(
    ray_cluster, fake_server, tmp_path: Path
) -> None:
    experiment = fake_experiment(tmp_path / "e", fake_server.url, judge=False)
    text = experiment.read_text().replace("[rank]", '[judge]\nmethod = "evidence"\n\n[rank]')
    experiment.write_text(text)
    run_cli("run", str(experiment), "--engine", "ray", "--address", ray_cluster.address,
            "--shard-size", "3", timeout=900)
    root = tmp_path / "e" / "results" / "fake"
    manifest = json.loads((root / "manifest.json").read_text())
    [stage] = [stage for stage in manifest["stages"] if stage["kind"] == "judge"]
    engine = stage["settings"]["engine"]
    assert engine["settings"]["address"] == ray_cluster.address and engine["shard_size"] == 3
    [judged] = sorted((root / "judgments").glob("*.jsonl"))
    generations = sorted((root / "generations").glob("model-*.jsonl"))
    local = tmp_path / "local.jsonl"
    augmented = str(root / "augmented.jsonl")
    run_cli("judge", *map(str, generations), "--tasks", augmented, "--tests", augmented,
            "--method", "evidence", "-o", str(local))
    mine = {v["pair_id"]: v for v in rows(local)}

    def unsourced(verdicts):  # the run's facts name the score files they came from
        return {v["pair_id"]: {**v, "facts": [{k: x for k, x in f.items() if k != "source"}
                                              for f in v["facts"]]} for v in verdicts}

    assert mine and unsourced(rows(judged)) == mine
