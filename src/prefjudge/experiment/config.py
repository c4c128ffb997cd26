"""The experiment file (``prefjudge run EXPERIMENT.toml``): what to run, as pydantic records.

A minimal file::

    [experiment]
    name = "smoke"

    [benchmark]
    source = "tasks.jsonl"          # a file (relative to this file) or a hub dataset name
    limit = 8

    [[models]]
    name = "greedy"
    backend = "embedded"

    [[models]]
    name = "hot"
    backend = "embedded"
    temperature = 1.0

    [judge]
    method = "monolithic"
    backend = "embedded"

Every table and key is checked: an unknown or mistyped key is an error that names the
file, the line (when it can be found) and the key. A name that picks an extension (a
judging method, a backend kind, a protocol, a tie policy) is checked against its registry
when the file is read (:func:`registered`), so a name registered by a plug-in is accepted.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from prefjudge.backends.config import tomllib
from prefjudge.backends.registry import BACKEND_KINDS, literal_choices
from prefjudge.io import InputError, InputIssue
from prefjudge.judge.facts.judge import parse_criterion
from prefjudge.judge.methods import METHOD_NAMES, MODEL_METHODS
from prefjudge.paths import check_path_name
from prefjudge.ranking.ties import DEFAULT_TIES, TIE_POLICIES
from prefjudge.scoring.sources import hub_source_repo
from prefjudge.testbed.protocol_prompts import PROTOCOLS

PlainName = Annotated[str, AfterValidator(check_path_name)]
"""A name that becomes a file or folder name: checked by :func:`prefjudge.paths.check_path_name`.

The experiment's name (its results folder), every model's name (its files) and every
persona's name (its folder, and the built-in persona it names) are such names.
"""


def registered(names: Sequence[str]) -> Any:
    """A ``str`` field type that accepts the names in ``names``, read when a file is checked.

    ``names`` is a registry's live view (or a fixed tuple); a wrong name is worded as
    pydantic words a ``Literal`` of the names (``Input should be 'a', 'b' or 'c'``), so
    every valid name is listed.

    Args:
        names: The valid names, in the order the message lists them.

    Returns:
        An ``Annotated[str, ...]`` type for a pydantic field.
    """

    def check(value: Any) -> str:
        if isinstance(value, str) and value in names:
            return value
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": literal_choices(names)}
        )

    return Annotated[str, PlainValidator(check)]


MethodName = registered(METHOD_NAMES)
"""A registered judging method (:data:`prefjudge.judge.methods.METHOD_NAMES`)."""
FallbackName = registered(MODEL_METHODS)
"""A method that only asks a judge model (:data:`prefjudge.judge.methods.MODEL_METHODS`)."""
BackendKindName = registered(BACKEND_KINDS)
"""A registered backend kind (:data:`prefjudge.backends.registry.BACKEND_KINDS`)."""
ProtocolChoice = registered(PROTOCOLS)
"""A generation protocol (:data:`prefjudge.testbed.protocol_prompts.PROTOCOLS`)."""
TiePolicyName = registered(TIE_POLICIES)
"""A tie policy (:data:`prefjudge.ranking.ties.TIE_POLICIES`)."""


class _Strict(BaseModel):
    """Every table of the file: unknown keys refused, and every number finite.

    ``allow_inf_nan=False`` is the one rule for every float field (temperature,
    request_timeout, alpha, composite_alpha...): TOML's ``nan``, ``inf`` and ``1e999``
    are refused with the file, line and key.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ExperimentInfo(_Strict):
    """``[experiment]``: the name (the results folder) and where results go."""

    name: PlainName
    results: str = "results"
    seed: int = 0


class BenchmarkSpec(_Strict):
    """``[benchmark]``: a task file or hub dataset, and which slice of it."""

    source: str
    split: str | None = None
    subset: str | None = None
    limit: int | None = Field(default=None, ge=1)

    @field_validator("source")
    @classmethod
    def _hub_id(cls, value: str) -> str:
        hub_source_repo(value)  # UnknownSourceError is a ValueError: reported with the line
        return value


