"""Command-line flags shared by commands: the one vocabulary, and old names kept for a release.

The vocabulary (README, "Command-line vocabulary"):

* ``--seed`` is the model's sampling seed (a backend flag); ``--ci-seed`` seeds intervals
  (bootstrap resamples), so changing it never changes a request.
* ``--bootstrap N`` is every bootstrap resample count.
* ``--request-timeout`` is the HTTP deadline; ``--test-timeout`` is ``score``'s sandbox wall time.
* ``--format table|json`` chooses what a command prints; ``--json FILE`` writes a
  machine-readable file.
* an input that may be a hub dataset takes ``--split`` and ``--subset``
  (:func:`source_options`); ``--limit N`` keeps its first N records.

:func:`renamed_option` keeps an old flag name working for one release: it is hidden from
``--help``, prints a warning naming the new flag on stderr and forwards the value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from prefjudge.cli.defaults import BACKEND_DEFAULTS, BACKEND_KINDS, CONFIG_NAME

F = TypeVar("F", bound=Callable[..., Any])

GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
"""Where a value counts as set by the user (not a default)."""


def _warn_renamed(old: str, new: str, note: str) -> None:
    message = f"warning: {old} is deprecated and will be removed in the next release; use {new}"
    click.echo(message + (f" ({note})" if note else "") + ".", err=True)


def renamed_option(
    old: str,
    new: str,
    dest: str,
    *,
    note: str = "",
    flag_value: Any = None,
    **option_kwargs: Any,
) -> Callable[[F], F]:
    """Keep an old flag name working for one release: hidden, warns, forwards the value.

    Put it above the option it forwards to (or above ``backend_options`` for a backend
    flag). Giving both the old and the new name is a usage error.

    Args:
        old: The old flag, e.g. ``--n-boot``.
        new: The flag that replaces it, e.g. ``--bootstrap`` (named in the warning).
        dest: The command parameter the value goes to (the new option's name).
        note: Extra words for the warning, e.g. what the old name means now.
        flag_value: For an old on/off switch: the value ``dest`` gets when it is given
            (e.g. ``"json"`` for the old ``--json`` switch that is now ``--format json``).
        **option_kwargs: ``type`` and the like, as for :func:`click.option`.

    Returns:
        A decorator for a click command.
    """
    hidden_name = "renamed_" + old.lstrip("-").replace("-", "_") + "__" + dest
    is_flag = flag_value is not None

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden_name)
            if (value if is_flag else value is not None):
                ctx = click.get_current_context()
                if ctx.get_parameter_source(dest) in GIVEN:
                    raise click.UsageError(f"{old} is the old name of {new}: give {new} only")
                _warn_renamed(old, new, note)
                kwargs[dest] = flag_value if is_flag else value
                ctx.set_parameter_source(dest, ParameterSource.COMMANDLINE)
            return func(*args, **kwargs)

        if is_flag:
            option_kwargs["is_flag"] = True
        return click.option(old, hidden_name, hidden=True, default=None, **option_kwargs)(
            wrapper
        )  # type: ignore[return-value]

    return decorate


def apply_options(func: F, options: list[Callable[[Any], Any]]) -> F:
    """Apply a list of option decorators to ``func``: the first is listed first in ``--help``.

    Args:
        func: The command function.
        options: Decorators such as :func:`click.option`, in the order ``--help`` shows them.

    Returns:
        ``func`` with every option.
    """
    for option in reversed(options):
        func = option(func)
    return func


# --------------------------------------------------------------------------- shared options


def bootstrap_option(
    default: int = 1000, *, minimum: int = 0, help: str = "Bootstrap resamples for the intervals."
) -> Callable[[F], F]:
    """Add ``--bootstrap N`` (the command receives ``bootstrap``).

    Args:
        default: Resamples when the flag is not given.
        minimum: Fewest resamples accepted.
        help: The flag's help text.

    Returns:
        A decorator for a click command.
    """
    return click.option(
        "--bootstrap",
        "bootstrap",
        type=click.IntRange(min=minimum),
        default=default,
        show_default=True,
        help=help,
    )


def ci_seed_option(func: F) -> F:
    """Add ``--ci-seed`` (the command receives ``ci_seed``): the seed of the intervals."""
    return click.option(
        "--ci-seed",
        "ci_seed",
        type=int,
        default=0,
        show_default=True,
        help="Seed of the bootstrap intervals (never changes a model request).",
    )(func)


def old_ci_seed_option(func: F) -> F:
    """Keep ``--seed`` as the old name of ``--ci-seed`` in commands that query no model."""
    return renamed_option(
        "--seed",
        "--ci-seed",
        "ci_seed",
        type=int,
        note="--seed is the model's sampling seed in the commands that query a model",
    )(func)


def format_option(func: F) -> F:
    """Add ``--format table|json`` (the command receives ``output_format``)."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="What to print on stdout: a table, or JSON.",
    )(func)


