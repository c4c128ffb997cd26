"""The typed contracts between stages: generations, battles and usage (prefjudge.records)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from prefjudge import backends
from prefjudge.backends import Result
from prefjudge.judge.common import Ledger
from prefjudge.ranking.inputs import BATTLE_COLUMNS, battles_frame, read_battles
from prefjudge.records import (
    Battle,
    Generation,
    PersonaComparison,
    ProtocolGeneration,
    ScoredSample,
    Turn,
    Usage,
    Verdict,
)
from prefjudge.scoring.score import multi_turn_items
from prefjudge.testbed import protocols

TURNS = [
    {"index": 1, "prompt": "write f", "response": "a", "instruction": None, "error": None},
    {"index": 2, "prompt": "add docs", "response": "b",
     "instruction": {"id": "doc_1", "params": {}}, "error": None},
]
GENERATE_RECORD = {
    "id": "T/1::multi::k1::s0", "task_id": "T/1", "model": "m", "response": "b",
    "instructions": [{"id": "doc_1", "params": {}}], "protocol": "multi", "k": 1,
    "sample": 0, "turns": TURNS, "error": None,
}


def dumped(record: Generation) -> str:
    """A record as the journal writes it."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False)


# -- generations ---------------------------------------------------------------------------


def test_protocol_fields_are_typed() -> None:
    gen = Generation.model_validate(GENERATE_RECORD)
    assert (gen.protocol, gen.k, gen.sample, gen.error) == ("multi", 1, 0, None)
    assert all(isinstance(turn, Turn) for turn in gen.turns or [])
    assert gen.model_extra == {}
    items = multi_turn_items(gen)
    assert [response for response, _ in items] == ["a", "b"]
    assert [[ref.id for ref in refs] for _, refs in items] == [[], ["doc_1"]]


def test_a_generate_record_reads_back_byte_identical() -> None:
    line = json.dumps(GENERATE_RECORD)
    for model in (Generation, ProtocolGeneration):
        assert dumped(model.model_validate_json(line)) == line
    scored = ScoredSample.model_validate(GENERATE_RECORD).model_dump(mode="json")
    core = ["id", "task_id", "model", "response", "instructions"]
    scoring = ["instruction_results", "if_instruction", "if_task", "func", "turn_results",
               "meta"]
    assert list(scored) == [*core, *scoring, "protocol", "k", "sample", "turns", "error"]


def test_absent_protocol_fields_are_not_written() -> None:
    plain = {"id": None, "task_id": "t", "model": "m", "response": "r", "instructions": []}
    gen = Generation.model_validate(plain)
    assert gen.protocol is None and gen.k is None and gen.sample == 0 and gen.turns is None
    assert gen.model_dump() == plain
    with_error_null = Generation.model_validate({**plain, "error": None})
    assert with_error_null.model_dump() == {**plain, "error": None}


