"""Bad input gives a clear error naming the file (and line and field), never a traceback.

Each test feeds one kind of broken input to the real command line (``CliRunner``) or, where
no command is involved, to the reader itself.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from click.testing import Result
from pj_cli import invoke
from pj_files import write_jsonl
from pj_scripted_backend import ScriptedBackend

from prefjudge.io import InputIssue, iter_objects, read_records, read_text
from prefjudge.judge.prompts import TemplateError, check_templates, load_template, parse_template
from prefjudge.records import Generation
from prefjudge.scoring import metrics
from prefjudge.scoring.taxonomy import TaxonomyError, load_taxonomy

GEN = {"task_id": "t1", "model": "m", "response": "```python\nx = 1\n```"}
BATTLE = {"model_a": "x", "model_b": "y", "winner": "model_a"}


def assert_clean_failure(result: Result, *needles: str) -> None:
    """Exit code != 0, a message (not an exception) naming what it must name."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, (needle, result.output)


def jsonl(*rows: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def big_gzip(path: Path, rows: int = 3000) -> bytes:
    """A gzipped JSONL file that does not compress to nothing (random text)."""
    rng = random.Random(0)
    lines = [
        {
            **GEN,
            "task_id": f"t{i}",
            "response": "".join(rng.choice("abcdefgh ") for _ in range(200)),
        }
        for i in range(rows)
    ]
    data = gzip.compress(jsonl(*lines))
    path.write_bytes(data)
    return data


# --------------------------------------------------------------------------- 1. UTF-8


def test_score_names_the_line_and_byte_that_is_not_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'\xff\xfe{"a":1}\n')
    result = invoke("score", bad, "-o", tmp_path / "s.jsonl")
    assert_clean_failure(result, f"{bad}:1: not valid UTF-8 (byte 0xff at column 1)")


