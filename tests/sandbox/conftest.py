"""Sandbox tests run both ways: runs forked from zygotes, and a fresh process per run.

The hostile suites (``test_sandbox.py``, ``test_sandbox_kernel.py``, ``test_sandbox_round3.py``,
``test_compare_round3.py``) run every test twice,
once per way, through ``PREFJUDGE_SANDBOX_ZYGOTE``; a test marked ``one_run_mode`` (the
ones over real benchmark data, compared way against way in ``test_zygote.py``) runs once,
the default way (zygotes).
"""

from __future__ import annotations

import pytest

from prefjudge.sandbox.zygote import ZYGOTE_ENV_VAR

BOTH_WAYS = ("test_sandbox", "test_sandbox_kernel", "test_sandbox_round3", "test_compare_round3")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "one_run_mode: a sandbox test that runs only the default way (zygotes)")


@pytest.fixture(autouse=True)
def sandbox_runs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """``zygote`` or ``fresh`` where the test runs both ways (None: the default way)."""
    way = getattr(request, "param", None)
    if way is not None:
        monkeypatch.setenv(ZYGOTE_ENV_VAR, "1" if way == "zygote" else "0")
    return way


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if (
        "sandbox_runs" in metafunc.fixturenames
        and module in BOTH_WAYS
        and metafunc.definition.get_closest_marker("one_run_mode") is None
    ):
        metafunc.parametrize("sandbox_runs", ["zygote", "fresh"], indirect=True)
