"""The results folder the viewer tests share, made once per session by the real commands."""

from __future__ import annotations

import pytest
from pj_view_results import Built, build_results


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_results(tmp_path_factory.mktemp("results"), tmp_path_factory.mktemp("work"))
