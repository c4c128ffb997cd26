"""``prefjudge generate``: model generations under the single-turn and multi-turn protocols."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from prefjudge.backends import BackendError, create_backend
from prefjudge.backends.config import BackendConfig
from prefjudge.cli import main
from prefjudge.cli.display import backend_progress, report_usage
from prefjudge.cli.options import backend_options
from prefjudge.cli.runs import force_new_option, open_journal
from prefjudge.cli.streams import JOURNAL
from prefjudge.io import InputError, read_records
from prefjudge.journal import Journal, content_digest, model_settings
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask
from prefjudge.testbed.protocols import (
    FRAMINGS,
    PROTOCOLS,
    Framing,
    ProtocolGeneration,
    ProtocolRunner,
    SystemPrompt,
    framing_settings,
    instruction_problems,
    parse_k,
)

console = Console(stderr=True)


def _parse_k_option(_ctx: click.Context, _param: click.Parameter, value: str) -> list[int]:
    try:
        return parse_k(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _parse_system_prompt(
    _ctx: click.Context, _param: click.Parameter, value: str
) -> SystemPrompt:
    try:
        return SystemPrompt.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _open_with_framing_hint(journal: Journal[ProtocolGeneration]) -> Journal[ProtocolGeneration]:
    """Open the journal; a refusal over the prompt framing says which options resume it."""
    try:
        return open_journal(journal, console)
    except click.ClickException as exc:
        if 'setting framing: "(not set)" then' in exc.message:
            exc.message += (
                "\nIt was made before prompts were framed as the SWE-IF reference (numbered "
                "instructions, no system prompt): resume it with --framing numbered "
                "--system-prompt none, or start it again with --force-new."
            )
        elif "setting framing" in exc.message or "setting system_prompt" in exc.message:
            exc.message += (
                "\nResume it with the --framing and --system-prompt it was made with, or start "
                "it again with --force-new."
            )
        raise


@main.command("generate")
@click.argument("augmented", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o", "--output", type=JOURNAL,
    default=Path("generations.jsonl"), show_default=True,
    help="Generations (JSONL), written as they finish; rerunning resumes (same model, "
    "inputs and sampling; see --force-new).",
)
@click.option(
    "--protocol", type=click.Choice(["single", "multi", "both"]), default="both",
    show_default=True, help="Single-turn (all instructions at once), multi-turn (one per turn).",
)
@click.option(
    "--k", "ks", default="0..5", show_default=True, callback=_parse_k_option,
    help='Numbers of instructions to run, the first k of each task: "0..5", "3", "1,3,5".',
)
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Samples per prompt.")
@click.option(
    "--framing", type=click.Choice(FRAMINGS), default="reference", show_default=True,
    help='Single-turn instructions: "reference" as the SWE-IF generator adds them '
    '("Additionally, ensure your code meets the following requirement(s):"), or '
    '"numbered" (the earlier "Also, generate the code to meet the following requirements:" '
    "list). Multi-turn prompts are the same under both.",
)
@click.option(
    "--system-prompt", "system_prompt", default="reference", show_default=True,
    metavar="reference|none|PATH", callback=_parse_system_prompt,
    help="System message of every request: the SWE-IF reference text of each task's "
    "benchmark (LiveCodeBench, or BigCodeBench for every other benchmark), none (no system "
    "message, the earlier behaviour), or a file's text for every task (a leading <!-- --> "
    "comment and the final newline are not sent).",
)
@click.option("--name", "model_name", help="Model name written in the records (e.g. for "
              "`prefjudge rank` and `persona compare`) [default: the backend's model identity].")
@click.option("--retry-errors", is_flag=True,
              help="Make again the generations whose model call failed in an earlier run.")
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
    try:
        records, _ = read_records(augmented, AugmentedTask)
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    tasks = [task for _, task in records]
    problems = instruction_problems(tasks, ks)
    if problems:
        raise click.ClickException("invalid instructions:\n" + "\n".join(problems))
    if not tasks:
        raise click.ClickException(f"{augmented}: no tasks (the file is empty)")
    protocols = PROTOCOLS if protocol == "both" else (protocol,)

    started = time.monotonic()
    try:
        backend = create_backend(backend_config)
    except BackendError as exc:
        raise click.ClickException(str(exc)) from exc
    written: Counter[str] = Counter()
    errors = 0
    sampling = backend_config.sampling()
    name = model_name or backend.model_id
    journal = Journal(
        output, ProtocolGeneration, lambda gen: f"{gen.model}::{gen.id}", stage="generate",
        inputs={"tasks": augmented},
        settings={**model_settings(backend, sampling), "name": name,
                  "taxonomy": content_digest(data_dir("rubrics") / "vericode.yaml"),
                  **framing_settings(framing, system_prompt, tasks)},
        force_new=force_new,
    )
    try:
        with _open_with_framing_hint(journal):
            if retry_errors:
                failed = [key for key, gen in journal.done.items() if gen.error is not None]
                if journal.discard(failed):
                    console.print(f"retrying {len(failed)} failed generation(s)")
            previous = {gen.id: gen for gen in journal.done.values() if gen.id}
            if backend.kind == "embedded":
                console.print("[yellow]note:[/yellow] the embedded backend is SmolLM2-135M, a "
                              "smoke model: these generations exercise the pipeline, not a real "
                              "model.")
            runner = ProtocolRunner(
                backend, tasks, protocols=protocols, ks=ks, samples=samples,
                sampling=sampling, done=previous, model_name=name,
                framing=framing, system_prompt=system_prompt,
            )
            short = Counter(k for _, k in runner.skipped)
            for k, count in sorted(short.items()):
                console.print(f"[yellow]skipped k={k} for {count} task(s) with fewer than {k} "
                              "instructions[/yellow]")
            if journal.resumed:
                console.print(f"resuming {escape(str(output))}: {len(previous)} record(s) "
                              f"there, {runner.total_generations} generation(s) to go")
            try:
                with backend_progress(console, runner.total_calls, "model turns") as advance:
                    for generation in runner.run(on_result=advance):
                        journal.write(generation)
                        written[generation.protocol] += 1
                        errors += generation.error is not None
            except BackendError as exc:
                raise click.ClickException(f"{exc} (records written so far are kept)") from exc
        report_usage(console, backend, started=started)
    finally:
        backend.close()
    summary = ", ".join(f"{n} {p}-turn" for p, n in sorted(written.items())) or "nothing new"
    console.print(f"wrote {escape(str(output))}: {summary}")
    if errors:
        console.print(f"[yellow]{errors} generation(s) failed: empty response with an 'error' "
                      "field; their turns say why[/yellow]")
