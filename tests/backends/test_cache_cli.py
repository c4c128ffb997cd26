"""``prefjudge cache info|clear`` against a cache filled by the real openai backend."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from pj_backend_helpers import FakeOpenAI

from prefjudge.backends import ResponseCache, chat
from prefjudge.backends.cache import CACHE_FORMAT
from prefjudge.cli import main

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend


def fill(server: FakeOpenAI, path: Path, model: str, n: int) -> None:
    with OpenAIBackend(model=model, base_url=server.url, cache=ResponseCache(path)) as b:
        results = b.generate([chat(f"r{i}", f"echo:{model} {i}") for i in range(n)])
    assert all(r.ok for r in results)


def info(*args: str) -> dict:
    result = CliRunner().invoke(main, ["cache", "info", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def filled(fake_server: FakeOpenAI, tmp_path: Path) -> Path:
    path = tmp_path / "cache.sqlite"
    fill(fake_server, path, "m1", 3)
    fill(fake_server, path, "m2", 2)
    return path


def test_info_lists_entries_by_backend_model_and_endpoint(
    filled: Path, fake_server: FakeOpenAI
) -> None:
    found = info("--cache", str(filled))
    assert found["path"] == str(filled) and found["exists"] is True
    assert found["entries"] == 5 and found["old_format_entries"] == 0
    assert found["size_bytes"] > 0 and found["format"] == CACHE_FORMAT
    groups = {g["model"]: g for g in found["groups"]}
    assert groups["m1"]["entries"] == 3 and groups["m2"]["entries"] == 2
    assert groups["m1"]["backend"] == "openai" and groups["m1"]["endpoint"] == fake_server.url
    assert groups["m1"]["oldest"] <= groups["m1"]["newest"]
    human = CliRunner().invoke(main, ["cache", "info", "--cache", str(filled)])
    assert human.exit_code == 0, human.output
    assert f"cache: {filled}\n" in human.stdout  # whole, however long the path
    assert "5 entries" in human.stdout
    assert "m1" in human.stdout and "openai" in human.stdout


def test_info_old_json_switch_warns_and_still_prints_json(filled: Path) -> None:
    result = CliRunner().invoke(main, ["cache", "info", "--json", "--cache", str(filled)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["entries"] == 5
    assert "warning: --json is deprecated" in result.stderr and "--format json" in result.stderr


def test_info_finds_the_cache_like_other_commands(
    filled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PREFJUDGE_CONFIG", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("PREFJUDGE_CACHE", str(filled))
    assert info()["path"] == str(filled) and info()["entries"] == 5
    (work / "prefjudge.toml").write_text('[backend]\ncache = "sub/mine.sqlite"\n')
    found = info()  # the file's setting wins over the environment, relative to the file
    assert found["path"] == str(work / "sub" / "mine.sqlite") and found["exists"] is False
    assert not (work / "sub" / "mine.sqlite").exists()  # info creates nothing
    human = CliRunner().invoke(main, ["cache", "info"])
    assert human.exit_code == 0 and "no file yet" in human.stdout
    assert info("--cache", str(filled))["entries"] == 5  # the flag wins over both


def test_clear_by_model_asks_first(filled: Path) -> None:
    args = ["cache", "clear", "--cache", str(filled), "--model", "m1"]
    declined = CliRunner().invoke(main, args, input="n\n")
    assert declined.exit_code == 1 and "Delete 3 of 5 entries" in declined.output
    assert info("--cache", str(filled))["entries"] == 5
    accepted = CliRunner().invoke(main, args, input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "removed 3 entries" in accepted.stdout
    assert [g["model"] for g in info("--cache", str(filled))["groups"]] == ["m2"]


def test_clear_older_than_and_all(filled: Path) -> None:
    with sqlite3.connect(filled) as db:  # m2's entries were stored ten days ago
        db.execute(
            "UPDATE responses SET created = ? WHERE model = 'm2'", (time.time() - 10 * 86400,)
        )
    old = CliRunner().invoke(
        main, ["cache", "clear", "--cache", str(filled), "--older-than", "7", "-y"]
    )
    assert old.exit_code == 0, old.output
    assert "removed 2 entries" in old.stdout and "3 left" in old.stdout
    none = CliRunner().invoke(
        main, ["cache", "clear", "--cache", str(filled), "--older-than", "7", "--yes"]
    )
    assert none.exit_code == 0 and "removed 0 entries" in none.stdout
    everything = CliRunner().invoke(main, ["cache", "clear", "--cache", str(filled), "--yes"])
    assert everything.exit_code == 0 and "removed 3 entries" in everything.stdout
    assert info("--cache", str(filled))["entries"] == 0
    bad = CliRunner().invoke(main, ["cache", "clear", "--cache", str(filled), "--older-than", "-1"])
    assert bad.exit_code == 2


def test_clear_shrinks_the_file(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fake_server.reply = lambda body: "x" * 200_000
    fill(fake_server, path, "big", 5)
    before = info("--cache", str(path))["size_bytes"]
    done = CliRunner().invoke(main, ["cache", "clear", "--cache", str(path), "--yes"])
    assert done.exit_code == 0, done.output
    after = info("--cache", str(path))["size_bytes"]
    assert before > 1_000_000 and after < 100_000


def test_model_filter_matches_engine_argument_variants(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with ResponseCache(path) as cache:
        cache.put("a", {"text": "1"}, model='org/m [dtype="bfloat16"]', backend="vllm")
        cache.put("b", {"text": "2"}, model="org/m", backend="vllm")
        cache.put("c", {"text": "3"}, model="org/m2", backend="vllm")
    done = CliRunner().invoke(
        main, ["cache", "clear", "--cache", str(path), "--model", "org/m", "-y"]
    )
    assert done.exit_code == 0 and "removed 2 entries" in done.stdout
    assert [g["model"] for g in info("--cache", str(path))["groups"]] == ["org/m2"]


def test_an_old_format_cache_is_migrated_and_its_rows_ignored(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the table as prefjudge 0.x wrote it
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL,"
            " created REAL NOT NULL, response TEXT NOT NULL)"
        )
        db.execute(
            "INSERT INTO responses VALUES ('k', 'm1', ?, ?)",
            (time.time(), json.dumps({"text": "stale", "finish_reason": "stop"})),
        )
    db.close()
    found = info("--cache", str(path))
    assert found["entries"] == 1 and found["old_format_entries"] == 1 and found["groups"] == []
    human = CliRunner().invoke(main, ["cache", "info", "--cache", str(path)])
    assert "older cache format" in human.stdout
    fill(fake_server, path, "m1", 1)  # the backend works on the migrated file
    found = info("--cache", str(path))
    assert found["entries"] == 2 and [g["entries"] for g in found["groups"]] == [1]
    done = CliRunner().invoke(main, ["cache", "clear", "--cache", str(path), "--old-format", "-y"])
    assert done.exit_code == 0 and "removed 1 entry" in done.stdout
    assert info("--cache", str(path))["old_format_entries"] == 0


def test_clear_without_a_file(tmp_path: Path) -> None:
    path = tmp_path / "none.sqlite"
    done = CliRunner().invoke(main, ["cache", "clear", "--cache", str(path), "--yes"])
    assert done.exit_code == 0 and "removed 0 entries" in done.stdout
    assert not path.exists()


def test_rows_prefjudge_does_not_write_are_damaged_named_and_never_read(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    """Text dates and a NULL model (a table another tool made) were reported as valid."""
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:  # no types, no NOT NULL: any value fits
        db.execute(
            "CREATE TABLE responses (key PRIMARY KEY, model, created, response,"
            " backend, endpoint, format)"
        )
    db.close()
    fill(fake_server, path, "m1", 2)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses SET created = 'yesterday' WHERE rowid = 1")
        db.execute(
            "INSERT INTO responses VALUES ('fuzz', NULL, 'today', '{}', 'openai', NULL, ?)",
            (CACHE_FORMAT,),
        )
    db.close()
    found = info("--cache", str(path))
    assert found["entries"] == 3 and found["damaged_entries"] == 2
    assert [g["entries"] for g in found["groups"]] == [1]  # only the row prefjudge wrote
    assert [(d["row"], d["problem"]) for d in found["damaged"]] == [
        (1, "created is not a time"),
        (3, "model is not text"),
    ]
    assert found["damaged"][1]["key"] == "fuzz"
    human = CliRunner().invoke(main, ["cache", "info", "--cache", str(path)])
    assert human.exit_code == 0 and "3 entries, 2 damaged" in human.stdout
    warned = " ".join(human.stderr.split())
    assert "warning: 2 entries of" in warned and "are damaged (not what prefjudge writes)" in warned
    assert "row 3 (key 'fuzz'): model is not text" in warned
    fake_server.reset_counts()
    fill(fake_server, path, "m1", 2)  # the damaged row is asked again, the other is read
    assert fake_server.calls == 1
    assert info("--cache", str(path))["damaged_entries"] == 1  # the new reply replaced it
    done = CliRunner().invoke(main, ["cache", "clear", "--cache", str(path), "--damaged", "-y"])
    assert done.exit_code == 0 and "removed 1 entry" in done.stdout, done.output
    assert info("--cache", str(path))["entries"] == 2
