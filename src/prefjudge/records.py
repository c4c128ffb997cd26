"""Pydantic records that cross stage boundaries.

Every stage reads and writes these as JSONL, so any stage can run alone from files.
Records that carry user data (generations, tasks) keep unknown fields and pass them
through untouched.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CheckStatus = Literal["pass", "fail", "error"]
FuncStatus = Literal["pass", "fail", "timeout", "error"]
TestFormat = Literal["bigcodebench", "humaneval", "evalplus", "stdio", "none"]
Winner = Literal["model_a", "model_b", "tie"]


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


class VerifierSpec(BaseModel):
    """How an instruction is checked.

    Attributes:
        kind: ``ruff`` (run Ruff with ``select``) or ``python`` (an AST/regex/JSON check
            implemented in :mod:`prefjudge.verify`, named by ``check``).
        select: Ruff rule codes or prefixes to select.
        preview: Whether the rules need Ruff's preview mode.
        settings: Ruff settings as TOML dotted keys, with ``{param}`` placeholders.
        check: Name of the built-in check for ``kind: python`` (or the extra check run
            beside Ruff, e.g. the generic ``df`` name check of ``library_2``).
        scope: ``code`` (the extracted code) or ``response`` (the whole response).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["ruff", "python"]
    select: list[str] = Field(default_factory=list)
    preview: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)
    check: str | None = None
    scope: Literal["code", "response"] = "code"


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


class AugmentedTask(Task):
    """A task with the k instructions chosen for it, in selection order.

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


class Turn(BaseModel):
    """One user turn and the model's reply in a generation protocol.

    Attributes:
        index: 1-based turn number.
        prompt: What the user said at this turn.
        response: What the model replied ("" when the call failed).
        instruction: The instruction this turn added (None for the first multi-turn turn
            and for single-turn generations).
        error: Why the model call failed, when it did.
    """

    index: int
    prompt: str
    response: str = ""
    instruction: InstructionRef | None = None
    error: str | None = None


class Generation(BaseModel):
    """A model's response to a task, with the instructions it was asked to follow."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    task_id: str
    model: str
    response: str
    instructions: list[InstructionRef] = Field(default_factory=list)


class CheckResult(BaseModel):
    """The outcome of one instruction check on one response."""

    id: str
    params: dict[str, Any] = Field(default_factory=dict)
    status: CheckStatus
    reason: str = ""


class FuncResult(BaseModel):
    """The outcome of running one response against its task's tests."""

    status: FuncStatus
    detail: str = ""


class ScoredSample(Generation):
    """A generation plus its instruction results and functional result."""

    instruction_results: list[CheckResult] = Field(default_factory=list)
    if_instruction: float | None = None
    if_task: bool | None = None
    func: FuncResult | None = None
    turn_results: list[list[CheckResult]] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Battle(BaseModel):
    """One pairwise comparison between two models."""

    model_config = ConfigDict(extra="allow")

    model_a: str
    model_b: str
    winner: Winner
    weight: float = 1.0
    category: str | None = None


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