def old_json_switch(func: F) -> F:
    """Keep the old ``--json`` switch as ``--format json``."""
    return renamed_option("--json", "--format json", "output_format", flag_value="json")(func)


# --------------------------------------------------------------------------- data sources


def source_options(what: str) -> Callable[[F], F]:
    """Add ``--split`` and ``--subset`` for inputs that may name a hub dataset.

    The command receives ``split`` and ``subset`` (None when not given) and passes them to
    :func:`prefjudge.scoring.sources.load_task_source` or
    :func:`prefjudge.judge.pairs.load_preference_source`.

    Args:
        what: The input(s) they apply to, as ``--help`` names them (e.g. ``TASKS``).

    Returns:
        A decorator for a click command.
    """
    split = click.option(
        "--split",
        "split",
        metavar="NAME",
        help=f"Split of the hub dataset or dataset folder given as {what} (BigCodeBench's "
        "splits are versions, e.g. v0.1.4) [default: the dataset's own]. Not used for files.",
    )
    subset = click.option(
        "--subset",
        "subset",
        metavar="NAME",
        help=f"Subset of the hub dataset given as {what}: LiveCodeBench's version tag "
        "(release_v5), CodePrefBench's file (human-preference, correctness, efficiency, "
        "security), or a dataset's configuration [default: the dataset's own].",
    )

    def decorate(func: F) -> F:
        return split(subset(func))

    return decorate


def source_failure(exc: Exception, param_hint: str) -> click.ClickException:
    """The click error for a source that cannot be used (see ``prefjudge.scoring.sources``).

    An unknown name, split or subset is a usage error naming the parameter (exit 2); a hub
    that cannot be used (library missing, unreachable and not cached) is a failure (exit 1).

    Args:
        exc: A ``SourceError``.
        param_hint: The parameter it came from, e.g. ``TASKS`` or ``--tasks``.

    Returns:
        The exception to raise.
    """
    from prefjudge.scoring.sources import UnknownSourceError

    if isinstance(exc, UnknownSourceError):
        return click.BadParameter(str(exc), param_hint=param_hint)
    return click.ClickException(str(exc))


# --------------------------------------------------------------------------- backend flags


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


def _default(name: str) -> Any:
    return BACKEND_DEFAULTS[name]


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _backend_flags(sampling: Mapping[str, Any], seed_help: str | None) -> list[Decorator]:
    """The backend flags, with the defaults that apply when neither a flag nor the file sets one.

    Defaults are shown in ``--help``; a value counts as given only when it comes from the
    command line, so ``prefjudge.toml`` still wins over a default (see :func:`backend_options`).
    The defaults come from :mod:`prefjudge.cli.defaults`, so ``--help`` imports no backend.
    """
    return [*_endpoint_flags(), *_call_flags(), *_sampling_flags(sampling, seed_help)]


def _endpoint_flags() -> list[Decorator]:
    """``--config`` to ``--endpoint-id``: which model, where, and under which identity."""
    return [
        click.option(
            "--config",
            "pj_config",
            type=click.Path(dir_okay=False),
            help=f"Configuration file [default: ./{CONFIG_NAME} when present]. Its settings "
            "replace the defaults shown here; flags replace both.",
        ),
        click.option(
            "--backend",
            "pj_kind",
            type=click.Choice(list(BACKEND_KINDS)),
            default=_default("kind"),
            show_default=True,
            help="Model backend: an OpenAI-compatible server, in-process vLLM, or the embedded "
            "SmolLM2 (chance-level; for smoke runs).",
        ),
        click.option("--model", "pj_model", help="Model name (openai) or name/folder (vllm)."),
        click.option(
            "--base-url",
            "pj_base_url",
            multiple=True,
            help="OpenAI-compatible endpoint, e.g. URL/v1 [default: OpenAI's]. Repeat it for "
            "replicas of one model: each request goes to the least-loaded one, and a failed "
            "call is retried on another.",
        ),
        click.option(
            "--api-key-env",
            "pj_api_key_env",
            metavar="NAME",
            default=_default("api_key_env"),
            show_default=True,
            help="Environment variable holding the API key.",
        ),
        click.option(
            "--model-id",
            "pj_model_id",
            help="Model identity for results and the cache [default: the model name].",
        ),
        click.option(
            "--endpoint-id",
            "pj_endpoint_id",
            metavar="NAME",
            help="Endpoint identity for the cache and resumable outputs [default: the base "
            "URL; with replicas, their sorted URLs]. Keeps one identity while replicas change.",
        ),
    ]


