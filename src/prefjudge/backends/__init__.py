"""Model backends: one protocol, one file per backend, a shared SQLite response cache.

A stage builds :class:`Request` records (optionally with a pydantic ``schema_model`` for
structured output), hands the whole list to ``backend.generate`` and gets one
:class:`Result` per request back, in order::

    from prefjudge.backends import Sampling, chat, create_backend
    from prefjudge.backends.config import BackendConfig

    backend = create_backend(BackendConfig(kind="openai", base_url=URL, model="m"))
    requests = [chat(p.id, ("system", SYSTEM), p.text, schema_model=Verdict) for p in pairs]
    with backend:
        for result in backend.generate(requests):
            verdict = result.parsed if result.ok else None  # errors keep the raw text

Backends: ``openai`` (:mod:`.openai_http`), ``vllm`` (:mod:`.vllm_inproc`) and ``embedded``
(:mod:`.embedded`). Their heavy dependencies are imported only when a backend is created.

``backend.identity()`` says which model answers (kind, model id, endpoint, weights, output
options); every cache key is built from it. The ``openai`` backend may send the requests of
one model to several replicas (``base_url`` a list): its identity names the set of replicas,
never the one that answered, so the cache is the same whichever did. Only valid replies
are cached; inside ``with backend.fresh_calls():`` the cache is not read (but still
written), e.g. to retry errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefjudge.backends.base import (
    Backend,
    BackendError,
    Message,
    NoModel,
    Request,
    Result,
    Sampling,
    Usage,
    chat,
)
from prefjudge.backends.cache import CacheError, ResponseCache, default_cache_path
from prefjudge.backends.extras import missing_extra

if TYPE_CHECKING:
    from prefjudge.backends.config import BackendConfig

__all__ = [
    "Backend",
    "BackendError",
    "Message",
    "NoModel",
    "Request",
    "ResponseCache",
    "Result",
    "Sampling",
    "Usage",
    "chat",
    "create_backend",
    "default_cache_path",
]


def create_backend(config: BackendConfig) -> Backend:
    """Build the backend a configuration names.

    Args:
        config: Backend settings (from CLI flags and ``prefjudge.toml``).

    Returns:
        A ready backend; close it (or use it as a context manager) when done.

    Raises:
        BackendError: When the configuration is incomplete, the backend's libraries are
            not installed (:func:`~prefjudge.backends.extras.missing_extra` says what to
            install), or the cache file is damaged.
    """
    missing = missing_extra(config.kind)
    if missing:  # one line saying what to install, never an ImportError traceback
        raise BackendError(missing)
    try:
        cache = None if config.no_cache else ResponseCache(config.cache_path())
    except CacheError as exc:  # a damaged cache file: one line naming it, never a traceback
        raise BackendError(str(exc)) from exc
    try:
        if config.kind == "openai":
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
        if config.kind == "vllm":
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
        if config.kind == "embedded":
            from prefjudge.backends.embedded import EmbeddedBackend

            return EmbeddedBackend(
                checkpoint_dir=config.checkpoint_dir,
                engine_args=config.engine_args,
                cache=cache,
                max_output_retries=config.max_output_retries,
            )
        raise BackendError(f"unknown backend {config.kind!r}")
    except BaseException:
        if cache is not None:
            cache.close()
        raise
