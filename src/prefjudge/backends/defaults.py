"""The backend configuration's name and defaults, as plain constants that cost nothing to import.

:class:`~prefjudge.backends.config.BackendConfig` (pydantic) takes its defaults from
:data:`BACKEND_DEFAULTS`, and the configuration file's name is :data:`CONFIG_NAME`; the
command line shows both in ``--help`` and may import them from here without pydantic.
Standard library only.
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
