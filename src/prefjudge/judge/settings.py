"""How to judge, as a stage's settings say it: options, their checks, and what they load.

Every judging use case (``judge_file``, ``judge_pair``, ``evaluate_judges``) takes its
settings as a :class:`JudgeOptions` (the options every judging command shares:
``--fallback``, ``--criterion``, ``--tests``, ``--profile``, ``--guidance``, the criteria
bounds ...) plus
its own fields, and turns them into the :class:`~prefjudge.judge.common.JudgeSettings` the
methods read with :func:`judge_settings`, which checks them first (templates, criterion,
which options apply to which method) and loads the tests.

A mistake in how an option was given raises :class:`JudgeOptionError` (the command shows
it as a usage error naming the option); anything else a person must act on raises
:class:`~prefjudge.reporting.StageError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefjudge.backends import Sampling
from prefjudge.io import InputError
from prefjudge.journal import file_fingerprint
from prefjudge.judge import JUDGE_SAMPLING as JUDGE_SAMPLING  # its home: the judge package
from prefjudge.judge import JudgeSettings, method_traits
from prefjudge.judge.prompts import METHOD_STAGES, TemplateError, check_templates
from prefjudge.records import JudgeMethodName, Task
from prefjudge.reporting import StageError
from prefjudge.scoring.profiles import JUDGE_PROFILE, get_profile

if TYPE_CHECKING:  # guidance, the task sources (the hub client): imported when used
    from prefjudge.judge.guidance import Guidance
    from prefjudge.scoring.sources import SourceError

ModelMethodName = str
"""A method that only asks a judge model: what ``hybrid`` may fall back on. A name of the
registry's :data:`~prefjudge.judge.methods.MODEL_METHODS`, checked against it by
:func:`~prefjudge.judge.methods.method_traits` (``--fallback`` offers its names)."""
PairFormatName = str
"""A pair file's format: ``auto`` (told from its content) or a name of the registry's
:data:`~prefjudge.judge.pairs.formats.registry.PAIR_FORMATS`, checked against it when the
pairs are read (``--pairs-format`` offers its names)."""


__all__ = [
    "JUDGE_SAMPLING",
    "JudgeMethodName",
    "JudgeOptionError",
    "JudgeOptions",
    "ModelMethodName",
    "PairFormatName",
    "evidence_binding",
    "judge_settings",
    "load_tests",
    "open_guidance",
    "source_error",
]


class JudgeOptionError(StageError):
    """An option or argument given wrongly: the command shows it as a usage error.

    Args:
        message: What is wrong, for a person.
        option: The option or argument to name (``--criterion``, ``PAIRS``), or None when
            the mistake is in how several go together.

    Attributes:
        option: The option or argument named, or None.
    """

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def source_error(exc: SourceError, option: str) -> StageError:
    """The stage error of a source that cannot be used (see :mod:`prefjudge.scoring.sources`).

    Args:
        exc: The source's error.
        option: The option or argument that named the source (``--tasks``, ``PAIRS``).

    Returns:
        A :class:`JudgeOptionError` naming ``option`` for an unknown name, split or subset,
        or a task in two sources; a plain :class:`StageError` when the source is known but
        cannot be used (the hub).
    """
    from prefjudge.scoring.sources import UnknownSourceError
    from prefjudge.scoring.task_sources import RepeatedTaskError

    if isinstance(exc, UnknownSourceError | RepeatedTaskError):
        return JudgeOptionError(str(exc), option)
    return StageError(str(exc))


@dataclass(frozen=True, kw_only=True)
class JudgeOptions:
    """The options every judging stage shares (the judging commands' common flags).

    Attributes:
        fallback: ``hybrid``: the model-based method for the pairs the evidence leaves
            undecided (``--fallback``).
        criterion: ``evidence``/``hybrid``: the evidence kinds that decide every pair, in
            order (``correctness,efficiency``); None: the pair's own, else the default order.
        tests: ``evidence``/``hybrid``: task sources (files, folders or hub datasets) whose
            tests and inputs the evidence runs, by task id (``--tests``).
        profile: ``evidence``/``hybrid``: the verification profile of the instruction
            facts (``--profile``); None: ``strict`` (:data:`JUDGE_PROFILE`). Ignored by
            the methods that find no facts.
        allow_undecided: ``evidence``/``hybrid``: judge even when the evidence cannot
            decide the pairs (``--allow-undecided``; see
            :func:`prefjudge.judge.facts.coverage.check_coverage`).
        guidance: An HPAG guidance folder, or None (``--guidance``).
        evidence: Give the judge the pairs' deterministic evidence (``--evidence``).
        min_criteria: Fewest criteria to ask for (criteralign, pointwise).
        max_criteria: Most criteria kept.
        refine: Refine tied criteria (stage 4); False is ``--no-refine``.
        max_refine: Most tied criteria refined per pair (0 refines none).
        templates: A folder of prompt templates overriding ``rubrics/judge/``, or None.
        tokenizer: Whose tokenizer counts each response's ``token_len`` style feature (a
            model name in the local cache or a folder), or None for the fallback counter.
        chunk_size: Pairs per batch (each stage is one batch of requests).
        sampling: Sampling of every judge call (the caller applies the user's settings
            over :data:`JUDGE_SAMPLING`).
    """

    fallback: ModelMethodName = "criteralign"
    criterion: str | None = None
    tests: tuple[str, ...] = ()
    profile: str | None = None
    allow_undecided: bool = False
    guidance: Path | None = None
    evidence: bool = False
    min_criteria: int = 16
    max_criteria: int = 20
    refine: bool = True
    max_refine: int = 8
    templates: Path | None = None
    tokenizer: str | None = None
    chunk_size: int = 32
    sampling: Sampling = field(default_factory=lambda: Sampling(**JUDGE_SAMPLING))


def judge_settings(options: JudgeOptions, method: str, guidance: Guidance | None) -> JudgeSettings:
    """Check the options for ``method`` and build the settings its judge reads.

    Checked before any model call: the criteria bounds, every template the method's model
    calls use, the criterion, the profile; ``--tests`` and ``--criterion`` apply only to
    methods that run tests, whose tests are loaded here and whose settings are
    :class:`~prefjudge.judge.facts.judge.EvidenceSettings` with the profile (``--profile``;
    ignored by the other methods).

    Args:
        options: The judging options.
        method: The method to judge with (a name of :data:`prefjudge.judge.METHODS`).
        guidance: The loaded guidance (:func:`open_guidance`), or None.

    Returns:
        The judge settings.

    Raises:
        JudgeOptionError: On criteria bounds the wrong way round, an unknown criterion,
            ``--tests``/``--criterion`` for a method that runs no tests, an unknown
            ``--tests`` source or an unknown profile.
        StageError: On a template that cannot be used, or tests that cannot be read.
    """
    if options.min_criteria > options.max_criteria:
        raise JudgeOptionError("--min-criteria must not exceed --max-criteria")
    traits = method_traits(method, options.fallback)
    templates = None if options.templates is None else str(options.templates)
    if traits.model_method in METHOD_STAGES:
        try:  # every template the method uses, checked before any model call
            check_templates(METHOD_STAGES[traits.model_method], templates)
        except TemplateError as exc:
            raise StageError(str(exc)) from exc
    if options.criterion:
        _check_criterion(options.criterion)
    tests: dict[str, Task] = {}
    if traits.needs_tests:
        tests = load_tests(options.tests)
    elif options.tests or options.criterion:
        raise JudgeOptionError("--tests and --criterion apply to --method evidence or hybrid")
    fields: dict[str, Any] = {}
    settings_class: type[JudgeSettings] = JudgeSettings
    if traits.needs_tests:
        # the facts code (sandbox, verifier): imported only for a method that runs tests
        from prefjudge.judge.facts.judge import EvidenceSettings

        fields["profile"] = _profile(options.profile)
        settings_class = EvidenceSettings
    return settings_class(
        method=method,
        min_criteria=options.min_criteria,
        max_criteria=options.max_criteria,
        refine=options.refine and options.max_refine > 0,
        max_refine=options.max_refine,
        evidence=options.evidence,
        guidance=guidance,
        templates=templates,
        sampling=options.sampling,
        criterion=options.criterion,
        tests=tests,
        fallback=options.fallback,
        tokenizer=options.tokenizer,
        **fields,
    )


def _check_criterion(criterion: str) -> None:
    """Refuse a ``--criterion`` that does not parse (the facts code is imported for it)."""
    from prefjudge.judge.facts.judge import CriterionError, parse_criterion

    try:
        parse_criterion(criterion)
    except CriterionError as exc:
        raise JudgeOptionError(str(exc), "--criterion") from None


def _profile(name: str | None) -> str:
    """The verification profile named by ``--profile`` (None: :data:`JUDGE_PROFILE`)."""
    try:
        return get_profile(name or JUDGE_PROFILE).name
    except ValueError as exc:
        raise JudgeOptionError(str(exc), "--profile") from None


def load_tests(sources: Sequence[str]) -> dict[str, Task]:
    """Tasks by id from ``--tests`` sources (files, folders or hub datasets), merged.

    Read as ``prefjudge score`` reads its ``--tasks``
    (:func:`prefjudge.scoring.task_sources.load_task_sources`).

    Args:
        sources: The sources, in order.

    Returns:
        Every source's tasks by ``task_id``.

    Raises:
        JudgeOptionError: When a source names no file, folder or known hub dataset, or two
            give the same task.
        StageError: When a source cannot be read.
    """
    from prefjudge.scoring.sources import SourceError
    from prefjudge.scoring.task_sources import load_task_sources

    try:
        return load_task_sources(sources, option="--tests").tasks
    except SourceError as exc:
        raise source_error(exc, "--tests") from exc
    except InputError as exc:
        raise StageError(str(exc)) from exc


def evidence_binding(settings: JudgeSettings, sources: Sequence[str]) -> dict[str, Any]:
    """What evidence verdicts depend on besides the model: for the verdict journal.

    Args:
        settings: The judge settings.
        sources: The ``--tests`` sources.

    Returns:
        ``{}`` for the methods that run no tests; else the criterion, the fallback
        (``hybrid``), the verification profile of the instruction facts, the test
        sources' content digests, and the versions of the code that decides (sandbox
        harness, Ruff, the security analyser); and ``perf_inputs`` when it is ``model``.
    """
    traits = method_traits(settings.method, settings.fallback)
    if not traits.needs_tests:
        return {}
    from prefjudge.judge.facts.judge import evidence_profile
    from prefjudge.judge.facts.versions import decider_versions

    binding = {
        "criterion": settings.criterion,
        "fallback": settings.fallback if traits.model_method is not None else None,
        "profile": evidence_profile(settings),
        "tests": [file_fingerprint(s)["sha256"] if Path(s).is_file() else s for s in sources],
        "deciders": decider_versions(),
    }
    perf_inputs = getattr(settings, "perf_inputs", "scaled")
    if perf_inputs != "scaled":  # bound only when chosen: journals made before still resume
        binding["perf_inputs"] = perf_inputs
    return binding


def open_guidance(folder: str | Path | None) -> Guidance | None:
    """Load a guidance folder.

    Args:
        folder: The folder, or None for no guidance.

    Returns:
        The guidance, or None.

    Raises:
        StageError: When the folder is not usable guidance (the message says why).
    """
    if folder is None:
        return None
    from prefjudge.judge.guidance import GuidanceError, load_guidance

    try:
        return load_guidance(folder)
    except GuidanceError as exc:
        raise StageError(str(exc)) from exc
