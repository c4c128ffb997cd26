"""One rule for what a verdict counts as (issue 29): :meth:`Verdict.battle`, on every path.

The fixture (:mod:`pj_verdicts`): 300 evidence verdicts decided by a fact among three
models, 600 decided by no evidence (``decided_by: evidence:none``, winner ``tie``) mixed in
among them, and one failed verdict, all as ``prefjudge judge`` writes them. Every path that
turns verdicts into battles must give exactly what it gives on the same file with the 600
no-evidence verdicts removed: ``rank`` (and ``--by``, ``--suggest``, ``--control``), the
battle reader itself, the experiment's judge rounds and its leaderboard.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from pj_cli import invoke
from pj_files import write_jsonl
from pj_verdicts import MODELS, VerdictSet, evidence_verdicts, write_verdicts

from prefjudge.experiment import leaderboard
from prefjudge.experiment.judge_rounds import verdict_battles
from prefjudge.experiment.plan import JudgePair
from prefjudge.io import InputError, read_existing
from prefjudge.ranking.inputs import BattleColumns, read_battle_tasks, read_battles
from prefjudge.records import NO_EVIDENCE, Battle, Verdict

NO_EVIDENCE_ROWS = 600


@pytest.fixture(scope="module")
def verdicts() -> VerdictSet:
    made = evidence_verdicts(decided=300, no_evidence=NO_EVIDENCE_ROWS, errors=1)
    assert len(made.no_evidence) == NO_EVIDENCE_ROWS and len(made.errors) == 1
    return made


@pytest.fixture
def files(verdicts: VerdictSet, tmp_path: Path) -> tuple[Path, Path]:
    """``(every verdict, the same without the no-evidence ones)``: same name, two folders."""
    return (write_verdicts(tmp_path / "all" / "verdicts.jsonl", verdicts.everything()),
            write_verdicts(tmp_path / "counted" / "verdicts.jsonl", verdicts.counted()))


def _rank(battles: Path, *args: str) -> tuple[str, dict, str]:
    """``rank BATTLES --skip-invalid ARGS``: the ratings CSV, the JSON and stderr."""
    out, js = battles.with_name("ratings.csv"), battles.with_name("ratings.json")
    result = invoke("rank", str(battles), "--skip-invalid", "-o", str(out),
                    "--json", str(js), *args)
    assert result.exit_code == 0, result.output
    text = js.read_text(encoding="utf-8").replace(str(battles), "VERDICTS")
    return out.read_text(encoding="utf-8"), json.loads(text), result.stderr


def _same_except_the_count(full: dict, counted: dict) -> None:
    """The two ``rank --json`` documents agree but for the count of uncounted verdicts."""
    assert full.pop("no_evidence_verdicts") == NO_EVIDENCE_ROWS
    assert "no_evidence_verdicts" not in counted
    assert full == counted


# --------------------------------------------------------------------------- the rule


def test_a_row_s_battle_is_its_verdict_s_battle(verdicts: VerdictSet) -> None:
    from prefjudge.ranking.inputs import verdict_battle
    from prefjudge.records import battle_of

    for verdict in verdicts.everything():
        row = verdict.model_dump(mode="json")
        expected = verdict.battle()
        if expected is not None:  # a row's battle carries no features: rank reads them apart
            expected = Battle.model_validate(
                expected.model_dump(exclude={"features_a", "features_b"}))
        assert battle_of(row) == expected == verdict_battle(row)
    assert all(battle_of(v.model_dump(mode="json")) is None for v in verdicts.no_evidence)
    assert Verdict.from_row({**verdicts.decided[0].model_dump(mode="json"),
                             "a column a user added": 1}).battle() is not None


# --------------------------------------------------------------------------- rank


@pytest.mark.parametrize("extra", [(), ("--by", "category"), ("--ties", "davidson")],
                         ids=["plain", "by-category", "davidson"])
def test_rank_ranks_as_if_no_evidence_verdicts_were_absent(files: tuple[Path, Path],
                                                           extra: tuple[str, ...]) -> None:
    full, counted = (_rank(path, "--bootstrap", "100", *extra) for path in files)
    assert full[0] == counted[0]  # the ratings CSV, byte for byte
    _same_except_the_count(full[1], counted[1])
    assert full[1]["skipped_rows"] == [
        "VERDICTS:1: field 'winner': no winner: the judge failed "
        "(correctness evidence: the test harness failed)"]
    note = " ".join(full[2].split())
    assert (f"{NO_EVIDENCE_ROWS} verdicts decided by no evidence (decided_by {NO_EVIDENCE}) "
            "were not counted as battles") in note
    assert "decided by no evidence" not in counted[2]


def test_rank_battle_counts_are_the_decided_verdicts(files: tuple[Path, Path],
                                                     verdicts: VerdictSet) -> None:
    table = pd.read_csv(io.StringIO(_rank(files[0], "--bootstrap", "0")[0]))
    per_model = {m: sum(m in (v.model_a, v.model_b) for v in verdicts.decided) for m in MODELS}
    assert dict(zip(table["model"], table["battles"], strict=True)) == per_model


def test_rank_suggest_suggests_as_if_no_evidence_verdicts_were_absent(
    files: tuple[Path, Path]
) -> None:
    full, counted = (_rank(path, "--bootstrap", "0", "--suggest", "3") for path in files)
    assert full[1]["suggestions"] and full[1]["suggestions"] == counted[1]["suggestions"]
    _same_except_the_count(full[1], counted[1])
    judged = [read_battle_tasks(path) for path in files]
    pd.testing.assert_frame_equal(judged[0], judged[1])


def test_rank_control_fits_as_if_no_evidence_verdicts_were_absent(
    files: tuple[Path, Path]
) -> None:
    full, counted = (_rank(path, "--control", "style", "--bootstrap", "50") for path in files)
    assert full[0] == counted[0]
    _same_except_the_count(full[1], counted[1])
    assert full[1]["style_control"]["coefficients"]


def test_the_battle_reader_reads_verdicts_through_the_rule(files: tuple[Path, Path]) -> None:
    (full, full_issues), (counted, counted_issues) = (read_battles(path, skip_invalid=True)
                                                      for path in files)
    pd.testing.assert_frame_equal(full.drop(columns="line"), counted.drop(columns="line"))
    assert [str(i).split(":", 1)[1] for i in full_issues] == [
        str(i).split(":", 1)[1] for i in counted_issues]
    from prefjudge.ranking.inputs import read_battle_file

    read = read_battle_file(files[0], skip_invalid=True)
    assert read.no_evidence == NO_EVIDENCE_ROWS and read.frame.equals(full)
    assert read_battle_file(files[1], skip_invalid=True).no_evidence == 0


def test_a_file_of_no_evidence_verdicts_alone_says_why_nothing_is_ranked(
    verdicts: VerdictSet, tmp_path: Path
) -> None:
    path = write_verdicts(tmp_path / "none.jsonl", verdicts.no_evidence[:5])
    with pytest.raises(InputError, match="5 verdicts decided by no evidence"):
        read_battles(path)


def test_generic_battle_rows_are_read_as_before(tmp_path: Path) -> None:
    """A plain battle row is no verdict, whatever else it carries: its tie is a battle."""
    rows = [{"model_a": "x", "model_b": "y", "winner": "tie", "decided_by": NO_EVIDENCE},
            {"model_a": "y", "model_b": "x", "winner": "model_a", "method": "evidence"}]
    path = write_jsonl(tmp_path / "arena.jsonl", rows)
    frame, issues = read_battles(path)
    assert issues == [] and list(frame["winner"]) == ["tie", "model_a"]


def test_verdict_rows_keep_the_weight_and_by_columns(verdicts: VerdictSet,
                                                     tmp_path: Path) -> None:
    rows = [{**v.model_dump(mode="json"), "weight": 2, "judge": "j1"} for v in verdicts.decided[:4]]
    rows.append({**verdicts.no_evidence[0].model_dump(mode="json"), "weight": 2, "judge": "j1"})
    path = write_jsonl(tmp_path / "weighted.jsonl", rows)
    frame, _ = read_battles(path, columns=BattleColumns(category="judge"))
    assert list(frame["weight"]) == [2.0] * 4 and list(frame["category"]) == ["j1"] * 4


# --------------------------------------------------------------------------- experiment


def _pair_files(verdicts: list[Verdict], folder: Path) -> dict[JudgePair, Path]:
    """One verdict file per model pair, as an experiment's ``judgments/`` folder holds."""
    by_pair: dict[tuple[str, str], list[Verdict]] = {}
    for verdict in verdicts:
        key = tuple(sorted((verdict.model_a, verdict.model_b)))
        by_pair.setdefault(key, []).append(verdict)
    files = {}
    for (a, b), found in sorted(by_pair.items()):
        path = write_verdicts(folder / f"{a}__{b}.jsonl", found)
        files[JudgePair(a, b, path, ())] = path
    return files


