"""Model names: one model however its name is Unicode-normalised; warnings for look-alikes."""

from __future__ import annotations

import unicodedata
import warnings
from pathlib import Path

import pytest
from pj_cli import invoke
from pj_files import write_jsonl

from prefjudge.ranking.inputs import (
    ModelNameWarning,
    read_battles,
    read_model_table,
    read_scored_records,
)
from prefjudge.records import (
    Battle,
    Generation,
    Pair,
    PersonaComparison,
    ScoredSample,
    Verdict,
    model_name_warnings,
)

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def battles(*names: str) -> list[dict]:
    """A small round robin between ``names`` and a reference model, both ways."""
    rows = []
    for i, name in enumerate(names):
        rows += [
            {"model_a": name, "model_b": "ref", "winner": "model_a" if i % 2 else "model_b"},
            {"model_a": "ref", "model_b": name, "winner": "model_b"},
            {"model_a": name, "model_b": "ref", "winner": "tie"},
        ]
    return rows


def test_nfc_and_nfd_differ_as_strings() -> None:
    assert NFC != NFD and len(NFD) == len(NFC) + 1


def test_records_normalize_model_names_to_nfc() -> None:
    assert Generation(task_id="t", model=NFD, response="r").model == NFC
    assert ScoredSample(task_id="t", model=NFD, response="r").model == NFC
    pair = Pair(
        pair_id="p",
        task_id="t",
        instruction="i",
        response_a="a",
        response_b="b",
        model_a=NFD,
        model_b="Model-A",
    )
    assert (pair.model_a, pair.model_b) == (NFC, "Model-A")  # case is kept
    assert Battle(model_a=NFD, model_b="x", winner="tie").model_a == NFC
    verdict = Verdict(pair_id="p", task_id="t", model_a="x", model_b=NFD, method="monolithic")
    assert verdict.model_b == NFC
    comparison = PersonaComparison(task_id="t", condition="original", model_a=NFD, model_b="x")
    assert comparison.model_a == NFC


def test_rank_merges_nfc_and_nfd_and_says_so(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", battles(NFC, NFD, "other"), ensure_ascii=False)
    result = invoke("rank", path, "--bootstrap", 10, "--alpha", 0.01, "-o", tmp_path / "r.csv")
    assert result.exit_code == 0, result.output
    models = (tmp_path / "r.csv").read_text("utf-8").splitlines()
    assert sum(line.startswith(f"{NFC},") for line in models) == 1
    assert not any(line.startswith(f"{NFD},") for line in models)
    assert len(models) == 1 + 3  # header, café, other, ref
    assert "warning:" in result.output
    assert "written in 2 Unicode normalisation forms" in result.output
    assert "'cafe\\u0301'" in result.output and "'caf\\xe9'" in result.output


def test_rank_warns_on_names_that_differ_only_by_case_and_keeps_both(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", battles("Model-A", "model-a"))
    result = invoke("rank", path, "--bootstrap", 10, "--alpha", 0.01, "-o", tmp_path / "r.csv")
    assert result.exit_code == 0, result.output
    assert "model names 'Model-A' and 'model-a' differ only by case" in result.output
    assert "kept as 2 different models" in result.output
    rows = (tmp_path / "r.csv").read_text("utf-8").splitlines()[1:]
    assert sorted(row.split(",")[0] for row in rows) == ["Model-A", "model-a", "ref"]
    quiet = write_jsonl(tmp_path / "q.jsonl", battles("alpha", "beta"))
    result = invoke("rank", quiet, "--bootstrap", 10)
    assert result.exit_code == 0 and "warning:" not in result.output


def test_csv_battles_are_normalized_and_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text(f"model_a,model_b,winner\n{NFD},x,model_a\n{NFC},x,model_b\n", "utf-8")
    with pytest.warns(ModelNameWarning, match="Unicode normalisation forms"):
        frame, _ = read_battles(path)
    assert set(frame["model_a"]) == {NFC}


def test_score_tables_and_scored_records_are_normalized(tmp_path: Path) -> None:
    table = tmp_path / "s.csv"
    table.write_text(f"model,func,if\n{NFD},0.5,0.7\nx,0.1,0.2\n", "utf-8")
    assert read_model_table(table, "model", ["func", "if"])["model"].tolist() == [NFC, "x"]
    scored = write_jsonl(
        tmp_path / "scored.jsonl",
        [{"task_id": "t", "model": NFD, "response": "r", "if_instruction": 1.0}],
        ensure_ascii=False,
    )
    assert read_scored_records(scored)[0]["model"] == NFC


def test_model_name_warnings_groups() -> None:
    assert model_name_warnings(["a", "b", "a"]) == []
    [both] = model_name_warnings([NFC, NFD])
    assert "merged into one model" in both
    [case] = model_name_warnings(["GPT-4o", "gpt-4o", "gpt-4O", "claude"])
    assert "'GPT-4o', 'gpt-4O' and 'gpt-4o' differ only by case" in case
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model_name_warnings([NFD])  # one form alone is no warning
