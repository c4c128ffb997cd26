"""The run journal: lock, binding, validated resume, torn lines, discard, refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from prefjudge.journal import Journal, JournalError, binding_path, lock_path

SRC = Path(__file__).resolve().parents[1] / "src"


class Row(BaseModel):
    key: str
    value: int


def journal(path: Path, **kwargs) -> Journal[Row]:
    settings = kwargs.pop("settings", {"temperature": 0.0})
    return Journal(path, Row, lambda r: r.key, stage="test", settings=settings, **kwargs)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_new_output_is_bound_locked_and_resumed(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"x": 1}\n')
    out = tmp_path / "sub" / "out.jsonl"
    with journal(out, inputs={"data": src}) as j:
        assert lock_path(out).exists() and not j.resumed
        j.write(Row(key="a", value=1))
        j.write(Row(key="b", value=2))
        with pytest.raises(JournalError, match="already there"):
            j.write(Row(key="a", value=9))
    assert not lock_path(out).exists(), "the lock file goes when the run ends"
    binding = json.loads(binding_path(out).read_text())
    assert binding["stage"] == "test" and binding["records"] == 2
    assert binding["inputs"]["data"][0]["sha256"] and binding["settings"] == {"temperature": 0.0}
    with journal(out, inputs={"data": src}) as j:
        assert j.resumed and list(j.done) == ["a", "b"]
        j.write(Row(key="c", value=3))
        assert [r.key for r in j.records()] == ["a", "b", "c"]
    assert [row["key"] for row in lines(out)] == ["a", "b", "c"]


def test_torn_last_line_is_removed_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with journal(out) as j:
        j.write(Row(key="a", value=1))
    with out.open("a") as handle:
        handle.write('{"key": "b", "val')  # killed mid-write
    with journal(out) as j:
        assert list(j.done) == ["a"]
        assert any("incomplete last line" in note for note in j.notes)
        j.write(Row(key="b", value=2))
    assert [row["key"] for row in lines(out)] == ["a", "b"]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("{not json", "out.jsonl:2: not valid JSON"),
        ('{"key": "x"}', "out.jsonl:2: field 'value'"),
        ('{"key": "a", "value": 5}', "out.jsonl:2: a second record for 'a'"),
        ("[1, 2]", "out.jsonl:2: expected a JSON object"),
        ("[" * 100_000, "out.jsonl:2: nested too deeply"),
        ('{"key": "x\\ud800", "value": 2}',
         "out.jsonl:2: field 'key': not valid Unicode (lone surrogate \\ud800)"),
    ],
)
def test_corrupt_existing_lines_are_named(tmp_path: Path, bad: str, expected: str) -> None:
    out = tmp_path / "out.jsonl"
    with journal(out) as j:
        j.write(Row(key="a", value=1))
    text = out.read_text()
    out.write_text(text + bad + "\n" + json.dumps({"key": "c", "value": 3}) + "\n")
    with pytest.raises(JournalError) as info:
        journal(out).open()
    assert expected in str(info.value) and "--force-new" in str(info.value)
    assert not lock_path(out).exists(), "a refused open releases the lock"


def test_invalid_utf8_line_is_named(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with journal(out) as j:
        j.write(Row(key="a", value=1))
    with out.open("ab") as handle:
        handle.write(b'{"key": "\xff", "value": 2}\n')
    with pytest.raises(JournalError, match=r"out.jsonl:2: not valid UTF-8"):
        journal(out).open()


def test_changed_settings_and_inputs_are_refused_with_the_difference(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"x": 1}\n')
    out = tmp_path / "out.jsonl"
    with journal(out, inputs={"data": src}, settings={"model": "m1", "k": 3}) as j:
        j.write(Row(key="a", value=1))
    with pytest.raises(JournalError) as info:
        journal(out, inputs={"data": src}, settings={"model": "m2", "k": 3}).open()
    message = str(info.value)
    assert 'setting model: "m1" then, "m2" now' in message and "setting k" not in message
    src.write_text('{"x": 2}\n')
    with pytest.raises(JournalError, match=r"input data: .*in.jsonl has changed since"):
        journal(out, inputs={"data": src}, settings={"model": "m1", "k": 3}).open()
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n")
    with pytest.raises(JournalError, match=r"other.jsonl now"):
        journal(out, inputs={"data": other}, settings={"model": "m1", "k": 3}).open()
    with pytest.raises(JournalError, match="output of `prefjudge test`, not of score"):
        Journal(out, Row, lambda r: r.key, stage="score", inputs={"data": src}).open()
    assert [row["key"] for row in lines(out)] == ["a"], "a refused resume changes nothing"


def test_force_new_keeps_the_old_output_aside(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with journal(out, settings={"model": "m1"}) as j:
        j.write(Row(key="a", value=1))
    with journal(out, settings={"model": "m2"}, force_new=True) as j:
        assert not j.done and any("kept as" in note for note in j.notes)
        j.write(Row(key="z", value=26))
    assert [row["key"] for row in lines(out)] == ["z"]
    assert [row["key"] for row in lines(out.with_name("out.jsonl.bak"))] == ["a"]
    assert json.loads(binding_path(out).read_text())["settings"] == {"model": "m2"}


def test_output_without_binding_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"key": "a", "value": 1}) + "\n")
    with pytest.raises(JournalError, match=r"no out\.jsonl\.journal\.json"):
        journal(out).open()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with journal(empty) as j:  # nothing to resume: just a new output
        assert not j.done


def test_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"x": 1}\n{"x": 2}\n')
    before = src.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    hard = tmp_path / "hard.jsonl"
    os.link(src, hard)
    for out in (src, link, hard):
        with pytest.raises(JournalError, match="is the data input"):
            journal(out, inputs={"data": src}).open()
    assert src.read_bytes() == before


def test_unwritable_output_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(JournalError, match="cannot create the folder"):
        journal(blocker / "out.jsonl").open()
    with pytest.raises(JournalError, match="is a folder"):
        journal(tmp_path).open()


def test_discard_rewrites_without_the_records(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with journal(out) as j:
        for i, key in enumerate("abc"):
            j.write(Row(key=key, value=i))
    with journal(out) as j:
        assert j.discard(["b", "nope"]) == 1
        assert list(j.done) == ["a", "c"]
        j.write(Row(key="b", value=20))
    assert [(row["key"], row["value"]) for row in lines(out)] == [("a", 0), ("c", 2), ("b", 20)]


HOLDER = """
import sys, time
from pydantic import BaseModel
from prefjudge.journal import Journal

