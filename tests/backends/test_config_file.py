"""``prefjudge.toml`` that cannot be read: a one-line error naming the file, never a traceback
(issue 31 item 2: deep nesting, UTF-16)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pj_cli import flat, invoke

DEEP = 100_000


@pytest.mark.parametrize("value", ["{a = " * DEEP + "1" + "}" * DEEP, "[" * DEEP + "]" * DEEP])
@pytest.mark.parametrize("where", ["env", "cwd", "flag"])
def test_deeply_nested_config_is_a_one_line_error(
    tmp_path: Path, value: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "prefjudge.toml"
    config.write_text(f'[backend]\nmodel = "m"\nextra_body = {value}\n')
    monkeypatch.chdir(tmp_path)
    env = {"PREFJUDGE_CONFIG": str(config)} if where == "env" else {"PREFJUDGE_CONFIG": None}
    flag = ["--config", config] if where == "flag" else []
    result = invoke("cache", "info", *flag, env=env, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 2, result.output
    assert f"{config}: not valid TOML (values nested too deeply)" in flat(result.output)


def test_utf16_config_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "prefjudge.toml"
    config.write_bytes('[backend]\nmodel = "m"\n'.encode("utf-16"))
    result = invoke("cache", "info", "--config", config, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 2, result.output
    assert f"{config}:1: not valid UTF-8" in flat(result.output)
