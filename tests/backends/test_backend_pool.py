"""The backend pool of ``prefjudge run``: one backend per distinct configuration."""

from __future__ import annotations

from pathlib import Path

from prefjudge.backends.config import BackendConfig
from prefjudge.backends.pool import BackendPool, backend_key


def _config(tmp_path: Path, **values: object) -> BackendConfig:
    return BackendConfig.model_validate({"kind": "openai", "model": "m",
                                         "base_url": "http://127.0.0.1:9/v1",
                                         "cache": str(tmp_path / "cache.sqlite"), **values})


def test_configurations_that_differ_only_in_sampling_share_one_backend(tmp_path: Path) -> None:
    greedy = _config(tmp_path, temperature=0.0, max_tokens=96)
    hot = _config(tmp_path, temperature=1.0, seed=1, top_p=0.9)
    with BackendPool() as pool:
        first = pool.get(greedy)
        assert pool.get(hot) is first
        assert pool.opened == 1


def test_another_model_endpoint_or_cache_is_another_backend(tmp_path: Path) -> None:
    base = _config(tmp_path)
    others = [_config(tmp_path, model="other"),
              _config(tmp_path, base_url="http://127.0.0.1:10/v1"),
              _config(tmp_path, cache=str(tmp_path / "elsewhere.sqlite")),
              _config(tmp_path, max_concurrency=2)]
    assert len({backend_key(config) for config in [base, *others]}) == 5
    with BackendPool() as pool:
        backends = [pool.get(config) for config in [base, *others]]
        assert len({id(backend) for backend in backends}) == 5 and pool.opened == 5


def test_closing_the_pool_closes_every_backend_once(tmp_path: Path) -> None:
    closed: list[str] = []
    pool = BackendPool()
    for model in ("a", "b"):
        backend = pool.get(_config(tmp_path, model=model))
        backend.close = lambda name=model: closed.append(name)  # type: ignore[method-assign]
    pool.close()
    pool.close()
    assert closed == ["a", "b"]
