"""``prefjudge models``: check that a backend answers and enforces JSON-schema output."""

from __future__ import annotations

import json
import time
from typing import Any, Literal

import click
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.backends import BackendError, Sampling, chat, create_backend
from prefjudge.backends.config import BackendConfig
from prefjudge.cli import main
from prefjudge.cli.options import backend_options, format_option, old_json_switch


class SchemaProbe(BaseModel):
    """A reply no model writes unless the server enforces the schema."""

    model_config = ConfigDict(extra="forbid")

    token: Literal["pj7f3", "pj9k2"]


@main.group()
def models() -> None:
    """Check model backends and prepare the embedded model."""


@models.command("check")
@backend_options()
@old_json_switch
@format_option
def check(backend_config: BackendConfig, output_format: str) -> None:
    """Report whether a backend answers and supports JSON-schema output.

    Sends two tiny requests (bypassing the cache): a plain chat turn, and a turn whose
    reply must match a JSON schema the prompt does not mention, so only a server that
    enforces the schema passes. Exits 1 when either fails.
    """
    console = Console(stderr=True)
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
        click.echo(json.dumps(findings, indent=2))
    else:
        _print_findings(console, findings)
    if not (findings.get("answers") and findings.get("json_schema")):
        raise SystemExit(1)


def run_check(config: BackendConfig) -> dict[str, Any]:
    """Probe a backend: endpoint models, a plain reply, a schema-enforced reply.

    Args:
        config: Backend settings (the cache should be off).

    Returns:
        Findings: ``answers`` and ``json_schema`` (booleans), replies, latencies, and
        ``error`` when the backend could not work at all.
    """
    found: dict[str, Any] = {"answers": False, "json_schema": False}
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
        "check-schema", "Say hello.", sampling=Sampling(max_tokens=48), schema_model=SchemaProbe
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


def _print_findings(console: Console, found: dict[str, Any]) -> None:
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
    console.print(table)
    if found.get("notice"):
        console.print(f"[yellow]note:[/yellow] {escape(found['notice'])}")


@models.command("prepare")
@click.option(
    "--dir",
    "target",
    type=click.Path(file_okay=False),
    help="Checkpoint folder [default: ~/.cache/prefjudge/smollm2-135m].",
)
def prepare(target: str | None) -> None:
    """Convert the embedded SmolLM2 GGUF to a checkpoint vLLM can load (once)."""
    from prefjudge.backends.embedded import ensure_checkpoint

    try:
        path = ensure_checkpoint(target)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(str(path))
