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
(:mod:`.embedded`), each registered by name with its factory, extra and options
(:mod:`.registry`, the built-ins in :mod:`.kinds`); a new kind registers itself the same
way. Their heavy dependencies are imported only when a backend is created.

``backend.identity()`` says which model answers (kind, model id, endpoint, weights, output
options); every cache key is built from it. The ``openai`` backend may send the requests of
one model to several replicas (``base_url`` a list): its identity names the set of replicas,
never the one that answered, so the cache is the same whichever did. Only valid replies
are cached; inside ``with backend.fresh_calls():`` the cache is not read (but still
written), e.g. to retry errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefjudge.backends import kinds as _kinds  # noqa: F401 - registers the built-in kinds
from prefjudge.backends.extras import missing_extra
from prefjudge.backends.registry import (
    BACKEND_KINDS,
    BackendKindSpec,
    Needs,
    backend_kind,
    backend_kinds,
    register_backend,
    unregister_backend,
)
from prefjudge.lazy import lazy_getattr

if TYPE_CHECKING:
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
    from prefjudge.backends.config import BackendConfig

_LAZY = {
    **dict.fromkeys(
        ("Backend", "BackendError", "Message", "NoModel", "Request", "Result", "Sampling",
         "Usage", "chat"),
        "prefjudge.backends.base",
    ),
    **dict.fromkeys(("CacheError", "ResponseCache", "default_cache_path"),
                    "prefjudge.backends.cache"),
}
"""Names imported on first use, so that reading the registry (``--help``) costs no pydantic."""


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "BACKEND_KINDS",
    "Backend",
    "BackendError",
    "BackendKindSpec",
    "CacheError",
    "Message",
    "Needs",
    "NoModel",
    "Request",
    "ResponseCache",
    "Result",
    "Sampling",
    "Usage",
    "backend_kind",
    "backend_kinds",
    "chat",
    "create_backend",
    "default_cache_path",
    "register_backend",
    "unregister_backend",
]


def create_backend(config: BackendConfig) -> Backend:
    """Build the backend a configuration names.

    Args:
        config: Backend settings (from CLI flags and ``prefjudge.toml``); ``config.kind``
            names a registered kind (:data:`BACKEND_KINDS`), whose factory builds it.

    Returns:
        A ready backend; close it (or use it as a context manager) when done.

    Raises:
        BackendError: When the configuration is incomplete, the backend's libraries are
            not installed (:func:`~prefjudge.backends.extras.missing_extra` says what to
            install), or the cache file is damaged.
    """
    from prefjudge.backends.base import BackendError
    from prefjudge.backends.cache import CacheError, ResponseCache

    missing = missing_extra(config.kind)
    if missing:  # one line saying what to install, never an ImportError traceback
        raise BackendError(missing)
    try:
        cache = None if config.no_cache else ResponseCache(config.cache_path())
    except CacheError as exc:  # a damaged cache file: one line naming it, never a traceback
        raise BackendError(str(exc)) from exc
    spec = backend_kind(config.kind)
    try:
        if spec is None:
            raise BackendError(f"unknown backend {config.kind!r}")
        return spec.factory(config, cache)
    except BaseException:
        if cache is not None:
            cache.close()
        raise
