"""``score_file`` on the Ray engine: the nodes reported, the records of a local run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pj_cli import rows

from prefjudge.reporting import SilentReporter, StageError
from prefjudge.scale.ray_engine import RaySettings
from prefjudge.scale.score_engine import RayEngine
from prefjudge.scoring.run import ScoreSettings, score_file

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"


@pytest.mark.slow
def test_the_ray_engine_reports_its_nodes_and_scores_the_same_records(
        ray_cluster, tmp_path: Path) -> None:
    sample = tmp_path / "sample" / "generations.jsonl"
    sample.parent.mkdir()
    for name in ("generations.jsonl", "tasks.jsonl"):
        shutil.copy(SAMPLE / name, sample.parent / name)
    local = tmp_path / "local.jsonl"
    score_file(ScoreSettings(sample, output=local, no_tests=True, bootstrap=10),
               SilentReporter())
    remote = tmp_path / "ray.jsonl"
    reporter = SilentReporter()
    engine = RayEngine(RaySettings(address=ray_cluster.address, shard_size=20))
    outcome = score_file(ScoreSettings(sample, output=remote, no_tests=True, bootstrap=10,
                                       engine=engine), reporter)
    nodes, summary = reporter.tables
    assert nodes.title == "Ray nodes" and not nodes.result and summary.result
    assert [row[-1] for row in nodes.rows] == ["accepted", "accepted"]  # nodes a and b
    assert outcome.scored == 42 and outcome.sandbox == ""
    engine_summary = json.loads(outcome.summary_json.read_text())["engine"]
    assert engine_summary["name"] == "ray" and engine_summary["address"] == ray_cluster.address
    theirs = {r["meta"]["key"]: r for r in rows(remote)}
    for record in rows(local):
        other = theirs[record["meta"]["key"]]
        assert {**other, "meta": {k: v for k, v in other["meta"].items() if k != "node"}} == record
    with pytest.raises(StageError, match="Nothing was scored"):
        score_file(ScoreSettings(sample, output=tmp_path / "none.jsonl", engine=RayEngine(
            RaySettings(address=ray_cluster.address, cpus_per_shard=10_000))), SilentReporter())
    assert not (tmp_path / "none.jsonl").exists()