class Row(BaseModel):
    key: str
    value: int

with Journal(sys.argv[1], Row, lambda r: r.key, stage="test",
             settings={"temperature": 0.0}) as j:
    j.write(Row(key="held", value=1))
    print("locked", flush=True)
    time.sleep(60)
"""


def test_a_second_writer_is_refused_and_a_killed_holder_frees_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    script = tmp_path / "holder.py"
    script.write_text(textwrap.dedent(HOLDER))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    holder = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE,
                              text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(JournalError) as info:
            journal(out).open()
        assert f"being written by another prefjudge run (pid {holder.pid})" in str(info.value)
        assert [row["key"] for row in lines(out)] == ["held"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    deadline = time.monotonic() + 5
    while True:  # the kernel drops a dead process's flock at once
        try:
            with journal(out) as j:
                assert list(j.done) == ["held"]
            break
        except JournalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_write_many_appends_in_one_go_and_refuses_any_repeated_key(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with journal(out) as j:
        j.write_many([Row(key="a", value=1), Row(key="b", value=2)])
        with pytest.raises(JournalError, match="'c' is already there"):
            j.write_many([Row(key="c", value=3), Row(key="c", value=4)])
        with pytest.raises(JournalError, match="'a' is already there"):
            j.write_many([Row(key="d", value=5), Row(key="a", value=6)])
        j.write_many([Row(key="e", value=7)], keep=False)
        j.write_many([])
        assert j.written == 3
        assert [r.key for r in j.records()] == ["a", "b", "e"], "the unkept one is read back"
    assert [row["key"] for row in lines(out)] == ["a", "b", "e"], "refused batches wrote nothing"
