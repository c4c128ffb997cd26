"""The ``prefjudge`` command line: thin click commands, one module per stage."""

from __future__ import annotations

import click

from prefjudge import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="prefjudge")
def main() -> None:
    """Judge code-generating LLMs the way their users do."""


def _register() -> None:
    from prefjudge.cli import commands  # noqa: F401  (registers every command on ``main``)


_register()
