"""The registries of pair formats, judging methods and backend kinds, extended from a test.

Each test registers a new entry from this file alone (no other file changed) and shows the
use case picks it up: ``judge_file`` reads pairs in a new format (told from the content or
named), judges with a new method, ``create_backend`` and the run's backend pool build a
new backend kind; and the lists other parts read (the CLI's choices, the experiment
configuration's checks, the backend configuration) are the registries' names. Real
parts: real files, real verdict journals, the real use cases.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pj_scripted_backend import ScriptedBackend
from pydantic import ValidationError

from prefjudge.backends import BACKEND_KINDS, create_backend
from prefjudge.backends.config import BackendConfig, ConfigError, load_backend_config
from prefjudge.backends.extras import BACKEND_NEEDS, missing_extra
from prefjudge.backends.pool import BackendPool
from prefjudge.backends.registry import (
    BackendKindSpec,
    Needs,
    backend_kind,
    register_backend,
    unregister_backend,
)
from prefjudge.io import InputIssue, iter_objects
from prefjudge.judge import METHODS, MODEL_METHODS, method_traits
from prefjudge.judge.common import JudgeMethod, OnResult
from prefjudge.judge.methods import METHOD_NAMES, judge_method, unregister_method
from prefjudge.judge.pairs import (
    PAIR_FORMATS,
    PairFormatSpec,
    detect_format,
    load_pairs,
    pair_format_choices,
    pairs_from_rows,
    register_pair_format,
    unregister_pair_format,
)
from prefjudge.judge.pairs.formats.base import finish, make_pair
from prefjudge.judge.prompts import METHOD_STAGES
from prefjudge.judge.run import JudgeFileSettings, judge_file
from prefjudge.records import SIDE_WINNERS, Pair, Verdict
from prefjudge.reporting import SilentReporter

# ---------------------------------------------------------------------------------------
# A new pair format: DPO-style rows (prompt, chosen, rejected), chosen shown as A or B
# ---------------------------------------------------------------------------------------


def _dpo_pairs(
    rows: Any, where: str, source: str
) -> tuple[list[Pair], list[InputIssue]]:
    pairs: list[Pair] = []
    issues: list[InputIssue] = []
    for number, row in rows:
        if isinstance(row, InputIssue):
            issues.append(row)
            continue
        chosen_first = number % 2 == 1
        made = make_pair(where, number, {
            "pair_id": f"dpo/{number}",
            "task_id": f"dpo/{number}",
            "instruction": row.get("prompt"),
            "response_a": row.get("chosen") if chosen_first else row.get("rejected"),
            "response_b": row.get("rejected") if chosen_first else row.get("chosen"),
            "model_a": "m-chosen" if chosen_first else "m-rejected",
            "model_b": "m-rejected" if chosen_first else "m-chosen",
            "label": "A" if chosen_first else "B",
            "source": source,
        })
        if isinstance(made, list):
            issues.extend(made)
        else:
            pairs.append(made)
    return pairs, issues


def _load_dpo(path: Any, *, skip_invalid: bool = False) -> tuple[list[Pair], list[InputIssue]]:
    pairs, issues = _dpo_pairs(iter_objects(path), str(path), f"dpo:{Path(path).name}")
    return finish(pairs, issues, skip_invalid)


@pytest.fixture
def dpo_format() -> Iterator[PairFormatSpec]:
    spec = register_pair_format(PairFormatSpec(
        "dpo",
        _load_dpo,
        convert_rows=_dpo_pairs,
        json_keys=lambda record: {"prompt", "chosen", "rejected"} <= set(record),
        title="DPO",
    ))
    yield spec
    unregister_pair_format("dpo")


@pytest.fixture
def dpo_file(tmp_path: Path) -> Path:
    """Four DPO rows whose chosen answer is the one calling ``sorted``."""
    path = tmp_path / "prefs.jsonl"
    rows = [
        {"prompt": f"Sort list {i}.", "chosen": "def f(xs):\n    return sorted(xs)\n",
         "rejected": f"def f(xs):\n    return xs  # {i}\n"}
        for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_new_pair_format_is_detected_loaded_and_judged(
    dpo_format: PairFormatSpec, dpo_file: Path, tmp_path: Path
) -> None:
    assert "dpo" in PAIR_FORMATS and pair_format_choices()[-1] == "dpo"
    assert detect_format(dpo_file) == "dpo"
    pairs, issues = load_pairs(dpo_file)
    assert issues == [] and [p.label for p in pairs] == ["A", "B", "A", "B"]
    assert {p.source for p in pairs} == {"dpo:prefs.jsonl"}
    rows = [(1, {"prompt": "p", "chosen": "a", "rejected": "b"})]
    from_rows, _ = pairs_from_rows(rows, "hub:someone/dpo")
    assert from_rows[0].source == "dpo:someone/dpo"  # the row converter, told by the keys

    def prefers_sorted(request: Any) -> dict[str, str]:
        from pj_scripted_backend import shown

        side = "A" if "sorted" in shown(request, "A") else "B"
        return {"reason": f"{side} sorts", "verdict": side}

    for fmt in ("auto", "dpo"):  # told from the content, and named
        out = tmp_path / f"verdicts-{fmt}.jsonl"
        settings = JudgeFileSettings(inputs=(str(dpo_file),), output=out,
                                     method="monolithic", pairs_format=fmt)  # type: ignore[arg-type]
        outcome = judge_file(settings, ScriptedBackend(prefers_sorted), SilentReporter())
        written = [json.loads(line) for line in out.read_text().splitlines()]
        assert [v["pair_id"] for v in written] == ["dpo/1", "dpo/2", "dpo/3", "dpo/4"]
        assert [v["preferred"] for v in written] == ["A", "B", "A", "B"]
        assert outcome.agreement is not None and outcome.agreement["accuracy"] == 1.0


def test_an_unregistered_format_is_gone_and_named_in_errors(dpo_file: Path) -> None:
    assert "dpo" not in PAIR_FORMATS
    with pytest.raises(ValueError, match="cannot tell the pair format"):
        load_pairs(dpo_file)
    with pytest.raises(ValueError, match=r"unknown format 'dpo' \(known: auto, prefjudge, "):
        load_pairs(dpo_file, fmt="dpo")


# ---------------------------------------------------------------------------------------
# A new judging method: the shorter answer wins, no model asked
# ---------------------------------------------------------------------------------------


class Shorter(JudgeMethod):
    """Prefers the shorter response; asks no model."""

    needs_model = False

    def judge(self, pairs: list[Pair], on_result: OnResult | None = None) -> list[Verdict]:
        verdicts = []
        for pair in pairs:
            a, b = len(pair.response_a), len(pair.response_b)
            side = "tie" if a == b else ("A" if a < b else "B")
            verdicts.append(Verdict(
                pair_id=pair.pair_id, task_id=pair.task_id, model_a=pair.model_a,
                model_b=pair.model_b, method="shorter", preferred=side,
                winner=SIDE_WINNERS[side], label=pair.label, judge_model="length",
            ))
        return verdicts


@pytest.fixture
def shorter() -> Iterator[type[JudgeMethod]]:
    judge_method("shorter")(Shorter)
    yield Shorter
    unregister_method("shorter")


def test_a_new_method_is_listed_with_its_traits(shorter: type[JudgeMethod]) -> None:
    assert METHODS["shorter"] is Shorter and "shorter" in METHOD_NAMES
    traits = method_traits("shorter")
    assert not traits.needs_model and not traits.needs_tests and traits.model_method is None
    assert "shorter" not in MODEL_METHODS and "shorter" not in METHOD_STAGES


def test_judge_file_judges_with_a_new_method(
    shorter: type[JudgeMethod], tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pair = Pair(pair_id="p1", task_id="t1", instruction="Sort xs.", response_a="short",
                response_b="a much longer answer", model_a="x", model_b="y", label="A")
    pairs.write_text(pair.model_dump_json() + "\n", encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    settings = JudgeFileSettings(inputs=(str(pairs),), output=out,
                                 method="shorter")  # type: ignore[arg-type]
    judge_file(settings, None, SilentReporter())
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(v["method"], v["preferred"]) for v in written] == [("shorter", "A")]


def test_a_new_model_method_is_a_fallback_with_its_templates() -> None:
    @judge_method("terse")
    class Terse(JudgeMethod):
        calls_per_pair = 2
        template_stages = ("monolithic",)

    try:
        assert "terse" in MODEL_METHODS and METHOD_STAGES["terse"] == ("monolithic",)
        traits = method_traits("hybrid", "terse")  # hybrid may fall back on it
        assert traits.model_method == "terse" and traits.calls_per_pair == 2
        from prefjudge.judge import Hybrid

        assert Hybrid.fallback_methods["terse"] is Terse
    finally:
        unregister_method("terse")
    assert "terse" not in MODEL_METHODS
    with pytest.raises(ValueError, match="fallback"):
        method_traits("hybrid", "terse")


# ---------------------------------------------------------------------------------------
# A new backend kind: the tests' scripted model
# ---------------------------------------------------------------------------------------


@pytest.fixture
def scripted_kind() -> Iterator[list[BackendConfig]]:
    made: list[BackendConfig] = []

    def factory(config: BackendConfig, cache: Any) -> Any:
        made.append(config)
        return ScriptedBackend(lambda request: {"reason": "r", "verdict": "A"})

    register_backend(BackendKindSpec("scripted", factory, options=("model",)))
    yield made
    unregister_backend("scripted")


def test_a_new_backend_kind_is_configured_created_and_pooled(
    scripted_kind: list[BackendConfig], tmp_path: Path
) -> None:
    assert "scripted" in BACKEND_KINDS and backend_kind("scripted") is not None
    config = load_backend_config(overrides={"kind": "scripted", "no_cache": True})
    assert config.kind == "scripted" and missing_extra("scripted") is None
    backend = create_backend(config)
    assert isinstance(backend, ScriptedBackend) and scripted_kind == [config]
    with BackendPool() as pool:
        hot = config.model_copy(update={"temperature": 0.7})
        assert pool.get(config) is pool.get(hot) and pool.opened == 1


def test_a_backend_kind_needs_its_extra_and_unknown_kinds_are_refused() -> None:
    register_backend(BackendKindSpec(
        "ghost", lambda config, cache: None,  # type: ignore[arg-type,return-value]
        needs=Needs("prefjudge_no_such_module", "the ghost SDK", "pip install ghost"),
    ))
    try:
        assert BACKEND_NEEDS["ghost"].module == "prefjudge_no_such_module"
        message = "the ghost backend needs the ghost SDK: pip install ghost"
        assert missing_extra("ghost") == message
        with pytest.raises(Exception, match="needs the ghost SDK"):
            create_backend(BackendConfig(kind="ghost", no_cache=True))
    finally:
        unregister_backend("ghost")
    with pytest.raises(ConfigError, match="kind: Input should be 'openai', 'vllm' or 'embedded'"):
        load_backend_config(overrides={"kind": "ghost"})


# ---------------------------------------------------------------------------------------
# What other parts list is the registries' names
# ---------------------------------------------------------------------------------------


def _choices(command: Any, option: str) -> list[str]:
    for param in command.params:
        if option in getattr(param, "opts", ()):
            return list(param.type.choices)
    raise AssertionError(f"{command.name} has no {option}")


def test_cli_choices_are_the_registries_names() -> None:
    from prefjudge.cli.judge_cmd import judge

    assert sorted(_choices(judge, "--method")) == sorted(METHODS)
    assert sorted(_choices(judge, "--fallback")) == sorted(MODEL_METHODS)
    assert _choices(judge, "--pairs-format") == list(pair_format_choices())
    assert _choices(judge, "--backend") == list(BACKEND_KINDS)


def test_experiment_config_accepts_every_registered_name() -> None:
    from prefjudge.experiment.config import BackendSpec, JudgeSpec

    for method in METHODS:
        assert JudgeSpec(method=method).method == method
    for fallback in MODEL_METHODS:
        assert JudgeSpec(method="hybrid", fallback=fallback).fallback == fallback
    for kind in BACKEND_KINDS:
        assert BackendSpec(backend=kind).backend == kind
    with pytest.raises(ValidationError):
        JudgeSpec(method="oracle")
    with pytest.raises(ValidationError):
        BackendSpec(backend="ghost")
