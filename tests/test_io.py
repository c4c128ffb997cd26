"""prefjudge.io on real files: every reader, every way an input can be wrong, and what it says.

Each test writes the bytes a user (or a killed run) could leave on disk and checks what the
reader returns or the located message it gives (file, line, field). The commands that use
these readers are checked end to end in tests/cli/test_input_errors.py.
"""

from __future__ import annotations

import csv
import gzip
import unicodedata
import zlib
from pathlib import Path

import pytest
from pj_files import write_jsonl
from pydantic import BaseModel, ValidationError

from prefjudge.io import (
    GZIP_MAGIC,
    READ_ERRORS,
    FieldProblem,
    InputError,
    InputIssue,
    JsonValueError,
    iter_lines,
    iter_objects,
    open_csv,
    open_text,
    parse_json,
    parse_json_line,
    peek_text,
    read_existing,
    read_records,
    read_text,
    stream_issue,
    summary_path,
    text_field,
    utf8_problem,
    validation_issues,
)
from prefjudge.records import Generation

GEN = {"task_id": "t1", "model": "m", "response": "x = 1"}
BOM = b"\xef\xbb\xbf"


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def truncated_gzip(path: Path, lines: int = 3000) -> Path:
    """A gzipped JSONL file cut in half, as a copy or download that stopped early leaves it."""
    text = "".join(f'{{"task_id": "t{i}", "model": "m", "response": "r{i}"}}\n'
                   for i in range(lines))
    data = gzip.compress(text.encode())
    return write_bytes(path, data[: len(data) // 2])


def bad_crc_gzip(path: Path, lines: int = 300) -> Path:
    """A gzipped JSONL file whose data decompresses whole but fails its CRC check."""
    text = "".join(f'{{"task_id": "t{i}", "model": "m", "response": "r{i}"}}\n'
                   for i in range(lines))
    data = bytearray(gzip.compress(text.encode()))
    data[-6] ^= 0xFF  # a byte of the CRC-32 in the trailer
    return write_bytes(path, bytes(data))


def message(info: pytest.ExceptionInfo[InputError]) -> str:
    return str(info.value)


# --------------------------------------------------------------------------- issues and errors


def test_an_issue_names_the_file_then_the_line_then_the_field() -> None:
    assert str(InputIssue("g.jsonl", 3, "instructions.0.id", "missing")) == (
        "g.jsonl:3: field 'instructions.0.id': missing")
    assert str(InputIssue("g.jsonl", 3, "", "not valid JSON")) == "g.jsonl:3: not valid JSON"
    assert str(InputIssue("g.jsonl", 0, "", "cannot read the file")) == (
        "g.jsonl: cannot read the file")  # line 0: the whole file


def test_an_input_error_counts_every_issue_and_shows_the_first_twenty() -> None:
    issues = [InputIssue("g.jsonl", line, "", "bad") for line in range(1, 24)]
    error = InputError(issues)
    assert isinstance(error, ValueError) and error.issues == issues
    text = str(error)
    assert text.startswith("23 problem(s) in the input:\n  g.jsonl:1: bad\n")
    assert "  g.jsonl:20: bad\n  ... and 3 more" in text and "g.jsonl:21:" not in text
    assert str(InputError(issues[:20])).endswith("g.jsonl:20: bad")  # no "more" line


def test_text_field_gives_the_string_or_names_the_field() -> None:
    assert text_field({"prompt": "Write f."}, "prompt") == "Write f."
    with pytest.raises(FieldProblem) as missing:
        text_field({"task_id": "t"}, "prompt")
    assert (missing.value.field, str(missing.value)) == ("prompt", "missing")
    with pytest.raises(FieldProblem) as wrong:
        text_field({"prompt": ["a"]}, "prompt")
    assert (wrong.value.field, str(wrong.value)) == ("prompt", "expected a string, got list")
    assert isinstance(wrong.value, ValueError)


def test_validation_issues_give_one_located_issue_per_error() -> None:
    class Row(BaseModel):
        n: int
        tags: list[int]

    with pytest.raises(ValidationError) as info:
        Row.model_validate({"n": "x", "tags": [1, "y"]})
    issues = validation_issues("rows.jsonl", 7, info.value)
    assert [(i.path, i.line, i.field) for i in issues] == [
        ("rows.jsonl", 7, "n"), ("rows.jsonl", 7, "tags.1")]
    assert all("valid integer" in i.message for i in issues)


# --------------------------------------------------------------------------- bytes and streams


def test_utf8_problem_names_the_first_bad_byte_and_its_column() -> None:
    assert utf8_problem("café") is None
    bad = b"ab\xffc\xfe".decode("utf-8", "surrogateescape")
    assert utf8_problem(bad) == "not valid UTF-8 (byte 0xff at column 3)"


@pytest.mark.parametrize(("line", "exc", "expected"), [
    (0, EOFError(), "g.gz: truncated gzip file: the compressed data ends before its end marker"),
    (5, EOFError(), "g.gz:5: truncated gzip file: the compressed data ends before its end "
                    "marker (lines 1-4 were read)"),
    (1, gzip.BadGzipFile("Not a gzipped file (b'xx')"),
     "g.gz:1: not a valid gzip file (Not a gzipped file (b'xx'))"),
    (3, gzip.BadGzipFile("CRC check failed"),
     "g.gz:3: corrupt gzip file (CRC check failed) (lines 1-2 were read)"),
    (3, zlib.error("Error -3 while decompressing data"),
     "g.gz:3: corrupt gzip file (Error -3 while decompressing data) (lines 1-2 were read)"),
    (0, FileNotFoundError(2, "No such file or directory"),
     "g.gz: cannot read the file (No such file or directory)"),
    (0, OSError("device gone"), "g.gz: cannot read the file (device gone)"),
])
def test_stream_issue_says_what_went_wrong_and_what_was_read(
    line: int, exc: BaseException, expected: str
) -> None:
    assert isinstance(exc, READ_ERRORS)
    assert str(stream_issue("g.gz", line, exc)) == expected


def test_open_text_detects_gzip_by_content_not_by_name(tmp_path: Path) -> None:
    packed = write_bytes(tmp_path / "plain-name.jsonl", gzip.compress("é\n".encode()))
    plain = write_bytes(tmp_path / "looks-packed.jsonl.gz", "é\n".encode())
    assert packed.read_bytes()[:2] == GZIP_MAGIC
    for path in (packed, plain):
        with open_text(path) as handle:
            assert handle.read() == "é\n"


def test_open_text_passes_encoding_errors_and_newline(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "t.txt", BOM + b"a\r\nb\xff\n")
    with open_text(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
        text = handle.read()
    assert text == "a\r\nb\udcff\n"  # no byte-order mark, \r\n kept, the bad byte escaped
    with open_text(path) as handle, pytest.raises(UnicodeDecodeError):
        handle.read()  # strict by default


def test_open_csv_keeps_quoted_line_breaks_and_escapes_bad_bytes(tmp_path: Path) -> None:
    data = BOM + b'model,note\r\nm1,"two\r\nlines"\r\nm\xe92,x\r\n'
    for path in (write_bytes(tmp_path / "t.csv", data),
                 write_bytes(tmp_path / "t.csv.gz", gzip.compress(data))):
        with open_csv(path) as handle:
            rows = list(csv.reader(handle))
        assert rows[:2] == [["model", "note"], ["m1", "two\r\nlines"]]
        assert utf8_problem(rows[2][0]) == "not valid UTF-8 (byte 0xe9 at column 2)"


# --------------------------------------------------------------------------- read_text


def test_read_text_normalises_line_endings_and_drops_a_byte_order_mark(tmp_path: Path) -> None:
    data = BOM + "line one\r\nline two\rcafé ☕\n".encode()
    assert read_text(write_bytes(tmp_path / "t.txt", data)) == "line one\nline two\ncafé ☕\n"
    assert read_text(write_bytes(tmp_path / "t.gz", gzip.compress(data))) == (
        "line one\nline two\ncafé ☕\n")
    assert read_text(write_bytes(tmp_path / "empty.txt", b"")) == ""


def test_read_text_names_the_line_and_column_of_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "t.txt", b"fine\nalso fine\ncaf\xe9\nlast\n")
    with pytest.raises(InputError) as info:
        read_text(path)
    assert info.value.issues == [
        InputIssue(str(path), 3, "", "not valid UTF-8 (byte 0xe9 at column 4)")]


def test_read_text_of_a_missing_truncated_or_corrupt_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    with pytest.raises(InputError) as info:
        read_text(missing)
    assert message(info).endswith(f"{missing}: cannot read the file (No such file or directory)")
    with pytest.raises(InputError) as info:
        read_text(tmp_path)
    assert "cannot read the file (Is a directory)" in message(info)
    cut = truncated_gzip(tmp_path / "cut.gz")
    with pytest.raises(InputError) as info:
        read_text(cut)
    assert f"{cut}: truncated gzip file" in message(info)
    header = write_bytes(tmp_path / "header.gz", GZIP_MAGIC + b"\x63" + b"\x00" * 20)
    with pytest.raises(InputError) as info:
        read_text(header)
    assert f"{header}: not a valid gzip file" in message(info)
    corrupt = bad_crc_gzip(tmp_path / "crc.gz")
    with pytest.raises(InputError) as info:
        read_text(corrupt)
    # worded "not a valid gzip file (CRC check failed ...)": the whole-file reader reports
    # every gzip error at line 0, where stream_issue calls a BadGzipFile "not valid"
    assert f"{corrupt}: " in message(info) and "gzip file (CRC check failed" in message(info)


# --------------------------------------------------------------------------- peek_text


def test_peek_text_reads_at_most_size_bytes_decompressed(tmp_path: Path) -> None:
    data = BOM + b'{"model_a": "x"}\n' * 1000
    plain = write_bytes(tmp_path / "b.jsonl", data)
    packed = write_bytes(tmp_path / "b.jsonl.gz", gzip.compress(data))
    for path in (plain, packed):
        assert peek_text(path, size=20) == '{"model_a": "x"}\n'  # 3 BOM bytes + 17
        assert len(peek_text(path)) == 4096 - len(BOM)  # the default size, the BOM dropped
    assert peek_text(write_bytes(tmp_path / "empty.jsonl", b"")) == ""


def test_peek_text_keeps_bad_bytes_and_what_a_truncated_gzip_gave(tmp_path: Path) -> None:
    bad = write_bytes(tmp_path / "bad.csv", b"model,note\nm\xff,x\n")
    assert utf8_problem(peek_text(bad)) == "not valid UTF-8 (byte 0xff at column 13)"
    head = peek_text(truncated_gzip(tmp_path / "cut.jsonl.gz"), size=100)
    assert head.startswith('{"task_id": "t0", "model": "m", "response": "r0"}\n')


def test_peek_text_refuses_what_it_cannot_open(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the file"):
        peek_text(tmp_path / "missing.jsonl")
    header = write_bytes(tmp_path / "header.gz", GZIP_MAGIC + b"\x63" + b"\x00" * 20)
    with pytest.raises(InputError, match="not a valid gzip file"):
        peek_text(header)
    only_header = write_bytes(tmp_path / "only.gz", gzip.compress(b'{"a": 1}\n')[:10])
    with pytest.raises(InputError, match="truncated gzip file"):
        peek_text(only_header)  # nothing could be decompressed


# --------------------------------------------------------------------------- iter_lines


def test_iter_lines_numbers_every_line_and_keeps_its_ending(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "t.txt", BOM + b"one\r\n\n\xef\xbb\xbftwo\nthree")
    assert list(iter_lines(path)) == [
        (1, "one\n"), (2, "\n"),
        (3, "\ufefftwo\n"),  # a byte-order mark is dropped from the first line only
        (4, "three"),
    ]


def test_iter_lines_gives_an_issue_in_place_of_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "t.txt", b"a\n\xc3(\nc\n")
    assert list(iter_lines(path)) == [
        (1, "a\n"),
        (2, InputIssue(str(path), 2, "", "not valid UTF-8 (byte 0xc3 at column 1)")),
        (3, "c\n"),
    ]


def test_iter_lines_keeps_the_lines_before_a_truncated_gzip_ends(tmp_path: Path) -> None:
    path = truncated_gzip(tmp_path / "cut.jsonl.gz")
    lines = list(iter_lines(path))
    *kept, (last, issue) = lines
    assert [number for number, _ in kept] == list(range(1, last))
    assert all(isinstance(text, str) for _, text in kept)
    assert isinstance(issue, InputIssue) and issue.line == last > 1
    assert issue.message == ("truncated gzip file: the compressed data ends before its end "
                             f"marker (lines 1-{last - 1} were read)")


def test_iter_lines_of_a_missing_file_or_a_bad_gzip_header(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="No such file or directory"):
        list(iter_lines(tmp_path / "missing.txt"))
    # The docstring says this raises InputError; the bad header is only found on the first
    # read, so it comes as an issue for the whole file (line 0) instead.
    header = write_bytes(tmp_path / "header.gz", GZIP_MAGIC + b"\x63" + b"\x00" * 20)
    [(line, issue)] = list(iter_lines(header))
    assert line == 0 and isinstance(issue, InputIssue)
    assert str(issue).startswith(f"{header}: not a valid gzip file")


# --------------------------------------------------------------------------- JSON


@pytest.mark.parametrize(("text", "value"), [
    ('{"a": [1, 2.5, null, true]}', {"a": [1, 2.5, None, True]}),
    (b'{"a": "caf\\u00e9"}', {"a": "café"}),
    ('"just a string"', "just a string"),
])
def test_parse_json_gives_the_value(text: str | bytes, value: object) -> None:
    assert parse_json(text) == value


@pytest.mark.parametrize(("text", "expected", "line"), [
    ('{"a": ', "not valid JSON (Expecting value at column 7)", 1),
    ("", "not valid JSON (Expecting value at column 1)", 1),
    ('{"a": 1}\n{"b": 2}', "not valid JSON (Extra data at column 1)", 2),
    ("[" * 100_000, "nested too deeply (JSON arrays or objects deeper than the parser's limit)",
     0),
    ("9" * 5000, "not valid JSON (Exceeds the limit (4300 digits)", 0),
])
def test_parse_json_says_why_in_one_short_error(text: str, expected: str, line: int) -> None:
    with pytest.raises(JsonValueError) as info:
        parse_json(text)
    assert str(info.value).startswith(expected) and info.value.line == line
    assert isinstance(info.value, ValueError) and info.value.__cause__ is None


def test_parse_json_line_gives_an_object_or_the_issue() -> None:
    assert parse_json_line("g.jsonl", 4, '{"a": "\\ud83d\\ude00"}\n') == {"a": "😀"}
    assert parse_json_line("g.jsonl", 4, '{"a": "\\\\ud800"}') == {"a": "\\ud800"}  # no escape
    assert str(parse_json_line("g.jsonl", 4, "{broken")) == (
        "g.jsonl:4: not valid JSON (Expecting property name enclosed in double quotes at "
        "column 2)")
    for not_an_object in ("[1, 2]", '"text"', "3", "null"):
        assert str(parse_json_line("g.jsonl", 4, not_an_object)) == (
            "g.jsonl:4: expected a JSON object")


def test_a_lone_surrogate_escape_is_named_by_its_field() -> None:
    nested = parse_json_line("g.jsonl", 2, '{"a": {"b": ["ok", "x\\ud800"]}}')
    assert str(nested) == "g.jsonl:2: field 'a.b.1': not valid Unicode (lone surrogate \\ud800)"
    key = parse_json_line("g.jsonl", 2, '{"\\udc00k": 1}')
    assert isinstance(key, InputIssue) and key.message.endswith("(lone surrogate \\udc00)")


def test_iter_objects_skips_blank_lines_and_gives_each_bad_line_its_issue(
    tmp_path: Path,
) -> None:
    path = write_bytes(tmp_path / "g.jsonl", (
        b'{"a": 1}\n'
        b"\n"
        b"   \t\r\n"
        b"{broken\n"
        b"[1]\n"
        b'{"a": "caf\xe9"}\n'
        b'{"a": "\\udfff"}\n'
        b'{"a": 2}'  # the last line may lack its newline
    ))
    got = [(line, obj if isinstance(obj, dict) else str(obj)) for line, obj in iter_objects(path)]
    assert got == [
        (1, {"a": 1}),
        (4, f"{path}:4: not valid JSON (Expecting property name enclosed in double quotes at "
            "column 2)"),
        (5, f"{path}:5: expected a JSON object"),
        (6, f"{path}:6: not valid UTF-8 (byte 0xe9 at column 11)"),
        (7, f"{path}:7: field 'a': not valid Unicode (lone surrogate \\udfff)"),
        (8, {"a": 2}),
    ]


def test_iter_objects_of_a_truncated_gzip_keeps_what_came_before(tmp_path: Path) -> None:
    *objects, (line, issue) = list(iter_objects(truncated_gzip(tmp_path / "cut.jsonl.gz")))
    assert objects[0] == (1, {"task_id": "t0", "model": "m", "response": "r0"})
    assert len(objects) == line - 1 and isinstance(issue, InputIssue)
    assert "truncated gzip file" in issue.message


def test_iter_objects_of_a_corrupt_gzip_ends_with_the_issue(tmp_path: Path) -> None:
    *objects, (line, issue) = list(iter_objects(bad_crc_gzip(tmp_path / "crc.jsonl.gz")))
    assert [number for number, _ in objects] == list(range(1, 301)) and line == 301
    assert str(issue).startswith(f"{issue.path}:301: corrupt gzip file (CRC check failed")
    assert str(issue).endswith("(lines 1-300 were read)")


# --------------------------------------------------------------------------- read_records


def test_read_records_validates_every_line_and_keeps_its_number(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [GEN, {**GEN, "task_id": "t2", "extra": 1}])
    records, issues = read_records(path, Generation)
    assert issues == [] and [line for line, _ in records] == [1, 2]
    first, second = (record for _, record in records)
    assert isinstance(first, Generation) and first.task_id == "t1"
    assert second.model_extra == {"extra": 1}  # unknown fields are kept


def test_read_records_names_the_file_line_and_field_of_every_problem(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "part.jsonl", [GEN])
    path = write_bytes(tmp_path / "g.jsonl", good.read_bytes() + (
        b"\n"
        b"{not json\n"
        b'{"task_id": "t", "response": "x"}\n'
        b'{"task_id": "t", "model": "m", "response": 5,'
        b' "instructions": [{"params": {}}]}\n'
    ))
    with pytest.raises(InputError) as info:
        read_records(path, Generation)
    text = message(info)
    assert text.startswith("4 problem(s) in the input:")
    assert f"{path}:3: not valid JSON (Expecting property name" in text
    assert f"{path}:4: field 'model': Field required" in text
    assert f"{path}:5: field 'response': Input should be a valid string" in text
    assert f"{path}:5: field 'instructions.0.id': Field required" in text
    records, issues = read_records(path, Generation, collect=True)
    assert [line for line, _ in records] == [1]
    assert [(i.line, i.field) for i in issues] == [
        (3, ""), (4, "model"), (5, "response"), (5, "instructions.0.id")]


def test_read_records_of_many_bad_lines_shows_twenty(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [{"task_id": f"t{i}"} for i in range(15)])
    with pytest.raises(InputError) as info:
        read_records(path, Generation)
    assert len(info.value.issues) == 30  # model and response missing on every line
    assert message(info).endswith("... and 10 more")


def test_read_records_of_gzip_bom_crlf_and_unicode(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    rows = [{**GEN, "model": nfd, "response": "print('☕ 😀 \u2028 ok')"}, GEN]
    text = write_jsonl(tmp_path / "u.jsonl", rows, ensure_ascii=False).read_bytes()
    assert "☕".encode() in text  # raw UTF-8, not escapes
    for path in (
        write_bytes(tmp_path / "plain.jsonl", BOM + text.replace(b"\n", b"\r\n")),
        write_jsonl(tmp_path / "packed.jsonl", rows, gz=True),  # gzip told by content
        write_jsonl(tmp_path / "escaped.jsonl", rows),  # \u escapes
    ):
        records, issues = read_records(path, Generation)
        assert issues == [] and [line for line, _ in records] == [1, 2]
        record = records[0][1]
        assert record.model == "café" == unicodedata.normalize("NFC", nfd)
        assert record.response == "print('☕ 😀 \u2028 ok')"


def test_read_records_of_an_empty_or_blank_file_is_nothing(tmp_path: Path) -> None:
    assert read_records(write_bytes(tmp_path / "e.jsonl", b""), Generation) == ([], [])
    assert read_records(write_bytes(tmp_path / "b.jsonl", b"\n \n\n"), Generation) == ([], [])
    assert read_records(write_jsonl(tmp_path / "z.jsonl", [], gz=True), Generation) == ([], [])


def test_read_records_of_a_missing_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as info:
        read_records(missing, Generation, collect=True)  # even when collecting
    assert info.value.issues == [
        InputIssue(str(missing), 0, "", "cannot read the file (No such file or directory)")]


def test_read_records_of_a_truncated_gzip_reports_it_after_the_good_lines(
    tmp_path: Path,
) -> None:
    path = truncated_gzip(tmp_path / "cut.jsonl.gz")
    records, [issue] = read_records(path, Generation, collect=True)
    assert len(records) == issue.line - 1 > 0
    with pytest.raises(InputError, match="truncated gzip file"):
        read_records(path, Generation)


# --------------------------------------------------------------------------- outputs


@pytest.mark.parametrize(("output", "suffix", "expected"), [
    ("out/scores.jsonl", ".json", "out/scores.summary.json"),
    ("out/scores.jsonl.gz", ".csv", "out/scores.summary.csv"),
    ("scores.jsonl", "", "scores.summary"),
    ("verdicts.json", ".json", "verdicts.json.summary.json"),
])
def test_summary_path_sits_beside_the_output(output: str, suffix: str, expected: str) -> None:
    assert summary_path(output, suffix) == Path(expected)
    assert summary_path(Path(output), suffix) == Path(expected)


def test_read_existing_reads_complete_lines_as_plain_dicts(tmp_path: Path) -> None:
    assert read_existing(tmp_path / "not-yet.jsonl") == []  # nothing done yet
    assert read_existing(write_bytes(tmp_path / "empty.jsonl", b"")) == []
    path = write_bytes(tmp_path / "out.jsonl", (
        b'{"key": "a", "n": 1}\r\n'
        b"\n"
        b'{"anything": ["goes", {"no": "validation"}]}\n'
        + '{"m": "café ☕ 😀"}\n'.encode()
    ))
    assert read_existing(path) == [
        {"key": "a", "n": 1}, {"anything": ["goes", {"no": "validation"}]}, {"m": "café ☕ 😀"}]


def test_read_existing_ignores_the_partial_line_of_a_run_killed_mid_write(
    tmp_path: Path,
) -> None:
    path = write_bytes(tmp_path / "out.jsonl", b'{"a": 1}\n{"a": 2')
    assert read_existing(path) == [{"a": 1}]
    assert read_existing(write_bytes(tmp_path / "one.jsonl", b'{"a": 1}')) == []


def test_read_existing_ignores_a_partial_line_cut_inside_a_character(tmp_path: Path) -> None:
    cut = '{"a": 1}\n{"m": "café'.encode()[:-1]  # the first byte of é only
    assert read_existing(write_bytes(tmp_path / "out.jsonl", cut)) == [{"a": 1}]
