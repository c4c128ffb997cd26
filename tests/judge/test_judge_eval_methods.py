"""``judge-eval`` with a method that runs tests beside one that does not.

``--tests`` is for ``evidence``/``hybrid``; evaluated beside a model-based method, the
tests go to the method that runs them instead of refusing the model-based one.
"""

from __future__ import annotations

from pathlib import Path

from pj_cli import SAMPLE_DIR
from pj_scripted_backend import ScriptedBackend, shown

from prefjudge.backends import Request
from prefjudge.judge.judge_eval import JudgeEvalSettings, evaluate_judges
from prefjudge.records import Pair
from prefjudge.reporting import SilentReporter

GOOD = (
    "def running_mean(values):\n    out, total = [], 0.0\n"
    "    for i, v in enumerate(values, 1):\n        total += v\n        out.append(total / i)\n"
    "    return out\n"
)
WRONG = "def running_mean(values):\n    return values\n"


def prefers_total(request: Request) -> dict[str, str]:
    side = "A" if "total" in shown(request, "A") else "B"
    return {"reason": f"{side} keeps a total", "verdict": side}


def test_tests_go_to_the_method_that_runs_them(tmp_path: Path) -> None:
    pairs = [
        Pair(
            pair_id=f"p{i}",
            task_id="sample/running_mean",
            instruction="Running means.",
            response_a=GOOD if i % 2 == 0 else WRONG,
            response_b=WRONG if i % 2 == 0 else GOOD,
            label="A" if i % 2 == 0 else "B",
        )
        for i in range(2)
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(p.model_dump_json() + "\n" for p in pairs), encoding="utf-8")
    settings = JudgeEvalSettings(
        sources=(str(path),),
        output=tmp_path / "eval",
        methods=("monolithic", "evidence"),
        tests=(str(SAMPLE_DIR / "tasks.jsonl"),),
        criterion="correctness",
        bootstrap=20,
    )
    outcome = evaluate_judges(settings, ScriptedBackend(prefers_total), SilentReporter())
    assert outcome.results["monolithic"]["accuracy"] == 1.0
    evidence = outcome.results["evidence"]
    assert evidence["accuracy"] == 1.0
    assert evidence["decided_by"]["counts"] == {"evidence:correctness": 2}
