"""``prefjudge instructions``: list the VeriCode instructions, by category."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import INSTRUCTION_CATEGORIES

if TYPE_CHECKING:
    from rich.table import Table

    from prefjudge.records import InstructionSpec, ParamSpec


@main.command("instructions")
@click.option(
    "--category",
    type=click.Choice(INSTRUCTION_CATEGORIES),
    default=None,
    help="Show only this category.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table per category, or every field as JSON.",
)
def instructions(category: str | None, output_format: str) -> None:
    """List the 30 verifiable code instructions with their parameters and verifiers."""
    from prefjudge.cli.display import PipeConsole
    from prefjudge.io import dumps_json
    from prefjudge.scoring.taxonomy import load_taxonomy

    groups = load_taxonomy().by_category(category)
    if output_format == "json":
        specs = [spec.model_dump(mode="json") for specs in groups.values() for spec in specs]
        click.echo(dumps_json(specs, indent=2))
        return
    console = PipeConsole()
    for name, specs in groups.items():
        console.print(_category_table(name, specs))


def _category_table(category: str, specs: list[InstructionSpec]) -> Table:
    from rich.table import Table

    table = Table(title=f"{category} ({len(specs)})", title_justify="left", show_lines=True)
    table.add_column("id", style="bold", no_wrap=True)
    table.add_column("instruction")
    table.add_column("parameters")
    table.add_column("verifier")
    table.add_column("conflicts")
    for spec in specs:
        params = "\n".join(_describe_param(param) for param in spec.params) or "-"
        table.add_row(
            spec.id, spec.name, params, _describe_verifier(spec), ", ".join(spec.conflicts) or "-"
        )
    return table


def _describe_param(param: ParamSpec) -> str:
    if param.type == "int":
        allowed = f"{param.min}–{param.max}"
    else:
        allowed = "|".join(param.choices or [])
    recommended = ", ".join(str(value) for value in param.recommended)
    text = f"{param.name} = {param.default} ({allowed})"
    return f"{text}; recommended {recommended}" if recommended else text


def _describe_verifier(spec: InstructionSpec) -> str:
    verifier = spec.verifier
    if verifier.kind == "python":
        return f"python: {verifier.check} ({verifier.scope})"
    text = "Ruff " + ", ".join(verifier.select) + (" (preview)" if verifier.preview else "")
    return f"{text} + {verifier.check}" if verifier.check else text