def test_unknown_fields_and_protocol_fields_keep_the_input_order() -> None:
    line = ('{"id": "u", "task_id": "t", "model": "m", "response": "r", "instructions": [], '
            '"note": 1, "protocol": "agentic", "temperature": 0.2, "k": 0, '
            '"turns": [{"prompt": "p", "index": 1, "seen": true}]}')
    gen = Generation.model_validate_json(line)
    assert gen.protocol == "agentic" and gen.model_extra == {"note": 1, "temperature": 0.2}
    assert gen.turns is not None and gen.turns[0].response == ""
    assert dumped(gen) == line  # a partial turn is not filled with defaults either
    reordered = Generation.model_validate_json(json.dumps(dict(reversed(json.loads(line).items()))))
    assert reordered == gen  # the order is how a record is written, not part of its value


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("k", "two", "must be a non-negative integer, got 'two'"),
        ("k", -1, "must be a non-negative integer, got -1"),
        ("k", True, "must be a non-negative integer, got True"),
        ("protocol", ["multi"], "expected a string"),
        ("sample", "1", "Input should be a valid integer"),
        ("turns", ["just text"], "Input should be a valid dictionary or instance of Turn"),
    ],
)
def test_malformed_protocol_fields_are_named(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        Generation.model_validate({"task_id": "t", "model": "m", "response": "", field: value})
    err = info.value.errors()[0]
    assert err["loc"][0] == field and err["msg"] == message


def test_k_written_as_a_whole_float_is_an_integer() -> None:
    assert Generation(task_id="t", model="m", response="", k=2.0).k == 2


def test_protocol_generation_requires_the_protocol_fields() -> None:
    assert protocols.ProtocolGeneration is ProtocolGeneration
    assert issubclass(ProtocolGeneration, Generation)
    with pytest.raises(ValidationError) as info:
        ProtocolGeneration(task_id="t", model="m", response="")
    assert {err["loc"][0] for err in info.value.errors()} == {"protocol", "k", "turns"}
    with pytest.raises(ValidationError):
        ProtocolGeneration.model_validate({**GENERATE_RECORD, "protocol": "agentic"})
    record = ProtocolGeneration(task_id="t", model="m", response="", protocol="single", k=0,
                                turns=[])
    assert record.model_dump()["sample"] == 0 and record.model_dump()["error"] is None


# -- battles -------------------------------------------------------------------------------


def test_battle_rules() -> None:
    assert Battle(model_a="x", model_b="y", winner="tie").weight == 1.0
    bad = [
        {"model_a": "x", "model_b": "x", "winner": "tie"},
        {"model_a": " ", "model_b": "y", "winner": "tie"},
        {"model_a": "x", "model_b": "y", "winner": "left"},
        {"model_a": "x", "model_b": "y", "winner": "tie", "weight": -1},
        {"model_a": "x", "model_b": "y", "winner": "tie", "weight": math.nan},
    ]
    for fields in bad:
        with pytest.raises(ValidationError):
            Battle.model_validate(fields)


def verdict(pair_id: str, winner: str | None, category: str | None = "c") -> Verdict:
    status = "ok" if winner else "error"
    return Verdict(pair_id=pair_id, task_id="t", model_a="x", model_b="y", method="monolithic",
                   status=status, winner=winner, category=category,
                   error=None if winner else "final: request_failed: boom")


def test_a_verdict_gives_its_battle() -> None:
    assert verdict("p", "model_b").battle() == Battle(model_a="x", model_b="y",
                                                      winner="model_b", category="c")
    assert verdict("p", None).battle() is None


def test_rank_reads_the_battles_judge_writes(tmp_path: Path) -> None:
    verdicts = [verdict("p1", "model_a"), verdict("p2", "tie", None), verdict("p3", "model_b")]
    path = tmp_path / "verdicts.jsonl"
    path.write_text("".join(v.model_dump_json() + "\n" for v in verdicts), encoding="utf-8")
    frame, issues = read_battles(path)
    expected = battles_frame([v.battle() for v in verdicts])
    assert issues == [] and list(frame.columns) == BATTLE_COLUMNS
    assert frame.equals(expected)


def test_a_failed_verdict_is_reported_never_counted(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.jsonl"
    path.write_text(verdict("p1", "model_a").model_dump_json() + "\n"
                    + verdict("p2", None).model_dump_json() + "\n", encoding="utf-8")
    frame, issues = read_battles(path, skip_invalid=True)
    assert list(frame["winner"]) == ["model_a"]
    assert [str(i) for i in issues] == [
        f"{path}:2: field 'winner': no winner: the judge failed (final: request_failed: boom)"
    ]


def test_battles_frame_numbers_lines() -> None:
    battles = [Battle(model_a="x", model_b="y", winner="tie", weight=2)]
    assert battles_frame(battles).to_dict("records") == [
        {"model_a": "x", "model_b": "y", "winner": "tie", "weight": 2.0, "category": None,
         "line": 1}
    ]
    assert list(battles_frame(battles, lines=[7])["line"]) == [7]


# -- usage ---------------------------------------------------------------------------------

COUNTERS = ["requests", "model_calls", "cache_hits", "prompt_tokens", "completion_tokens",
            "retries", "invalid_outputs", "errors"]
ITEM_COST = [c for c in COUNTERS if c not in ("retries", "invalid_outputs")]


def test_one_usage_type_for_backends_and_items() -> None:
    assert backends.Usage is Usage
    usage = Usage()
    usage.requests += 2
    assert list(usage.as_dict()) == COUNTERS and usage.as_dict()["requests"] == 2
    assert Verdict.model_fields["cost"].default_factory is Usage


def test_item_costs_are_written_with_their_six_counters() -> None:
    ledger = Ledger()
    ledger.add("p", Result(request_id="a", model="j", text="{}", attempts=2, prompt_tokens=10,
                           completion_tokens=3))
    ledger.add("p", Result(request_id="b", model="j", text="{}", cached=True, attempts=1))
    ledger.add("p", Result(request_id="c", model="j", error="x", error_kind="request_failed"))
    cost = ledger.cost("p")
    assert isinstance(cost, Usage)
    expected = {"requests": 3, "model_calls": 2, "cache_hits": 1, "prompt_tokens": 10,
                "completion_tokens": 3, "errors": 1}
    record = verdict("p", "tie").model_copy(update={"cost": cost})
    assert json.loads(record.model_dump_json())["cost"] == expected
    assert list(record.model_dump(mode="json")["cost"]) == ITEM_COST
    comparison = PersonaComparison(task_id="t", condition="original", model_a="x", model_b="y",
                                   cost=cost)
    assert comparison.model_dump()["cost"] == expected
    assert Verdict.model_validate_json(record.model_dump_json()) == record
    counted = cost.model_copy(update={"retries": 1})
    assert record.model_copy(update={"cost": counted}).model_dump()["cost"]["retries"] == 1
