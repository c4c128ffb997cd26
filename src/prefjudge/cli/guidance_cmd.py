"""``prefjudge guidance build`` and ``prefjudge guidance show``.

The judge's guidance modules load when a subcommand runs, not for ``--help``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prefjudge.cli import main
from prefjudge.cli.judging import pairs_format_option, read_pairs_or_fail
from prefjudge.cli.options import backend_options
from prefjudge.cli.runs import open_backend
from prefjudge.cli.streams import OutputFile
from prefjudge.reporting import display_text

if TYPE_CHECKING:
    from rich.console import Console

    from prefjudge.backends.config import BackendConfig

BUILD_MAX_TOKENS = 1024


@main.group("guidance")
def guidance() -> None:
    """HPAG guidance: lessons mined from where a judge disagrees with humans."""


@guidance.command("build")
@click.argument(
    "pairs_path", metavar="LABELLED_PAIRS", type=click.Path(exists=True, dir_okay=False)
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=OutputFile(folder=True),
    help="Guidance folder to write, e.g. guidance/codeprefbench-qwen/.",
)
@click.option(
    "--train-fraction",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.2,
    show_default=True,
    help="Share of labelled pairs used for building.",
)
@click.option(
    "--split-seed",
    "split_seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the train/held-out split.",
)
@click.option(
    "--min-category",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="Fewest disagreements a category needs for its own lessons.",
)
@pairs_format_option
@click.option("--skip-invalid", is_flag=True, help="Skip unusable input rows (listed).")
@backend_options(
    stage="judge",
    sampling={"max_tokens": BUILD_MAX_TOKENS},
    seed_help="Sampling seed of the model's requests [default: --split-seed].",
)
def build(
    pairs_path: str,
    output: Path,
    train_fraction: float,
    split_seed: int,
    min_category: int,
    fmt: str,
    skip_invalid: bool,
    backend_config: BackendConfig,
) -> None:
    """Build guidance from labelled pairs (the held-out share is never shown to the builder).

    The monolithic judge runs on the training share; each disagreement with the human label
    gets a rationale, and the rationales are distilled into global and per-category lessons
    for criterion generation, criterion judging and the final decision.
    """
    from rich.console import Console

    console = Console(stderr=True)
    pairs = read_pairs_or_fail((pairs_path,), (), fmt, skip_invalid, console).pairs
    train = _split_and_prepare(pairs, pairs_path, output, train_fraction, split_seed, console)
    seed = backend_config.seed if backend_config.seed is not None else split_seed
    sampling = backend_config.sampling(max_tokens=BUILD_MAX_TOKENS, seed=seed)
    report = _build_with_backend(
        backend_config, console, pairs, output, 2 * len(train),
        source=pairs_path, train_fraction=train_fraction, seed=split_seed, sampling=sampling,
        min_category=min_category,
    )
    _print_build(report, len(train), output, console)


def _split_and_prepare(pairs: list[Any], pairs_path: str, output: Path, train_fraction: float,
                       split_seed: int, console: Console) -> list[Any]:
    """Split the pairs (said on ``console``) and create the output folder; the training share.

    Raises:
        click.ClickException: When the pairs cannot be split.
        click.BadParameter: When ``-o`` cannot be created (now, not after the model calls).
    """
    from prefjudge.judge.hpag import split_pairs

    try:
        train, held = split_pairs(pairs, train_fraction, split_seed)
    except ValueError as exc:
        raise click.ClickException(f"{pairs_path}: {exc}") from exc
    console.print(
        f"split (seed {split_seed}): {len(train)} pairs build the guidance, "
        f"{len(held)} are held out"
    )
    try:  # a bad -o fails now, not after the model calls
        Path(output).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot create the folder {output} ({exc.strerror or exc})", param_hint="-o/--output"
        ) from None
    return train


def _build_with_backend(backend_config: BackendConfig, console: Console, pairs: list[Any],
                        output: Path, calls: int, **arguments: Any) -> Any:
    """Run :func:`prefjudge.judge.hpag.build_guidance` with the model; report its usage.

    Args:
        backend_config: The model that judges, explains and distils.
        console: Where progress and the usage table go.
        pairs: The labelled pairs.
        output: The guidance folder.
        calls: Model calls expected (the progress bar's length).
        **arguments: ``build_guidance``'s other keyword arguments.
    """
    from prefjudge.backends import BackendError
    from prefjudge.cli.display import backend_progress, report_usage
    from prefjudge.judge.hpag import GuidanceBuildError, build_guidance

    backend = open_backend(backend_config)
    started = time.monotonic()
    try:
        with backend_progress(console, calls, "judge, rationale and distil calls") as cb:
            return build_guidance(pairs, backend, output, on_result=cb, **arguments)
    except (GuidanceBuildError, BackendError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        report_usage(console, backend, started=started)
        backend.close()


def _print_build(report: Any, train: int, output: Path, console: Console) -> None:
    """Print the build's counts (stdout), its distillation warnings and what it wrote."""
    from rich.markup import escape
    from rich.table import Table

    from prefjudge.cli.display import stdout

    counts = report.manifest["counts"]
    table = Table(title=f"guidance build: {escape(str(output))}", title_justify="left")
    for name in (
        "train pairs",
        "judged",
        "judge errors",
        "agreements",
        "disagreements",
        "rationales",
        "rationale errors",
        "category files",
    ):
        table.add_column(name, justify="right")
    table.add_row(
        str(train),
        str(counts["judged"]),
        str(counts["judge_errors"]),
        str(counts["agreements"]),
        str(counts["disagreements"]),
        str(counts["rationales"]),
        str(counts["rationale_errors"]),
        str(len(report.manifest["categories"])),
    )
    stdout.print(table)
    for failure in report.manifest["distil_failures"]:
        console.print(f"[yellow]warning:[/yellow] {escape(failure)}")
    console.print(f"wrote {output}/ (manifest.json, global.md, categories/, rationales.jsonl)")


@guidance.command("show")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
def show(folder: str) -> None:
    """Print a guidance folder's lessons and provenance.

    The lessons and the manifest's fields are text that a model or a person wrote: they
    are printed as plain text (no markup, no highlighting, control characters escaped),
    whole, so that a 1 MiB lesson costs a fraction of a second.
    """
    from prefjudge.judge.guidance import STAGES, GuidanceError, load_guidance

    try:
        loaded = load_guidance(folder)
    except GuidanceError as exc:
        raise click.ClickException(str(exc)) from exc
    manifest = loaded.manifest
    lines = [
        f"{loaded.label} from {manifest.get('source')}",
        f"judge: {manifest.get('judge')}",
        f"split: {manifest.get('split')}; counts: {manifest.get('counts')}",
    ]
    scopes = [("global", loaded.lessons), *sorted(loaded.categories.items())]
    for name, lessons in scopes:
        for stage in STAGES:
            lines.extend(f"{name} · {stage}: {item}" for item in lessons.get(stage, []))
    click.echo("\n".join(_plain_text(line) for line in lines))


def _plain_text(text: str) -> str:
    r"""``text`` whole, with control characters and lone surrogates escaped (``\x1b``).

    Args:
        text: One line that a model or a person wrote.

    Returns:
        The line to print as it is (never through rich's markup or highlighter, whose
        cost grows faster than the text).
    """
    return display_text(text, 6 * len(text) + 1)  # an escape is at most 6 characters: no cut
