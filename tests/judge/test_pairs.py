"""Loaders of pairwise preference data (prefjudge.judge.pairs)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from pj_files import write_jsonl
from pj_scripted_backend import ScriptedBackend

from prefjudge.backends import Request
from prefjudge.io import InputError
from prefjudge.judge.pairs import (
    FIM_TEMPLATE,
    attach_evidence,
    detect_format,
    evidence_from_scored,
    load_pairs,
    pairs_from_generations,
)
from prefjudge.judge.pairs.join import join_values
from prefjudge.records import (
    AugmentedTask,
    CheckResult,
    FuncResult,
    Generation,
    InstructionRef,
    Pair,
    ScoredSample,
)
from prefjudge.testbed.protocols import ProtocolRunner

DATA = Path(__file__).resolve().parents[1] / "data" / "pairs"
BCR_SAMPLE = DATA / "bigcodereward_sample.jsonl"
BCR_BAD = DATA / "bigcodereward_bad_vote.jsonl"


@pytest.fixture(scope="module")
def prefs(shared_data: Path) -> Path:
    return shared_data / "preferences"


# --- CodePrefBench (real data) ----------------------------------------------------------


@pytest.mark.shared_data
def test_codeprefbench_human_preference(prefs: Path) -> None:
    path = prefs / "codeprefbench" / "human-preference-alignment.jsonl.gz"
    pairs, issues = load_pairs(path)
    assert issues == []
    assert len(pairs) == 145
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    assert [p.label for p in pairs] == ["A" if r["gt_choice"] == 0 else "B" for r in rows]
    assert Counter(p.label for p in pairs) == {"A": 81, "B": 64}
    assert Counter(p.category for p in pairs) == {"BigCodeBench": 78, "lbpp": 67}
    assert all(p.source == "codeprefbench:human-preference-alignment.jsonl.gz" for p in pairs)
    assert all((p.model_a, p.model_b) == ("A", "B") for p in pairs)
    first = pairs[0]
    assert first.pair_id == first.task_id == "lbpp/0"
    assert first.response_a == rows[0]["choices"][0]
    # gt_choice 1 with annotations codeA, codeA, Tie: two votes agree with the label.
    assert first.annotations == ["codeA", "codeA", "Tie"]
    assert first.label == "B"
    assert first.votes == ["B", "B", "tie"]
    # gt_choice 1 with three codeA votes (the annotation-order quirk): all agree.
    quirk = next(p for p in pairs if p.pair_id == "lbpp/2")
    assert quirk.annotations == ["codeA"] * 3
    assert quirk.votes == ["B", "B", "B"]
    assert sum(p.label == "B" and p.annotations == ["codeA"] * 3 for p in pairs) == 15


@pytest.mark.shared_data
def test_codeprefbench_repeated_task_ids_get_unique_pair_ids(prefs: Path) -> None:
    pairs, _ = load_pairs(prefs / "codeprefbench" / "correctness-alignment.jsonl.gz")
    assert len(pairs) == 660
    assert len({p.pair_id for p in pairs}) == 660
    repeated = Counter(p.task_id for p in pairs)
    tid = next(t for t, n in repeated.items() if n > 1)
    assert [p.pair_id for p in pairs if p.task_id == tid][:2] == [tid, f"{tid}#2"]
    assert all(p.votes == [] and "annotations" not in (p.model_extra or {}) for p in pairs)
    assert Counter(p.category for p in pairs) == {"Mbpp": 438, "HumanEval": 222}


def test_codeprefbench_votes_and_string_gt_choice(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "cpb.jsonl",
        [
            {
                "task_id": "HumanEval/1",
                "instruction": "do it",
                "choices": ["a", "b"],
                "gt_choice": "0",
                "annotations": ["codeB", "codeA", "codeB", "Tie"],
            },
            {
                "task_id": "HumanEval/1",
                "instruction": "do it",
                "choices": ["c", "d"],
                "gt_choice": 1,
            },
        ],
    )
    pairs, _ = load_pairs(path)
    assert pairs[0].label == "A"
    # majority non-tie side (2) counts for the label, minority (1) for the other side.
    assert pairs[0].votes == ["A", "A", "B", "tie"]
    assert [p.pair_id for p in pairs] == ["HumanEval/1", "HumanEval/1#2"]
    assert pairs[1].label == "B"


def test_codeprefbench_bad_rows_name_line_and_field(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "cpb.jsonl",
        [
            {"task_id": "X/1", "instruction": "i", "choices": ["a", "b"], "gt_choice": 0},
            {"task_id": "X/2", "instruction": "i", "choices": ["a", "b"], "gt_choice": 2},
            {"task_id": "X/3", "instruction": "i", "choices": ["a"], "gt_choice": 0},
        ],
    )
    with pytest.raises(InputError) as excinfo:
        load_pairs(path)
    message = str(excinfo.value)
    assert f"{path}:2: field 'gt_choice'" in message
    assert f"{path}:3: field 'choices'" in message
    pairs, issues = load_pairs(path, skip_invalid=True)
    assert [p.pair_id for p in pairs] == ["X/1"]
    assert [(i.line, i.field) for i in issues] == [(2, "gt_choice"), (3, "choices")]


# --- Copilot Arena (real data) ----------------------------------------------------------


@pytest.mark.shared_data
def test_copilot_arena_real_file(prefs: Path) -> None:
    path = prefs / "copilot_arena" / "copilot_arena_examples_v1.csv"
    pairs, issues = load_pairs(path, skip_invalid=True)
    assert len(pairs) == 112
    assert len(issues) == 1
    issue = issues[0]
    assert issue.line == 2484
    assert issue.field == "suffix"
    # the physical line really is where the broken record starts
    lines = path.read_bytes().split(b"\n")
    assert lines[issue.line - 1].startswith(b"from tkinter import*")
    assert Counter(p.label for p in pairs) == {"A": 92, "B": 20}
    assert all(p.category == "copilot_arena" for p in pairs)
    assert pairs[0].pair_id == pairs[0].task_id == "copilot_arena/0"
    # the broken record is row 23; ids of later rows do not shift
    assert "copilot_arena/23" not in {p.pair_id for p in pairs}
    assert pairs[23].pair_id == "copilot_arena/24"
    assert pairs[0].instruction.startswith("Complete the code at <CURSOR>.\n\nimport * as vscode")
    assert pairs[0].instruction.count("<CURSOR>") == 2
    assert len({p.model_a for p in pairs} | {p.model_b for p in pairs}) >= 10


@pytest.mark.shared_data
def test_copilot_arena_raises_with_line(prefs: Path) -> None:
    path = prefs / "copilot_arena" / "copilot_arena_examples_v1.csv"
    with pytest.raises(InputError) as excinfo:
        load_pairs(path)
    assert f"{path}:2484: field 'suffix'" in str(excinfo.value)


def test_copilot_arena_small_csv(tmp_path: Path) -> None:
    path = tmp_path / "arena.csv"
    path.write_text(
        "prefix,suffix,model_a,model_b,acceptedIndex,completion_a,completion_b\n"
        '"def f(x):\n    ","\nprint(f(1))",m1,m2,1.0,return x,"return x + 1"\n'
        "a,b,m1,m2,2.0,c,d\n",
        encoding="utf-8",
    )
    assert detect_format(path) == "copilot_arena"
    pairs, issues = load_pairs(path, skip_invalid=True)
    assert len(pairs) == 1
    assert pairs[0].label == "B"
    assert pairs[0].instruction == FIM_TEMPLATE.format(
        prefix="def f(x):\n    ", suffix="\nprint(f(1))"
    )
    assert (pairs[0].model_a, pairs[0].response_b) == ("m1", "return x + 1")
    # the second record starts on physical line 5 (the first spans lines 2-4)
    assert [(i.line, i.field) for i in issues] == [(5, "acceptedIndex")]


# --- BigCodeReward (fixture) ------------------------------------------------------------


def test_bigcodereward_votes_responses_evidence() -> None:
    pairs, issues = load_pairs(BCR_SAMPLE)
    assert issues == []
    assert [p.label for p in pairs] == ["A", "B", "tie", "tie", "B"]
    assert [p.human_vote for p in pairs] == [
        "leftvote",
        "rightvote",
        "tievote",
        "bothbad_vote",
        "model_B",
    ]
    assert all(p.votes == [p.label] for p in pairs)
    first = pairs[0]
    assert first.pair_id == first.task_id == "3f1c2a9e8b7d4c6a9e1f2b3c4d5e6f70"
    assert (first.model_a, first.model_b) == ("gpt-4o-2024-11-20", "qwen2.5-coder-32b-instruct")
    assert first.category == "Problem Solving"
    assert first.evidence_a == ["execution output: fib(10) = 55"]
    assert first.evidence_b[0].startswith("execution error: Traceback")
    assert "NameError" in first.evidence_b[0]
    # multi-turn: the last assistant message is the response
    assert "reset</button>" in pairs[1].response_a
    assert pairs[1].evidence_a == []  # null execution fields give no evidence
    # plain "assistant"/"Assistant" roles, and a trailing user message with no content
    assert pairs[2].response_b.startswith("```cpp\n#include <iostream>\nusing namespace std;")
    # long errors are cut
    assert len(pairs[3].evidence_a[0]) <= len("execution error: ") + 301
    assert pairs[3].evidence_a[0].endswith("…")
    # no states: response_A/response_B
    assert pairs[4].response_b.startswith("```bash\nfind . -name '*.py' -print0")
    assert pairs[4].evidence_a == pairs[4].evidence_b == []


def test_bigcodereward_bad_vote_names_line_and_field() -> None:
    with pytest.raises(InputError) as excinfo:
        load_pairs(BCR_BAD)
    assert f"{BCR_BAD}:2: field 'human_vote'" in str(excinfo.value)
    assert "leftvote_maybe" in str(excinfo.value)
    pairs, issues = load_pairs(BCR_BAD, skip_invalid=True)
    assert len(pairs) == 1
    assert [(i.line, i.field) for i in issues] == [(2, "human_vote")]


def test_bigcodereward_missing_assistant_message(tmp_path: Path) -> None:
    row = json.loads(BCR_SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    row["states"]["model_B"]["messages"] = [["<|im_start|>user", "hi"]]
    path = write_jsonl(tmp_path / "bcr.jsonl", [row])
    _, issues = load_pairs(path, skip_invalid=True)
    assert [(i.line, i.field) for i in issues] == [(1, "states.model_B.messages")]


def test_bigcodereward_parquet_without_pyarrow_is_clear(tmp_path: Path) -> None:
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("pandas and pyarrow are installed")
    path = tmp_path / "train.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 16 + b"PAR1")
    assert detect_format(path) == "bigcodereward"
    with pytest.raises(InputError) as excinfo:
        load_pairs(path)
    assert "JSONL" in str(excinfo.value)
    assert str(path) in str(excinfo.value)


# --- prefjudge pairs --------------------------------------------------------------------


def test_prefjudge_pairs_roundtrip(tmp_path: Path) -> None:
    original, _ = load_pairs(BCR_SAMPLE)
    path = tmp_path / "pairs.jsonl"
    write_jsonl(path, [p.model_dump(mode="json") for p in original])
    assert detect_format(path) == "prefjudge"
    loaded, issues = load_pairs(path)
    assert issues == []
    assert loaded == original
    assert loaded[0].human_vote == "leftvote"


def test_prefjudge_pairs_errors(tmp_path: Path) -> None:
    good = {
        "pair_id": "p1",
        "task_id": "t",
        "instruction": "i",
        "response_a": "a",
        "response_b": "b",
    }
    path = write_jsonl(
        tmp_path / "pairs.jsonl",
        [good, {**good, "pair_id": "p2", "label": "C"}, good],
    )
    with pytest.raises(InputError) as excinfo:
        load_pairs(path, fmt="prefjudge")
    assert f"{path}:2: field 'label'" in str(excinfo.value)
    pairs, issues = load_pairs(path, skip_invalid=True)
    assert [p.pair_id for p in pairs] == ["p1"]
    assert [(i.line, i.field) for i in issues] == [(2, "label"), (3, "pair_id")]


# --- detection --------------------------------------------------------------------------


@pytest.mark.shared_data
def test_detect_real_formats(prefs: Path) -> None:
    cpb = prefs / "codeprefbench" / "security-alignment.jsonl.gz"
    assert detect_format(cpb) == "codeprefbench"
    assert (
        detect_format(prefs / "copilot_arena" / "copilot_arena_examples_v1.csv") == "copilot_arena"
    )


def test_detect_fixture_formats_and_unknown(tmp_path: Path) -> None:
    assert detect_format(BCR_SAMPLE) == "bigcodereward"
    unknown = write_jsonl(tmp_path / "x.jsonl", [{"foo": 1}])
    with pytest.raises(InputError, match=r"x\.jsonl:1: cannot tell the pair format"):
        load_pairs(unknown)
    other_csv = tmp_path / "x.csv"
    other_csv.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="Copilot Arena"):
        load_pairs(other_csv)
    # forcing a format skips detection: the bigcodereward rows are not CodePrefBench rows
    with pytest.raises(InputError, match="field 'choices'"):
        load_pairs(BCR_SAMPLE, fmt="codeprefbench")


# --- pairs from generations -------------------------------------------------------------


def test_pairs_from_generations(tmp_path: Path) -> None:
    gen_a = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"task_id": "t1", "model": "ma", "response": "a1", "prompt": "P1"},
            {"task_id": "t2", "model": "ma", "response": "a2", "prompt": "P2"},
            {"task_id": "t1", "model": "ma", "response": "a1-again"},
            {"task_id": "only_a", "model": "ma", "response": "x"},
        ],
    )
    gen_b = write_jsonl(
        tmp_path / "b.jsonl",
        [
            {"task_id": "t2", "model": "mb", "response": "b2"},
            {"task_id": "t1", "model": "mb", "response": "b1"},
            {"task_id": "only_b", "model": "mb", "response": "y"},
        ],
    )
    pairs, notes = pairs_from_generations(gen_a, gen_b)
    assert [p.pair_id for p in pairs] == ["t1:ma:mb", "t2:ma:mb"]
    assert [(p.response_a, p.response_b, p.instruction) for p in pairs] == [
        ("a1", "b1", "P1"),
        ("a2", "b2", "P2"),
    ]
    text = "\n".join(notes)
    assert f"only in {gen_a}: only_a" in text
    assert f"only in {gen_b}: only_b" in text
    assert "several generations" in text and "t1" in text

    pairs, _ = pairs_from_generations(gen_a, gen_b, tasks={"t1": "T1", "t2": "T2"})
    assert [p.instruction for p in pairs] == ["T1", "T2"]


def test_pairs_from_generations_without_instruction(tmp_path: Path) -> None:
    gen_a = write_jsonl(tmp_path / "a.jsonl", [{"task_id": "t1", "model": "ma", "response": "a"}])
    gen_b = write_jsonl(tmp_path / "b.jsonl", [{"task_id": "t1", "model": "mb", "response": "b"}])
    with pytest.raises(InputError) as excinfo:
        pairs_from_generations(gen_a, gen_b)
    assert f"{gen_a}:1: field 'prompt'" in str(excinfo.value)
    assert "'t1'" in str(excinfo.value)


def _echo(model: str) -> ScriptedBackend:
    """A scripted model: its reply names the model, the sample and the conversation."""

    def reply(req: Request) -> str:
        users = [m.content for m in req.messages if m.role == "user"]
        return f"{model}|s{req.sample}|turns {len(users)}|{users[-1]}"

    return ScriptedBackend(reply, model_id=model)


def _generate(path: Path, model: str, tasks: list[AugmentedTask], *, reverse: bool = False):
    """Write what ``prefjudge generate`` writes: single and multi, k = 0..2, two samples."""
    runner = ProtocolRunner(_echo(model), tasks, protocols=["single", "multi"],
                            ks=range(3), samples=2)
    rows = [g.model_dump(mode="json") for g in runner.run()]
    return write_jsonl(path, rows[::-1] if reverse else rows), rows


GEN_TASKS = [
    AugmentedTask(task_id=f"T/{i}", prompt=f"Write f{i}.\n",
                  instructions=[InstructionRef(id="style_1"), InstructionRef(id="style_2")])
    for i in (1, 2)
]


def test_pairs_from_generate_output_match_protocol_k_and_sample(tmp_path: Path) -> None:
    gen_a, rows_a = _generate(tmp_path / "a.jsonl", "ma", GEN_TASKS)
    gen_b, rows_b = _generate(tmp_path / "b.jsonl", "mb", GEN_TASKS, reverse=True)
    prompts = {t.task_id: t.prompt for t in GEN_TASKS}
    pairs, notes = pairs_from_generations(gen_a, gen_b, tasks=prompts)
    assert notes == []
    # every generation of a meets the one generation of b made from the same prompt
    assert len(pairs) == len(rows_a) == len(rows_b) == 2 * 2 * 3 * 2
    assert [p.pair_id for p in pairs] == [f"{row['id']}:ma:mb" for row in rows_a]
    assert len({p.pair_id for p in pairs}) == len(pairs)
    for pair, row in zip(pairs, rows_a, strict=True):
        assert pair.response_a == row["response"]
        assert pair.response_a.startswith("ma|")
        assert pair.response_b == "mb|" + pair.response_a.removeprefix("ma|")
        assert (pair.protocol, pair.k, pair.sample) == (row["protocol"], row["k"], row["sample"])
        assert pair.instruction == prompts[pair.task_id]
    k2 = next(p for p in pairs if p.pair_id == "T/2::multi::k2::s1:ma:mb")
    assert k2.response_b.startswith("mb|s1|turns 3|")


def test_generate_output_with_a_missing_generation_is_noted(tmp_path: Path) -> None:
    gen_a, rows_a = _generate(tmp_path / "a.jsonl", "ma", GEN_TASKS)
    _, rows_b = _generate(tmp_path / "b0.jsonl", "mb", GEN_TASKS)
    kept = [r for r in rows_b if r["id"] != "T/1::single::k1::s0"]
    gen_b = write_jsonl(tmp_path / "b.jsonl", kept)
    pairs, notes = pairs_from_generations(gen_a, gen_b, tasks={"T/1": "P1", "T/2": "P2"})
    assert len(pairs) == len(rows_a) - 1
    assert "T/1::single::k1::s0:ma:mb" not in {p.pair_id for p in pairs}
    assert notes == [
        f"1 task_id/protocol/k/sample key(s) only in {gen_a}: T/1::single::k1::s0"
    ]


def test_join_falls_back_to_task_id_when_one_file_lacks_the_fields(tmp_path: Path) -> None:
    gen_a = write_jsonl(tmp_path / "a.jsonl", [
        {"task_id": "t1", "model": "ma", "response": "a-k0", "protocol": "single", "k": 0,
         "sample": 0},
        {"task_id": "t1", "model": "ma", "response": "a-k1", "protocol": "single", "k": 1,
         "sample": 0},
    ])
    gen_b = write_jsonl(tmp_path / "b.jsonl", [
        {"task_id": "t1", "model": "mb", "response": "b", "prompt": "P1"},
    ])
    pairs, notes = pairs_from_generations(gen_a, gen_b)
    assert [(p.pair_id, p.response_a) for p in pairs] == [("t1:ma:mb", "a-k0")]
    assert "protocol" not in (pairs[0].model_extra or {})
    assert notes[0] == (
        "protocol, k, sample not on every generation of both files: the join ignores them "
        "(joined on task_id)"
    )
    assert f"{gen_a}: 1 task id(s) have several generations" in notes[1]


def test_join_uses_the_fields_both_files_carry(tmp_path: Path) -> None:
    rows = [{"task_id": "t1", "model": "m", "response": f"r{s}", "prompt": "P", "sample": s}
            for s in (0, 1)]
    gen_a = write_jsonl(tmp_path / "a.jsonl", [dict(r, model="ma") for r in rows])
    gen_b = write_jsonl(tmp_path / "b.jsonl", [dict(r, model="mb") for r in rows[::-1]])
    pairs, notes = pairs_from_generations(gen_a, gen_b)
    assert notes == []
    assert [(p.pair_id, p.response_a, p.response_b, p.sample) for p in pairs] == [
        ("t1::s0:ma:mb", "r0", "r0", 0),
        ("t1::s1:ma:mb", "r1", "r1", 1),
    ]


# --- evidence from scores ---------------------------------------------------------------


def _scored(task_id: str, model: str, func: FuncResult | None) -> dict:
    sample = ScoredSample(
        task_id=task_id,
        model=model,
        response="```python\ndef f():\n    pass\n```",
        instructions=[InstructionRef(id="style_3", params={"line_length": 79})],
        instruction_results=[
            CheckResult(id="style_3", params={"line_length": 79}, status="pass"),
            CheckResult(id="doc_1", status="fail", reason="function f has no docstring"),
        ],
        if_instruction=0.5,
        if_task=False,
        func=func,
    )
    return sample.model_dump(mode="json")


def test_evidence_from_scored() -> None:
    record = _scored("t1", "ma", FuncResult(status="fail", detail="AssertionError:\n" + "x" * 500))
    lines = evidence_from_scored(record)
    assert lines[0] == "instruction style_3 (line length 79): pass"
    assert lines[1] == "instruction doc_1: fail — function f has no docstring"
    assert lines[2].startswith("unit tests: fail — AssertionError: xxx")
    assert len(lines[2]) <= len("unit tests: fail — ") + 201
    assert evidence_from_scored(ScoredSample.model_validate(record)) == lines
    assert evidence_from_scored(_scored("t", "m", FuncResult(status="pass")))[-1] == (
        "unit tests: pass"
    )
    timeout = _scored("t", "m", FuncResult(status="timeout", detail="CPU-time limit"))
    assert evidence_from_scored(timeout)[-1] == "unit tests: timeout"
    error = _scored("t", "m", FuncResult(status="error", detail="sandbox setup failed"))
    assert evidence_from_scored(error)[-1] == "unit tests: error — sandbox setup failed"
    assert len(evidence_from_scored(_scored("t", "m", None))) == 2


def test_attach_evidence(tmp_path: Path) -> None:
    scored_a = write_jsonl(
        tmp_path / "sa.jsonl",
        [_scored("t1", "ma", FuncResult(status="pass")), _scored("t2", "ma", None)],
    )
    scored_b = write_jsonl(
        tmp_path / "sb.jsonl",
        [_scored("t1", "mb", FuncResult(status="timeout"))],
    )
    base = {"instruction": "i", "response_a": "a", "response_b": "b"}
    pairs = [
        Pair(pair_id="p1", task_id="t1", model_a="ma", model_b="mb", **base),
        Pair(pair_id="p2", task_id="t2", model_a="A", model_b="B", **base),
    ]
    out, notes = attach_evidence(pairs, scored_a, scored_b)
    assert out[0].evidence_a[-1] == "unit tests: pass"
    assert out[0].evidence_b[-1] == "unit tests: timeout"
    # single-model file: placeholder model names still join on task_id
    assert out[1].evidence_a[0] == "instruction style_3 (line length 79): pass"
    assert out[1].evidence_b == []
    assert len(notes) == 1 and "p2" in notes[0] and str(scored_b) in notes[0]
    assert pairs[0].evidence_a == []  # inputs untouched


def test_attach_evidence_matches_the_generation_of_each_side(tmp_path: Path) -> None:
    gen_a, rows_a = _generate(tmp_path / "a.jsonl", "ma", GEN_TASKS[:1])
    gen_b, rows_b = _generate(tmp_path / "b.jsonl", "mb", GEN_TASKS[:1])
    pairs, _ = pairs_from_generations(gen_a, gen_b, tasks={"T/1": "P1"})

    def scored(rows):  # what `prefjudge score` keeps: the generation's fields, plus results
        out = []
        for row in rows:
            status = "pass" if row["k"] == 0 else "fail"
            detail = "" if status == "pass" else f"{row['id']} failed"
            out.append(ScoredSample.model_validate(
                {**row, "func": {"status": status, "detail": detail}}
            ).model_dump(mode="json"))
        return out

    scored_a = write_jsonl(tmp_path / "sa.jsonl", scored(rows_a))
    scored_b = write_jsonl(tmp_path / "sb.jsonl", scored(rows_b[::-1]))
    out, notes = attach_evidence(pairs, scored_a, scored_b)
    assert notes == []
    for pair in out:
        gen_id = pair.pair_id.removesuffix(":ma:mb")
        expected = "unit tests: pass" if pair.k == 0 else f"unit tests: fail — {gen_id} failed"
        assert pair.evidence_a == [expected] and pair.evidence_b == [expected]
    # a scored file without the generation fields cannot tell the generations apart
    bare = [{k: v for k, v in row.items() if k not in ("protocol", "k", "sample")}
            for row in scored(rows_b)]
    out, notes = attach_evidence(pairs[:1], scored_a, write_jsonl(tmp_path / "bare.jsonl", bare))
    assert out[0].evidence_b == []
    assert notes == [
        f"pair {pairs[0].pair_id}: no scored record for task 'T/1', protocol 'single', k 0, "
        f"sample 0 and model 'mb' in {tmp_path / 'bare.jsonl'}"
    ]


def test_join_values_count_only_given_fields() -> None:
    gen = Generation.model_validate({"task_id": "t", "model": "m", "response": "r", "k": 2})
    assert join_values(gen) == {"k": 2}  # sample has a default, but was not given
    full = Generation.model_validate({"task_id": "t", "model": "m", "response": "r",
                                      "protocol": "multi", "k": 0, "sample": 1})
    assert join_values(full) == {"protocol": "multi", "k": 0, "sample": 1}
    pair = Pair(pair_id="p", task_id="t", instruction="i", response_a="a", response_b="b",
                protocol="single", sample=0, k=None)
    assert join_values(pair) == {"protocol": "single", "sample": 0}