def test_judge_rounds_plan_from_the_same_battles(verdicts: VerdictSet, tmp_path: Path) -> None:
    frames = []
    for name, chosen in (("all", verdicts.everything()), ("counted", verdicts.counted())):
        files = _pair_files(chosen, tmp_path / name)
        frames.append(verdict_battles({pair: read_existing(p) for pair, p in files.items()}))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert len(frames[0]) == len(verdicts.decided)
    expected = sorted((b.model_a, b.model_b, b.winner) for b in
                      (v.battle() for v in verdicts.decided) if b is not None)
    assert sorted(frames[0][["model_a", "model_b", "winner"]].itertuples(index=False,
                                                                          name=None)) == expected


def test_the_experiment_leaderboard_counts_the_same_battles_as_rank(
    verdicts: VerdictSet, tmp_path: Path
) -> None:
    rows = []
    for name, chosen in (("all", verdicts.everything()), ("counted", verdicts.counted())):
        folder = tmp_path / name
        judgments = list(_pair_files(chosen, folder / "judgments").values())
        battles = write_verdicts(folder / "battles.jsonl", chosen)
        _rank(battles, "--bootstrap", "20")
        missing = [folder / "none.jsonl"] * len(MODELS)  # no scores, no generations
        rows.append(leaderboard.build(list(MODELS), missing, missing, judgments,
                                      folder / "ratings.json", 0.5))
    assert rows[0] == rows[1]
    per_model = {m: sum(m in (v.model_a, v.model_b) for v in verdicts.decided) for m in MODELS}
    assert {row["model"]: row["battles"] for row in rows[0]} == per_model
    assert sum(row["judge_errors"] for row in rows[0]) == 2  # one failed verdict, two sides
