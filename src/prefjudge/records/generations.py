"""Generation records: a model's reply to a task (the ``generate`` → ``score`` contract)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from prefjudge.records.as_given import _AsGiven
from prefjudge.records.names import ModelName
from prefjudge.records.tasks import InstructionRef


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