class GenerateSpec(_Strict):
    """``[generate]``: protocols, the k values, samples and the reply length."""

    protocols: list[ProtocolChoice] = ["single"]
    ks: str = "0..3"
    samples: int = Field(default=1, ge=1)
    max_tokens: int = Field(default=512, ge=1)

    @field_validator("ks")
    @classmethod
    def _parsable(cls, value: str) -> str:
        if not _ks(value):
            raise ValueError('not a k specification: use e.g. "0..5", "3" or "1,3,5"')
        return value


TRANSPORT_FIELDS = frozenset({"request_timeout", "max_retries", "max_failure_streak"})
"""Backend settings of how requests are sent, not of what is answered: no file name or
binding depends on them."""


class BackendSpec(_Strict):
    """Who answers: the backend, model name, endpoint and the key's variable.

    ``base_url`` is one URL, or a list of the URLs of replicas of one model (one
    ``--base-url`` each; a list of one is that URL). ``request_timeout``, ``max_retries``
    and ``max_failure_streak`` are the backend flags of the same names (unset: their
    defaults): the deadline of one HTTP call, the retries of a failed call, and how many
    calls in a row may fail before the stage stops.
    """

    backend: BackendKindName = "openai"
    model: str | None = None
    base_url: str | list[str] | None = None
    api_key_env: str | None = None
    request_timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    max_failure_streak: int | None = Field(default=None, ge=0)

    @field_validator("base_url")
    @classmethod
    def _replicas(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list):
            if not value:
                raise ValueError("give at least one URL (or leave base_url out)")
            if len(value) == 1:
                return value[0]
        return value


class AugmentSpec(BackendSpec):
    """``[augment]``: instructions per task (``k``), who chooses them, the seed.

    ``selector = "llm"`` asks the backend given here (``backend``, ``model``...) to choose;
    ``rule`` (the default) needs no model.
    """

    k: int = Field(default=3, ge=1, le=30)
    selector: Literal["rule", "llm"] = "rule"
    seed: int = 0
    max_tokens: int | None = Field(default=None, ge=1)


class ModelSpec(BackendSpec):
    """One ``[[models]]`` entry: who answers and how it samples."""

    name: PlainName
    temperature: float = Field(default=0.0, ge=0.0)
    seed: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)

    def slug(self) -> str:
        """``name-hash``: the file stem of everything made from this model's outputs.

        The hash covers every setting but the display name's own spelling and the
        transport settings (:data:`TRANSPORT_FIELDS`: they change no answer), so that a
        changed model gets new files and the others keep theirs.
        """
        settings = self.model_dump(mode="json", exclude={"name", *TRANSPORT_FIELDS})
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
        return f"{self.name}-{digest[:8]}"


class JudgeSpec(BackendSpec):
    """``[judge]``: the method, the judge model, guidance, and which pairs.

    ``method = "evidence"`` needs no judge model (the pairs' tests come from the augmented
    tasks); ``"hybrid"`` asks the judge model (method ``fallback``) only for the pairs the
    evidence leaves undecided. ``criterion`` names the evidence kinds that decide, in order.

    ``strategy = "all"`` (the default) judges every model pair on ``pairs`` pairs each.
    ``strategy = "suggest"`` spends ``budget`` judgments in all (round 0 included) in
    ``rounds`` rounds: round 0 judges ``seed_judgments`` pairs of every model pair (so
    that every model is compared), each later round fits the battles so far and judges
    the model pairs whose next judgments most reduce rank uncertainty
    (:mod:`prefjudge.ranking.suggest`); ``pairs`` then caps the judgments of one model
    pair.
    """

    method: MethodName = "criteralign"
    max_tokens: int | None = Field(default=None, ge=1)
    guidance: str | None = None
    criterion: str | None = None
    fallback: FallbackName = "criteralign"
    pairs: int | Literal["all"] = "all"
    strategy: Literal["all", "suggest"] = "all"
    budget: int | None = Field(default=None, ge=1)
    rounds: int = Field(default=4, ge=1, le=100)
    seed_judgments: int = Field(default=1, ge=1)

    @field_validator("pairs")
    @classmethod
    def _positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("a budget of pairs per model pair must be at least 1")
        return value

    @field_validator("criterion")
    @classmethod
    def _known_kinds(cls, value: str | None) -> str | None:
        if value is not None:
            parse_criterion(value)  # CriterionError is a ValueError: reported with the line
        return value

    @model_validator(mode="after")
    def _budget_goes_with_suggest(self) -> JudgeSpec:
        if self.strategy == "suggest" and self.budget is None:
            raise ValueError(
                'strategy = "suggest" needs a budget: the judgments to spend '
                "in all, round 0 included"
            )
        rounds_keys = sorted({"budget", "rounds", "seed_judgments"} & self.model_fields_set)
        if self.strategy == "all" and rounds_keys:
            raise ValueError(
                f'{", ".join(rounds_keys)} apply to strategy = "suggest" only; '
                'with "all", pairs sets the judgments per model pair'
            )
        return self


