"""`prefjudge run`: the bundled smoke experiment end to end, with the real embedded model.

examples/smoke.toml (6 bundled sample tasks, two "models" made from the embedded
SmolLM2-135M, judged by it) runs every stage into one results folder; the plan's request
counts equal the model calls the run made; a second run makes none and leaves every
result file as it was.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from pj_cli import invoke, run_cli, run_cli_text
from pj_experiment import fake_experiment

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "examples" / "smoke.toml"


def experiment_in(tmp_path: Path) -> Path:
    text = SMOKE.read_text()
    text = text.replace('results = "../results"', f'results = "{tmp_path / "results"}"')
    text = text.replace('source = "../datasets/sample/tasks.jsonl"',
                        f'source = "{ROOT / "datasets" / "sample" / "tasks.jsonl"}"')
    path = tmp_path / "smoke.toml"
    path.write_text(text)
    return path


def run_in_process(*args: str):
    return invoke("run", *args, ok=True).output


def result_files(root: Path) -> dict[str, str]:
    """Every result file but the manifest and the journals' own history, with its bytes."""
    return {str(path.relative_to(root)): path.read_bytes().hex()
            for path in sorted(root.rglob("*"))
            if path.is_file() and path.name != "manifest.json"
            and not path.name.endswith((".journal.json", ".lock"))}


@pytest.mark.vllm
def test_the_smoke_experiment_runs_resumes_and_makes_no_call_the_second_time(
        embedded_checkpoint, tmp_path: Path) -> None:
    experiment = experiment_in(tmp_path)
    plan = run_in_process(str(experiment), "--dry-run")
    planned = int(re.search(r"total\s*│[^│]*│\s*(\d+)", plan).group(1))
    assert planned == 2 * 6 * 2 + 6 * 2 * 2  # 2 models x 6 tasks x k in {0, 1}; 12 pairs x 2
    root = tmp_path / "results" / "smoke"
    assert not root.exists()  # a dry run writes nothing

    done = run_cli("run", str(experiment), timeout=900)
    manifest = json.loads((root / "manifest.json").read_text())
    # both models and the judge are the embedded model: one backend, one engine start
    assert manifest["backends_opened"] == 1
    assert len(re.findall(r"Loading safetensors checkpoint shards:\s+0%", done.stderr)) == 1
    # stdout carries results only: vLLM's logs go to stderr (warnings only, without -v)
    assert not re.search(r"\b(INFO|DEBUG|WARNING) \d\d-\d\d \d\d:\d\d:\d\d", done.stdout)
    stages = {stage["stage"]: stage for stage in manifest["stages"]}
    for label in ("generate smol-greedy", "generate smol-t1"):
        assert stages[label]["model_calls"] == stages[label]["planned_requests"] == 12
    judged = [stage for stage in manifest["stages"] if stage["kind"] == "judge"]
    verdicts = [json.loads(line) for line in (root / judged[0]["output"]).read_text().splitlines()]
    assert sum(v["cost"]["requests"] for v in verdicts) == judged[0]["planned_requests"] == 24
    assert manifest["versions"]["ruff"] and manifest["file_sha256"]
    with (root / "leaderboard.csv").open() as handle:
        board = {row["model"]: row for row in csv.DictReader(handle)}
    assert set(board) == {"smol-greedy", "smol-t1"}
    for row in board.values():
        assert row["pass1"] != "" and row["if_instruction"] != "" and row["elo"] != ""
        assert int(row["battles"]) + int(row["judge_errors"]) == 12
    assert (root / "leaderboard.png").stat().st_size > 1000
    assert "data:image/png;base64," in (root / "report.html").read_text()
    before = result_files(root)

    assert "smol-t1" in (root / "view.html").read_text()
    again = run_cli_text("run", str(experiment), timeout=900)
    assert "Loading safetensors checkpoint shards" not in again  # nothing to ask: no start
    assert re.search(r"\b0\s+model\s+calls\s+this\s+run", again), again[-500:]
    assert json.loads((root / "manifest.json").read_text())["model_calls"] == 0
    assert result_files(root) == before


def test_a_mistyped_key_names_the_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[experiment]\nname = "x"\n\n[benchmark]\nsource = "t.jsonl"\n\n'
                    '[[models]]\nname = "a"\ntemprature = 0.5\n')
    result = invoke("run", str(path), "--dry-run")
    assert result.exit_code != 0
    assert f"{path}:9" in result.output and "temprature" in result.output
    assert "unknown key" in result.output


