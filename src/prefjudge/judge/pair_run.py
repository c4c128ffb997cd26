"""The ``pair`` use case: judge one pair of responses given as text (nothing is written).

:func:`prepare_pair` checks the options (and finds the pair's task among ``--tests`` for a
method that runs them) before any model is opened; :func:`judge_pair` judges the pair
through :func:`~prefjudge.judge.journaled.run_judging` with no journal.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from prefjudge.backends import Backend
from prefjudge.judge.common import JudgeSettings
from prefjudge.judge.journaled import check_evidence_coverage, model_for, run_judging
from prefjudge.judge.settings import (
    JudgeMethodName,
    JudgeOptionError,
    JudgeOptions,
    judge_settings,
    open_guidance,
)
from prefjudge.records import Pair, Task, Verdict
from prefjudge.reporting import Reporter


@dataclass(frozen=True, kw_only=True)
class PairSettings(JudgeOptions):
    """What ``prefjudge pair`` is asked to judge (besides the judging options it inherits).

    Attributes:
        instruction: The instruction both responses answer (its text).
        response_a: Response A (its text).
        response_b: Response B (its text).
        method: The judging method.
        task_id: ``evidence``/``hybrid``: the task both responses answer (its tests come
            from ``tests``); None: the task of ``tests`` whose prompt the instruction is
            (:func:`find_task`), or ``pair`` without tests.
    """

    instruction: str
    response_a: str
    response_b: str
    method: JudgeMethodName = "criteralign"
    task_id: str | None = None


@dataclass(frozen=True)
class PreparedPair:
    """What :func:`prepare_pair` checked, for :func:`judge_pair`.

    Attributes:
        judge: The judge settings.
        pair: The pair to judge (its task id given, or found from its instruction).
    """

    judge: JudgeSettings
    pair: Pair


def prepare_pair(settings: PairSettings, reporter: Reporter) -> PreparedPair:
    """Check the options of :func:`judge_pair` before any model is opened.

    For a method that runs tests, the pair's task is ``task_id``, else the task of
    ``tests`` whose prompt the instruction is (:func:`find_task`; a note says which).

    Args:
        settings: The pair and how to judge it.
        reporter: Where notes and warnings go.

    Returns:
        The judge settings and the pair, for :func:`judge_pair`.

    Raises:
        JudgeOptionError: On options given wrongly (the error names them), a ``--task-id``
            that is not among the ``--tests`` tasks, or an instruction that names no one
            task of them (the error says to add ``--task-id``).
        StageError: On templates, guidance or tests that cannot be used, or a pair the
            evidence cannot decide (unless ``allow_undecided``).
    """
    judge = judge_settings(settings, settings.method, open_guidance(settings.guidance))
    task_id = settings.task_id
    if judge.tests:
        if task_id is None:
            task_id = find_task(settings.instruction, judge.tests)
            reporter.note(f"task: {task_id} (its prompt is the instruction; --task-id overrides)")
        elif task_id not in judge.tests:
            raise JudgeOptionError(
                f"task {task_id!r} is not among the {len(judge.tests)} tasks of --tests "
                f"(e.g. {_some_ids(judge.tests)})",
                "--task-id",
            )
    pair = Pair(
        pair_id="pair",
        task_id=task_id or "pair",
        instruction=settings.instruction,
        response_a=settings.response_a,
        response_b=settings.response_b,
    )
    check_evidence_coverage([pair], judge, reporter, allow_undecided=settings.allow_undecided)
    return PreparedPair(judge, pair)


def _some_ids(ids: Collection[str], n: int = 3) -> str:
    return ", ".join(list(ids)[:n]) + (", ..." if len(ids) > n else "")


def _words(text: str) -> str:
    return " ".join(text.split())


def find_task(instruction: str, tasks: Mapping[str, Task]) -> str:
    """The id of the task whose prompt ``instruction`` is (whitespace aside).

    A task matches when its prompt (or the prompt a completion continues, or the
    instruction-style prompt) equals the instruction, or, failing that, when exactly one
    task's prompt holds the instruction or is held by it (at least 40 characters of it).

    Args:
        instruction: The pair's instruction.
        tasks: The ``--tests`` tasks by id.

    Returns:
        The task id.

    Raises:
        JudgeOptionError: Naming ``--task-id`` when no task, or several, match.
    """
    text = _words(instruction)
    prompts = {
        task_id: {
            _words(p)
            for p in (
                task.prompt,
                *(
                    task.metadata.get(k)
                    for k in ("complete_prompt", "instruct_prompt", "raw_prompt")
                ),
            )
            if isinstance(p, str) and p.strip()
        }
        for task_id, task in tasks.items()
    }
    found = [t for t, texts in prompts.items() if text in texts]
    if not found and len(text) >= 40:
        found = [
            t
            for t, texts in prompts.items()
            if any(text in p or (len(p) >= 40 and p in text) for p in texts)
        ]
    if len(found) == 1:
        return found[0]
    if found:
        raise JudgeOptionError(
            f"the instruction is the prompt of {len(found)} tasks of --tests "
            f"({_some_ids(found)}): name one with --task-id",
            "--task-id",
        )
    raise JudgeOptionError(
        f"the instruction is the prompt of none of the {len(tasks)} tasks of --tests "
        f"(e.g. {_some_ids(tasks)}): name the task both responses answer with --task-id",
        "--task-id",
    )


def judge_pair(
    settings: PairSettings,
    backend: Backend | None,
    reporter: Reporter,
    *,
    prepared: PreparedPair | None = None,
) -> Verdict:
    """Judge one pair of responses: what ``prefjudge pair`` does (nothing is written).

    Args:
        settings: The pair and how to judge it (its ``chunk_size`` is not used).
        backend: The open judge model (the caller closes it), or None for a method that
            asks none (``evidence``, which always judges with :class:`NoModel`).
        reporter: Where notes and progress go.
        prepared: What :func:`prepare_pair` returned for these settings, when the caller
            checked them first; None checks them now.

    Returns:
        The verdict (an error verdict when judging failed; see its ``error``).

    Raises:
        JudgeOptionError: On options given wrongly (the error names them).
        StageError: On templates, guidance or tests that cannot be used, a pair the
            evidence cannot decide (unless ``allow_undecided``), a method that asks a
            model given none, or a backend that cannot work at all.
    """
    if prepared is None:
        prepared = prepare_pair(settings, reporter)
    model = model_for(settings.method, settings.fallback, backend)
    [verdict] = run_judging(
        [prepared.pair], None, prepared.judge, model, reporter, chunk_size=1
    ).verdicts
    return verdict
