"""``prefjudge pair``'s own input and output: the texts it reads and the verdict it prints.

Light at import (rich and the stage load when a verdict is printed or a file read).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.records import Verdict

SIDE_NAMES = {"A": "A", "B": "B", "tie": "tie", None: "—"}


def read_text_arg(source: str, what: str) -> str:
    """Read a response (or instruction) file, or stdin for ``-``, as UTF-8 text.

    Raises:
        click.BadParameter: Naming ``what`` and the file, when it does not exist, cannot be
            read, is not UTF-8 or is binary (holds NUL bytes).
    """
    from prefjudge.io import InputError, read_text

    if source == "-":
        try:
            return sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise click.BadParameter(
                f"stdin: not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start}); pass a text file",
                param_hint=what,
            ) from None
    path = Path(source)
    if not path.is_file():
        raise click.BadParameter(f"{source}: no such file", param_hint=what)
    try:
        text = read_text(path)
    except InputError as exc:
        problem = "; ".join(str(issue) for issue in exc.issues)
        raise click.BadParameter(f"{problem}; expected a text file", param_hint=what) from None
    if "\x00" in text:
        raise click.BadParameter(
            f"{source}: a binary file (it holds NUL bytes); expected a text file", param_hint=what
        )
    return text


EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")


def print_verdict(verdict: Verdict, top: int, console: Console) -> None:
    """Print a verdict: the winner, the reasons, the decisive criteria and the evidence.

    Args:
        verdict: ``pair``'s verdict.
        top: Most decisive criteria shown.
        console: Where to print (stderr when the verdict JSON goes to stdout).
    """
    from rich.markup import escape
    from rich.table import Table

    if verdict.status == "error":
        console.print(f"[red]error[/red]: {escape(verdict.error or '')}")
        return
    name = {"A": "A wins", "B": "B wins", "tie": "tie"}[verdict.preferred or "tie"]
    orders = ", ".join(f"{k}: {SIDE_NAMES[v]}" for k, v in verdict.orders.items())
    how = "; ".join(filter(None, [verdict.method, orders]))
    console.print(f"[bold]verdict: {name}[/bold]  ({how})")
    for order, reason in verdict.reasons.items():
        if order == "evidence":
            continue  # the facts table below says it
        if reason:
            console.print(f"  reason ({order}): {escape(reason)}", soft_wrap=True)
    shown = [c for c in verdict.criteria if c.criterion.id in verdict.decisive] or [
        c for c in verdict.criteria if c.outcome in ("A", "B")
    ]
    if shown:
        table = Table(title="decisive criteria", title_justify="left")
        for column in ("id", "criterion", "outcome", "reason"):
            table.add_column(column)
        for cv in shown[:top]:
            table.add_row(
                cv.criterion.id,
                escape(cv.criterion.text),
                SIDE_NAMES[cv.outcome],
                escape(cv.reason_forward),
            )
        console.print(table)
    if verdict.inconsistency_rate is not None:
        console.print(
            f"criterion verdicts flipped by the order swap: {verdict.inconsistency_rate:.0%}"
            f"; tied criteria refined: {verdict.refined}"
        )
    if verdict.facts:
        table = Table(title=f"evidence (decided by: {verdict.decided_by})", title_justify="left")
        for column in ("kind", "outcome", "fact"):
            table.add_column(column)
        for fact in verdict.facts:
            table.add_row(fact.kind, fact.outcome, escape(fact.fact))
        console.print(table)
    for warning in verdict.warnings:
        console.print(f"[yellow]warning[/yellow]: {escape(warning)}")


def instruction_text(instruction: str) -> str:
    """``--instruction``: the text of the file it names, else the text itself.

    Raises:
        click.BadParameter: When a value that looks like a path names no file.
    """
    if instruction != "-" and Path(instruction).is_file():
        return read_text_arg(instruction, "--instruction")
    if not any(c.isspace() for c in instruction) and (
        "/" in instruction or os.sep in instruction or EXTENSION.search(instruction)
    ):
        raise click.BadParameter(
            f"{instruction}: no such file. To use this as the instruction text itself, add "
            f"a space at its end: --instruction '{instruction} '",
            param_hint="--instruction",
        )
    return instruction


def write_verdict(payload: str, output: Path | None, to_stdout: bool, console: Console) -> None:
    """Write ``pair``'s verdict JSON where ``-o`` says (printed when the file cannot be).

    Args:
        payload: The verdict JSON.
        output: ``-o/--output``.
        to_stdout: ``-o -``.
        console: Where the note naming the file goes.

    Raises:
        click.ClickException: When the file cannot be written (the JSON is printed first).
    """
    if to_stdout:
        click.echo(payload, nl=False)
    elif output is not None:
        try:
            output.write_text(payload, encoding="utf-8")
        except OSError as exc:
            click.echo(payload, nl=False)  # the verdict is not lost: it goes to stdout
            raise click.ClickException(
                f"cannot write {output} ({exc.strerror or exc}); the verdict JSON was printed above"
            ) from None
        console.print(f"wrote {output}")
