"""The backend configuration's name and defaults, as plain constants that cost nothing to import.

:class:`~prefjudge.backends.config.BackendConfig` (pydantic) takes its defaults from
:data:`BACKEND_DEFAULTS`, and the configuration file's name is :data:`CONFIG_NAME`; the
command line shows both in ``--help`` and may import them from here without pydantic; so
does ``prefjudge models serve`` with the model server's defaults (:data:`SERVE_DEFAULTS`,
used by :mod:`prefjudge.backends.serve`). Standard library only.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

CONFIG_NAME = "prefjudge.toml"
"""The configuration file read from the working folder when present."""

BACKEND_DEFAULTS: MappingProxyType[str, Any] = MappingProxyType({
    "kind": "openai",
    "api_key_env": "OPENAI_API_KEY",
    "max_concurrency": 8,
    "timeout": 120.0,
    "max_retries": 6,
    "max_failure_streak": 20,
    "max_output_retries": 2,
    "temperature": 0.0,
    "max_tokens": 1024,
    "seed": None,
})
"""The defaults of the :class:`~prefjudge.backends.config.BackendConfig` fields the command
line's flags set (read-only)."""

DEFAULT_HOST = "127.0.0.1"
"""The address the model server listens on (``prefjudge models serve --host``)."""
DEFAULT_PORT = 8000
"""The port the model server listens on."""
DEFAULT_MAX_MODEL_LEN = 4096
"""The context length the model server is started with."""
EMBEDDED_SERVED_NAME = "smollm2"
"""The name the embedded SmolLM2 checkpoint is served under (``--model`` in requests)."""

SERVE_DEFAULTS: MappingProxyType[str, Any] = MappingProxyType({
    "host": DEFAULT_HOST,
    "port": DEFAULT_PORT,
    "max_model_len": DEFAULT_MAX_MODEL_LEN,
    "embedded_name": EMBEDDED_SERVED_NAME,
})
"""The model server's defaults (:mod:`prefjudge.backends.serve`), read-only, by the names
``prefjudge models serve`` shows them under."""
