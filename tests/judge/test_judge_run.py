"""The judging use cases called directly, without click: ``judge_file``, ``judge_pair``,
``evaluate_judges``, and the methods' traits.

Real parts throughout: the bundled sample's generations and tasks, real verdict journals,
the evidence judge (no model), and the repo's scripted backend as the judge model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pj_cli import SAMPLE_DIR as SAMPLE
from pj_cli import rows
from pj_scripted_backend import ScriptedBackend, shown

from prefjudge.backends import Request
from prefjudge.judge import MODEL_METHODS, method_traits
from prefjudge.judge.judge_eval import JudgeEvalSettings, evaluate_judges
from prefjudge.judge.run import (
    JudgeFileSettings,
    PairSettings,
    judge_file,
    judge_pair,
)
from prefjudge.judge.settings import JudgeOptionError
from prefjudge.records import Pair
from prefjudge.reporting import SilentReporter, StageError

GOOD = "def f(xs):\n    return sorted(xs)\n"


def prefers_sorted(request: Request) -> dict[str, str]:
    """A monolithic judge that prefers the answer calling ``sorted``, in either order."""
    side = "A" if "sorted" in shown(request, "A") else "B"
    return {"reason": f"{side} sorts", "verdict": side}


@pytest.fixture
def generations(tmp_path: Path) -> dict[str, Path]:
    """The sample as two models' generation files, with its tasks."""
    gens = rows(SAMPLE / "generations.jsonl")
    paths = {"tasks": SAMPLE / "tasks.jsonl"}
    for model in ("sample-strong", "sample-weak"):
        path = tmp_path / f"{model}.jsonl"
        path.write_text("".join(json.dumps(g) + "\n" for g in gens if g["model"] == model))
        paths[model] = path
    return paths


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """Six labelled pairs whose sorted side the humans prefer."""
    pairs = []
    for i in range(6):
        good_first = i % 2 == 0
        pairs.append(
            Pair(
                pair_id=f"p{i}",
                task_id=f"t{i}",
                instruction="Sort xs.",
                response_a=GOOD if good_first else "def f(xs):\n    return xs\n",
                response_b="def f(xs):\n    return xs\n" if good_first else GOOD,
                model_a="alpha" if good_first else "beta",
                model_b="beta" if good_first else "alpha",
                label="A" if good_first else "B",
            )
        )
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(p.model_dump_json() + "\n" for p in pairs), encoding="utf-8")
    return path


def test_traits_are_the_planning_rules() -> None:
    """The calls and bounds ``prefjudge run`` plans with, for every method and fallback."""
    calls = {"monolithic": 2, "pointwise": 3, "evidence": 0}
    for method in ("criteralign", "monolithic", "pointwise", "evidence", "hybrid"):
        for fallback in MODEL_METHODS:
            traits = method_traits(method, fallback)
            model_method = fallback if method == "hybrid" else method
            assert traits.calls_per_pair == calls.get(model_method, 5)
            if method == "hybrid":
                assert traits.calls_bound == ("about" if fallback == "criteralign" else "≤")
            else:
                assert traits.calls_bound == ("≥" if method == "criteralign" else "")
            assert traits.needs_model is (method != "evidence")
            assert traits.needs_tests is (method in ("evidence", "hybrid"))
            assert traits.model_method == (None if method == "evidence" else model_method)
    with pytest.raises(ValueError, match="fallback"):
        method_traits("hybrid", "evidence")
    with pytest.raises(ValueError, match="unknown method"):
        method_traits("oracle")


