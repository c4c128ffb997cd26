"""Backend configuration: the settings model, read from ``prefjudge.toml`` and flags.

Precedence, lowest first: built-in defaults, the ``[backend]`` table, the stage's own
``[backend.<stage>]`` table, then command-line flags::

    # prefjudge.toml
    [backend]
    kind = "openai"                      # openai | vllm | embedded (a registered kind)
    base_url = "http://127.0.0.1:8000/v1"  # or a list: replicas of one model
    model = "Qwen/Qwen2.5-Coder-7B-Instruct"
    api_key_env = "OPENAI_API_KEY"       # the variable's name, never the key itself
    max_concurrency = 16
    max_failure_streak = 20              # failed calls in a row that stop a stage (0: never)
    cache = ".prefjudge-cache.sqlite"    # relative paths are relative to this file

    [backend.engine_args]                # vllm.LLM(...) arguments (vllm, embedded)
    tensor_parallel_size = 2

    [backend.judge]                      # overrides for the `judge` stage only
    model = "meta-llama/Llama-3.3-70B-Instruct"

Commands take the flags with :func:`backend_options`, which hands them a validated
:class:`BackendConfig`; :func:`prefjudge.backends.create_backend` builds the backend.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from prefjudge.backends.defaults import BACKEND_DEFAULTS, CONFIG_NAME
from prefjudge.backends.registry import BACKEND_KINDS, literal_choices

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    from prefjudge.backends.base import Sampling

BackendKind = Literal[tuple(BACKEND_KINDS)]  # type: ignore[valid-type]
"""The built-in kinds' names (a snapshot of :data:`BACKEND_KINDS` when this module is
imported; the configuration accepts every kind registered by the time it is checked)."""
PATH_FIELDS = ("cache", "checkpoint_dir")


class ConfigError(ValueError):
    """A configuration file or flag is wrong (says where)."""


class BackendConfig(BaseModel):
    """Everything needed to build a backend and the default sampling of a stage.

    Attributes:
        kind: ``openai`` (any OpenAI-compatible HTTP endpoint), ``vllm`` (in-process
            engine), ``embedded`` (SmolLM2-135M via vLLM; chance-level judge), or another
            kind of :data:`~prefjudge.backends.registry.BACKEND_KINDS`.
        model: Model name (openai), or model name/folder (vllm).
        base_url: Endpoint of an OpenAI-compatible server; None means OpenAI's. A list
            names replicas of one model (each request goes to the least-loaded one; a
            failed call is retried on another); a list of one is that URL.
        api_key_env: Name of the environment variable that holds the API key.
        model_id: Model name in results and cache keys (defaults to the model name). The
            cache keys also cover the endpoint (and, in process, the weights), so set it
            only when one URL serves different weights under one name over time.
        endpoint_id: The endpoint in cache keys and output bindings instead of the URL
            (several replicas: their sorted URLs), e.g. to keep a deployment's cache and
            resumable outputs while its replicas change (openai).
        max_concurrency: Most HTTP requests in flight at once, per endpoint (each replica
            of ``base_url`` has its own limit).
        timeout: Deadline in seconds for one whole HTTP call (connect and the complete
            reply); a call past it is retried like any timeout.
        max_retries: Transport retries per call (timeouts, 429, 5xx, malformed bodies).
        max_failure_streak: Calls that failed in a row, each after its retries, with no
            answer in between, that stop the stage with an error naming the URL, the model
            and the last error (a dead or broken server), instead of every request
            spending its retries in backoff; 0 never stops (openai).
        max_output_retries: Repair attempts for structured replies that fail validation.
        strict_schema: Send ``strict: true`` with JSON schemas (OpenAI strict mode).
        extra_body: Extra JSON fields for every HTTP request.
        engine_args: ``vllm.LLM`` keyword arguments (vllm, embedded).
        checkpoint_dir: Where the embedded model's converted checkpoint lives.
        cache: Response cache file (default ``$PREFJUDGE_CACHE``, else
            ``~/.cache/prefjudge/responses.sqlite``); ``prefjudge cache info|clear``.
        no_cache: Neither read nor write the response cache.
        temperature: Default sampling temperature for the stage.
        top_p: Default nucleus mass.
        max_tokens: Default reply length limit.
        seed: Default sampling seed.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str = BACKEND_DEFAULTS["kind"]
    model: str | None = None
    base_url: str | list[str] | None = None
    api_key_env: str = BACKEND_DEFAULTS["api_key_env"]
    model_id: str | None = None
    endpoint_id: str | None = None
    max_concurrency: int = Field(default=BACKEND_DEFAULTS["max_concurrency"], ge=1)
    timeout: float = Field(default=BACKEND_DEFAULTS["timeout"], gt=0)
    max_retries: int = Field(default=BACKEND_DEFAULTS["max_retries"], ge=0)
    max_failure_streak: int = Field(default=BACKEND_DEFAULTS["max_failure_streak"], ge=0)
    max_output_retries: int = Field(default=BACKEND_DEFAULTS["max_output_retries"], ge=0)
    strict_schema: bool = False
    extra_body: dict[str, Any] = Field(default_factory=dict)
    engine_args: dict[str, Any] = Field(default_factory=dict)
    checkpoint_dir: str | None = None
    cache: str | None = None
    no_cache: bool = False
    temperature: float = Field(default=BACKEND_DEFAULTS["temperature"], ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=BACKEND_DEFAULTS["max_tokens"], ge=1)
    seed: int | None = BACKEND_DEFAULTS["seed"]

    @field_validator("kind", mode="plain")
    @classmethod
    def _registered(cls, value: Any) -> str:
        """A registered kind; else the error pydantic gives a literal of the kinds."""
        if isinstance(value, str) and value in BACKEND_KINDS:
            return value
        raise PydanticCustomError("literal_error", "Input should be {expected}",
                                  {"expected": literal_choices(BACKEND_KINDS)})

    @field_validator("base_url")
    @classmethod
    def _replicas(cls, value: str | list[str] | None) -> str | list[str] | None:
        """One URL stays a string (a list of one becomes it); several must be distinct."""
        if value is None or isinstance(value, str):
            return value
        from prefjudge.backends.openai_http import replica_urls

        urls = replica_urls(value)  # ValueError (empty, repeated) becomes a ConfigError
        return urls[0] if len(urls) == 1 else urls

    def cache_path(self) -> Path:
        """Return the response cache file this configuration uses."""
        from prefjudge.backends.cache import default_cache_path

        return Path(self.cache).expanduser() if self.cache else default_cache_path()

    def sampling(self, **stage_defaults: Any) -> Sampling:
        """Return sampling parameters: the user's settings over the stage's defaults.

        Args:
            **stage_defaults: The stage's own defaults (e.g. ``max_tokens=300``); a value
                the user set in ``prefjudge.toml`` or by a flag wins over them.

        Returns:
            The sampling parameters.
        """
        from prefjudge.backends.base import Sampling

        values: dict[str, Any] = {}
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            if name in self.model_fields_set or name not in stage_defaults:
                values[name] = getattr(self, name)
            else:
                values[name] = stage_defaults[name]
        if "stop" in stage_defaults:
            values["stop"] = tuple(stage_defaults["stop"])
        return Sampling(**values)


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """Return the configuration file to read, if any.

    Args:
        explicit: A path given with ``--config`` (must exist).

    Returns:
        ``explicit``, else ``$PREFJUDGE_CONFIG``, else ``./prefjudge.toml`` when it exists,
        else None.

    Raises:
        ConfigError: When an explicitly named file does not exist.
    """
    named = explicit or os.environ.get("PREFJUDGE_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"configuration file not found: {path}")
        return path
    local = Path.cwd() / CONFIG_NAME
    return local if local.is_file() else None


def _read_backend_tables(path: Path, stage: str | None) -> dict[str, Any]:
    from prefjudge.io import InputError, read_text

    try:
        data = tomllib.loads(read_text(path))
    except InputError as exc:
        raise ConfigError(str(exc).splitlines()[-1].strip()) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML (values nested too deeply)") from None
    table = data.get("backend", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [backend] must be a table")
    fields = set(BackendConfig.model_fields)
    merged = {k: v for k, v in table.items() if k in fields}
    stages = {k: v for k, v in table.items() if k not in fields}
    for name, value in stages.items():
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: unknown setting backend.{name}")
    if stage is not None and stage in stages:
        unknown = set(stages[stage]) - fields
        if unknown:
            raise ConfigError(f"{path}: unknown setting(s) in [backend.{stage}]: {sorted(unknown)}")
        merged.update(stages[stage])
    for name in PATH_FIELDS:
        if isinstance(merged.get(name), str):
            value = Path(merged[name]).expanduser()
            merged[name] = str(value if value.is_absolute() else path.parent / value)
    return merged


def load_backend_config(
    config_file: str | os.PathLike[str] | None = None,
    *,
    stage: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> BackendConfig:
    """Merge defaults, ``prefjudge.toml`` and flags into a :class:`BackendConfig`.

    Args:
        config_file: An explicit configuration file (else see :func:`find_config_file`).
        stage: The stage whose ``[backend.<stage>]`` table applies (e.g. ``judge``).
        overrides: Flag values; None values mean "not given".

    Returns:
        The validated configuration.

    Raises:
        ConfigError: On an unreadable file, unknown settings or invalid values.
    """
    path = find_config_file(config_file)
    merged: dict[str, Any] = _read_backend_tables(path, stage) if path else {}
    for name, value in (overrides or {}).items():
        if value is None:
            continue
        if name in ("engine_args", "extra_body"):
            merged[name] = {**merged.get(name, {}), **value}
        else:
            merged[name] = value
    try:
        return BackendConfig.model_validate(merged)
    except RecursionError:
        where = f"{path} + flags" if path else "flags"
        raise ConfigError(f"invalid backend settings ({where}): values nested too deeply") from None
    except ValidationError as exc:
        where = f"{path} + flags" if path else "flags"
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid backend settings ({where}): {problems}") from exc
