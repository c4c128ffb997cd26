"""Command-line flags shared by commands: the backend flags over ``prefjudge.toml``."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import click

from prefjudge.backends.config import CONFIG_NAME, ConfigError, load_backend_config


def _parse_pairs(pairs: tuple[str, ...], flag: str) -> dict[str, Any] | None:
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=flag)
        try:
            out[key.replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.replace("-", "_")] = raw
    return out


_FLAGS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option(
        "--config",
        "pj_config",
        type=click.Path(dir_okay=False),
        help=f"Configuration file (default: ./{CONFIG_NAME} when present).",
    ),
    click.option(
        "--backend",
        "pj_kind",
        type=click.Choice(["openai", "vllm", "embedded"]),
        help="Model backend: an OpenAI-compatible server, in-process vLLM, or the embedded "
        "SmolLM2 (chance-level; for smoke runs).",
    ),
    click.option("--model", "pj_model", help="Model name (openai) or name/folder (vllm)."),
    click.option("--base-url", "pj_base_url", help="OpenAI-compatible endpoint, e.g. URL/v1."),
    click.option(
        "--api-key-env",
        "pj_api_key_env",
        metavar="NAME",
        help="Environment variable holding the API key [OPENAI_API_KEY].",
    ),
    click.option("--model-id", "pj_model_id", help="Model identity for the cache."),
    click.option(
        "--max-concurrency", "pj_max_concurrency", type=int, help="HTTP requests in flight [8]."
    ),
    click.option(
        "--timeout",
        "pj_timeout",
        type=float,
        help="Deadline in seconds for each HTTP call as a whole (connect and the complete "
        "reply); retried on expiry [120].",
    ),
    click.option(
        "--max-retries", "pj_max_retries", type=int, help="Retries on timeouts/429/5xx [6]."
    ),
    click.option(
        "--max-output-retries",
        "pj_max_output_retries",
        type=int,
        help="Retries of replies that fail schema validation [2].",
    ),
    click.option(
        "--engine-arg",
        "pj_engine_args",
        multiple=True,
        metavar="KEY=VALUE",
        help="vllm.LLM argument (repeatable), e.g. tensor_parallel_size=2.",
    ),
    click.option("--temperature", "pj_temperature", type=float, help="Sampling temperature."),
    click.option("--max-tokens", "pj_max_tokens", type=int, help="Reply length limit."),
    click.option("--seed", "pj_seed", type=int, help="Sampling seed."),
    click.option(
        "--cache",
        "pj_cache",
        type=click.Path(dir_okay=False),
        help="Response cache file [~/.cache/prefjudge/responses.sqlite].",
    ),
    click.option("--no-cache", "pj_no_cache", is_flag=True, help="Do not use the response cache."),
]


def backend_options(stage: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a click command with the backend flags; it receives ``backend_config``.

    Args:
        stage: Stage name whose ``[backend.<stage>]`` table applies.

    Returns:
        A decorator. The command gets a keyword argument ``backend_config``
        (:class:`BackendConfig`) instead of the individual flags.
    """

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            flags = {k[3:]: kwargs.pop(k) for k in list(kwargs) if k.startswith("pj_")}
            config_file = flags.pop("config")
            flags["engine_args"] = _parse_pairs(flags.pop("engine_args"), "--engine-arg")
            if not flags["no_cache"]:
                flags["no_cache"] = None
            try:
                kwargs["backend_config"] = load_backend_config(
                    config_file, stage=stage, overrides=flags
                )
            except ConfigError as exc:
                raise click.UsageError(str(exc)) from exc
            return func(*args, **kwargs)

        for option in reversed(_FLAGS):
            wrapper = option(wrapper)
        return wrapper

    return decorate