def _call_flags() -> list[Decorator]:
    """``--max-concurrency`` to ``--engine-arg``: how calls are made, retried and given up."""
    return [
        click.option(
            "--max-concurrency",
            "pj_max_concurrency",
            type=int,
            default=_default("max_concurrency"),
            show_default=True,
            help="HTTP requests in flight per endpoint (each --base-url replica has its own "
            "limit).",
        ),
        click.option(
            "--request-timeout",
            "pj_timeout",
            type=float,
            default=_default("timeout"),
            show_default=True,
            help="Deadline in seconds for each HTTP call as a whole (connect and the complete "
            "reply); retried on expiry.",
        ),
        click.option(
            "--max-retries",
            "pj_max_retries",
            type=int,
            default=_default("max_retries"),
            show_default=True,
            help="Retries on timeouts/429/5xx.",
        ),
        click.option(
            "--max-failure-streak",
            "pj_max_failure_streak",
            type=int,
            default=_default("max_failure_streak"),
            show_default=True,
            metavar="N",
            help="Stop after N calls in a row failed (each after its retries) with no answer "
            "in between: a dead or broken server (0: never stop).",
        ),
        click.option(
            "--max-output-retries",
            "pj_max_output_retries",
            type=int,
            default=_default("max_output_retries"),
            show_default=True,
            help="Retries of replies that fail schema validation.",
        ),
        click.option(
            "--engine-arg",
            "pj_engine_args",
            multiple=True,
            metavar="KEY=VALUE",
            help="vllm.LLM argument (repeatable), e.g. tensor_parallel_size=2.",
        ),
    ]


def _sampling_flags(sampling: Mapping[str, Any], seed_help: str | None) -> list[Decorator]:
    """``--temperature`` to ``--no-cache``: the command's sampling defaults and the cache."""
    seed = sampling.get("seed", _default("seed"))
    return [
        click.option(
            "--temperature",
            "pj_temperature",
            type=float,
            default=sampling.get("temperature", _default("temperature")),
            show_default=True,
            help="Sampling temperature.",
        ),
        click.option(
            "--max-tokens",
            "pj_max_tokens",
            type=int,
            default=sampling.get("max_tokens", _default("max_tokens")),
            show_default=True,
            help="Reply length limit.",
        ),
        click.option(
            "--seed",
            "pj_seed",
            type=int,
            default=seed,
            show_default=seed is not None,
            help=seed_help
            or (
                "Sampling seed of the model's requests."
                + ("" if seed is not None else " [default: none: not sent]")
            ),
        ),
        click.option(
            "--cache",
            "pj_cache",
            type=click.Path(dir_okay=False),
            help="Response cache file [default: $PREFJUDGE_CACHE, else "
            "~/.cache/prefjudge/responses.sqlite].",
        ),
        click.option(
            "--no-cache", "pj_no_cache", is_flag=True, help="Do not use the response cache."
        ),
    ]


def backend_options(
    stage: str | None = None,
    *,
    sampling: Mapping[str, Any] | None = None,
    seed_help: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a click command with the backend flags; it receives ``backend_config``.

    Precedence, lowest first: the defaults shown in ``--help``, ``prefjudge.toml``
    (``[backend]``, then ``[backend.<stage>]``), then flags given on the command line. The
    old ``--timeout`` still works (with a warning) for ``--request-timeout``.

    Args:
        stage: Stage name whose ``[backend.<stage>]`` table applies.
        sampling: The command's own sampling defaults (``max_tokens``, ``seed``,
            ``temperature``), shown in ``--help``; the command passes the same mapping to
            :meth:`BackendConfig.sampling`.
        seed_help: Help text of ``--seed`` when it means more than the sampling seed.

    Returns:
        A decorator. The command gets a keyword argument ``backend_config``
        (:class:`BackendConfig`) instead of the individual flags.
    """
    flags_list = _backend_flags(sampling or {}, seed_help)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            flags = {}
            for name in [k for k in kwargs if k.startswith("pj_")]:
                value = kwargs.pop(name)
                given = ctx.get_parameter_source(name) in GIVEN
                flags[name[3:]] = value if given else None
            config_file = flags.pop("config")
            flags["engine_args"] = _parse_pairs(flags.pop("engine_args") or (), "--engine-arg")
            urls = flags["base_url"]  # repeatable: one URL stays a string, as it always was
            flags["base_url"] = (urls[0] if len(urls) == 1 else list(urls)) if urls else None
            if not flags["no_cache"]:
                flags["no_cache"] = None
            from prefjudge.backends.config import ConfigError, load_backend_config

            try:
                kwargs["backend_config"] = load_backend_config(
                    config_file, stage=stage, overrides=flags
                )
            except ConfigError as exc:
                raise click.UsageError(str(exc)) from exc
            return func(*args, **kwargs)

        wrapper = apply_options(wrapper, flags_list)
        return renamed_option(
            "--timeout",
            "--request-timeout",
            "pj_timeout",
            type=float,
            note="the HTTP deadline of each model call",
        )(wrapper)

    return decorate