def test_a_bad_jsonl_line_is_one_issue_and_the_others_are_read(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_bytes(
        jsonl(GEN)
        + b'{"task_id": "t2", "model": "caf\xe9", "response": "r"}\n'
        + b"[" * 100_000
        + b"\n"
        + json.dumps({**GEN, "response": "\ud800"}).encode()
        + b"\n"
        + jsonl({**GEN, "task_id": "t5"})
    )
    records, issues = read_records(path, Generation, collect=True)
    assert [line for line, _ in records] == [1, 5]
    assert [str(i) for i in issues] == [
        f"{path}:2: not valid UTF-8 (byte 0xe9 at column 32)",
        f"{path}:3: nested too deeply (JSON arrays or objects deeper than the parser's limit)",
        f"{path}:4: field 'response': not valid Unicode (lone surrogate \\ud800)",
    ]


def test_rank_skip_invalid_skips_undecodable_and_too_deep_lines(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_bytes(
        jsonl(BATTLE, {**BATTLE, "winner": "model_b"}) + b"\xc3(\n" + b"[" * 50_000 + b"\n"
    )
    failed = invoke("rank", path, "--bootstrap", "10")
    assert_clean_failure(
        failed, f"{path}:3: not valid UTF-8 (byte 0xc3 at column 1)", f"{path}:4: nested too deeply"
    )
    result = invoke("rank", path, "--bootstrap", "10", "--skip-invalid")
    assert result.exit_code == 0, result.output
    assert "skipped:" in result.output and f"{path}:3" in result.output


def test_rank_csv_names_the_field_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_bytes(b"model_a,model_b,winner\nx,y,model_a\ncaf\xe9,y,model_b\n")
    assert_clean_failure(
        invoke("rank", path), f"{path}:3: field 'model_a': not valid UTF-8 (byte 0xe9 at column 4)"
    )
    header = tmp_path / "h.csv"
    header.write_bytes(b"model_a,model_\xff,winner\nx,y,model_a\n")
    assert_clean_failure(invoke("rank", header), f"{header}:1: header: not valid UTF-8")


def test_judge_copilot_arena_csv_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "arena.csv"
    path.write_bytes(
        b"prefix,suffix,model_a,model_b,acceptedIndex,completion_a,completion_b\n"
        b"def f(,):,m1,m2,0,x,y\n"
        b"def g(,):,m1,m2,1,\xff\xfe,y\n"
    )
    result = invoke("judge", path, "-o", tmp_path / "v.jsonl")
    assert_clean_failure(result, f"{path}:3: field 'completion_a': not valid UTF-8 (byte 0xff")


def test_persona_yaml_that_is_not_utf8(tmp_path: Path) -> None:
    persona = tmp_path / "me.yaml"
    persona.write_bytes(b"name: me\ndescription: caf\xe9 lover\n")
    tasks = write_jsonl(tmp_path / "tasks.jsonl", [{"task_id": "t", "prompt": "p"}])
    result = invoke("persona", "rewrite", tasks, "--persona", persona, "-o", tmp_path / "o.jsonl")
    assert_clean_failure(result, "--persona", f"{persona}:2: not valid UTF-8 (byte 0xe9 at")


def test_guidance_files_that_are_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"train_pair_ids": []}')
    (tmp_path / "global.md").write_bytes(b"# G\n## criteria\n- na\xefve\n")
    result = invoke("guidance", "show", tmp_path)
    assert_clean_failure(result, f"{tmp_path / 'global.md'}:3: not valid UTF-8 (byte 0xef")
    (tmp_path / "global.md").write_text("# G\n## criteria\n- fine\n")
    (tmp_path / "manifest.json").write_bytes(b'{"name": "\xff"}')
    result = invoke("guidance", "show", tmp_path)
    assert_clean_failure(result, f"{tmp_path / 'manifest.json'}:1: not valid UTF-8")


def test_taxonomy_yaml_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "tax.yaml"
    path.write_bytes(b"instructions:\n  - id: caf\xe9\n")
    with pytest.raises(TaxonomyError, match=r"tax\.yaml:2: not valid UTF-8 \(byte 0xe9"):
        load_taxonomy(path)


def test_score_tasks_file_that_is_not_utf8(tmp_path: Path) -> None:
    gens = tmp_path / "g.jsonl"
    gens.write_bytes(jsonl(GEN))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b'{"task_id": "t1", "prompt": "\xe9"}\n')
    result = invoke("score", gens, "--tasks", tasks, "-o", tmp_path / "s.jsonl")
    assert_clean_failure(result, f"{tasks}:1: not valid UTF-8 (byte 0xe9 at column 30)")


def test_read_text_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo \xc3\xa9 \xff\n")
    with pytest.raises(ValueError, match=r"t\.md:2: not valid UTF-8 \(byte 0xff at column 7\)"):
        read_text(path)
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\n")
    assert read_text(path) == "one\ntwo\n"


# --------------------------------------------------------------------------- 3. gzip


def test_score_truncated_gzip_names_the_line_reached(tmp_path: Path) -> None:
    whole = big_gzip(tmp_path / "whole.jsonl.gz")
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    items = list(iter_objects(cut))
    last_line, issue = items[-1]
    assert isinstance(issue, InputIssue) and last_line > 100
    assert not any(isinstance(d, InputIssue) for _, d in items[:-1])
    result = invoke("score", cut, "-o", tmp_path / "s.jsonl")
    assert_clean_failure(
        result, f"{cut}:{last_line}: truncated gzip file", f"(lines 1-{last_line - 1} were read)"
    )
    tiny = tmp_path / "tiny.jsonl.gz"
    tiny.write_bytes(whole[:100])
    assert_clean_failure(
        invoke("score", tiny, "-o", tmp_path / "t.jsonl"), f"{tiny}: truncated gzip file"
    )


def test_bad_gzip_header_and_corrupt_data(tmp_path: Path) -> None:
    header = tmp_path / "h.jsonl.gz"
    header.write_bytes(b"\x1f\x8bXXXXXXXXXXXXXXXX")
    assert_clean_failure(
        invoke("score", header, "-o", tmp_path / "s.jsonl"), f"{header}: not a valid gzip file"
    )
    corrupt = tmp_path / "c.jsonl.gz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage-garbage")
    assert_clean_failure(
        invoke("score", corrupt, "-o", tmp_path / "s.jsonl"), f"{corrupt}: corrupt gzip file"
    )


