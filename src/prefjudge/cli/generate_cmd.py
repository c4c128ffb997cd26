"""``prefjudge generate``: model generations under the single-turn and multi-turn protocols."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import FRAMINGS
from prefjudge.cli.options import backend_options
from prefjudge.cli.runs import force_new_option
from prefjudge.cli.streams import JOURNAL
from prefjudge.reporting import StageError

if TYPE_CHECKING:
    from prefjudge.backends import Backend
    from prefjudge.backends.config import BackendConfig
    from prefjudge.testbed.protocols import Framing, ProtocolName, SystemPrompt


def create_backend(config: BackendConfig) -> Backend:
    """:func:`prefjudge.backends.create_backend` (a module attribute, so tests can replace it)."""
    from prefjudge.backends import create_backend as create

    return create(config)


def _parse_k_option(_ctx: click.Context, _param: click.Parameter, value: str) -> list[int]:
    from prefjudge.testbed.protocols import parse_k

    try:
        return parse_k(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _parse_system_prompt(_ctx: click.Context, _param: click.Parameter, value: str) -> SystemPrompt:
    from prefjudge.testbed.protocols import SystemPrompt

    try:
        return SystemPrompt.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@main.command("generate")
@click.argument("augmented", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=JOURNAL,
    default=Path("generations.jsonl"),
    show_default=True,
    help="Generations (JSONL), written as they finish; rerunning resumes (same model, "
    "inputs and sampling; see --force-new).",
)
@click.option(
    "--protocol",
    type=click.Choice(["single", "multi", "both"]),
    default="both",
    show_default=True,
    help="Single-turn (all instructions at once), multi-turn (one per turn).",
)
@click.option(
    "--k",
    "ks",
    default="0..5",
    show_default=True,
    callback=_parse_k_option,
    help='Numbers of instructions to run, the first k of each task: "0..5", "3", "1,3,5".',
)
@click.option(
    "--samples",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Samples per prompt.",
)
@click.option(
    "--framing",
    type=click.Choice(FRAMINGS),
    default="reference",
    show_default=True,
    help='Single-turn instructions: "reference" as the SWE-IF generator adds them '
    '("Additionally, ensure your code meets the following requirement(s):"), or '
    '"numbered" (the earlier "Also, generate the code to meet the following requirements:" '
    "list). Multi-turn prompts are the same under both.",
)
@click.option(
    "--system-prompt",
    "system_prompt",
    default="reference",
    show_default=True,
    metavar="reference|none|PATH",
    callback=_parse_system_prompt,
    help="System message of every request: the SWE-IF reference text of each task's "
    "benchmark (LiveCodeBench, or BigCodeBench for every other benchmark), none (no system "
    "message, the earlier behaviour), or a file's text for every task (a leading <!-- --> "
    "comment and the final newline are not sent).",
)
@click.option(
    "--name",
    "model_name",
    help="Model name written in the records (e.g. for "
    "`prefjudge rank` and `persona compare`) [default: the backend's model identity].",
)
@click.option(
    "--retry-errors",
    is_flag=True,
    help="Make again the generations whose model call failed in an earlier run.",
)
@force_new_option
@backend_options(stage="generate")
def generate_command(
    augmented: Path,
    output: Path,
    protocol: str,
    ks: list[int],
    samples: int,
    framing: Framing,
    system_prompt: SystemPrompt,
    model_name: str | None,
    retry_errors: bool,
    force_new: bool,
    backend_config: BackendConfig,
) -> None:
    """Ask a model for every task of AUGMENTED (augmented-task JSONL) under each protocol.

    Prompts are framed as the SWE-IF reference generator frames them: every request begins
    with its system prompt; single-turn is the prompt followed by the first k instructions
    ("Additionally, ensure your code meets the following requirement(s):"); multi-turn is
    the prompt alone, then one instruction per turn with the full history.
    ``--framing numbered --system-prompt none`` reproduces earlier runs. One record per
    (task, protocol, k, sample), with every turn kept; a failed model call is recorded
    (empty response and an ``error``), never dropped. The output is ready for
    ``prefjudge score``.
    """
    from prefjudge.testbed.generation import GenerateSettings, read_augmented
    from prefjudge.testbed.protocols import PROTOCOLS

    settings = GenerateSettings(
        augmented=augmented,
        output=Path(output),
        protocols=PROTOCOLS if protocol == "both" else (cast("ProtocolName", protocol),),
        ks=tuple(ks),
        samples=samples,
        framing=framing,
        system_prompt=system_prompt,
        model_name=model_name,
        retry_errors=retry_errors,
        force_new=force_new,
        sampling=backend_config.sampling(),
    )
    try:
        tasks = read_augmented(settings.augmented, settings.ks)  # fails before any model
    except StageError as exc:
        raise click.ClickException(str(exc)) from exc
    _generate(settings, backend_config, tasks)


def _generate(settings: Any, backend_config: BackendConfig, tasks: Any) -> None:
    """Open the model, generate, report its usage and close it (errors become click's)."""
    from rich.console import Console

    from prefjudge.backends import BackendError
    from prefjudge.cli.display import report_usage
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.testbed.generation import generate_file

    console = Console(stderr=True)
    started = time.monotonic()
    try:
        backend = create_backend(backend_config)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        generate_file(settings, backend, ConsoleReporter(console), tasks=tasks)
        report_usage(console, backend, started=started)
    except StageError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        backend.close()
