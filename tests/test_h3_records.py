"""Issue 44 (h3): records as a package of one job per module, one id format, one rule per fact.

* ``prefjudge.records`` still exports every name the single module did, and each of its
  modules stays under 600 lines;
* a judging method's name is an open, validated name: a method registered later has its
  verdicts written, a malformed name is refused, built-in verdicts are written as before;
* a generation id and a journal key are built in one place each, and every stage that
  names generations (``generate``, ``score``'s sample files, joining two models'
  generations) names them so;
* one rule tells a scored record (``view`` tells files' kinds by it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

import prefjudge.records as records
from prefjudge.judge.pairs.join import pairs_from_generations
from prefjudge.records import (
    Generation,
    ProtocolGeneration,
    Verdict,
    generation_id,
    is_scored_record,
    journal_key,
)
from prefjudge.scoring.formats import read_generations
from prefjudge.scoring.score import generation_keys
from prefjudge.testbed import protocol_prompts
from prefjudge.view.load import record_kind

PACKAGE = Path(records.__file__).parent

# every public name of the single records.py before the split
OLD_NAMES = [
    "AugmentStats", "AugmentedTask", "BATTLE_FIELDS", "Battle", "CheckResult", "CheckStatus",
    "Count", "Criterion", "CriterionOutcome", "CriterionVerdict", "DimensionVerdict",
    "EvidenceKind", "Fact", "FactOutcome", "FuncResult", "FuncStatus", "Generation",
    "InputPreferences", "InstructionRef", "InstructionSpec", "ItemCost", "JudgeMethodName",
    "MOST_PER_TASK", "ModelName", "NO_EVIDENCE", "OutputPreferences", "Pair", "ParamSpec",
    "Persona", "PersonaComparison", "ProtocolGeneration", "ProtocolName", "Rating",
    "SIDE_WINNERS", "ScoredSample", "SetResult", "Side", "StdioCase", "Task", "TestFormat",
    "Turn", "Usage", "VERDICT_KEYS", "Verdict", "VerifierSpec", "Winner", "battle_of",
    "generation_failed", "is_verdict_row", "model_name_warnings", "normalize_model_name",
]


def test_the_package_exports_every_old_name_and_each_module_is_small() -> None:
    missing = [name for name in OLD_NAMES if not hasattr(records, name)]
    assert missing == []
    assert set(OLD_NAMES) <= set(records.__all__)
    assert all(hasattr(records, name) for name in records.__all__)
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 8  # one job each, not one file renamed
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in modules}
    assert max(sizes.values()) < 600, sizes


# --------------------------------------------------------------------------- method names


VERDICT_LINE = (
    '{"pair_id":"p1","task_id":"t1","model_a":"x","model_b":"y","method":"criteralign",'
    '"status":"ok","winner":"model_a","preferred":"A","orders":{"forward":"A","swapped":"A"},'
    '"position_consistent":true,"reasons":{"forward":"r"},"criteria":[],"decisive":[],'
    '"inconsistency_rate":null,"refined":0,"scores":{},"label":null,"category":null,'
    '"error":null,"warnings":[],"judge_model":"j","guidance":null,"evidence":false,'
    '"cost":{"requests":1,"model_calls":1,"cache_hits":0,"prompt_tokens":5,'
    '"completion_tokens":3,"errors":0},"facts":[],"decided_by":null,"features_a":null,'
    '"features_b":null,"features_by":null}'
)


def test_a_built_in_verdict_is_written_back_byte_for_byte() -> None:
    verdict = Verdict.model_validate_json(VERDICT_LINE)
    assert verdict.model_dump_json() == VERDICT_LINE
    for method in ("criteralign", "monolithic", "pointwise", "evidence", "hybrid"):
        line = VERDICT_LINE.replace('"criteralign"', f'"{method}"')
        assert Verdict.model_validate_json(line).model_dump_json() == line


def test_a_registered_method_name_is_a_verdict_method_and_a_malformed_one_is_refused() -> None:
    for name in ("shorter", "my-judge", "judge_2", "a" * 64):
        line = VERDICT_LINE.replace('"criteralign"', json.dumps(name))
        assert Verdict.model_validate_json(line).method == name
        assert records.battle_of(json.loads(line)) is not None  # and rank counts it
    for bad in ("", "Shorter", "2judge", "has space", "a" * 65, "crit\u00e9ralign"):
        with pytest.raises(ValidationError, match="judging method's name"):
            Verdict(pair_id="p", task_id="t", model_a="x", model_b="y", method=bad)
    with pytest.raises(ValidationError):
        Verdict(pair_id="p", task_id="t", model_a="x", model_b="y", method=3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- ids and keys


def test_generation_id_is_the_one_form_and_leaves_out_parts_not_given() -> None:
    assert generation_id("BigCodeBench/13", "multi", 3, 0) == "BigCodeBench/13::multi::k3::s0"
    assert generation_id("T/1", "single", 0) == "T/1::single::k0::s0"  # sample 0 by default
    assert generation_id("T/1", None, 2, None) == "T/1::k2"
    assert generation_id("T/1", None, None, 4) == "T/1::s4"
    assert generation_id("T/1", None, None, None) == "T/1"
    assert protocol_prompts.generation_id is generation_id  # generate names records with it
    assert journal_key("gpt-x", "T/1::single::k0::s0") == "gpt-x::T/1::single::k0::s0"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_sample_files_and_joined_pairs_are_named_by_generation_id(tmp_path: Path) -> None:
    samples = _write(tmp_path / "m.jsonl", [
        {"task_id": "HumanEval/0", "solution": "def f():\n    return 1\n"},
        {"task_id": "HumanEval/0", "solution": "def f():\n    return 2\n"},
    ])
    read, issues = read_generations(samples, model="m")
    assert issues == []
    assert [gen.id for _, gen in read] == [
        generation_id("HumanEval/0", "single", 0, 0), generation_id("HumanEval/0", "single", 0, 1)
    ]
    # score resumes by the journal key of each id
    assert generation_keys([gen for _, gen in read]) == [
        journal_key("m", gen.id) for _, gen in read if gen.id is not None
    ]

    def gen(model: str, k: int) -> dict:
        return {"id": generation_id("T/1", "multi", k, 0), "task_id": "T/1", "model": model,
                "response": f"{model} {k}", "protocol": "multi", "k": k, "sample": 0,
                "turns": [], "error": None, "prompt": "Sort xs."}

    side_a = _write(tmp_path / "a.jsonl", [gen("a", 1), gen("a", 2)])
    side_b = _write(tmp_path / "b.jsonl", [gen("b", 2), gen("b", 3)])
    pairs, notes = pairs_from_generations(side_a, side_b)
    assert [pair.pair_id for pair in pairs] == [generation_id("T/1", "multi", 2, 0) + ":a:b"]
    assert notes == [
        f"1 task_id/protocol/k/sample key(s) only in {side_a}: "
        f"{generation_id('T/1', 'multi', 1, 0)}",
        f"1 task_id/protocol/k/sample key(s) only in {side_b}: "
        f"{generation_id('T/1', 'multi', 3, 0)}",
    ]
    # joined on fewer fields, the label leaves the others out
    bare_a = _write(tmp_path / "c.jsonl", [{"task_id": "T/1", "model": "a", "response": "x",
                                           "k": 1, "prompt": "p"}])
    bare_b = _write(tmp_path / "d.jsonl", [{"task_id": "T/1", "model": "b", "response": "y",
                                           "k": 1, "prompt": "p"}])
    pairs, _ = pairs_from_generations(bare_a, bare_b)
    assert [pair.pair_id for pair in pairs] == ["T/1::k1:a:b"]


def test_generate_journal_keys_records_by_journal_key(tmp_path: Path) -> None:
    from pj_scripted_backend import ScriptedBackend

    from prefjudge.testbed.generation import GenerateSettings, _journal

    gen = ProtocolGeneration(id=generation_id("T/1", "single", 1, 0), task_id="T/1",
                             model="gen-model", response="r", protocol="single", k=1,
                             turns=[])
    settings = GenerateSettings(tmp_path / "aug.jsonl", tmp_path / "out.jsonl", ks=(1,))
    journal = _journal(settings, ScriptedBackend(model_id="gen-model"), "gen-model", [])
    assert journal.key(gen) == journal_key("gen-model", "T/1::single::k1::s0")


# --------------------------------------------------------------------------- scored records


def test_one_rule_tells_a_scored_record() -> None:
    generation = {"task_id": "t", "model": "m", "response": "r"}
    assert not is_scored_record(generation) and record_kind(generation) == "generation"
    for field in sorted(records.SCORED_FIELDS):
        scored = {**generation, field: None}  # present, even null
        assert is_scored_record(scored) and record_kind(scored) == "scored"
    # every field a scored sample adds that tells it is one of them
    added = set(records.ScoredSample.model_fields) - set(Generation.model_fields)
    assert records.SCORED_FIELDS <= added
    from prefjudge.ranking import scored as ranking_scored

    for record in ({"func": 1}, {"if_task": True}, {"model": "m"}, {}):
        assert ranking_scored.is_scored_record(record) is is_scored_record(record)