class PersonaSpec(BackendSpec):
    """``[personas]``: users whose voice the prompts are rewritten in, and who judge.

    The same backend rewrites the prompts (``persona rewrite``) and compares each model
    pair as the persona (``persona compare``, with the original prompts' answers: the
    single-turn k = 0 generations, so ``[generate]`` must include them). Each name is a
    :data:`PlainName`: it names the persona's folder ``personas/<name>/``.
    """

    names: list[PlainName] = Field(min_length=1)
    max_attempts: int = Field(default=3, ge=1, le=10)
    max_tokens: int | None = Field(default=None, ge=1)
    original_judging: Literal["generic", "persona"] = "generic"


class RankSpec(_Strict):
    """``[rank]``: the Bradley–Terry options and the IF/Func composite weight."""

    ties: TiePolicyName = DEFAULT_TIES
    alpha: float = Field(default=0.0, ge=0.0)
    bootstrap: int = Field(default=1000, ge=10)
    composite_alpha: float = Field(default=0.5, ge=0.0, le=1.0)


class CorrelateSpec(_Strict):
    """``[correlate]``: an Elo file (e.g. LMArena's) to correlate the composite with."""

    elo: str
    elo_model_col: str | None = None
    elo_col: str | None = None


class ReportSpec(_Strict):
    """``[report]``: the report's bootstrap resamples."""

    bootstrap: int = Field(default=1000, ge=0)


class Experiment(_Strict):
    """A whole experiment file."""

    experiment: ExperimentInfo
    benchmark: BenchmarkSpec
    augment: AugmentSpec = AugmentSpec()
    generate: GenerateSpec = GenerateSpec()
    models: list[ModelSpec] = Field(min_length=1)
    judge: JudgeSpec | None = None
    personas: PersonaSpec | None = None
    rank: RankSpec = RankSpec()
    correlate: CorrelateSpec | None = None
    report: ReportSpec = ReportSpec()

    @model_validator(mode="after")
    def _personas_need_plain_prompts(self) -> Experiment:
        if self.personas is not None and not (
            "single" in self.generate.protocols and 0 in _ks(self.generate.ks)
        ):
            raise ValueError(
                "[personas] compares with the answers to the original prompts: "
                "[generate] needs protocol 'single' and k = 0"
            )
        return self

    @model_validator(mode="after")
    def _budget_covers_round_zero(self) -> Experiment:
        judge = self.judge
        if judge is None or judge.strategy != "suggest" or judge.budget is None:
            return self
        n_pairs = len(self.models) * (len(self.models) - 1) // 2
        if judge.budget < judge.seed_judgments * n_pairs:
            raise ValueError(
                f"judge.budget = {judge.budget} is below round 0's "
                f"{judge.seed_judgments * n_pairs} judgments (seed_judgments = "
                f"{judge.seed_judgments} for each of the {n_pairs} model pairs)"
            )
        return self

    @field_validator("models")
    @classmethod
    def _distinct(cls, models: list[ModelSpec]) -> list[ModelSpec]:
        names = [model.name for model in models]
        doubles = sorted({name for name in names if names.count(name) > 1})
        if doubles:
            raise ValueError(f"model names must differ: {', '.join(doubles)}")
        return models


