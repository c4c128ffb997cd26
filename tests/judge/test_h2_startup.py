"""Judging starts light: lazy method registration, no numpy on the judge path (issue 44).

``evidence`` and ``hybrid`` register their names and traits only; their classes (and the
sandbox and verifier behind them) are imported when the registry is first asked for one.
Each check that needs a fresh interpreter runs one (``sys.modules`` of this one is shared).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from prefjudge.judge import METHODS, method_traits
from prefjudge.judge.methods import register_lazy_method, unregister_method

HEAVY = ("prefjudge.judge.facts.judge", "prefjudge.judge.evidence_methods", "prefjudge.sandbox",
         "prefjudge.scoring.verify", "yaml", "numpy", "pandas", "scipy")


def _loaded_after(code: str) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of :data:`HEAVY` it left imported."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout.splitlines()[-1])


def test_listing_methods_and_their_traits_imports_no_evidence_code() -> None:
    loaded = _loaded_after(
        "import prefjudge.judge as j\n"
        "from prefjudge.judge.prompts import METHOD_STAGES\n"
        "names = list(j.METHOD_NAMES)\n"
        "assert names[-2:] == ['evidence', 'hybrid'], names\n"
        "assert [j.method_traits(m).needs_tests for m in names] == [False] * 3 + [True] * 2\n"
        "assert j.method_traits('hybrid', 'monolithic').calls_bound == '≤'\n"
        "assert list(j.MODEL_METHODS) == ['criteralign', 'monolithic', 'pointwise']\n"
        "assert 'evidence' not in METHOD_STAGES and 'hybrid' not in METHOD_STAGES\n"
    )
    assert not any(loaded.values()), loaded


def test_asking_for_a_lazy_class_imports_it() -> None:
    loaded = _loaded_after(
        "from prefjudge.judge import METHODS, Hybrid\n"
        "assert Hybrid is METHODS['hybrid'] and Hybrid.__name__ == 'Hybrid'\n"
        "assert Hybrid.fallback_methods['monolithic'].__name__ == 'Monolithic'\n"
    )
    assert loaded["prefjudge.judge.facts.judge"] and loaded["prefjudge.judge.evidence_methods"]


def test_the_judge_use_case_imports_no_numeric_library() -> None:
    loaded = _loaded_after(
        "import prefjudge.judge.run, prefjudge.backends.openai_http, prefjudge.cli.judge_cmd"
    )
    assert not (loaded["numpy"] or loaded["pandas"] or loaded["scipy"]), loaded


def test_the_lazy_classes_declare_the_traits_they_were_registered_with() -> None:
    loaded = _loaded_after(
        "from prefjudge.judge.methods import METHODS, TRAITS, LazyMethod\n"
        "for name in ('evidence', 'hybrid'):\n"
        "    entry = dict.__getitem__(METHODS, name)\n"
        "    assert isinstance(entry, LazyMethod), entry\n"
        "    cls = METHODS[name]\n"
        "    assert cls is dict.__getitem__(METHODS, name) and cls.__name__ == name.title()\n"
        "    assert [getattr(cls, t) for t in TRAITS] == [getattr(entry, t) for t in TRAITS]\n"
    )
    assert loaded["prefjudge.judge.evidence_methods"]


def test_a_lazy_entry_whose_class_disagrees_is_refused_when_loaded() -> None:
    register_lazy_method("liar", "prefjudge.judge.baselines:Monolithic", needs_model=False)
    try:
        assert not method_traits("liar").needs_model  # the registered traits, unloaded
        with pytest.raises(TypeError, match="needs_model"):
            METHODS["liar"]
    finally:
        unregister_method("liar")
    assert "liar" not in METHODS


def test_the_copied_resample_default_equals_the_statistics_one() -> None:
    from prefjudge.judge import run
    from prefjudge.stats import DEFAULT_RESAMPLES

    assert run.DEFAULT_RESAMPLES == DEFAULT_RESAMPLES
    assert run.JudgeFileSettings(inputs=("x",), output="o").bootstrap == DEFAULT_RESAMPLES


def test_the_split_modules_names_are_still_published_by_run() -> None:
    from prefjudge.judge import journaled, pair_run, run

    for name in ("verdict_journal", "plan_judging", "judge_plan", "run_judging", "judge_to_file",
                 "model_for", "uses_evidence_facts", "JudgingEngine", "Judged", "JudgingPlan"):
        assert getattr(run, name) is getattr(journaled, name)
    for name in ("PairSettings", "PreparedPair", "prepare_pair", "judge_pair", "find_task"):
        assert getattr(run, name) is getattr(pair_run, name)