def test_rank_truncated_gzip_csv(tmp_path: Path) -> None:
    rng = random.Random(1)
    rows = "".join(
        f"{rng.choice('abcdef') * 3}{i},zz{i % 7},model_a,{rng.random()}\n" for i in range(20000)
    )
    data = gzip.compress(f"model_a,model_b,winner,note\n{rows}".encode())
    path = tmp_path / "b.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    assert_clean_failure(invoke("rank", path), f"{path}:", "truncated gzip file")


# --------------------------------------------------------------------------- other readers


def test_rank_oversized_csv_field_and_deep_json_array(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text('model_a,model_b,winner\nx,y,model_a\n"' + "a" * 200_000 + '",y,tie\n')
    assert_clean_failure(invoke("rank", path), f"{path}:3: malformed CSV (field larger than")
    deep = tmp_path / "b.json"
    deep.write_text("[" * 100_000)
    assert_clean_failure(invoke("rank", deep), f"{deep}: nested too deeply")


def test_rich_markup_in_model_names_is_printed_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner\n[/x],b,model_a\nb,[/x],model_a\n[/x],[/x],tie\n")
    result = invoke("rank", path, "--bootstrap", "10", "--skip-invalid")
    assert result.exit_code == 0, result.output
    assert "the same model '[/x]'" in result.output and "[/x]" in result.output


def test_corrupt_parquet_pairs(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 64)
    assert_clean_failure(invoke("judge", path, "-o", tmp_path / "v.jsonl"), str(path))


def test_header_only_battle_csv_says_no_battles(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner\n")
    assert_clean_failure(invoke("rank", path), f"{path}: no battles in the file")


def test_rank_output_folder_is_checked_before_fitting(tmp_path: Path) -> None:
    battles = tmp_path / "b.jsonl"
    battles.write_bytes(jsonl(BATTLE, {**BATTLE, "winner": "model_b"}))
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    result = invoke("rank", battles, "-o", blocker / "r.csv")
    assert_clean_failure(result, "-o/--output", "cannot create the folder")
    result = invoke("rank", battles, "--bootstrap", "5", "--json", tmp_path / "new" / "r.json")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "r.json").is_file()


# --------------------------------------------------------------------------- 4-6. pair


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedBackend:
    """`prefjudge pair` with a scripted monolithic judge that prefers what it sees first."""
    backend = ScriptedBackend(lambda request: {"reason": "A is fine", "verdict": "A"})
    monkeypatch.setattr("prefjudge.cli.judge_cmd.open_backend", lambda config: backend)
    return backend


def responses(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    return 1\n")
    b.write_text("def f(): return 1\n")
    return a, b


def test_pair_binary_response_or_instruction_is_a_usage_error(
    tmp_path: Path, scripted: ScriptedBackend
) -> None:
    a, b = responses(tmp_path)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    result = invoke("pair", binary, b, "--instruction", "say hi", "--method", "monolithic")
    assert_clean_failure(result, "Invalid value for A", f"{binary}:1: not valid UTF-8")
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"abc\x00def")
    result = invoke("pair", a, nul, "--instruction", "say hi", "--method", "monolithic")
    assert_clean_failure(result, "Invalid value for B", f"{nul}: a binary file")
    result = invoke("pair", a, b, "--instruction", binary, "--method", "monolithic")
    assert_clean_failure(result, "Invalid value for --instruction", str(binary))
    assert scripted.requests == []


def test_pair_instruction_that_looks_like_a_missing_path(
    tmp_path: Path, scripted: ScriptedBackend
) -> None:
    a, b = responses(tmp_path)
    for value in ("task.md", "docs/task", str(tmp_path / "nope.txt")):
        result = invoke("pair", a, b, "--instruction", value, "--method", "monolithic")
        assert_clean_failure(
            result, "--instruction", f"{value}: no such file", f"--instruction '{value} '"
        )
    assert scripted.requests == []
    result = invoke("pair", a, b, "--instruction", "task.md ", "--method", "monolithic")
    assert result.exit_code == 0, result.output
    assert "## Request\ntask.md\n" in scripted.requests[0].messages[-1].content
    task = tmp_path / "task.md"
    task.write_text("Write f.\n")
    result = invoke("pair", a, b, "--instruction", task, "--method", "monolithic")
    assert result.exit_code == 0, result.output
    assert "## Request\nWrite f.\n" in scripted.requests[-1].messages[-1].content


def test_pair_output_folder_is_made_first_and_a_failed_write_prints_the_verdict(
    tmp_path: Path, scripted: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = responses(tmp_path)
    common = [a, b, "--instruction", "write f", "--method", "monolithic"]
    out = tmp_path / "missing" / "dir" / "verdict.json"
    result = invoke("pair", *common, "-o", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["method"] == "monolithic"
    calls = len(scripted.requests)

    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    result = invoke("pair", *common, "-o", blocker / "verdict.json")
    assert_clean_failure(result, "-o/--output", "cannot create the folder")
    assert len(scripted.requests) == calls  # refused before any model call

    failing = tmp_path / "v.json"
    original = Path.write_text

    def refuse(self: Path, *args: object, **kwargs: object) -> int:
        if self == failing:
            raise OSError(28, "No space left on device")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refuse)
    result = invoke("pair", *common, "-o", failing)
    assert_clean_failure(result, f"cannot write {failing}", "the verdict JSON was printed")
    assert '"pair_id": "pair"' in result.output and '"method": "monolithic"' in result.output


# --------------------------------------------------------------------------- 7. guidance


def test_guidance_manifest_with_wrong_types(tmp_path: Path) -> None:
    (tmp_path / "global.md").write_text("# G\n## criteria\n- one\n")
    manifest = tmp_path / "manifest.json"
    for content, needle in [
        ('{"train_pair_ids": "p1"}', "field 'train_pair_ids': Input should be a valid list"),
        ('{"train_fingerprints": [1, 2]}', "field 'train_fingerprints.0'"),
        ('{"split": 5}', "field 'split'"),
        ('{"categories": ["a"]}', "field 'categories'"),
        ('["p1"]', "expected a JSON object, got list"),
        ('{"a": ' + "[" * 100_000, "nested too deeply"),
    ]:
        manifest.write_text(content)
        assert_clean_failure(invoke("guidance", "show", tmp_path), str(manifest), needle)
    manifest.write_text('{"train_pair_ids": ["p1"], "source": "by hand"}')
    result = invoke("guidance", "show", tmp_path)
    assert result.exit_code == 0, result.output


# --------------------------------------------------------------------------- 8. templates


def template_folder(tmp_path: Path, name: str, user: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "monolithic.md").write_text(f"You judge.\n=== user ===\n{user}\n")
    return folder


@pytest.mark.parametrize(
    ("user", "needle"),
    [
        (
            "{{instruction}} {{response_a}} {{response_b}} {{answer_c}}",
            "monolithic.md:3: unknown placeholder(s) ['answer_c']",
        ),
        (
            "{{instruction} {{response_a}} {{response_b}}",
            "monolithic.md:3: malformed placeholder '{{instruction}'",
        ),
        (
            "{{instruction}} {response_a}} {{response_b}}",
            "monolithic.md:3: malformed placeholder '{response_a}}'",
        ),
        (
            "{{ instruction }} {{response_a}} {{response_b}}",
            "monolithic.md:3: malformed placeholder '{{ instruction }}'",
        ),
        ("{{instruction}} {{response_a}}", "monolithic.md: missing placeholder(s) ['response_b']"),
    ],
)
def test_pair_refuses_a_bad_template_before_judging(
    tmp_path: Path, scripted: ScriptedBackend, user: str, needle: str
) -> None:
    a, b = responses(tmp_path)
    folder = template_folder(tmp_path, "t", user)
    result = invoke(
        "pair", a, b, "--instruction", "write f", "--method", "monolithic", "--templates", folder
    )
    assert_clean_failure(result, str(folder), needle)
    assert scripted.requests == []


def test_templates_folder_overrides_only_the_files_it_holds(tmp_path: Path) -> None:
    folder = template_folder(tmp_path, "ok", "{{instruction}}\n{{response_a}}\n{{response_b}}")
    mono, criteria = check_templates(["monolithic", "criteria"], str(folder))
    assert mono.path == folder / "monolithic.md"
    assert criteria.path.parent.name == "judge"  # the shipped one
    json_example = 'Reply {"scores": {"a": true}} please'
    parse_template(
        "monolithic",
        f"s\n=== user ===\n{{{{instruction}}}}{{{{response_a}}}}{{{{response_b}}}}\n{json_example}",
        Path("m.md"),
    )
    binary = tmp_path / "bin"
    binary.mkdir()
    (binary / "monolithic.md").write_bytes(b"s\n=== user ===\n\xff\n")
    with pytest.raises(TemplateError, match=r"monolithic\.md:3: not valid UTF-8"):
        load_template("monolithic", str(binary))


# --------------------------------------------------------------------------- 9. empty inputs


def test_metrics_on_no_records_have_the_summary_columns() -> None:
    frame = metrics.samples_frame([])
    summary = metrics.model_summary(frame)
    assert summary.empty and list(summary.columns) == metrics.SUMMARY_COLUMNS
    import pandas as pd

    assert list(metrics.model_summary(pd.DataFrame()).columns) == metrics.SUMMARY_COLUMNS
    by_protocol = metrics.summary_by_protocol(frame)
    assert by_protocol.empty and list(by_protocol.columns)[:3] == ["model", "protocol", "n"]


def test_report_on_an_empty_scores_file(tmp_path: Path) -> None:
    empty = tmp_path / "scores.jsonl"
    empty.write_text("")
    result = invoke("report", empty, "-o", tmp_path / "r.html")
    assert_clean_failure(result, f"{empty}: no scored records")


def test_judge_reports_a_bad_template_as_a_message(
    tmp_path: Path, scripted: ScriptedBackend
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps(
            {
                "pair_id": "p",
                "task_id": "t",
                "instruction": "i",
                "response_a": "a",
                "response_b": "b",
            }
        )
        + "\n"
    )
    folder = template_folder(tmp_path, "t", "{{instruction}} {{response_a}} {{Response_b}}")
    result = invoke(
        "judge", pairs, "-o", tmp_path / "v.jsonl", "--method", "monolithic", "--templates", folder
    )
    assert_clean_failure(result, f"{folder / 'monolithic.md'}:3: malformed placeholder")


def test_pair_format_is_told_from_the_first_readable_line(tmp_path: Path) -> None:
    from prefjudge.judge.pairs import load_pairs

    path = tmp_path / "pairs.jsonl"
    pair = {
        "pair_id": "p",
        "task_id": "t",
        "instruction": "i",
        "response_a": "a",
        "response_b": "b",
    }
    path.write_bytes(b"\xff oops\n" + jsonl(pair))
    pairs, issues = load_pairs(path, skip_invalid=True)
    assert [p.pair_id for p in pairs] == ["p"]
    assert [str(i) for i in issues] == [f"{path}:1: not valid UTF-8 (byte 0xff at column 1)"]


def test_report_names_a_wrongly_typed_k_or_protocol(tmp_path: Path) -> None:
    base = {**GEN, "instruction_results": [], "if_instruction": None, "func": None}
    path = tmp_path / "scores.jsonl"
    path.write_bytes(jsonl(base, {**base, "k": "two"}, {**base, "protocol": ["multi"]}))
    result = invoke("report", path, "-o", tmp_path / "r.html")
    assert_clean_failure(
        result,
        f"{path}:2: field 'k': must be a non-negative integer, got 'two'",
        f"{path}:3: field 'protocol': expected a string",
    )
