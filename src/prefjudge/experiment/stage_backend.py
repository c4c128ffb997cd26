"""The model backend a stage asks: the experiment file's backend settings, its cache.

:func:`stage_backend` for any stage that asks a model (augment's selector, the judge, the
personas), :func:`model_backend` for a model's own answers (generate).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefjudge.backends.config import BackendConfig
from prefjudge.experiment.config import BackendSpec, Experiment, ModelSpec

__all__ = ["model_backend", "stage_backend"]


def stage_backend(
    spec: BackendSpec,
    cache: Path,
    *,
    max_tokens: int | None = None,
    temperature: float | None = None,
    seed: int | None = None,
) -> BackendConfig:
    """The backend configuration of one stage: the spec's backend, the experiment's cache.

    Only what the experiment file sets is set (so each stage's own sampling defaults apply
    to the rest, as for the command); the user's ``prefjudge.toml`` is never read.

    Args:
        spec: Who answers (backend, model, endpoint, key variable).
        cache: The experiment's response cache.
        max_tokens: The reply length, when the experiment sets one.
        temperature: The sampling temperature (models).
        seed: The sampling seed, when set.

    Returns:
        The configuration (its sampling settings are the stage's: see
        :meth:`BackendConfig.sampling`).
    """
    values: dict[str, Any] = {"kind": spec.backend, "cache": str(cache)}
    for name, value in (
        ("model", spec.model),
        ("base_url", spec.base_url),
        ("api_key_env", spec.api_key_env),
        ("timeout", spec.request_timeout),
        ("max_retries", spec.max_retries),
        ("max_failure_streak", spec.max_failure_streak),
        ("max_tokens", max_tokens),
        ("temperature", temperature),
        ("seed", seed),
    ):
        if value is not None and value != "":
            values[name] = value
    return BackendConfig.model_validate(values)


def model_backend(experiment: Experiment, model: ModelSpec, cache: Path) -> BackendConfig:
    """A model's backend: its temperature and seed, its reply length or the experiment's."""
    max_tokens = model.max_tokens or experiment.generate.max_tokens
    return stage_backend(
        model, cache, max_tokens=max_tokens, temperature=model.temperature, seed=model.seed
    )
