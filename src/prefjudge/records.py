"""Pydantic records that cross stage boundaries.

Every stage reads and writes these as JSONL, so any stage can run alone from files.
Records that carry user data (generations, tasks) keep unknown fields and pass them
through untouched; generations and their turns are written back with the keys, and in
the order, they were read with.

The contracts between stages: :class:`Generation` (``generate`` → ``score``; the
protocol fields ``protocol``, ``k``, ``sample``, ``turns`` and ``error`` are typed, and
required in :class:`ProtocolGeneration`), :class:`ScoredSample` (``score`` →
``report``), :class:`Battle` (``judge`` → ``rank``: :meth:`Verdict.battle`, and
:func:`battle_of` for a verdict read from a file: the one rule of what counts) and
:class:`Usage` (a backend's counters and one judged item's cost).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    WrapSerializer,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from prefjudge.paths import check_path_name

CheckStatus = Literal["pass", "fail", "error"]
FuncStatus = Literal["pass", "fail", "timeout", "error"]
TestFormat = Literal["bigcodebench", "humaneval", "evalplus", "stdio", "none"]
Winner = Literal["model_a", "model_b", "tie"]


def normalize_model_name(name: str) -> str:
    """Return a model name in Unicode NFC, so that ``café`` is one model however typed.

    Args:
        name: The name as read.

    Returns:
        Its NFC form (case and spacing are kept).
    """
    return unicodedata.normalize("NFC", name)


ModelName = Annotated[str, AfterValidator(normalize_model_name)]
"""A model name, normalised to Unicode NFC on input."""


def model_name_warnings(raw_names: Iterable[str]) -> list[str]:
    """Warn about model names that look like one model written two ways.

    Two cases: names that are the same after NFC normalisation but were written in
    different forms (they are merged, since every reader normalises), and names that
    differ only by case after NFC (kept apart: ``GPT-4o`` and ``gpt-4o`` may be different
    models, but usually are a typo).

    Args:
        raw_names: Every model name as it appeared in one input, before normalisation.

    Returns:
        One message per group, e.g. ``model names 'Model-A' and 'model-a' differ only by
        case; they are kept as 2 different models``.
    """
    forms: dict[str, set[str]] = {}
    for raw in raw_names:
        forms.setdefault(normalize_model_name(raw), set()).add(raw)
    messages = []
    for name, raws in sorted(forms.items()):
        if len(raws) > 1:
            written = " and ".join(ascii(raw) for raw in sorted(raws))
            messages.append(
                f"model name {name!r} is written in {len(raws)} Unicode normalisation forms "
                f"({written}); they are merged into one model"
            )
    by_case: dict[str, list[str]] = {}
    for name in sorted(forms):
        by_case.setdefault(name.casefold(), []).append(name)
    for names in by_case.values():
        if len(names) > 1:
            listed = ", ".join(repr(n) for n in names[:-1]) + f" and {names[-1]!r}"
            messages.append(
                f"model names {listed} differ only by case; they are kept as {len(names)} "
                "different models (rename them if they are the same model)"
            )
    return messages


class ParamSpec(BaseModel):
    """A typed parameter of a VeriCode instruction.

    Attributes:
        name: Parameter name used in prompt templates (``{name}``) and in ``params``.
        type: ``int`` (bounded by ``min``/``max``) or ``choice`` (one of ``choices``).
        default: Value used when a generation gives none.
        min: Smallest allowed value (``int`` only).
        max: Largest allowed value (``int`` only).
        choices: Allowed values (``choice`` only).
        recommended: Values the taxonomy suggests for augmentation.
        description: What the parameter controls.
        aliases: Other names accepted for the parameter in ``params`` (older or other
            taxonomies' names); resolved parameters always use ``name``.
        valid_min: Smallest value a generation may ask for (``int`` only; default ``min``).
            ``min``/``max`` bound what augmentation chooses; ``valid_min``/``valid_max``
            what verification accepts (what Ruff accepts for the setting).
        valid_max: Largest value a generation may ask for (default ``max``).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    type: Literal["int", "choice"]
    default: int | str
    min: int | None = None
    max: int | None = None
    choices: list[str] | None = None
    recommended: list[int | str] = Field(default_factory=list)
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    valid_min: int | None = None
    valid_max: int | None = None


class VerifierSpec(BaseModel):
    """How an instruction is checked.

    Attributes:
        kind: ``ruff`` (run Ruff with ``select``) or ``python`` (an AST/regex/JSON check
            implemented in :mod:`prefjudge.scoring.verify`, named by ``check``).
        select: Ruff rule codes or prefixes to select.
        preview: Whether the rules need Ruff's preview mode.
        settings: Ruff settings as TOML dotted keys, with ``{param}`` placeholders.
        check: Name of the built-in check for ``kind: python`` (or the extra check run
            beside Ruff, e.g. the generic ``df`` name check of ``library_2``).
        scope: ``code`` (the extracted code) or ``response`` (the whole response).
        profiles: Per verification profile (``strict``), fields that differ from the
            default (reference) verifier; see :meth:`for_profile`.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["ruff", "python"]
    select: list[str] = Field(default_factory=list)
    preview: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)
    check: str | None = None
    scope: Literal["code", "response"] = "code"
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def for_profile(self, profile: str) -> VerifierSpec:
        """The verifier as the named profile runs it (itself when nothing differs).

        Raises:
            pydantic.ValidationError: When the profile's overrides are not verifier fields.
        """
        override = self.profiles.get(profile)
        if not override:
            return self
        fields = {**self.model_dump(exclude={"profiles"}), **override}
        return VerifierSpec.model_validate(fields)


class InstructionSpec(BaseModel):
    """One verifiable, non-functional code instruction of the VeriCode taxonomy."""

    model_config = ConfigDict(extra="forbid")

    id: str
    category: Literal["style", "logic", "documentation", "error_handling", "library"]
    name: str
    description: str
    prompt_single: str
    prompt_multi: str
    params: list[ParamSpec] = Field(default_factory=list)
    verifier: VerifierSpec
    conflicts: list[str] = Field(default_factory=list)


class InstructionRef(BaseModel):
    """An instruction attached to a task: its id and concrete parameters."""

    model_config = ConfigDict(extra="forbid")

    id: str
    params: dict[str, Any] = Field(default_factory=dict)


class StdioCase(BaseModel):
    """One stdin/stdout test case (LiveCodeBench style)."""

    input: str
    output: str


class Task(BaseModel):
    """A benchmark task in one shape, whatever benchmark it came from.

    Attributes:
        task_id: Unique id within its benchmark (e.g. ``BigCodeBench/13``).
        prompt: What the model is asked.
        entry_point: Function the tests call (None for stdin/stdout programs).
        test_format: Which sandbox adapter runs the tests.
        tests: Test code (BigCodeBench ``TestCases``, HumanEval ``check``).
        canonical_solution: Reference solution, complete code when known.
        base_inputs: EvalPlus base inputs (lists of positional arguments).
        plus_inputs: EvalPlus plus inputs.
        atol: Absolute tolerance for float outputs (EvalPlus).
        stdio_cases: stdin/stdout cases.
        libs: Third-party libraries the task needs.
        source: Benchmark the task was loaded from.
        metadata: Anything else the benchmark carries.
    """

    model_config = ConfigDict(extra="allow")

    task_id: str
    prompt: str = ""
    entry_point: str | None = None
    test_format: TestFormat = "none"
    tests: str = ""
    canonical_solution: str | None = None
    base_inputs: list[Any] | None = None
    plus_inputs: list[Any] | None = None
    atol: float = 0.0
    stdio_cases: list[StdioCase] = Field(default_factory=list)
    libs: list[str] = Field(default_factory=list)
    source: str = "prefjudge"
    metadata: dict[str, Any] = Field(default_factory=dict)


MOST_PER_TASK = 10_000
"""Bound on the counts an augmented task records (a damaged 10**400 is refused)."""


class AugmentStats(BaseModel):
    """What the selector recorded about one task (``metadata.augment`` of an augmented task).

    Attributes:
        k: Instructions asked for.
        param_assignments: Parameters assigned.
        param_repaired: Assignments repaired because they were invalid.
    """

    model_config = ConfigDict(extra="allow")

    k: int | None = Field(default=None, ge=0, le=MOST_PER_TASK)
    param_assignments: int = Field(default=0, ge=0, le=MOST_PER_TASK)
    param_repaired: int = Field(default=0, ge=0, le=MOST_PER_TASK)


class AugmentedTask(Task):
    """A task with the k instructions chosen for it, in selection order.

    ``metadata.augment``, when present, must hold :class:`AugmentStats` (checked on input:
    a resumed output whose ``k`` is NaN or text is refused with its line and field).

    Attributes:
        instructions: Chosen instructions with concrete parameters, in the order of the
            seeded permutation the selector scanned (position matters for analysis).
        selector: Who chose them: ``rule`` or ``llm:<model>``.
        selector_seed: Seed of the permutation.
        param_repairs: Repairs made to invalid parameter assignments (one line each).
    """

    instructions: list[InstructionRef] = Field(default_factory=list)
    selector: str = ""
    selector_seed: int | None = None
    param_repairs: list[str] = Field(default_factory=list)

    @field_validator("metadata")
    @classmethod
    def _augment_stats(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "augment" in value:
            try:
                AugmentStats.model_validate(value["augment"])
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(p) for p in ("augment", *error["loc"]))
                raise PydanticCustomError(
                    "augment_stats", "{where}: {msg}", {"where": where, "msg": error["msg"]}
                ) from None
        return value

    def augment_stats(self) -> AugmentStats:
        """The selector's record of this task (``metadata.augment``; empty when absent)."""
        return AugmentStats.model_validate(self.metadata.get("augment", {}))


class _KeyOrder(tuple[str, ...]):
    """The keys of a record's input, in order: how it is written back, not part of its value.

    Every two key orders compare equal, so records read from differently ordered inputs
    (or built in code) that hold the same values are still equal.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _KeyOrder)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


class _AsGiven(BaseModel):
    """Base of user-data records that are written back with the keys and order they came with.

    Two class settings say how a record is written (both empty: the usual pydantic dump):

    * ``_INPUT_ORDERED``: fields that follow the other fields, mixed with the unknown
      (extra) keys in the order the input gave them, as untyped extras would be;
    * ``_WRITTEN_WHEN_GIVEN``: fields written only when they were given (in the input or
      to the constructor), so that a default never adds a key the input did not have.
    """

    _INPUT_ORDERED: ClassVar[frozenset[str]] = frozenset()
    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = frozenset()
    _key_order: _KeyOrder = PrivateAttr(default_factory=_KeyOrder)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        record = handler(data)
        if isinstance(data, dict) and isinstance(record, _AsGiven):
            record._key_order = _KeyOrder(data)
        return record

    @model_serializer(mode="wrap")
    def _write_as_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict) or not (self._INPUT_ORDERED or self._WRITTEN_WHEN_GIVEN):
            return data
        for name in self._WRITTEN_WHEN_GIVEN - self.model_fields_set:
            data.pop(name, None)
        tail = self._INPUT_ORDERED | (self.__pydantic_extra__ or {}).keys()
        if not tail.intersection(data):
            return data
        ordered = {key: data[key] for key in data if key not in tail}
        for key in (*self._key_order, *data):
            if key in tail and key in data and key not in ordered:
                ordered[key] = data[key]
        return ordered


class Turn(_AsGiven):
    """One user turn and the model's reply in a generation protocol.

    Unknown fields are kept; ``response``, ``instruction`` and ``error`` are written only
    when given, so a turn read from a file is written back as it was.

    Attributes:
        index: 1-based turn number.
        prompt: What the user said at this turn.
        response: What the model replied ("" when the call failed).
        instruction: The instruction this turn added (None for the first multi-turn turn
            and for single-turn generations).
        error: Why the model call failed, when it did.
    """

    model_config = ConfigDict(extra="allow")
    _INPUT_ORDERED: ClassVar[frozenset[str]] = frozenset(
        {"index", "prompt", "response", "instruction", "error"}
    )
    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = frozenset({"response", "instruction", "error"})

    index: int
    prompt: str
    response: str = ""
    instruction: InstructionRef | None = None
    error: str | None = None


ProtocolName = Literal["single", "multi"]
"""The interaction protocols ``prefjudge generate`` runs."""

_PROTOCOL_FIELDS = frozenset({"protocol", "k", "sample", "turns", "error", "response_is_code"})


class Generation(_AsGiven):
    """A model's response to a task, with the instructions it was asked to follow.

    Unknown fields are kept. The protocol fields (written by ``prefjudge generate``) are
    optional and typed; each is written back only when it was given, after the other
    fields and in the order of the input, so a file is written back as it was read.

    Attributes:
        id: Unique id per model (the resume key of ``score``), if any.
        task_id: The task answered.
        model: Who answered.
        response: The reply (code or a full answer).
        instructions: The instructions the model was asked to follow, in prompt order.
        protocol: ``single`` or ``multi`` for ``generate`` records; other names are kept
            (reports show them after single and multi).
        k: Number of instructions asked for (a non-negative integer).
        sample: Sample index (distinct samples of the same prompt).
        turns: Every user turn and the model's reply, in order.
        error: Why the generation has no response (a model call failed).
        response_is_code: The response is code as a whole, never Markdown to find code in
            (an EvalPlus or BigCodeBench sample's ``solution`` or ``completion``): a fenced
            example inside a docstring stays part of it.
    """

    model_config = ConfigDict(extra="allow")
    _INPUT_ORDERED: ClassVar[frozenset[str]] = _PROTOCOL_FIELDS
    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = _PROTOCOL_FIELDS

    id: str | None = None
    task_id: str
    model: ModelName
    response: str
    instructions: list[InstructionRef] = Field(default_factory=list)
    protocol: str | None = None
    k: int | None = None
    sample: int = Field(default=0, ge=0, strict=True)
    turns: list[Turn] | None = None
    error: str | None = None
    response_is_code: bool = Field(default=False, strict=True)

    @field_validator("protocol", mode="before")
    @classmethod
    def _protocol_is_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise PydanticCustomError("protocol_type", "expected a string")
        return value

    @field_validator("k", mode="before")
    @classmethod
    def _k_is_a_count(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PydanticCustomError(
                "k_type", "must be a non-negative integer, got {got}", {"got": repr(value)}
            )
        return value


class ProtocolGeneration(Generation):
    """A generation made under an interaction protocol (the ``prefjudge generate`` record).

    The same record as :class:`Generation` with the protocol fields required; every field
    is always written, in declared order (``response_is_code`` only when given: a model's
    reply is Markdown).

    Attributes:
        protocol: ``single`` or ``multi``.
        k: Number of instructions asked for (the first k of the task's instructions).
        sample: Sample index (distinct samples of the same prompt).
        turns: Every user turn and the model's reply, in order (1 for single-turn,
            k + 1 for multi-turn, fewer when a turn failed).
        error: Why the generation has no response (a model call failed), else None.
    """

    _INPUT_ORDERED: ClassVar[frozenset[str]] = frozenset()
    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = frozenset({"response_is_code"})

    protocol: ProtocolName  # type: ignore[assignment]
    k: int  # type: ignore[assignment]
    turns: list[Turn]  # type: ignore[assignment]


class CheckResult(BaseModel):
    """The outcome of one instruction check on one response."""

    id: str
    params: dict[str, Any] = Field(default_factory=dict)
    status: CheckStatus
    reason: str = ""


class SetResult(BaseModel):
    """The outcome on one input set of a HumanEval+/MBPP+ task, judged on its own.

    EvalPlus runs a sample on the base inputs and, separately, on the plus inputs, and
    reports ``base_status`` and ``plus_status``; prefjudge keeps the same two outcomes.

    Attributes:
        status: ``pass`` when every input of the set matched the reference.
        detail: Why not, when it did not.
        failed: Indexes (in the set) of the inputs that did not match, as EvalPlus lists
            them in ``base_fail_tests`` / ``plus_fail_tests``.
    """

    status: FuncStatus
    detail: str = ""
    failed: list[int] = Field(default_factory=list)


class FuncResult(BaseModel):
    """The outcome of running one response against its task's tests.

    Attributes:
        status: The verdict on the whole task (for HumanEval+/MBPP+: base and plus).
        detail: Why, in a line or a few.
        sets: For HumanEval+/MBPP+ only: the outcome on each input set (``base``,
            ``plus``) on its own; ``status`` is ``pass`` only when both pass.
    """

    status: FuncStatus
    detail: str = ""
    sets: dict[str, SetResult] | None = Field(default=None, exclude_if=lambda value: value is None)


def generation_failed(record: Generation | Mapping[str, Any]) -> bool:
    """Whether a generation is a failed model request rather than an answer.

    The one rule every stage applies (``score``, ``judge``, ``pair``, ``persona``, ``run``
    and the leaderboard): a generation whose ``error`` is set has no answer to score or
    judge. It is never verified, tested or judged; it counts as an error of its model,
    never in a rate, and waits for ``--retry-errors``.

    Args:
        record: A generation (or scored sample), or its JSON object as read from a file.

    Returns:
        True when its model call failed.
    """
    if isinstance(record, Generation):
        return record.error is not None
    return record.get("error") is not None


class ScoredSample(Generation):
    """A generation plus its instruction results and functional result.

    Attributes:
        status: ``error`` for a generation whose model call failed
            (:func:`generation_failed`): it was neither verified nor tested, ``error`` says
            why, and no rate counts it. Written only then (``ok`` is not written).
    """

    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = _PROTOCOL_FIELDS | {"status"}

    status: Literal["ok", "error"] = "ok"
    instruction_results: list[CheckResult] = Field(default_factory=list)
    if_instruction: float | None = None
    if_task: bool | None = None
    func: FuncResult | None = None
    turn_results: list[list[CheckResult]] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Battle(BaseModel):
    """One pairwise comparison between two models: what ``judge`` writes, ``rank`` reads.

    A :class:`Verdict` gives its battle with :meth:`Verdict.battle`; ``prefjudge rank``
    reads battles from verdict files, arena CSV/JSONL and other tables into this record
    (:mod:`prefjudge.ranking.inputs`).

    Attributes:
        model_a: The first model (Unicode NFC, not blank).
        model_b: The second model, not the same as ``model_a``.
        winner: ``model_a``, ``model_b`` or ``tie``.
        weight: How much the battle counts (finite, >= 0).
        category: A grouping for per-category leaderboards (``rank --by``).
    """

    model_config = ConfigDict(extra="allow")

    model_a: ModelName = Field(pattern=r"\S")
    model_b: ModelName = Field(pattern=r"\S")
    winner: Winner
    weight: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    category: str | None = None

    @model_validator(mode="after")
    def _two_models(self) -> Battle:
        if self.model_a == self.model_b:
            raise PydanticCustomError(
                "same_model", "model_a and model_b are the same model {name}",
                {"name": repr(self.model_a)},
            )
        return self


Side = Literal["A", "B", "tie"]
SIDE_WINNERS: dict[str, Winner] = {"A": "model_a", "B": "model_b", "tie": "tie"}
"""A preferred side as the battle outcome ``rank`` counts."""
CriterionOutcome = Literal["A", "B", "tie", "insufficient"]
JudgeMethodName = Literal["criteralign", "monolithic", "pointwise", "evidence", "hybrid"]
"""A judging method's name (``Verdict.method``); the methods derive from ``JudgeMethod``."""
EvidenceKind = Literal["correctness", "efficiency", "security", "instructions"]
FactOutcome = Literal["A", "B", "tie", "insufficient", "error"]


_CODE_FLAGS = ("response_a_is_code", "response_b_is_code")


class Pair(BaseModel):
    """Two responses to one instruction, to be judged (optionally with a human label).

    Attributes:
        pair_id: Unique key of the pair within its file (resume key of ``prefjudge judge``).
        task_id: The task both responses answer.
        instruction: What the user asked for (the prompt both models saw).
        response_a: The first response (code or a full reply).
        response_b: The second response.
        model_a: Who wrote ``response_a`` (``A`` when unknown).
        model_b: Who wrote ``response_b`` (``B`` when unknown).
        label: The human preference, when known: ``A``, ``B`` or ``tie``.
        votes: Individual human votes behind ``label`` (``A``/``B``/``tie`` each), if any.
        aspect_votes: Per-aspect human votes (aspect → ``A``/``B``/``tie``), if the data has them.
        category: A grouping for per-category guidance and reports (e.g. ``bigcodebench``).
        evidence_a: Deterministic facts about ``response_a`` (verifier and test results).
        evidence_b: Deterministic facts about ``response_b``.
        source: Which loader produced the pair and from what file.
        criterion: What decides the pair for the evidence judge: one evidence kind, or an
            ordered combination separated by commas (``correctness,efficiency``); set by
            loaders that know it (CodePrefBench: the split).
        instructions: The instructions both responses were asked to follow (pairs joined
            from generations of augmented tasks), for the evidence judge's checks.
        response_a_is_code: ``response_a`` is code as a whole, never Markdown to find code
            in (joined from a sample file's ``solution``: see
            :attr:`Generation.response_is_code`); written only when true.
        response_b_is_code: The same for ``response_b``.
    """

    model_config = ConfigDict(extra="allow")

    pair_id: str
    task_id: str
    instruction: str
    response_a: str
    response_b: str
    model_a: ModelName = "A"
    model_b: ModelName = "B"
    label: Side | None = None
    votes: list[Side] = Field(default_factory=list)
    aspect_votes: dict[str, Side] = Field(default_factory=dict)
    category: str | None = None
    evidence_a: list[str] = Field(default_factory=list)
    evidence_b: list[str] = Field(default_factory=list)
    source: str | None = None
    criterion: str | None = None
    instructions: list[InstructionRef] = Field(default_factory=list)
    response_a_is_code: bool = Field(default=False, strict=True)
    response_b_is_code: bool = Field(default=False, strict=True)

    @model_serializer(mode="wrap")
    def _code_flags_when_true(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Write ``response_a_is_code``/``response_b_is_code`` only when true."""
        data = handler(self)
        for name in _CODE_FLAGS:
            if data.get(name) is False:
                del data[name]
        return data

    def is_code(self, side: Literal["A", "B"]) -> bool:
        """Whether that side's response is code as a whole (never fence-extracted)."""
        return self.response_a_is_code if side == "A" else self.response_b_is_code


NO_EVIDENCE = "evidence:none"
"""``decided_by`` of an evidence verdict for which no kind of evidence could be had: a tie
by default, but not a battle (nothing was compared)."""

VERDICT_KEYS = frozenset({"pair_id", "method", "model_a"})
"""Keys that tell a :class:`Verdict` among the records of a file (:func:`is_verdict_row`)."""

BATTLE_FIELDS = frozenset({"pair_id", "task_id", "model_a", "model_b", "method", "status",
                           "winner", "category", "error", "decided_by"})
"""The fields of a verdict that decide its battle (read by :meth:`Verdict.from_row`)."""


def is_verdict_row(row: Mapping[str, Any]) -> bool:
    """Whether a record read from a file is a ``prefjudge`` verdict.

    A verdict carries ``pair_id``, ``method`` and ``model_a`` (a pair has no ``method``, a
    plain battle row no ``pair_id``).

    Args:
        row: One record as read (column or key → value).

    Returns:
        True when the record holds every key of :data:`VERDICT_KEYS`.
    """
    return VERDICT_KEYS <= row.keys()


class Fact(BaseModel):
    """One kind of evidence weighed by the evidence judge, and what it showed.

    Attributes:
        kind: ``correctness``, ``efficiency``, ``security`` or ``instructions``.
        outcome: ``A`` or ``B`` (that side is better on this kind), ``tie`` (the facts do
            not separate them), ``insufficient`` (the facts cannot be had for this pair,
            e.g. no tests for its task, or a side that does not run) or ``error`` (the
            analysis itself failed: never counted as a tie).
        fact: What was found, in words (the sentence a user reads).
        detail: Measurements behind it (statuses, timings, findings), as plain values.
        source: Where it came from: ``""`` (judged here; not written) or the results it
            was built on, side by side (``A: scores m1.jsonl; B: judged here``).
    """

    model_config = ConfigDict(extra="forbid")

    kind: EvidenceKind
    outcome: FactOutcome
    fact: str
    detail: dict[str, Any] = Field(default_factory=dict)
    source: str = Field(default="", exclude_if=lambda value: not value)


class Criterion(BaseModel):
    """One atomic, judgeable criterion on which two responses may differ.

    Attributes:
        id: Short key, unique within a pair (``c1``, ``c2``, ...; ``c3.1`` for a refinement).
        text: The criterion, phrased so that a reader can decide which response meets it better.
        parent: The tied criterion this one refines, if any.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    parent: str | None = None


class CriterionVerdict(BaseModel):
    """A criterion's verdict in both presentation orders, mapped back to the pair's A and B.

    Attributes:
        criterion: The criterion.
        forward: Verdict with A shown first (``None`` when the judge gave none).
        swapped: Verdict with B shown first, already mapped back to the pair's labels.
        outcome: The verdict that survives the swap, or ``None`` when the two orders disagree
            or either is missing (then the criterion is dropped).
        reason_forward: The judge's reason in the forward order.
        reason_swapped: The judge's reason in the swapped order.
    """

    model_config = ConfigDict(extra="forbid")

    criterion: Criterion
    forward: CriterionOutcome | None = None
    swapped: CriterionOutcome | None = None
    outcome: CriterionOutcome | None = None
    reason_forward: str = ""
    reason_swapped: str = ""

    @property
    def consistent(self) -> bool:
        """Whether both orders gave the same verdict."""
        return self.forward is not None and self.forward == self.swapped


Count = Annotated[int, Field(ge=0, le=2**63 - 1)]
"""A counter as records hold it: a whole number from 0 to 2**63 - 1 (a file read back with
a negative or astronomically large count is refused with its line and field)."""


class Usage(BaseModel):
    """Request counters: a backend's over its lifetime, or what one judged item cost.

    Backends count every field; the per-item cost of a verdict or persona comparison is
    counted from results (:class:`prefjudge.judge.common.Ledger`), which carry no
    transport retries or invalid replies, so :data:`ItemCost` leaves those two out of the
    record while they are zero.

    Attributes:
        requests: Requests handled (one per backend request, cached or not).
        model_calls: Completions obtained from the model (cache misses, repairs included).
        cache_hits: Completions served from the cache (per item: requests answered
            entirely from the cache).
        prompt_tokens: Prompt tokens of the model calls.
        completion_tokens: Completion tokens of the model calls.
        retries: Transport retries (timeouts, 429, 5xx).
        invalid_outputs: Structured replies that failed validation (retried or not).
        errors: Requests that ended in an error.
    """

    requests: Count = 0
    model_calls: Count = 0
    cache_hits: Count = 0
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    retries: Count = 0
    invalid_outputs: Count = 0
    errors: Count = 0

    def as_dict(self) -> dict[str, int]:
        """Return every counter as a plain dict, in field order."""
        return {name: getattr(self, name) for name in type(self).model_fields}


_BACKEND_COUNTERS = ("retries", "invalid_outputs")


def _item_cost(usage: Usage, handler: SerializerFunctionWrapHandler) -> Any:
    data = handler(usage)
    if isinstance(data, dict):
        for name in _BACKEND_COUNTERS:
            if not data.get(name):
                data.pop(name, None)
    return data


ItemCost = Annotated[Usage, WrapSerializer(_item_cost)]
"""What judging one item cost: a :class:`Usage` written without ``retries`` and
``invalid_outputs`` while they are zero (the per-item ledger does not count them)."""


class Verdict(BaseModel):
    """The judgement of one pair; :meth:`battle` is what ``prefjudge rank`` counts.

    Attributes:
        pair_id: The pair's key.
        task_id: The pair's task.
        model_a: Who wrote response A.
        model_b: Who wrote response B.
        method: ``criteralign``, ``monolithic``, ``pointwise``, ``evidence`` or ``hybrid``.
        status: ``ok``, or ``error`` when a stage failed for this pair (then ``winner`` is
            None and ``error`` says which stage and why; the pair is never counted as a tie).
        winner: ``model_a``, ``model_b`` or ``tie`` (the battle outcome), None on error.
        preferred: The same as ``A``/``B``/``tie``.
        orders: Per-order raw final verdicts, already mapped back to A/B: ``forward`` and
            ``swapped``.
        position_consistent: Whether both orders agreed on the final verdict.
        reasons: The judge's reasons per order.
        criteria: Criterion verdicts (criteralign and pointwise); empty for monolithic.
        decisive: Ids of the criteria the synthesis named as decisive.
        inconsistency_rate: Share of criteria whose verdict flipped under the swap.
        refined: Number of tied criteria that were split into sub-criteria.
        scores: Pointwise totals per side (pointwise only).
        label: The human label, copied from the pair when it has one.
        category: The pair's category.
        error: What went wrong (stage and reason), when ``status`` is ``error``.
        warnings: Non-fatal problems (e.g. a failed tie refinement: the verdict stands
            without it).
        judge_model: The backend's model identity.
        guidance: Name and content hash of the guidance used, if any.
        evidence: Whether deterministic evidence was given to the judge.
        cost: Requests, model calls, cache hits, tokens and errors spent on this pair.
        facts: What each evidence kind showed (``evidence`` and ``hybrid``), in the order
            they were weighed.
        decided_by: Which path decided the verdict: ``evidence:<kind>`` (a fact) or
            ``llm`` (the judge model, for ``hybrid`` when the facts did not separate the
            two); None for the purely model-based methods.
        features_a: Style features of response A (``token_len``, ``header_count``,
            ``list_count``, ``bold_count``), carried into battles for ``rank --control``.
        features_b: The same for response B.
        features_by: How the features were counted (the tokenizer used for ``token_len``).
    """

    model_config = ConfigDict(extra="forbid")

    pair_id: str
    task_id: str
    model_a: ModelName
    model_b: ModelName
    method: JudgeMethodName
    status: Literal["ok", "error"] = "ok"
    winner: Winner | None = None
    preferred: Side | None = None
    orders: dict[str, Side | None] = Field(default_factory=dict)
    position_consistent: bool | None = None
    reasons: dict[str, str] = Field(default_factory=dict)
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    decisive: list[str] = Field(default_factory=list)
    inconsistency_rate: float | None = None
    refined: int = 0
    scores: dict[str, float] = Field(default_factory=dict)
    label: Side | None = None
    category: str | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    judge_model: str = ""
    guidance: str | None = None
    evidence: bool = False
    cost: ItemCost = Field(default_factory=Usage)
    facts: list[Fact] = Field(default_factory=list)
    decided_by: str | None = None
    features_a: dict[str, float] | None = None
    features_b: dict[str, float] | None = None
    features_by: str | None = None

    def battle(self) -> Battle | None:
        """Return this verdict as the battle ``prefjudge rank`` counts.

        Returns:
            The battle (the pair's models, the winner and the category, weight 1, and the
            responses' style features when known), or None when judging failed (an error is
            never counted, not even as a tie) or when no evidence could be had
            (:data:`NO_EVIDENCE`).

        Raises:
            pydantic.ValidationError: When both sides are the same model (no battle to count).
        """
        if self.winner is None or self.decided_by == NO_EVIDENCE:
            return None
        features = {}
        if self.features_a is not None and self.features_b is not None:
            features = {"features_a": self.features_a, "features_b": self.features_b}
        return Battle(model_a=self.model_a, model_b=self.model_b, winner=self.winner,
                      category=self.category, **features)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Verdict:
        """Read a verdict row of a file for its battle: the fields that decide it, validated.

        Only :data:`BATTLE_FIELDS` are read, so a verdict's other fields (criteria, facts,
        reasons, style features) and any column a user added never stop it from being
        counted; the result is a verdict holding those fields alone, whose :meth:`battle`
        is the row's battle (without style features: readers that need them read them).

        Args:
            row: One verdict as read from a file (key → value).

        Returns:
            The verdict, with the defaults for every field not read.

        Raises:
            pydantic.ValidationError: When a field read is not a verdict's (a required one
                missing, an unknown method or status, a winner other than ``model_a``,
                ``model_b``, ``tie``).
        """
        return cls.model_validate({key: row[key] for key in BATTLE_FIELDS if key in row})


def battle_of(row: Mapping[str, Any]) -> Battle | None:
    """The battle a verdict row of a file counts as: ``Verdict.from_row(row).battle()``.

    Every reader that turns verdict records into battles (``rank``, ``rank --suggest`` and
    ``--control``, the experiment's judge rounds and leaderboard) goes through here, so the
    rule of :meth:`Verdict.battle` holds everywhere: an error is not a battle, nor is a
    verdict decided by no evidence (:data:`NO_EVIDENCE`).

    Args:
        row: One verdict as read from a file (key → value).

    Returns:
        The battle (without style features), or None when the verdict is not one.

    Raises:
        pydantic.ValidationError: When the row is not a valid verdict, or names one model twice.
    """
    return Verdict.from_row(row).battle()


class InputPreferences(BaseModel):
    """How a user writes prompts (what a persona rewrite imitates).

    Attributes:
        expertise: ``beginner``, ``intermediate``, ``advanced`` or ``expert``.
        verbosity: ``terse``, ``moderate`` or ``detailed``.
        tone: How the user sounds (e.g. "casual, a little unsure").
        mentions: What the user tends to mention (their goal, constraints, context).
        avoids: What the user leaves out or would not know to say.
    """

    model_config = ConfigDict(extra="forbid")

    expertise: Literal["beginner", "intermediate", "advanced", "expert"]
    verbosity: Literal["terse", "moderate", "detailed"]
    tone: str = Field(min_length=1)
    mentions: list[str] = Field(default_factory=list)
    avoids: list[str] = Field(default_factory=list)


class OutputPreferences(BaseModel):
    """What a user values in an answer (what user-aware judging applies).

    Attributes:
        values: What makes an answer good for this user, most important first.
        dislikes: What makes an answer worse for this user.
        explanation: How much explanation the user wants: ``none``, ``brief`` or ``thorough``.
        code_style: Notes on the code the user wants to receive.
        priorities: Dimension id → weight 1–5 (how much the user cares; 3 when absent).
    """

    model_config = ConfigDict(extra="forbid")

    values: list[str] = Field(min_length=1)
    dislikes: list[str] = Field(default_factory=list)
    explanation: Literal["none", "brief", "thorough"] = "brief"
    code_style: list[str] = Field(default_factory=list)
    priorities: dict[str, int] = Field(default_factory=dict)


class Persona(BaseModel):
    """A user profile: how they ask (input) and how they judge (output).

    Attributes:
        name: Short identifier (file stem for the built-ins): a name that may become a
            file name (:func:`prefjudge.paths.check_path_name`).
        description: The free-text description the profile was built from.
        input: Input preferences.
        output: Output preferences.
    """

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, AfterValidator(check_path_name)]
    description: str = Field(min_length=1)
    input: InputPreferences
    output: OutputPreferences


class DimensionVerdict(BaseModel):
    """One dimension of a user-aware comparison, in both orders.

    Attributes:
        dimension: Dimension id (from ``rubrics/personas/dimensions.yaml``).
        forward: Verdict with A shown first.
        swapped: Verdict with B shown first, mapped back to A/B.
        outcome: Both orders agreeing, else ``tie``; None when an order is missing.
        reason_forward: The judge's reason in the forward order.
        reason_swapped: The judge's reason in the swapped order.
    """

    model_config = ConfigDict(extra="forbid")

    dimension: str
    forward: Side | None = None
    swapped: Side | None = None
    outcome: Side | None = None
    reason_forward: str = ""
    reason_swapped: str = ""


class PersonaComparison(BaseModel):
    """Two models' responses to one task compared per dimension for one user.

    Attributes:
        task_id: The task.
        condition: ``original`` (benchmark prompt) or ``persona`` (the persona's rewrite).
        persona: The persona whose preferences the judge applied, or None (generic judging).
        model_a: First model.
        model_b: Second model.
        status: ``ok``, or ``error`` (then ``error`` says why; nothing is counted).
        dimensions: One verdict per dimension.
        error: What went wrong.
        judge_model: The judge's model identity.
        cost: Requests, calls, cache hits and tokens spent.
        features_a: Style features of response A (as in :class:`Verdict`).
        features_b: Style features of response B.
        features_by: How the features were counted.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    condition: Literal["original", "persona"]
    persona: str | None = None
    model_a: ModelName
    model_b: ModelName
    status: Literal["ok", "error"] = "ok"
    dimensions: list[DimensionVerdict] = Field(default_factory=list)
    error: str | None = None
    judge_model: str = ""
    cost: ItemCost = Field(default_factory=Usage)
    features_a: dict[str, float] | None = None
    features_b: dict[str, float] | None = None
    features_by: str | None = None


class Rating(BaseModel):
    """A model's place on a leaderboard (one row of ``prefjudge rank``'s output).

    Attributes:
        model: Model name as it appears in the battles.
        rating: Elo points (``400/ln 10 · θ`` plus an offset) or, with ``--scale bt``, the
            Bradley–Terry strength normalised so that all strengths sum to 1.
        lower: Lower end of the bootstrap 95 % interval of ``rating``.
        upper: Upper end of the bootstrap 95 % interval of ``rating``.
        rank: 1 + the number of models with a strictly higher rating.
        rank_lower: Best rank the model reaches in the central 95 % of bootstrap resamples.
        rank_upper: Worst rank the model reaches in the central 95 % of bootstrap resamples.
        battles: Battles the model took part in (sum of weights), ties included.
        win_rate: ``(wins + ties / 2) / battles``.
        category: Category of the leaderboard (``--by``); None for a single leaderboard.
    """

    model: str
    rating: float
    lower: float
    upper: float
    rank: int
    rank_lower: int
    rank_upper: int
    battles: float
    win_rate: float
    category: str | None = None
