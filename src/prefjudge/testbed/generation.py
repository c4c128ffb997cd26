"""The ``generate`` stage's use case: a model's generations of augmented tasks, resumable.

:func:`generate_file` is what ``prefjudge generate`` and ``prefjudge run`` call: it reads
the augmented tasks, runs the single-turn and/or multi-turn protocols
(:class:`~prefjudge.testbed.protocols.ProtocolRunner`) with an open backend, and appends
every generation to a journal bound to the model, its sampling and the prompt framing, so
a rerun resumes. It never prints: notes, warnings and the progress over model turns go to
a :class:`~prefjudge.reporting.Reporter`; failures are
:class:`~prefjudge.reporting.StageError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefjudge.backends import Backend, BackendError, Sampling
from prefjudge.io import InputError, read_records
from prefjudge.journal import Journal, content_digest, model_settings, open_journal
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, journal_key
from prefjudge.reporting import Reporter, StageError
from prefjudge.testbed.protocols import (
    PROTOCOLS,
    REFERENCE_SYSTEM_PROMPT,
    Framing,
    ProtocolGeneration,
    ProtocolName,
    ProtocolRunner,
    SystemPrompt,
    framing_settings,
    instruction_problems,
)

__all__ = ["GenerateOutcome", "GenerateSettings", "generate_file", "read_augmented"]

#: Said when the embedded backend (a smoke model) makes the generations.
EMBEDDED_NOTE = (
    "note: the embedded backend is SmolLM2-135M, a smoke model: these generations exercise "
    "the pipeline, not a real model."
)


@dataclass(frozen=True)
class GenerateSettings:
    """What a generation run does.

    Attributes:
        augmented: The augmented-task JSONL (``prefjudge augment``'s output).
        output: The generations JSONL (appended as they finish; rerunning resumes).
        protocols: ``single`` and/or ``multi``.
        ks: Numbers of instructions to run, the first k of each task.
        samples: Samples per prompt.
        framing: How single-turn prompts add their instructions (``reference`` or
            ``numbered``).
        system_prompt: The system message every request begins with.
        model_name: The ``model`` written in the records (None: the backend's model id).
        retry_errors: Make again the generations whose model call failed in an earlier run.
        force_new: Start the output again instead of resuming it.
        sampling: Sampling parameters of every model call.
    """

    augmented: Path
    output: Path = Path("generations.jsonl")
    protocols: tuple[ProtocolName, ...] = PROTOCOLS
    ks: Sequence[int] = (0, 1, 2, 3, 4, 5)
    samples: int = 1
    framing: Framing = "reference"
    system_prompt: SystemPrompt = REFERENCE_SYSTEM_PROMPT
    model_name: str | None = None
    retry_errors: bool = False
    force_new: bool = False
    sampling: Sampling = field(default_factory=Sampling)


@dataclass(frozen=True)
class GenerateOutcome:
    """What a generation run did.

    Attributes:
        output: The generations JSONL.
        model_name: The ``model`` written in the records.
        written: Generations written by this run, per protocol.
        failed: Generations written by this run whose model call failed (empty response
            and an ``error``).
        resumed: Records already in the output when the run began (0 when new).
        retried: Failed records discarded to be made again (``retry_errors``).
        skipped: ``(task_id, k)`` pairs left out: the task has fewer than k instructions.
    """

    output: Path
    model_name: str
    written: Mapping[str, int]
    failed: int
    resumed: int
    retried: int
    skipped: tuple[tuple[str, int], ...]

    @property
    def summary(self) -> str:
        """What was written, as the command says it (``3 multi-turn, 3 single-turn``)."""
        shown = ", ".join(f"{n} {p}-turn" for p, n in sorted(self.written.items()))
        return shown or "nothing new"


def read_augmented(augmented: Path, ks: Iterable[int]) -> list[AugmentedTask]:
    """Read the augmented tasks and check the instructions the k values would use.

    Cheap and model-free: a command calls it before it opens a backend, so a bad file
    fails first; :func:`generate_file` calls it again.

    Args:
        augmented: The augmented-task JSONL.
        ks: The k values to run.

    Returns:
        The tasks, in file order.

    Raises:
        StageError: The file cannot be read, an instruction is unknown or has bad
            parameters, or the file holds no task.
    """
    try:
        records, _ = read_records(augmented, AugmentedTask)
    except InputError as exc:
        raise StageError(str(exc)) from exc
    tasks = [task for _, task in records]
    problems = instruction_problems(tasks, ks)
    if problems:
        raise StageError("invalid instructions:\n" + "\n".join(problems))
    if not tasks:
        raise StageError(f"{augmented}: no tasks (the file is empty)")
    return tasks


def _journal(settings: GenerateSettings, backend: Backend, name: str,
             tasks: list[AugmentedTask]) -> Journal:
    """The output's journal, bound to the tasks, model, sampling, taxonomy and framing."""
    return Journal(
        settings.output,
        ProtocolGeneration,
        lambda gen: journal_key(gen.model, gen.id),
        stage="generate",
        inputs={"tasks": settings.augmented},
        settings={
            **model_settings(backend, settings.sampling),
            "name": name,
            "taxonomy": content_digest(data_dir("rubrics") / "vericode.yaml"),
            **framing_settings(settings.framing, settings.system_prompt, tasks),
        },
        force_new=settings.force_new,
    )


def _discard_errors(journal: Journal, reporter: Reporter) -> int:
    """Drop the journaled generations that failed, so they are made again; how many."""
    errored = [key for key, gen in journal.done.items() if gen.error is not None]
    if not journal.discard(errored):
        return 0
    reporter.note(f"retrying {len(errored)} failed generation(s)")
    return len(errored)


def _run(runner: ProtocolRunner, journal: Journal, reporter: Reporter
         ) -> tuple[Counter[str], int]:
    """Run the protocols, journaling each generation; ``(written per protocol, failed)``.

    Raises:
        StageError: When the backend fails (records written so far are kept).
    """
    written: Counter[str] = Counter()
    failed = 0
    try:
        with reporter.progress("model turns", runner.total_calls) as advance:
            for generation in runner.run(on_result=lambda _result: advance(1)):
                journal.write(generation)
                written[generation.protocol] += 1
                failed += generation.error is not None
    except BackendError as exc:
        raise StageError(f"{exc} (records written so far are kept)") from exc
    return written, failed


def generate_file(
    settings: GenerateSettings,
    backend: Backend,
    reporter: Reporter,
    *,
    tasks: list[AugmentedTask] | None = None,
) -> GenerateOutcome:
    """Ask a model for every task of ``settings.augmented`` under each protocol and k.

    One record per (task, protocol, k, sample), with every turn kept; a failed model call
    is recorded (empty response and an ``error``), never dropped. Resumes: records already
    in the output are not made again, and a multi-turn conversation continues from its
    longest error-free turns.

    Args:
        settings: What to run.
        backend: An open backend (the caller closes it and shows its usage).
        reporter: Where notes, warnings and the progress over model turns go.
        tasks: What :func:`read_augmented` returned for these settings, when the caller
            checked the tasks first; None reads them now.

    Returns:
        What was written.

    Raises:
        StageError: The tasks cannot be used (see :func:`read_augmented`), the journal
            refuses the output (with a hint when the prompt framing differs), or the
            backend fails (records written so far are kept).
    """
    if tasks is None:
        tasks = read_augmented(settings.augmented, settings.ks)
    name = settings.model_name or backend.model_id
    journal = _journal(settings, backend, name, tasks)
    with _open_with_framing_hint(journal, reporter):
        retried = _discard_errors(journal, reporter) if settings.retry_errors else 0
        previous = {gen.id: gen for gen in journal.done.values() if gen.id}
        if backend.kind == "embedded":
            reporter.warn(EMBEDDED_NOTE)
        runner = ProtocolRunner(
            backend,
            tasks,
            protocols=settings.protocols,
            ks=settings.ks,
            samples=settings.samples,
            sampling=settings.sampling,
            done=previous,
            model_name=name,
            framing=settings.framing,
            system_prompt=settings.system_prompt,
        )
        short = Counter(k for _, k in runner.skipped)
        for k, count in sorted(short.items()):
            reporter.warn(f"skipped k={k} for {count} task(s) with fewer than {k} instructions")
        if journal.resumed:
            reporter.note(
                f"resuming {settings.output}: {len(previous)} record(s) there, "
                f"{runner.total_generations} generation(s) to go"
            )
        written, failed = _run(runner, journal, reporter)
    outcome = GenerateOutcome(
        output=settings.output,
        model_name=name,
        written=dict(written),
        failed=failed,
        resumed=len(previous) if journal.resumed else 0,
        retried=retried,
        skipped=tuple(runner.skipped),
    )
    reporter.note(f"wrote {settings.output}: {outcome.summary}")
    if failed:
        reporter.warn(
            f"{failed} generation(s) failed: empty response with an 'error' field; "
            "their turns say why"
        )
    return outcome


def _open_with_framing_hint(
    journal: Journal[ProtocolGeneration], reporter: Reporter
) -> Journal[ProtocolGeneration]:
    """Open the journal; a refusal over the prompt framing says which options resume it."""
    try:
        return open_journal(journal, reporter)
    except StageError as exc:
        message = str(exc)
        if 'setting framing: "(not set)" then' in message:
            message += (
                "\nIt was made before prompts were framed as the SWE-IF reference (numbered "
                "instructions, no system prompt): resume it with --framing numbered "
                "--system-prompt none, or start it again with --force-new."
            )
        elif "setting framing" in message or "setting system_prompt" in message:
            message += (
                "\nResume it with the --framing and --system-prompt it was made with, or start "
                "it again with --force-new."
            )
        raise StageError(message) from exc.__cause__
