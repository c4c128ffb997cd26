"""Task records: a benchmark task, the instruction taxonomy, and augmented tasks.

An augmented task carries the instructions chosen for it (``augment`` → ``generate``).
The models build their validators on first use (``defer_build``): a command that imports
them and reads no task (``judge PAIRS``) does not pay for building them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from prefjudge.records.names import TestFormat


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

    model_config = ConfigDict(extra="forbid", defer_build=True)

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

    model_config = ConfigDict(extra="forbid", defer_build=True)

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

    model_config = ConfigDict(extra="forbid", defer_build=True)

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

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str
    params: dict[str, Any] = Field(default_factory=dict)


class StdioCase(BaseModel):
    """One stdin/stdout test case (LiveCodeBench style)."""

    model_config = ConfigDict(defer_build=True)

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

    model_config = ConfigDict(extra="allow", defer_build=True)

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

    model_config = ConfigDict(extra="allow", defer_build=True)

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