def test_judge_file_evidence_needs_no_model_and_resumes(
    generations: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "verdicts.jsonl"
    settings = JudgeFileSettings(
        inputs=(str(generations["sample-strong"]), str(generations["sample-weak"])),
        output=out,
        method="evidence",
        tasks=(str(generations["tasks"]),),
        tests=(str(generations["tasks"]),),
        criterion="instructions",
        limit=4,
    )
    reporter = SilentReporter()
    outcome = judge_file(settings, None, reporter)
    written = rows(out)
    assert [r["pair_id"] for r in written] == [v.pair_id for v in outcome.verdicts]
    assert len(written) == 4 and outcome.judged == 4 and outcome.output == out
    assert {r["method"] for r in written} == {"evidence"}
    assert {r["judge_model"] for r in written} == {"prefjudge-evidence"}
    assert all(r["decided_by"].startswith("evidence") for r in written)
    assert outcome.errors == sum(r["status"] == "error" for r in written)
    assert outcome.agreement is None and outcome.summary is None  # no human labels
    binding = json.loads(out.with_name("verdicts.jsonl.journal.json").read_text())
    assert binding["settings"]["model"]["backend"] == "none"
    assert binding["settings"]["criterion"] == "instructions"

    again = SilentReporter()
    resumed = judge_file(settings, None, again)
    assert resumed.judged == 0 and resumed.verdicts == outcome.verdicts
    assert ("note", f"resuming: 4 verdicts already in {out}, 0 to judge") in again.messages
    assert len(rows(out)) == 4


def test_judge_file_with_a_model_writes_the_agreement(labelled: Path, tmp_path: Path) -> None:
    backend = ScriptedBackend(prefers_sorted)
    out = tmp_path / "mono.jsonl"
    settings = JudgeFileSettings(
        inputs=(str(labelled),), output=out, method="monolithic", bootstrap=20
    )
    outcome = judge_file(settings, backend, SilentReporter())
    assert len(backend.requests) == 6 * method_traits("monolithic").calls_per_pair
    assert [v["preferred"] for v in rows(out)] == ["A", "B"] * 3
    assert outcome.agreement is not None and outcome.agreement["accuracy"] == 1.0
    assert outcome.summary == tmp_path / "mono.summary.json"
    assert json.loads(outcome.summary.read_text())["accuracy"] == 1.0


def test_judge_file_refuses_what_a_person_must_fix(labelled: Path, tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    with pytest.raises(StageError, match="asks a judge model"):
        judge_file(
            JudgeFileSettings(inputs=(str(labelled),), output=out, method="monolithic"),
            None,
            SilentReporter(),
        )
    with pytest.raises(JudgeOptionError, match="apply to --method evidence or hybrid") as exc:
        judge_file(
            JudgeFileSettings(
                inputs=(str(labelled),),
                output=out,
                method="monolithic",
                tests=(str(SAMPLE / "tasks.jsonl"),),
            ),
            ScriptedBackend(prefers_sorted),
            SilentReporter(),
        )
    assert exc.value.option is None
    with pytest.raises(JudgeOptionError, match="unknown evidence kind") as exc:
        judge_file(
            JudgeFileSettings(
                inputs=(str(labelled),), output=out, method="evidence", criterion="speed"
            ),
            None,
            SilentReporter(),
        )
    assert exc.value.option == "--criterion"
    with pytest.raises(JudgeOptionError, match="no such file") as exc:
        judge_file(
            JudgeFileSettings(
                inputs=(str(labelled), str(tmp_path / "nope.jsonl")), output=out, method="evidence"
            ),
            None,
            SilentReporter(),
        )
    assert exc.value.option == "GENERATIONS_B"
    assert not out.exists()


def test_a_journal_of_another_run_is_a_stage_error(labelled: Path, tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    judge_file(
        JudgeFileSettings(inputs=(str(labelled),), output=out, method="monolithic", bootstrap=20),
        ScriptedBackend(prefers_sorted),
        SilentReporter(),
    )
    with pytest.raises(StageError, match="written by a different run"):
        judge_file(
            JudgeFileSettings(
                inputs=(str(labelled),), output=out, method="evidence", allow_undecided=True
            ),
            None,
            SilentReporter(),
        )


def test_judge_pair_with_a_model_and_without() -> None:
    backend = ScriptedBackend(prefers_sorted)
    verdict = judge_pair(
        PairSettings(
            instruction="Sort xs.",
            response_a="def f(xs): return xs",
            response_b=GOOD,
            method="monolithic",
        ),
        backend,
        SilentReporter(),
    )
    assert verdict.pair_id == "pair" and verdict.preferred == "B"
    assert len(backend.requests) == 2
    evidence = judge_pair(
        PairSettings(
            instruction="Sort xs.",
            response_a=GOOD,
            response_b=GOOD,
            method="evidence",
            criterion="instructions",
            allow_undecided=True,
        ),
        None,
        SilentReporter(),
    )
    assert evidence.method == "evidence" and evidence.judge_model == "prefjudge-evidence"


def test_evaluate_judges_writes_the_comparison(labelled: Path, tmp_path: Path) -> None:
    backend = ScriptedBackend(prefers_sorted)
    folder = tmp_path / "eval"
    settings = JudgeEvalSettings(
        sources=(str(labelled),),
        output=folder,
        methods=("monolithic", "evidence"),
        bootstrap=20,
        limit=4,
        allow_undecided=True,
    )
    reporter = SilentReporter()
    outcome = evaluate_judges(settings, backend, reporter)
    assert outcome.methods == ("monolithic", "evidence") and outcome.pairs == 4
    assert outcome.judge_model == "scripted-judge"
    assert len(rows(folder / "verdicts-monolithic.jsonl")) == 4
    assert len(rows(folder / "verdicts-evidence.jsonl")) == 4
    assert outcome.results["monolithic"]["accuracy"] == 1.0
    assert set(outcome.by_split) == {"monolithic", "evidence"}  # a method runs tests
    assert outcome.criteria == {"pairs": "-"}
    summary = json.loads(outcome.summary_json.read_text())
    assert summary["pairs"] == 4 and set(summary["methods"]) == {"monolithic", "evidence"}
    assert "human_reference" in summary
    assert outcome.summary_csv.is_file() and outcome.summary_png.is_file()
    assert list(outcome.frame.index) == ["monolithic", "evidence"]
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text(
        "".join(json.dumps({**row, "label": None}) + "\n" for row in rows(labelled)),
        encoding="utf-8",
    )
    with pytest.raises(StageError, match="no pair has a human label"):
        evaluate_judges(
            JudgeEvalSettings(sources=(str(unlabelled),), output=folder), backend, SilentReporter()
        )
