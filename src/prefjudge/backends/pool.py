"""Backends shared by the stages of one run: each distinct backend is opened once.

``prefjudge run`` asks the pool for every stage's backend. Two configurations that
differ only in sampling (temperature, top-p, reply length, seed: what each stage passes
with its requests) name the same backend, so an experiment whose models and judge are
the embedded model at different temperatures starts one engine, not one per stage::

    with BackendPool() as pool:
        generate_file(settings, pool.get(model_config), reporter)
        judge_file(settings, pool.get(judge_config), reporter)
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import TYPE_CHECKING

from prefjudge.backends import create_backend

if TYPE_CHECKING:
    from prefjudge.backends.base import Backend
    from prefjudge.backends.config import BackendConfig

SAMPLING_FIELDS = frozenset({"temperature", "top_p", "max_tokens", "seed"})
"""Settings a stage sends with each request: they never make another backend."""


def backend_key(config: BackendConfig) -> str:
    """What makes a backend distinct: every setting but the sampling ones, as JSON.

    Args:
        config: A stage's backend configuration.

    Returns:
        The same text for configurations that can share one backend.
    """
    return json.dumps(config.model_dump(mode="json", exclude=set(SAMPLING_FIELDS)),
                      sort_keys=True)


class BackendPool:
    """Opens each distinct backend on first use and closes them all at the end.

    Attributes:
        opened: How many backends were created (engine starts, for an in-process model).
    """

    def __init__(self) -> None:
        self._backends: dict[str, Backend] = {}
        self.opened = 0

    def get(self, config: BackendConfig) -> Backend:
        """The backend for ``config``, created the first time it is asked for.

        Args:
            config: The stage's backend configuration (its sampling settings are ignored).

        Returns:
            The open backend; the pool closes it.

        Raises:
            BackendError: When the backend cannot be created.
        """
        key = backend_key(config)
        backend = self._backends.get(key)
        if backend is None:
            backend = create_backend(config)
            self._backends[key] = backend
            self.opened += 1
        return backend

    def close(self) -> None:
        """Close every backend opened, in the order they were opened."""
        backends, self._backends = list(self._backends.values()), {}
        for backend in backends:
            backend.close()

    def __enter__(self) -> BackendPool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


__all__ = ["SAMPLING_FIELDS", "BackendPool", "backend_key"]
