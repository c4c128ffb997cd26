"""`prefjudge run` with ``[judge] strategy = "suggest"``: a judging budget spent in rounds.

Four models answer through the scripted OpenAI-compatible fake server; round 0 judges one
pair of every model pair, two more rounds spend the rest of the budget on the model pairs
that :mod:`prefjudge.ranking.suggest` chooses (raising ``--limit``, the judge resumes).
The run judges exactly the budget, ranks the four models, and a rerun makes no call.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from pj_cli import rows, run_cli, run_cli_text

from prefjudge.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("model-a", "model-b", "model-c", "model-d")
TASKS = 3  # pairs per model pair: 3 tasks x k = 0 x 1 sample
BUDGET = 14  # round 0: 6 model pairs x 1; rounds 1-2: 8 more

EXPERIMENT = """
[experiment]
name = "budget"
results = "{results}"

[benchmark]
source = "{tasks}"
limit = {n_tasks}

[augment]
k = 1

[generate]
protocols = ["single"]
ks = "0"
max_tokens = 32
{models}
[judge]
method = "monolithic"
backend = "openai"
model = "fake-judge"
base_url = "{url}"
strategy = "suggest"
budget = {budget}
rounds = 2
seed_judgments = 1

[rank]
alpha = 0.01
bootstrap = 20

[report]
bootstrap = 0
"""

MODEL = """
[[models]]
name = "{name}"
backend = "openai"
model = "fake-{name}"
base_url = "{url}"
"""


def write_experiment(folder: Path, url: str, budget: int = BUDGET, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    models = "".join(MODEL.format(name=name, url=url) for name in MODELS)
    path = folder / "budget.toml"
    path.write_text(EXPERIMENT.format(
        results=folder / "results", tasks=ROOT / "datasets" / "sample" / "tasks.jsonl",
        n_tasks=TASKS, models=models, url=url, budget=budget) + extra)
    return path


def verdict_counts(root: Path) -> dict[str, int]:
    return {path.name: len(rows(path)) for path in sorted((root / "judgments").glob("*.jsonl"))}


def test_the_plan_shows_round_zero_and_the_budget_as_the_bound(tmp_path: Path) -> None:
    from prefjudge.experiment.config import load_experiment
    from prefjudge.experiment.plan import build_plan

    experiment, base = load_experiment(write_experiment(tmp_path, "http://127.0.0.1:9/v1"))
    _, stages = build_plan(experiment, base, TASKS)
    judges = [stage for stage in stages if stage.kind == "judge"]
    assert len(judges) == 6
    for stage in judges:
        assert stage.settings.limit == 1
        assert (stage.requests, stage.bound) == (2, "")  # monolithic: 2 calls per pair
    (rounds,) = [stage for stage in stages if stage.kind == "judge-rounds"]
    assert (rounds.requests, rounds.bound) == ((BUDGET - 6) * 2, "≤")
    assert rounds.rounds is not None
    assert [rounds.rounds.target(r) for r in range(3)] == [6, 10, 14]
    kinds = [stage.kind for stage in stages]
    assert kinds.index("judge-rounds") == kinds.index("merge-battles") - 1


@pytest.mark.parametrize(("judge_lines", "message"), [
    ('strategy = "suggest"\n', "needs a budget"),
    ('strategy = "suggest"\nbudget = 5\n', "below round 0's 6 judgments"),
    ("budget = 10\n", 'apply to strategy = "suggest" only'),
])
def test_a_budget_is_checked_against_the_strategy_and_round_zero(
        tmp_path: Path, judge_lines: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    models = "".join(f'\n[[models]]\nname = "{name}"\n' for name in MODELS)
    path.write_text('[experiment]\nname = "x"\n\n[benchmark]\nsource = "t.jsonl"\n'
                    f"{models}\n[judge]\nmethod = \"monolithic\"\n{judge_lines}")
    result = CliRunner().invoke(main, ["run", str(path), "--dry-run"])
    assert result.exit_code != 0
    assert message in " ".join(result.output.split()), result.output


@pytest.mark.slow
def test_a_budgeted_run_judges_exactly_the_budget_ranks_and_resumes_with_no_call(
        fake_server, tmp_path: Path) -> None:
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    path = write_experiment(tmp_path / "run", fake_server.url)
    plan = " ".join(run_cli_text("run", str(path), "--dry-run").split())
    assert "≤ 16" in plan and "(round 0)" in plan, plan[-2500:]  # (14 - 6) judgments x 2

    run_cli("run", str(path), timeout=600)
    root = tmp_path / "run" / "results" / "budget"
    counts = verdict_counts(root)
    assert len(counts) == 6 and min(counts.values()) >= 1 and max(counts.values()) <= TASKS
    assert sum(counts.values()) == BUDGET
    assert len(rows(root / "battles.jsonl")) == BUDGET
    manifest = json.loads((root / "manifest.json").read_text())
    (stage,) = [s for s in manifest["stages"] if s["kind"] == "judge-rounds"]
    assert [r["target"] for r in stage["rounds"]] == [10, 14]
    assert sum(r["judged"] for r in stage["rounds"]) == BUDGET - 6
    assert stage["planned_requests"] == (BUDGET - 6) * 2
    # every judgment asked the judge twice (identical requests are answered by the cache)
    verdicts = [v for path in (root / "judgments").glob("*.jsonl") for v in rows(path)]
    assert sum(v["cost"]["requests"] for v in verdicts) == 2 * BUDGET
    with (root / "ratings.csv").open() as handle:
        assert sorted(row["model"] for row in csv.DictReader(handle)) == list(MODELS)

    calls = fake_server.calls
    again = run_cli_text("run", str(path), timeout=600)
    assert re.search(r"\b0\s+model\s+calls\s+this\s+run", again), again[-800:]
    assert fake_server.calls == calls and verdict_counts(root) == counts