def _ks(text: str) -> list[int]:
    from prefjudge.testbed.protocols import parse_k

    try:
        return parse_k(text)
    except ValueError:
        return []


def _line_of(text: str, location: tuple[str | int, ...]) -> int:
    """The line of ``location``'s last key in the TOML text (0 when not found).

    The key is looked for inside its table: ``models.1.name`` is the ``name`` after the
    second ``[[models]]`` header, not the first ``name`` of the file.
    """
    keys = [part for part in location if isinstance(part, str)]
    if not keys:
        return 0
    start, table = 0, None
    for part in location[:-1]:
        if isinstance(part, str):
            header = re.compile(rf"^[ \t]*\[+[ \t]*{re.escape(part)}[ \t]*\]+", re.MULTILINE)
            found = header.search(text, start)
            start, table = (found.start(), header) if found else (start, None)
        elif table is not None:  # the n-th [[table]] entry
            for _ in range(part):
                found = table.search(text, start + 1)
                start = found.start() if found else start
    pattern = re.compile(rf"^[ \t]*(\[+[ \t]*)?{re.escape(keys[-1])}[ \t]*(=|\]|\.)", re.MULTILINE)
    match = pattern.search(text, start)
    return text.count("\n", 0, match.start()) + 1 if match else 0


def issue_at(path: Path, location: tuple[str | int, ...], message: str) -> InputIssue:
    """A problem with the value at ``location`` of the experiment file ``path``.

    Args:
        path: The experiment file.
        location: The key, e.g. ``("benchmark", "source")``.
        message: What is wrong.

    Returns:
        The issue, with its line found as for a bad key (0 when the file cannot be read).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError):
        text = ""
    where = ".".join(str(part) for part in location)
    return InputIssue(str(path), _line_of(text, location), where, message)


_MESSAGES = {
    "extra_forbidden": "unknown key",
    "finite_number": "not a finite number (nan, inf and 1e999 are refused)",
}
"""Messages for a person, by pydantic error type (others keep pydantic's)."""

_TOO_DEEP = (
    "arrays or inline tables nested too deeply to read; an experiment file needs "
    "no nesting beyond a list of names"
)


def _read_text(path: Path) -> str:
    """The experiment file's text: UTF-8 (a BOM is allowed), else one message for a person.

    Raises:
        InputError: The file cannot be read, or is not UTF-8 (UTF-16 is named as such;
            otherwise the line of the first bad byte).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError([InputIssue(str(path), 0, "", f"cannot read: {exc}")]) from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data:  # no TOML holds NUL
        raise InputError(
            [
                InputIssue(
                    str(path),
                    0,
                    "",
                    "not UTF-8 text: it looks like UTF-16 (a "
                    "byte-order mark or NUL bytes); save it as UTF-8",
                )
            ]
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = (
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte {exc.start + 1}); "
            "save it as UTF-8"
        )
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError([InputIssue(str(path), line, "", message)]) from None


def load_experiment(path: str | Path) -> tuple[Experiment, Path]:
    """Read and check an experiment file.

    Returns:
        The experiment and the folder that relative paths in it are relative to.

    Raises:
        InputError: The file is not UTF-8 TOML (or nests too deeply), or a key is
            unknown, missing or mistyped (each problem with the file, line and key).
    """
    path = Path(path)
    text = _read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", 0) or 0
        raise InputError([InputIssue(str(path), line, "", f"not valid TOML: {exc}")]) from None
    except RecursionError:
        raise InputError([InputIssue(str(path), 0, "", _TOO_DEEP)]) from None
    try:
        experiment = Experiment.model_validate(data)
    except RecursionError:
        raise InputError([InputIssue(str(path), 0, "", _TOO_DEEP)]) from None
    except ValidationError as exc:
        issues = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"])
            message = _MESSAGES.get(error["type"], error["msg"])
            issues.append(InputIssue(str(path), _line_of(text, error["loc"]), where, message))
        raise InputError(issues) from None
    return experiment, path.resolve().parent
