"""A damaged response cache stops a model command with one line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from pj_cli import SAMPLE_DIR, invoke

from prefjudge.backends import BackendError, create_backend
from prefjudge.backends.config import BackendConfig


def damaged(tmp_path: Path) -> Path:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"not a database, only text " * 200)
    return path


def test_create_backend_turns_a_damaged_cache_into_a_backend_error(tmp_path: Path) -> None:
    cache = damaged(tmp_path)
    config = BackendConfig(kind="openai", model="m", base_url=["http://127.0.0.1:9/v1"],
                           cache=str(cache))
    with pytest.raises(BackendError, match=f"{cache}: not a usable response cache"):
        create_backend(config)


def test_generate_on_a_damaged_cache_is_a_clean_error(tmp_path: Path) -> None:
    cache = damaged(tmp_path)
    result = invoke("generate", SAMPLE_DIR / "tasks.jsonl", "-o", tmp_path / "g.jsonl",
                    "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                    "--model", "m", "--cache", cache, ok=False)
    assert result.exit_code == 1
    assert f"{cache}: not a usable response cache" in " ".join(result.output.split())
    assert not (tmp_path / "g.jsonl").exists() or (tmp_path / "g.jsonl").read_text() == ""