def test_a_changed_model_gets_new_files_and_the_other_keeps_its_own(tmp_path: Path) -> None:
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan

    experiment, base = load_experiment(experiment_in(tmp_path))
    changed_text = experiment_in(tmp_path).read_text().replace("temperature = 1.0",
                                                               "temperature = 0.7")
    (tmp_path / "changed.toml").write_text(changed_text)
    changed, _ = load_experiment(tmp_path / "changed.toml")
    _, before = build_plan(experiment, base, 6)
    _, after = build_plan(changed, base, 6)
    outputs = {stage.label: stage.output for stage in before}
    moved = {stage.label for stage in after if outputs.get(stage.label) != stage.output}
    assert moved == {"generate smol-t1", "score smol-t1", "judge smol-greedy vs smol-t1"}


# --- killed mid-stage, resumed: the same results as an uninterrupted run ------------------


def comparable(root: Path) -> dict[str, object]:
    """Records (in any order, judge costs aside) and the tables derived from them."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for record in records:
            record.pop("cost", None)
        found[str(path.relative_to(root))] = sorted(json.dumps(r, sort_keys=True) for r in records)
    for name in ("ratings.csv", "leaderboard.csv"):
        found[name] = (root / name).read_text()
    return found


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["generations", "scores", "judgments"])
def test_a_run_killed_in_any_stage_resumes_to_the_same_results(fake_server, tmp_path, stage):
    import signal
    import subprocess
    import time

    from pj_cli import cli_argv
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    whole = fake_experiment(tmp_path / "whole", fake_server.url)
    run_cli("run", str(whole), timeout=600)
    part = fake_experiment(tmp_path / "part", fake_server.url)
    root = tmp_path / "part" / "results" / "fake"
    fake_server.delay = 0.05 if stage != "scores" else 0.0
    process = subprocess.Popen(cli_argv("run", str(part)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        while True:  # the last model's file (or the pair's) has a few records
            files = sorted((root / stage).glob("model-b*.jsonl")) + sorted(
                (root / stage).glob("*__*.jsonl"))
            if files and files[-1].read_text().count("\n") >= 3:
                break
            assert process.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert not (root / "leaderboard.csv").exists()
    fake_server.delay = 0.0
    resumed = run_cli("run", str(part), timeout=600)
    said = " ".join((resumed.stdout + resumed.stderr).split())
    assert "resuming" in said
    # the viewer shows each record once (the merged files repeat the per-model ones)
    assert "16 scored samples, 8 judged pairs" in said
    assert comparable(root) == comparable(tmp_path / "whole" / "results" / "fake")


def test_the_served_gpu_example_is_a_valid_experiment() -> None:
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan

    experiment, base = load_experiment(ROOT / "examples" / "served_gpu.toml")
    _, stages = build_plan(experiment, base, 100)
    judge = [stage for stage in stages if stage.kind == "judge"]
    assert len(judge) == 1 and judge[0].bound == "≥" and judge[0].requests == 200 * 5
    generate = [stage for stage in stages if stage.kind == "generate"]
    # single k = 0..5 (6) + multi 6 turns - the shared k = 0 request, per task
    assert [stage.requests for stage in generate] == [100 * 11, 100 * 11]


def root_of(experiment: Path) -> Path:
    """The results folder of a fake experiment file."""
    return experiment.parent / "results" / "fake"


@pytest.mark.slow
def test_personas_rewrite_generate_and_compare_then_resume_with_no_call(fake_server, tmp_path):
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    path = fake_experiment(tmp_path / "p", fake_server.url)
    path.write_text(path.read_text() + (
        '\n[personas]\nnames = ["beginner"]\nbackend = "openai"\nmodel = "fake-judge"\n'
        f'base_url = "{fake_server.url}"\nmax_attempts = 2\n'))
    run_cli("run", str(path), timeout=600)
    folder = tmp_path / "p" / "results" / "fake" / "personas" / "beginner"
    accepted = [json.loads(line)["task_id"] for line in
                (folder / "tasks.jsonl").read_text().splitlines()]
    assert accepted
    for original in (folder / "original").glob("*.jsonl"):  # k = 0 answers, accepted tasks
        rows = [json.loads(line) for line in original.read_text().splitlines()]
        assert sorted(r["task_id"] for r in rows) == sorted(accepted)
        assert {(r["protocol"], r["k"]) for r in rows} == {("single", 0)}
    (compared,) = folder.glob("*__*.jsonl")
    conditions = [json.loads(line)["condition"] for line in compared.read_text().splitlines()]
    assert sorted(conditions) == ["original"] * len(accepted) + ["persona"] * len(accepted)
    flips = json.loads(compared.with_name(compared.stem + ".flips.json").read_text())
    assert flips["rows"][-1]["dimension"] == "overall"
    # the models' two backends, and one for the judge and the personas (the same model)
    assert json.loads((root_of(path) / "manifest.json").read_text())["backends_opened"] == 3
    calls = fake_server.calls
    again = run_cli_text("run", str(path), timeout=600)
    assert re.search(r"\b0\s+model\s+calls\s+this\s+run", again) and fake_server.calls == calls


def test_the_llm_selector_is_asked_through_the_backend_given(tmp_path: Path) -> None:
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan

    text = experiment_in(tmp_path).read_text().replace(
        "[augment]\nk = 2", '[augment]\nk = 2\nselector = "llm"\nbackend = "embedded"')
    (tmp_path / "llm.toml").write_text(text)
    experiment, base = load_experiment(tmp_path / "llm.toml")
    _, stages = build_plan(experiment, base, 6)
    augment = stages[0]
    assert augment.settings.selector == "llm" and augment.settings.k == 2
    assert augment.backend is not None and augment.backend.kind == "embedded"
    assert (augment.requests, augment.bound) == (6, "≥")


def test_a_bad_key_in_the_second_model_is_found_in_that_model(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[experiment]\nname = "x"\n\n[benchmark]\nsource = "t.jsonl"\n\n'
                    '[[models]]\nname = "a"\n\n[[models]]\nname = "b/c"\n')
    result = invoke("run", str(path), "--dry-run")
    assert result.exit_code != 0
    assert f"{path}:11: field 'models.1.name'" in result.output, result.output


@pytest.mark.slow
def test_an_evidence_judged_experiment_asks_no_judge_model(fake_server, tmp_path):
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    path = fake_experiment(tmp_path / "e", fake_server.url)
    text = path.read_text().replace(
        '[judge]\nmethod = "monolithic"\nbackend = "openai"\nmodel = "fake-judge"\n'
        f'base_url = "{fake_server.url}"\n',
        '[judge]\nmethod = "evidence"\ncriterion = "correctness,instructions"\n')
    assert 'method = "evidence"' in text
    path.write_text(text)
    plan = run_in_process(str(path), "--dry-run")
    assert re.search(r"judge model-a vs model-b\s*│[^│]*│\s*—", plan), plan[-2000:]
    run_cli("run", str(path), timeout=600)
    root = tmp_path / "e" / "results" / "fake"
    (judged,) = (root / "judgments").glob("*__*.jsonl")
    verdicts = [json.loads(line) for line in judged.read_text().splitlines()]
    assert len(verdicts) == 8 and {v["method"] for v in verdicts} == {"evidence"}
    assert all(v["cost"]["model_calls"] == 0 and v["decided_by"].startswith("evidence:")
               for v in verdicts)
    assert fake_server.calls == 2 * 4 * 2  # the generations only: 2 models x 4 tasks x 2 k
    assert json.loads((root / "manifest.json").read_text())["backends_opened"] == 2
    assert (root / "leaderboard.csv").exists()


def test_the_smoke_plan_asks_one_backend_at_each_stage_s_own_sampling(tmp_path: Path) -> None:
    """Both models and the judge are the embedded model: one backend, three samplings."""
    from prefjudge.backends.pool import backend_key
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan
    from prefjudge.judge.settings import JUDGE_SAMPLING

    experiment, base = load_experiment(experiment_in(tmp_path))
    _, stages = build_plan(experiment, base, 6)
    asking = [stage for stage in stages if stage.backend is not None]
    assert [stage.kind for stage in asking] == ["generate", "generate", "judge"]
    assert len({backend_key(stage.backend) for stage in asking}) == 1
    greedy, hot, judge = (stage.settings.sampling for stage in asking)
    assert (greedy.temperature, greedy.seed, greedy.max_tokens) == (0.0, None, 96)
    assert (hot.temperature, hot.seed, hot.max_tokens) == (1.0, 1, 96)
    assert judge.max_tokens == 160  # [judge] max_tokens over the judge's own default
    assert judge.temperature == JUDGE_SAMPLING.get("temperature", 0.0)
    assert all(stage.backend.cache == str(tmp_path / "results" / "smoke" / "cache.sqlite")
               for stage in asking)
